//! The GPU stencil engines' kernels and launches: `gpu-naive` (one launch per time step) and
//! `gpu-blocked` (one launch per pass of `dim_t` steps) on two device buffers laid out like
//! the host grid, their compilation ([`prepare`]), the hooks a split run calls between passes
//! ([`PassHooks`]), and the non-finite flag a pass raises. `stencil_run` runs a plan with
//! them.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::compile::Kernel;
use super::device::Gpu;
use super::launch_grid::{grid_words, launch_grid};
use super::source::{stencil_source, BlockedShape};
use super::zplanes::{InFlight, ZPlanes};
use crate::engine::{Engine, EngineParams, LaunchShape};
use crate::memory::Footprint;
use crate::{Error, Real, Result, Stencil};

/// Where the cells are: dimensions and the padded row and plane strides (the host grid's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) dims: [usize; 3],
    pub(crate) pitch: usize,
    pub(crate) plane: usize,
}

impl Layout {
    /// Elements in one buffer.
    pub(crate) fn len(&self) -> usize {
        self.plane * self.dims[2]
    }
}

/// The second buffer and the non-finite flag a run needs besides the state itself.
pub(crate) struct Scratch<T> {
    pub(crate) layout: Layout,
    pub(crate) next: CudaSlice<T>,
    pub(crate) flag: CudaSlice<i32>,
}

impl<T: Real> Scratch<T> {
    /// Allocates scratch for `layout`, failing with [`Error::GpuOutOfMemory`] when the device
    /// lacks the memory for it and the state: `state_on_device` says whether the state is there
    /// already (a [`crate::gpu::DeviceGrid`]) or is uploaded next to it (a host grid).
    pub(crate) fn new(gpu: &Gpu, layout: Layout, state_on_device: bool) -> Result<Self> {
        let grid = Footprint::grids(T::DTYPE, 1);
        let held = if state_on_device {
            grid.bytes(layout.dims).unwrap_or(0)
        } else {
            0
        };
        let need = Footprint::grids(T::DTYPE, 2)
            .plus(FLAG_BYTES)
            .with_label("with its scratch on the GPU");
        ensure_memory(gpu, &need, layout.dims, held)?;
        let next = gpu.stream.alloc_zeros::<T>(layout.len()).map_err(gpu_err)?;
        let flag = gpu.stream.alloc_zeros::<i32>(1).map_err(gpu_err)?;
        Ok(Scratch { layout, next, flag })
    }
}

/// Bytes of the device's non-finite flag.
const FLAG_BYTES: u64 = std::mem::size_of::<i32>() as u64;

/// Fails with [`Error::GpuOutOfMemory`], naming the largest cube that fits, when `need` for
/// `dims` does not fit in the device's free memory, `held` bytes of it being there already
/// (and [`crate::memory::GPU_RESERVE`] left free).
pub(crate) fn ensure_memory(
    gpu: &Gpu,
    need: &Footprint,
    dims: [usize; 3],
    held: u64,
) -> Result<()> {
    let (free, _) = gpu.ctx.mem_get_info().map_err(gpu_err)?;
    need.check_device(dims, held, free as u64)
}

pub(crate) fn gpu_err(e: impl std::fmt::Display) -> Error {
    Error::Gpu(e.to_string())
}

/// The blocked kernel's shape for a launch shape at `dim_t` steps per pass.
pub(crate) fn blocked_shape(launch: &LaunchShape, dim_t: usize) -> BlockedShape {
    BlockedShape {
        dim_t,
        bx: launch.block[0],
        by: launch.block[1],
        ry: launch.ry,
        rx: launch.rx,
        skew: launch.skew,
    }
}

