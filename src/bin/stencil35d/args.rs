//! Argument types shared by the subcommands: kernels, sizes, tiles and engine lists.

use clap::Args;
use stencil35d::lbm::{LbmKernel, Storage};
use stencil35d::plan::GpuShape;
use stencil35d::{Border, DType, Engine, Error, Filter2, Kernel, PlanBuilder, Stencil, Stencil2};

/// `--storage`: a lattice storage, with the precision it named (`f32` or `f64`, both the
/// lattice's native storage), so that one other than `--dtype` is refused instead of taken as
/// native.
#[derive(Clone, Copy, Debug)]
pub struct StorageArg {
    storage: Storage,
    named: Option<DType>,
}

impl std::str::FromStr for StorageArg {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(StorageArg {
            storage: s.parse()?,
            named: s.parse().ok(),
        })
    }
}

impl StorageArg {
    /// The storage for a lattice of `dtype`. Errors: [`Error::InvalidArgument`] when the
    /// option named the other precision.
    pub fn for_dtype(self, dtype: DType) -> Result<Storage, Error> {
        match self.named {
            Some(named) if named != dtype => Err(Error::InvalidArgument(format!(
                "--storage {named} names the native storage of {named} lattices, and the run is \
                 --dtype {dtype}: run with --dtype {named}, or give --storage native"
            ))),
            _ => Ok(self.storage),
        }
    }
}

/// A grid size: `N` (a cube, or a square for 2D kernels), `NXxNY` (2D) or `NXxNYxNZ`, and
/// whether it was given as a bare `N` (only that shorthand means a square for 2D kernels).
#[derive(Clone, Copy, Debug)]
pub struct Size(pub [usize; 3], pub bool);

