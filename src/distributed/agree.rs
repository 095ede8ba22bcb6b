//! Agreeing on an outcome: a step that may fail on some ranks is followed by one all-reduce, so
//! that every rank returns an error when any failed and none waits for a message that will not
//! come.

use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use crate::{Error, Result};

/// `outcome` on every rank where all succeeded; else the first failure: its own error on the
/// rank that had it, the same non-finite value on every other rank that found one (the
/// earliest step, then the lowest z, y and x: the cell one process names, unless a rank's
/// first bad cell lies in a halo that wraps a periodic axis), this rank's own error where it
/// is of another kind, and on the ranks that succeeded [`Error::RankFailed`] naming the
/// failing rank and its error. A real error outranks a non-finite value.
/// Collective: a program calls it after a step that may fail on some ranks only, so that no
/// rank goes on to wait for a message that will not come.
pub fn agreed<X>(comm: &SimpleCommunicator, outcome: Result<X>) -> Result<X> {
    agreed_failure(comm, outcome).0
}

/// [`agreed`], and whether the failure the ranks agree on is a non-finite value (the same on
/// every rank; false where all succeeded). Collective.
pub(crate) fn agreed_failure<X>(
    comm: &SimpleCommunicator,
    outcome: Result<X>,
) -> (Result<X>, bool) {
    let Some(first) = first_failure(comm, outcome.as_ref().err()) else {
        return (outcome, false);
    };
    let non_finite = first.non_finite.is_some();
    let agreed = match (outcome, first.non_finite) {
        (Err(Error::NonFinite { .. }), Some((step, cell, value))) => {
            Err(Error::NonFinite { step, cell, value })
        }
        (Err(e), _) => Err(e),
        (Ok(_), _) => Err(Error::RankFailed {
            rank: first.rank,
            message: first.message,
        }),
    };
    (agreed, non_finite)
}

/// The failure the ranks agree on (see [`first_failure`]).
pub(crate) struct Failure {
    /// The rank that had it.
    pub(crate) rank: usize,
    /// Its error's message.
    pub(crate) message: String,
    /// Its step, cell and value, where it is a non-finite value ([`Error::NonFinite`]).
    pub(crate) non_finite: Option<(usize, [usize; 3], f64)>,
}

/// The first failure of any rank, the same on every rank (`None` when no rank has one): the
/// lowest rank with an error other than a non-finite value, else the non-finite value of the
/// earliest step, then the lowest cell in z, y and x (cells in the whole grid's coordinates,
/// see `Block::in_whole_grid`), then the lowest rank. Collective.
pub(crate) fn first_failure(comm: &SimpleCommunicator, error: Option<&Error>) -> Option<Failure> {
    // Ordered by the first six words; the seventh carries the value's bits.
    let rank = comm.rank() as u64;
    let key: [u64; 7] = match error {
        None => [u64::MAX; 7],
        Some(Error::NonFinite { step, cell, value }) => {
            let [x, y, z] = cell.map(|c| c as u64);
            [1, *step as u64, z, y, x, rank, value.to_bits()]
        }
        Some(_) => [0, 0, 0, 0, 0, rank, 0],
    };
    let mut all = vec![0u64; 7 * comm.size() as usize];
    comm.all_gather_into(&key[..], &mut all[..]);
    let first = all
        .chunks_exact(7)
        .min_by_key(|k| [k[0], k[1], k[2], k[3], k[4], k[5]])
        .filter(|k| k[0] != u64::MAX)?;
    let non_finite = (first[0] == 1).then(|| {
        let cell = [first[4], first[3], first[2]].map(|c| c as usize);
        (first[1] as usize, cell, f64::from_bits(first[6]))
    });
    let root = comm.process_at_rank(first[5] as i32);
    let mut text = error
        .map(|e| e.to_string().into_bytes())
        .unwrap_or_default();
    let mut len = text.len() as u64;
    root.broadcast_into(&mut len);
    text.resize(len as usize, 0);
    root.broadcast_into(&mut text[..]);
    Some(Failure {
        rank: first[5] as usize,
        message: String::from_utf8_lossy(&text).into_owned(),
        non_finite,
    })
}

