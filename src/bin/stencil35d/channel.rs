//! `stencil35d run channel`: pressure-gradient-driven flow (a uniform body force standing in
//! for the gradient) between two plates (plane Poiseuille flow), or with `--duct` in a
//! rectangular duct, periodic along the flow. Reports the error against the analytic profile.

use clap::Args;
use stencil35d::lbm::{Axis, Cell, Face, Lattice, Physics, MAGIC_POISEUILLE};
use stencil35d::output::Slice;
use stencil35d::{Error, Grid, Real};

use crate::args::Size;
use crate::checks::{positive, shown};
use crate::flow::{lattice_speed, tau_for, FlowOptions, Scenario, View};

/// Options of `run channel`.
#[derive(Args, Debug)]
pub struct ChannelArgs {
    /// Lattice size: N for N³, or NXxNYxNZ (flow along x; walls are the y faces, and the z
    /// faces too with --duct).
    #[arg(long, default_value = "16x34x24")]
    size: Size,
    /// Walls on the z faces too: a rectangular duct instead of two plates.
    #[arg(long)]
    duct: bool,
    /// Reynolds number u_max·H/ν with H the distance between the y walls (ny − 2).
    #[arg(long, default_value_t = 20.0, allow_negative_numbers = true)]
    re: f64,
    /// Peak velocity of the plane profile in lattice units (the force is set to reach it).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    u_max: f64,
    #[command(flatten)]
    flow: FlowOptions,
}

impl ChannelArgs {
    fn height(&self) -> f64 {
        (self.size.0[1].max(3) - 2) as f64
    }

    fn viscosity(&self) -> f64 {
        self.u_max * self.height() / self.re
    }

    /// The analytic velocity at (y, z): plane Poiseuille, or the duct's Fourier series.
    fn exact(&self, force: f64, nu: f64, y: usize, z: usize) -> f64 {
        let nz = self.size.0[2];
        // Walls half-way between nodes: the fluid spans (0.5, n − 1.5).
        let (h, yy) = (self.height(), y as f64 - 0.5);
        if !self.duct {
            return force / (2.0 * nu) * yy * (h - yy);
        }
        let (a, b) = (h / 2.0, (nz - 2) as f64 / 2.0);
        let (ys, zs) = (yy - a, z as f64 - 0.5 - b);
        let pi = std::f64::consts::PI;
        let mut sum = 0.0;
        for k in 0..200 {
            let n = (2 * k + 1) as f64;
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            let ratio = (n * pi * zs / (2.0 * a)).cosh() / (n * pi * b / (2.0 * a)).cosh();
            if !ratio.is_finite() {
                break;
            }
            sum += sign * (1.0 - ratio) * (n * pi * ys / (2.0 * a)).cos() / n.powi(3);
        }
        16.0 * a * a * force / (nu * pi.powi(3)) * sum
    }

    fn force(&self) -> f64 {
        8.0 * self.viscosity() * self.u_max / (self.height() * self.height())
    }
}

impl Scenario for ChannelArgs {
    const NAME: &'static str = "channel";

    fn dims(&self) -> [usize; 3] {
        self.size.0
    }

    fn geometry(&self) -> String {
        let walls = if self.duct { "duct" } else { "plates" };
        format!(
            "{}, {walls}, Re {}, u_max {}",
            self.size, self.re, self.u_max
        )
    }

    fn check(&self) -> Result<f64, Error> {
        let dims = self.size.0;
        if dims[1] < 3 || (self.duct && dims[2] < 3) {
            return Err(Error::InvalidArgument(
                "the walled axes need at least 3 nodes (two walls and fluid)".into(),
            ));
        }
        positive("--re", self.re, "the Reynolds number")?;
        lattice_speed("--u-max", self.u_max)?;
        tau_for(
            self.viscosity(),
            &format!("Re {}", shown(self.re)),
            "lattice",
        )
    }

    fn default_steps(&self) -> usize {
        // Five viscous times H²/ν: the profile has converged to ~e^{-5π²}.
        let h = self.height();
        // At least one step: a very viscous flow converges within a step.
        ((5.0 * h * h / self.viscosity().max(1e-9)).round() as usize).max(1)
    }

    fn build<T: Real>(&self) -> Result<Lattice<T>, Error> {
        let dims = self.size.0;
        let tau = self.check()?;
        let physics = Physics::trt(tau, MAGIC_POISEUILLE).with_force([self.force(), 0.0, 0.0]);
        let mut lat = Lattice::new(dims, physics)?;
        lat.set_periodic(Axis::X, true);
        lat.set_periodic(Axis::Z, !self.duct);
        lat.set_face(Face::YMin, Cell::Wall)?;
        lat.set_face(Face::YMax, Cell::Wall)?;
        if self.duct {
            lat.set_face(Face::ZMin, Cell::Wall)?;
            lat.set_face(Face::ZMax, Cell::Wall)?;
        }
        Ok(lat)
    }

    fn picture<T: Real>(&self, lat: &Lattice<T>, speed: &Grid<T>) -> View {
        // The cross-section shows the profile.
        let x = lat.dims()[0] / 2;
        View {
            slice: Slice::x_plane(speed, x),
            plane: format!("x = {x}"),
            axes: ["z", "y"],
            top: self.u_max,
        }
    }

    fn summary<T: Real>(&self, lat: &Lattice<T>) -> String {
        let [nx, ny, nz] = lat.dims();
        let force = lat.physics().force[0];
        let nu = lat.physics().viscosity();
        let (mut err2, mut ref2, mut peak) = (0.0, 0.0, 0.0f64);
        let zs: Vec<usize> = if self.duct {
            (1..nz - 1).collect()
        } else {
            vec![nz / 2]
        };
        for &z in &zs {
            for y in 1..ny - 1 {
                let (_, u) = lat.moments(nx / 2, y, z);
                let exact = self.exact(force, nu, y, z);
                err2 += (u[0] - exact).powi(2);
                ref2 += exact * exact;
                peak = peak.max(u[0]);
            }
        }
        // The force is set for the plane profile: a duct's side walls slow it, so its
        // Reynolds number, from the peak it reaches, is lower than the one asked for.
        let flow = if self.duct {
            format!(
                "duct, Re {} set for plates (the duct's peak makes it {:.1})",
                self.re,
                peak * (ny - 2) as f64 / nu
            )
        } else {
            format!("plane channel, Re {}", self.re)
        };
        format!(
            "{flow}; peak velocity {peak:.5} (plane-flow target {}); relative L2 error against \
             the analytic profile {:.2e}",
            self.u_max,
            (err2 / ref2).sqrt()
        )
    }
}

pub fn run(args: &ChannelArgs) -> Result<(), Error> {
    crate::flow::run(args, &args.flow)
}

/// Runs the scenario over the ranks of `world`.
#[cfg(feature = "mpi")]
pub fn run_ranks(
    args: &ChannelArgs,
    world: &mpi::topology::SimpleCommunicator,
) -> Result<(), Error> {
    crate::flow_ranks::run(args, &args.flow, world)
}
