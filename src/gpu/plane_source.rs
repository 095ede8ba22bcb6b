//! Specialising the 2D kernel source `kernels/plane.cu`: a 2D stencil step or a convolution
//! becomes one correlation (size, anchor, weights) whose weights are compile-time constants, with
//! the precision, the fixed boundary or the border mode, and the blocked kernels' shapes; and the
//! launch geometry each kernel expects, computed here once for the engine and the emulator tests.

use super::launch_grid::launch_grid;
use crate::plane::{Border, Filter2, Stencil2};
use crate::{Error, Real, Result};

/// The CUDA source of the 2D kernels.
const PLANE_CU: &str = include_str!("kernels/plane.cu");

/// Lanes of a warp: a strip of the blocked kernels is 32 lanes wide.
const LANES: usize = 32;

/// A 2D kernel as the correlation `out(x, y) = Σ w[j][i]·in(x + i − ax, y + j − ay)` the source
/// computes, with what lies at the edges.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PlaneSpec {
    /// `[kw, kh]`.
    pub(crate) size: [usize; 2],
    /// `[ax, ay]`.
    pub(crate) anchor: [usize; 2],
    /// `kh` rows of `kw` weights.
    pub(crate) weights: Vec<f64>,
    /// A stencil's fixed boundary or a convolution's border.
    pub(crate) edges: Edges,
}

/// What the kernels do at the edges of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Edges {
    /// An iterated stencil: the outer `radius` cells on every side are fixed, never written.
    Fixed { radius: usize },
    /// A convolution: every pixel written, the outside given by the border mode.
    Border(Border),
}

impl PlaneSpec {
    /// The stencil's step: a `(2R+1)²` correlation anchored at its centre.
    pub(crate) fn stencil(stencil: &Stencil2) -> Self {
        let r = stencil.radius();
        let ri = r as i32;
        let weights = (-ri..=ri)
            .flat_map(|dy| (-ri..=ri).map(move |dx| stencil.weight(dx, dy)))
            .collect();
        PlaneSpec {
            size: [2 * r + 1; 2],
            anchor: [r; 2],
            weights,
            edges: Edges::Fixed { radius: r },
        }
    }

    /// The filter as it stands.
    pub(crate) fn filter(filter: &Filter2) -> Self {
        PlaneSpec {
            size: filter.size(),
            anchor: filter.anchor(),
            weights: filter.weights().to_vec(),
            edges: Edges::Border(filter.border()),
        }
    }

    /// The fixed boundary's width (0 for a convolution).
    pub(crate) fn radius(&self) -> usize {
        match self.edges {
            Edges::Fixed { radius } => radius,
            Edges::Border(_) => 0,
        }
    }
}

/// Which kernel a source holds besides `plane_naive`, with its compile-time shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Variant {
    /// `plane_naive` only.
    Naive,
    /// `plane_systolic` (convolutions): `rx` columns per lane, `ry` output rows per chunk, `by`
    /// warps per block.
    Systolic { rx: usize, ry: usize, by: usize },
    /// `plane_blocked` (stencils): `dim_t` steps per pass, `rx` columns per lane, `by` warps per
    /// block, levels skewed or not.
    Blocked {
        dim_t: usize,
        rx: usize,
        by: usize,
        skew: bool,
    },
}

impl Variant {
    /// The kernel function a pass of this variant launches.
    pub(crate) fn kernel_name(&self) -> &'static str {
        match self {
            Variant::Naive => "plane_naive",
            Variant::Systolic { .. } => "plane_systolic",
            Variant::Blocked { .. } => "plane_blocked",
        }
    }
}

/// Rows of level 0's input the blocked stencil kernel loads ahead: as many as its ring of
/// `2R + 1` rows holds, at most 4 (each costs `rx` registers).
fn prefetch_rows(radius: usize) -> usize {
    (2 * radius + 1).min(4)
}

