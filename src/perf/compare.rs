//! [`compare`]: every kernel on every engine of both backends at one size, in one process, with
//! each result placed against the machine's roofline and against the other engines.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::timing::time_runs_within;
use super::workload::cavity_lattice;
use crate::lbm::LbmKernel;
use crate::plan::Bound;
use crate::plane::{Filter2, Stencil2};
use crate::{
    DType, Engine, Error, Grid, Grid2, Kernel, Machine, Plan, PlanBuilder, Real, Result, Solver,
    Stencil,
};

/// Timed runs per engine that `compare` takes the median of by default (after a short
/// warm-up), within [`DEFAULT_BUDGET_SECONDS`].
pub const DEFAULT_REPEAT: usize = 3;

/// Seconds of timed runs per engine after which `compare` stops repeating by default: slow
/// engines (the lattice at 256³ on two cores) are timed once, which keeps
/// `compare --size 256 --steps 20` well within two minutes on two cores.
pub const DEFAULT_BUDGET_SECONDS: f64 = 3.0;

/// The kernels `compare` runs by default, by name.
pub const DEFAULT_KERNELS: [&str; 5] = ["star7", "box27", "star:4", "d3q19", "wave:8"];

/// The engines `compare` runs by default: both fast engines of each backend (the scalar
/// `reference` engine is a correctness oracle, far too slow to be worth timing).
pub const DEFAULT_ENGINES: [Engine; 4] = [
    Engine::Naive,
    Engine::Blocked,
    Engine::GpuNaive,
    Engine::GpuBlocked,
];

/// The kernel called `name`: a stencil name (`star7`, `box27`, `star:R`, `box:R`), `d3q19`
/// (also `lbm`: a closed lattice without body force, as in [`cavity_lattice`]), the wave
/// equation of space order O (`wave:O`, [`super::bench_wave_kernel`] with 20-cell layers), a
/// 2D stencil (`star2d:R`, `box2d:R`) or a convolution with a dense benchmark filter
/// (`conv2d:KxL`).
///
/// ```
/// use stencil35d::perf::kernel_by_name;
/// assert_eq!(kernel_by_name("star:4").unwrap().name(), "star:4");
/// assert_eq!(kernel_by_name("d3q19").unwrap().name(), "d3q19");
/// assert_eq!(kernel_by_name("conv2d:5x5").unwrap().name(), "conv2d:5x5");
/// assert_eq!(kernel_by_name("wave:8").unwrap().name(), "wave:8");
/// assert!(kernel_by_name("star:9").is_err());
/// assert!(kernel_by_name("heat").unwrap_err().to_string().contains("wave:O"));
/// ```
pub fn kernel_by_name(name: &str) -> Result<Kernel> {
    let name = name.trim();
    if matches!(name.to_ascii_lowercase().as_str(), "d3q19" | "lbm") {
        return Ok(Kernel::Lbm(LbmKernel {
            periodic: [false; 3],
            forced: false,
            storage: crate::lbm::Storage::Native,
        }));
    }
    if name.starts_with("star2d") || name.starts_with("box2d") {
        return Stencil2::from_name(name).map(Kernel::Stencil2);
    }
    if let Some(order) = name.strip_prefix("wave:") {
        let order = order.parse().map_err(|_| {
            crate::Error::InvalidArgument(format!(
                "kernel '{name}': wave:O needs a space order O of 2, 4, 6 or 8"
            ))
        })?;
        let kernel = super::bench_wave_kernel(order, crate::wave::DEFAULT_PML_WIDTH);
        kernel.validate()?;
        return Ok(Kernel::Wave(kernel));
    }
    if let Some(size) = name.strip_prefix("conv2d:") {
        return conv2d_filter(size).map(Kernel::Filter);
    }
    if !(name.starts_with("star") || name.starts_with("box")) {
        return Err(crate::Error::InvalidArgument(format!(
            "unknown kernel '{name}': expected star7, box27, star:R, box:R, d3q19, wave:O, \
             star2d:R, box2d:R or conv2d:KxL"
        )));
    }
    Stencil::from_name(name).map(Kernel::Stencil)
}

