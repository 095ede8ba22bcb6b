//! Checkpoints of a [`DistributedLattice`]: one file per rank, its local lattice (block and
//! halo) in the lattice checkpoint format, tagged with the split, so a run restarts bit for
//! bit on the same decomposition and refuses another. The halo is not part of the split: a
//! restart whose plan exchanges every other number of steps rebuilds each rank's halo from
//! its neighbours.

use std::path::Path;

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::agree::{agreed, common_step, min_max, start};
use super::grid::owned_local;
use super::lattice::{
    code_rows, codes_of, halo_faces, local_periodic, read_rows, two_copies, write_code_rows,
    write_rows,
};
use super::{rank_path, Block, Decomposition, DistributedLattice};
use crate::lbm::{CheckpointTag, Lattice};
use crate::{Error, Plan, Real, Result};

/// The tag of rank `rank`'s file: the caller's `run` tag (its scenario, or "distributed
/// lattice"), its geometry followed by the whole lattice's size and periodicity, the process
/// grid and the rank.
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
            "{}{}{nx}x{ny}x{nz} periodic {periodic:?}, split 1x{py}x{pz}, rank {rank} of {}",
            run.geometry,
            if run.geometry.is_empty() { "" } else { "; " },
            d.ranks()
        ),
    )
}

impl<T: Real + Equivalence> DistributedLattice<T> {
    /// Writes every rank's local lattice to [`rank_path`]`(prefix, rank, ranks)`. Collective:
    /// an I/O error on any rank is an error on every rank. Each rank first writes its file
    /// under a temporary name; only once every rank's is on disk do they replace the last
    /// checkpoint's, so a failed write anywhere leaves that checkpoint whole on every rank.
    pub fn save(&self, prefix: impl AsRef<Path>) -> Result<()> {
        self.save_tagged(prefix, &CheckpointTag::default())
    }

    /// [`DistributedLattice::save`], recording `run` (a scenario and its geometry) too, for
    /// [`DistributedLattice::load_tagged`] to check.
    ///
    /// Errors, on every rank, before any file is touched: blocks of different steps (see
    /// [`DistributedLattice::gather`]), which would replace the last checkpoint with a set no
    /// run could restart from.
    pub fn save_tagged(&self, prefix: impl AsRef<Path>, run: &CheckpointTag) -> Result<()> {
        common_step(&self.comm, Some(self.local.steps()), "lattice")?;
        let rank = self.comm.rank() as usize;
        let path = rank_path(&prefix, rank, self.decomposition.ranks());
        let tag = tag(run, &self.decomposition, self.periodic, rank);
        let staged = agreed(&self.comm, self.local.stage_tagged(&path, &tag))?;
        agreed(&self.comm, crate::files::commit_durable(staged))
    }

    /// Reads the checkpoint [`DistributedLattice::save`] wrote under `prefix` for `plan` on as
    /// many ranks as `comm` has: the run continues exactly where it stopped. Collective.
    ///
    /// `plan` may exchange halos every other number of steps than the plan that wrote the
    /// files (the planner may pick another `dim_t` on the restart): each rank's halo is then
    /// rebuilt from its neighbours' blocks.
    ///
    /// Errors, on every rank: ranks whose builds or plans differ, an in-place plan, a missing,
    /// corrupt or truncated file, a file written for another split (size, periodicity, rank
    /// count or process grid) or for another kernel than `plan`'s, and files of different
    /// checkpoints (step counts, physics, boundary conditions or storage that differ between
    /// ranks: a set some of whose files a later save replaced).
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
            // The prefix itself may be the file of a run in one process.
            let whole: &Path = prefix.as_ref();
            let single = if whole.is_file() {
                format!(
                    "; {} itself is a checkpoint of one process, which restarts without mpirun",
                    whole.display()
                )
            } else {
                String::new()
            };
            Error::InvalidArgument(format!(
                "{} is missing: a checkpoint restarts on as many ranks as wrote it ({} here){}{single}",
                path.display(),
                decomposition.ranks(),
                super::written_by_note(whole, Some(decomposition.ranks()))
            ))
        };
        let check = |found: &CheckpointTag| {
            if *found != expected {
                return Err(Error::InvalidArgument(format!(
                    "{} was written for {found}, this run is {expected}: restart the same run \
                     on the same decomposition",
                    path.display()
                )));
            }
            Ok(())
        };
        // The tag is read from the header first: a file of another run is refused before its
        // block is allocated and read.
        let read = if path.exists() {
            Lattice::<T>::checkpoint_tag(&path)
                .and_then(|found| check(&found))
                .and_then(|()| Lattice::<T>::load_tagged(&path))
        } else {
            Err(missing())
        };
        let local = read.and_then(|(mut local, found)| {
            check(&found)?;
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
            rehalo(local, &block, plan.dims()[0]).map_err(|e| match e {
                Error::InvalidArgument(m) => {
                    Error::InvalidArgument(format!("{}: {m}", path.display()))
                }
                other => other,
            })
        });
        let local = agreed(&comm, local)?;
        same_checkpoint(&comm, &local, prefix.as_ref())?;
        let mut lat = DistributedLattice::assemble(comm, decomposition, local, periodic);
        lat.exchange_flags();
        Ok(lat)
    }
}

