//! The planner's model for the 2D kernels ([`crate::Stencil2`], [`crate::Filter2`]): the 3.5D
//! model one dimension down. A 2D sweep keeps the `2R + 1` rows it reads in cache, so the naive
//! engine moves `2E` bytes per update; the blocked engine streams tiles of rows through
//! `dim_t` levels held in per-level rings of rows (eq. 1 with planes become rows), cutting the
//! traffic to `2E / dim_t` at the cost of the halo columns and rows it recomputes (κ).
//! Convolutions run once per step (`dim_t` 1): their engines differ in how they reuse loads.
//! On the GPU, memory and arithmetic rooflines of the device bound each engine.

use super::candidate::{Bound, Candidate, GpuLaunch};
use super::model::ModelInput;
use super::Kernel;
use crate::blocking::CONV_ROWS;
use crate::engine::Engine;
use crate::gpu::plane_source::{blocked_strip, systolic_width};
use crate::gpu::GpuInfo;
use crate::DType;

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

// The GPU model of the 2D kernels, fitted to their rates on an H200 (f32; convolutions of
// dense filters on 8192², star2d:1 on 16384²; G pixels or updates per second):
//   gpu-naive:   3x3 246, 5x5 151, 7x7 107, 11x11 48, star2d:1 272: a fixed cost per pixel
//                ([`GPU_NAIVE_PIXEL_CYCLES`]) plus one L1 load per tap ([`GPU_NAIVE_L1_SHARE`]);
//   systolic:    3x3 440 (465 with 16 rows per warp), 5x5 408, 7x7 342, 11x11 163: the FMAs,
//                shuffles and [`GPU_CONV_ROW_OVERHEAD`] per lane and row at
//                [`GPU_CONV_ISSUE_SHARE`] of the issue rate, or the copy rate (3x3, 5x5);
//   blocked star: dim_t 4 1344, 6 1560, 8 1726 (gpu-naive 272): per lane, each level's row
//                costs its FMAs, shuffles and [`GPU_LEVEL_ROW_OVERHEAD`] at the full issue rate,
//                and each step [`GPU_STEP_OVERHEAD`] more (its load, store and their waits, which
//                deeper passes share among more levels).

/// SM cycles per pixel of the gpu-naive kernels besides their loads (index arithmetic, the
/// store, the latency no other warp covers).
const GPU_NAIVE_PIXEL_CYCLES: f64 = 0.71;

/// Share of the L1 cache's load bandwidth the gpu-naive kernels sustain (every tap is a load
/// through it).
const GPU_NAIVE_L1_SHARE: f64 = 0.8;

/// Bytes an SM's L1 cache returns per cycle.
const GPU_L1_BYTES_PER_CYCLE: f64 = 128.0;

/// Share of the measured device bandwidth a streaming 2D kernel reaches (the 3x3 systolic
/// convolution reached 93% of the copy rate).
const GPU_STREAM_SHARE: f64 = 0.9;

/// Share of the SMs' FMA issue rate the systolic convolution sustains.
const GPU_CONV_ISSUE_SHARE: f64 = 0.83;

/// Issue slots per lane and output row of the systolic convolution besides its FMAs and
/// shuffles: the row's load and store with their addressing and waits, the non-finite check.
const GPU_CONV_ROW_OVERHEAD: f64 = 100.0;

/// Instructions per lane, level and row of the blocked stencil besides its FMAs and shuffles:
/// the completion test, the copies of the completed row, the shuffles' convergence checks
/// (counted in the sm_90 SASS of the star2d:1 kernel).
const GPU_LEVEL_ROW_OVERHEAD: f64 = 12.0;

/// Issue slots per lane and step of the blocked stencil besides its levels' work.
const GPU_STEP_OVERHEAD: f64 = 215.0;

/// Registers per thread above which a blocked stencil shape is not offered: ptxas would spill,
/// or too few warps would be resident to hide memory latency.
const GPU_MAX_REGISTERS: usize = 200;

