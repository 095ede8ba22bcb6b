//! Specialising the wave kernel source `kernels/wave.cu`: the space order's weights divided by
//! each axis's `h²`, the precision and the blocked kernel's shape become compile-time constants;
//! and the launch geometry of both kernels, computed here once for the engine and the emulator
//! tests.

use super::source::{index_type, PASSES_CUH};
use crate::tuning::Tuning;
use crate::wave::WaveKernel;
use crate::{DType, Real};

/// The CUDA source of the wave kernels.
const WAVE_CU: &str = include_str!("kernels/wave.cu");

/// Threads per block of `wave_naive` (x, y): one thread per column, a warp along x.
pub(crate) const NAIVE_BLOCK: [usize; 2] = [32, 8];

/// The shape of a `wave_blocked` launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WaveShape {
    /// Steps per pass.
    pub(crate) dim_t: usize,
    /// Threads per block in x (the tile width).
    pub(crate) bx: usize,
    /// Threads per block in y.
    pub(crate) by: usize,
    /// Rows per thread (tile height `by · ry`).
    pub(crate) ry: usize,
    /// Neighbouring cells per thread along x, moved as one vector (1, or 2 at `dim_t` 1 and an
    /// even radius; tile width `bx · rx`).
    pub(crate) rx: usize,
    /// Output planes per block along z.
    pub(crate) hz: usize,
}

impl WaveShape {
    /// Output columns of a tile in x and y at radius `r`, `None` when the ghost zone of
    /// `r · (dim_t − 1)` cells on each side leaves none (the threads compute levels 1 ..
    /// `dim_t − 1` there; level 0's `r`-wide rim beyond the tile is loaded, not computed).
    pub(crate) fn valid(&self, r: usize) -> Option<[usize; 2]> {
        let halo = 2 * r * (self.dim_t - 1);
        let (tx, ty) = (self.bx * self.rx, self.by * self.ry);
        (tx > halo && ty > halo).then(|| [tx - halo, ty - halo])
    }

    /// Planes the one-step loop computes per barrier (`WAVE_SYNC` in wave.cu):
    /// `STENCIL35D_GPU_WAVE_SYNC` when set (1 or 2), else 2 where a thread computes one cell
    /// of a plane and 1 where it computes more. Halving the barriers pays where a thread's work
    /// between two is one cell: on the H200 (order 6 `f32`, 32×16 threads of one cell, 200
    /// steps) 2 planes ran 132.4 G points/s against 124.7 at 1000³ and 124.4 against 117.5 at
    /// 512³; with four cells per thread (order 8, 32×8 threads of 2 rows of 2 cells) they ran
    /// 156.1 against 160.9 and 141.3 against 145.1, and with two (32×16 of 1 row of 2) 142.0
    /// against 156.3.
    pub(crate) fn sync_planes(&self) -> usize {
        match Tuning::current().gpu.wave_sync {
            Some(n) => n.clamp(1, 2),
            None if self.ry * self.rx == 1 => 2,
            None => 1,
        }
    }

    /// Input planes the one-step loop holds in shared memory, copied `stages() −
    /// sync_planes()` planes ahead: `STENCIL35D_GPU_WAVE_STAGES` when set (for tuning
    /// experiments), else 3; at least twice [`WaveShape::sync_planes`].
    pub(crate) fn stages(&self) -> usize {
        let stages = Tuning::current().gpu.wave_stages.unwrap_or(3);
        stages.max(2 * self.sync_planes())
    }

    /// Dynamic shared memory: two buffers of one plane per level, each the tile with an
    /// `r`-wide rim; at `dim_t` 1 a ring of [`WaveShape::stages`] such planes and as many
    /// slots of four tiles (the staged loads of a plane, `stage_plane` in wave.cu).
    pub(crate) fn shared_bytes(&self, r: usize, dtype: DType) -> usize {
        let (tx, ty) = (self.bx * self.rx, self.by * self.ry);
        let plane = (tx + 2 * r) * (ty + 2 * r);
        let elements = match self.dim_t {
            1 => self.stages() * (plane + STAGED_ARRAYS * tx * ty),
            d => 2 * d * plane,
        };
        elements * dtype.size()
    }

    /// Why the kernel cannot take this shape at radius `r`, if it cannot: two cells per thread
    /// along x need one step per pass and an even radius (their vector loads then lie on
    /// even columns), more are not compiled.
    pub(crate) fn refusal(&self, r: usize) -> Option<String> {
        match self.rx {
            1 => None,
            2 if self.dim_t == 1 && r.is_multiple_of(2) => None,
            2 => Some(format!(
                "two cells per thread along x run at dim_t 1 and an even radius (space order \
                 4 or 8); this shape has dim_t {} at radius {r}",
                self.dim_t
            )),
            n => Some(format!(
                "the wave kernel takes 1 or 2 cells per thread along x, not {n}"
            )),
        }
    }

    /// Blocks of a launch on `dims` whose one-step tiles start at `origin` in x and y (at or
    /// below `r`, see [`super::wave_tiles::tile_origin`]; the tiles of passes of several steps
    /// start at `r`, as their kernel's do); `None` when a tile has no output.
    pub(crate) fn grid(
        &self,
        r: usize,
        [nx, ny, nz]: [usize; 3],
        origin: [i64; 2],
    ) -> Option<[usize; 3]> {
        let [vx, vy] = self.valid(r)?;
        let origin = match self.dim_t {
            1 => origin,
            _ => [r as i64; 2],
        };
        let span = |n: usize, o: i64| (n as i64 - r as i64 - o).max(0) as usize;
        Some([
            span(nx, origin[0]).div_ceil(vx),
            span(ny, origin[1]).div_ceil(vy),
            (nz - 2 * r).div_ceil(self.hz.max(1)),
        ])
    }
}

