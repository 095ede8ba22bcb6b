//! [`Stencil`]: the linear, constant-coefficient 3D stencils the engines run — star stencils of
//! radius 1..=4 (one coefficient per distance; the 7-point stencil is radius 1) and box stencils
//! of radius 1..=2 (a full coefficient cube; the 27-point stencil is radius 1).
//!
//! Each stencil knows its cost, which the planner turns into a bytes-per-op ratio (γ, section IV
//! of the 3.5D paper): flops per update, loads per update and the minimum bytes moved per update.

use std::fmt::{self, Display};

use serde::{Deserialize, Serialize};

use crate::{DType, Error, Result};

/// Largest supported star radius.
pub const MAX_STAR_RADIUS: usize = 4;
/// Largest supported box radius.
pub const MAX_BOX_RADIUS: usize = 2;

/// The shape and coefficients of a stencil.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// `c[0]·f(p) + Σ_{d=1..R} c[d]·(sum of the 6 points at distance d along the axes)`.
    Star {
        /// `R + 1` coefficients: the centre, then one per distance.
        coeffs: Vec<f64>,
    },
    /// `Σ c(dx,dy,dz)·f(p + (dx,dy,dz))` over the cube `[-R, R]³`.
    Box {
        /// The radius R.
        radius: usize,
        /// `(2R+1)³` coefficients, index `((dz+R)·(2R+1) + dy+R)·(2R+1) + dx+R`.
        coeffs: Vec<f64>,
    },
}

/// A linear 3D stencil with constant coefficients: `B(p) = Σ c_i·A(p + o_i)`.
///
/// ```
/// use stencil35d::Stencil;
/// let heat = Stencil::seven_point(0.4, 0.1);
/// assert_eq!(heat.radius(), 1);
/// assert_eq!(heat.flops_per_update(), 8); // 2 mul + 6 add, as counted in the 3.5D paper
/// let s4 = Stencil::star(4, &[0.5, 0.04, 0.03, 0.02, 0.01]).unwrap();
/// assert_eq!(s4.points(), 25);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stencil {
    shape: Shape,
}

impl Stencil {
    /// The 7-point stencil `α·A(p) + β·(six face neighbours)` (the 3.5D paper's eq. in IV-A).
    pub fn seven_point(alpha: f64, beta: f64) -> Stencil {
        Stencil {
            shape: Shape::Star {
                coeffs: vec![alpha, beta],
            },
        }
    }

