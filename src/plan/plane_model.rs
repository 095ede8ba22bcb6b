//! The planner's model for the 2D kernels ([`crate::Stencil2`], [`crate::Filter2`]): the 3.5D
//! model one dimension down. A 2D sweep keeps the `2R + 1` rows it reads in cache, so the naive
//! engine moves `2E` bytes per update; the blocked engine streams tiles of rows through
//! `dim_t` levels held in per-level rings of rows (eq. 1 with planes become rows), cutting the
//! traffic to `2E / dim_t` at the cost of the halo columns and rows it recomputes (κ).
//! Convolutions run once per step (`dim_t` 1): their engines differ in how they reuse loads.
//! On the GPU, memory and arithmetic rooflines of the device bound each engine.

use super::candidate::{Bound, Candidate, GpuLaunch};
use super::model::ModelInput;
use crate::engine::Engine;
use crate::gpu::GpuInfo;

/// Largest `dim_t` the 2D planner considers for blocked stencils.
pub(crate) const PLANE_MAX_DIM_T: usize = 8;

/// Share of its private cache a thread's rings may fill: the rest holds the rows read and
/// written around them.
const RING_SHARE: f64 = 0.5;

/// Rows per work item of the blocked engine are at least this many times the rows it
/// recomputes at each end, so the y halo costs at most a few per cent.
const CHUNK_OVER_HALO: usize = 16;

/// Work items (x tiles × chunks of rows) per thread the blocked 2D stencil engine aims for:
/// enough that threads claiming them one at a time finish together.
const ITEMS_PER_THREAD: usize = 4;

/// Share of the L1 data cache a thread's rings fill in a tile kept in L1.
const RING_L1_SHARE: f64 = 0.7;

/// Largest share of an L1-resident tile's columns that its halos (`2R·(dim_t − 1)`) may take
/// for the model to prefer it to whole rows (rings in L2): on the 2-core AMD EPYC Zen 5,
/// star2d:1 `f32` 4096² at `dim_t` 8 ran 15.5-15.7 GUPS on 400-column tiles (halos 3.5%)
/// against 11.9-12.0 on whole rows (naive: 6.0-6.6), while star2d:2 ran alike both ways
/// (9.1-9.5 GUPS) and star2d:4 at `dim_t` 4 (halos 8-9% of 272-528 columns) and box2d:3 ran
/// 5-20% slower on narrow tiles than on whole rows.
const L1_TILE_MAX_HALO: f64 = 0.04;

/// Share of the GPU's arithmetic peak a 2D kernel sustains: the systolic convolution keeps
/// its operands in registers (SSAM reports 60-80% of peak on 2D convolution); a kernel that
/// reads every tap through the L1 cache reaches about a third of it.
const GPU_SYSTOLIC_EFFICIENCY: f64 = 0.6;
const GPU_DIRECT_EFFICIENCY: f64 = 0.3;

/// Share of the measured device bandwidth a streaming 2D kernel reaches.
const GPU_STREAM_SHARE: f64 = 0.9;

