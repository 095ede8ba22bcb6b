//! The wave state: a [`Wavefield`] runs a wave plan on the CPU engines, with the solver's
//! scratch buffers for the next time levels, or on the GPU engines.

use std::time::Instant;

use super::concrete::per_precision;
use super::dispatch::{rings_fit, OneCpuEntry, Run, Timing};
use super::{check_shape, check_steps, Input, Solver, State};
use crate::cpu::wave::{self as engines, WaveBeside, WaveScratch};
use crate::gpu::stencil::{Alone, PassHooks};
use crate::memory::Footprint;
use crate::plan::Kernel;
use crate::wave::Wavefield;
use crate::{Error, Real, Result, RunReport};

per_precision!(
    Wavefield,
    advance_wave_f32,
    advance_wave_f64,
    advance_wave,
    Input::Unchecked
);

/// [`State::advance`] for a wavefield, given what `input` says of it.
pub(super) fn advance_wave<T: Real>(
    solver: &mut Solver,
    field: &mut Wavefield<T>,
    steps: usize,
    input: Input,
) -> Result<RunReport> {
    advance_wave_beside(solver, field, steps, input, None)
}

/// [`advance_wave`] with `beside`'s work (a split run's z halo exchange) beside the blocked
/// engine's first pass, or before the run on the other engines.
pub(super) fn advance_wave_beside<'a, T: Real>(
    solver: &mut Solver,
    field: &'a mut Wavefield<T>,
    steps: usize,
    input: Input,
    beside: Option<WaveBeside<'a, T>>,
) -> Result<RunReport> {
    let hooks = None;
    let mut host = HostWave {
        field,
        hooks,
        beside,
    };
    if let Err(e) = check_run(solver, host.field, steps, input) {
        // The neighbouring ranks wait for this rank's part of the exchange.
        host.beside_first();
        return Err(e);
    }
    // Each trace grows by one sample a step: room for the run at once (geometric growth
    // kept, so that runs in parts do not copy the traces at each part).
    for trace in &mut host.field.traces {
        trace.reserve(steps);
    }
    solver.dispatch(&mut host, steps)
}

/// The checks of a run of `steps` steps on `field`, before anything is computed.
fn check_run<T: Real>(
    solver: &mut Solver,
    field: &Wavefield<T>,
    steps: usize,
    input: Input,
) -> Result<()> {
    match solver.plan.kernel() {
        Kernel::Wave(k) if k == field.kernel() => {}
        Kernel::Wave(k) => {
            return Err(Error::PlanMismatch(format!(
                "the plan is for {k}, the wavefield is for {}",
                field.kernel()
            )))
        }
        other => {
            return Err(Error::PlanMismatch(format!(
                "the plan is for {other}, not for a wavefield"
            )))
        }
    }
    check_shape(&solver.plan, T::DTYPE, field.dims())?;
    check_steps(steps)?;
    check_traces(
        field,
        steps,
        solver.memory.or_else(crate::memory::available),
    )?;
    if input.scan() {
        // The scan runs on the plan's threads, not on every core of the machine.
        let pool = solver.workers.pool(solver.plan.threads())?;
        if let Some((cell, value)) = pool.install(|| field.find_non_finite()) {
            return Err(Error::NonFiniteInput { cell, value });
        }
    }
    Ok(())
}

/// Refuses a run whose receivers' traces would outgrow the host's memory (`available`
/// bytes; `None`: unknown): `steps` more samples of 8 bytes for each receiver.
fn check_traces<T: Real>(field: &Wavefield<T>, steps: usize, available: Option<u64>) -> Result<()> {
    let receivers = field.traces.len() as u64;
    let bytes = receivers.saturating_mul(steps as u64).saturating_mul(8);
    match available {
        Some(have) if bytes > crate::memory::usable_host(have) => {
            Err(Error::InvalidArgument(format!(
                "the traces of {receivers} receivers over {steps} steps need {:.1} GB, {:.1} GB \
                 are available: record fewer receivers, or run in parts and take the traces \
                 after each",
                bytes as f64 / 1e9,
                have as f64 / 1e9
            )))
        }
        // Without a figure for the memory, what no allocation can hold is still refused.
        _ if bytes > isize::MAX as u64 => Err(Error::InvalidArgument(format!(
            "the traces of {receivers} receivers over {steps} steps need more memory than one \
             allocation can hold: record fewer receivers, or run in parts"
        ))),
        _ => Ok(()),
    }
}

