//! Running the 2D kernels on the GPU (`kernels/plane.cu`): `gpu-naive` (a thread per pixel, a
//! launch per step) and `gpu-blocked` (convolutions: the systolic warp-shuffle kernel; iterated
//! stencils: `dim_t` steps per launch with registers as the cache). The one-plane host grid is
//! uploaded, advanced between two device buffers laid out like it, and downloaded. As in 3D
//! (`stencil.rs`), a pass that writes a non-finite value stores its number in a device flag read
//! once per [`PASSES_PER_CHECK`] passes; the failing pass is replayed a step at a time to find the
//! step, and the newest finite state is what the grid gets back.

use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::compile::Kernel;
use super::device::{gpu, Gpu};
use super::plane_source::{geometry, plane_source, Geometry, PlaneSpec, Variant};
use super::stencil::{gpu_err, raised_pass, Batch, Layout, Scratch, PASSES_PER_CHECK};
use crate::engine::{Engine, EngineParams, Failure};
use crate::plane::{Filter2, Stencil2};
use crate::{Error, Grid, Real, Result};

/// Seconds of computation and of host-device transfers of a GPU run.
pub(crate) type Seconds = (f64, f64);

/// Uploads the one-plane `grid`, advances it by `steps` steps of `stencil` with the engine
/// `params.engine` names, and downloads the newest finite state.
pub(crate) fn run_stencil<T: Real>(
    stencil: &Stencil2,
    params: &EngineParams,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<Seconds> {
    run(&PlaneSpec::stencil(stencil), params, grid, steps)
}

/// Uploads `grid`, applies `filter` `steps` times, and downloads the result (on a non-finite
/// value, the last finite one).
pub(crate) fn run_filter<T: Real>(
    filter: &Filter2,
    params: &EngineParams,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<Seconds> {
    run(&PlaneSpec::filter(filter), params, grid, steps)
}

/// Compiles the run's kernels (outside the timings), uploads, advances, downloads.
fn run<T: Real>(
    spec: &PlaneSpec,
    params: &EngineParams,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<Seconds> {
    let gpu = gpu()?;
    let layout = Layout {
        dims: grid.dims(),
        pitch: grid.pitch(),
        plane: grid.plane_stride(),
    };
    if layout.dims[2] != 1 {
        return Err(Error::PlanMismatch(format!(
            "a 2D kernel runs on one plane, not {:?}",
            layout.dims
        )));
    }
    // The kernels index columns and rows with 32-bit integers (rows times the 64-bit pitch),
    // and add a filter's width or a warp's span to a column: half the range keeps those sums
    // from overflowing.
    let most = i32::MAX as usize / 2;
    if layout.dims[..2].iter().any(|&n| n > most) {
        let [nx, ny, _] = layout.dims;
        return Err(Error::InvalidPlan(format!(
            "a {nx} x {ny} image has a side longer than the GPU engines index ({most}): use a \
             CPU engine or cut it into pieces"
        )));
    }
    let passes = Passes::new::<T>(gpu, spec, params, layout, steps)?;
    let mut scratch = Scratch::<T>::new(gpu, layout, false)?;
    let upload = Instant::now();
    let mut cur = gpu.stream.clone_htod(grid.storage()).map_err(gpu_err)?;
    gpu.stream.synchronize().map_err(gpu_err)?;
    let mut transfer = upload.elapsed().as_secs_f64();
    let start = Instant::now();
    let outcome = passes.advance(gpu, layout, &mut cur, &mut scratch, steps);
    gpu.stream.synchronize().map_err(gpu_err)?;
    let compute = start.elapsed().as_secs_f64();
    let download = Instant::now();
    gpu.stream
        .memcpy_dtoh(&cur, grid.storage_mut())
        .map_err(gpu_err)?;
    gpu.stream.synchronize().map_err(gpu_err)?;
    transfer += download.elapsed().as_secs_f64();
    outcome.map(|()| (compute, transfer))
}

/// A compiled kernel with its launch geometry.
type Launchable = (Kernel, Geometry);

/// The kernels one run launches.
struct Passes {
    /// Fixed boundary width (0 for a convolution).
    radius: usize,
    /// Steps per pass.
    dim_t: usize,
    /// The pass kernel (`dim_t` steps).
    full: Launchable,
    /// The last pass's kernel when `dim_t` does not divide the run.
    short: Option<Launchable>,
    /// The one-step kernel that replays a failed blocked pass.
    replay: Launchable,
    /// False for a stencil on a grid without interior: nothing to update.
    any: bool,
}

impl Passes {
    /// Compiles (or fetches from the process's cache) every kernel a run of `steps` steps with
    /// `params` launches.
    fn new<T: Real>(
        gpu: &Gpu,
        spec: &PlaneSpec,
        params: &EngineParams,
        layout: Layout,
        steps: usize,
    ) -> Result<Self> {
        let dims = [layout.dims[0], layout.dims[1]];
        let radius = spec.radius();
        let stencil = matches!(spec.edges, super::plane_source::Edges::Fixed { .. });
        let (variant, sb) = variant_of(params, stencil)?;
        let dim_t = match variant {
            Variant::Blocked { dim_t, .. } => dim_t,
            _ => 1,
        };
        let make = |variant: Variant| -> Result<Launchable> {
            let geometry = geometry(spec, variant, dims, sb)?;
            let kernel = gpu.kernel(&plane_source::<T>(spec, variant), variant.kernel_name(), 0)?;
            Ok((kernel, geometry))
        };
        let tail = steps % dim_t;
        let short = match variant {
            Variant::Blocked { rx, by, skew, .. } if tail > 0 => Some(make(Variant::Blocked {
                dim_t: tail,
                rx,
                by,
                skew,
            })?),
            _ => None,
        };
        Ok(Passes {
            radius,
            dim_t,
            full: make(variant)?,
            short,
            replay: make(Variant::Naive)?,
            any: dims.iter().all(|&n| n > 2 * radius),
        })
    }

    /// Advances `cur` by `steps` steps; on return `cur` holds the newest finite state (on
    /// error, the state before the failing step). Passes are queued without waiting; the flag
    /// is read once per [`PASSES_PER_CHECK`] of them.
    fn advance<T: Real>(
        &self,
        gpu: &Gpu,
        layout: Layout,
        cur: &mut CudaSlice<T>,
        scratch: &mut Scratch<T>,
        steps: usize,
    ) -> Result<()> {
        // The second buffer carries the same fixed boundary; the flag starts clear.
        gpu.stream
            .memcpy_dtod(cur, &mut scratch.next)
            .map_err(gpu_err)?;
        gpu.stream
            .memset_zeros(&mut scratch.flag)
            .map_err(gpu_err)?;
        if !self.any {
            return Ok(());
        }
        let mut done = 0;
        while done < steps {
            let (mut passes, mut at) = (0, done);
            while at < steps && passes < PASSES_PER_CHECK {
                let pass_steps = self.dim_t.min(steps - at);
                passes += 1;
                let kernel = match &self.short {
                    Some(short) if pass_steps < self.dim_t => short,
                    _ => &self.full,
                };
                launch(gpu, kernel, layout, cur, scratch, passes as i32)?;
                std::mem::swap(cur, &mut scratch.next);
                at += pass_steps;
            }
            let Some(failed) = raised_pass(gpu, scratch)? else {
                done = at;
                continue;
            };
            let batch = Batch {
                done,
                passes,
                dim_t: self.dim_t,
                steps,
            };
            let (before, pass_steps) = batch.back_to_input(failed, cur, &mut scratch.next)?;
            if pass_steps == 1 {
                return Err(locate(gpu, layout, &scratch.next, self.radius, before + 1));
            }
            // Replay the blocked pass a step at a time to find the step that went bad.
            for i in 1..=pass_steps {
                launch(gpu, &self.replay, layout, cur, scratch, 1)?;
                if raised_pass(gpu, scratch)?.is_some() {
                    return Err(locate(gpu, layout, &scratch.next, self.radius, before + i));
                }
                std::mem::swap(cur, &mut scratch.next);
            }
            // No single step went bad (the pass's rounding differs from the steps'): go on from
            // the replayed state.
            done = before + pass_steps;
        }
        Ok(())
    }
}

/// The kernel variant of a GPU engine's parameters and the rows per warp of the blocked kernels.
fn variant_of(params: &EngineParams, stencil: bool) -> Result<(Variant, usize)> {
    match params.engine {
        Engine::GpuNaive => Ok((Variant::Naive, 1)),
        Engine::GpuBlocked => {
            let launch = params.launch.as_ref().ok_or_else(|| {
                Error::InvalidPlan("a gpu-blocked plan needs a launch shape".to_string())
            })?;
            let by = launch.block[1];
            if launch.rx == 0 || by == 0 || 32 * by > 1024 || launch.ry == 0 {
                return Err(Error::InvalidPlan(format!(
                    "the 2D gpu-blocked kernels take warps of 32 lanes, 1..=32 warps per block and \
                     at least one column and row per lane, not {launch:?}"
                )));
            }
            let variant = if stencil {
                if params.dim_t == 0 {
                    return Err(Error::InvalidPlan("dim_t must be at least 1".into()));
                }
                Variant::Blocked {
                    dim_t: params.dim_t,
                    rx: launch.rx,
                    by,
                    skew: launch.skew,
                }
            } else {
                Variant::Systolic {
                    rx: launch.rx,
                    ry: launch.ry,
                    by,
                }
            };
            Ok((variant, launch.stream_block.max(1)))
        }
        other => Err(Error::PlanMismatch(format!(
            "engine {other} does not run on the GPU"
        ))),
    }
}

/// Launches `kernel` on `src` into the scratch's buffer as pass `pass`.
fn launch<T: Real>(
    gpu: &Gpu,
    (kernel, geometry): &Launchable,
    layout: Layout,
    src: &CudaSlice<T>,
    scratch: &mut Scratch<T>,
    pass: i32,
) -> Result<()> {
    let cfg = LaunchConfig {
        grid_dim: (geometry.grid[0], geometry.grid[1], 1),
        block_dim: (geometry.block[0], geometry.block[1], 1),
        shared_mem_bytes: 0,
    };
    let [nx, ny, _] = layout.dims;
    let (nx, ny, pitch) = (nx as i32, ny as i32, layout.pitch as i64);
    let mut args = gpu.stream.launch_builder(&kernel.function);
    args.arg(src)
        .arg(&mut scratch.next)
        .arg(&nx)
        .arg(&ny)
        .arg(&pitch);
    for a in &geometry.args {
        args.arg(a);
    }
    args.arg(&pass).arg(&mut scratch.flag);
    // SAFETY: the arguments match the kernel's parameter list in type and order (source, output,
    // nx, ny, pitch, the geometry's integers, pass, flag: `Geometry::args` documents them per
    // kernel); both buffers hold `layout.len()` elements and every kernel reads and writes only
    // cells inside `dims` with rows `pitch` apart.
    unsafe { args.launch(cfg) }.map_err(gpu_err)?;
    Ok(())
}

/// The error for a step whose output `bad` holds a non-finite value more than `r` cells from the
/// edges.
fn locate<T: Real>(gpu: &Gpu, layout: Layout, bad: &CudaSlice<T>, r: usize, step: usize) -> Error {
    let mut host = match Grid::<T>::unchecked(layout.dims) {
        Ok(g) => g,
        Err(e) => return e,
    };
    if let Err(e) = gpu
        .stream
        .memcpy_dtoh(bad, host.storage_mut())
        .and_then(|_| gpu.stream.synchronize())
    {
        return gpu_err(e);
    }
    Failure::locate_plane(&host, r, step).map_or(
        Error::NonFinite {
            step,
            cell: [r, r, 0],
            value: f64::NAN,
        },
        Error::from,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::LaunchShape;

    /// Engine parameters for a GPU engine with launch shape `launch`.
    fn params(engine: Engine, dim_t: usize, launch: Option<LaunchShape>) -> EngineParams {
        EngineParams {
            engine,
            isa: crate::Level::Base,
            threads: 1,
            pin: false,
            dim_t,
            tile: [0, 0],
            tile_threads: 1,
            z_chunks: 1,
            llc_bytes: 0,
            in_place: false,
            in_place_fixed: false,
            launch,
            replay: true,
        }
    }

    /// Seconds per step of `spec` with `params` on the device-resident `cur` (the best of three
    /// runs of `steps` steps after a warm-up step), and the pass kernel's registers and spills.
    fn time_shape(
        gpu: &Gpu,
        spec: &PlaneSpec,
        params: &EngineParams,
        layout: Layout,
        cur: &mut CudaSlice<f32>,
        steps: usize,
    ) -> Result<(f64, usize, usize)> {
        let passes = Passes::new::<f32>(gpu, spec, params, layout, steps)?;
        let mut scratch = Scratch::<f32>::new(gpu, layout, true)?;
        passes.advance(gpu, layout, cur, &mut scratch, passes.dim_t)?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            gpu.stream.synchronize().map_err(gpu_err)?;
            let start = Instant::now();
            passes.advance(gpu, layout, cur, &mut scratch, steps)?;
            gpu.stream.synchronize().map_err(gpu_err)?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        Ok((
            best / steps as f64,
            passes.full.0.registers,
            passes.full.0.spill_bytes,
        ))
    }

    /// Rates of launch shapes besides the planner's, as JSON lines, for choosing
    /// `plan::plane_model`'s shapes: convolutions 3x3 to 11x11 on 8192² and star2d:1 on 16384²,
    /// f32. Not run by default: `--ignored plane_shape_sweep`.
    #[test]
    #[ignore]
    fn plane_shape_sweep() {
        let Some(_) = crate::gpu::test_gate::gpu_for_test() else {
            return;
        };
        let gpu = gpu().unwrap();
        let shape = |rx, ry, by, sb, skew| LaunchShape {
            block: [32, by],
            ry,
            rx,
            skew,
            stream_block: sb,
        };
        let upload = |dims: [usize; 2]| {
            let grid = Grid::<f32>::random([dims[0], dims[1], 1], 0.0, 1.0, 7).unwrap();
            let layout = Layout {
                dims: grid.dims(),
                pitch: grid.pitch(),
                plane: grid.plane_stride(),
            };
            (layout, gpu.stream.clone_htod(grid.storage()).unwrap())
        };
        let (layout, mut cur) = upload([8192, 8192]);
        for k in [3, 5, 7, 11] {
            let spec = PlaneSpec::filter(&Filter2::from_name(&format!("dense:{k}")).unwrap());
            let mut runs = vec![("naive", params(Engine::GpuNaive, 1, None))];
            for (rx, ry, by, sb) in [
                (4, 4, 8, 32),
                (4, 4, 4, 64),
                (4, 8, 8, 32),
                (2, 4, 8, 32),
                (4, 2, 8, 32),
                (4, 4, 8, 16),
            ] {
                let launch = shape(rx, ry, by, sb, false);
                runs.push(("systolic", params(Engine::GpuBlocked, 1, Some(launch))));
            }
            for (name, p) in runs {
                let (s, regs, spill) = time_shape(gpu, &spec, &p, layout, &mut cur, 100).unwrap();
                println!(
                    "{{\"sweep\":\"conv2d:{k}x{k}\",\"kernel\":\"{name}\",\"launch\":\"{:?}\",\"registers\":{regs},\"spill\":{spill},\"g_per_s\":{:.2}}}",
                    p.launch,
                    (8192 * 8192) as f64 / s / 1e9
                );
            }
        }
        drop(cur);
        let (layout, mut cur) = upload([16384, 16384]);
        let spec = PlaneSpec::stencil(&Stencil2::from_name("star2d:1").unwrap());
        let mut runs = vec![(1, 8, params(Engine::GpuNaive, 1, None))];
        for (rx, skew, dim_t, by, l2) in [
            (4, false, 4, 4, 8),
            (4, true, 4, 4, 8),
            (4, true, 4, 4, 0),
            (4, true, 3, 4, 8),
            (4, false, 6, 4, 8),
            (4, true, 6, 4, 8),
            (4, false, 8, 4, 8),
            (2, false, 4, 4, 8),
            (2, true, 4, 4, 8),
            (2, true, 6, 4, 8),
            (2, true, 6, 4, 0),
            (2, true, 6, 8, 8),
            (2, false, 8, 4, 8),
            (2, true, 8, 4, 8),
        ] {
            let p = params(Engine::GpuBlocked, dim_t, Some(shape(rx, 1, by, 128, skew)));
            runs.push((dim_t, l2, p));
        }
        for (dim_t, l2, p) in runs {
            crate::gpu::plane_source::test_l2_ahead::set(Some(l2));
            let (s, regs, spill) = time_shape(gpu, &spec, &p, layout, &mut cur, 240).unwrap();
            println!(
                "{{\"sweep\":\"star2d:1\",\"engine\":\"{}\",\"dim_t\":{dim_t},\"l2_ahead\":{l2},\"launch\":\"{:?}\",\"registers\":{regs},\"spill\":{spill},\"g_per_s\":{:.2}}}",
                p.engine,
                p.launch,
                (16384 * 16384) as f64 / s / 1e9
            );
        }
        crate::gpu::plane_source::test_l2_ahead::set(None);
    }
}
