//! `stencil35d run sphere`: flow past a sphere — a velocity inlet at x = 0, a pressure outlet
//! at x = max, periodic y and z (a periodic array of spheres). Reports the drag coefficient
//! from momentum exchange.

use clap::Args;
use stencil35d::lbm::{Axis, Cell, Face, Lattice, Physics, Shape, MAGIC_POISEUILLE};
use stencil35d::output::Slice;
use stencil35d::{Error, Grid, Real};

use crate::args::Size;
use crate::flow::{tau_for, FlowOptions, Scenario, View};

/// Options of `run sphere`.
#[derive(Args, Debug)]
pub struct SphereArgs {
    /// Lattice size: N for N³, or NXxNYxNZ (flow along x).
    #[arg(long, default_value = "128x48x48")]
    size: Size,
    /// Sphere radius in cells (default: ny/8).
    #[arg(long)]
    radius: Option<f64>,
    /// Reynolds number U·D/ν with D the diameter.
    #[arg(long, default_value_t = 40.0)]
    re: f64,
    /// Inflow velocity in lattice units.
    #[arg(long, default_value_t = 0.05)]
    u_in: f64,
    #[command(flatten)]
    flow: FlowOptions,
}

impl SphereArgs {
    fn radius(&self) -> f64 {
        self.radius.unwrap_or(self.size.0[1] as f64 / 8.0)
    }

    fn shape(&self, dims: [usize; 3]) -> Shape {
        Shape::Sphere {
            centre: [
                dims[0] as f64 / 4.0,
                (dims[1] - 1) as f64 / 2.0,
                (dims[2] - 1) as f64 / 2.0,
            ],
            radius: self.radius(),
        }
    }
}

impl Scenario for SphereArgs {
    const NAME: &'static str = "sphere";

    fn geometry(&self) -> String {
        format!(
            "{}, sphere radius {}, Re {}, u_in {}",
            self.size,
            self.radius(),
            self.re,
            self.u_in
        )
    }

    fn default_steps(&self) -> usize {
        // Two flow-throughs of the lattice.
        (2.0 * self.size.0[0] as f64 / self.u_in.abs().max(1e-3)).round() as usize
    }

    fn build<T: Real>(&self) -> Result<Lattice<T>, Error> {
        let dims = self.size.0;
        if !(self.re > 0.0
            && self.radius() >= 1.0
            && 2.0 * self.radius() < dims[1].min(dims[2]) as f64)
        {
            return Err(Error::InvalidArgument(format!(
                "the sphere (radius {}) must be at least 1 cell and fit across the {}x{} section, \
                 and --re positive",
                self.radius(),
                dims[1],
                dims[2]
            )));
        }
        let nu = self.u_in * 2.0 * self.radius() / self.re;
        let tau = tau_for(nu, &format!("Re {} with radius {}", self.re, self.radius()))?;
        let mut lat = Lattice::new(dims, Physics::trt(tau, MAGIC_POISEUILLE))?;
        lat.set_periodic(Axis::Y, true);
        lat.set_periodic(Axis::Z, true);
        lat.set_face(
            Face::XMin,
            Cell::Inlet {
                velocity: [self.u_in, 0.0, 0.0],
            },
        )?;
        lat.set_face(Face::XMax, Cell::Outlet { density: 1.0 })?;
        lat.fill_shape(&self.shape(dims), Cell::Wall)?;
        lat.set_equilibrium(|_, _, _| (1.0, [self.u_in, 0.0, 0.0]))?;
        Ok(lat)
    }

    fn picture<T: Real>(&self, lat: &Lattice<T>, speed: &Grid<T>) -> View {
        let z = (lat.dims()[2] - 1) / 2;
        View {
            slice: Slice::z_plane(speed, z),
            plane: format!("z = {z}"),
            axes: ["x", "y"],
            top: 1.5 * self.u_in,
        }
    }

    fn summary<T: Real>(&self, lat: &Lattice<T>) -> String {
        let dims = lat.dims();
        let shape = self.shape(dims);
        let force = lat.force_on(|c| shape.contains(c));
        let r = self.radius();
        let area = std::f64::consts::PI * r * r;
        let cd = 2.0 * force[0] / (self.u_in * self.u_in * area);
        format!(
            "Re {}, radius {r}, inflow {}; drag force {:.4e}, drag coefficient C_d = {cd:.3} \
             (periodic array, blockage {:.0}%)",
            self.re,
            self.u_in,
            force[0],
            100.0 * area / (dims[1] * dims[2]) as f64
        )
    }
}

pub fn run(args: &SphereArgs) -> Result<(), Error> {
    crate::flow::run(args, &args.flow)
}

/// Runs the scenario over the ranks of `world`.
#[cfg(feature = "mpi")]
pub fn run_ranks(
    args: &SphereArgs,
    world: &mpi::topology::SimpleCommunicator,
) -> Result<(), Error> {
    crate::flow_ranks::run(args, &args.flow, world)
}
