//! A rank's block of a split lattice on its GPU (`gpu-naive`, two copies, populations in the
//! lattice's precision or as 16-bit codes): uploaded once per run, each step's halo exchange
//! queued on the device by the hooks (its z faces beside the planes that read no halo, where
//! the halo is one node deep), the non-finite flag read and the ranks' outcome agreed once per
//! [`CHECK_EVERY`] steps, downloaded at the end. A batch that fails on any rank is traced by
//! every rank together: each replays the run from its host state (still the run's input) one
//! step at a time, agreeing after each, so the lattices end on the last finite state and the
//! error names the step, as in one process.

use std::time::Instant;

use cudarc::driver::CudaSlice;

use super::device::Gpu;
use super::lbm::{download, open_run, upload, Geometry, LbmBuffers, Pops, Run, CHECK_EVERY};
use super::stencil::{agree_on, PassHooks};
use super::zplanes::{split_pass, InFlight};
use crate::lbm::{Lattice, Populations};
use crate::{Error, Real, Result};

/// How a split run reaches the device array its halo exchanges move, of elements `E`: the
/// populations in the lattice's precision, or their 16-bit codes.
pub(crate) type Stored<T, E> = fn(&mut Pops<T>) -> Option<&mut CudaSlice<E>>;

/// The populations of a copy in the lattice's own precision.
pub(crate) fn native<T>(pops: &mut Pops<T>) -> Option<&mut CudaSlice<T>> {
    match pops {
        Pops::Native(s) => Some(s),
        Pops::Packed(_) => None,
    }
}

/// The 16-bit codes of a copy in 16-bit storage.
pub(crate) fn codes<T>(pops: &mut Pops<T>) -> Option<&mut CudaSlice<u16>> {
    match pops {
        Pops::Packed(s) => Some(s),
        Pops::Native(_) => None,
    }
}

/// Advances `lat`, a rank's local lattice, by `steps` steps on the GPU, `hooks` exchanging
/// halos into the current copy (reached through `stored`) before every `every`th step and
/// agreeing on each batch's outcome; returns the seconds of computation and of transfers. On
/// a blow-up (here or on another rank) the lattice holds the last finite state and its step
/// count says which.
pub(crate) fn run_split<T: Real, E>(
    gpu: &Gpu,
    lat: &mut Lattice<T>,
    bufs: &mut LbmBuffers<T>,
    (steps, every): (usize, usize),
    stored: Stored<T, E>,
    hooks: &mut dyn PassHooks<E>,
) -> Result<(f64, f64)> {
    if bufs.in_place() {
        return Err(Error::PlanMismatch(
            "a split lattice runs on the GPU with two copies of its populations".into(),
        ));
    }
    lat.prepare();
    let start = Instant::now();
    // Every rank learns whether every other could start before any exchanges.
    let run = agree_on(hooks, open_run(gpu, lat, bufs))?;
    let mut transfer = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut done = 0;
    while done < steps {
        let count = CHECK_EVERY.min(steps - done);
        let batch = (done..done + count)
            .try_for_each(|s| step(&run, bufs, s, (every, stored), hooks))
            .and_then(|()| run.flag_raised(bufs));
        let outcome = match batch {
            Ok(false) => Ok(()),
            // Traced below, on every rank alike.
            Ok(true) => Err(Error::Gpu("a non-finite population".into())),
            Err(e) => Err(e),
        };
        if let Err(first) = hooks.after_batch(outcome) {
            let (limit, pass) = (done + count, (every, stored));
            return Err(trace(gpu, &run, lat, bufs, (limit, first), pass, hooks));
        }
        done += count;
    }
    let compute = start.elapsed().as_secs_f64();
    let start = Instant::now();
    finish(gpu, lat, bufs, steps)?;
    transfer += start.elapsed().as_secs_f64();
    Ok((compute, transfer))
}

