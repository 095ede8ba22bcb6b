//! Specialising the kernel sources: the stencil's shape, radius and coefficients, the
//! precision and the blocking parameters become compile-time constants in front of the one
//! templated CUDA source, so NVRTC unrolls every loop and folds every coefficient.

use crate::tuning::Tuning;

use crate::stencil::Shape;
use crate::{DType, Real, Stencil};

/// What the stencil and wave kernels' passes share: output plane ranges and the non-finite
/// flag of earlier passes.
pub(super) const PASSES_CUH: &str = include_str!("kernels/passes.cuh");
/// The CUDA source of the stencil kernels.
const STENCIL_CU: &str = include_str!("kernels/stencil.cu");
/// The blocked star kernel that takes x neighbours by warp shuffle, appended when `rx > 0`.
const SHUFFLE_CU: &str = include_str!("kernels/stencil_shuffle.cu");

/// Blocking parameters of the blocked kernels: `stencil_blocked` (every shape, neighbours
/// through shared memory) when `rx` is 0, else `stencil_shuffle` (stars: warps of 32 lanes
/// with `rx` cells each in x, x neighbours by warp shuffle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BlockedShape {
    /// Time steps per pass (dim_t).
    pub(crate) dim_t: usize,
    /// Threads per block in x (the tile width when `rx` is 0; 32 when it is not).
    pub(crate) bx: usize,
    /// Threads per block in y.
    pub(crate) by: usize,
    /// Cells per thread in y (tile height = by * ry).
    pub(crate) ry: usize,
    /// Cells per thread in x for the shuffle kernel; 0 selects the shared-memory kernel.
    pub(crate) rx: usize,
    /// The shuffle kernel's level schedule: skewed (one barrier per plane for all levels,
    /// each level R+1 planes behind the one below) or not (a barrier per level). The
    /// shared-memory kernel's schedule is [`skewed`]'s per precision.
    pub(crate) skew: bool,
}

impl BlockedShape {
    /// A shape of the shuffle kernel: dim_t `dim_t`, warps of 32 lanes `by` high, `rx` x `ry` cells
    /// per thread, levels skewed or not.
    pub(crate) fn shuffle(dim_t: usize, by: usize, ry: usize, rx: usize, skew: bool) -> Self {
        Self {
            dim_t,
            bx: 32,
            by,
            ry,
            rx,
            skew,
        }
    }

    /// Tile width in cells.
    pub(crate) fn tx(&self) -> usize {
        self.bx * self.rx.max(1)
    }

    /// Tile height in cells.
    pub(crate) fn ty(&self) -> usize {
        self.by * self.ry
    }

    /// The kernel function this shape runs.
    pub(crate) fn kernel_name(&self) -> &'static str {
        if self.rx > 0 {
            "stencil_shuffle"
        } else {
            "stencil_blocked"
        }
    }

    /// Dynamic shared memory the kernel needs in `dtype`. The shared-memory kernel: two
    /// buffers of the tile plus an R-wide halo, with one plane per level when the levels are
    /// skewed (else one). The shuffle kernel: two buffers of each warp's top and bottom R rows
    /// (all its rows when it has fewer than 2R) with a pad warp above and below, again one
    /// plane per level when skewed, and the [`stages`] planes of level 0's input.
    pub(crate) fn shared_bytes(&self, radius: usize, dtype: DType) -> usize {
        let skew = if self.rx > 0 {
            self.skew
        } else {
            skewed(dtype)
        };
        let planes = if skew { self.dim_t } else { 1 };
        if self.rx > 0 {
            let rows = self.ry.min(2 * radius);
            let exchange = 2 * planes * (self.by + 2) * rows * self.tx();
            return (exchange + stages() * self.ty() * self.tx()) * dtype.size();
        }
        2 * planes * (self.bx + 2 * radius) * (self.ty() + 2 * radius) * dtype.size()
    }
}

/// Planes ahead that the blocked kernel prefetches into L2: `STENCIL35D_GPU_L2_AHEAD` when set
/// (0 turns the prefetch off; for tuning experiments), else [`DEFAULT_L2_AHEAD`].
fn l2_ahead() -> usize {
    Tuning::current().gpu.l2_ahead.unwrap_or(DEFAULT_L2_AHEAD)
}

/// Planes of level 0's input the shuffle kernel holds in shared memory, copied asynchronously
/// `stages() - 1` planes ahead: `STENCIL35D_GPU_STAGES` when set (for tuning experiments; at least
/// 1), else 3. Measured on the H100 80GB HBM3 (star7 `f32` 512³, 240 steps, G updates/s): dim_t 4,
/// 32x12 threads, 2x3 cells: 2 -> 685, 3 -> 705, 4 -> 708; dim_t 3, 32x8: 3 -> 686, 4 -> 617 (its
/// shared memory then halves the blocks per SM); `f64` dim_t 3, 32x8, 2x3: 3 -> 380, 4 -> 386.
/// Loading into registers one plane ahead instead runs 600 (dim_t 3, 32x8) and 309 (`f64`), and two
/// planes ahead costs registers.
pub(crate) fn stages() -> usize {
    Tuning::current().gpu.stages.unwrap_or(3).max(1)
}