/// The weights of one axis's second derivative divided by `h²`, as a brace list in `T`.
fn axis_weights<T: Real>(weights: &[f64], h: f64) -> String {
    let list: Vec<String> = weights
        .iter()
        .map(|w| T::of(w / (h * h)).cuda_literal())
        .collect();
    format!("{{{}}}", list.join(", "))
}

/// Arrays the one-step kernels stage per plane: `u` ahead, `u⁻`, `(v·dt)²`, `φ`.
const STAGED_ARRAYS: usize = 4;

/// The source for `kernel` in `T`: `wave_naive` always, `wave_blocked` with `shape` for a grid
/// of `elements` elements (its padded storage).
pub(crate) fn wave_source<T: Real>(
    kernel: &WaveKernel,
    shape: Option<WaveShape>,
    elements: usize,
) -> String {
    let w = kernel.weights();
    let [hx, hy, hz] = kernel.spacing;
    let [bx, by] = match shape {
        Some(s) => [s.bx, s.by],
        None => NAIVE_BLOCK,
    };
    let mut text = format!(
        "#define REAL {}\n#define RADIUS {}\n#define WX {}\n#define WY {}\n#define WZ {}\n\
         #define BX {bx}\n#define BY {by}\n",
        T::CUDA_NAME,
        kernel.radius(),
        axis_weights::<T>(w, hx),
        axis_weights::<T>(w, hy),
        axis_weights::<T>(w, hz),
    );
    if let Some(s) = shape {
        let index = index_type(elements);
        text += &format!(
            "#define BT {}\n#define RY {}\n#define RX {}\n#define IDX {index}\n#define WAVE_STAGES {}\n\
             #define WAVE_SYNC {}\n",
            s.dim_t,
            s.ry,
            s.rx,
            s.stages(),
            s.sync_planes()
        );
    }
    text + PASSES_CUH + WAVE_CU
}

#[cfg(test)]
mod tests {
    use super::{wave_source, WaveShape};
    use crate::gpu::compile::test_support::{nvrtc_present, ptx_for_sm90};
    use crate::gpu::source::WIDE_INDEX;
    use crate::wave::WaveKernel;

    /// Every wave kernel variant compiles with NVRTC when NVRTC is installed, even without a
    /// GPU (PTX for sm_90; the host emulator compiles the same source as C++, which accepts
    /// constructs NVRTC refuses): every order, f32 and f64, one and several steps per pass,
    /// one, two and four cells per thread (one plane or two per barrier), 32- and 64-bit
    /// offsets, unequal spacings.
    #[test]
    fn nvrtc_compiles_every_wave_variant() {
        if !nvrtc_present() {
            return;
        }
        for order in [2, 4, 6, 8] {
            let r = order / 2;
            let mut k = WaveKernel::new(10.0, 1e-3, 2500.0).with_order(order);
            k.spacing = [10.0, 12.5, 8.0];
            for (dim_t, ry, rx, elements) in [
                (1, 1, 1, 1 << 20),
                (1, 2, 1, 1 << 20),
                (1, 2, 2, WIDE_INDEX),
                (2, 2, 1, 1 << 20),
                (3, 2, 1, WIDE_INDEX),
            ] {
                let shape = WaveShape {
                    dim_t,
                    bx: 32,
                    by: 8,
                    ry,
                    rx,
                    hz: 64,
                };
                if shape.refusal(r).is_some() {
                    continue;
                }
                let what =
                    format!("order {order} dim_t {dim_t} {ry}x{rx} cells elements {elements}");
                let (f32_ptx, seconds) =
                    ptx_for_sm90(wave_source::<f32>(&k, Some(shape), elements), &what);
                let (f64_ptx, _) =
                    ptx_for_sm90(wave_source::<f64>(&k, Some(shape), elements), &what);
                let inner = (dim_t == 1).then_some("wave_blocked_inner");
                for name in ["wave_naive", "wave_blocked", "wave_mirror"]
                    .into_iter()
                    .chain(inner)
                {
                    assert!(
                        f32_ptx.contains(name) && f64_ptx.contains(name),
                        "{what}: {name} missing"
                    );
                }
                println!("{what}: {seconds:.2} s");
            }
        }
    }

    /// Two cells per thread run at one step per pass and an even radius only; the refusal
    /// says which condition failed.
    #[test]
    fn two_cells_per_thread_need_one_step_and_an_even_radius() {
        let pairs = WaveShape {
            dim_t: 1,
            bx: 32,
            by: 8,
            ry: 2,
            rx: 2,
            hz: 128,
        };
        assert_eq!(pairs.refusal(4), None);
        assert_eq!(pairs.refusal(2), None);
        assert!(pairs.refusal(3).is_some_and(|m| m.contains("radius 3")));
        let deep = WaveShape { dim_t: 2, ..pairs };
        assert!(deep.refusal(4).is_some_and(|m| m.contains("dim_t 2")));
        assert!(WaveShape { rx: 3, ..pairs }.refusal(4).is_some());
        assert_eq!(WaveShape { rx: 1, ..deep }.refusal(3), None);
        // The tile is bx·rx wide: 64 columns, and its shared planes with the rim.
        assert_eq!(pairs.valid(4), Some([64, 16]));
        assert_eq!(
            pairs.shared_bytes(4, crate::DType::F32),
            3 * (72 * 24 + 4 * 64 * 16) * 4
        );
        assert_eq!(deep.shared_bytes(4, crate::DType::F64), 2 * 2 * 72 * 24 * 8);
    }
}
