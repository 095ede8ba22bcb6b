//! The naive 2D stencil engine: one parallel SIMD sweep over the interior per time step (rayon
//! over bands of rows, the row kernels of [`super::stencil_rows`] inside). Every step reads
//! and writes the whole grid, so it runs at the memory bandwidth: the baseline the blocked
//! engine is measured against.

use rayon::prelude::*;

use super::stencil_rows::{PlaneKernel, Rows, WithPlaneKernel};
use super::steps::run_steps;
use crate::engine::Failure;
use crate::simd::{Isa, Tracker};
use crate::{Grid, Real};

/// Rows per rayon task: enough to pay for the task and the level entry, few enough that two
/// threads share a small grid.
const BAND_ROWS: usize = 16;

/// Computes one time step of every interior cell of the one-plane grid `src` into `dst` on the
/// current rayon pool (the boundary layer of `dst` is left alone); false if any computed value
/// is infinite or NaN.
pub(crate) fn step<T: Real, K: PlaneKernel<T>>(
    kernel: &K,
    src: &Grid<T>,
    dst: &mut Grid<T>,
) -> bool {
    let r = K::RADIUS;
    let [nx, ny, _] = src.dims();
    let pitch = src.pitch();
    dst.storage_mut()[..pitch * ny]
        .par_chunks_mut(pitch * BAND_ROWS)
        .enumerate()
        .map(|(band, out)| {
            let first = band * BAND_ROWS;
            let rows = first.max(r)..(first + BAND_ROWS).min(ny - r);
            let base = src.storage().as_ptr();
            let mut check = Tracker::new();
            // SAFETY: `dispatch` picked the kernel's level, which the CPU has. For each row y
            // of the band's interior rows, rows y-R ..= y+R of src hold columns 0 .. nx, so
            // the reads at r-R .. nx-r+R stay inside them; `out` holds the band's rows of dst
            // (disjoint from src) and row y - first of it columns r .. nx-r.
            unsafe {
                K::Isa::enter(
                    #[inline(always)]
                    || {
                        for y in rows {
                            let around = Rows::gather(r, |dy| {
                                base.wrapping_add(y.wrapping_add_signed(dy) * pitch)
                            });
                            let to = out.as_mut_ptr().wrapping_add((y - first) * pitch);
                            kernel.row_at_level(&around, to, r, nx - r, &mut check);
                        }
                    },
                )
            };
            check.is_finite()
        })
        .reduce(|| true, |a, b| a & b)
}

/// Runs `steps` naive steps, ping-ponging between `grid` and `scratch` and swapping storage
/// after each step, so `grid` always holds the newest finite state.
pub(crate) struct NaiveRun<'a, T: Real> {
    pub(crate) grid: &'a mut Grid<T>,
    pub(crate) scratch: &'a mut Grid<T>,
    pub(crate) steps: usize,
    pub(crate) pool: &'a rayon::ThreadPool,
}

impl<T: Real> WithPlaneKernel<T> for NaiveRun<'_, T> {
    type Output = Result<(), Failure>;

    fn call<K: PlaneKernel<T>>(self, kernel: K) -> Self::Output {
        let pool = self.pool;
        run_steps(
            self.grid,
            self.scratch,
            self.steps,
            K::RADIUS,
            |src, dst| pool.install(|| step(&kernel, src, dst)),
        )
    }
}
