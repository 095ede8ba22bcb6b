//! The CPU performance model: the 3.5D paper's equations (1)-(4) and a bound-and-bottleneck
//! prediction for each candidate configuration.
//!
//! Predicted rate = min(compute rate, memory rate) / κ in the paper's model, where the compute
//! rate is the peak op rate over the kernel's ops per update, the memory rate is the bandwidth
//! times `dim_t` over the bytes per update, and κ is the redundant work of the tile ghost
//! zones. On measured machines a streaming stencil's (γ > Γ) compute and memory times add
//! instead of overlapping (see `ModelInput::overlap`).
//!
//! The blocked engine's team is cut into tile groups of `tile_threads` threads (see
//! `crate::runtime::groups`). For each group size the model gives a group the cache it can count on
//! (its threads' share of their last-level cache, or their private caches if larger), fits
//! eq. (4)'s tile into it, evens the tile count out over the groups, and charges what groups of
//! several threads cost: a spin barrier per pipeline step and the rows each thread reads from
//! its neighbours' caches.

use super::candidate::{Bound, Candidate};
use super::compute::LATTICE_PROBE_ROW;
use super::kernel::{Kernel, KernelCost};
use super::machine::Machine;
use super::Engine;
use crate::blocking::rings::ring_rows;
use crate::blocking::tiling::{self, z_chunk_count};
use crate::lbm::Q;
use crate::lbm::Z_CLASS_SIZES;
use crate::DType;

/// Modelled cost of one spin-barrier round across `n > 1` threads: a fixed part plus one
/// cache-line transfer per arriving thread (nanoseconds).
const BARRIER_NS_BASE: f64 = 150.0;
/// Per-thread part of a barrier round (nanoseconds).
const BARRIER_NS_PER_THREAD: f64 = 100.0;
/// How much slower a row whose neighbour rows were written by another core is than one whose
/// rows all sit in the thread's own cache (1.0 = twice the time). Fitted to the 16-core server:
/// groups of 8 threads with 21 rows each ran at 0.77 of one-thread tiles (f64 star7, dim_t 3),
/// the whole team with 13 rows each at 0.55 (f64 D3Q19, dim_t 4).
const REMOTE_ROW_COST: f64 = 5.0;
/// How much faster the model must predict a larger tile group than a smaller one before the
/// planner takes it. Measured, groups of several threads never ran clearly faster than
/// one-thread tiles (2 cores: within 1%; 16 cores: 0.55-1.04×), and the model of what they cost
/// (barrier, rows shared between cores, rings in the last-level cache) is the least certain part.
const GROUP_MARGIN: f64 = 1.25;

/// The factor by which `new` must beat `best` (see [`GROUP_MARGIN`]).
fn margin(best: &Candidate, new: &Candidate) -> f64 {
    if new.tile_threads > best.tile_threads {
        GROUP_MARGIN
    } else {
        1.001
    }
}

/// Highest compute cost ([`ModelInput::tile_cost`]: κ times the row overhead) a tile sized to
/// the group's private caches may have before the planner sizes it to the last-level cache
/// instead. Tiles that spill out of the private caches ran at half the speed on the 16-core
/// server (f64 star7, 516x38 against 516x24 with dim_t 3), so a few redundant rows are cheaper.
const PRIVATE_TILE_MAX_COST: f64 = 1.6;

/// Share of the private caches a lattice pass's working set (its rings and one streamed plane)
/// may fill and still count as held in them. The rest goes to what else passes through them:
/// the byte arrays, the staging row, the lines level 1's prefetches bring in ahead of use; and
/// rings cycling through their slots (43 planes per level in a ring of planes) keep no slack
/// under a near-full cache. On the 16-core host (2 MiB L2s, D3Q19 `f32` 256³, 16 threads,
/// MLUPS) `dim_t` 3 strips of 1.1-1.5 MB ran as fast as or faster than the 1.9 MB 262×20 that
/// filled the L2 in every pairing on three boots: 262×16 1,256-1,291 against 1,195-1,278;
/// 262×12 1,099 / 1,034 and 262×16 882 / 902 against 814 / 738, then 262×16 939 / 1,007 / 785
/// against 761 / 995 / 761; 262×14 1,008, 822 and 868 against 954, 664 and 700.
pub(crate) const LATTICE_PRIVATE_SHARE: f64 = 0.75;

/// Modelled time of one barrier round across `n` threads, microseconds (0 for one thread).
pub fn barrier_us(n: usize) -> f64 {
    if n <= 1 {
        0.0
    } else {
        (BARRIER_NS_BASE + BARRIER_NS_PER_THREAD * n as f64) / 1e3
    }
}

/// Share of the time tile groups are busy when `tiles` equal units of work (tiles, or tiles'
/// chunks of z) are claimed by `groups` groups (the last round may leave some idle).
pub fn balance(tiles: usize, groups: usize) -> f64 {
    let groups = groups.max(1);
    tiles as f64 / (groups * tiles.div_ceil(groups).max(1)) as f64
}

/// Eq. (3): η = ⌈γ / Γ⌉, the fewest time steps per pass that lift a kernel demanding γ bytes
/// per op off a machine's memory roofline of Γ bytes per op (at least 1).
pub fn eta(kernel_bytes_per_op: f64, machine_bytes_per_op: f64) -> usize {
    ((kernel_bytes_per_op / machine_bytes_per_op).ceil() as usize).max(1)
}

/// Eq. (1): bytes of on-chip storage a `dim_X × dim_Y` tile needs with `dim_t` levels of
/// `2R + 2` planes of `E`-byte elements.
pub fn working_set(e: usize, r: usize, dim_t: usize, dim_x: usize, dim_y: usize) -> usize {
    e * (2 * r + 2) * dim_t * dim_x * dim_y
}

