//! How the planner chooses: [`PlanBuilder::build`] checks the request, rates every candidate
//! with the CPU model (and the GPU model when a GPU may be used), applies the user's overrides
//! and assembles the [`Plan`].

use super::builder::PlanBuilder;
use super::candidate::Candidate;
use super::copies::{self, Copies};
use super::gpu_model::{GpuModel, GpuShape};
use super::kernel::{Kernel, KernelCost};
use super::limits::{GPU_CANDIDATES_SHOWN, MAX_DIM_T, MAX_THREADS_PER_CORE, PLANNER_MAX_DIM_T};
use super::machine::Machine;
use super::model::{self, ModelInput};
use super::plane_model::PLANE_MAX_DIM_T;
use super::recipe::{Overrides, Plan};
use super::tune;
use super::wave_gpu::WAVE_GPU_MAX_DIM_T;
use super::wave_model::WAVE_MAX_DIM_T;
use crate::engine::Engine;
use crate::gpu::{BlockedShape, GpuInfo, CPU_ADVICE};
use crate::lbm::{Lattice, LbmKernel};
use crate::tuning::Tuning;
use crate::{DType, Error, Grid, Grid2, Real, Result, Stencil};

impl Plan {
    /// The planner's choice for `kernel` on `dims` cells of `dtype` on this machine.
    pub fn new(kernel: impl Into<Kernel>, dtype: DType, dims: [usize; 3]) -> Result<Plan> {
        PlanBuilder::new(kernel, dtype, dims).build()
    }

    /// The planner's choice for running `stencil` on `grid`.
    pub fn for_grid<T: Real>(stencil: &Stencil, grid: &Grid<T>) -> Result<Plan> {
        Plan::new(stencil.clone(), T::DTYPE, grid.dims())
    }

    /// The planner's choice for running the 2D stencil or convolution `kernel` on `grid`.
    pub fn for_grid2<T: Real>(kernel: impl Into<Kernel>, grid: &Grid2<T>) -> Result<Plan> {
        let [nx, ny] = grid.dims();
        Plan::new(kernel, T::DTYPE, [nx, ny, 1])
    }

    /// The planner's choice for advancing the wavefield `field` (its kernel, size and
    /// precision; the plan fits any wavefield that shares them).
    pub fn for_wavefield<T: Real>(field: &crate::wave::Wavefield<T>) -> Result<Plan> {
        Plan::new(field.kernel().clone(), T::DTYPE, field.dims())
    }

    /// The planner's choice for advancing `lattice` (its size, precision, periodicity,
    /// forcing and storage; the plan fits any lattice that shares them, so a lattice whose
    /// storage is changed afterwards with [`Lattice::set_storage`] needs a new plan).
    pub fn for_lattice<T: Real>(lattice: &Lattice<T>) -> Result<Plan> {
        Plan::new(LbmKernel::of(lattice), T::DTYPE, lattice.dims())
    }

    /// This plan with the engine fixed to `engine` (other choices re-planned around it).
    pub fn with_engine(&self, engine: Engine) -> Result<Plan> {
        let mut b = self.rebuild().engine(engine);
        if !engine.is_blocked() {
            b.dim_t = None;
            b.tile = None;
        }
        if engine != Engine::Blocked {
            b.tile_threads = None;
            b.z_chunks = None;
        }
        if engine != Engine::GpuBlocked {
            b.gpu_shape = None;
        }
        if engine != Engine::GpuNaive {
            b.in_place = None;
        }
        b.build()
    }

    /// This plan with `threads` threads.
    pub fn with_threads(&self, threads: usize) -> Result<Plan> {
        self.rebuild().threads(threads).build()
    }
}

impl PlanBuilder {
    /// Validates the request and runs the model.
    pub fn build(mut self) -> Result<Plan> {
        self.kernel.validate()?;
        self.kernel.check_range(self.dtype)?;
        self.resolve_in_place()?;
        self.validate()?;
        let described = self.machine.is_some();
        let cap = [self.isa, Tuning::current().isa]
            .into_iter()
            .flatten()
            .min();
        let machine = self
            .machine
            .take()
            .unwrap_or_else(|| Machine::detect().clone());
        let machine = match cap {
            Some(level) => machine.with_isa_at_most(level),
            None => machine,
        };
        machine.validate()?;
        check_threads(self.threads, &machine)?;
        let (gpu_info, no_launch) = self.gpu_info(described)?;
        let choice = Planning::new(&self, &machine).choose(gpu_info)?;
        let free = self.without_shape_overrides(&machine);
        let untimed = self.untimed_autotune(gpu_info.is_some(), no_launch.is_some());
        let asked = (self.tile, self.z_chunks, self.tile_threads);
        let mut plan = self.assemble(choice, (machine, described), gpu_info);
        plan.warnings = warnings(&plan, free);
        plan.warnings.extend(clamped(&plan, asked));
        plan.warnings.extend(untimed);
        plan.warnings.extend(no_launch);
        Ok(plan)
    }

    /// Why autotuning, when asked for, timed nothing: it times the launch shapes of the GPU
    /// stencil kernels, so it needs a GPU that can launch the grid (`left_out` when it cannot)
    /// and a 3D stencil.
    fn untimed_autotune(&self, has_gpu: bool, left_out: bool) -> Option<String> {
        if self.autotune == 0 {
            return None;
        }
        if left_out && matches!(self.kernel, Kernel::Stencil(_)) {
            return Some(
                "autotuning times GPU launch shapes and the GPU engines cannot launch this grid: \
                 nothing was timed"
                    .to_string(),
            );
        }
        if !has_gpu {
            let why = crate::gpu::detect_gpu().err().map_or_else(
                || "the plan is for a described machine".to_string(),
                |e| e.to_string(),
            );
            return Some(format!(
                "autotuning times GPU launch shapes and no GPU is available ({why}): nothing was timed"
            ));
        }
        (!matches!(self.kernel, Kernel::Stencil(_))).then(|| {
            format!(
                "autotuning times the launch shapes of the GPU 3D stencil kernels; {} has none to \
                 time: nothing was timed",
                self.kernel
            )
        })
    }