/// The dense filter of the kernel `conv2d:SIZE` (`SIZE` as `dense:KxL` takes it), its errors
/// naming the kernel as written.
pub fn conv2d_filter(size: &str) -> crate::Result<Filter2> {
    Filter2::from_name(&format!("dense:{size}")).map_err(|e| match e {
        crate::Error::InvalidArgument(m) => crate::Error::InvalidArgument(
            m.replace(
                &format!("filter 'dense:{size}'"),
                &format!("kernel 'conv2d:{size}'"),
            )
            .replace("dense:KxL", "conv2d:KxL"),
        ),
        e => e,
    })
}

/// The 2D size with about as many cells as the 3D size `dims`: the square of side
/// `√(nx·ny·nz)` (4096² for 256³), so 2D and 3D rows of one comparison move as many bytes.
pub fn plane_dims_for(dims: [usize; 3]) -> [usize; 2] {
    // In f64: a product of sizes no grid could have must not overflow here.
    let cells: f64 = dims.iter().map(|&d| d as f64).product();
    let side = cells.sqrt().round().max(1.0) as usize;
    [side, side]
}

/// What to compare: kernels × engines on one grid size, precision and step count.
#[derive(Clone, Debug)]
pub struct CompareConfig {
    /// Grid or lattice size.
    pub dims: [usize; 3],
    /// Size of the 2D kernels' grids ([`plane_dims_for`] the 3D size by default).
    pub plane_dims: [usize; 2],
    /// Time steps per timed run.
    pub steps: usize,
    /// Precision.
    pub dtype: DType,
    /// Kernels, in table order.
    pub kernels: Vec<Kernel>,
    /// Engines, in table order; engines this machine or library cannot run for a kernel get a
    /// "not available" row.
    pub engines: Vec<Engine>,
    /// Most timed runs per engine (the median is reported).
    pub repeat: usize,
    /// Seconds of timed runs after which an engine is not repeated further.
    pub budget_seconds: f64,
    /// CPU worker threads (default: all cores).
    pub threads: Option<usize>,
    /// Seed of the random initial data.
    pub seed: u64,
}

impl CompareConfig {
    /// The default comparison ([`DEFAULT_KERNELS`] × [`DEFAULT_ENGINES`], `f32`,
    /// [`DEFAULT_REPEAT`] runs) at `dims` for `steps` steps.
    pub fn new(dims: [usize; 3], steps: usize) -> CompareConfig {
        CompareConfig {
            dims,
            plane_dims: plane_dims_for(dims),
            steps,
            dtype: DType::F32,
            kernels: DEFAULT_KERNELS
                .iter()
                .map(|k| kernel_by_name(k).expect("the default kernels exist"))
                .collect(),
            engines: DEFAULT_ENGINES.to_vec(),
            repeat: DEFAULT_REPEAT,
            budget_seconds: DEFAULT_BUDGET_SECONDS,
            threads: None,
            seed: 1,
        }
    }
}

/// Which processor an engine runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The host CPU.
    Cpu,
    /// The CUDA GPU.
    Gpu,
}

impl Backend {
    /// The backend `engine` runs on.
    pub fn of(engine: Engine) -> Backend {
        if engine.is_gpu() {
            Backend::Gpu
        } else {
            Backend::Cpu
        }
    }

    /// `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        }
    }
}

/// A roofline: the peak work rate and the memory bandwidth of one processor.
///
/// On the CPU, work is counted in the 3.5D paper's operations (arithmetic, loads and stores:
/// the planner's model); on the GPU in floating-point operations (an FMA is two).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Roof {
    /// The processor, as the planner names it.
    pub device: String,
    /// Peak work rate for the compared precision, 10⁹ operations per second.
    pub peak_gops: f64,
    /// Memory bandwidth the planner uses (measured), GB/s.
    pub bandwidth_gbs: f64,
}

impl Roof {
    /// The attainable work rate at `intensity` operations per byte of memory traffic.
    pub fn attainable_gops(&self, intensity: f64) -> f64 {
        self.peak_gops.min(self.bandwidth_gbs * intensity)
    }
}

