//! `stencil35d run sphere`: flow past a sphere — a velocity inlet at x = 0, a pressure outlet
//! at x = max, periodic y and z (a periodic array of spheres). Reports the drag coefficient
//! from momentum exchange.

use clap::Args;
use stencil35d::lbm::{Axis, Cell, Face, Lattice, Physics, Shape, MAGIC_POISEUILLE};
use stencil35d::output::Slice;
use stencil35d::{Error, Grid, Real};

use crate::args::Size;
use crate::checks::{at_most, positive, shown};
use crate::flow::{lattice_speed, tau_for, FlowOptions, Scenario, View};

/// Fewest cells between the sphere and the inlet, the outlet, and (y and z being periodic) the
/// next sphere of the array. A sphere that reaches the inlet or the outlet turns their nodes
/// into walls, and the momentum exchange then counts the boundary's momentum as drag (a
/// 3x16x16 lattice gives C_d = −174).
const MARGIN: f64 = 2.0;

/// Options of `run sphere`.
#[derive(Args, Debug)]
pub struct SphereArgs {
    /// Lattice size: N for N³, or NXxNYxNZ (flow along x).
    #[arg(long, default_value = "128x48x48")]
    size: Size,
    /// Sphere radius in cells (default: ny/8).
    #[arg(long, allow_negative_numbers = true)]
    radius: Option<f64>,
    /// Reynolds number U·D/ν with D the diameter.
    #[arg(long, default_value_t = 40.0, allow_negative_numbers = true)]
    re: f64,
    /// Inflow velocity in lattice units.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
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
                centre_x(dims),
                (dims[1] - 1) as f64 / 2.0,
                (dims[2] - 1) as f64 / 2.0,
            ],
            radius: self.radius(),
        }
    }

    /// The radius as the options give it, for messages: `--radius R`, or the default's.
    fn radius_option(&self) -> String {
        match self.radius {
            Some(r) => format!("--radius {}", shown(r)),
            None => format!("the default radius ny/8 = {}", self.radius()),
        }
    }

    /// Refuses a radius below one cell, and a sphere that leaves fewer than [`MARGIN`] cells
    /// to the inlet, the outlet or the next sphere, saying the largest radius and the smallest
    /// size that would do.
    fn check_fit(&self, dims: [usize; 3]) -> Result<(), Error> {
        let r = self.radius();
        // An infinite radius fits no lattice: the check below says so.
        if r.is_nan() || r < 1.0 {
            return Err(Error::InvalidArgument(format!(
                "{}: the sphere needs a radius of at least 1 cell (give --radius, or a larger \
                 --size)",
                self.radius_option()
            )));
        }
        let largest = largest_radius(dims);
        if r <= largest {
            return Ok(());
        }
        let smaller = (largest >= 1.0).then(|| format!("--radius at most {}", at_most(largest)));
        // The lattice this radius needs, where its size is a count of nodes at all.
        let across = 2.0 * r + MARGIN;
        let need = [4.0 * (r + MARGIN), across, across];
        let larger = need.iter().all(|&n| n < 1e15).then(|| {
            let [x, y, z] = need.map(|n| n.ceil() as usize);
            format!(
                "a --size of at least {x}x{}x{} for this radius",
                dims[1].max(y),
                dims[2].max(z)
            )
        });
        let advice = match (smaller, larger) {
            (Some(s), Some(l)) => format!("use {s}, or {l}"),
            (Some(s), None) => format!("use {s}"),
            (None, Some(l)) => format!("use {l}"),
            (None, None) => "use a smaller radius".to_string(),
        };
        Err(Error::InvalidArgument(format!(
            "{} does not fit the {}x{}x{} lattice: the sphere, centred at x = nx/4 = {}, must \
             leave {MARGIN} cells to the inlet (x = 0), to the outlet (x = {}) and, y and z \
             being periodic, to the next sphere; {advice}",
            self.radius_option(),
            dims[0],
            dims[1],
            dims[2],
            centre_x(dims),
            dims[0] - 1,
        )))
    }
}

/// The x of the sphere's centre: a quarter of the way from the inlet, leaving room for the
/// wake.
fn centre_x(dims: [usize; 3]) -> f64 {
    dims[0] as f64 / 4.0
}

/// The largest radius that leaves [`MARGIN`] cells to the inlet (x = 0), the outlet
/// (x = nx − 1) and the periodic images of the sphere in y and z (`n` cells away).
fn largest_radius(dims: [usize; 3]) -> f64 {
    let [nx, ny, nz] = dims.map(|n| n as f64);
    let cx = centre_x(dims);
    [
        cx - MARGIN,
        nx - 1.0 - cx - MARGIN,
        (ny - MARGIN) / 2.0,
        (nz - MARGIN) / 2.0,
    ]
    .into_iter()
    .fold(f64::INFINITY, f64::min)
}

impl Scenario for SphereArgs {
    const NAME: &'static str = "sphere";

    fn dims(&self) -> [usize; 3] {
        self.size.0
    }

    fn geometry(&self) -> String {
        format!(
            "{}, sphere radius {}, Re {}, u_in {}",
            self.size,
            self.radius(),
            self.re,
            self.u_in
        )
    }

    fn check(&self) -> Result<f64, Error> {
        positive("--re", self.re, "the Reynolds number")?;
        lattice_speed("--u-in", self.u_in)?;
        self.check_fit(self.size.0)?;
        let nu = self.u_in * 2.0 * self.radius() / self.re;
        tau_for(
            nu,
            &format!("Re {} with radius {}", shown(self.re), shown(self.radius())),
            if self.radius.is_some() {
                "--radius"
            } else {
                "lattice"
            },
        )
    }

    fn default_steps(&self) -> usize {
        // Two flow-throughs of the lattice.
        (2.0 * self.size.0[0] as f64 / self.u_in.abs().max(1e-3)).round() as usize
    }

    fn build<T: Real>(&self) -> Result<Lattice<T>, Error> {
        let dims = self.size.0;
        let tau = self.check()?;
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
            "Re {}, radius {r}, inflow {}; drag force {:.4e}, drag coefficient C_d = {cd:.3} at \
             this step (periodic array, blockage {:.0}%; sound waves between inlet and outlet \
             swing it by up to about 15%: see docs/lattice-boltzmann.md)",
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
