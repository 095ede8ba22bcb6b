//! The GPU performance model, after AN5D (section 5): for a blocking configuration it counts the
//! work every thread does (all threads of a block compute every time level, halo or not),
//! the shared-memory and global-memory traffic, the floating-point and issue load, and the SM
//! occupancy the register and shared-memory use allow; the predicted time is the largest of the
//! compute, shared-memory and global-memory times over the SM utilisation. Configurations that
//! would need more than 255 registers per thread are pruned, as AN5D prunes by register count.

use serde::{Deserialize, Serialize};

use super::candidate::{Bound, Candidate, GpuLaunch};
use super::kernel::KernelCost;
use super::Engine;
use crate::gpu::{within_launch_limits, BlockedShape, GpuInfo};
use crate::DType;

/// A user-chosen GPU launch shape: threads per block, cells per thread in y (and in x for the
/// shuffle kernel), stream block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuShape {
    /// Threads per block `[x, y]`; x must be a multiple of 32 (exactly 32 when `rx` > 0).
    pub block: [usize; 2],
    /// Cells per thread along y.
    pub ry: usize,
    /// Cells per thread along x with x neighbours by warp shuffle (star stencils; the tile is
    /// `32·rx` wide); 0 for the shared-memory kernel.
    #[serde(default)]
    pub rx: usize,
    /// The shuffle kernel's levels skewed: each level runs R+1 planes behind the one below, so
    /// all levels exchange their planes behind one barrier per plane (else one per level).
    /// Ignored when `rx` is 0: the shared-memory kernel's schedule follows the precision.
    #[serde(default)]
    pub skew: bool,
    /// Output planes per block along z.
    pub stream_block: usize,
}

/// A GPU problem: kernel cost and shape, precision, grid size and device.
pub(crate) struct GpuModel<'a> {
    pub(crate) cost: KernelCost,
    pub(crate) boxed: bool,
    pub(crate) dtype: DType,
    pub(crate) dims: [usize; 3],
    pub(crate) gpu: &'a GpuInfo,
    /// Whether the search offers only shapes one launch over `dims` can run: not where the
    /// user named gpu-blocked, as a run split over MPI ranks launches each rank's block alone.
    pub(crate) one_launch: bool,
}

/// What a gpu-blocked launch shape takes of an SM.
struct Footprint {
    threads: usize,
    cells_per_thread: usize,
    /// The shuffle kernel (x neighbours by warp shuffle) rather than the shared-memory one.
    shuffle: bool,
    /// The shuffle kernel's levels skewed (one barrier per plane for all of them).
    skewed: bool,
    registers: usize,
    shared_bytes: usize,
    blocks_per_sm: usize,
}

/// How one pass of a launch shape covers the grid.
struct Coverage {
    /// Output planes per block along z.
    hz: usize,
    blocks: usize,
    /// Planes each block streams (its output planes and the halo of every level).
    steps: f64,
    /// Cell updates computed, ghost zones included.
    computed: f64,
    /// Cell updates the pass needs.
    useful: f64,
}

/// Candidate thread-block widths, tile heights and stream-block lengths the search tries
/// (8 cells per thread in y measured 15-60% below the model on an H100: left out).
const BLOCK_X: [usize; 3] = [32, 64, 128];
/// Heights of 24 and 48 with 3 cells per thread give deep or wide stencils in `f64` a block
/// small enough for their registers (star radius 4, `f64`, dim_t 2 has no other fit).
const TILE_Y: [usize; 6] = [8, 16, 24, 32, 48, 64];
const CELLS_Y: [usize; 4] = [1, 2, 3, 4];
/// Cells per thread in y of the shuffle shapes autotuning times beyond the search
/// ([`GpuModel::search_beyond_estimate`]): on an H200 the fastest star7 `f64` shapes hold 6.
const CELLS_Y_BEYOND: [usize; 6] = [1, 2, 3, 4, 5, 6];
const STREAM_BLOCKS: [usize; 4] = [32, 64, 128, 256];
/// L2 bandwidth as a multiple of device-memory bandwidth (halo re-reads of neighbouring tiles
/// hit L2).
const L2_OVER_DRAM: f64 = 2.0;
/// Non-floating-point instructions per computed cell and level besides the shared-memory
/// accesses (address arithmetic, boundary tests, register moves), counted in the sm_90 SASS.
const LOOP_OVERHEAD: f64 = 11.0;
/// Cycles a block waits per streamed plane beyond its issue time (fitted on an H100 SXM).
const PLANE_LATENCY: f64 = 2250.0;
/// Share of the measured copy rate the lattice-Boltzmann naive kernel is expected to reach.
const LBM_NAIVE_EFFICIENCY: f64 = 0.85;
/// Seconds of launch overhead per lattice-Boltzmann launch.
const LBM_LAUNCH_SECONDS: f64 = 5e-6;
/// Bytes of neighbour loads an SM's L1 serves per cycle to the naive kernel (fitted on an H100
/// SXM: 85 in `f32`, 123 in `f64`; the hardware's peak is 128).
const NAIVE_L1_BYTES_PER_CLOCK: f64 = 100.0;
/// Cycles between a warp's instructions in a level's dependent chain (fitted on an H100 SXM).
const WARP_CPI: f64 = 2.5;
/// The shuffle kernel's fitted terms (a struct, so that a test can refit them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShuffleFit {
    /// Other instructions per computed cell and level (beyond the FP work and the exchange).
    pub(crate) overhead: f64,
    /// Instructions per cell and streamed plane, whatever dim_t: staging the plane, storing the
    /// output, addresses and the loop.
    pub(crate) plane_instructions: f64,
    /// A block's fixed cycles of wait per streamed plane.
    pub(crate) plane_latency: f64,
    /// Cycles of wait per barrier chain (one per level, or with skewed levels all levels'
    /// exchanges behind one barrier, counted as two).
    pub(crate) barrier_latency: f64,
    /// How compute and memory time combine: a pass takes (c^k + m^k)^(1/k), their sum at
    /// k = 1, the larger at k = ∞.
    pub(crate) overlap: f64,
    /// Cycles between a warp's dependent instructions (this kernel's own figure; the
    /// shared-memory kernel uses `WARP_CPI`).
    pub(crate) warp_cpi: f64,
    /// How a level's issue time and its warps' dependent chains combine, as `overlap` does
    /// compute and memory: fewer warps hide less of each other's latency.
    pub(crate) chain_overlap: f64,
    /// The exchange's shared-memory time as it weighs against the issue time: its bytes at the
    /// nominal shared bandwidth times this factor (above 1: banks and the staging copies leave
    /// less than the nominal rate to the exchange).
    pub(crate) shared_weight: f64,
    /// How that weighted shared-memory time combines with the compute time (memory's
    /// included), as `overlap` does: at infinity only when it is the larger.
    pub(crate) shared_overlap: f64,
}

/// The shuffle kernel's terms, fitted by `refit_shuffle_terms` (a grid search) to the 350
/// shapes in `docs/results/h100/shuffle-shapes.txt`, timed on an H100 SXM (star radius 1-4,
/// both precisions and schedules, level 0's planes staged in shared memory), and the 80 star7
/// shapes in `docs/results/h200/shuffle-shapes.txt`, timed on an H200. Among the fits within
/// 0.06 of the lowest summed RMS error of the log (0.158): those whose first choices meet the
/// bounds the tests pin (star7 `f32`: dim_t 4, 32x16 threads, 2x3 cells, the fastest shape
/// measured on both cards; 32x12 2x4, 1-5% slower, ranked first by the fits of lowest error),
/// and of those the one of lowest error: RMS 0.116 on the H100 (0.121 before the exchange's
/// shared-memory time was a term; 0.28 with the terms of the kernel before its planes were
/// staged) and 0.091 on the H200 (0.139). Each block waits for its own staged copies and
/// barriers, so memory time is only partly hidden behind the arithmetic (k = 1.5; with the
/// larger of the two, k = ∞, the best fit over the first 79 H100 shapes was 0.19 and ranked
/// dim_t 2 first, which measured 0.7x of dim_t 3-4); a plane's fixed work is instructions, not
/// a wait; a level's issue time and its warps' dependent chains (3.5 cycles apart) take the
/// larger; and the exchange's shared-memory traffic, at two thirds of the nominal bandwidth,
/// shows through the compute time in part (k = 8): without it the shapes of one cell row per
/// thread, every y neighbour from shared memory, were predicted up to 1.5x too fast, and on the
/// H200 the first `f64` choice (32x24 threads of 2x1 cells) ran 0.82x of the fastest shape.
/// (The kernel before, with registers prefetching one plane ahead, fitted: 4 other instructions
/// per cell and level, 1,000 cycles of wait per plane and 200 per barrier chain, both maxima;
/// RMS 0.23 over 427 shapes.)
const SHUFFLE_FIT: ShuffleFit = ShuffleFit {
    overhead: 0.0,
    plane_instructions: 32.0,
    plane_latency: 0.0,
    barrier_latency: 100.0,
    overlap: 1.5,
    warp_cpi: 3.5,
    chain_overlap: f64::INFINITY,
    shared_weight: 1.5,
    shared_overlap: 8.0,
};
/// The in-place shuffle kernel's terms (the `f64` kernel at dim_t 2 and more,
/// `LEVELS_IN_PLACE`), fitted by `refit_in_place_terms` (a grid search) to the 140 star7 `f64`
/// shapes timed on an H200 (`docs/results/h200/shuffle-shapes*.txt`): the lowest RMS error of
/// the log (0.072, against 0.169 with [`SHUFFLE_FIT`] and the copying kernel's register
/// estimate), and among the fits of that error the one whose first choice is the fastest of the
/// 26 shapes timed in one call. Its chains of dependent instructions cost less than the copying
/// kernel's (1.0 cycle apart against 3.5): those terms under-predicted the shapes of 8 warps
/// and 4-6 cells per thread by up to 0.62x. On the H200 (512^3, G updates/s, median of 5, two
/// rounds) its choices ran star7 (1000 steps; dim_t 3, 32x16 threads of 1x4 cells, skewed,
/// 64-plane chunks) 456.5 against 427.1-428.1 for the copying terms' choice, and star:2 (240
/// steps; dim_t 2, 32x12 threads of 1x5 cells) 222.6 against 208.6.
const SHUFFLE_FIT_IN_PLACE: ShuffleFit = ShuffleFit {
    overhead: 0.0,
    plane_instructions: 28.0,
    plane_latency: 0.0,
    barrier_latency: 100.0,
    overlap: 1.5,
    warp_cpi: 1.0,
    chain_overlap: 4.0,
    shared_weight: 1.5,
    shared_overlap: 8.0,
};
/// The shuffle kernel's registers per thread: per 32-bit value it keeps (accumulators, the
/// levels' planes, weights) and a base, fitted to 16 counts of ptxas for sm_90 (both precisions, star radius 1-4, dim_t 1-4; RMS error 9%, against 11% with the
/// shared-memory kernel's 1.35 and 28). Where the estimate exceeds the block's share of the
/// register file by up to an eighth, ptxas fits the kernel into the share without spilling:
/// dim_t 4, 32x16 threads, 2x3 cells, `f32`, estimated 144, took 128 (the same code in 32x12
/// blocks, uncapped, took 134) and ran 816-822 G updates/s, the fastest star7 shape measured;
/// the shapes that spilled were estimated 31-49% over (dim_t 4 32x16 2x4: 136 bytes spilled,
/// 457; dim_t 5 32x16 2x3: 80 bytes, 533; skewed dim_t 4 32x16 2x3: 40 bytes, 572).
///
/// The counts are of the kernel that copies each level's input plane into registers of its own,
/// as the `f32` kernel does. The `f64` kernel reads them in place (`LEVELS_IN_PLACE`) and
/// takes as many registers or fewer (ptxas: 126 against 144 for dim_t 3, 32x12 threads of 2x2
/// cells; 172 against 238 for 32x8 of 2x3), so its shapes past dim_t 1 take terms of their own
/// ([`SHUFFLE_REGISTERS_IN_PLACE`], [`SHUFFLE_FIT_IN_PLACE`]).
const SHUFFLE_REGISTERS: (f64, f64) = (1.37, 19.0);
/// The in-place shuffle kernel's registers per thread (the `f64` kernel at dim_t 2 and more):
/// per 32-bit value, as [`SHUFFLE_REGISTERS`] counts them, and a base. A least-squares fit to
/// the 36 counts of ptxas for sm_90 below their block's share in
/// `docs/results/h200/shuffle-shapes-forced.txt` gives 1.02 per value (0.54 for those the
/// skewed schedule adds) and 33. With 1.0 for every value and 24, the unskewed shapes ptxas
/// compiled to 124-128 registers, the most 256 threads may take for two blocks per SM, are
/// estimated at 128 or less, and the skewed shapes that spilled at their share (32x12 threads
/// of 2x3 cells, dim_t 3: 56 bytes; of 1x5 cells, dim_t 4: 16 bytes) lie beyond the search's
/// eighth of headroom.
const SHUFFLE_REGISTERS_IN_PLACE: (f64, f64) = (1.0, 24.0);
/// How far above the block's register share a user's launch shape may be estimated. Of 1,128
/// star7 shapes compiled by ptxas for sm_90 (both precisions, dim_t 1-6), those estimated at
/// 1.125-1.75x the share compiled without spilling 145 times and spilled 119 times; all 427
/// estimated higher spilled. Among the first is the fastest `f64` shape measured on an H200
/// (dim_t 4, 32x8 threads of 1x6 cells, skewed: 336 estimated, 240 compiled, share 248).
const FORCED_REGISTER_HEADROOM: f64 = 0.75;
/// The most registers per thread the search offers the shuffle kernel (estimated).
const SHUFFLE_REGISTER_CEILING: usize = 232;
/// Cells per thread in x the search tries for the shuffle kernel.
const CELLS_X: [usize; 2] = [1, 2];