/// Advances `field`, a split wavefield's local part, by `steps` steps of the solver's GPU
/// engine, kept on the device for the run with `hooks` between passes (its halo exchanges)
/// and batches (the ranks' agreement on the outcome). The input is not scanned: the split run
/// scanned it once.
#[cfg(feature = "mpi")]
pub(super) fn advance_wave_on_device<'a, T: Real>(
    solver: &mut Solver,
    field: &'a mut Wavefield<T>,
    steps: usize,
    hooks: &'a mut dyn PassHooks<T>,
) -> Result<RunReport> {
    if !solver.plan.engine().is_gpu() {
        return Err(Error::PlanMismatch(format!(
            "engine '{}' does not run on the GPU",
            solver.plan.engine()
        )));
    }
    check_shape(&solver.plan, T::DTYPE, field.dims())?;
    check_steps(steps)?;
    let hooks = Some(hooks);
    let beside = None;
    solver.dispatch(
        &mut HostWave {
            field,
            hooks,
            beside,
        },
        steps,
    )
}

/// A wavefield in host memory, what runs between the passes of a GPU run (nothing in one
/// process) and what runs beside the first pass of a CPU run (a split run's z halo exchange).
struct HostWave<'a, T: Real> {
    field: &'a mut Wavefield<T>,
    hooks: Option<&'a mut dyn PassHooks<T>>,
    beside: Option<WaveBeside<'a, T>>,
}

impl<T: Real> HostWave<'_, T> {
    /// Runs the work meant for beside the first pass now, before the run: for the engines
    /// that cannot compute beside it.
    fn beside_first(&mut self) {
        if let Some(mut beside) = self.beside.take() {
            beside.run_first(self.field);
        }
    }
}

impl<T: Real> OneCpuEntry for HostWave<'_, T> {
    /// Runs the plan's CPU engine with the solver's scratch buffers (three grids besides the
    /// field's four), timed from before the scratch is set up.
    fn on_cpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let start = Instant::now();
        let dims = self.field.dims();
        let need = Footprint::wave_cpu_run(T::DTYPE, run.ring_bytes)
            .at_least(self.field.kernel().smallest_side())
            .with_label(run.scratch_label("scratch buffers"));
        let held = Footprint::wavefield(T::DTYPE).bytes(dims).unwrap_or(0);
        let (memory, steps, params, rings) = (run.memory, run.steps, run.params, run.ring_bytes);
        let (field, workers) = (&mut *self.field, &mut *run.workers);
        let mut beside = self.beside.take();
        let ran = run.scratch.with(
            |s: &WaveScratch<T>| s.dims() == dims,
            || {
                need.check_beside(dims, held, memory)?;
                WaveScratch::<T>::new(dims)
            },
            |scratch| {
                rings_fit(&need, dims, rings, memory)?;
                let pool = workers.pool(params.threads)?;
                let beside = beside.take();
                engines::run(field, scratch, params, pool, steps, beside).map_err(Error::from)
            },
        );
        // A run that failed before its engine started still does its part of the exchange,
        // which the neighbouring ranks wait for.
        if let Some(mut beside) = beside {
            beside.run_first(field);
        }
        ran?;
        Ok(Timing::since(start))
    }

    fn on_gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.beside_first();
        let mut alone = Alone;
        let hooks: &mut dyn PassHooks<T> = match self.hooks.as_deref_mut() {
            Some(h) => h,
            None => &mut alone,
        };
        let (compute, transfer) =
            crate::gpu::wave_run::run(self.field, run.params, run.steps, hooks)?;
        Ok(Timing { compute, transfer })
    }
}
