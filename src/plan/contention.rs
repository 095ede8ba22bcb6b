//! Whether the probes had the cores to themselves. Linux counts, per thread, the time it was
//! runnable but waiting for a CPU (`/proc/thread-self/schedstat`, second field). A probe thread
//! that waited for more than [`MAX_WAIT_SHARE`] of its run shared its core with other work (on
//! the machine, or in this process: a test binary's other tests), so its figure says little
//! about the machine; such figures serve this process but are not cached for the boot (a
//! figure cached from one busy moment planned `dim_T` 6-8 for star7 on the 16-core host,
//! 1.09-1.18x naive, where the undisturbed plan ran 1.5-1.75x).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Share of a probe thread's wall time spent waiting for a CPU above which its process's
/// probes count as disturbed.
const MAX_WAIT_SHARE: f64 = 0.1;

static DISTURBED: AtomicBool = AtomicBool::new(false);

/// Watches the calling thread's run-queue wait from [`Watch::start`] to [`Watch::finish`].
pub(crate) struct Watch {
    wait_ns: Option<u64>,
    t0: Instant,
}

impl Watch {
    /// Starts watching the calling thread.
    pub(crate) fn start() -> Watch {
        Watch {
            wait_ns: wait_ns(),
            t0: Instant::now(),
        }
    }

    /// Marks this process's probes disturbed when the calling thread (the one that started the
    /// watch) waited for a CPU more than [`MAX_WAIT_SHARE`] of the time since.
    pub(crate) fn finish(self) {
        let wall = self.t0.elapsed().as_secs_f64();
        if let (Some(before), Some(after)) = (self.wait_ns, wait_ns()) {
            let waited = after.saturating_sub(before) as f64 * 1e-9;
            if wall > 0.0 && waited > MAX_WAIT_SHARE * wall {
                DISTURBED.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// True once a probe thread of this process has waited for its CPU (see the module docs).
pub(crate) fn disturbed() -> bool {
    DISTURBED.load(Ordering::Relaxed)
}

/// The calling thread's run-queue wait so far, nanoseconds (`None` where the kernel does not
/// report it).
fn wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_shares_its_core_is_seen_waiting() {
        if wait_ns().is_none() {
            println!("skipping: the kernel reports no schedstat");
            return;
        }
        // Three busy threads pinned to one core: each runs about a third of the time.
        let core = core_affinity::get_core_ids().and_then(|c| c.first().copied());
        let shares: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(move || {
                        if let Some(core) = core {
                            core_affinity::set_for_current(core);
                        }
                        let (before, t0) = (wait_ns().unwrap(), Instant::now());
                        let mut x = 0u64;
                        while t0.elapsed().as_secs_f64() < 0.2 {
                            x = std::hint::black_box(x.wrapping_add(1));
                        }
                        (wait_ns().unwrap() - before) as f64 * 1e-9 / t0.elapsed().as_secs_f64()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            shares.iter().all(|&w| w > MAX_WAIT_SHARE),
            "run-queue waits {shares:?}"
        );
    }
}