/// Whether the shared-memory kernel's levels are skewed in `dtype` (one barrier per plane
/// instead of one per level; stencil.cu gives the measurements): by default in f64, where it was
/// faster on every shape measured, not in f32, where it was slower on the best ones.
/// `STENCIL35D_GPU_SKEW=0|1` sets it for both, for experiments. (The shuffle kernel's schedule
/// is part of its launch shape, [`BlockedShape::skew`], chosen by the planner.)
pub(crate) fn skewed(dtype: DType) -> bool {
    Tuning::current().gpu.skew.unwrap_or(dtype == DType::F64)
}

/// Whether the shuffle kernel gives tiles inside the fixed boundary their own copy of the loop
/// (constant coefficients, no tests per cell; stencil_shuffle.cu gives the measurements): yes,
/// in both precisions since level 0's planes are staged in shared memory (`f32` star7 4%
/// faster with it; before, with register prefetch, 5% slower). `STENCIL35D_GPU_INNER=0|1`
/// sets it, for experiments.
pub(crate) fn inner_tiles() -> bool {
    Tuning::current().gpu.inner_tiles.unwrap_or(true)
}

/// Whether the shuffle kernel reads each level's input plane from the accumulator slot where
/// the level below completed it (`LEVELS_IN_PLACE`, stencil_shuffle.cu gives the measurements)
/// instead of copying it into registers of its own: in `f64`, where it saves registers and
/// moves and ran faster (H200, star7 512³: 414 -> 422 G updates/s on the planner's shape; 435 on
/// 32x16 threads of 1x4 cells, which spilled before and which the planner's register estimate,
/// fitted to the copying kernel, does not offer); not in `f32`, where the same change ran 790 ->
/// 777.
pub(crate) fn levels_in_place(dtype: DType) -> bool {
    dtype == DType::F64
}

/// Blocks per SM that ptxas must leave registers for (`__launch_bounds__`' second argument):
/// `STENCIL35D_GPU_MIN_BLOCKS` when set, for experiments, else 1 (the compiler's choice).
fn min_blocks() -> usize {
    Tuning::current().gpu.min_blocks.unwrap_or(1)
}

/// L2 prefetch distance in planes. Measured on the H100 80GB HBM3 (star7 f32 512³, dim_t 4, 32x16
/// tile, 2 cells per thread): 0 -> 316, 2 -> 351, 4 -> 344, 8 -> 340 G updates/s.
const DEFAULT_L2_AHEAD: usize = 2;

/// Grids of at least this many elements index the blocked kernels' arrays with 64-bit offsets;
/// smaller ones with 32-bit offsets, which cost one instruction per address instead of four.
pub(crate) const WIDE_INDEX: usize = 1 << 31;

/// The C type of the blocked kernels' element offsets on a grid of `elements` elements.
pub(crate) fn index_type(elements: usize) -> &'static str {
    if elements < WIDE_INDEX {
        "int"
    } else {
        "long long"
    }
}