/// One engine's measured speed on one kernel, and where it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Worker threads (CPU engines).
    pub threads: usize,
    /// Time steps per pass over memory (1 for unblocked engines).
    pub dim_t: usize,
    /// Loaded tile (blocked engines) or the whole XY plane.
    pub tile: [usize; 2],
    /// Timed runs the median is of.
    pub runs: usize,
    /// Median computation seconds of one timed run.
    pub seconds: f64,
    /// Host-device copy seconds of that run (0 on the CPU).
    pub transfer_seconds: f64,
    /// Cell updates of one timed run.
    pub updates: u64,
    /// Million updates per second (MLUPS for the lattice).
    pub mups: f64,
    /// 10⁹ floating-point operations per second.
    pub gflops: f64,
    /// Effective bandwidth: the traffic of an unblocked sweep for the same updates, GB/s.
    pub effective_gbs: f64,
    /// The planner's prediction, MUPS.
    pub predicted_mups: f64,
    /// Operations (see [`Roof`]) per byte of memory traffic, counting a blocked engine's traffic
    /// as one read and write per `dim_t` steps.
    pub intensity: f64,
    /// Achieved work rate, 10⁹ operations per second (see [`Roof`]).
    pub achieved_gops: f64,
    /// The roofline's limit for this engine: min(compute, dim_t × memory), MUPS.
    pub roofline_mups: f64,
    /// Which roof is the lower one.
    pub bound: Bound,
    /// `mups / roofline_mups`.
    pub roofline_fraction: f64,
    /// Speed over the naive engine of the same backend on this kernel.
    pub speedup_vs_naive: Option<f64>,
    /// GPU engines: speed over the fastest CPU engine on this kernel, computation only.
    pub gpu_speedup: Option<f64>,
    /// GPU engines: the same counting the host-device transfers of the run.
    pub gpu_speedup_with_transfer: Option<f64>,
}

/// One line of the comparison: a kernel on an engine, measured or not available.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Kernel name (`star7`, `box27`, `star:4`, `d3q19`, ...).
    pub kernel: String,
    /// Engine.
    pub engine: Engine,
    /// Backend of the engine.
    pub backend: Backend,
    /// The measurement; `None` when the engine could not run this kernel here.
    pub measured: Option<Measured>,
    /// Why there is no measurement (the library's error), or empty.
    pub note: String,
}

/// The result of [`compare`]: the rooflines and one row per kernel and engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Grid or lattice size.
    pub dims: [usize; 3],
    /// Size of the 2D kernels' grids.
    #[serde(default)]
    pub plane_dims: [usize; 2],
    /// Time steps per timed run.
    pub steps: usize,
    /// Precision.
    pub dtype: DType,
    /// Most timed runs per engine.
    pub repeat: usize,
    /// Seconds of timed runs after which an engine was not repeated further.
    pub budget_seconds: f64,
    /// The CPU's roofline.
    pub cpu: Roof,
    /// The GPU's roofline, when there is a GPU.
    pub gpu: Option<Roof>,
    /// Kernel × engine results, kernels in the configured order.
    pub rows: Vec<CompareRow>,
    /// Wall-clock seconds the whole comparison took (set-up and warm-ups included).
    pub wall_seconds: f64,
    /// What a kernel was changed in to run at this size, one line per kernel changed, e.g.
    /// the wave equation's absorbing layers narrowed to fit a small grid.
    #[serde(default)]
    pub fitted: Vec<String>,
}

impl Comparison {
    /// The roofline of `backend`, if this machine has one.
    pub fn roof(&self, backend: Backend) -> Option<&Roof> {
        match backend {
            Backend::Cpu => Some(&self.cpu),
            Backend::Gpu => self.gpu.as_ref(),
        }
    }

    /// Rows that failed for a reason other than the engine being unavailable here.
    pub fn failures(&self) -> impl Iterator<Item = &CompareRow> {
        self.rows
            .iter()
            .filter(|r| r.measured.is_none() && r.note.starts_with(FAILED))
    }
}

