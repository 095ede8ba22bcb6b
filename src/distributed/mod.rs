//! Runs beyond one process: a grid split over MPI ranks with deep halos.
//!
//! [`Decomposition`] cuts the grid over a Cartesian process grid in y and z (x stays whole).
//! With the `mpi` feature, [`DistributedGrid`] holds one rank's block plus a halo of
//! `R · dim_t` cells (stencil radius times the steps between exchanges) on each side that has a
//! neighbour. `Solver::new(plan).run(&mut grid, steps)` exchanges the halos once per `dim_t`
//! steps (nonblocking sends and receives, y faces then z faces, so edges and corners arrive
//! too) and between exchanges advances the rank's local array with the engine the plan chose
//! for the whole grid: communication once per pass instead of once per step, the 3.5D idea
//! across ranks. Each owned cell is computed by the same row kernel on the same values as in
//! one process, so the result equals the single-process run bit for bit.
//!
//! ```ignore
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! let plan = Plan::for_grid(&stencil, &whole_grid_shape)?;
//! let mut grid = DistributedGrid::from_fn(&world, &plan, |x, y, z| initial(x, y, z))?;
//! let report = Solver::new(plan).run(&mut grid, 1000)?;
//! let result = grid.gather()?; // Some(grid) on rank 0
//! ```

#[cfg(feature = "mpi")]
mod accessors;
#[cfg(feature = "mpi")]
pub(crate) mod agree;
#[cfg(feature = "mpi")]
mod checkpoint;
pub mod decompose;
#[cfg(feature = "mpi")]
pub(crate) mod exchange;
#[cfg(feature = "mpi")]
mod grid;
#[cfg(feature = "mpi")]
mod lattice;
#[cfg(feature = "mpi")]
pub(crate) mod on_device;
#[cfg(feature = "mpi")]
mod output;
mod rank_files;
#[cfg(feature = "mpi")]
mod wave;

pub use crate::runtime::cores::host_ranks;
#[cfg(feature = "mpi")]
pub use agree::{agreed, broadcast_json};
pub use decompose::{Block, Decomposition};
#[cfg(feature = "mpi")]
pub use grid::{common_plan, DistributedGrid};
#[cfg(feature = "mpi")]
pub(crate) use grid::{owned_local, swap_z_planes};
#[cfg(feature = "mpi")]
pub(crate) use lattice::two_copies;
#[cfg(feature = "mpi")]
pub use lattice::DistributedLattice;
#[cfg(feature = "mpi")]
pub use output::{piece_path, pvti_path};
pub use rank_files::{rank_path, written_by_note};
#[cfg(feature = "mpi")]
pub use wave::DistributedWavefield;