impl std::str::FromStr for Size {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::InvalidArgument(format!(
                "size '{s}' is not N, NXxNY or NXxNYxNZ with positive integers"
            ))
        };
        let parts: Vec<usize> = s
            .split('x')
            .map(|p| p.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        match parts[..] {
            [n] if n > 0 => Ok(Size([n, n, n], true)),
            [x, y] if x > 0 && y > 0 => Ok(Size([x, y, 1], false)),
            [x, y, z] if x > 0 && y > 0 && z > 0 => Ok(Size([x, y, z], false)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for Size {
    /// `NXxNYxNZ`, cubes included.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.0;
        write!(f, "{x}x{y}x{z}")
    }
}

/// A 2D size: `N` (a square) or `NXxNY`; a third size (a z) is refused rather than dropped.
#[derive(Clone, Copy, Debug)]
pub struct Size2(pub [usize; 2]);

impl std::str::FromStr for Size2 {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.parse::<Size>()?.0 {
            [x, y, _] if s.split('x').count() <= 2 => Ok(Size2([x, y])),
            _ => Err(Error::InvalidArgument(format!(
                "size '{s}' has three sides, but this is the size of a 2D grid: N or NXxNY"
            ))),
        }
    }
}

/// Parses a worker-thread count: at least 1, at most [`max_threads`]. More threads than the
/// logical cores this process may use are allowed (they can be measured) but warned about on stderr, since
/// they share cores and the engines' barriers then wait for descheduled threads: such runs are
/// much slower.
pub fn parse_threads(s: &str) -> Result<usize, String> {
    // The planner's count of the cores, so that what --threads takes the plan takes too.
    let cores = stencil35d::Machine::usable_cores();
    let max = max_threads(cores);
    let n = bounded_count(
        s,
        "thread count",
        [1, max],
        &format!(
            "{} for each of the {cores} logical core{} this process may use: with more, each \
             step waits at the engines' barriers for threads that share the cores, and a run \
             would not finish",
            stencil35d::plan::MAX_THREADS_PER_CORE,
            if cores == 1 { "" } else { "s" }
        ),
    )?;
    // Under a launcher, rank 0 alone warns (the arguments are the same on every rank).
    if n > cores && crate::ranks::launched_rank().unwrap_or(0) == 0 {
        eprintln!(
            "warning: --threads {n} is more than the {cores} logical core{} this process may \
             use: threads will share cores and the run will be slow",
            if cores == 1 { "" } else { "s" }
        );
    }
    Ok(n)
}

/// The most worker threads `--threads` takes on a machine of `cores` logical cores: the
/// planner's limit, [`stencil35d::plan::MAX_THREADS_PER_CORE`] per core (oversubscription can
/// be measured, but every run waits at barriers for each thread).
fn max_threads(cores: usize) -> usize {
    cores.saturating_mul(stencil35d::plan::MAX_THREADS_PER_CORE)
}

/// A whole number of `what` from `lo` to `hi` (the clap error names the option; `why` says
/// why the upper bound is what it is, for a value above it).
pub fn bounded_count(
    s: &str,
    what: &str,
    [lo, hi]: [usize; 2],
    why: &str,
) -> Result<usize, String> {
    let refuse = |because: &str| format!("'{s}' is not a {what} from {lo} to {hi}: {because}");
    match s.trim().parse::<usize>() {
        Err(_) => Err(refuse("a whole number is needed")),
        Ok(n) if n < lo => Err(refuse(&format!("it must be at least {lo}"))),
        Ok(n) if n > hi => Err(refuse(why)),
        Ok(n) => Ok(n),
    }
}

/// Parses `--autotune N`: at least one configuration (leaving the option out times none); a
/// count above the candidates there are times them all.
fn parse_autotune(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("'0' times no configuration: give at least 1, or leave --autotune out".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a number of configurations to time")),
    }
}

/// A number of seconds above 0 and at most `max` (the clap error names the option; `why`
/// says why the bound is what it is); NaN and infinities are refused.
pub fn bounded_seconds(s: &str, max: f64, why: &str) -> Result<f64, String> {
    s.trim()
        .parse()
        .ok()
        .filter(|&t: &f64| t > 0.0 && t <= max)
        .ok_or_else(|| format!("'{s}' is not a number of seconds above 0 and at most {max}: {why}"))
}

/// Parses `--repeat` of `bench` and `compare`: 1 to [`stencil35d::perf::MAX_REPEAT`] timed
/// runs. The median of a few runs is already stable; a thousand is far past what a median
/// needs, and each run keeps its report until the median is taken.
pub fn parse_repeat(s: &str) -> Result<usize, String> {
    bounded_count(
        s,
        "repeat count",
        [1, stencil35d::perf::MAX_REPEAT],
        "the median of a few timed runs is stable; more runs only take longer",
    )
}

/// Most seconds `compare --budget` takes: an hour of timed runs per engine is far past what a
/// median needs, and a larger figure is almost surely a typo.
pub const MAX_BUDGET_SECONDS: f64 = 3600.0;

/// Parses `compare --budget`: seconds above 0, at most [`MAX_BUDGET_SECONDS`].
pub fn parse_budget(s: &str) -> Result<f64, String> {
    bounded_seconds(
        s,
        MAX_BUDGET_SECONDS,
        "the budget of timed runs per engine (one run is always timed)",
    )
}

/// A tile: `XxY`.
#[derive(Clone, Copy, Debug)]
pub struct Tile(pub [usize; 2]);

impl std::str::FromStr for Tile {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad =
            || Error::InvalidArgument(format!("tile '{s}' is not XxY with positive integers"));
        let (x, y) = s.split_once('x').ok_or_else(bad)?;
        let (x, y): (usize, usize) = (x.parse().map_err(|_| bad())?, y.parse().map_err(|_| bad())?);
        if x == 0 || y == 0 {
            return Err(bad());
        }
        Ok(Tile([x, y]))
    }
}

/// Parses `naive,blocked` into engines.
pub fn parse_engines(list: &str) -> Result<Vec<Engine>, Error> {
    let engines: Vec<Engine> = list
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse())
        .collect::<Result<_, _>>()?;
    if let Some(twice) = first_repeated(&engines) {
        return Err(Error::InvalidArgument(format!(
            "engine '{twice}' is named twice in '{list}': each engine is timed once"
        )));
    }
    Ok(engines)
}

/// The first item of `items` that an earlier one equals, if any.
pub fn first_repeated<T: PartialEq>(items: &[T]) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find(|(i, x)| items[..*i].contains(x))
        .map(|(_, x)| x)
}

