//! User story: "My block of heat is too big for one machine: split it over MPI ranks, with the
//! same solver call."
//!
//! The cube of the `heat` example (cold, its x = 0 wall held hot), split over the ranks of
//! `mpirun`: every rank plans, `common_plan` gives every rank rank 0's engine and `dim_t`, each
//! rank builds only its block and halo from the global coordinates, and rank 0 gathers the
//! result and prints the same temperature profile as the one-process example. Run with
//! `cargo build --release --features mpi --example distributed_heat` and
//! `mpirun -n 2 target/release/examples/distributed_heat`.

use mpi::topology::Communicator;
use stencil35d::distributed::{common_plan, DistributedGrid};
use stencil35d::{DType, PlanBuilder, Solver, Stencil};

fn main() -> Result<(), stencil35d::Error> {
    let universe = mpi::initialize().expect("MPI is initialised once, here");
    let world = universe.world();
    // u <- (1 - 6ν)·u + ν·(six neighbours), ν = 1/7: stable explicit diffusion.
    let nu = 1.0 / 7.0;
    let stencil = Stencil::seven_point(1.0 - 6.0 * nu, nu);
    let dims = [128, 128, 128];
    // Ranks may measure the machine differently: one plan for all, rank 0's.
    let plan = common_plan(&world, PlanBuilder::new(stencil, DType::F32, dims).build()?)?;
    if world.rank() == 0 {
        println!("{plan}");
    }
    let mut grid =
        DistributedGrid::<f32>::from_fn(&world, &plan, |x, _, _| if x == 0 { 1.0 } else { 0.0 })?;
    let report = Solver::new(plan).run(&mut grid, 400)?;
    // Collective: every rank sends its block, rank 0 receives the whole grid.
    if let Some(whole) = grid.gather()? {
        let d = grid.decomposition();
        let [py, pz] = d.procs;
        println!("{report}\n{} ranks, split 1x{py}x{pz}", d.ranks());
        let profile: Vec<String> = (0..8)
            .map(|i| format!("{:.3}", whole.get(i * 4, 64, 64)))
            .collect();
        println!("u(x = 0, 4, ..., 28) = {}", profile.join(" "));
    }
    Ok(())
}