    /// The same request with the tile and `dim_t` (and tile groups, z chunks) left to the
    /// planner, when the user fixed any of them: the plan to compare the user's with.
    fn without_shape_overrides(&self, machine: &Machine) -> Option<Plan> {
        let fixed = self.dim_t.is_some() || self.tile.is_some();
        if !fixed || self.engine.is_some_and(|e| e.is_gpu()) {
            return None;
        }
        let mut free = self.clone();
        (free.dim_t, free.tile, free.tile_threads, free.z_chunks) = (None, None, None, None);
        free.machine = Some(machine.clone());
        free.build().ok()
    }

    /// In-place storage is for lattices on gpu-naive, which asking for it picks when no engine
    /// is fixed.
    /// Lattices have no gpu-blocked engine: two steps per pass through L2 measured 0.28-0.70×
    /// gpu-naive on the H100 and the H200 (`docs/lattice-boltzmann.md`).
    fn resolve_in_place(&mut self) -> Result<()> {
        if self.kernel.lbm().is_some() && self.engine.is_none() && self.gpu_shape.is_some() {
            return Err(Error::InvalidPlan(
                "a launch shape (--block, --ry, --rx, --skew, --stream-block) is gpu-blocked's, \
                 and the lattice has no gpu-blocked engine (docs/lattice-boltzmann.md)"
                    .into(),
            ));
        }
        if self.kernel.lbm().is_some() && self.engine == Some(Engine::GpuBlocked) {
            return Err(Error::InvalidPlan(
                "the lattice has no gpu-blocked engine: two steps per pass through L2 ran at \
                 0.28-0.70x gpu-naive on the H100 and H200 (docs/lattice-boltzmann.md); use \
                 gpu-naive"
                    .into(),
            ));
        }
        if self.in_place.is_some() && self.kernel.lbm().is_none() {
            let scheme = if self.in_place == Some(true) {
                "in-place storage"
            } else {
                "two-copy storage"
            };
            return Err(Error::InvalidPlan(format!(
                "{scheme} applies to lattice-Boltzmann kernels only"
            )));
        }
        if self.in_place != Some(true) {
            return Ok(());
        }
        match self.engine {
            None => self.engine = Some(Engine::GpuNaive),
            Some(Engine::GpuNaive) => {}
            Some(e) => {
                return Err(Error::InvalidPlan(format!(
                    "in-place (AA) storage is implemented for gpu-naive only, not for '{e}'"
                )))
            }
        }
        Ok(())
    }

    /// Checks the size and every number the user fixed.
    fn validate(&self) -> Result<()> {
        let fixed = self.kernel.fixed_boundary();
        self.validate_plane()?;
        let axes = if self.kernel.is_2d() { 2 } else { 3 };
        if self.dims[..axes].iter().any(|&n| n < 2 * fixed + 1) {
            return Err(Error::GridTooSmall {
                dims: self.dims,
                radius: fixed,
            });
        }
        if self.threads == Some(0) {
            return Err(Error::InvalidPlan("threads must be at least 1".into()));
        }
        if self.tile_threads == Some(0) {
            return Err(Error::InvalidPlan(
                "threads per tile group must be at least 1".into(),
            ));
        }
        if self.z_chunks == Some(0) {
            return Err(Error::InvalidPlan("z chunks must be at least 1".into()));
        }
        if let Some(d) = self.dim_t {
            if !(1..=MAX_DIM_T).contains(&d) {
                return Err(Error::InvalidPlan(format!(
                    "dim_t = {d} is outside 1..={MAX_DIM_T}"
                )));
            }
        }
        let cache_share = self.cache_share_or_default();
        if !(cache_share > 0.0 && cache_share <= 1.0) {
            return Err(Error::InvalidPlan(format!(
                "cache share {cache_share} must be in (0, 1]"
            )));
        }
        self.validate_engine_overrides()?;
        // Sizes in bytes (values × 19 populations × 8 bytes × copies, and the engines' index
        // arithmetic) must not overflow: leave 2^18 of headroom over the cell count.
        let cells = crate::grid::element_count(&self.dims);
        if cells.and_then(|c| c.checked_mul(1 << 18)).is_none() {
            return Err(Error::InvalidPlan(format!(
                "a {:?} grid is too large to address",
                self.dims
            )));
        }
        Ok(())
    }

    /// 2D kernels need a one-plane grid; a convolution runs once per step (no `dim_t`; its
    /// tile is the blocked engine's work item, `[columns, rows]`).
    fn validate_plane(&self) -> Result<()> {
        if !self.kernel.is_2d() {
            return Ok(());
        }
        if self.dims[2] != 1 {
            return Err(Error::InvalidPlan(format!(
                "{} is a 2D kernel: it runs on a Grid2 (dimensions [nx, ny, 1]), not on {}x{}x{}",
                self.kernel, self.dims[0], self.dims[1], self.dims[2]
            )));
        }
        if self.kernel.filter().is_some() && self.dim_t.is_some_and(|d| d > 1) {
            return Err(Error::InvalidPlan(
                "a convolution is applied once per step: dim_t applies to iterated stencils".into(),
            ));
        }
        if self.tile_threads.is_some() || self.z_chunks.is_some() || self.gpu_shape.is_some() {
            return Err(Error::InvalidPlan(
                "tile groups, z chunks and GPU launch shapes apply to 3D kernels".into(),
            ));
        }
        Ok(())
    }

