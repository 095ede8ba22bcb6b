//! Autotuning (AN5D section 6.3): the performance model ranks every blocking configuration;
//! the best five are timed on the device with the plan's own grid size, beside the best three
//! of the shapes the register estimate leaves out (whose compiled kernels may fit), and the
//! fastest that does not spill wins.
//! Winners are remembered per device, kernel, precision and grid size, in the process and in a
//! JSON file in the cache directory, so a later plan for the same problem does not re-time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::candidate::Candidate;
use super::kernel::Kernel;
use crate::gpu::gpu;
use crate::gpu::stencil::{blocked_kernel, blocked_shape, gpu_err, Alone, Layout, Scratch};
use crate::gpu::stencil_run::advance;
use crate::{DType, Grid, Real, Result, Stencil};

/// Configurations timed by a default tuning.
pub(crate) const TIMED: usize = 5;
/// Time steps per run while a configuration's rate is first estimated (whole passes).
const FIRST_STEPS: usize = 24;
/// Seconds each configuration is timed for in each round, at least.
const ROUND_SECONDS: f64 = 0.05;
/// Rounds over all configurations; a configuration's rate is that of its fastest round. The
/// rounds interleave the configurations, so a clock still ramping up or a slow spell of the
/// device does not fall on one of them alone.
const ROUNDS: usize = 3;
/// Seconds of untimed work before the first round: after the parallel compile the device has
/// idled, and its clock takes a while to come back up.
const WARM_SECONDS: f64 = 0.2;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Winner {
    key: String,
    dim_t: usize,
    block: [usize; 2],
    ry: usize,
    #[serde(default)]
    rx: usize,
    #[serde(default)]
    skew: bool,
    stream_block: usize,
    measured_mups: f64,
}

impl Winner {
    fn matches(&self, c: &Candidate) -> bool {
        c.dim_t == self.dim_t
            && c.gpu.as_ref().is_some_and(|l| {
                l.block == self.block
                    && l.ry == self.ry
                    && l.rx == self.rx
                    && l.skew == self.skew
                    && l.stream_block == self.stream_block
            })
    }
}

static REMEMBERED: Mutex<Option<HashMap<String, Winner>>> = Mutex::new(None);

/// Places the best `count.div_ceil(2)` distinct shapes of `beyond` (shapes the register
/// estimate leaves out, best predicted first) after the first `count` distinct shapes of
/// `candidates`; returns how many it placed.
pub(crate) fn insert_beyond(
    candidates: &mut Vec<Candidate>,
    beyond: &[Candidate],
    count: usize,
) -> usize {
    let at = distinct_shapes(candidates)
        .get(count)
        .copied()
        .unwrap_or(candidates.len());
    let extra: Vec<Candidate> = distinct_shapes(beyond)
        .into_iter()
        .take(count.div_ceil(2))
        .map(|i| beyond[i].clone())
        .collect();
    let placed = extra.len();
    candidates.splice(at..at, extra);
    placed
}

/// Reorders `candidates` (best model prediction first, then the `extra` shapes of
/// [`insert_beyond`]) so the fastest of the first `count + extra` distinct shapes measured
/// comes first, filling in `measured_mups` for the timed ones; a shape whose compiled kernel
/// spills is not timed. A default tuning (`count` = [`TIMED`]) reuses a remembered winner;
/// any other count times afresh.
pub(crate) fn tune(
    kernel: &Kernel,
    dtype: DType,
    dims: [usize; 3],
    candidates: &mut [Candidate],
    count: usize,
    extra: usize,
) -> Result<()> {
    let Some(stencil) = kernel.stencil() else {
        return Ok(());
    };
    if candidates.is_empty() {
        return Ok(());
    }
    let gpu = gpu()?;
    // The key names the kernel and timing generation: winners remembered before the shuffle
    // kernel (which lack `rx`), its skewed schedule (`skew`), its staged planes (v4, which
    // changed every shape's speed) or the interleaved timing rounds (v5) were chosen among
    // other speeds, or by a clock still ramping up, or without the shapes beyond the register
    // estimate (v6), and must not stop a tuning from timing afresh.
    let key = format!(
        "v6 | {} | {} | {dtype} | {}x{}x{}",
        gpu.info.name,
        kernel.name(),
        dims[0],
        dims[1],
        dims[2]
    );
    if let Some(w) = remembered(&key).filter(|_| count == TIMED) {
        if let Some(i) = candidates.iter().position(|c| w.matches(c)) {
            candidates[i].measured_mups = Some(w.measured_mups);
            candidates[..=i].rotate_right(1);
            return Ok(());
        }
    }
    let order = distinct_shapes(candidates);
    for (slot, &i) in order.iter().enumerate() {
        candidates.swap(slot, i);
    }
    let n = order.len().min(count.saturating_add(extra));
    // Timing does not depend on the coefficients: use the normalised stencil of the same shape
    // so random data stays bounded.
    let timing_stencil = Stencil::from_name(&stencil.kind_name())?;
    match dtype {
        DType::F32 => time_all::<f32>(&timing_stencil, dims, &mut candidates[..n])?,
        DType::F64 => time_all::<f64>(&timing_stencil, dims, &mut candidates[..n])?,
    }
    candidates[..n].sort_by(|a, b| {
        b.measured_mups
            .unwrap_or(0.0)
            .total_cmp(&a.measured_mups.unwrap_or(0.0))
    });
    let best = &candidates[0];
    let launch = best
        .gpu
        .as_ref()
        .expect("blocked GPU candidates carry launch parameters");
    remember(Winner {
        key,
        dim_t: best.dim_t,
        block: launch.block,
        ry: launch.ry,
        rx: launch.rx,
        skew: launch.skew,
        stream_block: launch.stream_block,
        measured_mups: best.measured_mups.unwrap_or(0.0),
    });
    Ok(())
}