/// How a row's note starts when the run failed (rather than being unsupported here).
const FAILED: &str = "failed: ";

/// Runs every configured kernel on every configured engine and measures it; `progress` sees
/// each row as it is finished. An engine the library or machine cannot provide for a kernel
/// (no GPU, no GPU engine for the lattice yet, a plan that does not fit) gives a row without a
/// measurement whose note holds the library's error; other failures give a note starting with
/// `failed:` (see [`Comparison::failures`]) and the comparison goes on.
///
/// Errors: zero steps or repeats, no kernels or engines, a grid too small for a kernel.
///
/// ```
/// use stencil35d::perf::{compare, CompareConfig};
/// use stencil35d::Engine;
/// let mut config = CompareConfig::new([16, 16, 16], 2);
/// config.engines = vec![Engine::Naive, Engine::Blocked];
/// let comparison = compare(&config, |_| {}).unwrap();
/// assert_eq!(comparison.rows.len(), 5 * 2);
/// assert!(comparison.rows.iter().all(|r| r.measured.as_ref().unwrap().mups > 0.0));
/// ```
pub fn compare(
    config: &CompareConfig,
    mut progress: impl FnMut(&CompareRow),
) -> Result<Comparison> {
    compare_with(config, &mut progress)
}

/// [`compare`] compiled once, in this crate: its engines are not compiled again in each crate
/// that calls it with a closure of its own.
#[inline(never)]
fn compare_with(
    config: &CompareConfig,
    progress: &mut dyn FnMut(&CompareRow),
) -> Result<Comparison> {
    match config.dtype {
        DType::F32 => compare_typed::<f32>(config, progress),
        DType::F64 => compare_typed::<f64>(config, progress),
    }
}

fn compare_typed<T: Real>(
    config: &CompareConfig,
    mut progress: &mut dyn FnMut(&CompareRow),
) -> Result<Comparison> {
    let start = Instant::now();
    if config.steps == 0 {
        return Err(Error::ZeroSteps);
    }
    if config.repeat == 0 || config.kernels.is_empty() || config.engines.is_empty() {
        return Err(Error::InvalidArgument(
            "compare needs at least one kernel, one engine and one repeat".into(),
        ));
    }
    if config.threads == Some(0) {
        return Err(Error::InvalidArgument(
            "compare needs at least one thread, got 0".into(),
        ));
    }
    if !(config.budget_seconds.is_finite() && config.budget_seconds >= 0.0) {
        return Err(Error::InvalidArgument(format!(
            "compare needs a finite, non-negative time budget, got {} s",
            config.budget_seconds
        )));
    }
    let machine = Machine::detect();
    let threads = config.threads.unwrap_or(machine.cores);
    // Both roofs for the threads the engines run: fewer cores than the machine's draw less
    // than its all-core bandwidth.
    let cpu = Roof {
        device: format!(
            "{} ({})",
            machine.cpu_model,
            crate::error::count(threads, "thread")
        ),
        peak_gops: machine.peak_gops(config.dtype, threads),
        bandwidth_gbs: machine.bandwidth_for(threads),
    };
    // The GPU is opened only when a GPU engine is asked for.
    let gpu = if config.engines.iter().any(|e| e.is_gpu()) {
        crate::gpu::detect_gpu().ok().map(|g| Roof {
            device: g.name.clone(),
            peak_gops: g.peak_gflops(config.dtype),
            bandwidth_gbs: g.bandwidth_gbs,
        })
    } else {
        None
    };
    let mut comparison = Comparison {
        dims: config.dims,
        plane_dims: config.plane_dims,
        steps: config.steps,
        dtype: config.dtype,
        repeat: config.repeat,
        budget_seconds: config.budget_seconds,
        cpu,
        gpu,
        rows: Vec::new(),
        wall_seconds: 0.0,
        fitted: Vec::new(),
    };
    // Fail early, before any timing, on a size a kernel cannot use or a grid that does not
    // fit in memory: a late kernel's error would otherwise come after minutes of runs.
    // Of several kernels that do not fit, the one that fits the smallest grid names it, so
    // that the size it advises fits every kernel.
    let mut refused: Option<Error> = None;
    for kernel in &config.kernels {
        let dims = config.dims_of(kernel);
        PlanBuilder::new(fitted(kernel, dims), config.dtype, dims)
            .engine(Engine::Reference)
            .build()?;
        if let Err(e) = footprint(kernel, config.dtype).check_allocation(dims) {
            refused = Some(match refused {
                Some(first) => tighter(first, e),
                None => e,
            });
        }
    }
    if let Some(e) = refused {
        return Err(e);
    }
    for kernel in &config.kernels {
        let dims = config.dims_of(kernel);
        let asked = kernel;
        let kernel = &fitted(kernel, dims);
        comparison.fitted.extend(fit_note(asked, kernel, dims));
        let first = comparison.rows.len();
        let c = &mut comparison;
        match kernel {
            Kernel::Lbm(_) => {
                let input = cavity_lattice::<T>(dims, config.seed)?;
                measure_all(config, c, kernel, &input, &mut progress)
            }
            Kernel::Wave(w) => {
                let input = super::wave_shot::<T>(w.clone(), dims, config.seed)?;
                let kernel = Kernel::Wave(input.kernel().clone());
                measure_all(config, c, &kernel, &input, &mut progress)
            }
            _ if kernel.is_2d() => {
                let input = Grid2::<T>::random(config.plane_dims, 0.0, 1.0, config.seed)?;
                measure_all(config, c, kernel, &input, &mut progress)
            }
            _ => {
                let input = Grid::<T>::random(dims, 0.0, 1.0, config.seed)?;
                measure_all(config, c, kernel, &input, &mut progress)
            }
        }?;
        relate(&mut comparison.rows[first..]);
    }
    comparison.wall_seconds = start.elapsed().as_secs_f64();
    Ok(comparison)
}

