//! Running a stencil plan on the GPU: `gpu-naive` (one launch per time step) and
//! `gpu-blocked` (one launch per pass of `dim_t` steps), ping-ponging between two device
//! buffers. A pass that writes a non-finite value stores its number in a device flag, which
//! the host reads once per [`PASSES_PER_CHECK`] passes; the failing pass is then replayed one
//! step at a time to find the step, and the newest finite state is kept (a split run's
//! processes replay the run from its input together, see `Passes::trace`).

use cudarc::driver::CudaSlice;

use super::device::Gpu;
use super::stencil::{
    agree_on, blocked_kernel, blocked_shape, copy_shell, flagged, gpu_err, launch_blocked,
    launch_naive, launch_of, locate, naive_kernel, naive_kernel_named, raised_pass, Alone, Batch,
    Launch, Layout, PassHooks, PassKernels, Scratch, PASSES_PER_CHECK,
};
use super::zplanes::{split_pass, InFlight, ZPlanes};
use crate::engine::{Engine, EngineParams};
use crate::{Error, Real, Result, Stencil};

/// Advances the state in `cur` by `steps` steps of `stencil` with the GPU parameters
/// `params` (from a plan's chosen candidate), `hooks` called between passes and batches; on
/// return `cur` holds the newest finite state: on a non-finite value, the state before the
/// failing step (in a split run, once [`PassHooks::held`] says so; after a device error, no
/// step of the run).
///
/// Passes are queued without waiting: a pass that writes a non-finite value stores its number
/// in the flag and the later ones leave both buffers alone, so one read of the flag per
/// [`PASSES_PER_CHECK`] passes finds the pass and its input.
#[allow(clippy::too_many_arguments)]
pub(crate) fn advance<T: Real>(
    gpu: &Gpu,
    stencil: &Stencil,
    params: &EngineParams,
    layout: Layout,
    cur: &mut CudaSlice<T>,
    scratch: &mut Scratch<T>,
    steps: usize,
    hooks: &mut dyn PassHooks<T>,
) -> Result<()> {
    // The second buffer must carry the same fixed boundary layer; the flag starts clear (a run
    // cut short by a launch error may have left it raised).
    let r = stencil.radius();
    copy_shell(
        gpu,
        &naive_kernel_named::<T>(gpu, stencil, "copy_shell")?,
        layout,
        r,
        cur,
        scratch,
    )?;
    gpu.stream
        .memset_zeros(&mut scratch.flag)
        .map_err(gpu_err)?;
    let (kernels, dim_t) = match params.engine {
        Engine::GpuNaive => (PassKernels::Naive(naive_kernel::<T>(gpu, stencil)?), 1),
        Engine::GpuBlocked => {
            let launch = launch_of(params)?;
            let shape = |dim_t| blocked_shape(launch, dim_t);
            // Compiled (or fetched from the cache) once per run.
            let full = blocked_kernel::<T>(gpu, stencil, shape(params.dim_t), layout.len())?;
            let tail = steps % params.dim_t;
            let short = if tail > 0 {
                Some(blocked_kernel::<T>(
                    gpu,
                    stencil,
                    shape(tail),
                    layout.len(),
                )?)
            } else {
                None
            };
            (PassKernels::Blocked { full, short }, params.dim_t)
        }
        other => {
            return Err(Error::PlanMismatch(format!(
                "engine {other} does not run on the GPU"
            )))
        }
    };
    let run = Passes {
        gpu,
        stencil,
        params,
        layout,
        kernels: &kernels,
        dim_t,
        steps,
    };
    let mut done = 0;
    while done < steps {
        let (passes, at, raised) = run.read(done, PASSES_PER_CHECK, cur, scratch, hooks)?;
        if !hooks.alone() {
            // Every process learns whether any pass of the batch failed anywhere; then all
            // trace the failure together.
            done = match hooks.after_batch(flagged(raised.is_some())) {
                Ok(()) => at,
                Err(_) => run.trace(at, cur, scratch, hooks)?,
            };
            continue;
        }
        let Some(failed) = raised else {
            done = at;
            continue;
        };
        let batch = Batch {
            done,
            passes,
            dim_t,
            steps,
        };
        // A run alone goes on from the replayed state.
        done = run.failed(batch, failed, cur, scratch)?;
    }
    Ok(())
}

