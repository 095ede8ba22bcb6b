//! A persistent team of worker threads, each pinned to its own core, that runs one job at a time
//! with every member taking part: the execution model of the 3.5D engine (all threads share each
//! XY tile, synchronised by a spin barrier). Threads live as long as the team, so a run pays no
//! spawn cost and keeps its cache and core affinity from pass to pass.

use std::any::Any;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cores::pinning_cores;
use super::float_mode::ThreadMode;
use crate::{Error, Result};

/// A job: called once on every member with the member's index.
type JobFn = dyn Fn(usize) + Sync + 'static;

#[derive(Clone, Copy)]
struct JobPtr(*const JobFn);
// SAFETY: the pointee is Sync, and Team::run_beside keeps it alive until every worker is done with it.
unsafe impl Send for JobPtr {}

struct Slot {
    generation: u64,
    job: Option<JobPtr>,
    pending: usize,
    panic: Option<Box<dyn Any + Send>>,
    /// When the last worker finished the current job.
    finished: Option<Instant>,
    shutdown: bool,
}

struct Shared {
    slot: Mutex<Slot>,
    start: Condvar,
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // Workers never panic while holding the lock (jobs run outside it), so poisoning can
        // only come from a bug; recover the data rather than cascade.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A fixed-size team of (optionally pinned) worker threads.
pub(crate) struct Team {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    pinned: bool,
    flush: bool,
}

impl Team {
    /// Starts `size` workers; with `pin`, worker `i` is pinned to the `i`-th core of
    /// [`pinning_cores`] (wrapping around when there are fewer cores than workers). With
    /// `flush`, the workers flush subnormal numbers to zero ([`ThreadMode`]).
    pub(crate) fn new(size: usize, pin: bool, flush: bool) -> Result<Team> {
        if size == 0 {
            return Err(Error::InvalidPlan(
                "a team needs at least one thread".into(),
            ));
        }
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                generation: 0,
                job: None,
                pending: 0,
                panic: None,
                finished: None,
                shutdown: false,
            }),
            start: Condvar::new(),
            done: Condvar::new(),
        });
        let cores = if pin { pinning_cores() } else { Vec::new() };
        let pinned = pin && !cores.is_empty();
        let mut handles = Vec::with_capacity(size);
        for index in 0..size {
            let shared = Arc::clone(&shared);
            let core = (!cores.is_empty()).then(|| cores[index % cores.len()]);
            let handle = std::thread::Builder::new()
                .name(format!("stencil35d-{index}"))
                .spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    ThreadMode::set_for_thread(flush);
                    worker_loop(&shared, index);
                })
                .map_err(|e| Error::InvalidPlan(format!("cannot start worker thread: {e}")))?;
            handles.push(handle);
        }
        Ok(Team {
            shared,
            handles,
            pinned,
            flush,
        })
    }

    /// Number of workers.
    pub(crate) fn size(&self) -> usize {
        self.handles.len()
    }

    /// Whether the workers were pinned to cores.
    pub(crate) fn pinned(&self) -> bool {
        self.pinned
    }

    /// Whether the workers flush subnormal numbers to zero.
    pub(crate) fn flushes(&self) -> bool {
        self.flush
    }

    /// Runs `job(i)` on every worker `i` and returns when all have finished. A panic in any
    /// worker is re-raised here after all workers have finished. (The engines call
    /// [`Team::run_beside`], which also times the wait.)
    #[cfg(test)]
    pub(crate) fn run<'a>(&self, job: &'a (dyn Fn(usize) + Sync + 'a)) {
        let _ = self.run_beside(job, || {});
    }

    /// Runs `job(i)` on every worker `i`, calling `beside` on the calling thread (which
    /// otherwise only waits) meanwhile: work that must stay on that thread, such as a split
    /// run's MPI calls. Returns when both are done, with how long the last worker's finish
    /// preceded `beside`'s (zero when `beside` finished first). A panic in any worker is
    /// re-raised here after all workers have finished; one in `beside` after they have
    /// finished too.
    pub(crate) fn run_beside<'a>(
        &self,
        job: &'a (dyn Fn(usize) + Sync + 'a),
        beside: impl FnOnce(),
    ) -> Duration {
        let job: *const (dyn Fn(usize) + Sync + 'a) = job;
        // SAFETY: only the lifetime is erased. This function does not return, nor unwind, until
        // `pending` is back to zero (the guard below waits for it on every path), i.e. until
        // every worker has returned from its call of the job, and the pointer is cleared
        // before, so it is never used after `job` dies.
        let ptr = JobPtr(unsafe {
            std::mem::transmute::<*const (dyn Fn(usize) + Sync + 'a), *const JobFn>(job)
        });
        {
            let mut slot = self.shared.lock();
            slot.job = Some(ptr);
            // A worker's panic left over from a job whose `beside` panicked first is dropped.
            slot.panic = None;
            slot.finished = None;
            slot.pending = self.size();
            slot.generation += 1;
            self.shared.start.notify_all();
        }
        let finish = Finish(&self.shared);
        beside();
        let beside_done = Instant::now();
        drop(finish);
        let mut slot = self.shared.lock();
        if let Some(panic) = slot.panic.take() {
            drop(slot);
            std::panic::resume_unwind(panic);
        }
        let workers_done = slot.finished.take().unwrap_or(beside_done);
        beside_done.saturating_duration_since(workers_done)
    }
}

/// Waits, when dropped, until every worker has finished the posted job, and clears it.
struct Finish<'a>(&'a Shared);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let mut slot = self.0.lock();
        while slot.pending > 0 {
            slot = self.0.done.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
        slot.job = None;
    }
}

