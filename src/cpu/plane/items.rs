//! Work items shared out on the rayon pool: every thread of the pool claims items from one
//! counter until none are left, each with its own scratch state (ring buffers, padded rows)
//! made once per thread and kept from item to item.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work(state, item)` for every item `0 .. items`, each exactly once, on the threads of
/// `pool`; every thread makes its `state` with `init` before its first item. Items are
/// claimed in increasing order, so neighbouring items run at about the same time. Returns
/// whether every call returned true (the engines' "all outputs finite").
pub(crate) fn for_each_item<S>(
    pool: &rayon::ThreadPool,
    items: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> bool + Sync,
) -> bool {
    let next = AtomicUsize::new(0);
    let results = pool.broadcast(|_| {
        let mut ok = true;
        let mut state: Option<S> = None;
        loop {
            let item = next.fetch_add(1, Ordering::Relaxed);
            if item >= items {
                return ok;
            }
            let s = state.get_or_insert_with(&init);
            ok &= work(s, item);
        }
    });
    results.into_iter().all(|ok| ok)
}

/// A pointer into the destination grid shared by the threads of a pass, each of which writes
/// only the rows and columns of its own work items.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(*mut T);

// SAFETY: the pointer is only written through at cells of one work item by the thread that
// claimed it (see `for_each_item`), and read by no other thread during the pass.
unsafe impl<T> Sync for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Send for Shared<T> {}

impl<T> Shared<T> {
    /// Shares `ptr`.
    pub(crate) fn new(ptr: *mut T) -> Self {
        Shared(ptr)
    }

    /// The pointer.
    #[inline(always)]
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// `range` cut into `parts` near-equal consecutive pieces; piece `i`.
pub(crate) fn piece(
    range: std::ops::Range<usize>,
    i: usize,
    parts: usize,
) -> std::ops::Range<usize> {
    let len = range.len();
    range.start + len * i / parts..range.start + len * (i + 1) / parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_runs_once() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let seen: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
        let ok = for_each_item(
            &pool,
            seen.len(),
            || (),
            |_, i| {
                seen[i].fetch_add(1, Ordering::Relaxed);
                i != 57
            },
        );
        assert!(!ok, "item 57 reported a failure");
        assert!(seen.iter().all(|n| n.load(Ordering::Relaxed) == 1));
        let pieces: Vec<_> = (0..4).map(|i| piece(3..13, i, 4)).collect();
        assert_eq!(pieces, [3..5, 5..8, 8..10, 10..13]);
    }
}
