//! [`Plan`]: the planner's answer, a validated recipe for one run (engine, parameters, the
//! model's numbers), and what the user fixed ([`Overrides`]).

use serde::Serialize;

use super::builder::PlanBuilder;
use super::candidate::Candidate;
use super::gpu_model::GpuShape;
use super::kernel::Kernel;
use super::limits::{LONGEST_RUN_SECONDS, MAX_THREADS_PER_CORE};
use super::machine::Machine;
use super::tune;
use crate::engine::Engine;
use crate::{DType, Error, Result};

/// Which choices the user fixed rather than the planner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Overrides {
    /// Engine fixed by the user.
    pub engine: bool,
    /// `dim_t` fixed by the user.
    pub dim_t: bool,
    /// Tile fixed by the user.
    pub tile: bool,
    /// Thread count fixed by the user.
    pub threads: bool,
    /// Threads per tile group fixed by the user.
    pub tile_threads: bool,
    /// Chunks along z fixed by the user.
    pub z_chunks: bool,
    /// GPU launch shape fixed by the user.
    pub gpu_shape: bool,
    /// Lattice storage scheme (in place or two copies) fixed by the user.
    pub in_place: bool,
}

/// A complete, validated recipe for running a kernel on data of one type and size: the engine,
/// its parameters, and the model's reasoning. `Display` prints a report a person can read.
///
/// ```
/// use stencil35d::{DType, Engine, Plan, Solver, Stencil, Grid};
/// let stencil = Stencil::twenty_seven_point(0.5, 0.03, 0.02, 0.01);
/// let plan = Plan::new(stencil.clone(), DType::F64, [32, 24, 20]).unwrap();
/// println!("{plan}"); // the engine, dim_t and tile it chose, and why
/// // Fix choices the planner would make: the 3.5D engine with two steps per pass.
/// let blocked = plan.rebuild().engine(Engine::Blocked).dim_t(2).build().unwrap();
/// assert_eq!((blocked.engine(), blocked.dim_t()), (Engine::Blocked, 2));
/// let mut grid = Grid::<f64>::random([32, 24, 20], 0.0, 1.0, 5).unwrap();
/// let report = Solver::new(blocked).run(&mut grid, 4).unwrap();
/// assert_eq!(report.updates, 30 * 22 * 18 * 4); // interior cells × steps
/// ```
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub(super) kernel: Kernel,
    pub(super) dtype: DType,
    pub(super) dims: [usize; 3],
    pub(super) engine: Engine,
    pub(super) threads: usize,
    pub(super) tile_threads: usize,
    pub(super) z_chunks: usize,
    pub(super) pin: bool,
    pub(super) dim_t: usize,
    pub(super) tile: [usize; 2],
    pub(super) cache_bytes: usize,
    /// The share of the last-level cache the plan was made for (the user's or the default),
    /// which a rebuilt plan keeps.
    pub(super) cache_share: f64,
    pub(super) kernel_bytes_per_op: f64,
    pub(super) machine_bytes_per_op: f64,
    pub(super) eta: usize,
    pub(super) chosen: Candidate,
    pub(super) candidates: Vec<Candidate>,
    pub(super) overrides: Overrides,
    pub(super) machine: Machine,
    /// Whether `machine` was given ([`PlanBuilder::machine`]) rather than detected: a rebuilt
    /// plan for a detected machine considers the GPU again.
    pub(super) described: bool,
    pub(super) gpu: Option<crate::gpu::GpuInfo>,
    pub(super) in_place: bool,
    /// Why the planner chose the lattice's storage scheme (`None`: the user's choice, or no
    /// lattice on gpu-naive).
    pub(super) in_place_why: Option<&'static str>,
    /// Where the user's choices are about to waste time (see [`Plan::warnings`]).
    pub(super) warnings: Vec<String>,
}