    /// The 27-point stencil with one coefficient per class of neighbour in the 3×3×3 cube.
    pub fn twenty_seven_point(center: f64, face: f64, edge: f64, corner: f64) -> Stencil {
        let mut coeffs = Vec::with_capacity(27);
        for dz in -1i32..=1 {
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    coeffs.push(match dx.abs() + dy.abs() + dz.abs() {
                        0 => center,
                        1 => face,
                        2 => edge,
                        _ => corner,
                    });
                }
            }
        }
        Stencil {
            shape: Shape::Box { radius: 1, coeffs },
        }
    }

    /// A star stencil of radius `1..=4`; `coeffs[0]` weights the centre and `coeffs[d]` the six
    /// points at distance `d` along the axes.
    pub fn star(radius: usize, coeffs: &[f64]) -> Result<Stencil> {
        if !(1..=MAX_STAR_RADIUS).contains(&radius) {
            return Err(Error::UnsupportedStencil(format!(
                "star radius {radius} is not supported (1..={MAX_STAR_RADIUS})"
            )));
        }
        if coeffs.len() != radius + 1 {
            return Err(Error::UnsupportedStencil(format!(
                "a radius-{radius} star stencil takes {} coefficients (centre + one per distance), got {}",
                radius + 1,
                coeffs.len()
            )));
        }
        let s = Stencil {
            shape: Shape::Star {
                coeffs: coeffs.to_vec(),
            },
        };
        s.validate()?;
        Ok(s)
    }

    /// A box stencil of radius `1..=2` with a full coefficient cube of `(2R+1)³` values, index
    /// `((dz+R)·(2R+1) + dy+R)·(2R+1) + dx+R` (x fastest).
    pub fn boxed(radius: usize, coeffs: &[f64]) -> Result<Stencil> {
        if !(1..=MAX_BOX_RADIUS).contains(&radius) {
            return Err(Error::UnsupportedStencil(format!(
                "box radius {radius} is not supported (1..={MAX_BOX_RADIUS})"
            )));
        }
        let n = (2 * radius + 1).pow(3);
        if coeffs.len() != n {
            return Err(Error::UnsupportedStencil(format!(
                "a radius-{radius} box stencil takes {n} coefficients, got {}",
                coeffs.len()
            )));
        }
        let s = Stencil {
            shape: Shape::Box {
                radius,
                coeffs: coeffs.to_vec(),
            },
        };
        s.validate()?;
        Ok(s)
    }

    /// The benchmark stencil for a CLI name: `star7`, `box27`, `star:R` or `box:R`, with
    /// positive coefficients summing to one (so random data stays bounded for any step count).
    pub fn from_name(name: &str) -> Result<Stencil> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown stencil kernel '{name}' (expected star7, box27, star:R with R in 1..=4, or box:R with R in 1..=2)"
            ))
        };
        match name {
            "star7" => return Ok(Stencil::seven_point(0.4, 0.1)),
            "box27" => return Ok(Stencil::twenty_seven_point(0.28, 0.06, 0.02, 0.015)),
            _ => {}
        }
        let (kind, r) = name.split_once(':').ok_or_else(bad)?;
        let radius: usize = r.parse().map_err(|_| bad())?;
        // A radius out of range is refused by its constructor before any coefficient is
        // built: `star:4294967296` must not allocate 32 GiB of them first.
        let fits = |max: usize| (1..=max).contains(&radius);
        match kind {
            "star" if fits(MAX_STAR_RADIUS) => Stencil::star(radius, &normalized_star(radius)),
            "box" if fits(MAX_BOX_RADIUS) => Stencil::boxed(radius, &normalized_box(radius)),
            "star" => Stencil::star(radius, &[]),
            "box" => Stencil::boxed(radius, &[]),
            _ => Err(bad()),
        }
    }

    /// Checks the radius, the number of coefficients and that every coefficient is finite
    /// (the planner calls this, so a stencil deserialised from a file is checked too).
    pub fn validate(&self) -> Result<()> {
        let (max, expected, kind) = match &self.shape {
            Shape::Star { coeffs } => (MAX_STAR_RADIUS, coeffs.len().max(1), "star"),
            Shape::Box { radius, .. } => (
                MAX_BOX_RADIUS,
                // Saturating: a deserialised radius may be anything; it is refused below.
                radius.saturating_mul(2).saturating_add(1).saturating_pow(3),
                "box",
            ),
        };
        let r = match &self.shape {
            Shape::Star { coeffs } => coeffs.len().saturating_sub(1),
            Shape::Box { radius, .. } => *radius,
        };
        if !(1..=max).contains(&r) || self.coeffs().len() != expected {
            return Err(Error::UnsupportedStencil(format!(
                "{kind} stencil of radius {r} with {} coefficients (supported: radius 1..={max} with {expected})",
                self.coeffs().len()
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
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The radius R: the stencil reads up to R cells away along each axis, and the grid keeps a
    /// fixed boundary layer R cells wide.
    pub fn radius(&self) -> usize {
        match &self.shape {
            // Saturating: a deserialised star may hold no coefficient (`validate` refuses it).
            Shape::Star { coeffs } => coeffs.len().saturating_sub(1),
            Shape::Box { radius, .. } => *radius,
        }
    }

    /// True for box (full cube) stencils.
    pub fn is_box(&self) -> bool {
        matches!(self.shape, Shape::Box { .. })
    }

    /// The coefficients as stored (see [`Shape`]).
    pub fn coeffs(&self) -> &[f64] {
        match &self.shape {
            Shape::Star { coeffs } | Shape::Box { coeffs, .. } => coeffs,
        }
    }

    /// The weight of the point at offset (dx, dy, dz); zero outside the stencil.
    pub fn weight(&self, dx: i32, dy: i32, dz: i32) -> f64 {
        let r = self.radius() as i32;
        // Offsets beyond the radius first, so that no sum of them can overflow.
        if [dx, dy, dz].iter().any(|d| d.unsigned_abs() > r as u32) {
            return 0.0;
        }
        match &self.shape {
            Shape::Star { coeffs } => {
                let nonzero = [dx, dy, dz].iter().filter(|&&d| d != 0).count();
                let dist = (dx.abs() + dy.abs() + dz.abs()) as usize;
                if nonzero <= 1 && dist <= r as usize {
                    coeffs[dist]
                } else {
                    0.0
                }
            }
            Shape::Box { coeffs, .. } => {
                let w = (2 * r + 1) as usize;
                coeffs[((dz + r) as usize * w + (dy + r) as usize) * w + (dx + r) as usize]
            }
        }
    }

    /// Number of points read per update: `6R + 1` for a star, `(2R+1)³` for a box.
    pub fn points(&self) -> usize {
        let r = self.radius();
        match self.shape {
            Shape::Star { .. } => 6 * r + 1,
            Shape::Box { .. } => (2 * r + 1).pow(3),
        }
    }

    /// Floating-point operations per cell update as the engines execute them (an FMA counts
    /// two): a star does one multiply, then per distance 5 adds for the six neighbours and one
    /// FMA, `1 + 7R` (8 for the 7-point stencil, as in the 3.5D paper); a box does one multiply
    /// and `(2R+1)³ - 1` FMAs, `2(2R+1)³ - 1` (53 for the 27-point stencil, AN5D's count).
    pub fn flops_per_update(&self) -> usize {
        match self.shape {
            Shape::Star { .. } => 1 + 7 * self.radius(),
            Shape::Box { .. } => 2 * self.points() - 1,
        }
    }

    /// Operations per update in the 3.5D paper's sense (section III-E: arithmetic, loads and the
    /// store all count): `flops + points + 1` (16 for the 7-point stencil).
    pub fn ops_per_update(&self) -> usize {
        self.flops_per_update() + self.points() + 1
    }

    /// Fewest bytes moved to or from memory per update once spatial blocking makes every value
    /// read once and written once: `2E` (8 for f32).
    pub fn min_bytes_per_update(&self, dtype: DType) -> usize {
        2 * dtype.size()
    }

    /// Short machine-readable name: `star7`, `box27`, `star:R`, `box:R`.
    pub fn kind_name(&self) -> String {
        match (&self.shape, self.radius()) {
            (Shape::Star { .. }, 1) => "star7".into(),
            (Shape::Box { .. }, 1) => "box27".into(),
            (Shape::Star { .. }, r) => format!("star:{r}"),
            (Shape::Box { .. }, r) => format!("box:{r}"),
        }
    }
}

impl Display for Stencil {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_box() { "box" } else { "star" };
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
    let w: Vec<f64> = (1..=radius).map(|d| 1.0 / d as f64).collect();
    let total: f64 = w.iter().sum();
    std::iter::once(0.5)
        .chain(w.iter().map(|wd| 0.5 * wd / (6.0 * total)))
        .collect()
}

/// Box coefficients summing to one, falling off with the Manhattan distance and slightly
/// asymmetric so that an axis mix-up in an engine cannot cancel out.
fn normalized_box(radius: usize) -> Vec<f64> {
    let r = radius as i32;
    let mut c = Vec::new();
    for dz in -r..=r {
        for dy in -r..=r {
            for dx in -r..=r {
                let skew = 1.0 + 0.01 * dx as f64 + 0.02 * dy as f64 + 0.03 * dz as f64;
                c.push(skew / (1 + dx.abs() + dy.abs() + dz.abs()) as f64);
            }
        }
    }
    let total: f64 = c.iter().sum();
    c.iter().map(|v| v / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_op_counts() {
        let s7 = Stencil::seven_point(0.5, 0.1);
        assert_eq!(s7.ops_per_update(), 16);
        assert_eq!(s7.min_bytes_per_update(DType::F32), 8);
        let s27 = Stencil::twenty_seven_point(1.0, 2.0, 3.0, 4.0);
        assert_eq!(s27.points(), 27);
        assert_eq!(s27.weight(0, 0, 0), 1.0);
        assert_eq!(s27.weight(1, 0, 0), 2.0);
        assert_eq!(s27.weight(1, -1, 0), 3.0);
        assert_eq!(s27.weight(-1, 1, 1), 4.0);
        assert_eq!(s27.weight(2, 0, 0), 0.0);
    }

    #[test]
    fn star_weights() {
        let s = Stencil::star(3, &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.weight(0, 0, -3), 4.0);
        assert_eq!(s.weight(0, 2, 0), 3.0);
        assert_eq!(s.weight(1, 1, 0), 0.0);
        assert_eq!(s.points(), 19);
        assert_eq!(s.flops_per_update(), 22);
    }

    #[test]
    fn rejects_bad_definitions() {
        assert!(Stencil::star(0, &[1.0]).is_err());
        assert!(Stencil::star(5, &[0.0; 6]).is_err());
        assert!(Stencil::star(2, &[1.0, 2.0]).is_err());
        assert!(Stencil::boxed(3, &[0.0; 343]).is_err());
        assert!(Stencil::boxed(1, &[0.0; 26]).is_err());
        assert!(Stencil::star(1, &[1.0, f64::NAN]).is_err());
        assert!(Stencil::seven_point(f64::INFINITY, 0.0).validate().is_err());
        assert!(Stencil::from_name("star:9").is_err());
        // Radii whose coefficients would not fit in memory (or take hours to build) are
        // refused for their radius, at once.
        for name in [
            "star:18446744073709551615",
            "star:4294967296",
            "box:100000",
            "box:0",
        ] {
            let err = Stencil::from_name(name).unwrap_err().to_string();
            assert!(err.contains("is not supported"), "{name}: {err}");
        }
        assert!(Stencil::from_name("blob").is_err());
    }

    #[test]
    fn named_stencils_are_normalized() {
        for name in [
            "star7", "box27", "star:1", "star:2", "star:3", "star:4", "box:1", "box:2",
        ] {
            let s = Stencil::from_name(name).unwrap();
            let r = s.radius() as i32;
            let mut total = 0.0;
            for dz in -r..=r {
                for dy in -r..=r {
                    for dx in -r..=r {
                        total += s.weight(dx, dy, dz);
                    }
                }
            }
            assert!((total - 1.0).abs() < 1e-12, "{name}: {total}");
            assert_eq!(
                Stencil::from_name(&s.kind_name()).unwrap().radius(),
                s.radius()
            );
        }
    }
}