/// What queues a run's passes: the device, the stencil and parameters, the kernels, and the
/// run's steps in passes of `dim_t`.
struct Passes<'a> {
    gpu: &'a Gpu,
    stencil: &'a Stencil,
    params: &'a EngineParams,
    layout: Layout,
    kernels: &'a PassKernels,
    dim_t: usize,
    steps: usize,
}

impl Passes<'_> {
    /// Queues up to `most` passes from step `done` on (every pass but the run's last `dim_t`
    /// deep), each after the exchange `hooks` makes and followed by a swap of `cur` and
    /// `scratch.next`: the number of passes and the step they reach.
    fn queue<T: Real>(
        &self,
        done: usize,
        most: usize,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<(usize, usize)> {
        let (mut passes, mut at) = (0, done);
        while at < self.steps && passes < most {
            let pass_steps = self.dim_t.min(self.steps - at);
            passes += 1;
            let pass = Pass {
                kernels: self.kernels,
                params: self.params,
                layout: self.layout,
                r: self.stencil.radius(),
                dim_t: self.dim_t,
                steps: pass_steps,
                number: passes as i32,
            };
            pass.queue(self.gpu, cur, scratch, hooks)?;
            std::mem::swap(cur, &mut scratch.next);
            at += pass_steps;
        }
        Ok((passes, at))
    }

    /// [`Passes::queue`], then the flag read: the passes, the step they reach and the pass
    /// that raised the flag. In a split run the processes first agree that every one queued
    /// and read its passes, so that a device error stops all alike.
    fn read<T: Real>(
        &self,
        done: usize,
        most: usize,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<(usize, usize, Option<usize>)> {
        let queued = self.queue(done, most, cur, scratch, hooks);
        let read = queued.and_then(|(passes, at)| {
            raised_pass(self.gpu, scratch).map(|raised| (passes, at, raised))
        });
        agree_on(hooks, read)
    }

    /// A split run's answer to a batch ending at step `limit` that failed on some process:
    /// every process puts the run's input back ([`PassHooks::restart`]) and replays the run a
    /// pass at a time, agreeing after each. At the first pass that fails anywhere, every
    /// process goes back to that pass's input (no exchange has touched it since) and replays
    /// its steps one at a time with gpu-naive, agreeing after each: at the first step that
    /// fails, every block holds the state before it ([`PassHooks::held`]) and the failing
    /// processes name the step. The step reached where nothing fails again (a pass's rounding
    /// differs from its steps'), from which the run goes on, as it does alone.
    fn trace<T: Real>(
        &self,
        limit: usize,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<usize> {
        let restart = hooks.restart(cur);
        // The flag may still be raised by a pass the last read did not see.
        let restart = restart.and_then(|()| raised_pass(self.gpu, scratch).map(drop));
        agree_on(hooks, restart)?;
        let mut done = 0;
        while done < limit {
            let (_, at, raised) = self.read(done, 1, cur, scratch, hooks)?;
            done = match hooks.after_batch(flagged(raised.is_some())) {
                Ok(()) => at,
                Err(_) => {
                    std::mem::swap(cur, &mut scratch.next);
                    self.steps_agreed(done, at - done, cur, scratch, hooks)?
                }
            };
        }
        Ok(done)
    }

    /// After pass `failed` of `batch` raised the flag in a run alone: the error naming the
    /// step that went bad and a cell, `cur` holding the state before it; or, when no single
    /// step of the replayed pass goes bad (the pass's rounding differs from the steps'), the
    /// step the run has reached from the replayed state.
    fn failed<T: Real>(
        &self,
        batch: Batch,
        failed: usize,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
    ) -> Result<usize> {
        let (before, pass_steps) = batch.back_to_input(failed, cur, &mut scratch.next)?;
        if let PassKernels::Naive(_) = self.kernels {
            let r = self.stencil.radius();
            return Err(locate(self.gpu, self.layout, &scratch.next, r, before + 1));
        }
        // Replay the blocked pass a step at a time to find the step that went bad.
        self.steps_agreed(before, pass_steps, cur, scratch, &mut Alone)
    }

    /// Advances `cur`, the input of a pass that failed somewhere, by its `n` steps from step
    /// `before` one at a time with gpu-naive (the pass's halos suffice for them), the
    /// processes agreeing after each: the failure of the first step that fails anywhere, with
    /// `cur` holding its input; else the step reached. A device error stops every process
    /// alike, `cur` holding no step of the run.
    fn steps_agreed<T: Real>(
        &self,
        before: usize,
        n: usize,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<usize> {
        let (gpu, layout, r) = (self.gpu, self.layout, self.stencil.radius());
        let naive = agree_on(hooks, naive_kernel::<T>(gpu, self.stencil))?;
        let whole = ZPlanes::one(r..layout.dims[2] - r);
        for i in 1..=n {
            let stepped = launch_naive(gpu, &naive, layout, &whole, cur, scratch, 1);
            let raised = stepped.and_then(|()| raised_pass(gpu, scratch));
            let outcome = match agree_on(hooks, raised)? {
                Some(_) => Err(locate(gpu, layout, &scratch.next, r, before + i)),
                None => Ok(()),
            };
            if let Err(e) = hooks.after_batch(outcome) {
                hooks.held(before + i - 1);
                return Err(e);
            }
            std::mem::swap(cur, &mut scratch.next);
        }
        Ok(before + n)
    }
}

/// One pass of a run: its kernels, its steps and its number in the batch.
struct Pass<'a> {
    kernels: &'a PassKernels,
    params: &'a EngineParams,
    layout: Layout,
    r: usize,
    dim_t: usize,
    steps: usize,
    number: i32,
}

impl Pass<'_> {
    /// Queues the halo exchange `hooks` makes and the pass's launches from `cur` into
    /// `scratch.next`. A blocked pass computes the planes that need no halo while the z halos
    /// travel, then the bands next to them. gpu-naive exchanges first: with one plane of halo
    /// per step the exchange is short, and splitting each step's launch cost more than it hid
    /// (star7 f32 on two H200s, 512 x 512 x 1024: 638,854 M updates/s exchanging first,
    /// 564,031 beside).
    fn queue<T: Real>(
        &self,
        gpu: &Gpu,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<()> {
        let in_flight = match self.kernels {
            PassKernels::Blocked { .. } => hooks.before_pass_beside(&mut [&mut *cur])?,
            PassKernels::Naive(_) => {
                hooks.before_pass(&mut [&mut *cur])?;
                InFlight::NONE
            }
        };
        let depth = self.r * self.steps;
        let (early, late) = split_pass(self.layout.dims[2], self.r, depth, in_flight);
        self.launch(gpu, &early, cur, scratch)?;
        hooks.halos_arrived()?;
        self.launch(gpu, &late, cur, scratch)
    }

    /// Launches the pass's kernel over the output planes `planes`.
    fn launch<T: Real>(
        &self,
        gpu: &Gpu,
        planes: &ZPlanes,
        cur: &CudaSlice<T>,
        scratch: &mut Scratch<T>,
    ) -> Result<()> {
        let (layout, pass) = (self.layout, self.number);
        match self.kernels {
            PassKernels::Naive(naive) => {
                launch_naive(gpu, naive, layout, planes, cur, scratch, pass)
            }
            PassKernels::Blocked { full, short } => {
                let kernel = if self.steps == self.dim_t {
                    full
                } else {
                    short.as_ref().expect("made with the run's kernels")
                };
                let at = Launch {
                    r: self.r,
                    shape: blocked_shape(launch_of(self.params)?, self.steps),
                    stream_block: self.params.launch.as_ref().map_or(0, |g| g.stream_block),
                    layout,
                };
                launch_blocked(gpu, kernel, &at, planes, cur, scratch, pass)
            }
        }
    }
}
