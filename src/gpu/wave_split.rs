//! A split wavefield's run on its rank's GPU: halos exchanged before each pass, the ranks'
//! outcome agreed once per batch, and a batch that failed on any rank traced back by every
//! rank together, so that every block, the step count and the traces end on the last finite
//! step, as a run in one process does.

use super::device::Gpu;
use super::stencil::{agree_on, flagged, read_flag, Alone, PassHooks, PASSES_PER_CHECK};
use super::wave::{queue_batch, Kernels, Levels, OnDevice};
use crate::wave::Wavefield;
use crate::{Error, Real, Result};

/// The passes of a batch ([`queue_batch`]: their steps, the levels before each and after
/// the last) and whether one raised the non-finite flag.
type Read = (Vec<usize>, Vec<Levels>, bool);

/// Queues up to `most` passes from step `from` of `to` (of the blocked kernels where `blocked`,
/// after the halo exchange `hooks` makes where `exchange`), reads the flag and, where it is
/// clear, records the passes' samples. The ranks then agree that every one did, so that a
/// device error stops all alike.
fn read_batch<T: Real>(
    gpu: &Gpu,
    (kernels, blocked, exchange): (&Kernels, bool, bool),
    field: &mut Wavefield<T>,
    dev: &mut OnDevice<T>,
    [from, to]: [usize; 2],
    most: usize,
    hooks: &mut dyn PassHooks<T>,
) -> Result<Read> {
    let of = (kernels, blocked);
    let queued = match exchange {
        true => queue_batch(gpu, of, field, dev, [from, to], most, hooks),
        false => queue_batch(gpu, of, field, dev, [from, to], most, &mut Alone),
    };
    let read = queued.and_then(|(passes, levels)| {
        let raised = read_flag(gpu, &mut dev.flag)?.is_some();
        if !raised {
            dev.record(gpu, field, passes.iter().sum())?;
        }
        Ok((passes, levels, raised))
    });
    agree_on(hooks, read)
}

/// Takes the last `n` recorded steps back off the field's step count and traces.
fn take_back<T: Real>(field: &mut Wavefield<T>, n: usize) {
    field.step -= n;
    for t in &mut field.traces {
        t.truncate(t.len() - n);
    }
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
        let of = (kernels, true, true);
        let span = [done, steps];
        let (passes, _, raised) = read_batch(gpu, of, field, dev, span, PASSES_PER_CHECK, hooks)?;
        let at = done + passes.iter().sum::<usize>();
        done = match hooks.after_batch(flagged(raised)) {
            Ok(()) => at,
            // The trace puts the field's step and traces back to the start.
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
        let of = (kernels, true, true);
        let (passes, levels, raised) = read_batch(gpu, of, field, dev, [done, limit], 1, hooks)?;
        if hooks.after_batch(flagged(raised)).is_err() {
            if !raised {
                take_back(field, passes[0]);
            }
            dev.at = levels[0];
            steps_agreed(gpu, kernels, field, dev, (done, passes[0]), hooks, traced)?;
        }
        done += passes[0];
    }
    Ok(done)
}

/// Advances the levels, the input of a pass that failed on some rank, by its `n` steps from
/// step `before` of the run one at a time with the naive kernel (the pass's halos suffice for
/// them), the ranks agreeing after each: the failure of the first step that fails anywhere,
/// with the levels holding its input and `traced` set. A device error stops every rank alike,
/// `traced` unset.
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
        let of = (kernels, false, false);
        let (_, levels, raised) = read_batch(gpu, of, field, dev, [0, 1], 1, hooks)?;
        let outcome = match raised {
            true => Err(dev
                .locate(gpu, levels[1], kernels.radius, before + i)
                .map_or_else(|e| e, Error::from)),
            false => Ok(()),
        };
        if let Err(e) = hooks.after_batch(outcome) {
            if !raised {
                take_back(field, 1);
            }
            dev.at = levels[0];
            *traced = true;
            return Err(e);
        }
    }
    Ok(())
}
