//! Agreeing on an outcome: a step that may fail on some ranks is followed by one all-reduce, so
//! that every rank returns an error when any failed and none waits for a message that will not
//! come.

use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use crate::{Error, Result};

/// `outcome` on every rank where all succeeded; else this rank's own error, or on the ranks
/// that succeeded [`Error::RankFailed`] naming the lowest rank that failed and its error.
/// Collective: a program calls it after a step that may fail on some ranks only, so that no
/// rank goes on to wait for a message that will not come.
pub fn agreed<X>(comm: &SimpleCommunicator, outcome: Result<X>) -> Result<X> {
    match (first_failure(comm, outcome.as_ref().err()), outcome) {
        (_, Err(e)) => Err(e),
        (Some((rank, message)), Ok(_)) => Err(Error::RankFailed { rank, message }),
        (None, ok) => ok,
    }
}

/// The lowest rank whose `error` is set and that error's message, the same on every rank
/// (`None` when no rank has one). Collective.
pub(crate) fn first_failure(
    comm: &SimpleCommunicator,
    error: Option<&Error>,
) -> Option<(usize, String)> {
    let mine = if error.is_some() {
        comm.rank()
    } else {
        i32::MAX
    };
    let mut first = i32::MAX;
    comm.all_reduce_into(&mine, &mut first, SystemOperation::min());
    if first == i32::MAX {
        return None;
    }
    let root = comm.process_at_rank(first);
    let mut text = error
        .map(|e| e.to_string().into_bytes())
        .unwrap_or_default();
    let mut len = text.len() as u64;
    root.broadcast_into(&mut len);
    text.resize(len as usize, 0);
    root.broadcast_into(&mut text[..]);
    Some((first as usize, String::from_utf8_lossy(&text).into_owned()))
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
    plan.kernel().to_string().hash(&mut h);
    plan.dtype().name().hash(&mut h);
    plan.dims().hash(&mut h);
    plan.engine().hash(&mut h);
    plan.dim_t().hash(&mut h);
    h.finish()
}
