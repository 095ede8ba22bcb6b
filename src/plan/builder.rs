//! [`PlanBuilder`]: a request for a plan, with the choices the user fixes. Planning itself
//! ([`PlanBuilder::build`]) is in `choose.rs`.

use super::gpu_model::GpuShape;
use super::kernel::Kernel;
use super::limits::{DEFAULT_CACHE_SHARE, LATTICE_CACHE_SHARE};
use super::machine::Machine;
use crate::engine::Engine;
use crate::tuning::Tuning;
use crate::DType;

/// Builds a [`Plan`](super::Plan), letting the user fix any choice the planner would otherwise make.
#[derive(Clone, Debug)]
pub struct PlanBuilder {
    pub(super) kernel: Kernel,
    pub(super) dtype: DType,
    pub(super) dims: [usize; 3],
    pub(super) engine: Option<Engine>,
    pub(super) dim_t: Option<usize>,
    pub(super) tile: Option<[usize; 2]>,
    pub(super) threads: Option<usize>,
    pub(super) tile_threads: Option<usize>,
    pub(super) z_chunks: Option<usize>,
    pub(super) pin: bool,
    /// `None`: [`DEFAULT_CACHE_SHARE`], or [`LATTICE_CACHE_SHARE`] for lattices.
    pub(super) cache_share: Option<f64>,
    pub(super) machine: Option<Machine>,
    /// GPU configurations to time on the device (0: trust the model).
    pub(super) autotune: usize,
    pub(super) gpu_shape: Option<GpuShape>,
    /// `None`: the planner's scheme ([`super::copies::choose`]).
    pub(super) in_place: Option<bool>,
    /// Highest SIMD level of the CPU engines (`None`: the machine's, capped by the `isa` knob).
    pub(super) isa: Option<crate::Level>,
}

impl PlanBuilder {
    /// Starts a plan for `kernel` on `dims` cells of `dtype`, every choice left to the planner.
    pub fn new(kernel: impl Into<Kernel>, dtype: DType, dims: [usize; 3]) -> Self {
        PlanBuilder {
            kernel: kernel.into(),
            dtype,
            dims,
            engine: None,
            dim_t: None,
            tile: None,
            threads: None,
            tile_threads: None,
            z_chunks: None,
            pin: true,
            cache_share: None,
            machine: None,
            autotune: 0,
            gpu_shape: None,
            in_place: None,
            isa: None,
        }
    }

    /// Caps the SIMD instruction-set level of the CPU engines (a level above what the CPU has
    /// is lowered to it), e.g. to compare levels on one machine.
    pub fn isa(mut self, level: crate::Level) -> Self {
        self.isa = Some(level);
        self
    }

    /// Fixes the engine.
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Fixes `dim_t`, the time steps per pass (implies the blocked engine unless one is fixed).
    pub fn dim_t(mut self, dim_t: usize) -> Self {
        self.dim_t = Some(dim_t);
        self
    }

    /// Fixes the loaded tile size `[dim_X, dim_Y]` (implies the blocked engine). For a 2D
    /// stencil: the loaded columns of an x tile, halos of `R·dim_t` on each side included
    /// (the whole row when that covers it), and the output rows of a work item; for a
    /// convolution: the output columns and rows of a work item.
    pub fn tile(mut self, tile: [usize; 2]) -> Self {
        self.tile = Some(tile);
        self
    }

    /// Fixes the number of threads.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Fixes the threads per tile group of the blocked engine (implies the blocked engine): the
    /// team is cut into ⌈threads / n⌉ groups of near-equal size, each claiming tiles (or their
    /// z chunks, see [`PlanBuilder::z_chunks`]) with its own ring buffers and barrier; `n` =
    /// threads is the 3.5D paper's scheme (all threads on every tile). Values above the thread
    /// count are clamped to it, and the plan reports the largest group it makes (12 threads in
    /// groups of at most 8 are 2 groups of 6).
    pub fn tile_threads(mut self, n: usize) -> Self {
        self.tile_threads = Some(n);
        self
    }

