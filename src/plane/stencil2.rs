//! [`Stencil2`]: linear, constant-coefficient 2D stencils iterated in time — stars of radius
//! 1..=4 (5, 9, 13 and 17 points) and boxes of radius 1..=3 (9, 25 and 49 points). As in 3D,
//! the outermost `R` cells on each side of the grid are a fixed (Dirichlet) boundary.

use std::fmt::{self, Display};

use serde::{Deserialize, Serialize};

use crate::{DType, Error, Result};

/// Largest supported 2D star radius.
pub const MAX_STAR2_RADIUS: usize = 4;
/// Largest supported 2D box radius.
pub const MAX_BOX2_RADIUS: usize = 3;

/// The shape and coefficients of a 2D stencil.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape2 {
    /// `c[0]·f(p) + Σ_{d=1..R} c[d]·(sum of the 4 points at distance d along x and y)`.
    Star {
        /// `R + 1` coefficients: the centre, then one per distance.
        coeffs: Vec<f64>,
    },
    /// `Σ c(dx,dy)·f(p + (dx,dy))` over the square `[-R, R]²`.
    Box {
        /// The radius R.
        radius: usize,
        /// `(2R+1)²` coefficients, index `(dy+R)·(2R+1) + dx+R`.
        coeffs: Vec<f64>,
    },
}

/// A linear 2D stencil with constant coefficients, iterated in time on a [`crate::Grid2`].
///
/// ```
/// use stencil35d::Stencil2;
/// let heat = Stencil2::five_point(0.6, 0.1);
/// assert_eq!((heat.radius(), heat.points()), (1, 5));
/// let b = Stencil2::from_name("box2d:2").unwrap();
/// assert_eq!(b.points(), 25);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stencil2 {
    shape: Shape2,
}

impl Stencil2 {
    /// The 5-point stencil `α·A(p) + β·(four face neighbours)`.
    pub fn five_point(alpha: f64, beta: f64) -> Stencil2 {
        Stencil2 {
            shape: Shape2::Star {
                coeffs: vec![alpha, beta],
            },
        }
    }

    /// A star of radius `1..=4`: `coeffs[0]` weights the centre and `coeffs[d]` the four
    /// points at distance `d` along the axes.
    pub fn star(radius: usize, coeffs: &[f64]) -> Result<Stencil2> {
        Self::checked(
            radius,
            Shape2::Star {
                coeffs: coeffs.to_vec(),
            },
        )
    }

    /// A box of radius `1..=3` with `(2R+1)²` coefficients, index `(dy+R)·(2R+1) + dx+R`.
    pub fn boxed(radius: usize, coeffs: &[f64]) -> Result<Stencil2> {
        Self::checked(
            radius,
            Shape2::Box {
                radius,
                coeffs: coeffs.to_vec(),
            },
        )
    }

    fn checked(radius: usize, shape: Shape2) -> Result<Stencil2> {
        let s = Stencil2 { shape };
        if s.radius() != radius {
            let kind = if s.is_box() { "box2d" } else { "star2d" };
            return Err(Error::UnsupportedStencil(format!(
                "{kind} radius {radius} does not match its {} coefficients",
                s.coeffs().len()
            )));
        }
        s.validate()?;
        Ok(s)
    }