/// The options that pick a kernel, precision and size, shared by `plan` and `bench`.
#[derive(Args, Debug, Clone)]
pub struct Problem {
    /// Kernel: star7, box27, star:R (R = 1..4), box:R (R = 1..2), d3q19 (lattice
    /// Boltzmann, a lid-driven cavity; units are then MLUPS), d3q19:periodic (a periodic box
    /// without walls, as FluidX3D's benchmark); wave:O (the acoustic wave
    /// equation of space order O = 2, 4, 6, 8 with absorbing layers, a shot on a layered
    /// model); 2D: star2d:R (R = 1..4), box2d:R (R = 1..3), or conv2d:KxL (a convolution; a
    /// dense benchmark filter unless `--filter` names one).
    #[arg(long, default_value = "star7")]
    pub kernel: String,
    /// Precision: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Grid size: N for N³ (N² for 2D kernels), NXxNY, or NXxNYxNZ.
    #[arg(long, default_value = "256")]
    pub size: Size,
    /// conv2d: the filter, a file of weights (one row per line) or a name: gaussian:K,
    /// mean:K, mean:KxL, sobel, sobel-y, laplacian, sharpen, dense:KxL.
    #[arg(long)]
    pub filter: Option<String>,
    /// conv2d: border mode: constant[:V], replicate, reflect, reflect101 (the default), wrap.
    #[arg(long)]
    pub border: Option<String>,
    /// wave:O: width of the absorbing layers, cells (default 20).
    #[arg(long)]
    pub pml: Option<usize>,
    /// d3q19: how the GPU engines store the populations: native (the --dtype, the default),
    /// f16s (IEEE half) or f16c (a custom 16-bit format with one more mantissa bit); 16-bit
    /// storage computes in f32 and runs on the GPU engines only.
    #[arg(long)]
    pub storage: Option<StorageArg>,
}

impl Problem {
    /// The kernel named by `--kernel`: a stencil, or `d3q19` for a closed (non-periodic)
    /// lattice without body force (`d3q19:periodic`: periodic on every axis). An option of
    /// another kernel (`--pml` with a stencil, or `overrides`' `--in-place` without a lattice,
    /// say) is an error rather than silently unused, whichever engines run.
    pub fn kernel(&self, overrides: &Overrides) -> Result<Kernel, Error> {
        let kernel = self.named_kernel()?;
        let lattice = kernel.lbm().is_some();
        let foreign = [
            ("--in-place", overrides.in_place, "d3q19", lattice),
            ("--two-copies", overrides.two_copies, "d3q19", lattice),
            ("--storage", self.storage.is_some(), "d3q19", lattice),
            (
                "--pml",
                self.pml.is_some(),
                "wave:O",
                matches!(kernel, Kernel::Wave(_)),
            ),
            (
                "--filter",
                self.filter.is_some(),
                "conv2d",
                matches!(kernel, Kernel::Filter(_)),
            ),
            (
                "--border",
                self.border.is_some(),
                "conv2d",
                matches!(kernel, Kernel::Filter(_)),
            ),
        ];
        match foreign
            .iter()
            .find(|(_, given, _, applies)| *given && !applies)
        {
            Some((option, _, owner, _)) => Err(Error::InvalidArgument(format!(
                "{option} applies to --kernel {owner}, not to {}",
                self.kernel
            ))),
            None => Ok(kernel),
        }
    }