/// Rows beyond the register prefetch that the blocked stencil kernel asks L2 to fetch.
const L2_AHEAD_ROWS: usize = 8;

/// [`L2_AHEAD_ROWS`], or in tests the value `test_l2_ahead::set` installed (for measurements).
fn l2_ahead() -> usize {
    #[cfg(test)]
    if let Some(v) = test_l2_ahead::get() {
        return v;
    }
    L2_AHEAD_ROWS
}

/// A test-only override of the L2 prefetch distance, for measuring it.
#[cfg(test)]
pub(crate) mod test_l2_ahead {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static OVERRIDE: AtomicUsize = AtomicUsize::new(usize::MAX);

    /// Sets the distance the next sources are specialised with (`None`: the default).
    pub(crate) fn set(v: Option<usize>) {
        OVERRIDE.store(v.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    pub(super) fn get() -> Option<usize> {
        let v = OVERRIDE.load(Ordering::Relaxed);
        (v != usize::MAX).then_some(v)
    }
}

/// The window lead of the systolic kernel: the anchor rounded up to a multiple of `rx`, so
/// that loads and stores are `rx`-aligned.
fn lead(ax: usize, rx: usize) -> usize {
    ax.div_ceil(rx) * rx
}

/// The specialised source of `spec` in `T` holding `plane_naive` and the kernel of `variant`.
pub(crate) fn plane_source<T: Real>(spec: &PlaneSpec, variant: Variant) -> String {
    let [kw, kh] = spec.size;
    let [ax, ay] = spec.anchor;
    let weights: Vec<String> = spec
        .weights
        .iter()
        .map(|&w| T::of(w).cuda_literal())
        .collect();
    let (stencil, radius, border, border_value) = match spec.edges {
        Edges::Fixed { radius } => (1, radius, 0, 0.0),
        Edges::Border(b) => {
            let code = match b {
                Border::Constant(_) => 0,
                Border::Replicate => 1,
                Border::Reflect => 2,
                Border::Reflect101 => 3,
                Border::Wrap => 4,
            };
            (0, 0, code, b.constant())
        }
    };
    let mut text = format!(
        "#define REAL {}\n#define REAL_BYTES {}\n#define KW {kw}\n#define KH {kh}\n#define AX {ax}\n\
         #define AY {ay}\n#define WEIGHTS {{{}}}\n#define STENCIL {stencil}\n#define RADIUS {radius}\n\
         #define BORDER {border}\n#define BORDER_VALUE {}\n",
        T::CUDA_NAME,
        std::mem::size_of::<T>(),
        weights.join(", "),
        T::of(border_value).cuda_literal(),
    );
    text += &match variant {
        Variant::Naive => "#define SYSTOLIC 0\n".to_string(),
        Variant::Systolic { rx, ry, by } => format!(
            "#define SYSTOLIC 1\n#define RX {rx}\n#define RY {ry}\n#define BY {by}\n#define LEAD {}\n",
            lead(ax, rx)
        ),
        Variant::Blocked {
            dim_t,
            rx,
            by,
            skew,
        } => format!(
            "#define SYSTOLIC 0\n#define BT {dim_t}\n#define RX {rx}\n#define BY {by}\n#define SKEW {}\n#define PF {}\n#define L2_AHEAD {}\n",
            skew as u8,
            prefetch_rows(radius),
            l2_ahead()
        ),
    };
    text + PLANE_CU
}

/// Grid and block dimensions of a launch, and the integer arguments its kernel takes after the
/// pitch (none for `plane_naive`; `vx, sb` for `plane_systolic`; `x_first, gl, vx, sb` for
/// `plane_blocked`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) grid: [u32; 2],
    pub(crate) block: [u32; 2],
    pub(crate) args: Vec<i32>,
}

/// Threads per block of `plane_naive`.
const NAIVE_BLOCK: [usize; 2] = [32, 8];

/// Narrows a launch figure to what the kernel takes, or says the grid is too large.
fn narrow<U: TryFrom<usize>>(v: usize) -> Result<U> {
    U::try_from(v).map_err(|_| Error::InvalidPlan(format!("{v} does not fit a GPU launch figure")))
}

/// Checks, without a device, that `plane_naive`'s launch on an `nx × ny` grid keeps to CUDA's
/// grid limits; every GPU run takes it (gpu-naive's step, and the replay of a failed blocked
/// pass a step at a time).
pub(crate) fn check_naive_launch([nx, ny]: [usize; 2]) -> Result<()> {
    let [gx, gy] = naive_blocks([nx, ny]);
    launch_grid([gx, gy, 1], || format!("a {nx} x {ny} plane")).map(drop)
}

/// `plane_naive`'s blocks along x and y on an `nx × ny` grid.
fn naive_blocks([nx, ny]: [usize; 2]) -> [usize; 2] {
    [0, 1].map(|a| [nx, ny][a].div_ceil(NAIVE_BLOCK[a]).max(1))
}

/// The launch of `variant` for `spec` on an `nx × ny` grid, `sb` rows per warp (blocked
/// kernels). Fails with [`Error::InvalidPlan`] when the shape leaves a strip no output or the
/// launch exceeds CUDA's grid limits.
pub(crate) fn geometry(
    spec: &PlaneSpec,
    variant: Variant,
    [nx, ny]: [usize; 2],
    sb: usize,
) -> Result<Geometry> {
    let blocks = |n: usize, per: usize| narrow::<u32>(n.div_ceil(per.max(1)).max(1));
    let sb = sb.max(1);
    let launch: Result<Geometry> = match variant {
        Variant::Naive => Ok(Geometry {
            grid: {
                let [gx, gy] = naive_blocks([nx, ny]);
                [narrow(gx)?, narrow(gy)?]
            },
            block: NAIVE_BLOCK.map(|b| b as u32),
            args: vec![],
        }),
        Variant::Systolic { rx, ry, by } => {
            let vx = systolic_width(spec.size[0], spec.anchor[0], rx).ok_or_else(|| {
                Error::InvalidPlan(format!(
                    "a {}-wide filter leaves no output in a strip of {} columns",
                    spec.size[0],
                    LANES * rx
                ))
            })?;
            let sb = sb.div_ceil(ry.max(1)) * ry.max(1);
            Ok(Geometry {
                grid: [blocks(nx, vx)?, blocks(ny.div_ceil(sb), by)?],
                block: [LANES as u32, narrow(by)?],
                args: vec![narrow(vx)?, narrow(sb)?],
            })
        }
        Variant::Blocked { dim_t, rx, by, .. } => {
            let r = spec.radius();
            let strip = blocked_strip(r, dim_t, rx).ok_or_else(|| {
                Error::InvalidPlan(format!(
                    "dim_t {dim_t} at radius {r} leaves no output in a strip of {} columns",
                    LANES * rx
                ))
            })?;
            let interior = [nx.saturating_sub(2 * r), ny.saturating_sub(2 * r)];
            // First output column of strip 0: x_first + gl <= r.
            let covered = r as i64 - (strip.x_first + strip.gl as i64);
            let strips = (interior[0] as i64 + covered).max(1) as usize;
            Ok(Geometry {
                grid: [
                    blocks(strips, strip.vx)?,
                    blocks(interior[1].div_ceil(sb), by)?,
                ],
                block: [LANES as u32, narrow(by)?],
                args: vec![
                    i32::try_from(strip.x_first).map_err(|_| {
                        Error::InvalidPlan(format!(
                            "{} does not fit a GPU launch figure",
                            strip.x_first
                        ))
                    })?,
                    narrow(strip.gl)?,
                    narrow(strip.vx)?,
                    narrow(sb)?,
                ],
            })
        }
    };
    let launch = launch?;
    let [gx, gy] = launch.grid.map(|g| g as usize);
    launch_grid([gx, gy, 1], || format!("a {nx} x {ny} plane"))?;
    Ok(launch)
}

/// Valid output columns of a systolic strip of `32·rx` columns for a `kw`-wide filter anchored at
/// `ax` (a multiple of `rx`); `None` when there are none.
pub(crate) fn systolic_width(kw: usize, ax: usize, rx: usize) -> Option<usize> {
    let rx = rx.max(1);
    let kwe = kw + lead(ax, rx) - ax;
    let vx = ((LANES * rx + 1).checked_sub(kwe)? / rx) * rx;
    (vx > 0).then_some(vx)
}

/// The columns of a blocked stencil strip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockedStrip {
    /// Window start of strip 0 (a multiple of `rx`, at most `r − gl`).
    pub(crate) x_first: i64,
    /// Ghost columns before a strip's outputs (`R·dim_t` rounded up to a multiple of `rx`).
    pub(crate) gl: usize,
    /// Output columns per strip (a multiple of `rx`).
    pub(crate) vx: usize,
}

