//! The reference engine: the obvious scalar loop, one time step at a time, one thread. It shares
//! no code with the fast engines (no row kernels, no tiling), which is what makes it the oracle
//! every test and `bench --verify` compares against.

use crate::{Grid, Real, Stencil};

/// Computes one time step: every interior cell of `dst` from `src`; the boundary layer of width
/// R is left as it is in `dst`.
pub(crate) fn step<T: Real>(stencil: &Stencil, src: &Grid<T>, dst: &mut Grid<T>) {
    let r = stencil.radius();
    let ri = r as i32;
    let (pitch, plane) = (src.pitch() as isize, src.plane_stride() as isize);
    // Every point of the stencil's footprint, as (storage offset, weight).
    let mut taps: Vec<(isize, T)> = Vec::new();
    for dz in -ri..=ri {
        for dy in -ri..=ri {
            for dx in -ri..=ri {
                let in_footprint =
                    stencil.is_box() || [dx, dy, dz].iter().filter(|&&d| d != 0).count() <= 1;
                if in_footprint {
                    let offset = dz as isize * plane + dy as isize * pitch + dx as isize;
                    taps.push((offset, T::of(stencil.weight(dx, dy, dz))));
                }
            }
        }
    }
    let [nx, ny, nz] = src.dims();
    let data = src.storage();
    for z in r..nz - r {
        for y in r..ny - r {
            for x in r..nx - r {
                let centre = src.offset(x, y, z) as isize;
                let mut acc = T::zero();
                for &(offset, weight) in &taps {
                    acc = acc + weight * data[(centre + offset) as usize];
                }
                dst[[x, y, z]] = acc;
            }
        }
    }
}

/// True when every interior cell (the cells a step writes) is finite.
pub(crate) fn interior_is_finite<T: Real>(grid: &Grid<T>, r: usize) -> bool {
    let [nx, ny, nz] = grid.dims();
    (r..nz - r)
        .all(|z| (r..ny - r).all(|y| grid.row(y, z)[r..nx - r].iter().all(|v| v.is_finite())))
}