/// Of two out-of-memory errors for grids of one shape (cubes, or squares), the one naming
/// the smaller largest grid; else the first.
fn tighter(first: Error, second: Error) -> Error {
    let named = |e: &Error| match e {
        Error::OutOfMemory { largest, plane, .. } => Some((*largest, *plane)),
        _ => None,
    };
    match (named(&first), named(&second)) {
        (Some((a, p)), Some((b, q))) if p == q && b < a => second,
        _ => first,
    }
}

/// What comparing `kernel` holds at once: the input and a working copy of its state, and a
/// CPU engine's scratch (a grid; for a lattice a copy of its populations; for a wavefield
/// three grids).
fn footprint(kernel: &Kernel, dtype: DType) -> crate::memory::Footprint {
    use crate::memory::Footprint;
    let footprint = match kernel {
        Kernel::Wave(_) => Footprint::grids(dtype, 2 * 4 + 3),
        Kernel::Lbm(_) => Footprint::lattice(dtype, 3, 2 * crate::lbm::LATTICE_NODE_BYTES),
        _ => Footprint::grids(dtype, 3),
    };
    footprint.with_label("in compare (input, working copy, scratch)")
}

/// `kernel` fitted to `dims`: the wave equation's absorbing layers narrowed to at most a
/// quarter of the shortest axis, or free faces where not even the narrowest layers fit, so
/// small comparisons run.
fn fitted(kernel: &Kernel, dims: [usize; 3]) -> Kernel {
    match kernel {
        Kernel::Wave(w) => {
            let mut w = w.clone();
            let shortest = dims.iter().copied().min().unwrap_or(0);
            let narrowest = w.radius() + crate::wave::MIN_DAMPED_CELLS;
            w.pml = w.pml.min(shortest / 4).max(narrowest);
            if 2 * w.pml > shortest {
                w.faces = [[crate::wave::Face::Free; 2]; 3];
            }
            Kernel::Wave(w)
        }
        other => other.clone(),
    }
}