/// Eq. (2): κ, the overestimation of bandwidth and compute from ghost zones, for tiles on an
/// unbounded grid.
pub fn kappa(r: usize, dim_t: usize, dim_x: usize, dim_y: usize) -> f64 {
    let shrink = |d: usize| 1.0 - (2 * r * dim_t) as f64 / d as f64;
    1.0 / (shrink(dim_x) * shrink(dim_y))
}

/// Eq. (4): the side of the square tile that fills `cache_bytes` (minimising κ), rounded down
/// to a multiple of `lanes` so rows are whole SIMD vectors (362 → 360 for the paper's SP
/// 7-point stencil with 4 MB).
pub fn square_tile(cache_bytes: usize, e: usize, r: usize, dim_t: usize, lanes: usize) -> usize {
    let side = (cache_bytes as f64 / (e * (2 * r + 2) * dim_t) as f64)
        .sqrt()
        .floor() as usize;
    let lanes = lanes.max(1);
    (side / lanes * lanes).max(lanes)
}

/// Inputs common to every candidate.
pub(crate) struct ModelInput<'a> {
    pub(crate) cost: KernelCost,
    pub(crate) kernel: &'a Kernel,
    pub(crate) dtype: DType,
    pub(crate) dims: [usize; 3],
    pub(crate) threads: usize,
    pub(crate) cache_bytes: usize,
    pub(crate) machine: &'a Machine,
}