/// What the model takes of one variant of the shuffle kernel: its timing terms, its register
/// terms (per 32-bit value, base) and the cells per thread in x and y its search tries.
struct ShuffleKernel {
    fit: ShuffleFit,
    registers: (f64, f64),
    cells_x: &'static [usize],
    cells_y: &'static [usize],
}

/// The kernel that copies each level's input plane into registers of its own (`f32`, and `f64`
/// at dim_t 1).
const COPYING_KERNEL: ShuffleKernel = ShuffleKernel {
    fit: SHUFFLE_FIT,
    registers: SHUFFLE_REGISTERS,
    cells_x: &CELLS_X,
    cells_y: &CELLS_Y,
};

/// The kernel whose levels read their inputs in place (`f64` past dim_t 1). Its registers leave
/// room for up to 6 cells per thread in y; in x it keeps to 1, as 2 ran 0.80-0.85x the model on
/// 32x16 threads (H200, `docs/results/h200/shuffle-shapes-f64.txt`).
const IN_PLACE_KERNEL: ShuffleKernel = ShuffleKernel {
    fit: SHUFFLE_FIT_IN_PLACE,
    registers: SHUFFLE_REGISTERS_IN_PLACE,
    cells_x: &[1],
    cells_y: &CELLS_Y_BEYOND,
};
/// Warps per block the search tries for the shuffle kernel.
const WARPS_Y: [usize; 6] = [4, 8, 12, 16, 24, 32];

