//! Started by an MPI launcher (`mpirun -n N stencil35d ...`): with the `mpi` feature, MPI is
//! initialised once for the process and `bench` splits its grid over the ranks; without it, a
//! launch on more than one rank is refused at start rather than running N copies of the job.

use stencil35d::Error;

/// The number of ranks the launcher started, from the variables OpenMPI (`OMPI_COMM_WORLD_SIZE`)
/// and MPICH-style launchers (`PMI_SIZE`) set; `None` when not started by one.
pub fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// MPI for this process: `None` when it was not started by a launcher.
#[cfg(feature = "mpi")]
pub fn start() -> Result<Option<mpi::environment::Universe>, Error> {
    if launched_ranks().is_none() {
        return Ok(None);
    }
    mpi::initialize()
        .map(Some)
        .ok_or_else(|| Error::InvalidArgument("MPI was already initialised".into()))
}

/// Without the `mpi` feature: an error when started on more than one rank.
#[cfg(not(feature = "mpi"))]
pub fn start() -> Result<Option<()>, Error> {
    match launched_ranks() {
        Some(n) if n > 1 => Err(Error::InvalidArgument(format!(
            "started as {n} MPI ranks, but this stencil35d was built without the `mpi` feature \
             (cargo build --release --features mpi): each rank would run the whole job"
        ))),
        _ => Ok(None),
    }
}

/// The error for a subcommand that runs in one process, started on `ranks` ranks.
#[cfg(feature = "mpi")]
pub fn single_process_only(command: &str, ranks: usize) -> Error {
    Error::InvalidArgument(format!(
        "`{command}` runs in one process but was started as {ranks} MPI ranks; \
         under mpirun, `bench` and `run cavity|channel|sphere` split their grid or lattice \
         over the ranks"
    ))
}

/// Whether this process is rank 0, or alone.
#[cfg(feature = "mpi")]
pub fn is_first(mpi: Option<&mpi::environment::Universe>) -> bool {
    use mpi::topology::Communicator;
    mpi.is_none_or(|u| u.world().rank() == 0)
}

/// Without the `mpi` feature the process is alone.
#[cfg(not(feature = "mpi"))]
pub fn is_first(_: Option<&()>) -> bool {
    true
}
