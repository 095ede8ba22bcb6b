//! `stencil35d run cavity`: the lid-driven cavity — a closed box whose top (y = max) wall
//! slides in +x and drives a primary vortex.

use clap::Args;
use stencil35d::lbm::{Cell, Face, Lattice, Physics, MAGIC_POISEUILLE};
use stencil35d::output::Slice;
use stencil35d::{Error, Grid, Real};

use crate::args::Size;
use crate::checks::{positive, shown};
use crate::flow::{lattice_speed, tau_for, FlowOptions, Scenario, View};

/// Options of `run cavity`.
#[derive(Args, Debug)]
pub struct CavityArgs {
    /// Lattice size: N for N³, or NXxNYxNZ (walls included).
    #[arg(long, default_value = "64")]
    size: Size,
    /// Reynolds number U·L/ν with L the inner width (nx − 2).
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    re: f64,
    /// Lid speed in lattice units (at most 0.2).
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    lid: f64,
    #[command(flatten)]
    flow: FlowOptions,
}

impl Scenario for CavityArgs {
    const NAME: &'static str = "cavity";

    fn dims(&self) -> [usize; 3] {
        self.size.0
    }

    fn geometry(&self) -> String {
        format!("{}, Re {}, lid {}", self.size, self.re, self.lid)
    }

    fn check(&self) -> Result<f64, Error> {
        positive("--re", self.re, "the Reynolds number")?;
        lattice_speed("--lid", self.lid)?;
        let dims = self.size.0;
        if dims.iter().any(|&n| n < 3) {
            return Err(Error::InvalidArgument(
                "a cavity needs at least 3 nodes per axis (walls and fluid)".into(),
            ));
        }
        let nu = self.lid * (dims[0] - 2) as f64 / self.re;
        tau_for(
            nu,
            &format!("Re {} with a {}-node cavity", shown(self.re), dims[0]),
            "lattice",
        )
    }

    fn default_steps(&self) -> usize {
        // About ten lid transits of the cavity: the primary vortex is established.
        let l = (self.size.0[0].max(3) - 2) as f64;
        (10.0 * l / self.lid.abs().max(1e-3)).round() as usize
    }

    fn build<T: Real>(&self) -> Result<Lattice<T>, Error> {
        let tau = self.check()?;
        let mut lat = Lattice::new(self.size.0, Physics::trt(tau, MAGIC_POISEUILLE))?;
        for face in Face::ALL {
            lat.set_face(face, Cell::Wall)?;
        }
        lat.set_face(
            Face::YMax,
            Cell::MovingWall {
                velocity: [self.lid, 0.0, 0.0],
            },
        )?;
        Ok(lat)
    }

    fn picture<T: Real>(&self, lat: &Lattice<T>, speed: &Grid<T>) -> View {
        let z = lat.dims()[2] / 2;
        View {
            slice: Slice::z_plane(speed, z),
            plane: format!("z = {z}"),
            axes: ["x", "y"],
            top: self.lid.abs(),
        }
    }

    fn summary<T: Real>(&self, lat: &Lattice<T>) -> String {
        // The primary vortex's centre: the slowest fluid node of the mid-plane away from the
        // walls and the corner eddies (on a small lattice, any fluid node: never a wall's).
        let [nx, ny, nz] = lat.dims();
        let z = nz / 2;
        let (mut best, mut at) = (f64::INFINITY, (1, 1));
        for y in (ny / 5).max(1)..(ny - ny / 10 - 1).min(ny - 1) {
            for x in (nx / 5).max(1)..(nx - nx / 5).min(nx - 1) {
                let (_, u) = lat.moments(x, y, z);
                let s = u[0].hypot(u[1]);
                if s < best {
                    (best, at) = (s, (x, y));
                }
            }
        }
        let frac = |v: usize, n: usize| (v as f64 - 0.5) / (n - 2) as f64;
        format!(
            "Re {}, lid {}; primary vortex centre at x/L = {:.2}, y/L = {:.2} in the z mid-plane",
            self.re,
            self.lid,
            frac(at.0, nx),
            frac(at.1, ny)
        )
    }
}

pub fn run(args: &CavityArgs) -> Result<(), Error> {
    crate::flow::run(args, &args.flow)
}

/// Runs the scenario over the ranks of `world`.
#[cfg(feature = "mpi")]
pub fn run_ranks(
    args: &CavityArgs,
    world: &mpi::topology::SimpleCommunicator,
) -> Result<(), Error> {
    crate::flow_ranks::run(args, &args.flow, world)
}