/// What [`fitted`] changed in `asked` to make `kernel`, in words, or `None`.
fn fit_note(asked: &Kernel, kernel: &Kernel, [nx, ny, nz]: [usize; 3]) -> Option<String> {
    let (Kernel::Wave(a), Kernel::Wave(w)) = (asked, kernel) else {
        return None;
    };
    let name = asked.name();
    if w.faces != a.faces {
        return Some(format!(
            "{name}: every face free instead of absorbing layers, which do not fit {nx}x{ny}x{nz}"
        ));
    }
    (w.pml != a.pml).then(|| {
        format!(
            "{name}: absorbing layers {} cells wide instead of {} to fit {nx}x{ny}x{nz}",
            w.pml, a.pml
        )
    })
}

impl CompareConfig {
    /// The grid size `kernel` runs on: [`Self::plane_dims`] for 2D kernels.
    fn dims_of(&self, kernel: &Kernel) -> [usize; 3] {
        if kernel.is_2d() {
            [self.plane_dims[0], self.plane_dims[1], 1]
        } else {
            self.dims
        }
    }
}

/// Every configured engine on `kernel`, in order: each row shown to `progress` as it is
/// measured and added to `comparison`.
fn measure_all<S: crate::State + Clone>(
    config: &CompareConfig,
    comparison: &mut Comparison,
    kernel: &Kernel,
    input: &S,
    progress: &mut impl FnMut(&CompareRow),
) -> Result<()> {
    for &engine in &config.engines {
        let row = measure(config, comparison, kernel, engine, input)?;
        progress(&row);
        comparison.rows.push(row);
    }
    Ok(())
}

/// Times `engine` on a copy of `input`; unsupported combinations and failed runs become rows
/// without a measurement.
fn measure<S: crate::State + Clone>(
    config: &CompareConfig,
    comparison: &Comparison,
    kernel: &Kernel,
    engine: Engine,
    input: &S,
) -> Result<CompareRow> {
    let mut row = CompareRow {
        kernel: kernel.name(),
        engine,
        backend: Backend::of(engine),
        measured: None,
        note: String::new(),
    };
    let mut builder =
        PlanBuilder::new(kernel.clone(), config.dtype, config.dims_of(kernel)).engine(engine);
    if let Some(t) = config.threads.filter(|_| !engine.is_gpu()) {
        builder = builder.threads(t);
    }
    let outcome = builder.build().and_then(|plan| {
        let mut solver = Solver::new(plan);
        let mut state = input.clone();
        time_runs_within(
            &mut solver,
            &mut state,
            config.steps,
            config.repeat,
            config.budget_seconds,
        )
    });
    match outcome {
        Ok(timed) => {
            let roof = comparison
                .roof(row.backend)
                .ok_or_else(|| Error::NoGpu("a GPU engine ran without a GPU".into()))?;
            row.measured = Some(place(&timed.median, timed.seconds.len(), roof));
        }
        Err(e @ (Error::GridTooSmall { .. } | Error::ZeroSteps)) => return Err(e),
        Err(e) => row.note = note(&e),
    }
    Ok(row)
}

/// The note for an engine that could not run: "not available" for what the library or machine
/// does not provide, "failed" for anything else.
fn note(e: &Error) -> String {
    match e {
        Error::NoGpu(_)
        | Error::PlanMismatch(_)
        | Error::InvalidPlan(_)
        | Error::OutOfMemory { .. }
        | Error::GpuOutOfMemory { .. } => format!("not available: {e}"),
        _ => format!("{FAILED}{e}"),
    }
}

/// A run's figures placed against the roofline of its processor.
fn place(report: &crate::RunReport, runs: usize, roof: &Roof) -> Measured {
    let plan: &Plan = &report.plan;
    let cost = plan.kernel().cost(plan.dtype());
    let work = if report.engine.is_gpu() {
        cost.flops_per_update
    } else {
        cost.ops_per_update
    } as f64;
    let dim_t = if report.engine.is_blocked() {
        plan.dim_t()
    } else {
        1
    };
    let intensity = work * dim_t as f64 / cost.bytes_per_update as f64;
    let memory_mups = roof.bandwidth_gbs * intensity * 1e3 / work;
    let compute_mups = roof.peak_gops * 1e3 / work;
    let (roofline_mups, bound) = if memory_mups <= compute_mups {
        (memory_mups, Bound::Memory)
    } else {
        (compute_mups, Bound::Compute)
    };
    Measured {
        threads: plan.threads_computing(),
        dim_t,
        tile: plan.tile(),
        runs,
        seconds: report.seconds,
        transfer_seconds: report.transfer_seconds,
        updates: report.updates,
        mups: report.mups,
        gflops: report.gflops,
        effective_gbs: report.effective_gbs,
        predicted_mups: report.predicted_mups,
        intensity,
        achieved_gops: report.mups * work / 1e3,
        roofline_mups,
        bound,
        roofline_fraction: report.mups / roofline_mups,
        speedup_vs_naive: None,
        gpu_speedup: None,
        gpu_speedup_with_transfer: None,
    }
}