    /// Overrides that only the blocked engines take, refused for a fixed engine of another kind.
    fn validate_engine_overrides(&self) -> Result<()> {
        let Some(engine) = self.engine else {
            return Ok(());
        };
        if !engine.is_blocked() && (self.dim_t.is_some_and(|d| d > 1) || self.tile.is_some()) {
            return Err(Error::InvalidPlan(format!(
                "dim_t and tile apply to the blocked engine, not to '{engine}'"
            )));
        }
        if engine != Engine::Blocked && self.tile_threads.is_some() {
            return Err(Error::InvalidPlan(format!(
                "threads per tile group apply to the blocked CPU engine, not to '{engine}'"
            )));
        }
        if engine != Engine::Blocked && self.z_chunks.is_some() {
            return Err(Error::InvalidPlan(format!(
                "z chunks apply to the blocked CPU engine, not to '{engine}'"
            )));
        }
        if engine != Engine::GpuBlocked && self.gpu_shape.is_some() {
            return Err(Error::InvalidPlan(format!(
                "a GPU launch shape applies to the gpu-blocked engine, not to '{engine}'"
            )));
        }
        Ok(())
    }

    /// The GPU, asked for only when the plan may use it (CPU-only plans never load CUDA). A
    /// described machine has no GPU unless a GPU engine is asked for: what-if plans for another
    /// CPU must not depend on the GPU of the host they are computed on.
    ///
    /// A grid the GPU engines cannot launch in one process (CUDA's grid limits) leaves the GPU
    /// out of an automatic plan, with the reason as a warning. A plan that names a GPU engine
    /// or launch shape keeps it: split over MPI ranks, each rank launches its own block, and
    /// the engines refuse a grid they cannot launch before the upload.
    fn gpu_info(&self, described: bool) -> Result<(Option<&'static GpuInfo>, Option<String>)> {
        let info = match self.engine {
            Some(e) if !e.is_gpu() => None,
            None if described => None,
            forced => match crate::gpu::detect_gpu() {
                Ok(info) => Some(info),
                Err(e) if forced.is_some() => return Err(e),
                Err(_) => None,
            },
        };
        let forced = self.engine.is_some() || self.gpu_shape.is_some();
        Ok(gpu_verdict(info, self.gpu_launches(), forced))
    }

    /// Whether the GPU engines can launch the request's grid: the one-step launches every GPU
    /// run takes, checked against CUDA's grid limits without a device. The lattice kernels have
    /// none (a longer lattice takes several launches a step); the blocked kernels' own launches
    /// are checked by the engines before the upload.
    fn gpu_launches(&self) -> Result<()> {
        let [nx, ny, nz] = self.dims;
        match &self.kernel {
            Kernel::Stencil(s) => crate::gpu::stencil::check_naive_launches(s.radius(), self.dims),
            Kernel::Wave(w) => crate::gpu::wave_launches::check_naive_launches(w, [nx, ny, nz]),
            Kernel::Stencil2(_) | Kernel::Filter(_) => {
                crate::gpu::plane_source::check_naive_launch([nx, ny])
            }
            Kernel::Lbm(_) => Ok(()),
        }
    }

    /// The plan from the planner's `choice` for this request.
    fn assemble(
        self,
        choice: Choice,
        (machine, described): (Machine, bool),
        gpu: Option<&GpuInfo>,
    ) -> Plan {
        let cost = self.kernel.cost(self.dtype);
        let cache_share = self.cache_share_or_default();
        let lattice = self.kernel.lbm().is_some();
        let machine_bytes_per_op = machine.bytes_per_op(self.dtype, lattice);
        let copies = match self.in_place {
            Some(in_place) => Copies {
                in_place,
                why: None,
            },
            None => copies::choose(
                &self.kernel,
                choice.chosen.engine,
                self.dtype,
                self.dims,
                gpu,
            ),
        };
        Plan {
            eta: model::eta(cost.bytes_per_op(), machine_bytes_per_op),
            kernel_bytes_per_op: cost.bytes_per_op(),
            machine_bytes_per_op,
            engine: choice.chosen.engine,
            dim_t: choice.chosen.dim_t,
            tile: choice.tile,
            chosen: choice.chosen,
            candidates: choice.candidates,
            overrides: Overrides {
                engine: self.engine.is_some(),
                dim_t: self.dim_t.is_some(),
                tile: self.tile.is_some(),
                threads: self.threads.is_some(),
                tile_threads: self.tile_threads.is_some(),
                z_chunks: self.z_chunks.is_some(),
                gpu_shape: self.gpu_shape.is_some(),
                in_place: self.in_place.is_some(),
            },
            tile_threads: choice.tile_threads,
            z_chunks: choice.z_chunks,
            kernel: self.kernel,
            dtype: self.dtype,
            dims: self.dims,
            threads: choice.threads,
            pin: self.pin,
            cache_bytes: choice.cache_bytes,
            cache_share,
            machine,
            described,
            gpu: gpu.cloned(),
            in_place: copies.in_place,
            in_place_why: copies.why,
            warnings: Vec::new(),
        }
    }
}

/// The GPU a plan may use and why it may not: `info`, unless the GPU engines cannot launch
/// the grid (`launches`) and the request names no GPU engine or launch shape (`forced`); then
/// none, and the reason as a warning.
fn gpu_verdict(
    info: Option<&GpuInfo>,
    launches: Result<()>,
    forced: bool,
) -> (Option<&GpuInfo>, Option<String>) {
    match (info, launches) {
        (Some(_), Err(e)) if !forced => {
            let why = match e {
                Error::InvalidPlan(m) => m,
                other => other.to_string(),
            };
            let why = why.strip_suffix(CPU_ADVICE).unwrap_or(&why);
            (None, Some(format!("planned on the CPU: {why}")))
        }
        (info, _) => (info, None),
    }
}

/// Refuses more threads than [`MAX_THREADS_PER_CORE`] per logical core of `machine`: such a
/// run would crawl through its barriers rather than finish.
fn check_threads(threads: Option<usize>, machine: &Machine) -> Result<()> {
    let most = MAX_THREADS_PER_CORE * machine.cores.max(1);
    match threads {
        Some(n) if n > most => Err(Error::InvalidPlan(format!(
            "{n} threads are more than {most} ({MAX_THREADS_PER_CORE} for each of {}): each \
             step would wait at the engines' barriers for threads that share the cores, and the \
             run would not finish",
            crate::error::count(machine.cores, "logical core")
        ))),
        _ => Ok(()),
    }
}

