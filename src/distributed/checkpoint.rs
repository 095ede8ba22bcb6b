//! Checkpoints of a [`DistributedLattice`]: one file per rank, its local lattice (block and
//! halo) in the lattice checkpoint format, tagged with the split, so a run restarts bit for
//! bit on the same decomposition and refuses another.

use std::path::{Path, PathBuf};

use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::agree::{agreed, start};
use super::lattice::{halo_faces, local_periodic, two_copies};
use super::{Decomposition, DistributedLattice};
use crate::lbm::{CheckpointTag, Lattice};
use crate::{Error, Plan, Real, Result};

/// The file rank `rank` of `ranks` writes for checkpoint `prefix`:
/// `<prefix>.<rank>-of-<ranks>.lbm`.
pub fn rank_path(prefix: impl AsRef<Path>, rank: usize, ranks: usize) -> PathBuf {
    let mut name = prefix.as_ref().as_os_str().to_owned();
    name.push(format!(".{rank}-of-{ranks}.lbm"));
    PathBuf::from(name)
}

/// The tag of rank `rank`'s file: the caller's `run` tag (its scenario, or "distributed
/// lattice"), its geometry followed by the whole lattice's size and periodicity, the process
/// grid, the halo and the rank.
fn tag(run: &CheckpointTag, d: &Decomposition, periodic: [bool; 3], rank: usize) -> CheckpointTag {
    let [nx, ny, nz] = d.dims;
    let [py, pz] = d.procs;
    let scenario = if run.scenario.is_empty() {
        "distributed lattice"
    } else {
        &run.scenario
    };
    CheckpointTag::new(
        scenario,
        format!(
            "{}{}{nx}x{ny}x{nz} periodic {periodic:?}, split 1x{py}x{pz}, halo {}, rank {rank} \
             of {}",
            run.geometry,
            if run.geometry.is_empty() { "" } else { "; " },
            d.halo,
            d.ranks()
        ),
    )
}

impl<T: Real + Equivalence> DistributedLattice<T> {
    /// Writes every rank's local lattice to [`rank_path`]`(prefix, rank, ranks)`. Collective:
    /// an I/O error on any rank is an error on every rank.
    pub fn save(&self, prefix: impl AsRef<Path>) -> Result<()> {
        self.save_tagged(prefix, &CheckpointTag::default())
    }

    /// [`DistributedLattice::save`], recording `run` (a scenario and its geometry) too, for
    /// [`DistributedLattice::load_tagged`] to check.
    pub fn save_tagged(&self, prefix: impl AsRef<Path>, run: &CheckpointTag) -> Result<()> {
        let rank = self.comm.rank() as usize;
        let path = rank_path(&prefix, rank, self.decomposition.ranks());
        let tag = tag(run, &self.decomposition, self.periodic, rank);
        agreed(&self.comm, self.local.save_tagged(path, &tag))
    }

    /// Reads the checkpoint [`DistributedLattice::save`] wrote under `prefix` for `plan` on as
    /// many ranks as `comm` has: the run continues exactly where it stopped. Collective.
    ///
    /// Errors, on every rank: ranks whose builds or plans differ, an in-place plan, a missing,
    /// corrupt or truncated file, a file written for another split (size, periodicity, rank
    /// count, process grid or halo) or for another kernel than `plan`'s.
    pub fn load(comm: &impl Communicator, plan: &Plan, prefix: impl AsRef<Path>) -> Result<Self> {
        Self::load_tagged(comm, plan, prefix, &CheckpointTag::default())
    }

    /// [`DistributedLattice::load`] of files [`DistributedLattice::save_tagged`] wrote with
    /// `run`; files with another tag are refused.
    pub fn load_tagged(
        comm: &impl Communicator,
        plan: &Plan,
        prefix: impl AsRef<Path>,
        run: &CheckpointTag,
    ) -> Result<Self> {
        let comm = start(comm, plan, 0)?;
        two_copies(plan)?;
        let kernel = plan.kernel().lbm().copied().ok_or_else(|| {
            Error::PlanMismatch(format!(
                "a distributed lattice runs lattice-Boltzmann plans, not {}",
                plan.kernel()
            ))
        })?;
        let steps = plan.dim_t().max(1);
        let periodic = kernel.periodic;
        let decomposition = Decomposition::new(plan.dims(), comm.size() as usize, steps)?
            .with_periodic([periodic[1], periodic[2]]);
        let rank = comm.rank() as usize;
        let block = decomposition.block(rank);
        let path = rank_path(&prefix, rank, decomposition.ranks());
        let expected = tag(run, &decomposition, periodic, rank);
        let missing = || {
            Error::InvalidArgument(format!(
                "{} is missing: a checkpoint restarts on as many ranks as wrote it ({} here)",
                path.display(),
                decomposition.ranks()
            ))
        };
        let read = if path.exists() {
            Lattice::<T>::load_tagged(&path)
        } else {
            Err(missing())
        };
        let local = read.and_then(|(mut local, found)| {
            if found != expected {
                return Err(Error::InvalidArgument(format!(
                    "{} was written for {found}, this run is {expected}: restart on the same \
                     decomposition",
                    path.display()
                )));
            }
            if local.physics().has_force() != kernel.forced || local.storage() != kernel.storage {
                return Err(Error::PlanMismatch(format!(
                    "{} holds a lattice of another kernel than the plan's {kernel}",
                    path.display()
                )));
            }
            local.halo_faces = halo_faces(&block);
            debug_assert_eq!(
                local.periodic(),
                local_periodic(periodic, decomposition.procs)
            );
            Ok(local)
        });
        let local = agreed(&comm, local)?;
        Ok(DistributedLattice::assemble(
            comm,
            decomposition,
            local,
            periodic,
        ))
    }
}