/// Fills in the speedups of one kernel's rows.
fn relate(rows: &mut [CompareRow]) {
    let mups_of = |rows: &[CompareRow], engine: Engine| {
        rows.iter()
            .find(|r| r.engine == engine)
            .and_then(|r| r.measured.as_ref())
            .map(|m| m.mups)
    };
    let cpu_naive = mups_of(rows, Engine::Naive);
    let gpu_naive = mups_of(rows, Engine::GpuNaive);
    let best_cpu = rows
        .iter()
        .filter(|r| r.backend == Backend::Cpu)
        .filter_map(|r| r.measured.as_ref())
        .map(|m| m.mups)
        .max_by(f64::total_cmp);
    for row in rows.iter_mut() {
        let Some(m) = row.measured.as_mut() else {
            continue;
        };
        let naive = match row.backend {
            Backend::Cpu => cpu_naive,
            Backend::Gpu => gpu_naive,
        };
        // A ratio that is not finite (a zero rate) is left out: JSON has no number for it.
        let finite = |v: f64| Some(v).filter(|v| v.is_finite());
        m.speedup_vs_naive = naive.and_then(|n| finite(m.mups / n));
        if row.backend == Backend::Gpu {
            if let Some(best) = best_cpu {
                m.gpu_speedup = finite(m.mups / best);
                // The best CPU engine's time for the same updates, against the GPU's time
                // including the copies of the state to the device and back.
                let cpu_seconds = m.updates as f64 / (best * 1e6);
                m.gpu_speedup_with_transfer =
                    finite(cpu_seconds / (m.seconds + m.transfer_seconds));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of the kernels refused, the one naming the smallest cube names it: that cube fits all.
    #[test]
    fn the_tightest_refusal_names_the_size() {
        let oom = |largest, plane| Error::OutOfMemory {
            what: format!("{largest}"),
            needed: 2,
            available: 1,
            largest,
            smallest: 1,
            plane,
        };
        let what = |e: Error| match e {
            Error::OutOfMemory { what, .. } => what,
            other => panic!("{other}"),
        };
        assert_eq!(what(tighter(oom(1225, false), oom(448, false))), "448");
        assert_eq!(what(tighter(oom(448, false), oom(1225, false))), "448");
        // A square is no advice for a cube.
        assert_eq!(what(tighter(oom(1225, false), oom(100, true))), "1225");
        assert!(matches!(
            tighter(Error::ZeroSteps, oom(3, false)),
            Error::ZeroSteps
        ));
    }

    /// Layers narrowed to a quarter of the shortest axis, and free faces where not even the
    /// narrowest fit, are both said; a kernel that fits as asked gets no note.
    #[test]
    fn a_fitted_wave_kernel_says_what_changed() {
        let wave = kernel_by_name("wave:8").unwrap();
        let note = |dims| fit_note(&wave, &fitted(&wave, dims), dims);
        assert_eq!(
            note([40, 48, 40]).as_deref(),
            Some("wave:8: absorbing layers 10 cells wide instead of 20 to fit 40x48x40")
        );
        assert!(note([14, 13, 12]).unwrap().contains("every face free"));
        assert_eq!(note([96, 96, 96]), None);
        let star = kernel_by_name("star7").unwrap();
        assert_eq!(fit_note(&star, &fitted(&star, [8; 3]), [8; 3]), None);
    }
}