    /// The kernel `--kernel` names, with the options that belong to it.
    fn named_kernel(&self) -> Result<Kernel, Error> {
        if is_lbm(&self.kernel) {
            return Ok(Kernel::Lbm(LbmKernel {
                periodic: [is_periodic_lbm(&self.kernel); 3],
                forced: false,
                storage: match self.storage {
                    Some(s) => s.for_dtype(self.dtype)?,
                    None => Storage::default(),
                },
            }));
        }
        if self.kernel.starts_with("star2d") || self.kernel.starts_with("box2d") {
            return Stencil2::from_name(&self.kernel).map(Kernel::Stencil2);
        }
        if let Some(order) = self.kernel.strip_prefix("wave:") {
            // The order is checked here, before any size check could name the layers instead.
            let order = order
                .parse()
                .ok()
                .filter(|o| [2, 4, 6, 8].contains(o))
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "--kernel wave:O needs a space order O of 2, 4, 6 or 8, got '{order}'"
                    ))
                })?;
            let pml = self.pml.unwrap_or(stencil35d::wave::DEFAULT_PML_WIDTH);
            return Ok(Kernel::Wave(stencil35d::perf::bench_wave_kernel(
                order, pml,
            )));
        }
        if let Some(rest) = self.kernel.strip_prefix("conv2d") {
            if !(rest.is_empty() || rest.starts_with(':')) {
                return Err(Error::InvalidArgument(format!(
                    "unknown kernel '{}': a convolution is conv2d or conv2d:KxL",
                    self.kernel
                )));
            }
            return self.filter(rest.strip_prefix(':')).map(Kernel::Filter);
        }
        if !(self.kernel.starts_with("star") || self.kernel.starts_with("box")) {
            return Err(Error::InvalidArgument(format!(
                "unknown kernel '{}': expected star7, box27, star:R, box:R, d3q19, \
                 d3q19:periodic, wave:O, star2d:R, box2d:R or conv2d:KxL",
                self.kernel
            )));
        }
        Stencil::from_name(&self.kernel).map(Kernel::Stencil)
    }

    /// The convolution of `--kernel conv2d[:KxL]`: `--filter` (whose size must then match),
    /// or a dense benchmark filter of the named size.
    fn filter(&self, size: Option<&str>) -> Result<Filter2, Error> {
        let border = load_border(self.border.as_deref().unwrap_or("reflect101"))?;
        let filter = match (&self.filter, size) {
            (Some(f), _) => load_filter(f)?,
            (None, Some(size)) => stencil35d::perf::conv2d_filter(size)?,
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "--kernel conv2d needs a size (conv2d:5x5) or --filter".into(),
                ))
            }
        };
        if let Some(size) = size {
            let [kw, kh] = filter.size();
            if size != format!("{kw}x{kh}") && !(kw == kh && size == kw.to_string()) {
                return Err(Error::InvalidArgument(format!(
                    "--kernel conv2d:{size} does not match the {kw}x{kh} filter given"
                )));
            }
        }
        if self.dtype == DType::F32 {
            let spec = self.filter.as_deref().unwrap_or("(dense)");
            let border_spec = self.border.as_deref().unwrap_or("reflect101");
            check_in_f32(&filter, spec, border, border_spec, "run with --dtype f64")?;
        }
        Ok(filter.with_border(border))
    }

    /// The grid dimensions for `kernel`: `--size N` means N² for 2D kernels (an explicit
    /// `NxNxN` stays 3D, and a 2D kernel refuses it).
    pub fn dims(&self, kernel: &Kernel) -> [usize; 3] {
        let Size([x, y, z], bare) = self.size;
        if kernel.is_2d() && bare {
            [x, y, 1]
        } else {
            [x, y, z]
        }
    }
}

/// Checks that `filter`'s weights (`--filter spec`) and a constant border (`--border
/// border_spec`) are finite in `f32`: a value such as 1e300 parses as a finite `f64` but is
/// infinite in `f32`, where it would pass for a blow-up after the first step. `remedy` ends
/// the message.
pub fn check_in_f32(
    filter: &Filter2,
    spec: &str,
    border: Border,
    border_spec: &str,
    remedy: &str,
) -> Result<(), Error> {
    let beyond = |v: f64| v.is_nan() || v.abs() > f64::from(f32::MAX);
    if let Some(w) = filter.weights().iter().find(|w| beyond(**w)) {
        return Err(Error::InvalidArgument(format!(
            "--filter {spec}: weight {w:e} is beyond the range of f32 (±{:e}): {remedy}",
            f32::MAX
        )));
    }
    if let Border::Constant(v) = border {
        if beyond(v) {
            return Err(Error::InvalidArgument(format!(
                "--border {border_spec}: the value {v:e} is beyond the range of f32 (±{:e}): \
                 {remedy}",
                f32::MAX
            )));
        }
    }
    Ok(())
}