/// Warps per block of the blocked stencil (each warp its own strip segment). Its levels are
/// not skewed: skewed ran as fast at dim_t 4 (1344 G updates/s) and slower at dim_t 6 (1480
/// against 1560) and 8 (two columns per lane: 1333 against 1416) on an H200.
const GPU_STENCIL_WARPS_PER_BLOCK: usize = 4;

/// Warps per block, output rows per chunk and per warp of the systolic convolution. Measured on
/// an H200 (f32 8192², dense filters, G pixels/s, 4 columns per lane): rows per chunk 4 / 8 /
/// 16 (4 warps of 64 rows): 3x3 424 / 414 / 361, 7x7 345 / 302 / 151, 11x11 147 / 99 / 56
/// (fewer registers, more warps); 4 rows per chunk, 8 warps of 32 / 16 rows: 3x3 439 / 466,
/// 5x5 409 / 428, 7x7 344 / 341, 11x11 163 / 161.
const GPU_CONV_WARPS_PER_BLOCK: usize = 8;
const GPU_CONV_ROWS_PER_CHUNK: usize = 4;
const GPU_CONV_ROWS_PER_WARP: usize = 16;

/// Output rows per warp of the blocked stencil: the `2R·dim_t` ghost rows a segment streams
/// besides them cost a few per cent (64 and 128 ran alike on an H200, 256 10% slower).
const GPU_STENCIL_ROWS_PER_WARP: usize = 128;

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
        // A tile beyond the grid covers it once: the full width, the interior's rows.
        let (w, rows) = (w.min(full), rows.min(self.plane_interior()[1]));
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
    /// cache) and `gpu-blocked` (convolutions: the systolic kernel; stencils: `dim_t` steps per
    /// launch, at each `dim_t` whose registers fit).
    pub(crate) fn plane_gpu(&self, info: &GpuInfo, dim_ts: &[usize]) -> Vec<Candidate> {
        let mut out = vec![self.plane_gpu_naive(info)];
        let dim_ts = if self.kernel.filter().is_some() {
            &[1][..]
        } else {
            dim_ts
        };
        for &d in dim_ts {
            out.extend(self.plane_gpu_blocked(info, d));
        }
        out
    }

    /// gpu-naive: a fixed cost per pixel and one L1 load per tap, or memory-bound (`2E` per
    /// update).
    fn plane_gpu_naive(&self, info: &GpuInfo) -> Candidate {
        let e = self.cost.element_bytes as f64;
        let cycles = info.sms as f64 * info.clock_ghz * 1e9;
        let loads = cycles * GPU_L1_BYTES_PER_CYCLE / e * GPU_NAIVE_L1_SHARE;
        let seconds = GPU_NAIVE_PIXEL_CYCLES / cycles + self.cost.loads_per_update as f64 / loads;
        let launch = launch_shape([32, 8], 1, 1, 1, 32);
        self.gpu_candidate(info, Engine::GpuNaive, 1, launch, 1.0, 1e-6 / seconds)
    }

    /// gpu-blocked at `dim_t` (1 for a convolution), `None` when no shape fits.
    fn plane_gpu_blocked(&self, info: &GpuInfo, dim_t: usize) -> Option<Candidate> {
        let launch = plane_launch(self.kernel, self.dtype, Engine::GpuBlocked, dim_t)?;
        let lanes = match self.dtype {
            crate::DType::F32 => info.fp32_lanes_per_sm,
            crate::DType::F64 => info.fp64_lanes_per_sm,
        };
        let issue = (lanes * info.sms) as f64 * info.clock_ghz * 1e3;
        let rx = launch.rx as f64;
        let (slots, kappa) = match (self.kernel.filter(), self.kernel.stencil2()) {
            (Some(f), _) => {
                // Per lane and row: rx FMAs per tap, a shuffle per filter column; the strip's
                // last kw - 1 columns are recomputed by the next strip.
                let vx = systolic_width(f.size()[0], f.anchor()[0], launch.rx)?;
                let row = f.taps() as f64 * rx + f.size()[0] as f64 + GPU_CONV_ROW_OVERHEAD;
                (
                    row / rx / GPU_CONV_ISSUE_SHARE,
                    (32 * launch.rx) as f64 / vx as f64,
                )
            }
            (None, Some(s)) => {
                let r = s.radius();
                let strip = blocked_strip(r, dim_t, launch.rx)?;
                let taps = (-(r as i32)..=r as i32)
                    .flat_map(|dy| (-(r as i32)..=r as i32).map(move |dx| (dx, dy)))
                    .filter(|&(dx, dy)| s.weight(dx, dy) != 0.0)
                    .count() as f64;
                let level = taps * rx + 2.0 * r as f64 + GPU_LEVEL_ROW_OVERHEAD;
                let step = dim_t as f64 * level + GPU_STEP_OVERHEAD;
                // Every level computes the strip's whole window, and streams its segment's
                // ghost rows too.
                let rows = launch.stream_block as f64;
                let kappa = (32 * launch.rx) as f64 / strip.vx as f64
                    * (rows + 2.0 * (r * dim_t) as f64)
                    / rows;
                (step / (dim_t as f64 * rx), kappa)
            }
            _ => return None,
        };
        let compute = issue / slots;
        Some(self.gpu_candidate(info, Engine::GpuBlocked, dim_t, launch, kappa, compute))
    }

    /// A GPU candidate computing at `compute` (before the recomputed share `kappa`) and
    /// streaming `2E / dim_t` bytes per update.
    fn gpu_candidate(
        &self,
        info: &GpuInfo,
        engine: Engine,
        dim_t: usize,
        launch: GpuLaunch,
        kappa: f64,
        compute: f64,
    ) -> Candidate {
        let bytes = self.cost.bytes_per_update as f64 / dim_t as f64;
        let memory = info.bandwidth_gbs * GPU_STREAM_SHARE * 1e3 / bytes;
        let bound = if compute / kappa < memory {
            Bound::Compute
        } else {
            Bound::Memory
        };
        let cells = (self.dims[0] * self.dims[1]) as f64;
        let mut launch = launch;
        launch.times_ms = [
            dim_t as f64 * cells * kappa / compute / 1e3,
            0.0,
            dim_t as f64 * cells / memory / 1e3,
        ];
        Candidate {
            engine,
            dim_t,
            tile: [32 * launch.rx, launch.stream_block],
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

/// The launch shape of a 2D GPU engine, `None` when the blocked stencil has no shape at `dim_t`
/// whose registers fit:
/// - gpu-naive: blocks of 32 x 8 threads, a pixel each;
/// - gpu-blocked convolution: warps of 32 lanes with `rx` columns each (4 in f32, 2 in f64:
///   16-byte loads and stores), [`GPU_CONV_ROWS_PER_CHUNK`] output rows per chunk,
///   [`GPU_CONV_WARPS_PER_BLOCK`] warps per block, [`GPU_CONV_ROWS_PER_WARP`] rows per warp;
/// - gpu-blocked stencil: the widest `rx` (4, 2, 1 in f32; 2, 1 in f64) whose strip keeps
///   columns after the `R·dim_t` ghost zones and whose estimated registers fit
///   [`GPU_MAX_REGISTERS`], [`GPU_STENCIL_WARPS_PER_BLOCK`] warps of
///   [`GPU_STENCIL_ROWS_PER_WARP`] rows per block, levels not skewed.
pub(crate) fn plane_launch(
    kernel: &Kernel,
    dtype: DType,
    engine: Engine,
    dim_t: usize,
) -> Option<GpuLaunch> {
    let words = dtype.size() / 4;
    let vector = 16 / dtype.size();
    let (block, ry, rx, stream_block, registers) =
        match (engine, kernel.filter(), kernel.stencil2()) {
            (Engine::GpuBlocked, Some(f), _) => {
                let [kw, kh] = f.size();
                let (rx, ry) = (vector, GPU_CONV_ROWS_PER_CHUNK);
                systolic_width(kw, f.anchor()[0], rx)?;
                // The register cache, the next chunk's rows and the chunk's partial sums.
                let registers = ((ry + kh - 1) * rx + 2 * ry * rx) * words + 24;
                let block = [32, GPU_CONV_WARPS_PER_BLOCK];
                (block, ry, rx, GPU_CONV_ROWS_PER_WARP, registers)
            }
            (Engine::GpuBlocked, None, Some(s)) => {
                let r = s.radius();
                let (rx, registers) = [4, 2, 1]
                    .into_iter()
                    .filter(|&rx| rx <= vector)
                    .filter(|&rx| blocked_strip(r, dim_t, rx).is_some())
                    .map(|rx| (rx, stencil_registers(r, dim_t, rx, words)))
                    .find(|&(_, regs)| regs <= GPU_MAX_REGISTERS)?;
                let block = [32, GPU_STENCIL_WARPS_PER_BLOCK];
                (block, 1, rx, GPU_STENCIL_ROWS_PER_WARP, registers)
            }
            _ => ([32, 8], 1, 1, 1, 32),
        };
    Some(launch_shape(block, ry, rx, stream_block, registers))
}

/// A 2D launch: `block` threads, `ry` rows per chunk, `rx` columns per lane, `stream_block` rows
/// per warp, `registers` per thread (the blocks per SM they allow), levels not skewed.
fn launch_shape(
    block: [usize; 2],
    ry: usize,
    rx: usize,
    stream_block: usize,
    registers: usize,
) -> GpuLaunch {
    GpuLaunch {
        block,
        ry,
        rx,
        skew: false,
        stream_block,
        registers,
        shared_bytes: 0,
        blocks_per_sm: (65536 / (registers.max(1) * block[0] * block[1])).clamp(1, 32),
        blocks: 0,
        times_ms: [0.0; 3],
        sm_efficiency: 1.0,
        buffering: None,
    }
}

/// Registers per thread of the blocked stencil kernel, fitted to ptxas on sm_90 (star and box,
/// radius 1 to 3, dim_t 1 to 8, f32 and f64, within a few registers): `dim_t` rings of `2R+1`
/// accumulator rows of `rx` values, grown a fifth by the rows in flight between levels, and the
/// loaded rows, addresses and indices.
fn stencil_registers(r: usize, dim_t: usize, rx: usize, words: usize) -> usize {
    let rings = 1.2 * (dim_t * (2 * r + 1) * rx * words) as f64;
    32 + rings.ceil() as usize + 4 * rx * words + 4 * r
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
        // A work item beyond the picture covers it once.
        c.tile = tile.map_or_else(
            || self.plane_conv_tile(),
            |[x, y]| [x.min(self.dims[0]), y.min(self.dims[1])],
        );
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

/// Bands of rows per thread of the blocked convolution: enough that threads finishing at
/// different times wait little for each other.
const CONV_BANDS_PER_THREAD: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plane_source::{geometry, PlaneSpec, Variant};
    use crate::plan::Machine;
    use crate::{Filter2, Stencil2};

    fn h200() -> GpuInfo {
        GpuInfo::h200_for_tests()
    }

    /// The GPU candidates for `kernel` in `dtype` on an `nx × ny` grid of the H200.
    fn candidates(kernel: &Kernel, dtype: DType, [nx, ny]: [usize; 2]) -> Vec<Candidate> {
        let m = Machine::paper_core_i7();
        let input = ModelInput {
            cost: kernel.cost(dtype),
            kernel,
            dtype,
            dims: [nx, ny, 1],
            threads: 4,
            cache_bytes: 8 << 20,
            machine: &m,
        };
        input.plane_gpu(&h200(), &(1..=PLANE_MAX_DIM_T).collect::<Vec<_>>())
    }

    /// Every shape the planner offers has a launch the engine accepts: filters of every side in
    /// both precisions, every stencil at every dim_t it offers (star2d:1 at all eight in f32),
    /// on grids down to one pixel.
    #[test]
    fn offered_shapes_launch() {
        let mut kernels: Vec<Kernel> = (1..=15)
            .map(|k| Kernel::from(Filter2::from_name(&format!("dense:{k}x{}", 16 - k)).unwrap()))
            .collect();
        for name in [
            "star2d:1", "star2d:2", "star2d:3", "star2d:4", "box2d:1", "box2d:2", "box2d:3",
        ] {
            kernels.push(Kernel::from(Stencil2::from_name(name).unwrap()));
        }
        for kernel in &kernels {
            for dtype in [DType::F32, DType::F64] {
                let offered = candidates(kernel, dtype, [1000, 1000]);
                if kernel.name() == "star2d:1" && dtype == DType::F32 {
                    assert_eq!(offered.len(), 1 + PLANE_MAX_DIM_T, "{kernel}");
                }
                for c in offered.iter().filter(|c| c.engine == Engine::GpuBlocked) {
                    let l = c.gpu.as_ref().unwrap();
                    assert!(l.rx * dtype.size() <= 16 && l.registers <= GPU_MAX_REGISTERS);
                    let (spec, variant) = match (kernel.filter(), kernel.stencil2()) {
                        (Some(f), _) => (
                            PlaneSpec::filter(f),
                            Variant::Systolic {
                                rx: l.rx,
                                ry: l.ry,
                                by: l.block[1],
                            },
                        ),
                        (_, Some(s)) => (
                            PlaneSpec::stencil(s),
                            Variant::Blocked {
                                dim_t: c.dim_t,
                                rx: l.rx,
                                by: l.block[1],
                                skew: l.skew,
                            },
                        ),
                        _ => unreachable!(),
                    };
                    for dims in [[1000, 1000], [9, 9], [1, 1]] {
                        if spec.radius() * 2 < dims[0] {
                            geometry(&spec, variant, dims, l.stream_block)
                                .unwrap_or_else(|e| panic!("{kernel} {dtype} {c:?}: {e}"));
                        }
                    }
                }
            }
        }
    }

    /// On the H200 the model's rates lie within 15% of those measured there (see the notes at
    /// the top of this file), it picks the systolic kernel over the naive one for convolutions,
    /// and for star2d:1 on 16384² dim_t 8 (the fastest measured), over twice gpu-naive's rate.
    #[test]
    fn the_gpu_model_matches_the_h200() {
        let best = |c: &[Candidate], e: Engine| {
            c.iter()
                .filter(|c| c.engine == e)
                .max_by(|a, b| a.predicted_mups.total_cmp(&b.predicted_mups))
                .cloned()
                .unwrap()
        };
        let near = |what: &str, predicted: f64, measured_g: f64| {
            let ratio = predicted / 1e3 / measured_g;
            assert!(
                (0.85..=1.15).contains(&ratio),
                "{what}: {predicted} MUPS against {measured_g} G/s"
            );
        };
        for (k, naive, blocked) in [
            (3, 246.0, 465.0),
            (5, 151.0, 428.0),
            (7, 107.0, 341.0),
            (11, 48.0, 161.0),
        ] {
            let f = Kernel::from(Filter2::from_name(&format!("dense:{k}")).unwrap());
            let c = candidates(&f, DType::F32, [8192, 8192]);
            let (n, b) = (best(&c, Engine::GpuNaive), best(&c, Engine::GpuBlocked));
            near(&format!("naive {k}x{k}"), n.predicted_mups, naive);
            near(&format!("systolic {k}x{k}"), b.predicted_mups, blocked);
        }
        let star = Kernel::from(Stencil2::from_name("star2d:1").unwrap());
        let c = candidates(&star, DType::F32, [16384, 16384]);
        let (n, b) = (best(&c, Engine::GpuNaive), best(&c, Engine::GpuBlocked));
        near("naive star2d:1", n.predicted_mups, 272.0);
        for (dim_t, measured) in [(4, 1344.0), (6, 1560.0), (8, 1726.0)] {
            let at = c
                .iter()
                .find(|c| c.engine == Engine::GpuBlocked && c.dim_t == dim_t)
                .unwrap();
            near(
                &format!("star2d:1 dim_t {dim_t}"),
                at.predicted_mups,
                measured,
            );
        }
        assert_eq!(b.dim_t, 8);
        assert!(b.predicted_mups >= 2.0 * n.predicted_mups);
    }
}