/// Why the request has no gpu-blocked candidate: no GPU at all, or none of the blocking
/// configurations for the fixed `dim_t`, tile or launch shape fits the device (named as the
/// user fixed them).
fn no_gpu_blocked(b: &PlanBuilder) -> Error {
    if let Err(why) = crate::gpu::detect_gpu() {
        return Error::InvalidPlan(format!(
            "the gpu-blocked engine was asked for (an engine or GPU launch shape), and no GPU \
             is available: {why}"
        ));
    }
    let mut fixed = Vec::new();
    if let Some(d) = b.dim_t {
        fixed.push(format!("dim_t {d}"));
    }
    if let Some([x, y]) = b.tile {
        fixed.push(format!("tile {x}x{y}"));
    }
    if let Some(shape) = &b.gpu_shape {
        fixed.push(format!("block {}x{}", shape.block[0], shape.block[1]));
    }
    let with = if fixed.is_empty() {
        String::new()
    } else {
        format!(" with {}", fixed.join(", "))
    };
    let [nx, ny, nz] = b.dims;
    Error::InvalidPlan(format!(
        "no GPU blocking configuration fits this device for {} {}{with} on a {nx} x {ny} x {nz} \
         grid (registers, shared memory, and CUDA's 65,535 blocks a launch along y and z; a \
         launch shape the user gives, `gpu_shape` or `--block`, is checked by the engine \
         alone)",
        b.kernel, b.dtype
    ))
}

/// Where `plan`'s user-fixed choices are about to waste time: a blocked working set larger
/// than the last-level cache (the model does not charge for it: a 286×286 tile at `dim_t` 16,
/// `f64` 256³, 39.9 MiB on the 2-core Zen 4, was predicted at 2,457 MUPS and ran 573-641), or
/// a tile or `dim_t` the model rates at less than half of `free` (the planner's own choice for
/// the same request). More threads than cores are noted on the plan's choice line (and by the
/// CLI).
fn warnings(plan: &Plan, free: Option<Plan>) -> Vec<String> {
    let mut out = Vec::new();
    // Every tile group's working set together, against the caches of the threads that run
    // them: the last level and their private levels.
    let m = plan.machine();
    let caches = m.usable_llc_bytes() as u64 + (plan.threads() * m.private_cache_bytes()) as u64;
    if plan.ring_bytes() > caches {
        out.push(format!(
            "the working sets of the tile groups, {} in all, exceed the {} of cache their \
             threads can use: expect memory-bound speed, well below the prediction",
            crate::error::format_bytes(plan.ring_bytes()),
            crate::error::format_bytes(caches)
        ));
    }
    if let Some(free) = free {
        let (mine, best) = (plan.predicted_mups(), free.predicted_mups());
        if mine < 0.5 * best {
            let [x, y] = plan.tile();
            let [fx, fy] = free.tile();
            out.push(format!(
                "the model rates dim_t {} tile {x}x{y} at {mine:.0} MUPS, less than half the \
                 {best:.0} MUPS of its own choice ({} dim_t {} tile {fx}x{fy})",
                plan.dim_t(),
                free.engine(),
                free.dim_t()
            ));
        }
    }
    out
}

/// Notes for the overrides the plan had to narrow: a tile larger than the grid needs covers
/// it once, z is cut into at most as many chunks as it has planes to update, and a tile group
/// has at most the plan's threads.
fn clamped(
    plan: &Plan,
    (tile, z_chunks, tile_threads): (Option<[usize; 2]>, Option<usize>, Option<usize>),
) -> Vec<String> {
    let mut out = Vec::new();
    let blocked = plan.engine() == Engine::Blocked;
    if let Some(n) = tile_threads.filter(|&n| blocked && n > plan.threads()) {
        let threads = crate::error::count(plan.threads(), "thread");
        out.push(format!(
            "{n} threads per tile group were set, more than the plan's {threads}: each group \
             has {}",
            plan.tile_threads()
        ));
    }
    if let Some([ax, ay]) = tile.filter(|&t| blocked && t != plan.tile()) {
        let [x, y] = plan.tile();
        out.push(format!(
            "the tile {ax}x{ay} set is larger than this grid needs: the engine runs {x}x{y}"
        ));
    }
    // The stencil engines cut z only past one level per pass; the wave engine at any dim_t.
    let cut = plan.dim_t() > 1 || plan.kernel().wave().is_some();
    if let Some(n) = z_chunks.filter(|&n| blocked && cut && n != plan.z_chunks()) {
        out.push(format!(
            "z is cut into {} chunks, not the {n} set: there are no more planes to update",
            plan.z_chunks()
        ));
    }
    if let Some(n) = z_chunks.filter(|&n| blocked && !cut && n > 1) {
        out.push(format!(
            "the {n} z chunks set are unused: one level per pass sweeps whole planes, uncut"
        ));
    }
    out
}

/// What the planner chose, before it becomes a [`Plan`].
struct Choice {
    chosen: Candidate,
    candidates: Vec<Candidate>,
    threads: usize,
    tile: [usize; 2],
    tile_threads: usize,
    z_chunks: usize,
    cache_bytes: usize,
}

/// One planning: the request, the model's inputs for this machine, and the thread counts.
struct Planning<'a> {
    b: &'a PlanBuilder,
    input: ModelInput<'a>,
    threads: usize,
    /// Threads per tile group, when the user fixed them (at most `threads`).
    tile_threads: Option<usize>,
}