/// A filter named on the command line: a filter's name (`sobel`, `gaussian:5`), else a path to
/// a file of weights. A file whose name is also a filter's is read when given as a path
/// (`./sobel`). A spec that looks like a path (a '/', or a '.' extension without a ':') but
/// names nothing is refused as a missing file rather than as an unknown filter.
pub fn load_filter(spec: &str) -> Result<Filter2, Error> {
    if !spec.contains('/') {
        if let Ok(filter) = Filter2::from_name(spec) {
            return Ok(filter);
        }
    }
    let path = std::path::Path::new(spec);
    let looks_like_path = spec.contains('/') || (path.extension().is_some() && !spec.contains(':'));
    if path.exists() {
        Filter2::from_file(path).map_err(|e| in_option("--filter", spec, e))
    } else if looks_like_path {
        Err(Error::InvalidArgument(format!(
            "--filter {spec}: the filter file {spec} does not exist (a filter is a file of \
             weights or a name such as gaussian:5)"
        )))
    } else {
        Filter2::from_name(spec).map_err(|e| in_option("--filter", spec, e))
    }
}

/// The border `--border` names, its error naming the option.
pub fn load_border(spec: &str) -> Result<Border, Error> {
    Border::from_name(spec).map_err(|e| in_option("--border", spec, e))
}

/// `e` with the option and value it came from in front (`--filter sobel:99: ...`) when it is
/// an [`Error::InvalidArgument`]; other errors (a file's I/O error, which names the file) as
/// they are.
pub fn in_option(option: &str, value: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(why) => Error::InvalidArgument(format!("{option} {value}: {why}")),
        other => other,
    }
}

/// Whether a kernel name means the lattice-Boltzmann kernel.
pub fn is_lbm(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "d3q19" | "lbm") || is_periodic_lbm(name)
}

/// Whether `name` is the periodic lattice-Boltzmann box, `d3q19:periodic`.
pub fn is_periodic_lbm(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "d3q19:periodic" | "lbm:periodic"
    )
}

/// The plan overrides shared by `plan` and `bench`.
#[derive(Args, Debug, Clone, Default)]
pub struct Overrides {
    /// Worker threads (default: all cores; more than the machine's cores is warned about).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Time steps per pass for the blocked engine (default: the planner's choice).
    #[arg(long = "dim-t")]
    pub dim_t: Option<usize>,
    /// Loaded tile XxY for the blocked engine (default: the planner's choice).
    #[arg(long)]
    pub tile: Option<Tile>,
    /// Threads per tile group of the blocked CPU engine (default: the planner's choice; the
    /// thread count puts every thread on every tile, as in the 3.5D paper).
    #[arg(long = "tile-threads")]
    pub tile_threads: Option<usize>,
    /// Chunks the blocked CPU engine cuts the z axis into (default: the planner's choice, about
    /// six units of work per tile group); groups claim one tile's chunk at a time.
    #[arg(long = "z-chunks")]
    pub z_chunks: Option<usize>,
    /// Do not pin worker threads to cores.
    #[arg(long)]
    pub no_pin: bool,
    /// GPU blocked kernel: threads per block XxY (X a multiple of 32).
    #[arg(long)]
    pub block: Option<Tile>,
    /// GPU blocked kernel: cells per thread along y (with `--block`).
    #[arg(long, default_value_t = 4, requires = "block")]
    pub ry: usize,
    /// GPU blocked kernel: cells per thread along x (with `--block`). Star stencils: x
    /// neighbours by warp shuffle (with `--block 32xN`), 0 exchanges them through shared
    /// memory. Wave: 2 moves a thread's two cells as one vector (dim_t 1, order 4 or 8).
    #[arg(long, default_value_t = 0, requires = "block")]
    pub rx: usize,
    /// GPU blocked kernel with `--rx`: skew the levels (each level R+1 planes behind the one
    /// below, one barrier per plane for all of them instead of one per level).
    #[arg(long, requires = "rx")]
    pub skew: bool,
    /// GPU blocked kernel: output planes per thread block along z (with `--block`).
    #[arg(long = "stream-block", default_value_t = 128, requires = "block")]
    pub stream_block: usize,
    /// GPU: time the model's best N configurations (5 when N is left out) and keep the
    /// fastest; `plan --autotune N` lists each with its measured and predicted speed.
    #[arg(long, num_args = 0..=1, default_missing_value = "5", value_name = "N",
          value_parser = parse_autotune)]
    pub autotune: Option<usize>,
    /// Lattice-Boltzmann on the GPU: one copy of the populations updated in place (AA
    /// pattern), half the device memory of two copies; applies to gpu-naive (and picks it when
    /// no engine is given). Without it or --two-copies the planner chooses (in place for walled
    /// lattices in native storage, and for lattices too large for two copies).
    #[arg(long = "in-place", conflicts_with = "two_copies")]
    pub in_place: bool,
    /// Lattice-Boltzmann on the GPU: two copies of the populations (A/B), whatever the planner
    /// would choose (the CPU engines, which a plan without a GPU takes, always keep two).
    #[arg(long = "two-copies")]
    pub two_copies: bool,
}