impl ModelInput<'_> {
    /// Interior extent `[nx, ny]` the kernel updates (all of it for a convolution).
    fn plane_interior(&self) -> [usize; 2] {
        let fixed = self.kernel.fixed_boundary();
        [self.dims[0] - 2 * fixed, self.dims[1] - 2 * fixed]
    }

    /// One SIMD sweep per step: `2E` bytes per update, rows of the full width.
    pub(crate) fn plane_naive(&self) -> Candidate {
        let [nx, ny, _] = self.dims;
        let rows = (2 * self.cost.radius + 2) * nx * self.cost.element_bytes;
        let memory = self.memory_mups(self.cost.bytes_per_update as f64);
        self.finish(Engine::Naive, (1, [nx, ny]), 1.0, rows, (nx, memory))
    }

    /// The scalar loop on one core.
    pub(crate) fn plane_reference(&self) -> Candidate {
        let mut c = self.plane_naive();
        c.engine = Engine::Reference;
        c.compute_mups /= self.machine.lanes(self.dtype) as f64 * self.threads as f64;
        (c.predicted_mups, c.bound) = self.overlap(c.compute_mups, c.memory_mups, 1);
        c
    }

    /// The blocked 2D stencil engine with `dim_t` levels and loaded tile `[width, rows]`
    /// (`width` columns including the halos of `R·dim_t` on each side, `rows` output rows per
    /// work item); `None` when the tile leaves no output.
    pub(crate) fn plane_blocked(&self, dim_t: usize, tile: [usize; 2]) -> Option<Candidate> {
        let r = self.cost.radius;
        let [w, rows] = tile;
        let full = self.plane_full_width(dim_t);
        let w = w.min(full);
        if w <= 2 * r * dim_t || rows == 0 {
            return None;
        }
        let out_w = if w == full {
            self.plane_interior()[0]
        } else {
            w - 2 * r * dim_t
        };
        // Levels shrink by 2R each: on average R·(dim_t − 1) extra columns and rows per level.
        let halo = (r * dim_t.saturating_sub(1)) as f64;
        let kappa_x = if w == full {
            1.0
        } else {
            (out_w as f64 + halo) / out_w as f64
        };
        let kappa_y = (rows as f64 + halo) / rows as f64;
        let kappa = kappa_x * kappa_y;
        let ring = dim_t.saturating_sub(1) * (2 * r + 1) * w * self.cost.element_bytes;
        let memory = self.memory_mups(self.cost.bytes_per_update as f64 / dim_t as f64);
        let mut c = self.finish(
            Engine::Blocked,
            (dim_t, [w, rows]),
            kappa,
            ring,
            (w, memory),
        );
        if ring as f64 > RING_SHARE * self.machine.private_cache_bytes() as f64 {
            c.compute_mups *= self.machine.spill_speed();
            (c.predicted_mups, c.bound) = self.overlap(c.compute_mups, c.memory_mups, dim_t);
            c.predicted_mups /= kappa;
        }
        Some(c)
    }

    /// The widest loaded tile at `dim_t`: the interior plus the halos.
    fn plane_full_width(&self, dim_t: usize) -> usize {
        self.plane_interior()[0] + 2 * self.cost.radius * dim_t
    }

    /// The model's tile at `dim_t`: a tile whose rings stay in L1 when its halos are a small
    /// part of it ([`L1_TILE_MAX_HALO`]), else the full width when its rings fit the private
    /// cache share, else the widest that does; rows per work item enough for every thread to
    /// get several, but long against the halo.
    pub(crate) fn plane_tile(&self, dim_t: usize) -> [usize; 2] {
        let r = self.cost.radius;
        let per_col = dim_t.saturating_sub(1).max(1) * (2 * r + 1) * self.cost.element_bytes;
        let l1 = self.machine.caches.first().map_or(32 << 10, |c| c.bytes);
        let in_l1 = (RING_L1_SHARE * l1 as f64) as usize / per_col;
        let budget = (RING_SHARE * self.machine.private_cache_bytes() as f64) as usize / per_col;
        let halo = 2 * r * dim_t.saturating_sub(1);
        let budget = if dim_t > 1 && halo as f64 <= L1_TILE_MAX_HALO * in_l1 as f64 {
            in_l1
        } else {
            budget
        };
        let lanes = self.machine.lanes(self.dtype).max(1);
        let w = budget
            .min(self.plane_full_width(dim_t))
            .max(2 * r * dim_t + 8 * lanes);
        let ny = self.plane_interior()[1];
        let min_rows = (CHUNK_OVER_HALO * r * dim_t).max(1);
        let tiles_x = self.plane_interior()[0].div_ceil(w.saturating_sub(2 * r * dim_t).max(1));
        // Several items per thread, and as many for each thread.
        let t = self.threads.max(1);
        let fewest = (ITEMS_PER_THREAD * t).div_ceil(tiles_x).max(1);
        let chunks = (fewest..fewest + t)
            .find(|c| (c * tiles_x).is_multiple_of(t))
            .unwrap_or(fewest);
        [w, ny.div_ceil(chunks).max(min_rows).min(ny)]
    }

    /// The GPU candidates: `gpu-naive` (a launch per step, every tap read through the L1
    /// cache) and `gpu-blocked` (the systolic kernel; for stencils `dim_t` steps per launch).
    pub(crate) fn plane_gpu(&self, info: &GpuInfo, dim_ts: &[usize]) -> Vec<Candidate> {
        let mut out = vec![self.plane_gpu_candidate(info, Engine::GpuNaive, 1)];
        for &d in dim_ts {
            out.push(self.plane_gpu_candidate(info, Engine::GpuBlocked, d));
        }
        out
    }

    fn plane_gpu_candidate(&self, info: &GpuInfo, engine: Engine, dim_t: usize) -> Candidate {
        let launch = plane_launch(self.kernel.filter().is_some(), engine, dim_t);
        let lanes = match self.dtype {
            crate::DType::F32 => info.fp32_lanes_per_sm,
            crate::DType::F64 => info.fp64_lanes_per_sm,
        };
        let peak_gflops = 2.0 * (lanes * info.sms) as f64 * info.clock_ghz;
        let efficiency = if engine == Engine::GpuBlocked {
            GPU_SYSTOLIC_EFFICIENCY
        } else {
            GPU_DIRECT_EFFICIENCY
        };
        let r = self.cost.radius;
        // A warp's strip of 32·rx columns recomputes R·dim_t columns on each side per launch;
        // a block's rows recompute R·dim_t rows at each end.
        let kappa = if dim_t > 1 {
            let cols = (32 * launch.rx.max(1)) as f64;
            let rows = launch.stream_block.max(1) as f64;
            let h = (r * dim_t) as f64;
            (cols / (cols - 2.0 * h)) * ((rows + h) / rows)
        } else {
            1.0
        };
        let compute = peak_gflops * efficiency * 1e3 / self.cost.flops_per_update as f64;
        let bytes = self.cost.bytes_per_update as f64 / dim_t as f64;
        let memory = info.bandwidth_gbs * GPU_STREAM_SHARE * 1e3 / bytes;
        let bound = if compute / kappa < memory {
            Bound::Compute
        } else {
            Bound::Memory
        };
        Candidate {
            engine,
            dim_t,
            tile: [32 * launch.rx.max(1), launch.stream_block],
            kappa,
            working_set: 0,
            compute_mups: compute,
            memory_mups: memory,
            predicted_mups: (compute / kappa).min(memory),
            bound,
            gpu: Some(launch),
            measured_mups: None,
            tile_threads: 0,
        }
    }
}