impl ModelInput<'_> {
    /// True when both copies of the data fit in the usable cache: sweeps then hardly touch
    /// memory, and every engine is compute-bound.
    fn fits_in_cache(&self) -> bool {
        self.grid_pair_bytes() <= self.cache_bytes
    }

    /// Bytes of both copies of the data (source and destination grids).
    fn grid_pair_bytes(&self) -> usize {
        let cells: usize = self.dims.iter().product();
        2 * cells * self.cost.element_bytes
    }

    /// The memory-bound rate for `bytes` of traffic per update (unbounded for in-cache data); the
    /// lattice's streams reach their measured share of the probe's bandwidth.
    pub(super) fn memory_mups(&self, bytes: f64) -> f64 {
        if self.fits_in_cache() {
            return f64::INFINITY;
        }
        let share = if self.kernel.lbm().is_some() {
            self.machine.lattice_stream_share
        } else {
            1.0
        };
        self.stream_gbs() * share * 1e3 / bytes
    }

    /// The rate sweeps over the grid stream at with this plan's threads, GB/s (see
    /// [`Self::stream_gbs_for`]).
    fn stream_gbs(&self) -> f64 {
        self.stream_gbs_for(self.threads)
    }

    /// The rate sweeps over the grid stream at with `threads` threads, GB/s: memory's, or, when
    /// both copies of a stencil's grid fit in the usable last-level cache, that cache's
    /// measured rate for these threads. (16-core server, star7 f32 256³, 128 MiB of grids
    /// against 128 MiB usable: the naive sweep moved 113-156 GB/s counted against a 74-104 GB/s
    /// memory probe, and the blocked plan ranked by memory's rate, `dim_t` 8 143x48, ran
    /// 8,638-10,781 MUPS against the naive 14,067-16,524.) The lattice keeps
    /// memory's rate: its blocked passes stream their output past the cache with non-temporal
    /// stores, and no cache-resident lattice was measured.
    fn stream_gbs_for(&self, threads: usize) -> f64 {
        let m = self.machine;
        let memory = m.bandwidth_for(threads);
        if !self.grid_in_llc() {
            return memory;
        }
        let threads = threads.clamp(1, m.cores.max(1));
        (m.cache_gbs * threads as f64 / m.cores.max(1) as f64).max(memory)
    }

    /// Whether both copies of a stencil's grid fit in the usable last-level cache, whose rate
    /// was measured. The cache figure is the largest of the probe's doubling footprints still
    /// streamed twice as fast as memory, so the cache holds at least that much: a grid pair of
    /// exactly that size counts as fitting (the 256³ `f32` pair above, 128 MiB, streamed at
    /// 1.3-1.5x the memory probe).
    fn grid_in_llc(&self) -> bool {
        self.kernel.lbm().is_none()
            && self.machine.cache_gbs > 0.0
            && self.grid_pair_bytes() <= self.machine.usable_llc_bytes()
    }

    /// The compute-bound rate for rows of `row` cells.
    pub(super) fn compute_mups(&self, row: usize) -> f64 {
        let rate =
            self.machine
                .sustained_gops(self.dtype, self.threads, self.kernel.lbm().is_some())
                * 1e3
                / self.cost.ops_per_update as f64;
        rate / self.row_cost(row)
    }

    /// Time of computing a row of `row` cells relative to its cells' share of an endless row
    /// (see [`Machine::row_overhead_cells`]).
    ///
    /// The lattice's rate was measured on rows of [`LATTICE_PROBE_ROW`] nodes, which paid the
    /// overhead already: its rows cost relative to those (2-core EPYC, D3Q19 f32 192³ `dim_t` 4
    /// 200×24-32: 140-169 MLUPS useful at κ ≈ 1.2, a kernel rate of ~186 where the full charge
    /// allowed 165; 100×100 tiles 74-95).
    fn row_cost(&self, row: usize) -> f64 {
        let cost = |row: usize| 1.0 + self.machine.row_overhead_cells / row.max(1) as f64;
        if self.kernel.lbm().is_some() {
            return cost(row) / cost(LATTICE_PROBE_ROW);
        }
        cost(row)
    }

    /// How fast this kernel runs with its rings spilled out of the private caches, relative to
    /// rings that stay in them: both follow the last level's rate per core, the stencils'
    /// ([`Machine::spill_speed`]) needing more of it than the lattice's
    /// ([`Machine::llc_core_speed`]): the collision does so much arithmetic per byte that a
    /// fast shared L3 costs it nothing measurable (the fastest rings were 7.6 MB on a 2-core
    /// Xeon with 2 MiB L2s, where star7 f64 rings of 3.1 MB ran at 0.73-0.76× the speed of
    /// L2-resident ones), but on the 16-core server, whose L3 gives each core 18.7 GB/s,
    /// rings within the 2 MiB L2s ran 1.2-1.6× faster than larger ones.
    fn spill_speed(&self) -> f64 {
        if self.kernel.lbm().is_some() {
            self.machine.llc_core_speed()
        } else {
            self.machine.spill_speed()
        }
    }

    /// Average length of the rows a blocked pass computes with loaded tile width `width`: rows
    /// shrink by 2R per level, R·(dim_t + 1) less than the loaded width on average, and are
    /// never longer than the grid's updated cells (the engine clips the ghost zones outside
    /// the grid: a grid 3 cells wide computes rows of 1 at every level).
    fn blocked_row(&self, width: usize, dim_t: usize) -> usize {
        let interior = self.dims[0] - 2 * self.kernel.fixed_boundary();
        (width.min(self.full(0, dim_t)) - self.cost.radius * (dim_t + 1)).min(interior)
    }

    /// Compute time per useful update of a tile relative to an unbounded one: redundant
    /// updates (κ) times the fixed cost of its rows.
    fn tile_cost(&self, tile: [usize; 2], dim_t: usize) -> f64 {
        self.redundancy(tile, dim_t) * self.row_cost(self.blocked_row(tile[0], dim_t))
    }

    /// The candidate for `engine` with the compute rate for rows of `row` cells and
    /// `memory_mups`.
    pub(super) fn finish(
        &self,
        engine: Engine,
        (dim_t, tile): (usize, [usize; 2]),
        kappa: f64,
        working_set: usize,
        (row, memory_mups): (usize, f64),
    ) -> Candidate {
        let compute_mups = self.compute_mups(row);
        let (rate, bound) = self.overlap(compute_mups, memory_mups, dim_t);
        Candidate {
            engine,
            dim_t,
            tile,
            kappa,
            working_set,
            compute_mups,
            memory_mups,
            predicted_mups: rate / kappa,
            bound,
            gpu: None,
            measured_mups: None,
            tile_threads: self.threads,
        }
    }

    /// The naive sweep: κ = 1; each value is read once while the `2R + 2` planes it touches stay
    /// in cache, otherwise the planes around it are re-read from memory. The lattice streams
    /// each population to exactly one neighbour, so it reads every value once whatever the
    /// cache (D3Q19 f32 256³ on 16 cores: 57.8 GB/s of populations against a 64.7 GB/s probe,
    /// where the re-read term predicted 211 MLUPS and 378 were measured).
    pub(crate) fn naive(&self) -> Candidate {
        let [nx, ny, _] = self.dims;
        let r = self.cost.radius;
        let planes = working_set(self.cost.element_bytes, r, 1, nx, ny);
        // The planes need the cache only between one plane's reads, not for tiles the blocking
        // budget keeps apart: all of the usable cache counts (star7 f64 512³ on a 2-core Xeon
        // with 8 MiB usable: 8 MiB of planes, 1,043 MUPS = 16.7 GB/s counted, no re-reads).
        let fits = planes <= self.machine.usable_llc_bytes();
        let bytes = if fits || self.kernel.lbm().is_some() {
            self.cost.bytes_per_update
        } else {
            self.cost.bytes_per_update + 2 * r * self.cost.element_bytes
        };
        let memory = self.memory_mups(bytes as f64);
        let row = self.inner(0);
        self.finish(Engine::Naive, (1, [nx, ny]), 1.0, planes, (row, memory))
    }

    /// The reference loop: one scalar lane on one core, whatever the plan's thread count.
    pub(crate) fn reference(&self) -> Candidate {
        let mut c = self.naive();
        c.engine = Engine::Reference;
        let scalar = self
            .machine
            .sustained_gops(self.dtype, 1, self.kernel.lbm().is_some())
            * 1e3
            / self.machine.lanes(self.dtype) as f64
            / self.cost.ops_per_update as f64;
        c.compute_mups = scalar;
        if c.memory_mups.is_finite() {
            c.memory_mups *= self.stream_gbs_for(1) / self.stream_gbs();
        }
        (c.predicted_mups, c.bound) = self.overlap(scalar, c.memory_mups, 1);
        c
    }

    /// The blocked engine with `dim_t` levels, loaded tile `tile` and tile groups of
    /// `tile_threads` threads; `None` when the tile leaves no valid output. The rate combines
    /// compute / κ and memory (`overlap`), times the share of time groups are busy
    /// ([`balance`]), the share of a pipeline step not spent in the barrier ([`barrier_us`])
    /// and the slowdown of rows next to another thread's rows.
    pub(crate) fn blocked(
        &self,
        dim_t: usize,
        tile: [usize; 2],
        tile_threads: usize,
    ) -> Option<Candidate> {
        let r = self.cost.radius;
        // A tile wider than the grid covers it once (the engines clamp it so, see `settle`):
        // model the tile that runs, so a huge user tile cannot overflow the working set.
        let tile = [0, 1].map(|a| tile[a].min(self.full(a, dim_t)));
        if tile[0] <= 2 * r * dim_t || tile[1] <= 2 * r * dim_t {
            return None;
        }
        let (n, groups) = self.grouping(tile_threads);
        let kappa = self.redundancy(tile, dim_t);
        // Eq. (1); for the lattice the rings it really keeps (`lattice_working_set`), which
        // decide whether they spill out of the private caches. Charged eq. (1)'s 76 planes per
        // level, every `dim_t` 3 strip spilled and the planner took `dim_t` 2 260×12, which
        // the aligned row kernel beats at `dim_t` 3 on the 16-core host (D3Q19 f32
        // 256³, MLUPS: 262×16 1,256-1,291 and 262×20 1,195-1,278 against 1,000-1,131 on one
        // boot; 841-882, 854-860 and 819-916 on a slower one).
        let ws = if self.kernel.lbm().is_some() {
            self.lattice_working_set(tile, dim_t, n)
        } else {
            working_set(self.cost.element_bytes, r, dim_t, tile[0], tile[1])
        };
        let memory = self.memory_mups(self.cost.bytes_per_update as f64 / dim_t as f64)
            / self.write_cost(dim_t);
        let row = self.blocked_row(tile[0], dim_t);
        let mut c = self.finish(Engine::Blocked, (dim_t, tile), kappa, ws, (row, memory));
        c.tile_threads = n;
        // κ counts redundant updates (compute); memory traffic grows with the loaded ghost
        // zones instead: each tile reads its whole loaded region and writes its output.
        // Rings that overflow the group's private caches live in the last level and slow the
        // kernels down (one level per pass keeps no rings).
        let spill = if dim_t > 1 && ws > self.held_cache(n) {
            self.spill_speed()
        } else {
            1.0
        };
        let (compute, memory) = (
            c.compute_mups * spill / kappa,
            c.memory_mups / self.memory_kappa(tile, dim_t),
        );
        (c.predicted_mups, c.bound) = self.overlap(compute, memory, dim_t);
        if dim_t == 1 {
            // One level per pass: the threads claim one tile's plane at a time, with no groups
            // and no barrier (see cpu::blocked).
            return Some(c);
        }
        // Groups claim units of work: a tile's chunk of z.
        let units = self.units(dim_t, tile, groups);
        // Time of one pipeline step of a group: its useful updates at its share of the rate,
        // then the barrier.
        let out = |a: usize| (tile[a] - 2 * r * dim_t).min(self.inner(a)) as f64;
        let useful = out(0) * out(1) * dim_t as f64;
        let rate = c.predicted_mups * n as f64 / self.threads.max(1) as f64;
        let work_us = useful / rate;
        let sync = if work_us.is_finite() && work_us > 0.0 {
            work_us / (work_us + barrier_us(n))
        } else {
            1.0
        };
        let remote = if n > 1 {
            let rows_per_thread = (tile[1].min(self.full(1, dim_t)) as f64 / n as f64).max(1.0);
            1.0 / (1.0 + REMOTE_ROW_COST * 2.0 * r as f64 / rows_per_thread)
        } else {
            1.0
        };
        c.predicted_mups *= balance(units, groups) * sync * remote;
        Some(c)
    }

    /// Rate and bound from a configuration's compute and memory rates (per useful update, all
    /// threads). The paper's model overlaps the two perfectly: min(compute, memory). On
    /// measured machines a stencil sweep does not: a core waits for memory and computes in
    /// turn (in a blocked pass only level 1 reads memory, and the other levels cannot hide it),
    /// so the times add: t = t_c + t_m. Measured star7 f32 512³ naive sweeps (MUPS, against
    /// min() / the sum): 16-core host, 1 thread 1,027 (1,663 / 913), 4 threads 3,211 (6,654 /
    /// 3,658), 16 threads 7,740 (13,213 / 8,946); 2-core Xeon 2,168 (3,162 / 1,988). And min()
    /// rated star7 `dim_t` 2 level with 3-5 on 16 cores, where `dim_t` 2 measured 7.7-11.0 G
    /// updates/s and `dim_t` 3-4 10.0-13.8. Kernels whose arithmetic covers their traffic
    /// (γ ≤ Γ) keep min(): the core has work to overlap the loads with (box27 f32 on 16 cores:
    /// naive 5,520-6,341 MUPS, blocked `dim_t` 3 5,230-5,916, where the sum ranked blocked
    /// first). So does the paper's machine (no row overhead).
    ///
    /// The lattice's collision overlaps the loads of its 38 streams within a level, so one
    /// level per pass keeps min(); but in a blocked pass only level 1 streams memory, and the
    /// `dim_t − 1` levels computed from cache cannot hide its wait: a pass over a node takes
    /// max(t_c, dim_t·t_m) + (dim_t − 1)·t_c (per-update times), plus the copy of its last level
    /// to memory ([`Self::streamed_output`]). On the 2-core EPYC, D3Q19 f32
    /// 192³ (MLUPS, strips, five runs each): `dim_t` 2 99-142, 3 86-166, 4 107-169, where min() ranked
    /// `dim_t` 2 first (161, 148, 127) and this ranks 3-4 (with the lattice's stream share).
    pub(super) fn overlap(&self, compute: f64, memory: f64, dim_t: usize) -> (f64, Bound) {
        let bound = if compute <= memory {
            Bound::Compute
        } else {
            Bound::Memory
        };
        if self.kernel.lbm().is_some() {
            let (t_c, t_m, d) = (1.0 / compute, 1.0 / memory, dim_t.max(1) as f64);
            let pass = t_c.max(d * t_m) + (d - 1.0) * t_c + self.streamed_output(dim_t);
            return (d / pass, bound);
        }
        // A core that waits for memory does not compute, so streaming kernels add the two
        // times; from the last-level cache the waits are short and overlap (16-core server,
        // star7 f32 256³ in cache: naive 16.0-19.5k MUPS where the sum predicted 15.3k, and
        // the blocked plan the sum ranked first, dim_t 4 262x24, 13.8-15.1k).
        let streaming = self.cost.bytes_per_op() > self.machine.bytes_per_op(self.dtype, false)
            && !self.grid_in_llc();
        if self.machine.row_overhead_cells == 0.0 || !streaming {
            return (compute.min(memory), bound);
        }
        (1.0 / (1.0 / compute + 1.0 / memory), bound)
    }

    /// Time per node (per update of all threads, as `1 / MUPS`) a blocked lattice pass spends
    /// streaming its last level out (`lbm::stage`): each core copies its staging rows with
    /// non-temporal stores at its own memory rate ([`Machine::core_bandwidth_gbs`]), and
    /// computes nothing meanwhile. On the 16-core host the copy took 10-12 TSC cycles per node
    /// and pass (a per-level profile), 76 bytes at 13-16 GB/s; charged, the model ranks
    /// `dim_t` 3 above 2 there, as measured with rings of rows (256³ `f32`, MLUPS: `dim_t` 3 262×20 1,072-1,167 against `dim_t` 2 260×26 925-1,074). It is
    /// added to the pass, not overlapped: where level 1 is memory-bound the same bytes are then
    /// also in its memory time, a deliberate overcharge of the copy there; and it assumes each
    /// core streams at its own rate even when all of them together would exceed the machine's.
    fn streamed_output(&self, dim_t: usize) -> f64 {
        let core = self.machine.core_bandwidth_gbs;
        if !self.streams_last_level(dim_t) || core <= 0.0 {
            return 0.0;
        }
        let bytes = (Q * self.dtype.size()) as f64;
        bytes / (core * 1e3 * self.threads.max(1) as f64)
    }

    /// Memory time of a blocked pass relative to the bandwidth probe moving the same bytes.
    /// The probe writes with ordinary stores, which read each line before overwriting it
    /// (write-allocate): its 2 counted bytes cost 3. A blocked lattice pass of several levels
    /// streams its last level out with non-temporal stores (`lbm::stage`), so its 2 cost 2
    /// (16-core host, D3Q19 256³ `dim_t` 2: 492-533 MLUPS streamed against 396-445 not; a
    /// streamed naive sweep, 505-538 against 362-398, shows the full 3/2). The stencil engine
    /// streams too when the grid exceeds the last-level cache, but is still
    /// charged the 3/2: its plans on the 16-core host were measured with that charge.
    fn write_cost(&self, dim_t: usize) -> f64 {
        if self.streams_last_level(dim_t) {
            2.0 / 3.0
        } else {
            1.0
        }
    }

    /// Whether a pass of `dim_t` levels writes its output with non-temporal stores as the
    /// planner charges it ([`Self::write_cost`], [`Self::streamed_output`]): a blocked lattice
    /// pass of several levels on x86-64 (`lbm::stage`).
    fn streams_last_level(&self, dim_t: usize) -> bool {
        self.kernel.lbm().is_some() && dim_t > 1 && cfg!(target_arch = "x86_64")
    }

    /// (threads in the largest group, groups) when the team is cut into groups of at most `n`
    /// threads (as `runtime::groups` does: ⌈threads / n⌉ groups of near-equal size).
    pub(crate) fn grouping(&self, n: usize) -> (usize, usize) {
        let threads = self.threads.max(1);
        let groups = threads.div_ceil(n.clamp(1, threads));
        (threads.div_ceil(groups), groups)
    }

    /// Bytes a blocked lattice pass keeps in cache per tile group of `n` threads with loaded
    /// tile `tile`: the rings of its `dim_t − 1` inner levels, each
    /// [`crate::blocking::rings::ring_rows`] rows of level 1's region (the tile less one node on
    /// each side), and one plane of that region of every population level 1 reads from
    /// memory. Eq. (1) charges `2R + 2 = 4` planes of all 19 populations per level, 76 planes
    /// where a ring of rows keeps a little over 24 (one-thread groups) and the last level keeps
    /// none.
    fn lattice_working_set(&self, tile: [usize; 2], dim_t: usize, n: usize) -> usize {
        let region = |a: usize| tile[a].saturating_sub(2).min(self.dims[a]);
        let whole_y = self.kernel.periodic()[1] && self.pieces(1, dim_t, tile[1]) == 1;
        let ring = ring_rows(self.grouping(n).0, whole_y, region(1), Z_CLASS_SIZES);
        ((dim_t - 1) * ring + Q * region(1)) * region(0) * self.dtype.size()
    }

    /// The full-width lattice strip for `dim_t`, as tall as its working set
    /// ([`Self::lattice_working_set`]) lets it be within `cache_bytes` (at least 2 rows).
    fn lattice_strip(&self, dim_t: usize, cache_bytes: usize, n: usize) -> [usize; 2] {
        let (fx, fy) = (self.full(0, dim_t), self.full(1, dim_t));
        let fits = |y: usize| self.lattice_working_set([fx, y], dim_t, n) <= cache_bytes;
        let mut y = 2;
        while y < fy && fits(y + 1) {
            y += 1;
        }
        [fx, y]
    }

    /// Memory traffic per useful update relative to one read and one write per cell: reads
    /// cover every tile's loaded region (ghost zones overlap between neighbouring tiles),
    /// writes only the output.
    fn memory_kappa(&self, tile: [usize; 2], dim_t: usize) -> f64 {
        let ghost = 2 * self.cost.radius * dim_t;
        let read = |a: usize| {
            let pieces = self.pieces(a, dim_t, tile[a]);
            (self.inner(a) + (pieces - 1) * ghost) as f64 / self.inner(a) as f64
        };
        (1.0 + read(0) * read(1)) / 2.0
    }

    /// Cells along axis `a` that the engines update.
    fn inner(&self, a: usize) -> usize {
        self.dims[a] - 2 * self.kernel.fixed_boundary()
    }

    /// Chunks the blocked engines cut z into for `dim_t` levels, loaded tile `tile` and
    /// `groups` tile groups (see [`crate::blocking::tiling::z_chunk_count`]).
    pub(crate) fn z_chunks(&self, dim_t: usize, tile: [usize; 2], groups: usize) -> usize {
        self.chunks_for(dim_t, self.tiles(dim_t, tile), groups)
    }

    /// Units of work (a tile's chunk of z) the tile groups share in a pass.
    fn units(&self, dim_t: usize, tile: [usize; 2], groups: usize) -> usize {
        let tiles = self.tiles(dim_t, tile);
        tiles * self.chunks_for(dim_t, tiles, groups)
    }

    /// Chunks of z for `tiles` tiles.
    fn chunks_for(&self, dim_t: usize, tiles: usize, groups: usize) -> usize {
        z_chunk_count(self.inner(2), self.cost.radius, dim_t, tiles, groups)
    }

    /// Tiles of a pass with `dim_t` levels and loaded tile `tile`.
    fn tiles(&self, dim_t: usize, tile: [usize; 2]) -> usize {
        self.pieces(0, dim_t, tile[0]) * self.pieces(1, dim_t, tile[1])
    }

    /// Tiles along axis `a` for a loaded side `side` with `dim_t` levels.
    fn pieces(&self, a: usize, dim_t: usize, side: usize) -> usize {
        if a == 0 && self.kernel.periodic()[0] {
            return 1;
        }
        let out = side.saturating_sub(2 * self.cost.radius * dim_t).max(1);
        self.inner(a).div_ceil(out)
    }

    /// The loaded side that cuts axis `a` into `pieces` tiles with `dim_t` levels.
    fn side_for(&self, a: usize, dim_t: usize, pieces: usize) -> usize {
        self.inner(a).div_ceil(pieces.max(1)) + 2 * self.cost.radius * dim_t
    }

    /// Bytes of cache a tile group of `n` threads can count on: its threads' share of their
    /// last-level cache instance (the planner's share of it) plus the same share of their
    /// private caches (current last levels do not duplicate what the private levels hold). A
    /// group of the whole team gets the usable LLC, as in the paper.
    pub(crate) fn group_cache(&self, n: usize) -> usize {
        let threads = self.threads.max(1);
        let n = self.grouping(n).0;
        let llc = self.machine.usable_llc_bytes().max(1) as f64;
        let share = self.cache_bytes as f64 / llc;
        let sharing = threads.min(self.machine.llc_shared_by()).max(1);
        let llc_part =
            (self.cache_bytes as f64 * n as f64 / sharing as f64).min(self.cache_bytes as f64);
        if n >= threads {
            return self.cache_bytes;
        }
        let private = self.machine.private_cache_bytes() as f64 * share * n as f64;
        (llc_part + private) as usize
    }

    /// The planner's share of the private caches of a group of `n` threads.
    pub(crate) fn private_cache(&self, n: usize) -> usize {
        let n = self.grouping(n).0;
        let share = self.cache_bytes as f64 / self.machine.usable_llc_bytes().max(1) as f64;
        (self.machine.private_cache_bytes() as f64 * share * n as f64) as usize
    }

    /// The part of [`Self::private_cache`] a blocked pass's working set may fill and still
    /// count as held in them: all of it for a stencil, [`LATTICE_PRIVATE_SHARE`] for a lattice.
    fn held_cache(&self, n: usize) -> usize {
        let private = self.private_cache(n);
        if self.kernel.lbm().is_some() {
            (private as f64 * LATTICE_PRIVATE_SHARE) as usize
        } else {
            private
        }
    }

    /// Group sizes the planner weighs: powers of two below the team size, and the team.
    pub(crate) fn tile_thread_options(&self) -> Vec<usize> {
        let threads = self.threads.max(1);
        let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
            .take_while(|&n| n < threads)
            .map(|n| self.grouping(n).0)
            .collect();
        v.push(threads);
        v.dedup();
        v
    }

    /// The tile for `dim_t` and groups of `n` threads: [`Self::fitted_tile_in`] for the
    /// group's cache (or for its private caches, [`Self::lattice_strip`] for a lattice), then
    /// cut into more (smaller) tiles if that evens out the work of the groups for less than it
    /// costs in κ.
    pub(crate) fn group_tile(&self, dim_t: usize, n: usize) -> [usize; 2] {
        let ghost = 2 * self.cost.radius * dim_t;
        let private = if self.kernel.lbm().is_some() {
            self.lattice_strip(dim_t, self.held_cache(n), n)
        } else {
            self.fitted_tile_in(dim_t, self.held_cache(n))
        };
        // Where rings that leave the private caches slow down, a tile that stays in them is
        // worth a few redundant rows. So is a lattice's where the last level's rate was not
        // measured: on the 16-core host a boot whose cache probe saw only 16 MiB of fast L3,
        // and no rate for it, fitted eq. (1) to L3 shares (`dim_t` 3 262×12 at κ 1.33), while its rings ran fastest within the 2 MiB L2s on every boot.
        let unmeasured_llc = self.kernel.lbm().is_some() && self.machine.cache_gbs <= 0.0;
        let base = if (self.spill_speed() < 1.0 || (unmeasured_llc && dim_t > 1))
            && private[0] > ghost
            && private[1] > ghost
            && self.tile_cost(private, dim_t) <= PRIVATE_TILE_MAX_COST
        {
            private
        } else {
            // Eq. (1) for last-level caches, lattices included: strips fitted to their real
            // rings there (2-core EPYC, D3Q19 f32 192³: `dim_t` 6 204×51 against eq. (1)'s
            // `dim_t` 4 200×36) ran no faster (113-155 against 127-165 MLUPS).
            self.fitted_tile_in(dim_t, self.group_cache(n))
        };
        let groups = self.grouping(n).1;
        if groups == 1 || dim_t == 1 || base[0] <= ghost || base[1] <= ghost {
            return base;
        }
        let (px, py) = (
            self.pieces(0, dim_t, base[0]),
            self.pieces(1, dim_t, base[1]),
        );
        let x_cut = !self.kernel.periodic()[0];
        let score = |t: [usize; 2]| {
            let units = self.units(dim_t, t, groups);
            balance(units, groups) / self.tile_cost(t, dim_t)
        };
        let mut best = (score(base), base);
        for qy in (py..=py + groups).take_while(|&q| q <= self.inner(1)) {
            let last_x = if x_cut { px + groups } else { px };
            for qx in (px..=last_x).take_while(|&q| q <= self.inner(0)) {
                let t = [
                    if qx == px {
                        base[0]
                    } else {
                        self.side_for(0, dim_t, qx)
                    },
                    if qy == py {
                        base[1]
                    } else {
                        self.side_for(1, dim_t, qy)
                    },
                ];
                let s = score(t);
                if s > best.0 * 1.001 {
                    best = (s, t);
                }
            }
        }
        best.1
    }

    /// The best blocked candidate for `dim_t`: over the group sizes (or the given one), with the
    /// given tile or each group size's own. Larger groups must beat smaller ones by
    /// [`GROUP_MARGIN`].
    pub(crate) fn best_blocked(
        &self,
        dim_t: usize,
        tile: Option<[usize; 2]>,
        tile_threads: Option<usize>,
    ) -> Option<Candidate> {
        let options = match tile_threads {
            Some(n) => vec![n],
            // One level per pass has no groups (see `blocked`): one candidate.
            None if dim_t == 1 => vec![self.threads.max(1)],
            None => self.tile_thread_options(),
        };
        let mut best: Option<Candidate> = None;
        for n in options {
            let t = tile.unwrap_or_else(|| self.group_tile(dim_t, n));
            if let Some(c) = self.blocked(dim_t, t, n) {
                if best
                    .as_ref()
                    .is_none_or(|b| c.predicted_mups > b.predicted_mups * margin(b, &c))
                {
                    best = Some(c);
                }
            }
        }
        best
    }

    /// The loaded tile side that covers axis `a` (0 = x, 1 = y) in one piece with `dim_t`
    /// levels: the updated extent plus the ghost zones of width R·dim_t on both sides.
    pub(crate) fn full(&self, a: usize, dim_t: usize) -> usize {
        let (r, fixed) = (self.cost.radius, self.kernel.fixed_boundary());
        self.dims[a] - 2 * fixed + 2 * r * dim_t
    }

    /// κ for this kernel's geometry (fixed boundary layers for stencils, periodic or closed
    /// faces for lattices).
    fn redundancy(&self, tile: [usize; 2], dim_t: usize) -> f64 {
        match self.kernel {
            Kernel::Stencil(_) | Kernel::Stencil2(_) | Kernel::Filter(_) | Kernel::Wave(_) => {
                tiling::redundancy(self.dims, self.cost.radius, tile, dim_t)
            }
            Kernel::Lbm(k) => {
                crate::blocking::lattice::redundancy(self.dims, k.periodic, tile, dim_t)
            }
        }
    }

    /// The tile for `dim_t`: the lowest compute cost (exact κ on this grid times the row
    /// overhead, see [`Self::tile_cost`]) among tiles that satisfy eq. (1) — eq. (4)'s square,
    /// clipped to the grid with the freed cache area given to the other side, and a full-width
    /// strip (κ_x = 1 and long rows, which the CPU kernels run fastest; preferred unless the
    /// square is clearly better).
    #[cfg(test)]
    pub(crate) fn fitted_tile(&self, dim_t: usize) -> [usize; 2] {
        self.fitted_tile_in(dim_t, self.cache_bytes)
    }

    /// [`Self::fitted_tile`] for `cache_bytes` of cache.
    pub(crate) fn fitted_tile_in(&self, dim_t: usize, cache_bytes: usize) -> [usize; 2] {
        let r = self.cost.radius;
        let e = self.cost.element_bytes;
        let lanes = self.machine.lanes(self.dtype);
        let side = square_tile(cache_bytes, e, r, dim_t, lanes);
        let area = cache_bytes / (e * (2 * r + 2) * dim_t);
        let (fx, fy) = (self.full(0, dim_t), self.full(1, dim_t));
        let square = if side >= fx {
            [fx, (area / fx).min(fy)]
        } else if side >= fy {
            let x = (area / fy).min(fx);
            [if x == fx { fx } else { x / lanes * lanes }, fy]
        } else {
            [side, side]
        };
        let strip = [fx, (area / fx).min(fy)];
        let usable = |t: [usize; 2]| t[0] > 2 * r * dim_t && t[1] > 2 * r * dim_t;
        let cost = |t: [usize; 2]| self.tile_cost(t, dim_t);
        if self.kernel.lbm().is_some() {
            // A periodic x axis is never cut (see blocking::lattice), and lattice tiles of short rows
            // ran far below the model on every host (D3Q19 f64 256³ on 16 cores: `dim_t` 3
            // 44×35 tiles 148-155 MLUPS against 186-199 naive; f32 192³ on 2 cores: `dim_t` 4
            // 100×100 74-95 against 200×24 strips 114-163): lattices get full-width strips.
            return strip;
        }
        match (usable(square), usable(strip)) {
            (true, true) if cost(strip) <= 1.01 * cost(square) => strip,
            (true, _) => square,
            (false, true) => strip,
            (false, false) => {
                // No tile within the cache leaves output at this depth (a small cache, a deep
                // `dim_t` the user fixed): tiles whose output is as wide as their ghost zones
                // (κ at most 2 per axis), priced by the model as rings that spill, rather than
                // a tile no engine can run.
                let ghost = 2 * r * dim_t;
                let side = (2 * ghost).max(ghost + lanes);
                let grown_square = [square[0].max(side).min(fx), square[1].max(side).min(fy)];
                let grown_strip = [fx, strip[1].max(side).min(fy)];
                if cost(grown_strip) <= 1.01 * cost(grown_square) {
                    grown_strip
                } else {
                    grown_square
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stencil;

    /// Section VI-A/B of the 3.5D paper, with C = 4 MB (half the Core i7's LLC).
    #[test]
    fn paper_tile_sizes_and_overestimation() {
        const C: usize = 4 << 20;
        // SP 7-point: γ = 0.5 > Γ = 0.29 gives η = 2; eq. (4) gives 362, used as 360; κ ≈ 1.02.
        let m = Machine::paper_core_i7();
        let s7 = Stencil::seven_point(0.4, 0.1);
        let gamma = 8.0 / s7.ops_per_update() as f64;
        assert_eq!(gamma, 0.5);
        assert_eq!(eta(gamma, m.bytes_per_op(DType::F32, false)), 2);
        assert_eq!(square_tile(C, 4, 1, 2, 4), 360);
        assert!(working_set(4, 1, 2, 360, 360) <= C);
        assert!((kappa(1, 2, 360, 360) - 1.02).abs() < 0.005);
        // DP 7-point: γ = 1.0 > Γ = 0.59, η = 2, tile 256, κ ≈ 1.03 (the paper rounds to 1.04).
        assert_eq!(eta(1.0, m.bytes_per_op(DType::F64, false)), 2);
        assert_eq!(square_tile(C, 8, 1, 2, 2), 256);
        assert!((kappa(1, 2, 256, 256) - 1.03).abs() < 0.01);
        // LBM (E = 80 / 160 bytes, dim_t = 3): 66 -> 64 (κ 1.21) and 46 -> 44 (κ 1.34).
        assert_eq!(square_tile(C, 80, 1, 3, 4), 64);
        assert!((kappa(1, 3, 64, 64) - 1.21).abs() < 0.01);
        assert_eq!(square_tile(C, 160, 1, 3, 4), 44);
        assert!((kappa(1, 3, 44, 44) - 1.34).abs() < 0.01);
    }

    #[test]
    fn planner_prefers_full_width_strips_when_they_waste_less() {
        let m = Machine::paper_core_i7();
        let kernel = crate::Kernel::from(Stencil::seven_point(0.4, 0.1));
        let input = |dims| ModelInput {
            cost: kernel.cost(DType::F32),
            kernel: &kernel,
            dtype: DType::F32,
            dims,
            threads: 4,
            cache_bytes: 4 << 20,
            machine: &m,
        };
        // 512³: a 514 x 255 strip (κ 1.016) beats the 360² square (κ 1.023).
        assert_eq!(input([512, 512, 512]).fitted_tile(2), [514, 255]);
        // 2048² planes: a strip would be 63 rows tall (κ 1.07): the square wins.
        assert_eq!(input([2048, 2048, 64]).fitted_tile(2), [360, 360]);
    }

    /// A cache too small for any tile with output at the asked depth still gives a tile an
    /// engine can run (a 2-core CI host with a small cache share planned star:4 `f64`
    /// `dim_t` 3 on 21×23×19 as 20×20, which has none).
    #[test]
    fn a_small_cache_still_gives_a_tile_with_output() {
        let m = Machine::paper_core_i7();
        let kernel = crate::Kernel::from(Stencil::from_name("star:4").unwrap());
        for (dims, cache_bytes) in [([21, 23, 19], 64 << 10), ([400, 300, 50], 96 << 10)] {
            let input = ModelInput {
                cost: kernel.cost(DType::F64),
                kernel: &kernel,
                dtype: DType::F64,
                dims,
                threads: 1,
                cache_bytes,
                machine: &m,
            };
            for dim_t in 1..=4 {
                let t = input.fitted_tile(dim_t);
                let ghost = 2 * 4 * dim_t;
                assert!(
                    t[0] > ghost && t[1] > ghost,
                    "{dims:?} dim_t {dim_t}: {t:?}"
                );
                assert!(t[0] <= input.full(0, dim_t) && t[1] <= input.full(1, dim_t));
                assert!(
                    input.blocked(dim_t, t, 1).is_some(),
                    "{dims:?} dim_t {dim_t}"
                );
            }
        }
    }

    #[test]
    fn fitted_tile_uses_freed_area() {
        let m = Machine::paper_core_i7();
        let kernel = crate::Kernel::from(Stencil::seven_point(0.4, 0.1));
        let input = ModelInput {
            cost: kernel.cost(DType::F32),
            kernel: &kernel,
            dtype: DType::F32,
            dims: [66, 4000, 100],
            threads: 4,
            cache_bytes: 4 << 20,
            machine: &m,
        };
        let [tx, ty] = input.fitted_tile(2);
        assert_eq!(tx, 68, "whole width: interior 64 + 2·R·dim_t");
        assert!(ty > 360 && working_set(4, 1, 2, tx, ty) <= 4 << 20, "{ty}");
    }
}