impl Plan {
    /// A builder holding this plan's request (kernel, size and the user's overrides), to change
    /// a choice and plan again.
    pub fn rebuild(&self) -> PlanBuilder {
        PlanBuilder {
            kernel: self.kernel.clone(),
            dtype: self.dtype,
            dims: self.dims,
            engine: self.overrides.engine.then_some(self.engine),
            dim_t: self.overrides.dim_t.then_some(self.dim_t),
            tile: self.overrides.tile.then_some(self.tile),
            threads: self.overrides.threads.then_some(self.threads),
            tile_threads: self.overrides.tile_threads.then_some(self.tile_threads),
            z_chunks: self.overrides.z_chunks.then_some(self.z_chunks),
            pin: self.pin,
            cache_share: Some(self.cache_share),
            // A detected machine is detected again (the same, cached), so that the rebuilt
            // plan may take the GPU as the first one could; its instruction-set cap is kept.
            machine: self.described.then(|| self.machine.clone()),
            autotune: if self.chosen.measured_mups.is_some() {
                tune::TIMED
            } else {
                0
            },
            gpu_shape: self
                .chosen
                .gpu
                .as_ref()
                .filter(|_| self.overrides.gpu_shape)
                .map(|l| GpuShape {
                    block: l.block,
                    ry: l.ry,
                    rx: l.rx,
                    skew: l.skew,
                    stream_block: l.stream_block,
                }),
            in_place: self.overrides.in_place.then_some(self.in_place),
            isa: (!self.described).then_some(self.machine.isa),
        }
    }

    /// A builder for the same request on a grid of `dims` with this plan's engine fixed: the
    /// plan of one rank's block in a distributed run, so every rank runs the engine the whole
    /// grid's plan chose.
    #[cfg(feature = "mpi")]
    pub(crate) fn rebuild_for(&self, dims: [usize; 3]) -> PlanBuilder {
        let mut b = self.rebuild();
        b.dims = dims;
        b.engine = Some(self.engine);
        b
    }

    #[cfg(feature = "mpi")]
    /// [`Plan::rebuild_for`] for another kernel of the same kind: a rank's block of a
    /// distributed lattice, whose axes split over ranks are closed locally.
    pub(crate) fn rebuild_for_kernel(&self, kernel: Kernel, dims: [usize; 3]) -> PlanBuilder {
        let mut b = self.rebuild_for(dims);
        b.kernel = kernel;
        b
    }

    #[cfg(feature = "mpi")]
    /// The naive sweep of this plan's kernel, size, machine and threads, without the blocked
    /// engine's choices: what a split run replays a failed blocked pass with, a step at a time.
    pub(crate) fn naive_twin(&self) -> Result<Plan> {
        let mut b = self.rebuild();
        b.engine = Some(Engine::Naive);
        b.threads = Some(self.threads);
        (b.dim_t, b.tile, b.tile_threads, b.z_chunks) = (None, None, None, None);
        b.autotune = 0;
        b.build()
    }

