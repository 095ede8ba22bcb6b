//! User story: "I want the flow in a lid-driven cavity, and to see the vortex."
//!
//! A closed box of D3Q19 lattice-Boltzmann fluid whose top wall (y = max) slides in +x at
//! Reynolds number 100; the planner picks the engine, the solver runs about ten lid transits,
//! and the program prints the x velocity down the vertical centre line (positive under the
//! lid, negative near the floor: the primary vortex) and writes a PNG of the speed.
//! Run with `cargo run --release --example cavity`.

use stencil35d::lbm::{Cell, Face, Lattice, Physics, MAGIC_POISEUILLE};
use stencil35d::output::{write_png, ColorMap, Slice};
use stencil35d::{Plan, Solver};

fn main() -> Result<(), stencil35d::Error> {
    let n = 48;
    let (lid, re) = (0.1, 100.0);
    let nu = lid * (n - 2) as f64 / re; // viscosity for this Reynolds number
    let tau = 3.0 * nu + 0.5; // BGK/TRT relaxation time for that viscosity
    let mut lat = Lattice::<f32>::new([n, n, n], Physics::trt(tau, MAGIC_POISEUILLE))?;
    for face in Face::ALL {
        lat.set_face(face, Cell::Wall)?;
    }
    lat.set_face(
        Face::YMax,
        Cell::MovingWall {
            velocity: [lid, 0.0, 0.0],
        },
    )?;

    let plan = Plan::for_lattice(&lat)?;
    println!("{plan}");
    let steps = (10.0 * (n - 2) as f64 / lid) as usize;
    let report = Solver::new(plan).run(&mut lat, steps)?;
    println!("{report}");

    let [ux, _, _] = lat.velocity()?;
    println!("u_x / lid down the centre line (top to bottom):");
    for y in (1..n - 1).rev().step_by(5) {
        println!(
            "  y = {y:2}: {:+.3}",
            f64::from(ux.get(n / 2, y, n / 2)) / lid
        );
    }

    std::fs::create_dir_all("out").map_err(|e| stencil35d::Error::io("out", e))?;
    let path = std::path::Path::new("out/example-cavity.png");
    write_png(
        path,
        &Slice::z_plane(&lat.speed()?, n / 2),
        ColorMap::Inferno,
        None,
        6,
    )?;
    println!("wrote {}", path.display());
    Ok(())
}
