//! Running a wave plan on the GPU: the wavefield uploaded once, advanced in batches of passes
//! (a run alone replays a failed pass a step at a time; a split run's ranks trace a failure
//! together, see `wave_split`), and the newest finite state, the traces up to it and the step
//! count downloaded.

use std::time::Instant;

use super::device::gpu;
use super::device::Gpu;
use super::stencil::{agree_on, gpu_err, read_flag, Alone, PassHooks, PASSES_PER_CHECK};
use super::wave::{queue_batch, Kernels, OnDevice};
use super::wave_split::advance_split;
use crate::engine::EngineParams;
use crate::wave::rigid::settle_rigid_faces;
use crate::wave::Wavefield;
use crate::{Error, Real, Result};

/// Seconds spent computing and transferring.
type Seconds = (f64, f64);

/// Uploads `field`, advances it by `steps` steps with the engine of `params`, and downloads the
/// newest finite state (with the traces and the step count up to it).
pub(crate) fn run<T: Real>(
    field: &mut Wavefield<T>,
    params: &EngineParams,
    steps: usize,
    hooks: &mut dyn PassHooks<T>,
) -> Result<Seconds> {
    // A split field's ranks learn whether every one could start before any exchanges. The
    // transfer is timed after the kernels' one-time compilation.
    let ready = gpu().and_then(|gpu| {
        let kernels = Kernels::new::<T>(gpu, field, params, steps)?;
        let upload = Instant::now();
        let batch = PASSES_PER_CHECK * kernels.dim_t();
        let dev = OnDevice::new(gpu, field, batch.min(steps), kernels.one_step())?;
        gpu.stream.synchronize().map_err(gpu_err)?;
        Ok((gpu, kernels, dev, upload))
    });
    let (gpu, kernels, mut dev, upload) = agree_on(hooks, ready)?;
    let mut transfer = upload.elapsed().as_secs_f64();
    let start = Instant::now();
    let start_at = (field.step, field.traces.first().map_or(0, Vec::len));
    let mut traced = false;
    let outcome = if hooks.alone() {
        advance(gpu, &kernels, true, field, &mut dev, steps, 0)
    } else {
        let run = (&kernels, steps, start_at);
        advance_split(gpu, run, field, &mut dev, hooks, &mut traced)
    };
    // The levels hold the field's step after a run that ended, or that stopped where a step
    // failed and the field's step and traces stop too; after any other failure (a device
    // error, an unfinished batch) the field keeps the state it came with, and its step count
    // and traces are put back to match.
    let held = traced
        || match &outcome {
            Ok(()) => true,
            Err(e) => hooks.alone() && matches!(e, Error::NonFinite { .. }),
        };
    if !held {
        field.step = start_at.0;
        field.traces.iter_mut().for_each(|t| t.truncate(start_at.1));
        return outcome.map(|()| (0.0, 0.0));
    }
    gpu.stream.synchronize().map_err(gpu_err)?;
    let compute = start.elapsed().as_secs_f64();
    let download = Instant::now();
    dev.download(gpu, field)?;
    settle_rigid_faces(field);
    transfer += download.elapsed().as_secs_f64();
    outcome.map(|()| (compute, transfer))
}

/// Advances the device state of a run in one process by `steps` steps, the blocked kernels
/// when `blocked` and the plan has them, else the naive one; `offset` steps of the run came
/// before (for the failure's step). Leaves the levels at the newest finite state, the field's
/// step and traces at it.
fn advance<T: Real>(
    gpu: &Gpu,
    kernels: &Kernels,
    blocked: bool,
    field: &mut Wavefield<T>,
    dev: &mut OnDevice<T>,
    steps: usize,
    offset: usize,
) -> Result<()> {
    let mut done = 0;
    while done < steps {
        let of = (kernels, blocked);
        let batch = [done, steps];
        let (passes, inputs) =
            queue_batch(gpu, of, field, dev, batch, PASSES_PER_CHECK, &mut Alone)?;
        let at = done + passes.iter().sum::<usize>();
        let Some(failed) = read_flag(gpu, &mut dev.flag)? else {
            dev.record(gpu, field, at - done)?;
            done = at;
            continue;
        };
        if !(1..=passes.len()).contains(&failed) {
            return Err(Error::Gpu(format!(
                "the non-finite flag names pass {failed} of {}",
                passes.len()
            )));
        }
        let before: usize = passes[..failed - 1].iter().sum();
        dev.record(gpu, field, before)?;
        done += before;
        dev.at = inputs[failed - 1];
        let n = passes[failed - 1];
        if n == 1 {
            let f = dev.locate(gpu, inputs[failed], kernels.radius, offset + done + 1)?;
            return Err(f.into());
        }
        // Replay the blocked pass a step at a time (no exchange needed within a pass) to name
        // the step; where no step fails (the pass's rounding differs from the steps'), the run
        // goes on from the replayed state.
        advance(gpu, kernels, false, field, dev, n, offset + done)?;
        done += n;
    }
    Ok(())
}