    /// Warnings about choices the user fixed that the model rates far below its own (a tile
    /// or `dim_t` override at less than half the predicted rate). `Display` shows them; the
    /// CLI prints them to stderr.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// This plan, rebuilt with the engine and `dim_t` the ranks of a split run agreed on, told
    /// as the planner's choices where the user of `original` left them open, with `original`'s
    /// warnings (those of the forced rebuild would call the agreed choices the user's) and
    /// `note` (why the ranks changed a choice) after them.
    #[cfg(feature = "mpi")]
    pub(crate) fn agreed_by_ranks(mut self, original: &Plan, note: Option<String>) -> Plan {
        self.overrides.engine = original.overrides.engine;
        self.overrides.dim_t = original.overrides.dim_t;
        self.warnings = original.warnings.clone();
        self.warnings.extend(note);
        self
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// Grid dimensions `[nx, ny, nz]`.
    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }
    /// The chosen engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }
    /// Worker threads (the reference engine runs on one of them).
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// Threads that compute a run: one for the reference engine, else [`Plan::threads`].
    pub fn threads_computing(&self) -> usize {
        match self.engine {
            Engine::Reference => 1,
            _ => self.threads,
        }
    }
    /// Threads per tile group of the blocked engine (the whole team for other engines); the
    /// team runs ⌈threads / tile_threads⌉ groups.
    pub fn tile_threads(&self) -> usize {
        self.tile_threads
    }
    /// Chunks the blocked CPU engine cuts the z axis into (1 for other engines): a tile group
    /// claims one tile's chunk at a time, so fast cores take more chunks than slow ones.
    pub fn z_chunks(&self) -> usize {
        self.z_chunks
    }
    /// Number of tile groups of the blocked engine (1 for other engines).
    pub fn tile_groups(&self) -> usize {
        self.threads.div_ceil(self.tile_threads.max(1))
    }
    /// Bytes of ring buffers a run of this plan allocates on the host: one working set per
    /// tile group of the blocked CPU engine (none for the other engines).
    pub fn ring_bytes(&self) -> u64 {
        if self.engine() == crate::Engine::Blocked {
            (self.chosen().working_set as u64).saturating_mul(self.tile_groups() as u64)
        } else {
            0
        }
    }
    /// Whether workers are pinned to cores.
    pub fn pin(&self) -> bool {
        self.pin
    }
    /// Time steps per pass over memory (1 for unblocked engines).
    pub fn dim_t(&self) -> usize {
        self.dim_t
    }
    /// Loaded tile `[dim_X, dim_Y]` (the whole plane for unblocked engines).
    pub fn tile(&self) -> [usize; 2] {
        self.tile
    }
    /// The model's prediction for the chosen configuration, million updates per second.
    pub fn predicted_mups(&self) -> f64 {
        self.chosen.predicted_mups
    }
    /// The chosen configuration with the model's numbers.
    pub fn chosen(&self) -> &Candidate {
        &self.chosen
    }
    /// Every configuration the planner weighed.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
    /// Which choices the user fixed.
    pub fn overrides(&self) -> Overrides {
        self.overrides
    }
    /// The machine the plan was made for.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }
    /// Whether a lattice-Boltzmann GPU run keeps one copy of the populations and updates it in
    /// place (AA pattern; half the device memory), see [`PlanBuilder::in_place`]. When the
    /// planner chose it, a lattice with an inlet or outlet on the face of a closed axis runs
    /// two copies instead (the AA kernels cannot run it).
    pub fn in_place(&self) -> bool {
        self.in_place
    }
    /// The GPU the plan considered, when one was found.
    pub fn gpu(&self) -> Option<&crate::gpu::GpuInfo> {
        self.gpu.as_ref()
    }
    /// Refuses `steps` steps of this plan, with [`Error::InvalidArgument`], when their cell
    /// updates overflow a 64-bit count or the plan predicts they take longer than a year
    /// ([`LONGEST_RUN_SECONDS`]): such a count is a mistake, not a simulation. A plan made for a
    /// described machine with more threads than [`MAX_THREADS_PER_CORE`] per usable core of
    /// this host is [`Error::InvalidPlan`]. A caller that
    /// runs in parts (a progress bar, checkpoints) checks its whole run with this first.
    pub fn check_run_length(&self, steps: usize) -> Result<()> {
        // A plan for a described machine may ask for more threads than this host can run.
        let most = MAX_THREADS_PER_CORE * Machine::usable_cores();
        if self.threads > most {
            return Err(Error::InvalidPlan(format!(
                "the plan runs {} threads, more than {most} ({MAX_THREADS_PER_CORE} for each of \
                 this host's {} usable cores): plan for this machine, or with fewer threads",
                self.threads,
                Machine::usable_cores()
            )));
        }
        let cells = self.interior_cells();
        if cells.checked_mul(steps as u64).is_none() {
            return Err(Error::InvalidArgument(format!(
                "{steps} steps of {cells} cells are more cell updates than a 64-bit count holds"
            )));
        }
        let mups = self.predicted_mups();
        let seconds = cells as f64 * steps as f64 / (mups.max(1e-6) * 1e6);
        if seconds > LONGEST_RUN_SECONDS {
            let years = seconds / (365.0 * 86_400.0);
            // Over a year: whole years, in powers of ten beyond a million, rounded down so
            // that "over" holds.
            let years = if years < 2.0 {
                "a year".to_string()
            } else if years < 1e6 {
                format!("{} years", years.floor())
            } else {
                let e = years.log10().floor();
                format!(
                    "{:.1}e{e} years",
                    (years / 10f64.powf(e) * 10.0).floor() / 10.0
                )
            };
            return Err(Error::InvalidArgument(format!(
                "{steps} steps of {cells} cells would take over {years} at the plan's \
                 predicted {mups:.0} MUPS: a run of at most a year is accepted"
            )));
        }
        Ok(())
    }

    /// Number of cells a time step updates (the interior for stencils; every node of a
    /// lattice).
    pub fn interior_cells(&self) -> u64 {
        let r = self.kernel.fixed_boundary();
        let axes = if self.kernel.is_2d() { 2 } else { 3 };
        self.dims[..axes]
            .iter()
            .map(|&n| (n - 2 * r) as u64)
            .product()
    }
}
