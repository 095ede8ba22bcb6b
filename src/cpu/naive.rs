//! The naive engine: one parallel SIMD sweep over the grid per time step (rayon over z-planes,
//! the row kernels inside). No temporal blocking: every step reads and writes the whole grid, so
//! it runs at the memory bandwidth — the honest baseline a good engineer writes first.

use rayon::prelude::*;

use super::rows::{Planes, RowKernel, WithKernel};
use crate::engine::Failure;
use crate::simd::{Isa, Tracker};
use crate::{Grid, Real};

/// Computes one time step of every interior cell from `src` into `dst` on the current rayon
/// pool; returns false if any computed value is infinite or NaN.
pub(crate) fn step<T: Real, K: RowKernel<T>>(kernel: &K, src: &Grid<T>, dst: &mut Grid<T>) -> bool {
    let r = K::RADIUS;
    let [nx, ny, nz] = src.dims();
    let (pitch, plane) = (src.pitch(), dst.plane_stride());
    dst.storage_mut()
        .par_chunks_mut(plane)
        .enumerate()
        .filter(|(z, _)| (r..nz - r).contains(z))
        .map(|(z, out)| {
            let base = src.storage().as_ptr();
            let planes = Planes::gather(r, |dz| {
                (base.wrapping_add((z as isize + dz) as usize * plane), pitch)
            });
            let mut check = Tracker::new();
            // SAFETY: `dispatch` picked the kernel's level, which the CPU has. For each row:
            // planes z-r..=z+r of src hold rows y-r..=y+r with columns 0..nx, so the reads at
            // r-R .. nx-r+R stay inside them; `out` is plane z of dst (disjoint from src) and
            // row y of it holds columns r..nx-r.
            unsafe {
                K::Isa::enter(
                    #[inline(always)]
                    || {
                        for y in r..ny - r {
                            let to = out.as_mut_ptr().add(y * pitch);
                            kernel.row_at_level(&planes, y, to, r, nx - r, &mut check);
                        }
                    },
                )
            };
            check.is_finite()
        })
        .fold(|| true, |a, b| a & b)
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

impl<T: Real> WithKernel<T> for NaiveRun<'_, T> {
    type Output = Result<(), Failure>;

    fn call<K: RowKernel<T>>(self, kernel: K) -> Self::Output {
        for s in 1..=self.steps {
            if !self.pool.install(|| step(&kernel, self.grid, self.scratch)) {
                return Err(Failure::locate(self.scratch, K::RADIUS, s));
            }
            self.grid.swap_storage(self.scratch);
        }
        Ok(())
    }
}