impl GpuModel<'_> {
    /// The variant of the shuffle kernel this precision runs at `dim_t`: the one whose levels
    /// read their inputs in place where the host compiles it so (`LEVELS_IN_PLACE`, per
    /// precision), past dim_t 1 (at dim_t 1 there is no level above the first, and the kernel
    /// is the copying one).
    fn shuffle_kernel(&self, dim_t: usize) -> &'static ShuffleKernel {
        if crate::gpu::levels_in_place(self.dtype) && dim_t > 1 {
            &IN_PLACE_KERNEL
        } else {
            &COPYING_KERNEL
        }
    }

    fn interior(&self) -> [usize; 3] {
        self.dims.map(|n| n - 2 * self.cost.radius)
    }

    fn updates(&self) -> f64 {
        self.interior().iter().map(|&n| n as f64).product()
    }

    fn clock_hz(&self) -> f64 {
        self.gpu.clock_ghz * 1e9
    }

    fn fp_lanes(&self) -> f64 {
        (match self.dtype {
            DType::F32 => self.gpu.fp32_lanes_per_sm,
            DType::F64 => self.gpu.fp64_lanes_per_sm,
        }) as f64
            * self.gpu.sms as f64
    }

    /// Floating-point instructions per computed cell in the blocked kernel.
    fn fp_instructions(&self) -> f64 {
        let r = self.cost.radius as f64;
        if self.boxed {
            (2.0 * r + 1.0).powi(3)
        } else {
            2.0 + 6.0 * r
        }
    }

    /// `estimate` = (compute, shared-memory, global-memory seconds; SM efficiency).
    fn finish(
        &self,
        engine: Engine,
        dim_t: usize,
        tile: [usize; 2],
        kappa: f64,
        estimate: ([f64; 3], f64),
        launch: Option<GpuLaunch>,
    ) -> Candidate {
        let (times, efficiency) = estimate;
        let time = times.iter().copied().fold(0.0, f64::max) / efficiency;
        let bound = if times[2] >= times[0] && times[2] >= times[1] {
            Bound::Memory
        } else if times[1] >= times[0] {
            Bound::SharedMemory
        } else {
            Bound::Compute
        };
        let updates = self.updates() * dim_t as f64;
        let mups = updates / time / 1e6;
        let [c, s, g] = times;
        Candidate {
            engine,
            dim_t,
            tile,
            kappa,
            working_set: launch.as_ref().map_or(0, |l| l.shared_bytes),
            compute_mups: updates / (c.max(s) / efficiency) / 1e6,
            memory_mups: updates / (g / efficiency) / 1e6,
            predicted_mups: mups,
            bound,
            gpu: launch,
            measured_mups: None,
            tile_threads: 0,
        }
    }

    /// The naive kernel: one thread per column; the read-only cache serves neighbour reuse, so
    /// memory traffic is one read and one write per update; every point is a cached load.
    pub(crate) fn naive(&self) -> Candidate {
        let u = self.updates();
        let e = self.dtype.size() as f64;
        let points = if self.boxed {
            (2 * self.cost.radius + 1).pow(3)
        } else {
            6 * self.cost.radius + 1
        } as f64;
        let fp = u * self.fp_instructions() / (self.fp_lanes() * self.clock_hz());
        let issue = u * (self.fp_instructions() + points + 6.0)
            / (128.0 * self.gpu.sms as f64 * self.clock_hz());
        // DRAM moves one read and one write per update; the neighbour loads through L1 add to
        // that rather than overlapping with it (fitted additively on an H100: star R = 1..4 and
        // box R = 1..2, both precisions, 512³; within 20% except box in f64).
        let dram = u * 2.0 * e / (self.gpu.bandwidth_gbs * 1e9);
        let l1 =
            u * points * e / (NAIVE_L1_BYTES_PER_CLOCK * self.gpu.sms as f64 * self.clock_hz());
        let global = dram + l1;
        let [nx, ny, _] = self.dims;
        self.finish(
            Engine::GpuNaive,
            1,
            [nx, ny],
            1.0,
            ([fp.max(issue), 0.0, global], 1.0),
            None,
        )
    }

    /// The lattice-Boltzmann `gpu-naive` kernel (two copies or in place: the same traffic):
    /// one thread per node, every update reads and writes the 19 populations once and reads a
    /// class byte; the arithmetic is the CPU kernel's count. Memory-bound kernels of this kind
    /// reach about [`LBM_NAIVE_EFFICIENCY`] of the measured copy rate.
    pub(crate) fn lbm_naive(&self) -> Candidate {
        let u = self.updates();
        let arith = (self.cost.ops_per_update
            - self.cost.loads_per_update
            - self.cost.stores_per_update) as f64;
        let fp = u * arith / (self.fp_lanes() * self.clock_hz());
        let issue = u * (arith + 60.0) / (128.0 * self.gpu.sms as f64 * self.clock_hz());
        // The launch (and the occasional flag check) costs a few microseconds per step, which
        // is what small lattices see.
        let global = u * self.cost.bytes_per_update as f64 / (self.gpu.bandwidth_gbs * 1e9)
            + LBM_LAUNCH_SECONDS * LBM_NAIVE_EFFICIENCY;
        let [nx, ny, _] = self.dims;
        self.finish(
            Engine::GpuNaive,
            1,
            [nx, ny],
            1.0,
            ([fp.max(issue), 0.0, global], LBM_NAIVE_EFFICIENCY),
            None,
        )
    }

    /// The blocked kernel with `shape` and `stream_block` output planes per block; `None` when
    /// the configuration leaves no valid output, would spill registers or cannot be resident.
    #[cfg(test)]
    pub(crate) fn blocked(&self, shape: BlockedShape, stream_block: usize) -> Option<Candidate> {
        self.blocked_fitted(shape, stream_block, self.shuffle_kernel(shape.dim_t).fit)
    }

    /// [`Self::blocked`] for a launch shape the user chose, which may be estimated at up to 1.75x
    /// the block's register share ([`FORCED_REGISTER_HEADROOM`]). Near the share only the
    /// compiled kernel tells whether it spills: `__launch_bounds__` holds it to the share, and
    /// `Plan::compiled_resources` (and `bench --json`) report what it spilled. `None` for shapes
    /// that cannot run or would surely spill.
    pub(crate) fn blocked_forced(
        &self,
        shape: BlockedShape,
        stream_block: usize,
    ) -> Option<Candidate> {
        let fp = self.footprint_within(&shape, stream_block, true)?;
        Some(self.candidate(
            shape,
            stream_block,
            fp,
            self.shuffle_kernel(shape.dim_t).fit,
        ))
    }

    /// [`Self::blocked`] with the shuffle kernel's terms `fit`.
    pub(crate) fn blocked_fitted(
        &self,
        shape: BlockedShape,
        stream_block: usize,
        fit: ShuffleFit,
    ) -> Option<Candidate> {
        let fp = self.footprint(&shape, stream_block)?;
        self.launches(&shape, stream_block)
            .then(|| self.candidate(shape, stream_block, fp, fit))
    }

    /// Whether one pass of `shape` in chunks of `stream_block` planes launches within CUDA's
    /// grid limits: a block row per tile along y and per chunk along z (a pipe millions of
    /// planes deep takes more than 65,535 chunks of a short stream block). The search offers
    /// only such shapes, unless the user named gpu-blocked ([`GpuModel::one_launch`]); a shape
    /// the user forces is not checked here either, since a run split over MPI ranks launches
    /// each rank's block alone, and the engine refuses what one process cannot launch.
    fn launches(&self, shape: &BlockedShape, stream_block: usize) -> bool {
        if !self.one_launch {
            return true;
        }
        within_launch_limits(self.tile_grid(shape, stream_block))
    }

    /// The grid of blocks of one pass of `shape` over the interior, as the engine launches it:
    /// tiles of the valid width along x and y, z-chunks of `stream_block` planes (at most the
    /// interior's) along z. A shape whose tile keeps no output counts one column or row a tile.
    fn tile_grid(&self, shape: &BlockedShape, stream_block: usize) -> [usize; 3] {
        let halo = 2 * self.cost.radius * shape.dim_t;
        let [ix, iy, iz] = self.interior();
        [
            ix.div_ceil(shape.tx().saturating_sub(halo).max(1)),
            iy.div_ceil(shape.ty().saturating_sub(halo).max(1)),
            iz.div_ceil(stream_block.min(iz).max(1)),
        ]
    }

    /// The candidate of `shape` with footprint `fp`.
    fn candidate(
        &self,
        shape: BlockedShape,
        stream_block: usize,
        fp: Footprint,
        fit: ShuffleFit,
    ) -> Candidate {
        let cover = self.coverage(&shape, stream_block);
        let (times, efficiency) = self.pass_times(&shape, &fp, &cover, fit);
        let launch = GpuLaunch {
            block: [shape.bx, shape.by],
            ry: shape.ry,
            rx: shape.rx,
            // The shared-memory kernel's schedule follows the precision (`source::skewed`).
            skew: fp.shuffle && shape.skew,
            stream_block: cover.hz,
            registers: fp.registers,
            shared_bytes: fp.shared_bytes,
            blocks_per_sm: fp.blocks_per_sm,
            blocks: cover.blocks,
            times_ms: times.map(|t| t * 1e3),
            sm_efficiency: efficiency,
            buffering: None,
        };
        self.finish(
            Engine::GpuBlocked,
            shape.dim_t,
            [shape.tx(), shape.ty()],
            cover.computed / cover.useful,
            (times, efficiency),
            Some(launch),
        )
    }

    /// What a launch shape takes of an SM (registers, shared memory, resident blocks); `None`
    /// when the shape leaves no valid output, would spill registers or cannot be resident.
    fn footprint(&self, shape: &BlockedShape, stream_block: usize) -> Option<Footprint> {
        self.footprint_within(shape, stream_block, false)
    }

    /// [`Self::footprint`], with the register headroom of a `forced` shape.
    fn footprint_within(
        &self,
        shape: &BlockedShape,
        stream_block: usize,
        forced: bool,
    ) -> Option<Footprint> {
        // No block holds more than 1024 threads a side, nor a thread more than 1024 cells:
        // larger values (a user's) would overflow the products below.
        if shape.bx.max(shape.by).max(shape.rx).max(shape.ry) > 1024 {
            return None;
        }
        let r = self.cost.radius;
        let (dim_t, tx, ty) = (shape.dim_t, shape.tx(), shape.ty());
        let threads = shape.bx * shape.by;
        let shuffle = shape.rx > 0;
        // Skewing changes nothing at dim_t 1 (one level).
        let skewed = shuffle && shape.skew && dim_t > 1;
        if !shape.bx.is_multiple_of(32)
            || !(32..=1024).contains(&threads)
            || tx <= 2 * r * dim_t
            || ty <= 2 * r * dim_t
            || shape.ry > ty
            || shape.ry == 0
            || stream_block == 0
            || (shuffle
                && (self.boxed || shape.bx != 32 || shape.ry < r || shape.rx * shape.ry > 32))
        {
            return None;
        }
        let registers = self.register_estimate(shape, shuffle, skewed);
        // __launch_bounds__ makes every thread of the block fit in the register file: above
        // that share the compiler spills, which costs 10-50x (measured), so such shapes are
        // pruned as AN5D prunes by register count. The shuffle kernel's estimate may exceed
        // the limit by an eighth, which ptxas absorbs (`SHUFFLE_REGISTERS`), and a user's shape
        // by three quarters (`blocked_forced`); such a shape runs at the limit.
        let register_limit = (self.gpu.registers_per_sm / threads).min(255) / 8 * 8;
        let allowed = if forced {
            register_limit + (register_limit as f64 * FORCED_REGISTER_HEADROOM) as usize
        } else if shuffle {
            register_limit + register_limit / 8
        } else {
            register_limit
        };
        if registers > allowed {
            return None;
        }
        let registers = registers.min(register_limit);
        let shared_bytes = shape.shared_bytes(r, self.dtype);
        if shared_bytes > self.gpu.shared_per_block {
            return None;
        }
        let g = self.gpu;
        let blocks_per_sm = (g.max_threads_per_sm / threads)
            .min(g.registers_per_sm / (registers * threads).max(1))
            .min(g.shared_per_sm / (shared_bytes + 1024))
            .min(32);
        (blocks_per_sm > 0).then_some(Footprint {
            threads,
            cells_per_thread: shape.rx.max(1) * shape.ry,
            shuffle,
            skewed,
            registers,
            shared_bytes,
            blocks_per_sm,
        })
    }

    /// Registers per thread, rounded up to the allocation granule of 8.
    fn register_estimate(&self, shape: &BlockedShape, shuffle: bool, skewed: bool) -> usize {
        let (r, dim_t) = (self.cost.radius, shape.dim_t);
        let words = self.dtype.size() / 4;
        let w = 2 * r + 1;
        let cells_per_thread = shape.rx.max(1) * shape.ry;
        // Values a thread keeps in registers: the accumulators of every level and plane, the
        // current and prefetched planes, and a box's row buffer (the shuffle kernel: a star's
        // R+1 weights per cell instead of the third plane); fitted to what ptxas allocates on
        // sm_90 (about 1.35 registers per value plus ~28 for addresses and indices; for the
        // shuffle kernel's shapes within 7% in f32, up to 14% low in f64). Skewed levels keep
        // each level's completed plane for a step longer: ptxas gave 164 registers against 146
        // unskewed for dim_t 3 with 2x3 cells. Level 0's next planes wait in shared memory, not
        // registers.
        let values = if shuffle {
            cells_per_thread * (dim_t * w + 1 + r + 1 + if skewed { dim_t } else { 0 })
        } else {
            dim_t * w * shape.ry + 3 * shape.ry + if self.boxed { w } else { 0 }
        };
        let (per_value, base) = if shuffle {
            self.shuffle_kernel(dim_t).registers
        } else {
            (1.35, 28.0)
        };
        let registers = ((words * values) as f64 * per_value + base).ceil() as usize;
        registers.div_ceil(8) * 8
    }

    /// How a pass of `shape` covers the grid: blocks, planes each streams, cells computed.
    fn coverage(&self, shape: &BlockedShape, stream_block: usize) -> Coverage {
        let r = self.cost.radius;
        let (dim_t, tx, ty) = (shape.dim_t, shape.tx(), shape.ty());
        let hz = stream_block.min(self.interior()[2]);
        let blocks: usize = self.tile_grid(shape, stream_block).iter().product();
        let steps = (hz + 2 * r * dim_t) as f64;
        Coverage {
            hz,
            blocks,
            steps,
            computed: blocks as f64 * steps * (dim_t * tx * ty) as f64,
            useful: self.updates() * dim_t as f64,
        }
    }

    /// Per computed cell and level: shared-memory (and shuffle) instructions, the bytes they
    /// move through the SM's shared-memory pipe, the other instructions, and the block's fixed
    /// wait per plane.
    fn exchange_costs(&self, shape: &BlockedShape, skewed: bool, fit: ShuffleFit) -> [f64; 4] {
        let r = self.cost.radius;
        let e = self.dtype.size();
        let ry = shape.ry as f64;
        if shape.rx > 0 {
            // 2R shuffles per row of rx cells (two per 64-bit value); per warp and level
            // min(2R, ry) rows stored and 2R loaded, as pairs of values where rx is even.
            let rx = shape.rx as f64;
            let shuffles = 2.0 * r as f64 / rx * (e / 4) as f64;
            let vectors = shape.rx.div_ceil(2) as f64;
            let rows = (shape.ry.min(2 * r) + 2 * r) as f64;
            let shared = rows * vectors / (rx * ry);
            let bytes = shuffles * 4.0 + rows * e as f64 / ry;
            let barriers = if skewed { 2 } else { shape.dim_t };
            return [
                shuffles + shared,
                bytes,
                fit.overhead,
                fit.plane_latency + fit.barrier_latency * barriers as f64,
            ];
        }
        let w = 2 * r + 1;
        let loads = if self.boxed {
            ((shape.ry + 2 * r) * w - shape.ry) as f64 / ry
        } else {
            2.0 * r as f64 + 2.0 * (1..=r).map(|d| d.min(shape.ry) as f64).sum::<f64>() / ry
        };
        [
            loads + 1.0,
            (1.0 + loads) * e as f64,
            LOOP_OVERHEAD,
            PLANE_LATENCY,
        ]
    }

    /// The model's times of one pass (compute, shared memory, global memory, seconds) and the
    /// SM efficiency (wave quantisation).
    ///
    /// Compute: FP pipes, and the SM's issue slots (4 schedulers x 32 lanes) under the latency
    /// of the streaming loop: a block spends per plane a fixed wait (the prefetched plane's
    /// arrival and the pipeline drain at the barriers) plus the issue time of its dim_t levels;
    /// other resident blocks fill the wait until the issue slots are full. Fitted on 33
    /// measured configurations of the 7-point stencil on an H100 SXM (both precisions, dim_t
    /// 2..6): 14% RMS error.
    fn pass_times(
        &self,
        shape: &BlockedShape,
        fp: &Footprint,
        cover: &Coverage,
        fit: ShuffleFit,
    ) -> ([f64; 3], f64) {
        let g = self.gpu;
        let e = self.dtype.size();
        let [exchange, exchange_bytes, overhead, plane_latency] =
            self.exchange_costs(shape, fp.skewed, fit);
        let fp_time = cover.computed * self.fp_instructions() / (self.fp_lanes() * self.clock_hz());
        // A half-rate FP64 pipe takes two issue slots' worth of a warp's instructions.
        let fp_issue = self.fp_instructions() * 128.0 * g.sms as f64 / self.fp_lanes();
        let instructions = fp_issue + exchange + overhead;
        let level_issue = (fp.threads * fp.cells_per_thread) as f64 * instructions / 128.0;
        // A warp issues its own dependent instructions no faster than WARP_CPI cycles apart.
        let cpi = if fp.shuffle { fit.warp_cpi } else { WARP_CPI };
        let level_chain = fp.cells_per_thread as f64 * instructions * cpi;
        let sm_plane_cycles =
            self.plane_cycles(shape, fp, fit, plane_latency, level_issue, level_chain);
        let resident = fp.blocks_per_sm * g.sms;
        let waves = cover.blocks.div_ceil(resident);
        let efficiency = cover.blocks as f64 / (waves * resident) as f64;
        let issue_time =
            cover.blocks as f64 * cover.steps * sm_plane_cycles / (self.clock_hz() * g.sms as f64);
        // Shared memory: the exchange's bytes per computed cell.
        let shared_time = cover.computed * exchange_bytes / (g.shared_bandwidth_gbs() * 1e9);
        // Global memory: DRAM sees each value read and written once per pass; the overlapping
        // tile loads are served by L2.
        let cells = self.dims.iter().product::<usize>() as f64;
        let dram = (cells + self.updates()) * e as f64 / (g.bandwidth_gbs * 1e9);
        let tile_bytes = (shape.tx() * shape.ty() * e) as f64;
        let l2 =
            cover.blocks as f64 * cover.steps * tile_bytes / (L2_OVER_DRAM * g.bandwidth_gbs * 1e9);
        let global_time = dram.max(l2);
        let compute = fp_time.max(issue_time);
        // The shuffle kernel: memory time shows through (`ShuffleFit::overlap`).
        let compute = if fp.shuffle && fit.overlap.is_finite() {
            (compute.powf(fit.overlap) + global_time.powf(fit.overlap)).powf(1.0 / fit.overlap)
        } else {
            compute
        };
        // And so does its exchange through shared memory (`ShuffleFit::shared_weight`): the
        // shapes of one cell row per thread (every y neighbour from shared memory) ran
        // 0.65-0.9x the prediction without it, on the H100 and the H200 alike.
        let compute = if fp.shuffle {
            p_norm(compute, fit.shared_weight * shared_time, fit.shared_overlap)
        } else {
            compute
        };
        ([compute, shared_time, global_time], efficiency)
    }

    /// SM cycles per plane of one block, given the block's fixed wait per plane and one
    /// level's issue time (`level_issue`, all of the block's warps) and dependency chain.
    fn plane_cycles(
        &self,
        shape: &BlockedShape,
        fp: &Footprint,
        fit: ShuffleFit,
        plane_latency: f64,
        level_issue: f64,
        level_chain: f64,
    ) -> f64 {
        let b = fp.blocks_per_sm as f64;
        let dim_t = shape.dim_t as f64;
        if !fp.shuffle {
            let block_plane = plane_latency + dim_t * level_issue.max(level_chain);
            return block_plane.max(b * dim_t * level_issue) / b;
        }
        // The shuffle kernel's resident blocks do not hide each other's wait: measured, a
        // block's time per plane is the wait plus the whole SM's issue time, for the plane's
        // own work and its dim_t levels.
        let plane_issue =
            (fp.threads * fp.cells_per_thread) as f64 * fit.plane_instructions / 128.0;
        let level = p_norm(b * level_issue, level_chain, fit.chain_overlap);
        (plane_latency + b * plane_issue + dim_t * level) / b
    }

    /// Every blocked configuration the search space allows (with `dim_t` and `tile` fixed when
    /// given), best predicted first.
    pub(crate) fn search(&self, dim_t: Option<usize>, tile: Option<[usize; 2]>) -> Vec<Candidate> {
        self.search_with(dim_t, tile, &|d| self.shuffle_kernel(d).fit)
    }

    /// [`Self::search`] with the shuffle kernel's terms `fit` at every dim_t.
    #[cfg(test)]
    pub(crate) fn search_fitted(
        &self,
        dim_t: Option<usize>,
        tile: Option<[usize; 2]>,
        fit: ShuffleFit,
    ) -> Vec<Candidate> {
        self.search_with(dim_t, tile, &|_| fit)
    }

    /// [`Self::search`] with the shuffle kernel's terms `fit_at(dim_t)`.
    fn search_with(
        &self,
        dim_t: Option<usize>,
        tile: Option<[usize; 2]>,
        fit_at: &dyn Fn(usize) -> ShuffleFit,
    ) -> Vec<Candidate> {
        let mut out = Vec::new();
        let dim_t_values = dim_ts(dim_t);
        let bxs: Vec<usize> = tile.map_or_else(|| BLOCK_X.to_vec(), |t| vec![t[0]]);
        let tys: Vec<usize> = tile.map_or_else(|| TILE_Y.to_vec(), |t| vec![t[1]]);
        let hzs = self.stream_blocks();
        for &dim_t in &dim_t_values {
            let fit = fit_at(dim_t);
            for &bx in &bxs {
                for &ty in &tys {
                    for &ry in CELLS_Y.iter().filter(|&&ry| ty % ry == 0) {
                        for &hz in &hzs {
                            let shape = BlockedShape {
                                dim_t,
                                bx,
                                by: ty / ry,
                                ry,
                                rx: 0,
                                skew: false,
                            };
                            out.extend(self.blocked_fitted(shape, hz, fit));
                        }
                    }
                }
            }
            // The shuffle kernel, for stars.
            for shape in self.shuffle_shapes(dim_t, tile, self.shuffle_kernel(dim_t).cells_y) {
                out.extend(hzs.iter().filter_map(|&hz| self.searched(shape, hz, fit)));
            }
        }
        out.sort_by(|a, b| b.predicted_mups.total_cmp(&a.predicted_mups));
        out
    }

    /// The shuffle kernel's shapes that [`Self::search`] leaves out for their estimated
    /// registers (and those of 5 and 6 cells per thread in y, which it does not try) but a
    /// user may force ([`Self::blocked_forced`]), best predicted first: autotuning times the
    /// best of them too, as ptxas compiles many of them without spilling and the model does not
    /// rank them (see [`SHUFFLE_REGISTERS`]).
    pub(crate) fn search_beyond_estimate(
        &self,
        dim_t: Option<usize>,
        tile: Option<[usize; 2]>,
    ) -> Vec<Candidate> {
        let dim_t_values = dim_ts(dim_t);
        let hzs = self.stream_blocks();
        let mut out = Vec::new();
        for &dim_t in &dim_t_values {
            for shape in self.shuffle_shapes(dim_t, tile, &CELLS_Y_BEYOND) {
                for &hz in &hzs {
                    let kernel = self.shuffle_kernel(dim_t);
                    let searched = kernel.cells_y.contains(&shape.ry)
                        && self.searched(shape, hz, kernel.fit).is_some();
                    if !searched && self.launches(&shape, hz) {
                        out.extend(self.blocked_forced(shape, hz));
                    }
                }
            }
        }
        out.sort_by(|a, b| b.predicted_mups.total_cmp(&a.predicted_mups));
        out
    }

    /// The shuffle kernel's candidate of `shape` as the search offers it: within the register
    /// estimate and below [`SHUFFLE_REGISTER_CEILING`]. Estimates near ptxas's ceiling of 255
    /// leave no room for its misjudgement (star:3 f32 dim_t 2, 32x8 threads, 2x4 cells: 240
    /// estimated, 0.65x its prediction).
    fn searched(&self, shape: BlockedShape, hz: usize, fit: ShuffleFit) -> Option<Candidate> {
        self.blocked_fitted(shape, hz, fit).filter(|c| {
            c.gpu
                .as_ref()
                .is_some_and(|l| l.registers <= SHUFFLE_REGISTER_CEILING)
        })
    }

    /// Stream blocks (output planes per thread block along z) the search tries. The whole z
    /// extent as one stream block only when it is short: on a 512³ grid it measured 10-20%
    /// below 64-128-plane blocks (fewer blocks to hide latency with). A last chunk of a few
    /// planes costs a block's whole pipeline fill for them: a rank's block of 516 planes (512
    /// and a 4-plane halo) in 64- or 128-plane chunks leaves one of 2; 4 chunks of 129 do not.
    fn stream_blocks(&self) -> Vec<usize> {
        let iz = self.interior()[2];
        let mut hzs: Vec<usize> = STREAM_BLOCKS
            .iter()
            .filter(|&&h| h < iz)
            .map(|&h| balanced_chunk(iz, h))
            .collect();
        hzs.dedup();
        if iz <= STREAM_BLOCKS[STREAM_BLOCKS.len() - 1] {
            hzs.push(iz);
        }
        hzs
    }

    /// The shuffle kernel's shapes at `dim_t` with `cells_y` cells per thread in y (of `tile`
    /// when given; none for boxes): both level schedules where dim_t > 1. (Measured on an H100
    /// at 512³: star7 1.8x the shared-memory kernel's best shape in f32 and 1.4x in f64; radius
    /// 2-4 in f32 1.4-1.7x, in f64 1.0-1.5x even before its planes were staged.)
    fn shuffle_shapes(
        &self,
        dim_t: usize,
        tile: Option<[usize; 2]>,
        cells_y: &[usize],
    ) -> Vec<BlockedShape> {
        let mut out = Vec::new();
        if self.boxed {
            return out;
        }
        for &rx in self.shuffle_kernel(dim_t).cells_x {
            for &by in &WARPS_Y {
                for &ry in cells_y {
                    // Left out where they measured far below the model: 8 cells of f64 per
                    // thread (0.65x its prediction, at the register file's limit), and dim_t 1
                    // for radius 1 and 2, where the kernel without temporal blocking ran below
                    // gpu-naive (star7 f32 156-228 G updates/s against 262; star:2 211-214
                    // against 225), which the model does not see.
                    if (self.dtype == DType::F64 && rx * ry > 6)
                        || (dim_t == 1 && self.cost.radius <= 2)
                    {
                        continue;
                    }
                    for skew in [false, true] {
                        let shape = BlockedShape::shuffle(dim_t, by, ry, rx, skew);
                        if (skew && dim_t == 1)
                            || tile.is_some_and(|t| t != [shape.tx(), shape.ty()])
                        {
                            continue;
                        }
                        out.push(shape);
                    }
                }
            }
        }
        out
    }
}