impl<'a> Planning<'a> {
    fn new(b: &'a PlanBuilder, machine: &'a Machine) -> Planning<'a> {
        let threads = b.threads.unwrap_or(machine.cores);
        let cache_share = b.cache_share_or_default();
        Planning {
            b,
            threads,
            tile_threads: b.tile_threads.map(|n| n.min(threads)),
            input: ModelInput {
                cost: b.kernel.cost(b.dtype),
                kernel: &b.kernel,
                dtype: b.dtype,
                dims: b.dims,
                threads,
                cache_bytes: (machine.usable_llc_bytes() as f64 * cache_share) as usize,
                machine,
            },
        }
    }

    /// Rates every candidate, picks one and settles its tile, groups and z chunks.
    fn choose(&self, gpu: Option<&GpuInfo>) -> Result<Choice> {
        if self.b.kernel.is_2d() {
            return self.choose_plane(gpu);
        }
        if self.b.kernel.wave().is_some() {
            return self.choose_wave(gpu);
        }
        let gpu_only = self.gpu_only_storage(gpu)?;
        let mut candidates = vec![self.input.naive()];
        for d in 1..=PLANNER_MAX_DIM_T.max(self.b.dim_t.unwrap_or(1)) {
            candidates.extend(self.input.best_blocked(d, self.b.tile, self.tile_threads));
        }
        if gpu_only {
            candidates.clear();
        }
        let best_cpu_dim_t =
            best(candidates.iter().filter(|c| c.engine == Engine::Blocked)).map_or(1, |c| c.dim_t);
        let gpu_blocked = match (gpu, &self.b.kernel) {
            (Some(info), Kernel::Lbm(_)) => self.lattice_gpu(info, &mut candidates)?,
            (Some(info), Kernel::Stencil(s)) => {
                self.stencil_gpu(info, s.is_box(), &mut candidates)?
            }
            _ => Vec::new(),
        };
        let chosen = self.pick(&candidates, &gpu_blocked, best_cpu_dim_t)?;
        Ok(self.settle(chosen, candidates))
    }

    /// Whether the kernel runs on the GPU engines only (a lattice in 16-bit storage); fails
    /// when it does and the plan fixes a CPU engine or no GPU is available.
    fn gpu_only_storage(&self, gpu: Option<&GpuInfo>) -> Result<bool> {
        let Some(storage) = self
            .b
            .kernel
            .lbm()
            .map(|k| k.storage)
            .filter(|s| s.is_16_bit())
        else {
            return Ok(false);
        };
        // Without a GPU no engine can take it: said first, whatever engine was named.
        if gpu.is_none() {
            return Err(Error::InvalidPlan(format!(
                "{storage} storage runs on the GPU lattice engines and no GPU is available \
                 (`stencil35d probe` says why); use native storage on the CPU"
            )));
        }
        if let Some(e) = self.b.engine.filter(|e| !e.is_gpu()) {
            return Err(Error::InvalidPlan(format!(
                "{storage} storage runs on the GPU lattice engines; '{e}' keeps the lattice's \
                 own precision: choose gpu-naive, or native storage"
            )));
        }
        Ok(true)
    }

    /// The 2D kernels' choice ([`super::plane_model`]): the naive sweep, the blocked engine at
    /// each `dim_t` (stencils) or with its row blocking (convolutions), and the GPU engines.
    fn choose_plane(&self, gpu: Option<&GpuInfo>) -> Result<Choice> {
        let (b, input) = (self.b, &self.input);
        let dim_ts: Vec<usize> = match (b.kernel.stencil2().is_some(), b.dim_t) {
            (true, Some(d)) => vec![d],
            (true, None) => (1..=PLANE_MAX_DIM_T).collect(),
            (false, _) => vec![1],
        };
        let mut candidates = vec![input.plane_naive()];
        if b.engine == Some(Engine::Reference) {
            candidates.push(input.plane_reference());
        }
        if b.kernel.stencil2().is_some() {
            for &d in &dim_ts {
                let tile = b.tile.unwrap_or_else(|| input.plane_tile(d));
                candidates.extend(input.plane_blocked(d, tile));
            }
        } else {
            candidates.push(input.plane_filter_blocked(b.tile));
        }
        if let Some(info) = gpu {
            candidates.extend(input.plane_gpu(info, &dim_ts));
        }
        let allowed = |c: &&Candidate| match b.engine {
            Some(e) => c.engine == e,
            None if b.dim_t.is_some() || b.tile.is_some() => c.engine.is_blocked(),
            None => c.engine != Engine::Reference,
        };
        let chosen = best(candidates.iter().filter(allowed))
            .cloned()
            .ok_or_else(|| {
                let dim_t = b
                    .dim_t
                    .map_or(String::new(), |d| format!(" with dim_t {d}"));
                let tile = b
                    .tile
                    .map_or(String::new(), |[x, y]| format!(" and tile {x}x{y}"));
                // The one way a fixed stencil tile leaves no output: too narrow for its halos.
                let why = match (b.kernel.stencil2(), b.tile) {
                    (Some(s), Some([w, _])) => {
                        let halos = 2 * s.radius() * dim_ts.iter().min().copied().unwrap_or(1);
                        if w <= halos {
                            format!(
                                ": a tile's width counts its halos, so it must exceed 2·R·dim_t \
                                 = {halos} columns"
                            )
                        } else {
                            String::new()
                        }
                    }
                    _ => String::new(),
                };
                Error::InvalidPlan(format!(
                    "no {} configuration runs {} on a {}x{} grid{dim_t}{tile}{why}",
                    b.engine.map_or("blocked".to_string(), |e| e.to_string()),
                    b.kernel,
                    b.dims[0],
                    b.dims[1],
                ))
            })?;
        Ok(Choice {
            tile: chosen.tile,
            tile_threads: self.threads,
            z_chunks: 1,
            chosen,
            candidates,
            threads: self.threads,
            cache_bytes: self.input.cache_bytes,
        })
    }

    /// The wave equation's choice ([`super::wave_model`], [`super::wave_gpu`]): the naive
    /// sweep or the blocked engine at each `dim_t`, on the CPU and on the GPU.
    fn choose_wave(&self, gpu: Option<&GpuInfo>) -> Result<Choice> {
        let (b, input) = (self.b, &self.input);
        let rigid = b.kernel.wave().is_some_and(|w| w.has_rigid_faces());
        if let Some(w) = b.kernel.wave() {
            w.validate_dims(b.dims)?;
        }
        if let Some(d) = b.dim_t.filter(|&d| rigid && d > 1) {
            return Err(Error::InvalidPlan(format!(
                "a wave kernel with a rigid face runs one step per pass (the mirror in its \
                 boundary layer is refilled between steps): dim_t {d} cannot run it; leave \
                 dim_t to the planner or use 1"
            )));
        }
        if let Some(n) = b.tile_threads.filter(|&n| n > 1) {
            return Err(Error::InvalidPlan(format!(
                "the wave engines give each unit of a pass to one thread: {n} threads per tile \
                 group do not apply to a wave kernel"
            )));
        }
        let mut candidates = vec![input.wave_naive()];
        if b.engine == Some(Engine::Reference) {
            candidates.push(input.wave_reference());
        }
        let most = |max: usize| if rigid { 1 } else { max };
        let dim_ts: Vec<usize> = match b.dim_t {
            Some(d) => vec![d],
            None => (1..=most(WAVE_MAX_DIM_T)).collect(),
        };
        for &d in &dim_ts {
            candidates.extend(input.wave_blocked(d, b.tile));
        }
        if let Some(info) = gpu {
            let gpu_dim_ts: Vec<usize> = match b.dim_t {
                Some(d) => vec![d],
                None => (1..=most(WAVE_GPU_MAX_DIM_T)).collect(),
            };
            let named = b.engine == Some(Engine::GpuBlocked);
            let shape = b.gpu_shape.as_ref();
            candidates.extend(input.wave_gpu(info, &gpu_dim_ts, shape, named));
        }
        let allowed = |c: &&Candidate| match b.engine {
            Some(e) => c.engine == e,
            None if b.gpu_shape.is_some() => c.engine == Engine::GpuBlocked,
            None if b.tile.is_some() || b.z_chunks.is_some() => c.engine == Engine::Blocked,
            None if b.dim_t.is_some() => c.engine.is_blocked(),
            None => c.engine != Engine::Reference,
        };
        let chosen = best(candidates.iter().filter(allowed))
            .cloned()
            .ok_or_else(|| {
                if gpu.is_none() && (b.gpu_shape.is_some() || b.engine == Some(Engine::GpuBlocked))
                {
                    return no_gpu_blocked(b);
                }
                let mut fixed = Vec::new();
                fixed.extend(b.dim_t.map(|d| format!("dim_t {d}")));
                fixed.extend(b.tile.map(|[x, y]| format!("tile {x}x{y}")));
                let with = match fixed.is_empty() {
                    true => String::new(),
                    false => format!(" with {}", fixed.join(" and ")),
                };
                let [nx, ny, nz] = b.dims;
                Error::InvalidPlan(format!(
                    "no {} configuration runs {} on a {nx}x{ny}x{nz} grid{with}",
                    b.engine.map_or("blocked".to_string(), |e| e.to_string()),
                    b.kernel,
                ))
            })?;
        // A user's count above the updated planes is clamped, as for the stencils.
        let planes = b.dims[2]
            .saturating_sub(2 * b.kernel.fixed_boundary())
            .max(1);
        let z_chunks = match chosen.engine {
            Engine::Blocked => b.z_chunks.map_or_else(
                || input.wave_chunks(chosen.dim_t, chosen.tile),
                |n| n.min(planes),
            ),
            _ => 1,
        };
        Ok(Choice {
            tile: chosen.tile,
            tile_threads: 1,
            z_chunks,
            chosen,
            candidates,
            threads: self.threads,
            cache_bytes: self.input.cache_bytes,
        })
    }

    /// The blocked CPU candidate at `dim_t` (the best `dim_t` when `None`) with the user's tile
    /// or the model's, or why there is none.
    fn cpu_blocked(&self, dim_t: Option<usize>, best_dim_t: usize) -> Result<Candidate> {
        let dim_t = dim_t.unwrap_or(best_dim_t);
        let tile = self.b.tile.unwrap_or_else(|| {
            self.input
                .group_tile(dim_t, self.tile_threads.unwrap_or(self.threads))
        });
        let full_x = self.input.full(0, dim_t);
        if self.b.kernel.periodic()[0] && tile[0] < full_x {
            return Err(Error::InvalidPlan(format!(
                "a periodic x axis needs full-width tiles: the tile's x side must be at \
                 least nx + 2·R·dim_t = {full_x}, not {}",
                tile[0]
            )));
        }
        let r = self.input.cost.radius;
        self.input
            .best_blocked(dim_t, self.b.tile, self.tile_threads)
            .ok_or_else(|| {
                Error::InvalidPlan(format!(
                    "a {}x{} tile leaves no valid output with dim_t = {dim_t} and radius {r}: each side must exceed 2·R·dim_t = {}",
                    tile[0],
                    tile[1],
                    2 * r * dim_t
                ))
            })
    }

    /// The lattice's GPU candidate (gpu-naive) added to `candidates` (there is no gpu-blocked
    /// lattice engine, see [`PlanBuilder::resolve_in_place`]).
    fn lattice_gpu(
        &self,
        info: &GpuInfo,
        candidates: &mut Vec<Candidate>,
    ) -> Result<Vec<Candidate>> {
        let b = self.b;
        if b.tile.is_some() && b.engine.is_some_and(|e| e.is_gpu()) {
            return Err(Error::InvalidPlan(
                "tiles apply to the CPU engines and GPU stencils; the GPU lattice kernels \
                 choose their own"
                    .into(),
            ));
        }
        if b.gpu_shape.is_some() {
            return Err(Error::InvalidPlan(
                "GPU launch shapes apply to stencils; the lattice kernels choose their own".into(),
            ));
        }
        let gm = GpuModel {
            cost: KernelCost {
                radius: 0,
                ..self.input.cost
            },
            boxed: false,
            dtype: b.dtype,
            dims: b.dims,
            gpu: info,
            one_launch: true,
        };
        candidates.push(gm.lbm_naive());
        Ok(Vec::new())
    }

    /// The stencil's GPU candidates added to `candidates` (gpu-naive, and the gpu-blocked
    /// shapes shown); returns the gpu-blocked ones in the model's (or the tuning's) order.
    fn stencil_gpu(
        &self,
        info: &GpuInfo,
        boxed: bool,
        candidates: &mut Vec<Candidate>,
    ) -> Result<Vec<Candidate>> {
        let b = self.b;
        if let Some(t) = b.tile.filter(|t| t[0] % 32 != 0) {
            if b.engine == Some(Engine::GpuBlocked) {
                return Err(Error::InvalidPlan(format!(
                    "a GPU tile's width must be a multiple of the 32-thread warp, got {}",
                    t[0]
                )));
            }
        }
        let gm = GpuModel {
            cost: self.input.cost,
            boxed,
            dtype: b.dtype,
            dims: b.dims,
            gpu: info,
            one_launch: b.engine != Some(Engine::GpuBlocked),
        };
        candidates.push(gm.naive());
        let mut gpu_blocked = match b.gpu_shape {
            Some(shape) => vec![self.fixed_shape(&gm, shape)?],
            None => gm.search(b.dim_t, b.tile),
        };
        let mut extra = 0;
        if b.autotune > 0 {
            if b.gpu_shape.is_none() {
                let beyond = gm.search_beyond_estimate(b.dim_t, b.tile);
                extra = tune::insert_beyond(&mut gpu_blocked, &beyond, b.autotune);
            }
            tune::tune(
                &b.kernel,
                b.dtype,
                b.dims,
                &mut gpu_blocked,
                b.autotune,
                extra,
            )?;
        }
        let shown = GPU_CANDIDATES_SHOWN.max(b.autotune.saturating_add(extra));
        candidates.extend(gpu_blocked.iter().take(shown).cloned());
        Ok(gpu_blocked)
    }

    /// The gpu-blocked candidate of the user's launch `shape`, or why it cannot run.
    fn fixed_shape(&self, gm: &GpuModel<'_>, shape: GpuShape) -> Result<Candidate> {
        if self.b.engine.is_some_and(|e| e != Engine::GpuBlocked) {
            return Err(Error::InvalidPlan(
                "a GPU launch shape applies to the gpu-blocked engine".into(),
            ));
        }
        let dim_t = self.b.dim_t.unwrap_or(1);
        let blocked = BlockedShape {
            dim_t,
            bx: shape.block[0],
            by: shape.block[1],
            ry: shape.ry,
            rx: shape.rx,
            skew: shape.skew,
        };
        let r = self.input.cost.radius;
        gm.blocked_forced(blocked, shape.stream_block).ok_or_else(|| {
            Error::InvalidPlan(format!(
                "GPU shape {shape:?} with dim_t = {dim_t}: the block must have 32..=1024 threads, a width that is a multiple of 32 (exactly 32 with cells in x, rx, which only star stencils take, with at least R cells per thread in y), tiles wider and taller than 2·R·dim_t = {}, a stream block of at least one plane, fit in shared memory and keep every thread's values within 1.75x its share of the register file, as estimated (fewer threads or cells per thread, or a smaller dim_t, need fewer)",
                2 * r * dim_t
            ))
        })
    }

    /// The configuration to run: the user's fixed engine, a blocked one where the user fixed a
    /// blocked engine's parameter, else the best prediction (or the tuning's winner).
    fn pick(
        &self,
        candidates: &[Candidate],
        gpu_blocked: &[Candidate],
        best_cpu_dim_t: usize,
    ) -> Result<Candidate> {
        let b = self.b;
        let best_gpu_blocked = || {
            gpu_blocked
                .first()
                .cloned()
                .ok_or_else(|| no_gpu_blocked(b))
        };
        Ok(match b.engine {
            Some(Engine::Reference) => self.input.reference(),
            Some(Engine::Naive) => self.input.naive(),
            Some(Engine::Blocked) => self.cpu_blocked(b.dim_t, best_cpu_dim_t)?,
            Some(Engine::GpuNaive) => candidates
                .iter()
                .find(|c| c.engine == Engine::GpuNaive)
                .cloned()
                .expect("added above"),
            Some(Engine::GpuBlocked) => best_gpu_blocked()?,
            None if b.gpu_shape.is_some() => best_gpu_blocked()?,
            None if b.dim_t.is_some()
                || b.tile.is_some()
                || self.tile_threads.is_some()
                || b.z_chunks.is_some() =>
            {
                // Overrides of dim_t or tile ask for a blocked engine: the better of the two.
                match (
                    self.cpu_blocked(b.dim_t, best_cpu_dim_t),
                    best_gpu_blocked(),
                ) {
                    (Ok(c), Ok(g)) => {
                        if g.predicted_mups > c.predicted_mups {
                            g
                        } else {
                            c
                        }
                    }
                    (Ok(c), Err(_)) => c,
                    (Err(_), Ok(g)) => g,
                    (Err(e), Err(_)) => return Err(e),
                }
            }
            None => {
                let pick = best(candidates.iter())
                    .cloned()
                    .expect("the naive candidate always exists");
                tuned_choice(pick, gpu_blocked.first())
            }
        })
    }

    /// The tile, tile groups and z chunks the `chosen` configuration runs with.
    fn settle(&self, chosen: Candidate, candidates: Vec<Candidate>) -> Choice {
        let blocked = chosen.engine == Engine::Blocked;
        let tile = if blocked {
            // A tile larger than the grid needs covers it once; report what will be used.
            [
                chosen.tile[0].min(self.input.full(0, chosen.dim_t)),
                chosen.tile[1].min(self.input.full(1, chosen.dim_t)),
            ]
        } else {
            chosen.tile
        };
        let tile_threads = if blocked {
            chosen.tile_threads.clamp(1, self.threads)
        } else {
            self.threads
        };
        let z_chunks = if blocked && chosen.dim_t > 1 {
            let groups = self.threads.div_ceil(tile_threads);
            let fixed = self.b.kernel.fixed_boundary();
            self.b
                .z_chunks
                .unwrap_or_else(|| self.input.z_chunks(chosen.dim_t, tile, groups))
                .min(self.b.dims[2] - 2 * fixed)
                .max(1)
        } else {
            1
        };
        Choice {
            chosen,
            candidates,
            threads: self.threads,
            tile,
            tile_threads,
            z_chunks,
            cache_bytes: self.input.cache_bytes,
        }
    }
}