/// The specialised source for `stencil` in `T`, with the blocked kernel when `blocked` is set,
/// for a grid of `elements` elements (its padded storage).
pub(crate) fn stencil_source<T: Real>(
    stencil: &Stencil,
    blocked: Option<BlockedShape>,
    elements: usize,
) -> String {
    let coeffs: Vec<String> = stencil
        .coeffs()
        .iter()
        .map(|&c| T::of(c).cuda_literal())
        .collect();
    let mut text = format!(
        "#define REAL {}\n#define RADIUS {}\n#define IS_BOX {}\n#define COEF {{{}}}\n",
        T::CUDA_NAME,
        stencil.radius(),
        matches!(stencil.shape(), Shape::Box { .. }) as u8,
        coeffs.join(", ")
    );
    match blocked {
        Some(b) if b.rx > 0 => {
            text += &format!(
                "#define BT {}\n#define BY {}\n#define RY {}\n#define RX {}\n#define STAGES {}\n#define SKEW {}\n#define INNER {}\n#define LEVELS_IN_PLACE {}\n#define REAL2 {}2\n#define IDX {}\n",
                b.dim_t,
                b.by,
                b.ry,
                b.rx,
                stages(),
                b.skew as u8,
                inner_tiles() as u8,
                levels_in_place(T::DTYPE) as u8,
                T::CUDA_NAME,
                index_type(elements)
            );
            text + PASSES_CUH + STENCIL_CU + SHUFFLE_CU
        }
        Some(b) => {
            text += &format!(
                "#define BT {}\n#define BX {}\n#define BY {}\n#define RY {}\n#define L2_AHEAD {}\n#define SKEW {}\n#define MIN_BLOCKS {}\n",
                b.dim_t,
                b.bx,
                b.by,
                b.ry,
                l2_ahead(),
                skewed(T::DTYPE) as u8,
                min_blocks()
            );
            text + PASSES_CUH + STENCIL_CU
        }
        None => text + PASSES_CUH + STENCIL_CU,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::test_support::{nvrtc_present, ptx_for_sm90};

    /// Every kernel variant compiles with NVRTC when NVRTC is installed, even without a GPU
    /// (compiled for sm_90 PTX): all shapes, both precisions, dim_t 1..=8.
    #[test]
    fn nvrtc_compiles_every_variant() {
        if !nvrtc_present() {
            return;
        }
        let compile = |src: String, what: &str| ptx_for_sm90(src, what).1;
        let mut total = 0.0;
        for name in ["star:1", "star:2", "star:3", "star:4", "box:1", "box:2"] {
            let s = Stencil::from_name(name).unwrap();
            let r = s.radius();
            total += compile(stencil_source::<f32>(&s, None, 0), name);
            total += compile(stencil_source::<f64>(&s, None, 0), name);
            for dim_t in [1, 2, 4, 8] {
                let need = 2 * r * dim_t + 8;
                let bx = need.div_ceil(32) * 32;
                let mut ry = 2;
                while bx * need.div_ceil(ry) > 1024 {
                    ry += 1;
                }
                let shape = BlockedShape {
                    dim_t,
                    bx,
                    by: need.div_ceil(ry),
                    ry,
                    rx: 0,
                    skew: false,
                };
                let mut shapes = vec![shape];
                if !s.is_box() {
                    // The shuffle kernel: one and two cells per lane in x with R rows per
                    // thread, three (rows exchanged value by value) with 2R+1.
                    for (rx, ry) in [(1, r), (2, r), (3, 2 * r + 1)] {
                        shapes.push(BlockedShape {
                            dim_t,
                            bx: 32,
                            by: need.div_ceil(ry),
                            ry,
                            rx,
                            skew: dim_t % 2 == 0,
                        });
                    }
                }
                for shape in shapes {
                    let t = compile(
                        stencil_source::<f32>(&s, Some(shape), 1 << 20),
                        &format!("{name} {shape:?}"),
                    );
                    total += t;
                    println!("{name} f32 {shape:?}: {t:.2} s");
                    total += compile(
                        stencil_source::<f64>(&s, Some(shape), WIDE_INDEX),
                        &format!("{name} f64 {shape:?}"),
                    );
                }
            }
        }
        println!("total NVRTC time {total:.1} s");
    }

    #[test]
    fn sources_carry_exact_constants() {
        let s = Stencil::seven_point(0.4, 0.1);
        let src = stencil_source::<f32>(
            &s,
            Some(BlockedShape {
                dim_t: 4,
                bx: 32,
                by: 8,
                ry: 4,
                rx: 0,
                skew: false,
            }),
            1 << 20,
        );
        assert!(src.starts_with("#define REAL float\n#define RADIUS 1\n#define IS_BOX 0\n#define COEF {0.4f, 0.1f}\n"), "{src}");
        assert!(src.contains(
            "#define BT 4\n#define BX 32\n#define BY 8\n#define RY 4\n#define L2_AHEAD "
        ));
        assert!(!src.contains("stencil_shuffle("));
        let shuffled = stencil_source::<f64>(
            &s,
            Some(BlockedShape {
                dim_t: 3,
                bx: 32,
                by: 16,
                ry: 2,
                rx: 2,
                skew: true,
            }),
            WIDE_INDEX,
        );
        assert!(
            shuffled.contains("#define RX 2\n")
                && shuffled.contains("#define IDX long long\n")
                && shuffled.contains("#define REAL2 double2\n")
                && shuffled.contains("#define SKEW 1\n")
                && shuffled.contains("#define INNER 1\n")
                && shuffled.contains("stencil_shuffle(")
                && !shuffled.contains("#define BX ")
        );
        // Negative coefficients keep their sign in both precisions.
        let signed = Stencil::seven_point(0.6, -0.05);
        assert!(stencil_source::<f32>(&signed, None, 0).contains("#define COEF {0.6f, -0.05f}\n"));
        assert!(stencil_source::<f64>(&signed, None, 0).contains("#define COEF {0.6, -0.05}\n"));
        let d = stencil_source::<f64>(&Stencil::from_name("box27").unwrap(), None, 0);
        assert!(
            d.contains("#define REAL double")
                && d.contains("#define IS_BOX 1")
                && !d.contains("#define BT")
        );
        // The f32 literal reads back as exactly the rounded coefficient.
        let lit = 0.1f64 as f32;
        assert_eq!(
            lit.cuda_literal()
                .trim_end_matches('f')
                .parse::<f32>()
                .unwrap(),
            lit
        );
    }
}