/// `Ok` when every rank's file is of one checkpoint: the same step count, physics, boundary
/// conditions and storage on every rank. Collective.
fn same_checkpoint<T: Real>(
    comm: &SimpleCommunicator,
    local: &Lattice<T>,
    prefix: &Path,
) -> Result<()> {
    use std::hash::{Hash, Hasher};
    let shared = local.shared();
    let what = (shared.physics, &shared.boundaries, shared.storage);
    let text = serde_json::to_vec(&what).expect("the lattice's description serialises");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let [steps, physics] = [local.steps(), h.finish()].map(|v| min_max(comm, v));
    let mixed = |what: String| {
        Err(Error::InvalidArgument(format!(
            "the rank files of checkpoint {} are not of one checkpoint: they hold {what}; a save \
             that failed on some ranks or was stopped while the files were renamed leaves such a \
             set: restart from another checkpoint",
            prefix.display()
        )))
    };
    if steps.0 != steps.1 {
        return mixed(format!("steps {} to {}", steps.0, steps.1));
    }
    if physics.0 != physics.1 {
        return mixed("different physics, boundary conditions or storage".into());
    }
    Ok(())
}

/// `local`, read from a file written with another halo depth, moved into a local lattice with
/// `block`'s halos: its owned nodes copied, its halo nodes at rest until the exchanges fill
/// them (flags at once, populations before the first pass). Unchanged when the depths agree.
fn rehalo<T: Real>(local: Lattice<T>, block: &Block, nx: usize) -> Result<Lattice<T>> {
    let dims = block.local_dims(nx);
    if local.dims() == dims {
        return Ok(local);
    }
    let corrupt = || {
        Error::InvalidArgument(format!(
            "its local lattice of {:?} nodes does not hold this rank's block of {:?} and its \
             halos",
            local.dims(),
            dims
        ))
    };
    let mut old = block.clone();
    for a in 0..2 {
        let sides = old.halos[a].iter().filter(|&&h| h > 0).count();
        let (len, owned) = (local.dims()[a + 1], block.owned[a].len());
        let depth = match sides {
            0 if len == owned => 0,
            0 => return Err(corrupt()),
            _ if len <= owned || (len - owned) % sides != 0 => return Err(corrupt()),
            _ => (len - owned) / sides,
        };
        old.halos[a] = old.halos[a].map(|h| if h > 0 { depth } else { 0 });
    }
    if local.dims()[0] != nx || old.local_dims(nx) != local.dims() {
        return Err(corrupt());
    }
    let mut moved = Lattice::part(&local.shared(), dims, local.periodic(), local.halo_faces)?;
    let (from, to) = (owned_local(&old), owned_local(block));
    let (flags, pops) = read_rows(&local, &from);
    write_rows(&mut moved, &to, &flags, &pops);
    // A 16-bit lattice keeps its exact codes (written last: writing populations drops them).
    if let Some(codes) = codes_of(&local) {
        let rows = code_rows(&local, &codes, &from, |y, z| (y, z));
        write_code_rows(&mut moved, &to, &rows);
    }
    Ok(moved)
}
