//! A sense-reversing spin barrier for the blocked engine's team: one barrier per z-step, so it
//! must cost far less than an OS barrier (the 3.5D paper's own barrier was 50x faster than
//! pthreads'). Waiters spin briefly, then yield, so an oversubscribed machine (parallel test
//! runs, a busy CI box) still makes progress.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

/// Spins before a waiter starts yielding its time slice.
const SPINS_BEFORE_YIELD: u32 = 2_000;

/// A reusable barrier for a fixed number of threads.
pub(crate) struct SpinBarrier {
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    poisoned: CachePadded<AtomicBool>,
    threads: usize,
}

/// Returned by [`SpinBarrier::wait`] when another team member panicked.
#[derive(Debug)]
pub(crate) struct Poisoned;

impl SpinBarrier {
    /// A barrier for `threads` participants.
    pub(crate) fn new(threads: usize) -> Self {
        Self {
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            poisoned: CachePadded::new(AtomicBool::new(false)),
            threads,
        }
    }

    /// Blocks until all participants have called `wait` for this round. Every write a thread
    /// made before its call is visible to every thread after the call returns.
    pub(crate) fn wait(&self) -> Result<(), Poisoned> {
        if self.threads <= 1 {
            return Ok(());
        }
        let generation = self.generation.load(Ordering::Acquire);
        // AcqRel: the last arriver acquires every earlier arriver's writes, then releases them
        // all through the generation store below.
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation
                .store(generation.wrapping_add(1), Ordering::Release);
            return Ok(());
        }
        self.spin_until(|| self.generation.load(Ordering::Acquire) != generation)
    }

    /// Spins, then yields, until `ready` holds (Ok) or the barrier is poisoned (Err): the wait
    /// of this barrier and of the group's other synchronisation ([`super::progress`]).
    #[inline]
    pub(crate) fn spin_until(&self, mut ready: impl FnMut() -> bool) -> Result<(), Poisoned> {
        let mut spins = 0u32;
        while !ready() {
            if self.poisoned.load(Ordering::Relaxed) {
                return Err(Poisoned);
            }
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// Releases every current and future waiter with [`Poisoned`] (a member panicked).
    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::Relaxed);
    }
}

/// Poisons the barrier if dropped while its thread unwinds, so no team member waits forever
/// for one that panicked.
pub(crate) struct PoisonOnPanic<'a>(pub(crate) &'a SpinBarrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn rounds_are_separated() {
        let threads = 4;
        let barrier = SpinBarrier::new(threads);
        let counter = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for round in 0..200u64 {
                        counter.fetch_add(1, Ordering::Relaxed);
                        barrier.wait().unwrap();
                        // Everyone has incremented for this round before anyone reads.
                        assert!(counter.load(Ordering::Relaxed) >= (round + 1) * threads as u64);
                        barrier.wait().unwrap();
                    }
                });
            }
        });
        assert_eq!(counter.load(Ordering::Relaxed), 200 * threads as u64);
    }

    #[test]
    fn poison_releases_waiters() {
        let barrier = SpinBarrier::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| barrier.wait());
            std::thread::sleep(std::time::Duration::from_millis(20));
            barrier.poison();
            assert!(waiter.join().unwrap().is_err());
        });
    }
}