/// Compiles (or finds in the process's cache) every kernel a run launches for `steps`
/// steps with `params`, so callers keep the one-time NVRTC compilation out of their timings,
/// and checks that its launches keep to CUDA's grid limits ([`Error::InvalidPlan`] when not).
pub(crate) fn prepare<T: Real>(
    gpu: &Gpu,
    stencil: &Stencil,
    params: &EngineParams,
    layout: Layout,
    steps: usize,
) -> Result<()> {
    let r = stencil.radius();
    let interior = ZPlanes::one(r..layout.dims[2].saturating_sub(r));
    check_naive_launches(r, layout.dims)?;
    match params.engine {
        Engine::GpuBlocked => {
            let launch = launch_of(params)?;
            let at = Launch {
                r,
                shape: blocked_shape(launch, params.dim_t),
                stream_block: launch.stream_block,
                layout,
            };
            at.config(&interior, 0)?;
            let elements = layout.len();
            blocked_kernel::<T>(gpu, stencil, at.shape, elements)?;
            let tail = steps % params.dim_t;
            if tail > 0 {
                blocked_kernel::<T>(gpu, stencil, blocked_shape(launch, tail), elements)?;
            }
            Ok(())
        }
        _ => naive_kernel::<T>(gpu, stencil).map(drop),
    }
    .and_then(|()| naive_kernel_named::<T>(gpu, stencil, "copy_shell").map(drop))
}

/// The kernels one run launches.
pub(super) enum PassKernels {
    /// gpu-naive: one step per launch.
    Naive(Kernel),
    /// gpu-blocked: the dim_t-step kernel and, when dim_t does not divide the run, the one for
    /// its shorter last pass (each with its shared-memory size).
    Blocked {
        full: (Kernel, usize),
        short: Option<(Kernel, usize)>,
    },
}

/// Passes launched between two reads of the non-finite flag: each read waits for the device
/// (about 10 µs), and after a failed pass the later ones still run (without writing) until the
/// next read.
pub(crate) const PASSES_PER_CHECK: usize = 256;

/// The launch shape a gpu-blocked run needs.
pub(super) fn launch_of(params: &EngineParams) -> Result<&LaunchShape> {
    params
        .launch
        .as_ref()
        .ok_or_else(|| Error::InvalidPlan("a gpu-blocked plan needs a launch shape".to_string()))
}

/// What a run on a block of a split grid does between passes: the GPU stencil engines call
/// it so that a split run queues its halo exchanges on the device between the passes, with no
/// wait for the host in between. A run in one process uses [`Alone`].
pub(crate) trait PassHooks<T> {
    /// Queues whatever must precede the next pass on `arrays`, the state it reads (a split
    /// state refreshes their halos), in an order every process shares.
    fn before_pass(&mut self, arrays: &mut [&mut CudaSlice<T>]) -> Result<()>;
    /// As [`PassHooks::before_pass`], for a pass that can compute the planes whose inputs
    /// need no halo while the halos travel: returns the z-halo planes still in flight when
    /// it returns, which [`PassHooks::halos_arrived`] waits for. By default every halo is in
    /// place first.
    fn before_pass_beside(&mut self, arrays: &mut [&mut CudaSlice<T>]) -> Result<InFlight> {
        self.before_pass(arrays).map(|()| InFlight::NONE)
    }
    /// Makes the engine's stream wait for the halos [`PassHooks::before_pass_beside`] left in
    /// flight.
    fn halos_arrived(&mut self) -> Result<()> {
        Ok(())
    }
    /// Called once per batch of passes with this process's outcome of the batch, after the
    /// device has finished it; returns the outcome every process agrees on. Every process
    /// must reach it after the same passes.
    fn after_batch(&mut self, outcome: Result<()>) -> Result<()>;
    /// Whether this is a run in one process, which replays a failed pass from its own input
    /// (a split run's processes replay the run from its start together).
    fn alone(&self) -> bool;
    /// Puts the run's input back into `cur`, for a split run that traces a failure from its
    /// start; a run in one process, which replays the failing pass from its own input, keeps
    /// none.
    fn restart(&mut self, _cur: &mut CudaSlice<T>) -> Result<()> {
        Err(Error::Gpu("this run keeps no copy of its input".into()))
    }
    /// Tells the hooks that every process holds the state after `steps` steps of the run,
    /// after a failure that every process traced together.
    fn held(&mut self, _steps: usize) {}
}

