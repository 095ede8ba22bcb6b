//! Probe threads: one scoped thread per core, pinned like the engines' teams, all released
//! together by a barrier so the probes measure the cores running at once. Each thread watches
//! its run-queue wait (see `contention`).

use std::ops::Range;
use std::sync::Barrier;
use std::time::Instant;

use super::contention::Watch;

/// Runs `work(barrier)` on `threads` threads pinned to the cores in turn (unpinned where the OS
/// gives no core list) and returns the results of the threads that finished. `work` should wait
/// on the barrier once its setup is done, so the timed parts start together (a thread that
/// panics before it reaches the barrier leaves the others waiting there).
pub(crate) fn on_pinned_threads<R: Send>(
    threads: usize,
    work: impl Fn(&Barrier) -> R + Sync,
) -> Vec<R> {
    let threads = threads.max(1);
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (start, work, core) = (&start, &work, cores.get(t % cores.len().max(1)));
                s.spawn(move || {
                    if let Some(&core) = core {
                        core_affinity::set_for_current(core);
                    }
                    let watch = Watch::start();
                    let result = work(start);
                    watch.finish();
                    result
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// The fastest of the repetitions `reps` timed by every thread (each thread's `(start, end)`
/// per repetition), in seconds: a repetition spans from the first thread's start to the last
/// one's end, and the fastest counts (other tenants only ever slow a run down). `None` when no
/// thread timed any of them.
/// The median over repetitions `reps` of the span from the first thread's start to the last
/// one's end: one repetition slowed or sped up by other work does not move it.
pub(crate) fn median_span(spans: &[Vec<(Instant, Instant)>], reps: Range<usize>) -> Option<f64> {
    let mut times: Vec<f64> = reps
        .filter_map(|r| {
            let t0 = spans.iter().filter_map(|s| s.get(r)).map(|s| s.0).min()?;
            let t1 = spans.iter().filter_map(|s| s.get(r)).map(|s| s.1).max()?;
            Some((t1 - t0).as_secs_f64())
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// The shortest span over repetitions `reps` (see [`median_span`]).
pub(crate) fn fastest_span(spans: &[Vec<(Instant, Instant)>], reps: Range<usize>) -> Option<f64> {
    reps.filter_map(|r| {
        let t0 = spans.iter().filter_map(|s| s.get(r)).map(|s| s.0).min()?;
        let t1 = spans.iter().filter_map(|s| s.get(r)).map(|s| s.1).max()?;
        Some((t1 - t0).as_secs_f64())
    })
    .reduce(f64::min)
}