/// The pass depths a search tries: `dim_t` when fixed, else 1 to the planner's deepest.
fn dim_ts(dim_t: Option<usize>) -> Vec<usize> {
    dim_t.map_or_else(|| (1..=super::PLANNER_MAX_DIM_T).collect(), |d| vec![d])
}

/// `(a^k + b^k)^(1/k)`: how two times combine that overlap in part (their sum at k = 1, the
/// larger at k = ∞).
fn p_norm(a: f64, b: f64, k: f64) -> f64 {
    if k.is_finite() {
        (a.powf(k) + b.powf(k)).powf(1.0 / k)
    } else {
        a.max(b)
    }
}

/// `h` planes per stream block over `iz`, unless that leaves a last chunk thinner than half
/// of `h`: then the length that splits `iz` into as many equal chunks (within a plane) as
/// `h` would make, rounded.
fn balanced_chunk(iz: usize, h: usize) -> usize {
    let last = iz - (iz.div_ceil(h) - 1) * h;
    if 2 * last >= h {
        h
    } else {
        iz.div_ceil(((iz + h / 2) / h).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kernel, Stencil};

    pub(crate) fn h100() -> GpuInfo {
        GpuInfo::h100_for_tests()
    }

    fn model<'a>(name: &str, dtype: DType, gpu: &'a GpuInfo) -> GpuModel<'a> {
        let s = Stencil::from_name(name).unwrap();
        let boxed = s.is_box();
        GpuModel {
            cost: Kernel::from(s).cost(dtype),
            boxed,
            dtype,
            dims: [512, 512, 512],
            gpu,
            one_launch: true,
        }
    }

    /// A pipe of 256 x 65,535 interior planes launches in chunks of 256 planes at most; half a
    /// chunk more (a shorter last chunk would be spread over the others) and no stream block
    /// keeps to CUDA's 65,535 chunks, so the search offers no blocked shape (the planner then
    /// runs gpu-naive), nor does autotuning's wider search.
    #[test]
    fn the_search_keeps_to_the_launch_limits() {
        let gpu = h100();
        let pipe = |nz| GpuModel {
            dims: [34, 34, nz],
            ..model("star7", DType::F32, &gpu)
        };
        let most = STREAM_BLOCKS[STREAM_BLOCKS.len() - 1] * 65_535;
        let deepest = pipe(most + 2);
        let offered = deepest.search(None, None);
        assert!(!offered.is_empty());
        for c in &offered {
            assert_eq!(c.gpu.as_ref().unwrap().stream_block, 256, "{c:?}");
        }
        let deeper = pipe(most + 2 + 128);
        assert!(deeper.search(None, None).is_empty());
        assert!(deeper.search_beyond_estimate(None, None).is_empty());
        assert!(!deepest.search_beyond_estimate(None, None).is_empty());
        // Nor where the user named gpu-blocked.
        let named = GpuModel {
            one_launch: false,
            ..pipe(most + 2 + 128)
        };
        assert!(!named.search(None, None).is_empty());
        // A shape the user forces is left to the engine (a split run launches per block).
        let shape = offered[0].gpu.as_ref().unwrap();
        let forced = BlockedShape {
            dim_t: offered[0].dim_t,
            bx: shape.block[0],
            by: shape.block[1],
            ry: shape.ry,
            rx: shape.rx,
            skew: shape.skew,
        };
        assert!(deeper.blocked_forced(forced, 256).is_some());
    }

    #[test]
    fn the_7_point_search_keeps_to_the_register_file_and_cuts_traffic() {
        let gpu = h100();
        let m = model("star7", DType::F32, &gpu);
        let naive = m.naive();
        let best = &m.search(None, None)[0];
        for c in m.search(None, None).iter().take(5) {
            let l = c.gpu.as_ref().unwrap();
            println!(
                "dim_t {} tile {:?} block {:?} ry {} hz {} regs {} smem {} {:.0} MUPS {:?} {:?}",
                c.dim_t,
                c.tile,
                l.block,
                l.ry,
                l.stream_block,
                l.registers,
                l.shared_bytes,
                c.predicted_mups,
                c.bound,
                l.times_ms
            );
        }
        println!("naive {:.0} MUPS ({:?})", naive.predicted_mups, naive.bound);
        assert_eq!(naive.bound, Bound::Memory);
        // Blocking cuts DRAM traffic by dim_t: the memory-bound rate of the best configuration
        // is above the naive kernel's; what it achieves is bounded by the SM (issue, latency).
        assert!(best.memory_mups > naive.memory_mups, "{best:?}");
        assert!(best.predicted_mups.is_finite() && best.predicted_mups > 0.0);
        // Nothing the search proposes needs more registers than a block's share of the file.
        for c in m.search(None, None) {
            let l = c.gpu.as_ref().unwrap();
            let threads = l.block[0] * l.block[1];
            assert!(l.registers * threads <= gpu.registers_per_sm, "{c:?}");
        }
    }

    /// Shapes of the shared-memory blocked kernel timed on an H100 SXM at 512³ (the lists of
    /// `plan --autotune 70` and `--autotune 16`): `kernel dtype dim_t bx by ry hz G-updates/s`.
    const H100_SHAPES: &str = include_str!("../../docs/results/h100/gpu-shapes.txt");

    /// A shape timed on the H100: kernel, precision, shape, stream block, measured MUPS and,
    /// where read, the registers ptxas allocated.
    struct Measured {
        kernel: String,
        dtype: DType,
        shape: BlockedShape,
        hz: usize,
        mups: f64,
        registers: Option<f64>,
    }

    /// The lines of a shapes file: `kernel dtype dim_t bx by ry hz G-updates/s` (the
    /// shared-memory kernel), `kernel dtype dim_t bx by ry rx hz G-updates/s registers` (the
    /// shuffle kernel; registers `-` where not read) or `kernel dtype dim_t bx by ry rx skew hz
    /// G-updates/s registers` (the shuffle kernel with both level schedules).
    fn parse_shapes(text: &str) -> Vec<Measured> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let shuffle = f.len() >= 10;
                let skewed = f.len() == 11;
                let ints = match f.len() {
                    11 => 7,
                    10 => 6,
                    _ => 5,
                };
                let n: Vec<usize> = f[2..2 + ints].iter().map(|x| x.parse().unwrap()).collect();
                let shape = BlockedShape {
                    dim_t: n[0],
                    bx: n[1],
                    by: n[2],
                    ry: n[3],
                    rx: if shuffle { n[4] } else { 0 },
                    skew: skewed && n[5] == 1,
                };
                Measured {
                    kernel: f[0].to_string(),
                    dtype: if f[1] == "f32" {
                        DType::F32
                    } else {
                        DType::F64
                    },
                    shape,
                    hz: n[ints - 1],
                    mups: f[2 + ints].parse::<f64>().unwrap() * 1e3,
                    registers: f.get(3 + ints).and_then(|r| r.parse().ok()),
                }
            })
            .collect()
    }

    /// Parsed [`H100_SHAPES`].
    fn h100_shapes() -> Vec<Measured> {
        parse_shapes(H100_SHAPES)
    }

    /// RMS of log(predicted / measured) over `shapes` for the shared-memory blocked kernel;
    /// panics where the model refuses a measured shape.
    fn blocked_rms(gpu: &GpuInfo, shapes: &[&Measured]) -> f64 {
        let mut sum = 0.0;
        for Measured {
            kernel,
            dtype,
            shape,
            hz,
            mups,
            ..
        } in shapes
        {
            let c = model(kernel, *dtype, gpu)
                .blocked(*shape, *hz)
                .unwrap_or_else(|| panic!("{kernel} {dtype:?} {shape:?} hz {hz} was measured"));
            sum += (c.predicted_mups / mups).ln().powi(2);
        }
        (sum / shapes.len() as f64).sqrt()
    }

    /// The blocked model against 204 shapes measured on an H100 (star7, star:2 and box27, both
    /// precisions): every measured shape is one the model accepts, and its RMS error (of the
    /// log of predicted over measured) stays at the 0.25 it has over all of them (about ±28%
    /// per shape), so a change of the model that fits worse fails here. The model's fitted
    /// terms (`PLANE_LATENCY`, `WARP_CPI`) come from 33 star7 configurations alone, so the 64
    /// star:2 and box27 shapes are data the fit never saw: on them the RMS error must stay
    /// below 0.25 as well (0.21 observed), which shows the terms carry over to a wider star
    /// and to a box rather than being tuned to the stencil they were fitted on.
    #[test]
    fn the_blocked_model_fits_the_shapes_measured_on_an_h100() {
        let gpu = h100();
        let shapes = h100_shapes();
        assert_eq!(shapes.len(), 204);
        let all: Vec<&Measured> = shapes.iter().collect();
        let rms = blocked_rms(&gpu, &all);
        println!("RMS log error over {} shapes: {rms:.3}", shapes.len());
        assert!(rms < 0.27, "RMS log error {rms:.3}");
        let held_out: Vec<&Measured> = shapes.iter().filter(|m| m.kernel != "star7").collect();
        assert_eq!(held_out.len(), 64);
        let rms = blocked_rms(&gpu, &held_out);
        println!(
            "RMS log error over the {} shapes not fitted: {rms:.3}",
            held_out.len()
        );
        assert!(rms < 0.25, "RMS log error on the held-out shapes {rms:.3}");
    }

    /// Shapes of the shuffle kernel timed on an H100 SXM at 512³ since its planes are staged
    /// in shared memory (star radius 1-4, both level schedules: `kernel dtype dim_t bx by ry rx
    /// skew hz G-updates/s registers`). The kernel before (registers prefetching one plane
    /// ahead) ran 0.7-0.85x as fast.
    const H100_SHUFFLE_SHAPES: [&str; 1] =
        [include_str!("../../docs/results/h100/shuffle-shapes.txt")];

    /// Parsed [`H100_SHUFFLE_SHAPES`].
    fn h100_shuffle_shapes() -> Vec<Measured> {
        H100_SHUFFLE_SHAPES
            .iter()
            .flat_map(|t| parse_shapes(t))
            .collect()
    }

    /// The model against the shuffle kernel's 350 measured shapes: the register estimate is
    /// within 20% of ptxas's count where it was read, the RMS error of log(predicted / measured)
    /// stays below 0.13 (0.116 now; the unstaged kernel's terms give 0.28 on these shapes), and the
    /// shapes it refuses (skewed ones whose registers would not fit) all measured slower than
    /// the fastest shape it accepts for their stencil and precision, so pruning them loses
    /// nothing.
    #[test]
    fn the_shuffle_model_fits_the_shapes_measured_on_an_h100() {
        let gpu = h100();
        let shapes = h100_shuffle_shapes();
        assert_eq!(shapes.len(), 79 + 60 + 92 + 119);
        let accepted = |m: &Measured| model(&m.kernel, m.dtype, &gpu).blocked(m.shape, m.hz);
        // The fastest shape the model accepts, per stencil and precision.
        let fastest = |kernel: &str, dtype: DType| {
            shapes
                .iter()
                .filter(|m| m.kernel == kernel && m.dtype == dtype && accepted(m).is_some())
                .map(|m| m.mups)
                .fold(0.0, f64::max)
        };
        let (mut sum, mut n, mut refused) = (0.0, 0, 0);
        for m in &shapes {
            let Some(c) = accepted(m) else {
                let best = fastest(&m.kernel, m.dtype);
                assert!(
                    m.shape.skew && m.mups < best,
                    "{} {:?} {:?} hz {}: refused, measured {:.0} (fastest {best:.0})",
                    m.kernel,
                    m.dtype,
                    m.shape,
                    m.hz,
                    m.mups
                );
                refused += 1;
                continue;
            };
            let l = c.gpu.as_ref().unwrap();
            if let Some(registers) = m.registers {
                assert!(
                    (l.registers as f64 / registers - 1.0).abs() < 0.2,
                    "{:?}: {} registers estimated, {registers} allocated",
                    m.shape,
                    l.registers
                );
            }
            sum += (c.predicted_mups / m.mups).ln().powi(2);
            n += 1;
        }
        let rms = (sum / n as f64).sqrt();
        println!("RMS log error over {n} shapes ({refused} refused): {rms:.3}");
        assert!(rms < 0.13, "RMS log error {rms:.3}");
    }

    /// RMS of log(predicted / measured) under the shuffle terms `fit` over the shapes of
    /// `shapes` the model accepts (which shapes it accepts does not depend on `fit`: refusal
    /// is by registers and shared memory).
    fn shuffle_rms(shapes: &[(GpuModel<'_>, &Measured)], fit: ShuffleFit) -> f64 {
        let (mut sum, mut n) = (0.0, 0);
        for (m, s) in shapes {
            if let Some(c) = m.blocked_fitted(s.shape, s.hz, fit) {
                sum += (c.predicted_mups / s.mups).ln().powi(2);
                n += 1;
            }
        }
        (sum / n.max(1) as f64).sqrt()
    }

    /// The values a grid search tries for each of the shuffle kernel's terms (`overhead` stays 0).
    struct FitAxes<'a> {
        plane_latency: &'a [f64],
        barrier_latency: &'a [f64],
        chain_overlap: &'a [f64],
        plane_instructions: &'a [f64],
        warp_cpi: &'a [f64],
        overlap: &'a [f64],
        shared_weight: &'a [f64],
        shared_overlap: &'a [f64],
    }

    /// Every combination of `axes`, the first axis outermost.
    fn fit_grid(axes: &FitAxes<'_>) -> Vec<ShuffleFit> {
        let mut fits = vec![ShuffleFit {
            overhead: 0.0,
            ..SHUFFLE_FIT
        }];
        let mut expand = |values: &[f64], set: fn(&mut ShuffleFit, f64)| {
            fits = fits
                .iter()
                .flat_map(|f| {
                    values.iter().map(move |&v| {
                        let mut f = *f;
                        set(&mut f, v);
                        f
                    })
                })
                .collect();
        };
        expand(axes.plane_latency, |f, v| f.plane_latency = v);
        expand(axes.barrier_latency, |f, v| f.barrier_latency = v);
        expand(axes.chain_overlap, |f, v| f.chain_overlap = v);
        expand(axes.plane_instructions, |f, v| f.plane_instructions = v);
        expand(axes.warp_cpi, |f, v| f.warp_cpi = v);
        expand(axes.overlap, |f, v| f.overlap = v);
        expand(axes.shared_weight, |f, v| f.shared_weight = v);
        expand(axes.shared_overlap, |f, v| f.shared_overlap = v);
        fits
    }

    /// The shuffle terms of lowest RMS error over `shapes`, by a grid search around
    /// [`SHUFFLE_FIT`] (a coarser grid than `refit_shuffle_terms`, 720 fits).
    fn fit_shuffle(shapes: &[(GpuModel<'_>, &Measured)]) -> (f64, ShuffleFit) {
        let mut best = (f64::MAX, SHUFFLE_FIT);
        for fit in fit_grid(&FitAxes {
            plane_latency: &[0.0, 200.0],
            barrier_latency: &[0.0, 100.0],
            chain_overlap: &[2.0, 4.0, f64::INFINITY],
            plane_instructions: &[16.0, 20.0, 24.0, 28.0, 32.0],
            warp_cpi: &[2.0, 2.5, 3.0, 3.5],
            overlap: &[1.25, 1.5, 2.0],
            shared_weight: &[SHUFFLE_FIT.shared_weight],
            shared_overlap: &[SHUFFLE_FIT.shared_overlap],
        }) {
            let rms = shuffle_rms(shapes, fit);
            if rms < best.0 {
                best = (rms, fit);
            }
        }
        best
    }

    /// Hold-out check of the shuffle model's fitted form: its terms refitted (grid search) on
    /// the even lines of the shapes file predict the odd lines, which the refit never saw,
    /// with an RMS log error below 0.15 (about ±16% per shape; the planner's terms, fitted to
    /// both cards' lines, give 0.116) and no more than 0.03 worse than on the lines it was fitted to.
    /// A model form that only memorises its data (or a term that stops mattering) fits the
    /// even lines and fails the odd ones.
    #[test]
    fn the_shuffle_model_refitted_on_half_the_shapes_predicts_the_other_half() {
        let gpu = h100();
        let shapes = h100_shuffle_shapes();
        let models = |parity: usize| -> Vec<(GpuModel<'_>, &Measured)> {
            shapes
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == parity)
                .map(|(_, m)| (model(&m.kernel, m.dtype, &gpu), m))
                .collect()
        };
        let (even, odd) = (models(0), models(1));
        let (fitted, fit) = fit_shuffle(&even);
        let held_out = shuffle_rms(&odd, fit);
        println!("fitted on {} shapes (RMS {fitted:.3}): {fit:?}", even.len());
        println!(
            "RMS log error over the {} held-out shapes: {held_out:.3}",
            odd.len()
        );
        assert!(held_out < 0.15, "held-out RMS log error {held_out:.3}");
        assert!(
            held_out - fitted < 0.03,
            "held-out RMS {held_out:.3} against {fitted:.3} on the fitted shapes"
        );
    }

    /// The model's first choice for `kernel` in `dtype` under the shuffle terms `fit`, with what
    /// it measured on the H100 (`None`: not measured) and the fastest shape measured there (of
    /// both kernels' shape files).
    fn first_choice(
        kernel: &str,
        dtype: DType,
        fit: ShuffleFit,
    ) -> (BlockedShape, usize, Option<f64>, f64) {
        let measured: Vec<Measured> = h100_shapes()
            .into_iter()
            .chain(h100_shuffle_shapes())
            .collect();
        first_choice_on(&h100(), &measured, kernel, dtype, fit)
    }

    /// [`first_choice`] on `gpu`, whose measured shapes are `measured`.
    fn first_choice_on(
        gpu: &GpuInfo,
        measured: &[Measured],
        kernel: &str,
        dtype: DType,
        fit: ShuffleFit,
    ) -> (BlockedShape, usize, Option<f64>, f64) {
        let measured: Vec<&Measured> = measured
            .iter()
            .filter(|m| m.kernel == kernel && m.dtype == dtype)
            .collect();
        let fastest = measured.iter().map(|m| m.mups).fold(0.0, f64::max);
        let first = &model(kernel, dtype, gpu).search_fitted(None, None, fit)[0];
        let shape = crate::gpu::stencil::blocked_shape(
            &first
                .launch_shape()
                .expect("a gpu-blocked candidate has a launch shape"),
            first.dim_t,
        );
        let hz = first.gpu.as_ref().unwrap().stream_block;
        let got = measured
            .iter()
            .find(|m| m.shape == shape && m.hz == hz)
            .map(|m| m.mups);
        (shape, hz, got, fastest)
    }

    /// Star7 shapes of the shuffle kernel timed on an H200 at 512³ (its best 40 of each
    /// precision by the model, `plan --autotune 40`), in the H100 file's format.
    const H200_SHUFFLE_SHAPES: &str = include_str!("../../docs/results/h200/shuffle-shapes.txt");

    /// An H200 with the bandwidth its probe measured when the shapes were timed.
    fn h200() -> GpuInfo {
        GpuInfo {
            bandwidth_gbs: 4254.0,
            ..GpuInfo::h200_for_tests()
        }
    }

    /// The model on a second card, whose shapes the H100-era terms were never fitted to: over
    /// the 80 star7 shapes timed on an H200 the RMS error of log(predicted / measured) stays
    /// below 0.11 (0.091; 0.139 before the exchange's shared-memory time showed through, which
    /// over-predicted the shapes of one cell row per thread by up to 1.5x), and the first
    /// `f32` choice is within 2% of the fastest shape measured there (the `f64` choice: next
    /// test). (Before, the
    /// `f64` choice, 32x24 threads of 2x1 cells, ran 0.82x of the fastest, 32x16 of 1x3 cells
    /// skewed: 340 against 413 G updates/s.)
    #[test]
    fn the_shuffle_model_fits_the_star7_shapes_measured_on_an_h200() {
        let gpu = h200();
        let shapes = parse_shapes(H200_SHUFFLE_SHAPES);
        assert_eq!(shapes.len(), 80);
        let mut sum = 0.0;
        for m in &shapes {
            let c = model(&m.kernel, m.dtype, &gpu)
                .blocked(m.shape, m.hz)
                .unwrap_or_else(|| panic!("{:?} hz {} was measured", m.shape, m.hz));
            sum += (c.predicted_mups / m.mups).ln().powi(2);
        }
        let rms = (sum / shapes.len() as f64).sqrt();
        println!("RMS log error over {} H200 shapes: {rms:.3}", shapes.len());
        assert!(rms < 0.11, "RMS log error {rms:.3}");
        // The `f64` choice is checked against the shapes timed in one call (next test).
        let choice = first_choice_on(&gpu, &shapes, "star7", DType::F32, SHUFFLE_FIT);
        assert_first_choice_within("star7 f32", choice, 0.98);
    }

    /// Asserts that a first choice (shape, stream block, measured rate, fastest measured) was
    /// measured and ran at least `within` times the fastest.
    fn assert_first_choice_within(
        what: &str,
        (shape, hz, got, fastest): (BlockedShape, usize, Option<f64>, f64),
        within: f64,
    ) {
        let got = got.unwrap_or_else(|| {
            panic!("{what}: the first choice {shape:?} hz {hz} was not measured")
        });
        println!("{what}: first choice {shape:?} hz {hz} measured {got:.0}, fastest {fastest:.0}");
        assert!(
            got >= within * fastest,
            "{what}: {got:.0} against {fastest:.0}"
        );
    }

    /// The in-place (`f64`) kernel's terms: over the 140 star7 `f64` shapes timed on an H200
    /// (three files, each shape planned as forced so that none is refused) the RMS error of
    /// log(predicted / measured) stays below 0.08 (0.072; 0.169 with the copying kernel's terms
    /// and register estimate, which under-predicted 8-warp shapes by up to 0.62x), and the first
    /// choice is the fastest of the 26 shapes timed in one call at 1000 steps (dim_t 3, 32x16
    /// threads of 1x4 cells, skewed, 64-plane chunks: 446.4 G updates/s, against 416.5 for the
    /// copying kernel's terms' choice, 32x16 threads of 1x3 cells in 128-plane chunks). The terms
    /// were chosen on these shapes (`refit_in_place_terms`), so the first choice pins the fit
    /// rather than checking it independently.
    #[test]
    fn the_in_place_model_fits_the_f64_shapes_measured_on_an_h200() {
        let gpu = h200();
        let md = model("star7", DType::F64, &gpu);
        let shapes = h200_in_place_shapes();
        assert_eq!(shapes.len(), 140);
        let rms = forced_rms(&md, &shapes, SHUFFLE_FIT_IN_PLACE);
        println!(
            "RMS log error over {} H200 f64 shapes: {rms:.3}",
            shapes.len()
        );
        assert!(rms < 0.08, "RMS log error {rms:.3}");
        let one_call = parse_shapes(H200_F64_SHAPES);
        let choice = first_choice_on(&gpu, &one_call, "star7", DType::F64, SHUFFLE_FIT_IN_PLACE);
        assert_first_choice_within("star7 f64", choice, 0.98);
    }

    /// Shapes forced on an H200 beyond the model's choices (all compiled without spilling).
    const H200_FORCED_SHAPES: &str =
        include_str!("../../docs/results/h200/shuffle-shapes-forced.txt");

    /// A user's launch shape is refused by the register estimate only beyond 1.75x its block's
    /// share: every shape forced on the H200 plans, with its registers held to the share. The
    /// fastest `f64` shape measured there in that call (dim_t 4, 32x8 threads of 1x6 cells,
    /// skewed: 447.5 G updates/s), which the copying kernel's estimate put at 336 registers and
    /// the search left out, is estimated at 252 by the in-place kernel's and searched (ptxas:
    /// 240). Shapes that cannot run, or are estimated far beyond the share, are still refused.
    #[test]
    fn forced_shapes_are_not_refused_by_the_register_estimate() {
        let gpu = h200();
        let shapes = parse_shapes(H200_FORCED_SHAPES);
        assert_eq!(shapes.len(), 93);
        let mut beyond = 0;
        for m in &shapes {
            let md = model(&m.kernel, m.dtype, &gpu);
            let c = md
                .blocked_forced(m.shape, m.hz)
                .unwrap_or_else(|| panic!("{:?} {:?} hz {} refused", m.dtype, m.shape, m.hz));
            let l = c.gpu.as_ref().unwrap();
            assert!(l.registers <= (65536 / (32 * m.shape.by)).min(255));
            beyond += md.blocked(m.shape, m.hz).is_none() as usize;
        }
        assert_eq!(beyond, 19, "forced shapes beyond the estimate");
        let fastest = shapes
            .iter()
            .filter(|m| m.dtype == DType::F64)
            .max_by(|a, b| a.mups.total_cmp(&b.mups))
            .unwrap();
        assert_eq!(fastest.shape, BlockedShape::shuffle(4, 8, 6, 1, true));
        let md = model("star7", DType::F64, &gpu);
        assert!(md.blocked(fastest.shape, fastest.hz).is_some());
        assert_eq!(
            md.blocked_forced(fastest.shape, fastest.hz)
                .unwrap()
                .gpu
                .unwrap()
                .registers,
            248
        );
        // Too few rows for dim_t 8 (2·R·dim_t = 16 >= 8·1): refused either way.
        assert!(md
            .blocked_forced(BlockedShape::shuffle(8, 8, 1, 1, false), 128)
            .is_none());
        // A user's block whose thread count overflows (2^63 + 32 by 2 wraps to 64) is refused,
        // not launched as 64 threads.
        let huge = BlockedShape {
            bx: (1 << 63) + 32,
            by: 2,
            ..BlockedShape::shuffle(1, 2, 4, 0, false)
        };
        assert!(md.blocked_forced(huge, 128).is_none());
        // 32x16 threads (a share of 128 registers), skewed: dim_t 6 with 1x6 cells is estimated
        // at 352 (2.75x), dim_t 5 with 1x3 cells at 168 (1.31x; ptxas: 128, no spill).
        assert!(md
            .blocked_forced(BlockedShape::shuffle(6, 16, 6, 1, true), 128)
            .is_none());
        let within = BlockedShape::shuffle(5, 16, 3, 1, true);
        assert!(md.blocked(within, 128).is_none() && md.blocked_forced(within, 128).is_some());
    }

    /// Autotuning's shapes beyond the estimate are those the search leaves out and a user may
    /// force, among them the fastest `f64` shape measured on the H200; placed after the model's
    /// first five distinct shapes, their best three are timed with them.
    #[test]
    fn autotuning_also_times_shapes_beyond_the_register_estimate() {
        let gpu = h200();
        let md = model("star7", DType::F64, &gpu);
        let mut searched = md.search(None, None);
        let beyond = md.search_beyond_estimate(None, None);
        let key = |c: &Candidate| {
            let l = c.gpu.as_ref().unwrap();
            (c.dim_t, l.block, l.ry, l.rx, l.skew, l.stream_block)
        };
        let searched_keys: Vec<_> = searched.iter().map(key).collect();
        assert!(!beyond.is_empty());
        assert!(beyond.iter().all(|c| !searched_keys.contains(&key(c))));
        assert!(beyond
            .iter()
            .any(|c| key(c) == (4, [32, 8], 6, 1, true, 128)));
        let first_five = super::super::tune::distinct_shapes(&searched)[..5]
            .iter()
            .map(|&i| key(&searched[i]))
            .collect::<Vec<_>>();
        for &i in &super::super::tune::distinct_shapes(&beyond)[..3] {
            let c = &beyond[i];
            println!(
                "beyond {:?}: {:.0} predicted",
                key(c),
                c.predicted_mups / 1e3
            );
        }
        assert_eq!(
            super::super::tune::insert_beyond(&mut searched, &beyond, 5),
            3
        );
        let order = super::super::tune::distinct_shapes(&searched);
        let timed: Vec<_> = order[..8].iter().map(|&i| key(&searched[i])).collect();
        assert_eq!(timed[..5], first_five[..]);
        assert!(timed[5..].iter().all(|k| !searched_keys.contains(k)));
        // A star7 `f32` tuning gets its own: the search of the copying kernel leaves shapes out too.
        assert!(!model("star7", DType::F32, &gpu)
            .search_beyond_estimate(Some(4), None)
            .is_empty());
    }

    /// For every star (radius 1-4) the model's first `f32` choice is a shape measured on the
    /// H100: for star7 the fastest shape measured there and for the wider stars within 15% (of
    /// both kernels' shape files), so a plan without autotuning runs about as fast as the
    /// measurements allow. (The H100's `f64` shapes were timed with the kernel that copies its
    /// levels' inputs, which `f64` no longer runs; its in-place kernel is checked against the
    /// H200's shapes above. Before the shuffle kernel, the fastest star7
    /// `f64` shape ranked 35th and the model's choice ran 0.83x of it; with the shared-memory
    /// kernel alone the wider stars got the shared-memory kernel, 0.6-0.85x of the shuffle kernel's best; with
    /// the unstaged kernel's terms the staged kernel's star7 `f32` choice, dim_t 2, ran 0.70x of
    /// the fastest; with the lowest-error fit, dim_t 4 32x12 threads 2x4 cells, 0.95x.) The star7 `f32` case
    /// pins what the refit was chosen for (its two fastest shapes are predicted within 1%), so
    /// it guards against a regression rather than checking the model independently.
    #[test]
    fn the_models_first_star_choice_is_close_to_the_fastest_measured() {
        for (kernel, within) in [
            ("star7", 1.0),
            ("star:2", 0.85),
            ("star:3", 0.85),
            ("star:4", 0.85),
        ] {
            let choice = first_choice(kernel, DType::F32, SHUFFLE_FIT);
            assert_first_choice_within(&format!("{kernel} f32"), choice, within);
        }
    }

    #[test]
    fn a_few_planes_more_do_not_leave_a_thin_last_chunk() {
        let gpu = h100();
        let best = |nz: usize| {
            let mut m = model("star7", DType::F32, &gpu);
            m.dims[2] = nz;
            let c = m.search(Some(4), None).remove(0);
            let hz = c.gpu.as_ref().unwrap().stream_block;
            (c.predicted_mups / nz as f64, hz, (nz - 2).div_ceil(hz))
        };
        let (cube, _, _) = best(512);
        // A rank's block of a 512³-per-GPU run: 512 planes and a 4-plane halo on 1 or 2 sides.
        for nz in [516, 520] {
            let (rate, hz, chunks) = best(nz);
            let last = (nz - 2) - (chunks - 1) * hz;
            assert!(
                last * 2 >= hz,
                "{nz} planes: chunks of {hz}, the last {last}"
            );
            assert!(
                rate >= 0.98 * cube,
                "{nz} planes: {rate:.0} per plane, 512: {cube:.0}"
            );
        }
    }

    #[test]
    fn every_stencil_and_precision_has_a_configuration_for_b_t_1_and_2() {
        let gpu = h100();
        for name in ["star:1", "star:2", "star:3", "star:4", "box:1", "box:2"] {
            for dtype in [DType::F32, DType::F64] {
                let m = model(name, dtype, &gpu);
                for dim_t in 1..=2 {
                    assert!(
                        !m.search(Some(dim_t), None).is_empty(),
                        "{name} {dtype:?} dim_t {dim_t}"
                    );
                }
            }
        }
    }

    /// The naive kernel's prediction against what it measured on an H100 SXM (512³, 48 steps,
    /// MUPS), and the engine choices those measurements support (with dim_t fixed at 1, the
    /// naive kernel wins for star:2 in `f32`): blocking wins for the 7-point
    /// stencil, the boxes and (with the shuffle kernel) the wider stars; star:4 in `f64` too with
    /// the staged planes (98.6 G updates/s against 82.5; unstaged, 72-73
    /// against 80; the shared-memory kernel's best shapes for wide stars measured 10-25% below
    /// gpu-naive).
    #[test]
    fn the_naive_model_matches_the_h100_and_the_faster_engine_is_preferred() {
        let gpu = h100();
        for (name, dtype, measured, blocked_wins) in [
            ("star7", DType::F32, 254_532.0, true),
            ("star:2", DType::F32, 220_484.0, true),
            ("star:3", DType::F32, 174_470.0, true),
            ("star:4", DType::F32, 139_316.0, true),
            ("box27", DType::F32, 168_828.0, true),
            ("box:2", DType::F32, 46_975.0, true),
            ("star7", DType::F64, 116_894.0, true),
            ("star:3", DType::F64, 101_565.0, true),
            ("star:4", DType::F64, 80_325.0, true),
            ("box27", DType::F64, 87_674.0, true),
            ("box:2", DType::F64, 26_372.0, true),
        ] {
            let m = model(name, dtype, &gpu);
            let naive = m.naive().predicted_mups;
            let ratio = naive / measured;
            assert!(
                (0.75..1.3).contains(&ratio),
                "{name} {dtype:?}: naive predicted {naive:.0}, measured {measured:.0}"
            );
            let blocked = m.search(None, None)[0].predicted_mups;
            assert_eq!(
                blocked > naive,
                blocked_wins,
                "{name} {dtype:?}: blocked {blocked:.0} naive {naive:.0}"
            );
        }
        // Without temporal blocking (dim_t fixed at 1) the blocked kernel only re-reads through
        // shared memory what the naive kernel gets from L1, and the measurements are split: on
        // star:2 in `f32` every dim_t 1 shape timed (the fastest 173 G updates/s) ran below
        // gpu-naive (220), while on star7 in `f64` and box27 it ran above. Which engine wins is
        // read from the shape file, and the model must agree, so a model that always prefers
        // the blocked kernel fails. (star7 `f32` is left out: its dim_t 1 shapes measured
        // 158-212 against 255 for gpu-naive, but the model predicts 347, a known miss that
        // does not change a plan, whose best dim_t is 4.)
        let shapes = h100_shapes();
        for (name, dtype, naive_measured, blocked_wins) in [
            ("star:2", DType::F32, 220_484.0, false),
            ("star7", DType::F64, 116_894.0, true),
            ("box27", DType::F32, 168_828.0, true),
            ("box27", DType::F64, 87_674.0, true),
        ] {
            let blocked_measured = shapes
                .iter()
                .filter(|m| m.kernel == name && m.dtype == dtype && m.shape.dim_t == 1)
                .map(|m| m.mups)
                .fold(0.0, f64::max);
            assert_eq!(
                blocked_measured > naive_measured,
                blocked_wins,
                "{name} {dtype:?} dim_t 1: measured blocked {blocked_measured:.0} naive {naive_measured:.0}"
            );
            let m = model(name, dtype, &gpu);
            let naive = m.naive().predicted_mups;
            let blocked = m.search(Some(1), None)[0].predicted_mups;
            assert_eq!(
                blocked > naive,
                blocked_wins,
                "{name} {dtype:?} dim_t 1: predicted blocked {blocked:.0} naive {naive:.0}"
            );
        }
    }

    /// The shuffle kernel's register estimate against ptxas's counts for sm_90 (the `nvcc`
    /// harness and the library's NVRTC builds, `bench --json` `registers`): within 20% for
    /// every shape below its block's register share, with the terms of the kernel that copies
    /// each level's input (`f32`, and `f64` at dim_t 1) and of the one whose levels read in
    /// place (`f64` past dim_t 1).
    #[test]
    fn the_shuffle_register_estimate_matches_ptxas() {
        let gpu = h100();
        let shape = BlockedShape::shuffle;
        for (kernel, dtype, s, ptxas) in [
            ("star7", DType::F32, shape(4, 12, 3, 2, false), 134.0),
            ("star7", DType::F32, shape(3, 8, 3, 2, false), 128.0),
            ("star7", DType::F32, shape(4, 16, 2, 2, false), 98.0),
            ("star7", DType::F32, shape(4, 8, 4, 2, false), 178.0),
            ("star7", DType::F32, shape(4, 12, 3, 2, true), 163.0),
            ("star7", DType::F64, shape(3, 12, 2, 2, false), 126.0),
            ("star7", DType::F64, shape(3, 8, 3, 2, false), 172.0),
            ("star7", DType::F64, shape(3, 12, 3, 1, true), 130.0),
            ("star:2", DType::F32, shape(2, 12, 3, 2, false), 149.0),
            ("star:2", DType::F64, shape(2, 12, 3, 1, false), 126.0),
            ("star:3", DType::F32, shape(1, 8, 3, 2, false), 128.0),
            ("star:3", DType::F64, shape(1, 12, 4, 1, false), 128.0),
            ("star:4", DType::F32, shape(1, 16, 4, 1, false), 102.0),
            ("star:4", DType::F64, shape(1, 8, 4, 1, false), 158.0),
        ] {
            let c = model(kernel, dtype, &gpu).blocked(s, 256).unwrap();
            let estimated = c.gpu.unwrap().registers as f64;
            let ratio = estimated / ptxas;
            assert!(
                (ratio - 1.0).abs() < 0.2,
                "{kernel} {dtype:?} {s:?}: {estimated} estimated, {ptxas} allocated"
            );
        }
    }

    /// Grid search of the shuffle kernel's terms over the staged kernel's shapes timed on the
    /// H100 (star radius 1-4) and the H200 (star7), run by hand:
    /// `cargo test --release --lib refit_shuffle -- --ignored --nocapture`. The error of a fit
    /// is the sum of its RMS log errors on the two cards.
    #[test]
    #[ignore]
    fn refit_shuffle_terms() {
        let cards = [
            (h100(), h100_shuffle_shapes()),
            (h200(), parse_shapes(H200_SHUFFLE_SHAPES)),
        ];
        let models: Vec<Vec<(GpuModel<'_>, &Measured)>> = cards
            .iter()
            .map(|(gpu, shapes)| {
                shapes
                    .iter()
                    .map(|m| (model(&m.kernel, m.dtype, gpu), m))
                    .collect()
            })
            .collect();
        let rms_of = |fit: ShuffleFit| -> f64 { models.iter().map(|m| shuffle_rms(m, fit)).sum() };
        println!("the planner's terms: summed RMS {:.3}", rms_of(SHUFFLE_FIT));
        let mut fits = Vec::new();
        for (shared_weight, shared_overlap) in [0.0, 0.5, 0.75, 1.0, 1.25, 1.5]
            .into_iter()
            .flat_map(|w| [2.0, 3.0, 4.0, 6.0, 8.0].map(|k| (w, k)))
        {
            for (plane_latency, barrier_latency) in
                [(0.0, 0.0), (0.0, 100.0), (200.0, 0.0), (200.0, 100.0)]
            {
                for chain_overlap in [2.0, 4.0, f64::INFINITY] {
                    for (pi, cpi) in [16.0, 20.0, 24.0, 28.0, 32.0]
                        .into_iter()
                        .flat_map(|pi| [2.0, 2.5, 3.0, 3.5].map(|c| (pi, c)))
                    {
                        for overlap in [1.25, 1.5, 2.0] {
                            let fit = ShuffleFit {
                                overhead: 0.0,
                                plane_instructions: pi,
                                plane_latency,
                                barrier_latency,
                                overlap,
                                warp_cpi: cpi,
                                chain_overlap,
                                shared_weight,
                                shared_overlap,
                            };
                            fits.push((rms_of(fit), fit));
                        }
                    }
                }
            }
        }
        let best = fits.iter().map(|f| f.0).fold(f64::MAX, f64::min);
        println!("best summed RMS {best:.3}");
        // Among the fits within 0.06 of the best: first those whose first choices meet the
        // bounds the tests pin (star7 `f32`: the fastest measured shape on the H100 and within 2%
        // on the H200; the wider stars within 15%), then the one whose first choices come
        // closest to the fastest measured shapes (the worst ratio). `f64` plans past dim_t 1
        // take the in-place kernel's terms (`refit_in_place_terms`); the `f64` rows here, timed
        // with the copying kernel, still weigh in the RMS as when these terms were fitted, but
        // past dim_t 1 they are now planned with the in-place register estimate, so a rerun
        // does not reproduce the fitted error exactly.
        let h200_shapes = &cards[1].1;
        let first_choices = |fit: ShuffleFit| {
            let (mut worst, mut within) = (f64::MAX, true);
            for kernel in ["star7", "star:2", "star:3", "star:4"] {
                let (_, _, got, fastest) = first_choice(kernel, DType::F32, fit);
                let ratio = got.unwrap_or(0.0) / fastest;
                worst = worst.min(ratio);
                within &= ratio >= if kernel == "star7" { 1.0 } else { 0.85 };
            }
            let (_, _, got, fastest) =
                first_choice_on(&h200(), h200_shapes, "star7", DType::F32, fit);
            let ratio = got.unwrap_or(0.0) / fastest;
            worst = worst.min(ratio);
            within &= ratio >= 0.98;
            (within, worst)
        };
        let mut ranked: Vec<((bool, f64), f64, ShuffleFit)> = fits
            .into_iter()
            .filter(|f| f.0 <= best + 0.06)
            .map(|(rms, fit)| (first_choices(fit), rms, fit))
            .collect();
        ranked.sort_by(|a, b| {
            (b.0 .0.cmp(&a.0 .0))
                .then(b.0 .1.total_cmp(&a.0 .1))
                .then(a.1.total_cmp(&b.1))
        });
        for ((within, worst), rms, fit) in ranked.iter().take(5) {
            println!("within the pinned bounds: {within}; first choices within {worst:.3} of the fastest, summed RMS {rms:.3}: {fit:?}");
        }
    }

    /// Star7 `f64` shapes of the in-place kernel timed in one H200 call at 1000 steps.
    const H200_F64_SHAPES: &str = include_str!("../../docs/results/h200/shuffle-shapes-f64.txt");

    /// Every star7 `f64` shape timed on the H200 (three files), all of the in-place kernel.
    fn h200_in_place_shapes() -> Vec<Measured> {
        parse_shapes(H200_F64_SHAPES)
            .into_iter()
            .chain(parse_shapes(H200_SHUFFLE_SHAPES))
            .chain(parse_shapes(H200_FORCED_SHAPES))
            .filter(|m| m.dtype == DType::F64)
            .collect()
    }

    /// RMS of log(predicted / measured) under `fit` over `shapes`, each planned as a user's
    /// forced shape (so that none is refused for its registers).
    fn forced_rms(md: &GpuModel<'_>, shapes: &[Measured], fit: ShuffleFit) -> f64 {
        let mut sum = 0.0;
        for m in shapes {
            let fp = md.footprint_within(&m.shape, m.hz, true).unwrap();
            let c = md.candidate(m.shape, m.hz, fp, fit);
            sum += (c.predicted_mups / m.mups).ln().powi(2);
        }
        (sum / shapes.len() as f64).sqrt()
    }

    /// Grid search of the in-place kernel's terms over the star7 `f64` shapes timed on the H200,
    /// run by hand: `cargo test --release --lib refit_in_place -- --ignored --nocapture`. Among
    /// the fits within 0.02 of the lowest RMS error of the log, the one whose first choice ran
    /// fastest (unmeasured first choices count as 0), then the one of lowest error.
    #[test]
    #[ignore]
    fn refit_in_place_terms() {
        let gpu = h200();
        let md = model("star7", DType::F64, &gpu);
        let shapes = h200_in_place_shapes();
        println!(
            "{} shapes; the planner's terms: RMS {:.3}",
            shapes.len(),
            forced_rms(&md, &shapes, SHUFFLE_FIT_IN_PLACE)
        );
        let fits: Vec<(f64, ShuffleFit)> = fit_grid(&FitAxes {
            plane_latency: &[0.0, 200.0, 500.0],
            barrier_latency: &[0.0, 100.0, 200.0],
            chain_overlap: &[1.5, 2.0, 4.0, f64::INFINITY],
            plane_instructions: &[16.0, 20.0, 24.0, 28.0, 32.0, 36.0, 40.0],
            warp_cpi: &[1.0, 1.5, 2.0, 2.5, 3.0, 3.5],
            overlap: &[1.25, 1.5, 2.0],
            shared_weight: &[0.5, 1.0, 1.5],
            shared_overlap: &[4.0, 8.0],
        })
        .into_iter()
        .map(|fit| (forced_rms(&md, &shapes, fit), fit))
        .collect();
        let best = fits.iter().map(|f| f.0).fold(f64::MAX, f64::min);
        println!("best RMS {best:.3}");
        let one_call = parse_shapes(H200_F64_SHAPES);
        let mut ranked: Vec<(f64, f64, ShuffleFit)> = fits
            .into_iter()
            .filter(|f| f.0 <= best + 0.02)
            .map(|(rms, fit)| {
                let (_, _, got, fastest) =
                    first_choice_on(&gpu, &one_call, "star7", DType::F64, fit);
                (got.unwrap_or(0.0) / fastest, rms, fit)
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.total_cmp(&b.1)));
        for (ratio, rms, fit) in ranked.iter().take(8) {
            println!("first choice {ratio:.3} of the fastest, RMS {rms:.3}: {fit:?}");
        }
    }
}