/// `ready` on every process where all have it (through [`PassHooks::after_batch`], which a
/// run in one process passes through); else this process's own error or the failure another
/// reported. Every process must call it at the same point of a run.
pub(crate) fn agree_on<T, X>(hooks: &mut dyn PassHooks<T>, ready: Result<X>) -> Result<X> {
    match ready {
        Ok(x) => hooks.after_batch(Ok(())).map(|()| x),
        Err(e) => match hooks.after_batch(Err(e)) {
            Err(e) => Err(e),
            Ok(()) => Err(Error::Gpu("a failure was agreed as a success".into())),
        },
    }
}

/// A split run's outcome of a batch for [`PassHooks::after_batch`]: an error where this
/// process `raised` its non-finite flag, before the processes trace the step together.
pub(crate) fn flagged(raised: bool) -> Result<()> {
    match raised {
        true => Err(Error::Gpu("a pass wrote a non-finite value".into())),
        false => Ok(()),
    }
}

/// The hooks of a run in one process: nothing between passes.
pub(crate) struct Alone;

impl<T> PassHooks<T> for Alone {
    fn before_pass(&mut self, _: &mut [&mut CudaSlice<T>]) -> Result<()> {
        Ok(())
    }
    fn after_batch(&mut self, outcome: Result<()>) -> Result<()> {
        outcome
    }
    fn alone(&self) -> bool {
        true
    }
}

/// One batch of passes queued between two reads of the flag: from step `done` of a run of
/// `steps`, `passes` passes of `dim_t` steps each (the run's last one shorter).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch {
    pub(crate) done: usize,
    pub(crate) passes: usize,
    pub(crate) dim_t: usize,
    pub(crate) steps: usize,
}

/// Where the pass that raised the flag stands in its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FailedPass {
    /// Whether `cur` and `next` must be swapped once more so that `cur` holds the pass's input
    /// and `next` its output.
    pub(crate) swap_back: bool,
    /// Steps of the run before the pass.
    pub(crate) before: usize,
    /// Steps the pass advanced.
    pub(crate) pass_steps: usize,
}

impl Batch {
    /// The place of pass `failed` (counted from 1), an error when the batch has no such pass
    /// (the flag holds another number). The batch made `passes` swaps; the input of the
    /// failing pass is the state after `failed - 1` of them and its output the other buffer,
    /// since no later pass wrote.
    pub(crate) fn failed_pass(self, failed: usize) -> Result<FailedPass> {
        if !(1..=self.passes).contains(&failed) {
            return Err(Error::Gpu(format!(
                "the non-finite flag names pass {failed} of {}",
                self.passes
            )));
        }
        let before = self.done + (failed - 1) * self.dim_t;
        Ok(FailedPass {
            swap_back: (self.passes - (failed - 1)) % 2 == 1,
            before,
            pass_steps: self.dim_t.min(self.steps - before),
        })
    }

    /// [`Batch::failed_pass`], with `cur` and `next` swapped where needed so that `cur` holds
    /// the failing pass's input and `next` its output: the steps of the run before the pass
    /// and the steps it advanced.
    pub(crate) fn back_to_input<T>(
        self,
        failed: usize,
        cur: &mut CudaSlice<T>,
        next: &mut CudaSlice<T>,
    ) -> Result<(usize, usize)> {
        let f = self.failed_pass(failed)?;
        if f.swap_back {
            std::mem::swap(cur, next);
        }
        Ok((f.before, f.pass_steps))
    }
}

/// What the compiler made of the kernel a GPU plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: usize,
    /// Bytes per thread spilled to local memory (0 is what one wants).
    pub spill_bytes: usize,
}