/// Queues step `s` after the halo exchange when it is due (every `every` steps, of the array
/// `stored` gives). Where the halo is one node deep (an exchange every step), the step computes
/// the planes that read no halo while the z faces travel, then the two planes next to them;
/// the halo planes' own nodes are not computed, since the next exchange refills what is read
/// of them. Deeper halos are exchanged first, the whole local lattice computed.
fn step<T: Real, E>(
    run: &Run<'_, T>,
    bufs: &mut LbmBuffers<T>,
    s: usize,
    (every, stored): (usize, Stored<T, E>),
    hooks: &mut dyn PassHooks<E>,
) -> Result<()> {
    let mut in_flight = InFlight::NONE;
    if s.is_multiple_of(every.max(1)) {
        let array = stored(bufs.current()).ok_or_else(|| {
            Error::PlanMismatch(
                "the lattice's device copy is not in the storage its halos are".into(),
            )
        })?;
        if every <= 1 {
            in_flight = hooks.before_pass_beside(&mut [array])?;
        } else {
            hooks.before_pass(&mut [array])?;
        }
    }
    let (early, late) = split_pass(run.whole().a.end, 0, 1, in_flight);
    run.launch_step(bufs, &early)?;
    hooks.halos_arrived()?;
    run.launch_step(bufs, &late)?;
    bufs.swap_copies();
    Ok(())
}

/// Replays the run on every rank from its input, agreeing after each step, up to `limit`
/// steps, after the batch that ended there failed with `first`: the error of the first step
/// that fails on any rank, with the lattice (downloaded) holding the state before it. When no
/// step fails again, `first` (said so), and the lattice is left as it was.
fn trace<T: Real, E>(
    gpu: &Gpu,
    run: &Run<'_, T>,
    lat: &mut Lattice<T>,
    bufs: &mut LbmBuffers<T>,
    (limit, first): (usize, Error),
    pass: (usize, Stored<T, E>),
    hooks: &mut dyn PassHooks<E>,
) -> Error {
    let restart = upload(gpu, lat, bufs).and_then(|()| run.flag_raised(bufs).map(|_| ()));
    if let Err(e) = agree_on(hooks, restart) {
        return e;
    }
    for s in 0..limit {
        let stepped = step(run, bufs, s, pass, hooks).and_then(|()| run.flag_raised(bufs));
        let outcome = match stepped {
            Ok(false) => Ok(()),
            Ok(true) => Err(blown_up(gpu, lat, bufs, s + 1)),
            Err(e) => Err(e),
        };
        if let Err(e) = hooks.after_batch(outcome) {
            // Back to the input of this step: the other copy after a two-copy step.
            bufs.swap_copies();
            // The error is the run's; a failed download leaves the input in place.
            let _ = finish(gpu, lat, bufs, s);
            return e;
        }
    }
    Error::Gpu(format!(
        "{first} (no step failed again when every rank replayed the run's first {limit} steps)"
    ))
}

/// Downloads the current populations into `lat`, `done` steps further on.
fn finish<T: Real>(
    gpu: &Gpu,
    lat: &mut Lattice<T>,
    bufs: &LbmBuffers<T>,
    done: usize,
) -> Result<()> {
    let geo = Geometry::of(lat);
    let mut out = Populations::new(lat.dims())?;
    let codes = download(gpu, &geo, bufs, done, &mut out)?;
    lat.pop = out;
    lat.codes = codes;
    lat.count_steps(done as u64);
    Ok(())
}

/// The error for step `step` of the run, whose output in the current copy holds a non-finite
/// value: the step and a cell that holds one.
fn blown_up<T: Real>(gpu: &Gpu, lat: &Lattice<T>, bufs: &LbmBuffers<T>, step: usize) -> Error {
    let found = (|| {
        let mut out = Populations::new(lat.dims())?;
        download(gpu, &Geometry::of(lat), bufs, step, &mut out)?;
        Ok::<_, Error>(out.find_non_finite())
    })();
    match found {
        Ok(Some((cell, _, value))) => Error::NonFinite { step, cell, value },
        Ok(None) => Error::NonFinite {
            step,
            cell: [0; 3],
            value: f64::NAN,
        },
        Err(e) => e,
    }
}
