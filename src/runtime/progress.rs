//! Point-to-point synchronisation of a tile group's pipeline steps. With a barrier per step the
//! whole group waits for its slowest member at every plane, and on a loaded many-core host some
//! member is nearly always late. But a member only reads rows of the two members whose shares
//! border its own (when every share is at least R rows deep; see
//! `blocked::neighbours_suffice`), so it need only wait for those two: each member
//! publishes how many steps it has finished, and starts step `s` once both neighbours have
//! finished step `s - 1`. Delays then spread along the group one member per step instead of
//! stopping everyone.
//!
//! Why that is enough: a neighbour that has finished step `s - 1` has written every row this
//! member reads at step `s`. It cannot start step `s + 1`, which overwrites the ring slots read
//! at step `s`, before this member has finished step `s` (it waits for this member in turn), and
//! at step `s` itself it writes only the slot of its newest plane, which nobody reads until step
//! `s + 1`.

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::barrier::{Poisoned, SpinBarrier};

/// Steps finished by every thread of a team, each counter on its own cache line.
pub(crate) struct Progress {
    done: Vec<CachePadded<AtomicUsize>>,
}

impl Progress {
    /// Counters for `threads` threads, all at zero.
    pub(crate) fn new(threads: usize) -> Progress {
        Progress {
            done: (0..threads)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    /// Publishes that thread `tid` has finished `steps` steps (and every write they made).
    #[inline]
    pub(crate) fn finish(&self, tid: usize, steps: usize) {
        self.done[tid].store(steps, Ordering::Release);
    }

    /// Waits until the threads `neighbours` have each finished `steps` steps, or the group's
    /// `barrier` is poisoned (a member panicked).
    #[inline]
    pub(crate) fn wait(
        &self,
        neighbours: [Option<usize>; 2],
        steps: usize,
        barrier: &SpinBarrier,
    ) -> Result<(), Poisoned> {
        for tid in neighbours.into_iter().flatten() {
            barrier.spin_until(|| self.done[tid].load(Ordering::Acquire) >= steps)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::barrier::PoisonOnPanic;

    /// A chain of threads passing values to their neighbours through slots that are reused
    /// every other step, synchronised only by `Progress`: every read must see the value written
    /// one step before, never an older or newer one.
    #[test]
    fn neighbours_see_the_previous_step_and_never_a_newer_one() {
        let threads = 5;
        let steps = 2_000;
        // slots[t][s % 2]: what thread t wrote at step s.
        let slots: Vec<[AtomicUsize; 2]> = (0..threads)
            .map(|_| [AtomicUsize::new(0), AtomicUsize::new(0)])
            .collect();
        let progress = Progress::new(threads);
        let barrier = SpinBarrier::new(threads);
        std::thread::scope(|sc| {
            for t in 0..threads {
                let (slots, progress, barrier) = (&slots, &progress, &barrier);
                sc.spawn(move || {
                    // A failed check poisons the barrier, which ends the others' waits.
                    let _poison = PoisonOnPanic(barrier);
                    let neighbours = [t.checked_sub(1), (t + 1 < threads).then_some(t + 1)];
                    for s in 0..steps {
                        progress.wait(neighbours, s, barrier).unwrap();
                        if s > 0 {
                            for n in neighbours.into_iter().flatten() {
                                let seen = slots[n][(s - 1) % 2].load(Ordering::Relaxed);
                                assert_eq!(seen, s, "thread {t} step {s} reading {n}");
                            }
                        }
                        slots[t][s % 2].store(s + 1, Ordering::Relaxed);
                        progress.finish(t, s + 1);
                    }
                });
            }
        });
    }
}