/// Compiles (or fetches from the cache) the kernel a GPU stencil engine runs with `params` on a
/// grid of `dims` and reports its register use and spills.
pub(crate) fn kernel_resources(
    stencil: &Stencil,
    dtype: crate::DType,
    params: &EngineParams,
    dims: [usize; 3],
) -> Result<KernelResources> {
    fn typed<T: Real>(
        stencil: &Stencil,
        params: &EngineParams,
        dims: [usize; 3],
    ) -> Result<Kernel> {
        let gpu = super::gpu()?;
        match &params.launch {
            Some(launch) => {
                let shape = blocked_shape(launch, params.dim_t);
                let elements = crate::grid::grid_strides::<T>(dims).map_or(usize::MAX, |s| s.2);
                Ok(blocked_kernel::<T>(gpu, stencil, shape, elements)?.0)
            }
            None => naive_kernel::<T>(gpu, stencil),
        }
    }
    let kernel = match dtype {
        crate::DType::F32 => typed::<f32>(stencil, params, dims)?,
        crate::DType::F64 => typed::<f64>(stencil, params, dims)?,
    };
    Ok(KernelResources {
        registers: kernel.registers,
        spill_bytes: kernel.spill_bytes,
    })
}

pub(super) fn naive_kernel<T: Real>(gpu: &Gpu, stencil: &Stencil) -> Result<Kernel> {
    naive_kernel_named::<T>(gpu, stencil, "stencil_naive")
}

/// The function `name` of the stencil's module without a blocked shape (`stencil_naive`,
/// `copy_shell`).
pub(super) fn naive_kernel_named<T: Real>(
    gpu: &Gpu,
    stencil: &Stencil,
    name: &str,
) -> Result<Kernel> {
    gpu.kernel(&stencil_source::<T>(stencil, None, 0), name, 0)
}

/// Threads per block of `copy_shell`.
pub(crate) const SHELL_THREADS: u32 = 128;

/// `copy_shell`'s launch for a grid of `dims` and radius `r`: the boundary rows (a block
/// each) and the blocks in all.
pub(crate) fn shell_blocks([_, ny, nz]: [usize; 3], r: usize) -> (usize, usize) {
    let rows = 2 * r * ny + 2 * r * nz.saturating_sub(2 * r);
    let edge_cells = 2 * r * ny.saturating_sub(2 * r) * nz.saturating_sub(2 * r);
    (rows, rows + edge_cells.div_ceil(SHELL_THREADS as usize))
}

