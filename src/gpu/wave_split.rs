//! A split wavefield's run on its rank's GPU: halos exchanged before each pass, the ranks'
//! outcome agreed once per batch, and a batch that failed on any rank traced back by every
//! rank together, so that every block, the step count and the traces end on the last finite
//! step, as a run in one process does.

use super::device::Gpu;
use super::stencil::{agree_on, read_flag, Alone, PassHooks, PASSES_PER_CHECK};
use super::wave::{queue_batch, Kernels, OnDevice};
use crate::wave::Wavefield;
use crate::{Error, Real, Result};

/// The error a rank reports for a batch whose pass `pass` raised its non-finite flag, before
/// the ranks trace the step together.
fn flagged(pass: usize) -> Result<()> {
    Err(Error::Gpu(format!("pass {pass} wrote a non-finite value")))
}

/// Advances a split field's device state by the run's steps (`run`: the kernels, the steps,
/// and the field's step and trace length at the start), `hooks` exchanging halos before each
/// pass and agreeing on each batch's outcome with the other ranks. A batch that fails on any
/// rank is traced by every rank together ([`trace`]); `traced` says whether the levels, the
/// field's step and its traces then stopped at the newest finite state.
pub(super) fn advance_split<T: Real>(
    gpu: &Gpu,
    run: (&Kernels, usize, (usize, usize)),
    field: &mut Wavefield<T>,
    dev: &mut OnDevice<T>,
    hooks: &mut dyn PassHooks<T>,
    traced: &mut bool,
) -> Result<()> {
    let (kernels, steps, _) = run;
    let mut done = 0;
    while done < steps {
        let of = (kernels, true);
        let batch = queue_batch(gpu, of, field, dev, [done, steps], PASSES_PER_CHECK, hooks)?;
        let at = done + batch.0.iter().sum::<usize>();
        let raised = read_flag(gpu, &mut dev.flag)?;
        done = match hooks.after_batch(raised.map_or(Ok(()), flagged)) {
            Ok(()) => {
                dev.record(gpu, field, at - done)?;
                at
            }
            Err(_) => trace(gpu, (run, at), field, dev, hooks, traced)?,
        };
    }
    Ok(())
}

/// A split run's answer to a batch ending at step `limit` that failed on some rank: every rank
/// puts the run's input back (the host arrays change only at the download; the field's step
/// and traces go back to the start) and replays the run a pass at a time, agreeing after each.
/// At the first pass that fails anywhere, every rank goes back to that pass's input (no
/// exchange has touched it since) and replays its steps one at a time ([`steps_agreed`]).
/// The step reached where nothing fails again (a pass's rounding differs from its steps'),
/// from which the run goes on, as it does alone.
fn trace<T: Real>(
    gpu: &Gpu,
    ((kernels, _, start), limit): ((&Kernels, usize, (usize, usize)), usize),
    field: &mut Wavefield<T>,
    dev: &mut OnDevice<T>,
    hooks: &mut dyn PassHooks<T>,
    traced: &mut bool,
) -> Result<usize> {
    field.step = start.0;
    field.traces.iter_mut().for_each(|t| t.truncate(start.1));
    let restart = dev.reload(gpu, field);
    // The flag may still be raised by a pass the last read did not see.
    let restart = restart.and_then(|()| read_flag(gpu, &mut dev.flag).map(drop));
    agree_on(hooks, restart)?;
    let mut done = 0;
    while done < limit {
        let of = (kernels, true);
        let (passes, inputs) = queue_batch(gpu, of, field, dev, [done, limit], 1, hooks)?;
        let raised = read_flag(gpu, &mut dev.flag)?;
        match hooks.after_batch(raised.map_or(Ok(()), flagged)) {
            Ok(()) => dev.record(gpu, field, passes[0])?,
            Err(_) => {
                dev.at = inputs[0];
                steps_agreed(gpu, kernels, field, dev, (done, passes[0]), hooks, traced)?;
            }
        }
        done += passes[0];
    }
    Ok(done)
}

/// Advances the levels, the input of a pass that failed on some rank, by its `n` steps from
/// step `before` of the run one at a time with the naive kernel (the pass's halos suffice for
/// them), the ranks agreeing after each: the failure of the first step that fails anywhere,
/// with the levels holding its input and `traced` set.
fn steps_agreed<T: Real>(
    gpu: &Gpu,
    kernels: &Kernels,
    field: &mut Wavefield<T>,
    dev: &mut OnDevice<T>,
    (before, n): (usize, usize),
    hooks: &mut dyn PassHooks<T>,
    traced: &mut bool,
) -> Result<()> {
    for i in 1..=n {
        let of = (kernels, false);
        let (_, levels) = queue_batch(gpu, of, field, dev, [0, 1], 1, &mut Alone)?;
        let outcome = match read_flag(gpu, &mut dev.flag)? {
            Some(_) => Err(dev
                .locate(gpu, levels[1], kernels.radius, before + i)
                .map_or_else(|e| e, Error::from)),
            None => Ok(()),
        };
        if let Err(e) = hooks.after_batch(outcome) {
            dev.at = levels[0];
            *traced = true;
            return Err(e);
        }
        dev.record(gpu, field, 1)?;
    }
    Ok(())
}
