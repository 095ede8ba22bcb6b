//! Velocity models for seismic runs, as grids of velocities (m/s) with z the depth axis.

use crate::{Error, Grid, Real, Result};

/// A model of velocity `v` everywhere.
pub fn homogeneous<T: Real>(dims: [usize; 3], v: f64) -> Result<Grid<T>> {
    Grid::par_from_fn(dims, |_, _, _| T::of(v))
}

/// Horizontal layers: `layers[i] = (top depth in cells, velocity)`, sorted by depth; cells
/// above the first top take the first velocity.
///
/// Errors: no layers, or tops that do not increase strictly ([`Error::InvalidArgument`]: a
/// layer given out of order would be hidden by the ones above it).
pub fn layered<T: Real>(dims: [usize; 3], layers: &[(usize, f64)]) -> Result<Grid<T>> {
    let Some(&(_, first)) = layers.first() else {
        return Err(Error::InvalidArgument(
            "a layered model needs at least one layer".into(),
        ));
    };
    if let Some(w) = layers.windows(2).find(|w| w[1].0 <= w[0].0) {
        return Err(Error::InvalidArgument(format!(
            "a layered model's layer tops must increase with depth: {} follows {}",
            w[1].0, w[0].0
        )));
    }
    let at = |z: usize| {
        layers
            .iter()
            .rev()
            .find(|(top, _)| z >= *top)
            .map_or(first, |l| l.1)
    };
    Grid::par_from_fn(dims, |_, _, z| T::of(at(z)))
}

/// A marine-style model with a salt body: water (1,500 m/s) over sediments whose velocity
/// grows with depth (1,800 → 3,200 m/s) cut by two dipping reflectors, and a salt dome
/// (4,500 m/s) rising from the bottom to 40% of the depth.
pub fn salt<T: Real>(dims: [usize; 3]) -> Result<Grid<T>> {
    let [nx, ny, nz] = dims.map(|n| n as f64);
    Grid::par_from_fn(dims, |x, y, z| {
        let (fx, fy, fz) = (x as f64 / nx, y as f64 / ny, z as f64 / nz);
        let water = 0.12;
        if fz < water {
            return T::of(1500.0);
        }
        // The dome: a paraboloid whose top sits at 40% depth, 60% of the width across at 62.5%
        // depth, nearly the whole width at the bottom.
        let (dx, dy) = (fx - 0.55, fy - 0.5);
        let top = 0.4 + 2.5 * (dx * dx + dy * dy);
        if fz >= top {
            return T::of(4500.0);
        }
        let mut v = 1800.0 + 1400.0 * (fz - water) / (1.0 - water);
        // Two dipping interfaces with a velocity step each.
        if fz > 0.3 + 0.1 * fx {
            v += 250.0;
        }
        if fz > 0.55 - 0.08 * fx {
            v += 300.0;
        }
        T::of(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_hold_their_velocities() {
        let g = layered::<f32>([4, 4, 10], &[(0, 1500.0), (5, 2500.0)]).unwrap();
        assert_eq!((g.get(0, 0, 4), g.get(0, 0, 5)), (1500.0, 2500.0));
        let g = layered::<f32>([4, 4, 10], &[(3, 1800.0), (5, 2500.0)]).unwrap();
        assert_eq!(
            (g.get(0, 0, 0), g.get(0, 0, 3), g.get(0, 0, 9)),
            (1800.0, 1800.0, 2500.0)
        );
        assert!(layered::<f32>([4, 4, 10], &[]).is_err());
        assert!(layered::<f32>([4, 4, 10], &[(5, 2500.0), (0, 1500.0)]).is_err());
        assert!(layered::<f32>([4, 4, 10], &[(0, 1500.0), (0, 2500.0)]).is_err());
        let s = salt::<f32>([40, 40, 40]).unwrap();
        assert_eq!(s.get(20, 20, 1), 1500.0);
        assert_eq!(s.get(22, 20, 30), 4500.0);
        assert!(s.iter().all(|(_, v)| (1500.0..=4500.0).contains(&v)));
    }
}
