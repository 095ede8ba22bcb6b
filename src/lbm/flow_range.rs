//! [`FlowRange`]: the lowest density and the highest speed of a lattice's flow, and the check
//! that they are those of a flow at all ([`Lattice::check_flow`]). A diverging run does not
//! always overflow: its densities can turn negative and its speeds pass the speed of sound
//! while every value stays finite, which the engines' check for non-finite values does not see.

use std::ops::Range;

use rayon::prelude::*;

use super::model::CS2;
use super::Lattice;
use crate::{Error, Real, Result};

/// The lowest density and the highest speed over a lattice's fluid, inlet and outlet nodes,
/// with a node holding each (x, y, z).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowRange {
    /// The lowest density `Σ f_i` (NaN when a node's is).
    pub min_density: f64,
    /// A node of the lowest density.
    pub min_density_at: [usize; 3],
    /// The highest speed `|u|` (NaN when a node's is).
    pub max_speed: f64,
    /// A node of the highest speed.
    pub max_speed_at: [usize; 3],
}

impl FlowRange {
    /// The range of no node: the identity of [`FlowRange::join`].
    const EMPTY: FlowRange = FlowRange {
        min_density: f64::INFINITY,
        min_density_at: [0; 3],
        max_speed: f64::NEG_INFINITY,
        max_speed_at: [0; 3],
    };

    /// The range of both, a NaN winning either bound so that it is never hidden.
    fn join(self, other: FlowRange) -> FlowRange {
        let lower = |a: f64, b: f64| b.is_nan() || (!a.is_nan() && b < a);
        let higher = |a: f64, b: f64| b.is_nan() || (!a.is_nan() && b > a);
        let mut out = self;
        if lower(self.min_density, other.min_density) {
            (out.min_density, out.min_density_at) = (other.min_density, other.min_density_at);
        }
        if higher(self.max_speed, other.max_speed) {
            (out.max_speed, out.max_speed_at) = (other.max_speed, other.max_speed_at);
        }
        out
    }
}

impl<T: Real> Lattice<T> {
    /// The lowest density and the highest speed over the nodes that are not walls (fluid,
    /// inlets and outlets, [`Lattice::moments`]), computed over the z planes in parallel. A
    /// lattice of walls only gives the empty range (infinite density, speed −∞).
    pub fn flow_range(&self) -> FlowRange {
        let [_, ny, nz] = self.dims();
        self.flow_range_in(0..ny, 0..nz)
    }

    /// [`Lattice::flow_range`] over the rows `ys` of the planes `zs` only (a block of a split
    /// lattice: its own nodes, not the halos its neighbours fill). Panics when a range
    /// reaches beyond the lattice, like slice indexing.
    pub fn flow_range_in(&self, ys: Range<usize>, zs: Range<usize>) -> FlowRange {
        let nx = self.dims()[0];
        zs.into_par_iter()
            .map(|z| {
                let mut range = FlowRange::EMPTY;
                for y in ys.clone() {
                    for x in 0..nx {
                        if self.cell(x, y, z).is_wall() {
                            continue;
                        }
                        let (rho, u) = self.moments(x, y, z);
                        let speed = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
                        let node = FlowRange {
                            min_density: rho,
                            min_density_at: [x, y, z],
                            max_speed: speed,
                            max_speed_at: [x, y, z],
                        };
                        range = range.join(node);
                    }
                }
                range
            })
            .reduce(|| FlowRange::EMPTY, FlowRange::join)
    }

    /// Checks that the lattice still holds a flow: every density positive and every speed
    /// below the lattice's speed of sound `c_s = 1/√3` (Mach 1; walls and inlets are refused
    /// above Mach 0.35, [`super::MAX_SPEED`], so a flow past Mach 1 has diverged). Errors:
    /// [`Error::Diverged`] naming the node and the value, with the lattice's step count.
    pub fn check_flow(&self) -> Result<()> {
        self.flow_range().check(self.steps())
    }
}

