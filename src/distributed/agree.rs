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
    let (mut lo, mut hi) = (0u64, 0u64);
    comm.all_reduce_into(&value, &mut lo, SystemOperation::min());
    comm.all_reduce_into(&value, &mut hi, SystemOperation::max());
    if lo == hi {
        Ok(())
    } else {
        Err(Error::PlanMismatch(format!(
            "the ranks disagree on {what}: every rank must run the same build with the same plan"
        )))
    }
}