/// An override: whether it was given, its option, the engines it applies to (in words) and
/// the test of an engine that takes it.
type Taken = (bool, &'static str, &'static str, fn(Engine) -> bool);

impl Overrides {
    /// Refuses an override that none of `engines` takes (`None`, the planner's choice, takes
    /// every one: the planner then picks an engine that does), naming the option and the
    /// engines it applies to, so that no option given is silently dropped.
    pub fn check_taken(&self, engines: &[Option<Engine>]) -> Result<(), Error> {
        let blocked: fn(Engine) -> bool = |e| e.is_blocked();
        let cpu_blocked: fn(Engine) -> bool = |e| e == Engine::Blocked;
        let gpu: fn(Engine) -> bool = |e| e.is_gpu();
        let set: [Taken; 8] = [
            (
                self.dim_t.is_some(),
                "--dim-t",
                "blocked and gpu-blocked",
                blocked,
            ),
            (
                self.tile.is_some(),
                "--tile",
                "blocked and gpu-blocked",
                blocked,
            ),
            (
                self.tile_threads.is_some(),
                "--tile-threads",
                "blocked",
                cpu_blocked,
            ),
            (
                self.z_chunks.is_some(),
                "--z-chunks",
                "blocked",
                cpu_blocked,
            ),
            (self.block.is_some(), "--block", "gpu-blocked", |e| {
                e == Engine::GpuBlocked
            }),
            (
                self.autotune.is_some(),
                "--autotune",
                "gpu-naive and gpu-blocked",
                gpu,
            ),
            (self.in_place, "--in-place", "gpu-naive", |e| {
                e == Engine::GpuNaive
            }),
            (self.two_copies, "--two-copies", "gpu-naive", |e| {
                e == Engine::GpuNaive
            }),
        ];
        for (given, option, applies, takes) in set {
            if given && !engines.iter().any(|e| e.is_none_or(takes)) {
                let named: Vec<String> = engines.iter().flatten().map(|e| e.to_string()).collect();
                return Err(Error::InvalidArgument(format!(
                    "{option} applies to the {applies} engines, and the run names only {}: \
                     drop {option} or name one of those engines",
                    named.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// [`Overrides::apply`] for one engine (`None`: the planner's choice), after
    /// [`Overrides::check_taken`]: an override that engine does not take is an error.
    pub fn apply_checked(
        &self,
        b: PlanBuilder,
        engine: Option<Engine>,
    ) -> Result<PlanBuilder, Error> {
        self.check_taken(&[engine])?;
        Ok(self.apply(b, engine))
    }

    /// Applies the overrides to a plan builder for `engine` (dim_t and tile only to blocked
    /// engines, so `--engine naive,blocked --dim-t 3` means what it says).
    pub fn apply(&self, mut b: PlanBuilder, engine: Option<Engine>) -> PlanBuilder {
        if let Some(e) = engine {
            b = b.engine(e);
        }
        if let Some(t) = self.threads {
            b = b.threads(t);
        }
        let blocked = engine.is_none_or(|e| e.is_blocked());
        if engine.is_none_or(|e| e == Engine::GpuBlocked) {
            if let Some(block) = self.block {
                b = b.gpu_shape(GpuShape {
                    block: block.0,
                    ry: self.ry,
                    rx: self.rx,
                    skew: self.skew,
                    stream_block: self.stream_block,
                });
            }
        }
        if engine.is_none_or(|e| e.is_gpu()) {
            if let Some(n) = self.autotune {
                b = b.autotune_top(n);
            }
        }
        if self.in_place && engine.is_none_or(|e| e == Engine::GpuNaive) {
            b = b.in_place(true);
        }
        if self.two_copies {
            b = b.in_place(false);
        }
        if blocked {
            if let Some(d) = self.dim_t {
                b = b.dim_t(d);
            }
            if let Some(t) = self.tile {
                b = b.tile(t.0);
            }
        }
        if engine.is_none_or(|e| e == Engine::Blocked) {
            if let Some(n) = self.tile_threads {
                b = b.tile_threads(n);
            }
            if let Some(n) = self.z_chunks {
                b = b.z_chunks(n);
            }
        }
        b.pin(!self.no_pin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use stencil35d::lbm::Storage;

    /// The options of `bench` that name the problem.
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        problem: Problem,
        #[command(flatten)]
        overrides: Overrides,
    }

    /// The kernel `bench` would run for `args`, or its error.
    fn kernel_of(args: &[&str]) -> Result<Kernel, Error> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .expect("the arguments parse");
        cli.problem.kernel(&cli.overrides)
    }

    /// An option that belongs to another kernel is refused and named, whichever engines would
    /// run; each kernel takes its own.
    #[test]
    fn an_option_of_another_kernel_is_refused() {
        for (args, option) in [
            (&["--kernel", "star7", "--pml", "8"][..], "--pml"),
            (&["--kernel", "star7", "--storage", "f16s"], "--storage"),
            (&["--kernel", "d3q19", "--filter", "sobel"], "--filter"),
            (&["--kernel", "wave:8", "--border", "wrap"], "--border"),
            (&["--kernel", "star2d:1", "--in-place"], "--in-place"),
            (&["--kernel", "conv2d:3x3", "--two-copies"], "--two-copies"),
        ] {
            let err = kernel_of(args).expect_err("refused").to_string();
            assert!(err.contains(option), "{args:?}: {err}");
        }
        let wave = kernel_of(&["--kernel", "wave:8", "--pml", "12"]);
        assert!(matches!(wave, Ok(Kernel::Wave(k)) if k.pml == 12));
        let lattice = kernel_of(&["--kernel", "d3q19", "--storage", "f16c", "--in-place"]);
        assert!(matches!(lattice, Ok(Kernel::Lbm(k)) if k.storage == Storage::F16c));
        assert!(kernel_of(&["--kernel", "conv2d:3x3", "--border", "wrap"]).is_ok());
        assert!(kernel_of(&["--kernel", "conv2d", "--filter", "sobel"]).is_ok());
        let defaults = kernel_of(&["--kernel", "wave:4"]);
        assert!(
            matches!(defaults, Ok(Kernel::Wave(k)) if k.pml == stencil35d::wave::DEFAULT_PML_WIDTH)
        );
        let zero = Cli::try_parse_from(["bench", "--autotune", "0"]);
        assert!(zero.is_err_and(|e| e.to_string().contains("times no configuration")));
        for odd in ["wave:3", "wave:10", "wave:0", "wave:x"] {
            let err = kernel_of(&["--kernel", odd]).expect_err(odd).to_string();
            assert!(err.contains("space order O of 2, 4, 6 or 8"), "{err}");
        }
    }

    /// An unknown name is refused with every kind of kernel `--kernel` takes; a stencil's
    /// own error (a radius out of range) is kept.
    #[test]
    fn an_unknown_kernel_lists_every_kind() {
        let unknown = kernel_of(&["--kernel", "heat"])
            .expect_err("refused")
            .to_string();
        for kind in [
            "star7",
            "d3q19:periodic",
            "wave:O",
            "star2d:R",
            "conv2d:KxL",
        ] {
            assert!(unknown.contains(kind), "{unknown}");
        }
        let radius = kernel_of(&["--kernel", "star:9"])
            .expect_err("refused")
            .to_string();
        assert!(radius.contains("star radius 9"), "{radius}");
    }
}
