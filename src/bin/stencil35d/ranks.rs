//! Started by an MPI launcher (`mpirun -n N stencil35d ...`): with the `mpi` feature, MPI is
//! initialised once for the process and `bench` splits its grid over the ranks; without it, a
//! launch on more than one rank is refused at start rather than running N copies of the job.
//! [`Whole`] lets a scenario's run loop write its outputs alike from a state held whole in this
//! process and from one split over the ranks.

use std::borrow::Cow;

use stencil35d::wave::Wavefield;
use stencil35d::{Error, Grid};

/// The number of ranks the launcher started, from the variables OpenMPI
/// (`OMPI_COMM_WORLD_SIZE`), MPICH-style launchers (`PMI_SIZE`, also Intel MPI's), MVAPICH2
/// (`MV2_COMM_WORLD_SIZE`) and Slurm's `srun` (`SLURM_STEP_NUM_TASKS`, set inside the tasks it
/// starts, counted only above one: a shell opened with `srun --pty` has it too) set; `None`
/// when not started by one.
pub fn launched_ranks() -> Option<usize> {
    let named = |v: &str| std::env::var(v).ok()?.parse::<usize>().ok();
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"]
        .iter()
        .find_map(|v| named(v))
        .or_else(|| named("SLURM_STEP_NUM_TASKS").filter(|&n| n > 1))
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
         under mpirun, `bench` and `run` split their grid, lattice or wavefield over the ranks"
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

/// The longest a failing rank waits for the others before it exits: long enough for rank 0 to
/// reach its own error after building a large input, short enough that a rank that did not
/// fail (and so never arrives) does not keep the job alive for long.
#[cfg(feature = "mpi")]
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A communicator of its own for the exit on an error ([`wait_for_the_others`]), made at start
/// by every rank (duplicating is collective): ranks that did not fail may be inside a
/// collective of the world's, which the exit's barrier must not interleave with. `None` in
/// one process.
#[cfg(feature = "mpi")]
pub fn exit_communicator(
    mpi: Option<&mpi::environment::Universe>,
) -> Option<mpi::topology::SimpleCommunicator> {
    use mpi::topology::Communicator;
    mpi.map(|u| u.world())
        .filter(|w| w.size() > 1)
        .map(|w| w.duplicate())
}

/// Without the `mpi` feature the process is alone.
#[cfg(not(feature = "mpi"))]
pub fn exit_communicator(_: Option<&()>) -> Option<()> {
    None
}

/// Waits on `error` until every rank has reached its own exit, or at most [`EXIT_WAIT`], so
/// that rank 0 has printed its error before a rank's exit makes the launcher end the job. The
/// other ranks often fail first: rank 0 alone builds the whole input, and a launcher kills the
/// ranks still running when one exits with an error. A rank other than 0 that waited in vain
/// (rank 0 did not fail with it) prints its own error, naming itself.
#[cfg(feature = "mpi")]
pub fn wait_for_the_others(exit: Option<&mpi::topology::SimpleCommunicator>, error: &Error) {
    use mpi::collective::CommunicatorCollectives;
    use mpi::topology::Communicator;
    let Some(comm) = exit else {
        return;
    };
    let deadline = std::time::Instant::now() + EXIT_WAIT;
    let mut request = comm.immediate_barrier();
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        if std::time::Instant::now() >= deadline {
            // The process exits next; an incomplete request must not be dropped (it panics).
            std::mem::forget(request);
            if comm.rank() != 0 {
                eprintln!("error (rank {}): {error}", comm.rank());
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Without the `mpi` feature the process is alone: nothing to wait for.
#[cfg(not(feature = "mpi"))]
pub fn wait_for_the_others(_: Option<&()>, _: &Error) {}

/// The rank the launcher gave this process (`OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
/// `MV2_COMM_WORLD_RANK`, `PMIX_RANK`, or `SLURM_PROCID` inside an `srun` step), before MPI is
/// initialised; `None` when not started by a launcher.
pub fn launched_rank() -> Option<usize> {
    launched_ranks()?;
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "MV2_COMM_WORLD_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// A scenario's state as its outputs see it: held whole in this process, or split over MPI
/// ranks, where rank 0 gathers it and writes the outputs.
pub trait Whole<W: Clone> {
    /// The whole state where the outputs are written (this process, or rank 0); `None` on the
    /// other ranks. Collective.
    fn whole(&self) -> Result<Option<Cow<'_, W>>, Error>;
    /// `outcome`, an outcome on the writing process, agreed by every rank: an error there is an
    /// error on every rank. Collective.
    fn agree<O>(&self, outcome: Result<O, Error>) -> Result<O, Error>;
    /// How the state is split, for a summary line: empty in one process.
    fn split(&self) -> String;
}

/// A grid or a wavefield held whole in this process.
macro_rules! whole_here {
    ($($state:ident),*) => {$(
        impl<T: stencil35d::Real> Whole<$state<T>> for $state<T> {
            fn whole(&self) -> Result<Option<Cow<'_, $state<T>>>, Error> {
                Ok(Some(Cow::Borrowed(self)))
            }
            fn agree<O>(&self, outcome: Result<O, Error>) -> Result<O, Error> {
                outcome
            }
            fn split(&self) -> String {
                String::new()
            }
        }
    )*};
}
whole_here!(Grid, Wavefield);

/// A grid or a wavefield split over the ranks.
#[cfg(feature = "mpi")]
macro_rules! whole_split {
    ($($state:ident => $whole:ident),*) => {$(
        impl<T: stencil35d::Real + mpi::datatype::Equivalence> Whole<$whole<T>>
            for stencil35d::distributed::$state<T>
        {
            fn whole(&self) -> Result<Option<Cow<'_, $whole<T>>>, Error> {
                Ok(self.gather()?.map(Cow::Owned))
            }
            fn agree<O>(&self, outcome: Result<O, Error>) -> Result<O, Error> {
                stencil35d::distributed::agreed(self.communicator(), outcome)
            }
            fn split(&self) -> String {
                split_note(self.decomposition())
            }
        }
    )*};
}
#[cfg(feature = "mpi")]
whole_split!(DistributedGrid => Grid, DistributedWavefield => Wavefield);

/// How a state is split, for a summary line: " over N ranks (split 1xPxQ)".
#[cfg(feature = "mpi")]
pub fn split_note(d: &stencil35d::distributed::Decomposition) -> String {
    format!(
        " over {} ranks (split 1x{}x{})",
        d.ranks(),
        d.procs[0],
        d.procs[1]
    )
}