/// Copies the fixed boundary layer (the outer `r` cells on every side) of `src` into
/// `scratch.next` with the `copy_shell` kernel: the rows of the first and last `r` planes and
/// of the first and last `r` rows of every plane, a block each, then the first and last `r`
/// cells of every other row, a thread each.
pub(super) fn copy_shell<T: Real>(
    gpu: &Gpu,
    kernel: &Kernel,
    layout: Layout,
    r: usize,
    src: &CudaSlice<T>,
    scratch: &mut Scratch<T>,
) -> Result<()> {
    let (rows, blocks) = shell_blocks(layout.dims, r);
    if blocks > i32::MAX as usize {
        let [nx, ny, nz] = layout.dims;
        return Err(Error::InvalidPlan(format!(
            "a {nx} x {ny} x {nz} grid has too many boundary rows for one launch"
        )));
    }
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (SHELL_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let ([nx, ny, nz], pitch, plane) = dims_args(layout);
    let rows = rows as i32;
    let mut args = gpu.stream.launch_builder(&kernel.function);
    args.arg(src)
        .arg(&mut scratch.next)
        .arg(&nx)
        .arg(&ny)
        .arg(&nz)
        .arg(&pitch)
        .arg(&plane)
        .arg(&rows);
    // SAFETY: the arguments match copy_shell's parameter list in type and order; both buffers
    // hold `layout.len()` elements and the kernel touches only cells of the outer `r` layers
    // inside `dims` (rows below `rows`, one cell per thread after them, guarded by the count).
    unsafe { args.launch(cfg) }.map_err(gpu_err)?;
    Ok(())
}

/// The blocked kernel for `shape` on a grid of `elements` elements, with its shared-memory size.
pub(crate) fn blocked_kernel<T: Real>(
    gpu: &Gpu,
    stencil: &Stencil,
    shape: BlockedShape,
    elements: usize,
) -> Result<(Kernel, usize)> {
    let shared = shape.shared_bytes(stencil.radius(), T::DTYPE);
    let kernel = gpu.kernel(
        &stencil_source::<T>(stencil, Some(shape), elements),
        shape.kernel_name(),
        shared,
    )?;
    Ok((kernel, shared))
}

fn dims_args(layout: Layout) -> ([i32; 3], i64, i64) {
    let [nx, ny, nz] = layout.dims;
    (
        [nx as i32, ny as i32, nz as i32],
        layout.pitch as i64,
        layout.plane as i64,
    )
}

/// Checks, without a device, that gpu-naive's launches on a `dims` grid at radius `r` keep to
/// CUDA's grid limits; every GPU run takes them (gpu-naive's step, and the replay of a failed
/// blocked pass a step at a time).
pub(crate) fn check_naive_launches(r: usize, dims: [usize; 3]) -> Result<()> {
    naive_config(dims, &ZPlanes::one(r..dims[2].saturating_sub(r))).map(drop)
}

/// `stencil_naive`'s launch over the output planes `planes`: a thread per column in 32 x 8
/// blocks, a block row per range.
pub(super) fn naive_config(dims: [usize; 3], planes: &ZPlanes) -> Result<LaunchConfig> {
    let [nx, ny, _] = dims;
    let rows = 1 + usize::from(!planes.b.is_empty());
    Ok(LaunchConfig {
        grid_dim: launch_grid([nx.div_ceil(32), ny.div_ceil(8), rows], || grid_words(dims))?,
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    })
}

/// Launches `stencil_naive` over the output planes `planes` (a thread per column, one chunk
/// per range); nothing when they are empty.
pub(super) fn launch_naive<T: Real>(
    gpu: &Gpu,
    kernel: &Kernel,
    layout: Layout,
    planes: &ZPlanes,
    src: &CudaSlice<T>,
    scratch: &mut Scratch<T>,
    pass: i32,
) -> Result<()> {
    if planes.is_empty() {
        return Ok(());
    }
    let cfg = naive_config(layout.dims, planes)?;
    let ([nx, ny, nz], pitch, plane) = dims_args(layout);
    // Block row 0 takes range a, row 1 range b; the chunk length is unused.
    let hz = 0i32;
    let [a0, a1, b0, b1] = planes.args();
    let mut args = gpu.stream.launch_builder(&kernel.function);
    args.arg(src)
        .arg(&mut scratch.next)
        .arg(&nx)
        .arg(&ny)
        .arg(&nz)
        .arg(&pitch)
        .arg(&plane)
        .arg(&a0)
        .arg(&a1)
        .arg(&b0)
        .arg(&b1)
        .arg(&hz)
        .arg(&pass)
        .arg(&mut scratch.flag);
    // SAFETY: the arguments match stencil_naive's parameter list in type and order; both
    // buffers hold `layout.len()` elements, the planes lie inside [R, nz - R) and the kernel
    // only touches cells inside `dims`.
    unsafe { args.launch(cfg) }.map_err(gpu_err)?;
    Ok(())
}

/// What a blocked launch's grid is cut from: the radius, the kernel's shape, the z-chunk
/// length and the arrays' layout.
pub(super) struct Launch {
    pub(super) r: usize,
    pub(super) shape: BlockedShape,
    pub(super) stream_block: usize,
    pub(super) layout: Layout,
}

impl Launch {
    /// The launch over the output planes `planes`: tiles of the shape's valid width across the
    /// interior, a block row per z-chunk of the stream block's length.
    pub(super) fn config(&self, planes: &ZPlanes, shared: usize) -> Result<LaunchConfig> {
        let (r, shape) = (self.r, self.shape);
        let [nx, ny, _] = self.layout.dims;
        let (vx, vy) = (
            shape.tx() - 2 * r * shape.dim_t,
            shape.ty() - 2 * r * shape.dim_t,
        );
        let blocks = [
            (nx - 2 * r).div_ceil(vx),
            (ny - 2 * r).div_ceil(vy),
            planes.chunks(self.stream_block.max(1)),
        ];
        Ok(LaunchConfig {
            grid_dim: launch_grid(blocks, || grid_words(self.layout.dims))?,
            block_dim: (shape.bx as u32, shape.by as u32, 1),
            shared_mem_bytes: shared as u32,
        })
    }
}

/// Launches the blocked kernel over the output planes `planes` in z-chunks of the stream
/// block's length; nothing when they are empty.
pub(super) fn launch_blocked<T: Real>(
    gpu: &Gpu,
    (kernel, shared): &(Kernel, usize),
    at: &Launch,
    planes: &ZPlanes,
    src: &CudaSlice<T>,
    scratch: &mut Scratch<T>,
    pass: i32,
) -> Result<()> {
    if planes.is_empty() {
        return Ok(());
    }
    let cfg = at.config(planes, *shared)?;
    let hz = at.stream_block.max(1);
    let ([nx, ny, nz], pitch, plane) = dims_args(at.layout);
    let [a0, a1, b0, b1] = planes.args();
    let hz = hz as i32;
    let mut args = gpu.stream.launch_builder(&kernel.function);
    args.arg(src)
        .arg(&mut scratch.next)
        .arg(&nx)
        .arg(&ny)
        .arg(&nz)
        .arg(&pitch)
        .arg(&plane)
        .arg(&a0)
        .arg(&a1)
        .arg(&b0)
        .arg(&b1)
        .arg(&hz)
        .arg(&pass)
        .arg(&mut scratch.flag);
    // SAFETY: the arguments match the parameter list of stencil_blocked and of
    // stencil_shuffle (the same); the grid covers the interior with tiles of valid width
    // vx x vy and the planes' z-chunks of hz planes exactly as the kernel computes them; the
    // planes lie inside [R, nz - R) and the kernel reads and writes only cells inside `dims`.
    unsafe { args.launch(cfg) }.map_err(gpu_err)?;
    Ok(())
}

/// Waits for the queued passes, then reads and clears the non-finite flag: the number of the
/// pass that raised it (counted from 1 since the last read), if any.
pub(crate) fn raised_pass<T>(gpu: &Gpu, scratch: &mut Scratch<T>) -> Result<Option<usize>> {
    read_flag(gpu, &mut scratch.flag)
}

/// Waits for the queued launches, then reads and clears the device flag `flag`.
pub(crate) fn read_flag(gpu: &Gpu, flag: &mut CudaSlice<i32>) -> Result<Option<usize>> {
    let mut host = [0i32; 1];
    gpu.stream
        .memcpy_dtoh(flag, &mut host[..])
        .map_err(gpu_err)?;
    gpu.stream.synchronize().map_err(gpu_err)?;
    if host[0] == 0 {
        return Ok(None);
    }
    gpu.stream.memset_zeros(flag).map_err(gpu_err)?;
    Ok(Some(host[0] as usize))
}

/// The error for a step whose output `bad` holds a non-finite interior value. The output is
/// read a plane at a time, so finding the cell takes one plane of host memory, not a grid.
pub(super) fn locate<T: Real>(
    gpu: &Gpu,
    layout: Layout,
    bad: &CudaSlice<T>,
    r: usize,
    step: usize,
) -> Error {
    let mut host = vec![T::zero(); layout.plane];
    let [nx, ny, nz] = layout.dims;
    for z in r..nz - r {
        let view = bad.slice(z * layout.plane..(z + 1) * layout.plane);
        if let Err(e) = gpu
            .stream
            .memcpy_dtoh(&view, &mut host)
            .and_then(|_| gpu.stream.synchronize())
        {
            return gpu_err(e);
        }
        for y in r..ny - r {
            for x in r..nx - r {
                let v = host[y * layout.pitch + x];
                if !v.is_finite() {
                    return Error::NonFinite {
                        step,
                        cell: [x, y, z],
                        value: v.to_f64().unwrap_or(f64::NAN),
                    };
                }
            }
        }
    }
    Error::NonFinite {
        step,
        cell: [r, r, r],
        value: f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays the host's bookkeeping for every batch shape: passes ping-pong between two
    /// buffers (labelled 0 and 1) and swap after each; whichever pass fails, the swap-back
    /// leaves its input in `cur` and its output in `next`, and `before` / `pass_steps` are the
    /// steps the passes actually started at and advanced.
    #[test]
    fn a_failed_pass_is_found_with_its_input_and_steps() {
        for dim_t in 1..=4 {
            for done in [0, 3, 8] {
                for steps in done + 1..done + 14 {
                    let mut cur = 0;
                    let mut next = 1;
                    let (mut at, mut passes) = (done, 0);
                    // (input, output, first step, pass_steps) of every pass.
                    let mut launched = Vec::new();
                    while at < steps && passes < 5 {
                        let pass_steps = dim_t.min(steps - at);
                        passes += 1;
                        launched.push((cur, next, at, pass_steps));
                        std::mem::swap(&mut cur, &mut next);
                        at += pass_steps;
                    }
                    let batch = Batch {
                        done,
                        passes,
                        dim_t,
                        steps,
                    };
                    assert!(batch.failed_pass(0).is_err());
                    assert!(batch.failed_pass(passes + 1).is_err());
                    for (i, &(input, output, first, pass_steps)) in launched.iter().enumerate() {
                        let f = batch.failed_pass(i + 1).unwrap();
                        let (c, n) = if f.swap_back {
                            (next, cur)
                        } else {
                            (cur, next)
                        };
                        let case =
                            format!("dim_t {dim_t} done {done} steps {steps} pass {}", i + 1);
                        assert_eq!((c, n), (input, output), "{case}");
                        assert_eq!((f.before, f.pass_steps), (first, pass_steps), "{case}");
                    }
                }
            }
        }
    }

    /// The naive launch takes 8 rows a block along y and the blocked one a block row per
    /// z-chunk: one row or chunk past CUDA's 65,535 blocks is refused, naming the axis, before
    /// anything is launched.
    #[test]
    fn launches_past_cudas_grid_limits_are_refused() {
        let layout = |dims: [usize; 3]| Layout {
            dims,
            pitch: dims[0],
            plane: dims[0] * dims[1],
        };
        let one = ZPlanes::one(1..2);
        assert!(naive_config([3, 8 * 65_535, 3], &one).is_ok());
        let refused = |r: Result<LaunchConfig>, axis: &str| match r {
            Err(Error::InvalidPlan(m)) => assert!(m.contains(&format!("along {axis}")), "{m}"),
            other => panic!("expected InvalidPlan, got {other:?}"),
        };
        refused(naive_config([3, 8 * 65_535 + 1, 3], &one), "y");
        let shape = BlockedShape {
            dim_t: 2,
            bx: 32,
            by: 8,
            ry: 1,
            rx: 1,
            skew: false,
        };
        let at = |nz: usize| Launch {
            r: 1,
            shape,
            stream_block: 1,
            layout: layout([40, 40, nz]),
        };
        let interior = |nz: usize| ZPlanes::one(1..nz - 1);
        assert!(at(65_537).config(&interior(65_537), 0).is_ok());
        refused(at(65_538).config(&interior(65_538), 0), "z");
    }
}