/// The launch shape of a 2D GPU engine: blocks of 128 threads in x; the systolic convolution
/// computes `ry` output rows per thread; the blocked stencil advances strips of `32·rx`
/// columns and `stream_block` rows by `dim_t` steps.
fn plane_launch(filter: bool, engine: Engine, dim_t: usize) -> GpuLaunch {
    let (ry, rx, stream_block) = match (filter, engine) {
        (true, Engine::GpuBlocked) => (8, 1, 8),
        (false, Engine::GpuBlocked) => (1, 4, 64 * dim_t),
        _ => (1, 1, 1),
    };
    GpuLaunch {
        block: [128, 1],
        ry,
        rx,
        skew: false,
        stream_block,
        registers: 0,
        shared_bytes: 0,
        blocks_per_sm: 0,
        blocks: 0,
        times_ms: [0.0; 3],
        sm_efficiency: 1.0,
    }
}

impl ModelInput<'_> {
    /// The blocked convolution: output rows computed [`CONV_ROWS`] at a time, each input row
    /// loaded once for all of them, so loads per update fall from `taps` to `taps / rows` (the
    /// arithmetic stays), in work items of `tile` (the model's when `None`, see
    /// [`ModelInput::plane_conv_tile`]).
    pub(crate) fn plane_filter_blocked(&self, tile: Option<[usize; 2]>) -> Candidate {
        let mut c = self.plane_naive();
        c.engine = Engine::Blocked;
        let taps = self.cost.loads_per_update as f64;
        let naive_ops = self.cost.ops_per_update as f64;
        let blocked_ops = naive_ops - taps + taps / CONV_ROWS as f64;
        c.compute_mups *= naive_ops / blocked_ops;
        c.tile = tile.unwrap_or_else(|| self.plane_conv_tile());
        (c.predicted_mups, c.bound) = self.overlap(c.compute_mups, c.memory_mups, 1);
        c
    }

    /// The blocked convolution's work item `[columns, rows]`: whole rows (the engine copies
    /// only the columns next to the edges and reads the rest of each row in place, in order;
    /// the `kh + CONV_ROWS − 1` rows a group reads stay in L2 for the next group), in bands
    /// of rows, several per thread.
    pub(crate) fn plane_conv_tile(&self) -> [usize; 2] {
        let [nx, ny, _] = self.dims;
        let items = CONV_BANDS_PER_THREAD * self.threads;
        [nx, ny.div_ceil(items).next_multiple_of(CONV_ROWS)]
    }
}

/// Output rows the blocked convolution computes together (register blocking over rows).
pub(crate) const CONV_ROWS: usize = 4;

/// Bands of rows per thread of the blocked convolution: enough that threads finishing at
/// different times wait little for each other.
const CONV_BANDS_PER_THREAD: usize = 4;