/// The model's `pick`, or the tuning's `winner` (the fastest measured gpu-blocked shape, first
/// after tuning): the winner stands for the gpu-blocked engine when the model picks that engine,
/// and beats any other pick whose predicted rate it measured above, so a tuned plan follows
/// the timings rather than the model's first shape.
pub(super) fn tuned_choice(pick: Candidate, winner: Option<&Candidate>) -> Candidate {
    match winner.and_then(|w| w.measured_mups.map(|m| (w, m))) {
        Some((w, measured))
            if pick.engine == Engine::GpuBlocked || measured > pick.predicted_mups =>
        {
            w.clone()
        }
        _ => pick,
    }
}

/// The candidate with the highest predicted rate. Near-ties (within 2%) go to an unblocked
/// engine when one is among them (nothing to gain from blocking), else to the most time steps
/// per pass: past the compute bound the model sees every `dim_t` alike, but the measurements
/// do not (star7 `f32` 512³ on 2 cores: `dim_t` 2 ran at 2,500-3,000 MUPS, 4-6 at 3,700-4,300;
/// on 16 cores `dim_t` 3 beat 2), so the margin against the memory roof is worth keeping.
pub(super) fn best<'a>(candidates: impl Iterator<Item = &'a Candidate>) -> Option<&'a Candidate> {
    let all: Vec<&Candidate> = candidates.collect();
    let top = all
        .iter()
        .map(|c| c.predicted_mups)
        .fold(f64::NAN, f64::max);
    let near: Vec<&Candidate> = all
        .into_iter()
        .filter(|c| c.predicted_mups >= 0.98 * top)
        .collect();
    let rate = |a: &&&Candidate, b: &&&Candidate| a.predicted_mups.total_cmp(&b.predicted_mups);
    let unblocked = near.iter().filter(|c| !c.engine.is_blocked()).max_by(rate);
    // The deeper-is-better evidence is the CPU engine's; GPU shapes keep the model's order.
    let top = near.iter().max_by(rate).copied();
    let deepest_cpu = || {
        near.iter()
            .filter(|c| c.engine == Engine::Blocked)
            .max_by(|a, b| a.dim_t.cmp(&b.dim_t).then(rate(a, b)))
    };
    match (unblocked, top) {
        (Some(u), _) => Some(*u),
        (None, Some(t)) if t.engine == Engine::Blocked => deepest_cpu().copied(),
        (None, t) => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plane::{Filter2, Stencil2};
    use crate::wave::WaveKernel;

    /// A tile group larger than the plan's threads is narrowed to them, and the plan says so.
    #[test]
    fn a_tile_group_beyond_the_threads_is_narrowed_with_a_note() {
        let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [40; 3])
            .engine(Engine::Blocked)
            .threads(1)
            .tile_threads(2)
            .build()
            .unwrap();
        assert_eq!(plan.tile_threads(), 1);
        let note = plan.warnings().iter().find(|w| w.contains("tile group"));
        assert!(
            note.is_some_and(|w| w.contains("the plan's 1 thread:")),
            "{:?}",
            plan.warnings()
        );
    }

    /// The GPU engines' one-step launches are checked per kernel without a device: 8 rows a
    /// block along y for stencils, waves and 2D kernels (524,280 rows at most), 8 planes a
    /// block row for a rigid face's mirror; an automatic plan then leaves the GPU out with the
    /// reason, and a plan naming a GPU engine keeps it.
    #[test]
    fn grids_past_the_launch_limits_leave_the_gpu_out() {
        let launches =
            |kernel: Kernel, dims| PlanBuilder::new(kernel, DType::F32, dims).gpu_launches();
        let star = || Kernel::from(Stencil::seven_point(0.4, 0.1));
        assert!(launches(star(), [3, 524_280, 3]).is_ok());
        let Err(Error::InvalidPlan(m)) = launches(star(), [3, 524_281, 3]) else {
            panic!("a 3 x 524281 x 3 stencil grid must be refused");
        };
        assert!(m.contains("65536 blocks along y"), "{m}");
        let wave = WaveKernel::new(10.0, 1e-3, 2000.0);
        assert!(launches(wave.clone().into(), [48, 524_280, 48]).is_ok());
        assert!(launches(wave.clone().into(), [48, 524_281, 48]).is_err());
        // A rigid x face's mirror launch takes 8 planes a block row.
        assert!(launches(wave.clone().into(), [48, 48, 524_281]).is_ok());
        let rigid = wave.with_face(0, 0, crate::wave::Face::Rigid);
        assert!(launches(rigid.clone().into(), [48, 48, 524_280]).is_ok());
        assert!(launches(rigid.into(), [48, 48, 524_281]).is_err());
        let plane = Kernel::from(Stencil2::from_name("star2d:1").unwrap());
        assert!(launches(plane.clone(), [16, 524_280, 1]).is_ok());
        assert!(launches(plane, [16, 524_281, 1]).is_err());
        let filter = Kernel::from(Filter2::from_name("dense:3x3").unwrap());
        assert!(launches(filter, [16, 600_000, 1]).is_err());

        let gpu = &GpuInfo::h200_for_tests();
        let refused = || Err(Error::InvalidPlan(format!("too many blocks{CPU_ADVICE}")));
        let (info, why) = gpu_verdict(Some(gpu), refused(), false);
        assert_eq!(
            (info.is_none(), why.as_deref()),
            (true, Some("planned on the CPU: too many blocks"))
        );
        // A named GPU engine or shape keeps the GPU (its blocks may be split over ranks).
        let (info, why) = gpu_verdict(Some(gpu), refused(), true);
        assert!(info.is_some() && why.is_none());
        let (info, why) = gpu_verdict(Some(gpu), Ok(()), false);
        assert!(info.is_some() && why.is_none());
        let (info, why) = gpu_verdict(None, refused(), false);
        assert!(info.is_none() && why.is_none());
    }
}