    /// Fixes how many chunks the blocked CPU engine cuts the z axis into (asks for a blocked
    /// engine, like a `dim_t` or tile; ignored if the GPU one is chosen). Tile groups claim one
    /// tile's chunk at a time, so cores that run slower (busy hyperthread siblings, other
    /// tenants) take fewer; each chunk recomputes a halo of `R·(dim_t − j)` planes per side at
    /// level `j`. By default the planner gives each group about six units; values above the
    /// interior's planes are clamped to it.
    pub fn z_chunks(mut self, n: usize) -> Self {
        self.z_chunks = Some(n);
        self
    }

    /// Whether worker threads are pinned to cores (default: yes).
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Share of the last-level cache to budget for blocking buffers (default 0.5 for stencils,
    /// 1 for lattices).
    pub fn cache_share(mut self, share: f64) -> Self {
        self.cache_share = Some(share);
        self
    }

    /// Times the GPU model's best five blocking configurations on the device, and the best three
    /// of the shapes its register estimate leaves out, and keeps the fastest that does not spill
    /// (remembered per device, kernel, precision and size, in this process and on disk).
    pub fn autotune(mut self, on: bool) -> Self {
        self.autotune = if on { crate::plan::tune::TIMED } else { 0 };
        self
    }

    /// Times the GPU model's best `count` blocking configurations, and the best `count / 2`
    /// (rounded up) of the shapes its register estimate leaves out, and keeps the fastest (a count
    /// other than the default five always times afresh); [`Plan::candidates`](super::Plan::candidates) then lists every
    /// timed one with its measured and predicted speed: how far the model can be trusted here.
    pub fn autotune_top(mut self, count: usize) -> Self {
        self.autotune = count;
        self
    }

    /// Fixes the GPU blocked kernel's launch shape (threads per block, cells per thread in y,
    /// planes per stream block); with it, `dim_t` and the tile height follow from `block` and
    /// `ry`, and configurations the model would prune for register pressure are allowed.
    pub fn gpu_shape(mut self, shape: GpuShape) -> Self {
        self.gpu_shape = Some(shape);
        self
    }

    /// Lattice-Boltzmann on the GPU only: `true` keeps one copy of the populations on the
    /// device and updates it in place (the AA pattern: even steps push each result to the slot
    /// its neighbour will pull from, odd steps read and write a node's own slots), `false`
    /// ping-pongs between two copies. One copy halves the device memory a lattice needs, at the
    /// same memory traffic per update; with walls it also runs faster (H200, 256³ cavity: 1.09×
    /// in `f32`), without them slower (periodic box: 0.94×). Left unset, the planner keeps one
    /// copy on gpu-naive for a lattice closed on some axis (except in 16-bit storage, where in
    /// place measured 0.91-1.02× in f16s) or too large for two copies, and runs two copies instead
    /// when the lattice has an inlet or outlet on a closed face. `true` implies `gpu-naive`
    /// when no engine is fixed; inlets and outlets must then lie off the faces of closed axes.
    /// Either value for another kernel than the lattice is an [`crate::Error::InvalidPlan`] at
    /// [`PlanBuilder::build`].
    pub fn in_place(mut self, on: bool) -> Self {
        self.in_place = Some(on);
        self
    }

    /// Plans for `machine` instead of the detected one (what-if planning, tests). Such a plan
    /// considers the GPU only when a GPU engine is fixed.
    pub fn machine(mut self, machine: Machine) -> Self {
        self.machine = Some(machine);
        self
    }

    /// Installs `tuning` as the process's knobs (what [`Tuning::install`] does): the GPU
    /// kernels' build options apply to every kernel built from now on; the figures that replace
    /// probes act on the machine as detected, which happens once per process at its first plan,
    /// so they must be set before that (or given as a `Machine` with [`PlanBuilder::machine`]).
    pub fn tuning(self, tuning: Tuning) -> Self {
        tuning.install();
        self
    }

    /// The share of the last-level cache to plan with: the user's, or the kernel's default.
    pub(super) fn cache_share_or_default(&self) -> f64 {
        self.cache_share.unwrap_or(if self.kernel.lbm().is_some() {
            LATTICE_CACHE_SHARE
        } else {
            DEFAULT_CACHE_SHARE
        })
    }
}