/// Indices, in `candidates`' order, of the first candidate of each distinct shape (dim_t, threads
/// per block, cells per thread in y and x, level schedule): the model ranks stream-block lengths
/// of one shape next to each other, so tuning times only the best of each and the timed set
/// spans the space.
pub(crate) fn distinct_shapes(candidates: &[Candidate]) -> Vec<usize> {
    let mut seen = Vec::new();
    let mut order = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let l = c
            .gpu
            .as_ref()
            .expect("blocked GPU candidates carry launch parameters");
        let shape = (c.dim_t, l.block, l.ry, l.rx, l.skew);
        if !seen.contains(&shape) {
            seen.push(shape);
            order.push(i);
        }
    }
    order
}

fn time_all<T: Real>(
    stencil: &Stencil,
    dims: [usize; 3],
    candidates: &mut [Candidate],
) -> Result<()> {
    let gpu = gpu()?;
    let host = Grid::<T>::random(dims, 0.0, 1.0, 0x5eed)?;
    let layout = Layout {
        dims,
        pitch: host.pitch(),
        plane: host.plane_stride(),
    };
    let mut scratch = Scratch::<T>::new(gpu, layout, false)?;
    let mut cur = gpu.stream.clone_htod(host.storage()).map_err(gpu_err)?;
    let interior: f64 = dims
        .iter()
        .map(|&n| (n - 2 * stencil.radius()) as f64)
        .product();
    // Compile every configuration first, in parallel (NVRTC dominates a tuning's time). A
    // kernel that spills to local memory runs several times slower; it is not timed unless
    // every one spills.
    let mut timed = std::thread::scope(|scope| {
        let compiles: Vec<_> = candidates
            .iter()
            .map(|c| {
                scope.spawn(move || {
                    let Some(launch) = c.launch_shape() else {
                        return Ok(true);
                    };
                    let shape = blocked_shape(&launch, c.dim_t);
                    let (kernel, _) = blocked_kernel::<T>(gpu, stencil, shape, layout.len())?;
                    Ok(kernel.spill_bytes == 0)
                })
            })
            .collect();
        compiles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect::<Result<Vec<bool>>>()
    })?;
    if !timed.contains(&true) {
        timed.fill(true);
    }
    let mut run = |c: &Candidate, steps: usize| {
        advance(
            gpu,
            stencil,
            &c.gpu_params(),
            layout,
            &mut cur,
            &mut scratch,
            steps,
            &mut Alone,
        )
    };
    // Steps per run of each configuration: short runs in the warm-up and the first round (a
    // run's set-up and final wait are then a visible share, up to a few per cent), then one run
    // of about ROUND_SECONDS at the first round's rate, as a solver's run would be.
    let mut chunks: Vec<usize> = candidates
        .iter()
        .map(|c| FIRST_STEPS.div_ceil(c.dim_t) * c.dim_t)
        .collect();
    // One pass each (the first launch of a module costs extra), then warm the device up.
    for (c, _) in candidates.iter().zip(&timed).filter(|t| *t.1) {
        run(c, c.dim_t)?;
    }
    let first = timed.iter().position(|&t| t).unwrap_or(0);
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < WARM_SECONDS {
        run(&candidates[first], chunks[first])?;
    }
    let mut best = vec![0.0f64; candidates.len()];
    for _ in 0..ROUNDS {
        for (i, c) in candidates.iter().enumerate() {
            if !timed[i] {
                continue;
            }
            let (mut steps, start) = (0, Instant::now());
            while steps == 0 || start.elapsed().as_secs_f64() < ROUND_SECONDS {
                run(c, chunks[i])?;
                steps += chunks[i];
            }
            let rate = steps as f64 / start.elapsed().as_secs_f64();
            best[i] = best[i].max(rate);
            let passes = (rate * ROUND_SECONDS / c.dim_t as f64).ceil() as usize;
            chunks[i] = passes.max(1) * c.dim_t;
        }
    }
    for ((c, steps_per_second), timed) in candidates.iter_mut().zip(best).zip(timed) {
        c.measured_mups = timed.then_some(interior * steps_per_second / 1e6);
    }
    Ok(())
}

fn cache_file() -> Option<std::path::PathBuf> {
    super::bandwidth::cache_dir().map(|d| d.join("gpu-tune.json"))
}

fn remembered(key: &str) -> Option<Winner> {
    let mut guard = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(|| {
        let entries: Vec<Winner> = cache_file()
            .and_then(|f| super::bandwidth::stored_list(&f))
            .unwrap_or_default();
        entries.into_iter().map(|w| (w.key.clone(), w)).collect()
    });
    map.get(key).cloned()
}

/// Best effort: an unwritable cache directory only means the next process tunes again.
fn remember(winner: Winner) {
    let mut guard = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    map.insert(winner.key.clone(), winner);
    let Some(file) = cache_file() else { return };
    // A file that is not this cache (unreadable, or not a list of winners) is left alone.
    // Winners other processes stored since this one read the file are kept beside its own.
    let Some(stored) = super::bandwidth::stored_list::<Winner>(&file) else {
        return;
    };
    let mut merged: HashMap<String, Winner> =
        stored.into_iter().map(|w| (w.key.clone(), w)).collect();
    merged.extend(map.iter().map(|(k, w)| (k.clone(), w.clone())));
    let entries: Vec<&Winner> = merged.values().collect();
    super::bandwidth::store_list(&file, &entries);
}