fn worker_loop(shared: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let job = {
            let mut slot = shared.lock();
            while slot.generation == seen && !slot.shutdown {
                slot = shared.start.wait(slot).unwrap_or_else(|e| e.into_inner());
            }
            if slot.shutdown {
                return;
            }
            seen = slot.generation;
            slot.job.expect("a new generation always carries a job")
        };
        // SAFETY: Team::run_beside keeps the job alive until this worker decrements `pending` below.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*job.0)(index) }));
        let mut slot = shared.lock();
        if let Err(panic) = outcome {
            slot.panic.get_or_insert(panic);
        }
        slot.pending -= 1;
        if slot.pending == 0 {
            slot.finished = Some(Instant::now());
            shared.done.notify_all();
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.start.notify_all();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_member_runs_every_job() {
        let team = Team::new(3, true, false).unwrap();
        let hits = AtomicUsize::new(0);
        for _ in 0..50 {
            team.run(&|i| {
                hits.fetch_add(1 << (8 * i), Ordering::Relaxed);
            });
        }
        assert_eq!(
            hits.load(Ordering::Relaxed),
            50 * (1 + (1 << 8) + (1 << 16))
        );
    }

    #[test]
    fn work_beside_runs_on_the_caller_while_the_members_work() {
        let team = Team::new(2, false, false).unwrap();
        let hits = AtomicUsize::new(0);
        let caller = std::thread::current().id();
        let mut beside_ran_on = None;
        team.run_beside(
            &|_| {
                hits.fetch_add(1, Ordering::Relaxed);
            },
            || beside_ran_on = Some(std::thread::current().id()),
        );
        assert_eq!(hits.load(Ordering::Relaxed), 2);
        assert_eq!(beside_ran_on, Some(caller));
        // A panic beside the job waits for the members, and the team survives it.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            team.run_beside(
                &|_| {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    hits.fetch_add(1, Ordering::Relaxed);
                },
                || panic!("beside fails"),
            );
        }));
        assert!(caught.is_err());
        assert_eq!(hits.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_panicking_job_is_reported_and_the_team_survives() {
        let team = Team::new(2, false, false).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            team.run(&|i| assert!(i != 1, "worker one fails"));
        }));
        assert!(caught.is_err());
        let hits = AtomicUsize::new(0);
        team.run(&|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn zero_threads_is_an_error() {
        assert!(Team::new(0, false, false).is_err());
    }
}