/// The strip of the blocked stencil kernel at radius `r`, `dim_t` levels and `rx` columns per
/// lane: junk from the warp's ends spreads `r` columns per level, so a strip's outputs lie at
/// least `r·dim_t` columns inside its window on each side; `None` when none are left.
pub(crate) fn blocked_strip(r: usize, dim_t: usize, rx: usize) -> Option<BlockedStrip> {
    let rx = rx.max(1);
    let ghost = r * dim_t;
    let gl = ghost.div_ceil(rx) * rx;
    let vx = ((LANES * rx).checked_sub(ghost + gl)? / rx) * rx;
    let x_first = (r as i64 - gl as i64).div_euclid(rx as i64) * rx as i64;
    (vx > 0).then_some(BlockedStrip { x_first, gl, vx })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::test_support::{nvrtc_present, ptx_for_sm90};

    /// A plane whose rows need more than CUDA's 65,535 blocks along y is refused before any
    /// launch; one row fewer is taken.
    #[test]
    fn planes_past_cudas_grid_limits_are_refused() {
        let spec = PlaneSpec::stencil(&Stencil2::from_name("star2d:1").unwrap());
        let rows = NAIVE_BLOCK[1] * 65_535;
        assert!(geometry(&spec, Variant::Naive, [16, rows], 1).is_ok());
        match geometry(&spec, Variant::Naive, [16, rows + 1], 1) {
            Err(Error::InvalidPlan(m)) => assert!(m.contains("along y"), "{m}"),
            other => panic!("expected InvalidPlan, got {other:?}"),
        }
    }

    /// Every kernel variant compiles with NVRTC when NVRTC is installed, even without a GPU (PTX
    /// for sm_90): filters 1x1 to 15x15 (even, odd, off-centre) in both precisions with the
    /// planner's shapes, every border mode, stars and boxes of every radius at dim_t 1, 4 and 8,
    /// both level schedules.
    #[test]
    fn nvrtc_compiles_every_plane_variant() {
        if !nvrtc_present() {
            return;
        }
        let mut total = 0.0;
        let mut compile = |src: String, what: String| {
            let t = ptx_for_sm90(src, &what).1;
            println!("{what}: {t:.2} s");
            total += t;
        };
        let borders = [
            Border::Constant(1.5),
            Border::Replicate,
            Border::Reflect,
            Border::Reflect101,
            Border::Wrap,
        ];
        for (i, k) in [1, 2, 3, 5, 7, 8, 11, 15].into_iter().enumerate() {
            let f = Filter2::from_name(&format!("dense:{k}x{}", 16 - k))
                .unwrap()
                .with_anchor([k - 1, 0])
                .unwrap()
                .with_border(borders[i % borders.len()]);
            let spec = PlaneSpec::filter(&f);
            for (rx, ry) in [(4, 8), (2, 4)] {
                let v = Variant::Systolic { rx, ry, by: 4 };
                compile(plane_source::<f32>(&spec, v), format!("{f} f32 {v:?}"));
                compile(plane_source::<f64>(&spec, v), format!("{f} f64 {v:?}"));
            }
        }
        // The stencils at the shapes the planner offers (registers permitting), dim_t 1 to 8.
        for name in [
            "star2d:1", "star2d:2", "star2d:3", "star2d:4", "box2d:1", "box2d:2", "box2d:3",
        ] {
            let s = Stencil2::from_name(name).unwrap();
            let spec = PlaneSpec::stencil(&s);
            let kernel = crate::plan::Kernel::from(s);
            compile(
                plane_source::<f64>(&spec, Variant::Naive),
                format!("{name} naive"),
            );
            for dtype in [crate::DType::F32, crate::DType::F64] {
                for dim_t in [1, 2, 4, 8] {
                    let engine = crate::Engine::GpuBlocked;
                    let Some(l) =
                        crate::plan::plane_model::plane_launch(&kernel, dtype, engine, dim_t)
                    else {
                        continue;
                    };
                    let v = Variant::Blocked {
                        dim_t,
                        rx: l.rx,
                        by: l.block[1],
                        skew: dim_t % 2 == 0,
                    };
                    let what = format!("{name} {dtype} {v:?}");
                    match dtype {
                        crate::DType::F32 => compile(plane_source::<f32>(&spec, v), what),
                        crate::DType::F64 => compile(plane_source::<f64>(&spec, v), what),
                    }
                }
            }
        }
        println!("total NVRTC time {total:.1} s");
    }

    #[test]
    fn strips_cover_the_grid_aligned() {
        for r in 1..=4 {
            for dim_t in 1..=8 {
                for rx in [1, 2, 4] {
                    let Some(s) = blocked_strip(r, dim_t, rx) else {
                        assert!(2 * r * dim_t + rx > 32 * rx, "r {r} dim_t {dim_t} rx {rx}");
                        continue;
                    };
                    assert_eq!(s.x_first.rem_euclid(rx as i64), 0);
                    assert!(s.x_first + s.gl as i64 <= r as i64);
                    assert!(s.gl >= r * dim_t && s.gl + s.vx + r * dim_t <= 32 * rx);
                    assert_eq!((s.gl % rx, s.vx % rx), (0, 0));
                }
            }
        }
        assert_eq!(systolic_width(3, 1, 4), Some(120));
        assert_eq!(systolic_width(15, 7, 4), Some(112));
        assert_eq!(systolic_width(15, 14, 1), Some(18));
        assert_eq!(lead(5, 4), 8);
    }

    #[test]
    fn sources_carry_the_specialisation() {
        let s = Stencil2::from_name("star2d:1").unwrap();
        let src = plane_source::<f32>(
            &PlaneSpec::stencil(&s),
            Variant::Blocked {
                dim_t: 3,
                rx: 4,
                by: 2,
                skew: false,
            },
        );
        assert!(src.contains("#define KW 3\n#define KH 3\n#define AX 1\n"));
        assert!(src.contains("#define WEIGHTS {0.0f, 0.125f, 0.0f, 0.125f, 0.5f, 0.125f"));
        assert!(src.contains("#define BT 3\n") && src.contains("#define PF 3\n"));
        let f = Filter2::from_name("sobel")
            .unwrap()
            .with_border(Border::Constant(2.5));
        let src = plane_source::<f64>(
            &PlaneSpec::filter(&f),
            Variant::Systolic {
                rx: 2,
                ry: 4,
                by: 4,
            },
        );
        assert!(src.contains("#define REAL double\n#define REAL_BYTES 8\n"));
        assert!(src.contains("#define BORDER 0\n#define BORDER_VALUE 2.5\n"));
        assert!(src.contains("#define LEAD 2\n"));
    }
}