    /// The benchmark stencil for a CLI name: `star2d:R` (R in 1..=4) or `box2d:R` (R in
    /// 1..=3), with positive coefficients summing to one so random data stays bounded.
    pub fn from_name(name: &str) -> Result<Stencil2> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown 2D stencil '{name}' (expected star2d:R with R in 1..={MAX_STAR2_RADIUS} \
                 or box2d:R with R in 1..={MAX_BOX2_RADIUS})"
            ))
        };
        let (kind, r) = name.split_once(':').ok_or_else(bad)?;
        let radius: usize = r.parse().map_err(|_| bad())?;
        match kind {
            "star2d" if (1..=MAX_STAR2_RADIUS).contains(&radius) => {
                Stencil2::star(radius, &normalized_star(radius))
            }
            "box2d" if (1..=MAX_BOX2_RADIUS).contains(&radius) => {
                Stencil2::boxed(radius, &normalized_box(radius))
            }
            _ => Err(bad()),
        }
    }

    /// Checks the radius, the number of coefficients and that every coefficient is finite.
    pub fn validate(&self) -> Result<()> {
        let (max, kind, r, expected) = match &self.shape {
            Shape2::Star { coeffs } => {
                let r = coeffs.len().saturating_sub(1);
                (MAX_STAR2_RADIUS, "star2d", r, r + 1)
            }
            // The count is only compared where the radius is in range; saturating keeps a
            // huge radius from overflowing before that test.
            Shape2::Box { radius, .. } => (
                MAX_BOX2_RADIUS,
                "box2d",
                *radius,
                radius.saturating_mul(2).saturating_add(1).saturating_pow(2),
            ),
        };
        if !(1..=max).contains(&r) || self.coeffs().len() != expected {
            return Err(Error::UnsupportedStencil(format!(
                "{kind} stencil of radius {r} with {} coefficients (supported: radius 1..={max} \
                 with {} coefficients)",
                self.coeffs().len(),
                if kind == "star2d" {
                    "R + 1".to_string()
                } else {
                    "(2R+1)²".to_string()
                }
            )));
        }
        if let Some(c) = self.coeffs().iter().find(|c| !c.is_finite()) {
            return Err(Error::UnsupportedStencil(format!(
                "coefficient {c} is not finite"
            )));
        }
        Ok(())
    }

    /// The shape and coefficients.
    pub fn shape(&self) -> &Shape2 {
        &self.shape
    }

    /// The radius R (also the width of the fixed boundary layer).
    pub fn radius(&self) -> usize {
        match &self.shape {
            Shape2::Star { coeffs } => coeffs.len().saturating_sub(1),
            Shape2::Box { radius, .. } => *radius,
        }
    }

    /// True for box (full square) stencils.
    pub fn is_box(&self) -> bool {
        matches!(self.shape, Shape2::Box { .. })
    }

    /// The coefficients as stored (see [`Shape2`]).
    pub fn coeffs(&self) -> &[f64] {
        match &self.shape {
            Shape2::Star { coeffs } | Shape2::Box { coeffs, .. } => coeffs,
        }
    }

    /// The weight of the point at offset (dx, dy); zero outside the stencil.
    pub fn weight(&self, dx: i32, dy: i32) -> f64 {
        let r = self.radius() as i32;
        if dx.unsigned_abs() > r as u32 || dy.unsigned_abs() > r as u32 {
            return 0.0;
        }
        match &self.shape {
            Shape2::Star { coeffs } if dx == 0 || dy == 0 => coeffs[(dx.abs() + dy.abs()) as usize],
            Shape2::Star { .. } => 0.0,
            Shape2::Box { coeffs, .. } => coeffs[((dy + r) * (2 * r + 1) + dx + r) as usize],
        }
    }

    /// Points read per update: `4R + 1` for a star, `(2R+1)²` for a box.
    pub fn points(&self) -> usize {
        let r = self.radius();
        if self.is_box() {
            (2 * r + 1).pow(2)
        } else {
            4 * r + 1
        }
    }

    /// Floating-point operations per update as the engines execute them (an FMA counts two):
    /// a star does one multiply, then per distance 3 adds for the four neighbours and one FMA,
    /// `1 + 5R`; a box does one multiply and `(2R+1)² - 1` FMAs, `2(2R+1)² - 1`.
    pub fn flops_per_update(&self) -> usize {
        if self.is_box() {
            2 * self.points() - 1
        } else {
            1 + 5 * self.radius()
        }
    }

    /// Operations per update in the 3.5D paper's sense: `flops + points + 1`.
    pub fn ops_per_update(&self) -> usize {
        self.flops_per_update() + self.points() + 1
    }

    /// Fewest bytes moved per update: one read and one write, `2E`.
    pub fn min_bytes_per_update(&self, dtype: DType) -> usize {
        2 * dtype.size()
    }

    /// Machine-readable name: `star2d:R` or `box2d:R`.
    pub fn kind_name(&self) -> String {
        let kind = if self.is_box() { "box2d" } else { "star2d" };
        format!("{kind}:{}", self.radius())
    }
}

impl Display for Stencil2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_box() { "2D box" } else { "2D star" };
        write!(
            f,
            "{kind} r={} ({}-point, {} flop/update)",
            self.radius(),
            self.points(),
            self.flops_per_update()
        )
    }
}

/// Star coefficients summing to one: half on the centre, the rest falling off as 1/d.
fn normalized_star(radius: usize) -> Vec<f64> {
    let total: f64 = (1..=radius).map(|d| 1.0 / d as f64).sum();
    std::iter::once(0.5)
        .chain((1..=radius).map(|d| 0.5 / (d as f64 * 4.0 * total)))
        .collect()
}

/// Box coefficients summing to one, falling off with the Manhattan distance and slightly
/// asymmetric so that an axis mix-up in an engine cannot cancel out.
fn normalized_box(radius: usize) -> Vec<f64> {
    let r = radius as i32;
    let raw: Vec<f64> = (-r..=r)
        .flat_map(|dy| {
            (-r..=r).map(move |dx| {
                (1.0 + 0.01 * dx as f64 + 0.02 * dy as f64) / (1 + dx.abs() + dy.abs()) as f64
            })
        })
        .collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|v| v / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_counts() {
        let s = Stencil2::star(2, &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(
            (s.weight(0, -2), s.weight(1, 0), s.weight(1, 1)),
            (3.0, 2.0, 0.0)
        );
        assert_eq!((s.points(), s.flops_per_update()), (9, 11));
        let b = Stencil2::boxed(1, &(0..9).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert_eq!(
            (b.weight(-1, -1), b.weight(1, 0), b.weight(0, 1)),
            (0.0, 5.0, 7.0)
        );
        assert_eq!(b.flops_per_update(), 17);
    }

    #[test]
    fn rejects_bad_definitions() {
        assert!(Stencil2::star(0, &[1.0]).is_err());
        assert!(Stencil2::star(5, &[0.0; 6]).is_err());
        assert!(Stencil2::star(2, &[1.0, 2.0]).is_err());
        assert!(Stencil2::boxed(4, &[0.0; 81]).is_err());
        assert!(Stencil2::boxed(1, &[0.0; 8]).is_err());
        assert!(Stencil2::star(1, &[1.0, f64::NAN]).is_err());
        assert!(Stencil2::from_name("star2d:5").is_err());
        assert!(Stencil2::from_name("box2d:4").is_err());
        assert!(Stencil2::from_name("star7").is_err());
    }

    #[test]
    fn named_stencils_are_normalized() {
        for name in [
            "star2d:1", "star2d:2", "star2d:3", "star2d:4", "box2d:1", "box2d:2", "box2d:3",
        ] {
            let s = Stencil2::from_name(name).unwrap();
            let r = s.radius() as i32;
            let total: f64 = (-r..=r)
                .flat_map(|dy| (-r..=r).map(move |dx| (dx, dy)))
                .map(|(dx, dy)| s.weight(dx, dy))
                .sum();
            assert!((total - 1.0).abs() < 1e-12, "{name}: {total}");
            assert_eq!(s.kind_name(), name);
        }
    }
}