impl FlowRange {
    /// The check of [`Lattice::check_flow`] on this range, of a lattice `steps` steps into its
    /// run (a block of a split lattice checks its range with its nodes moved to the whole
    /// lattice's coordinates).
    pub fn check(&self, steps: u64) -> Result<()> {
        let range = self;
        let c_s = CS2.sqrt();
        let [x, y, z] = range.min_density_at;
        let what = if range.min_density.is_nan() || range.min_density <= 0.0 {
            format!(
                "the density at node ({x}, {y}, {z}) is {:.3e}",
                range.min_density
            )
        } else if range.max_speed.is_nan() || range.max_speed >= c_s {
            let [x, y, z] = range.max_speed_at;
            format!(
                "the speed at node ({x}, {y}, {z}) is {:.3e}, Mach {:.2} (the lattice's speed of \
                 sound is 1/√3)",
                range.max_speed,
                range.max_speed / c_s
            )
        } else {
            return Ok(());
        };
        Err(Error::Diverged { steps, what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::{Cell, Physics};

    /// A resting 6³ lattice in equilibrium, its x faces walls.
    fn resting() -> Lattice<f64> {
        let mut lat = Lattice::<f64>::new([6, 6, 6], Physics::bgk(0.8)).unwrap();
        lat.set_face(crate::lbm::Face::XMin, Cell::Wall).unwrap();
        lat.set_face(crate::lbm::Face::XMax, Cell::Wall).unwrap();
        lat
    }

    /// Sets node (x, y, z) to the equilibrium of density `rho` and velocity `u`.
    fn set(lat: &mut Lattice<f64>, [x, y, z]: [usize; 3], rho: f64, u: [f64; 3]) {
        lat.set_populations(x, y, z, crate::lbm::equilibrium(rho, u));
    }

    #[test]
    fn the_range_finds_the_lowest_density_and_the_highest_speed() {
        let mut lat = resting();
        set(&mut lat, [2, 3, 4], 0.9, [0.0; 3]);
        set(&mut lat, [4, 1, 5], 1.0, [0.1, 0.0, -0.1]);
        set(&mut lat, [2, 2, 4], 0.95, [0.0; 3]);
        // Walls are left out, whatever they hold.
        set(&mut lat, [0, 2, 2], -5.0, [3.0, 0.0, 0.0]);
        // The rows and planes asked for only.
        let part = lat.flow_range_in(0..3, 4..6);
        assert_eq!(part.min_density_at, [2, 2, 4], "{part:?}");
        assert!((part.min_density - 0.95).abs() < 1e-12, "{part:?}");
        assert_eq!(part.max_speed_at, [4, 1, 5], "{part:?}");
        let range = lat.flow_range();
        assert!((range.min_density - 0.9).abs() < 1e-12, "{range:?}");
        assert_eq!(range.min_density_at, [2, 3, 4]);
        assert!(
            (range.max_speed - 0.02f64.sqrt()).abs() < 1e-12,
            "{range:?}"
        );
        assert_eq!(range.max_speed_at, [4, 1, 5]);
        assert!(lat.check_flow().is_ok());
    }

    #[test]
    fn negative_density_supersonic_speed_and_nan_are_divergence() {
        let cases: [(f64, [f64; 3], &str); 3] = [
            (-0.2, [0.0; 3], "the density at node (3, 2, 1) is -2.000e-1"),
            (
                1.0,
                [0.0, 0.6, 0.0],
                "the speed at node (3, 2, 1) is 6.000e-1, Mach 1.04",
            ),
            (f64::NAN, [0.0; 3], "the density at node (3, 2, 1) is NaN"),
        ];
        for (rho, u, text) in cases {
            let mut lat = resting();
            set(&mut lat, [3, 2, 1], rho, u);
            let err = lat.check_flow().unwrap_err();
            assert!(matches!(err, Error::Diverged { steps: 0, .. }), "{err}");
            assert!(err.to_string().contains(text), "{err}");
        }
        // Just below Mach 1 is still a flow.
        let mut lat = resting();
        set(&mut lat, [3, 2, 1], 1.0, [0.0, 0.57, 0.0]);
        assert!(lat.check_flow().is_ok());
    }
}