/// `Ok` when `value` is the same on every rank, else on every rank
/// [`Error::PlanMismatch`] saying that the ranks disagree on `what`. Collective.
pub(crate) fn same_everywhere(comm: &SimpleCommunicator, what: &str, value: u64) -> Result<()> {
    let (lo, hi) = min_max(comm, value);
    if lo == hi {
        Ok(())
    } else {
        Err(Error::PlanMismatch(format!(
            "the ranks disagree on {what}: every rank must run the same build with the same plan"
        )))
    }
}

/// The step every rank's local state holds, on every rank; `step` is this rank's (`None` where
/// its state is no one step's: a grid whose copy back from its GPU failed, see
/// [`crate::distributed::DistributedGrid::steps`]). Else, on
/// every rank, [`Error::InvalidArgument`] saying that the blocks of the `what` hold different
/// steps: blocks of different steps make no one state to gather, write or run on (a run, also
/// a failed one, leaves every block at one step; a grid whose copy back from a GPU failed holds
/// none). Collective.
pub(crate) fn common_step(comm: &SimpleCommunicator, step: Option<u64>, what: &str) -> Result<u64> {
    let (lo, hi) = min_max(comm, step.unwrap_or(u64::MAX));
    if lo == hi && step.is_some() {
        return Ok(lo);
    }
    let held = if hi == u64::MAX {
        "a copy back from a GPU failed on some ranks and left their blocks part written".to_string()
    } else {
        format!("the ranks hold steps {lo} to {hi}")
    };
    Err(Error::InvalidArgument(format!(
        "the blocks of the {what} make no one state: {held}; split it again from a whole copy"
    )))
}

/// The smallest and the largest of `value` over the ranks. Collective.
pub(crate) fn min_max(comm: &SimpleCommunicator, value: u64) -> (u64, u64) {
    let (mut lo, mut hi) = (0u64, 0u64);
    comm.all_reduce_into(&value, &mut lo, SystemOperation::min());
    comm.all_reduce_into(&value, &mut hi, SystemOperation::max());
    (lo, hi)
}

/// `value`, which `root` passes (`None` elsewhere), on every rank, sent as JSON (for the few
/// hundred bytes of a kernel or a state's description). Collective.
///
/// Errors, on every rank: a value that does not read back (the ranks run different builds).
pub fn broadcast_json<V: serde::Serialize + serde::de::DeserializeOwned>(
    comm: &SimpleCommunicator,
    root: usize,
    value: Option<&V>,
) -> Result<V> {
    let mut text = value
        .map(|v| serde_json::to_vec(v).expect("the value serialises"))
        .unwrap_or_default();
    let from = comm.process_at_rank(root as i32);
    let mut len = text.len() as u64;
    from.broadcast_into(&mut len);
    text.resize(len as usize, 0);
    from.broadcast_into(&mut text[..]);
    serde_json::from_slice(&text)
        .map_err(|e| Error::InvalidArgument(format!("what rank {root} sent does not read: {e}")))
}

/// `comm`'s own copy, after checking that `root` is one of its ranks and that every rank runs
/// the same build with the same `plan`: the start of every constructor of a distributed
/// state. Collective.
pub(crate) fn start(
    comm: &impl Communicator,
    plan: &crate::Plan,
    root: usize,
) -> Result<SimpleCommunicator> {
    let comm = comm.duplicate();
    if root >= comm.size() as usize {
        return Err(Error::InvalidArgument(format!(
            "root rank {root} of a scatter over {} ranks",
            comm.size()
        )));
    }
    same_everywhere(&comm, "the build and the plan", fingerprint(plan))?;
    Ok(comm)
}

/// A hash of what every rank must share: the library's version and the plan's kernel, element
/// type, grid, engine and `dim_t`.
pub(crate) fn fingerprint(plan: &crate::Plan) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut h);
    // The kernel whole, coefficients included (its display names only shape and radius).
    serde_json::to_string(plan.kernel())
        .unwrap_or_else(|_| plan.kernel().to_string())
        .hash(&mut h);
    plan.dtype().name().hash(&mut h);
    plan.dims().hash(&mut h);
    plan.engine().hash(&mut h);
    plan.dim_t().hash(&mut h);
    h.finish()
}
