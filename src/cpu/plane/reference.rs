//! The scalar 2D reference: the oracle the fast 2D engines are tested against. Plain loops
//! over the definition, no SIMD, no blocking.

use crate::plane::{Filter2, Stencil2};
use crate::{Grid, Real};

/// One step of `stencil` on every interior cell of the one-plane grid `src` into `dst` (the
/// boundary layer of `dst` is left as it is).
pub(crate) fn stencil_step<T: Real>(stencil: &Stencil2, src: &Grid<T>, dst: &mut Grid<T>) {
    let [nx, ny, _] = src.dims();
    let r = stencil.radius();
    let ri = r as i32;
    // Offsets as `isize`, added to indices of any size: an interior cell plus an offset lies
    // within the grid, so the sum neither wraps nor truncates.
    let taps: Vec<(isize, isize, f64)> = (-ri..=ri)
        .flat_map(|dy| (-ri..=ri).map(move |dx| (dx, dy)))
        .map(|(dx, dy)| (dx as isize, dy as isize, stencil.weight(dx, dy)))
        .filter(|t| t.2 != 0.0)
        .collect();
    for y in r..ny - r {
        for x in r..nx - r {
            let mut acc = 0.0f64;
            for &(dx, dy, w) in &taps {
                let v = src.get(x.wrapping_add_signed(dx), y.wrapping_add_signed(dy), 0);
                acc += w * v.to_f64().unwrap_or(f64::NAN);
            }
            dst.set(x, y, 0, T::of(acc));
        }
    }
}

/// One application of `filter` to the one-plane grid `src` into `dst`, every pixel, the
/// outside given by the filter's border mode.
pub(crate) fn filter_step<T: Real>(filter: &Filter2, src: &Grid<T>, dst: &mut Grid<T>) {
    let [nx, ny, _] = src.dims();
    let [kw, kh] = filter.size();
    let [ax, ay] = filter.anchor();
    let border = filter.border();
    for y in 0..ny {
        for x in 0..nx {
            let mut acc = 0.0f64;
            for j in 0..kh {
                let sy = border.source(y as isize + j as isize - ay as isize, ny);
                for i in 0..kw {
                    let w = filter.weight(i, j);
                    if w == 0.0 {
                        continue;
                    }
                    let sx = border.source(x as isize + i as isize - ax as isize, nx);
                    let v = match (sx, sy) {
                        (Some(sx), Some(sy)) => src.get(sx, sy, 0).to_f64().unwrap_or(f64::NAN),
                        _ => border.constant(),
                    };
                    acc += w * v;
                }
            }
            dst.set(x, y, 0, T::of(acc));
        }
    }
}
