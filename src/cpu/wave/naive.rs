//! The naive wave engine: one parallel sweep over the updated cells per step, planes of z
//! shared among the threads, reading `u^n` from the field and writing `u^{n+1}` and
//! `φ^{n+1}` to the scratch buffers.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::rows::{
    prefetch_x_layers, star_rows, RowDamping, Rows, WaveRowKernel, WithWave, PHI_AHEAD,
};
use super::step::{advance, failure, inject, GridPtr, WaveScratch};
use crate::engine::Failure;
use crate::wave::Wavefield;
use crate::Real;

/// A naive run of `steps` steps.
pub(crate) struct NaiveRun<'a, T: Real> {
    pub(crate) field: &'a mut Wavefield<T>,
    pub(crate) scratch: &'a mut WaveScratch<T>,
    pub(crate) steps: usize,
    pub(crate) pool: &'a rayon::ThreadPool,
}

impl<T: Real> WithWave<T> for NaiveRun<'_, T> {
    type Output = Result<(), Failure>;

    fn call<K: WaveRowKernel<T>>(self, kernel: K) -> Self::Output {
        let r = K::RADIUS;
        for s in 1..=self.steps {
            let swept = sweep(&kernel, self.field, self.scratch, self.pool);
            if !(swept && inject(self.field, self.scratch)) {
                return Err(failure(self.scratch, r, s));
            }
            advance(self.field, self.scratch);
        }
        Ok(())
    }
}

/// The rows the update of row `(y, z)` reads and writes, from whole grids.
#[inline(always)]
pub(crate) fn grid_rows<T: Real>(
    src: [&GridPtr<T>; 4],
    out: [&GridPtr<T>; 2],
    r: usize,
    y: usize,
    z: usize,
) -> Rows<T> {
    let [u, prev, coef, phi] = src;
    Rows {
        u: star_rows(r, |dy, dz| {
            u.row(y.wrapping_add_signed(dy), z.wrapping_add_signed(dz))
                .cast_const()
        }),
        prev: prev.row(y, z),
        coef: coef.row(y, z),
        phi: phi.row(y, z),
        out: out[0].row(y, z),
        phi_out: out[1].row(y, z),
    }
}

/// One step's sweep into `scratch`; returns whether every new value is finite.
pub(crate) fn sweep<T: Real, K: WaveRowKernel<T>>(
    kernel: &K,
    field: &Wavefield<T>,
    scratch: &mut WaveScratch<T>,
    pool: &rayon::ThreadPool,
) -> bool {
    let r = K::RADIUS;
    let [nx, ny, nz] = field.dims();
    let src = [
        GridPtr::of(&field.u),
        GridPtr::of(&field.prev),
        GridPtr::of(&field.coef),
        GridPtr::of(&field.phi),
    ];
    let out = [
        GridPtr::of_mut(&mut scratch.u),
        GridPtr::of_mut(&mut scratch.phi),
    ];
    let finite = AtomicBool::new(true);
    let damping = &field.damping;
    pool.install(|| {
        (r..nz - r).into_par_iter().for_each(|z| {
            // SAFETY: the CPU has the kernel's level (dispatch); each plane's rows are written
            // by this thread only, the sources are read only, and every row read lies in the
            // grid (rows y ± R, z ± R of an updated row exist, columns x ± R of updated
            // columns exist).
            let ok = unsafe {
                K::enter(
                    #[inline(always)]
                    || {
                        let mut ok = true;
                        for y in r..ny - r {
                            if y + PHI_AHEAD < ny - r {
                                let ahead =
                                    [src[3].row(y + PHI_AHEAD, z), out[1].row(y + PHI_AHEAD, z)];
                                prefetch_x_layers(damping, ahead, y + PHI_AHEAD, z, [r, nx - r]);
                            }
                            let rows = grid_rows(
                                [&src[0], &src[1], &src[2], &src[3]],
                                [&out[0], &out[1]],
                                r,
                                y,
                                z,
                            );
                            let damp = RowDamping::at(damping, y, z);
                            ok &= kernel.row(&rows, &damp, r, nx - r);
                        }
                        ok
                    },
                )
            };
            if !ok {
                finite.store(false, Ordering::Relaxed);
            }
        })
    });
    finite.into_inner()
}
