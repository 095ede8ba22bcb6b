//! Row kernels: the stencil update of one contiguous run of cells along x, written once as a
//! generic over the shape (star / box) and a compile-time radius, and instantiated for every
//! supported (shape, radius) pair by [`dispatch`]. Every CPU engine (naive and blocked) calls
//! these, so they all compute bitwise the same values for the same inputs.

use crate::stencil::{Shape, MAX_STAR_RADIUS};
use crate::{Real, SimdVec, Stencil};

/// Side of the table of source rows: offsets `-4..=4`.
pub(crate) const SPAN: usize = 2 * MAX_STAR_RADIUS + 1;

/// Pointers to the source rows around one output row: `rows[dz + R][dy + R]` points at row
/// `(y + dy, z + dz)` such that `rows[..][..][x]` is the cell at global column `x`. Each pointer
/// may point outside its buffer by a column offset; it is only dereferenced at columns that the
/// buffer holds.
pub(crate) struct RowSources<T> {
    pub(crate) rows: [[*const T; SPAN]; SPAN],
}

impl<T> RowSources<T> {
    /// Fills the rows a kernel of radius `r` reads (`boxed`: the whole `(2r+1)²` table; star:
    /// the centre plane's column and the centre row of the other planes), asking `row(dz, dy)`.
    #[inline]
    pub(crate) fn gather(
        r: usize,
        boxed: bool,
        mut row: impl FnMut(isize, isize) -> *const T,
    ) -> Self {
        let mut rows = [[std::ptr::null(); SPAN]; SPAN];
        let ri = r as isize;
        for dz in -ri..=ri {
            for dy in -ri..=ri {
                if boxed || dz == 0 || dy == 0 {
                    rows[(dz + ri) as usize][(dy + ri) as usize] = row(dz, dy);
                }
            }
        }
        RowSources { rows }
    }
}

/// A stencil specialised for one shape and radius.
pub(crate) trait RowKernel<T: Real>: Sync + Send {
    /// The radius R.
    const RADIUS: usize;
    /// Whether it reads the full cube (true) or the axes only (false).
    const BOX: bool;

    /// One vector of outputs at columns `x .. x + LANES`.
    ///
    /// # Safety
    /// Every source row must be readable at columns `x - R .. x + LANES + R`.
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> T::Simd;

    /// One output at column `x`, computed exactly as one lane of [`RowKernel::vector`].
    ///
    /// # Safety
    /// Every source row must be readable at columns `x - R ..= x + R`.
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T;

    /// Writes the outputs for columns `x0 .. x1` to `out[x0 .. x1]` and folds them into the
    /// finiteness tracker `check` (see [`SimdVec::track_finite`]).
    ///
    /// # Safety
    /// Sources must be readable at `x0 - R .. x1 + R`, `out` writable at `x0 .. x1`, and `out`
    /// must not alias a source.
    #[inline(always)]
    unsafe fn row(
        &self,
        src: &RowSources<T>,
        out: *mut T,
        x0: usize,
        x1: usize,
        check: &mut T::Simd,
    ) {
        let lanes = T::Simd::LANES;
        let mut x = x0;
        // SAFETY (whole body): the caller's contract covers every column touched: vectors start
        // at x >= x0 and end at x + lanes <= x1; the tail vector starts at x1 - lanes >= x0.
        unsafe {
            while x + lanes <= x1 {
                let v = self.vector(src, x);
                v.store(out.wrapping_add(x));
                *check = T::Simd::track_finite(*check, v);
                x += lanes;
            }
            if x < x1 {
                if x1 - x0 >= lanes {
                    // Recompute the last full vector; the overlap rewrites identical values.
                    let v = self.vector(src, x1 - lanes);
                    v.store(out.wrapping_add(x1 - lanes));
                    *check = T::Simd::track_finite(*check, v);
                } else {
                    for xs in x..x1 {
                        let v = self.scalar(src, xs);
                        *out.wrapping_add(xs) = v;
                        *check = T::Simd::track_finite(*check, T::Simd::splat(v));
                    }
                }
            }
        }
    }
}

/// Star stencil of radius `R`: centre times `c[0]`, plus `c[d]` times the sum of the six
/// neighbours at distance `d` (summed as three pairs).
pub(crate) struct Star<T: Real, const R: usize> {
    v: [T::Simd; MAX_STAR_RADIUS + 1],
    s: [T; MAX_STAR_RADIUS + 1],
}

impl<T: Real, const R: usize> Star<T, R> {
    fn new(coeffs: &[f64]) -> Self {
        debug_assert_eq!(coeffs.len(), R + 1);
        let mut s = [T::zero(); MAX_STAR_RADIUS + 1];
        for (d, c) in coeffs.iter().enumerate() {
            s[d] = T::of(*c);
        }
        Star {
            v: s.map(T::Simd::splat),
            s,
        }
    }
}

impl<T: Real, const R: usize> RowKernel<T> for Star<T, R> {
    const RADIUS: usize = R;
    const BOX: bool = false;

    #[inline(always)]
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> T::Simd {
        let ld = |p: *const T, i: usize| {
            // SAFETY: the caller guarantees columns x - R .. x + LANES + R are readable.
            unsafe { T::Simd::load(p.wrapping_add(i)) }
        };
        let c = src.rows[R][R];
        let mut acc = ld(c, x) * self.v[0];
        for d in 1..=R {
            let xy = (ld(c, x - d) + ld(c, x + d))
                + (ld(src.rows[R][R - d], x) + ld(src.rows[R][R + d], x));
            let s = xy + (ld(src.rows[R - d][R], x) + ld(src.rows[R + d][R], x));
            acc = s.mul_add(self.v[d], acc);
        }
        acc
    }

    #[inline(always)]
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T {
        let ld = |p: *const T, i: usize| {
            // SAFETY: the caller guarantees columns x - R ..= x + R are readable.
            unsafe { *p.wrapping_add(i) }
        };
        let c = src.rows[R][R];
        let mut acc = ld(c, x) * self.s[0];
        for d in 1..=R {
            let xy = (ld(c, x - d) + ld(c, x + d))
                + (ld(src.rows[R][R - d], x) + ld(src.rows[R][R + d], x));
            let s = xy + (ld(src.rows[R - d][R], x) + ld(src.rows[R + d][R], x));
            acc = s.mul_add(self.s[d], acc);
        }
        acc
    }
}

/// Box stencil of radius `R`: one fused multiply-add per point of the cube, accumulated in one
/// independent partial sum per z-plane (associative partial sums keep the FMA units busy
/// instead of waiting on one long dependency chain).
pub(crate) struct Cube<T: Real, const R: usize> {
    v: Vec<T::Simd>,
    s: Vec<T>,
}

impl<T: Real, const R: usize> Cube<T, R> {
    fn new(coeffs: &[f64]) -> Self {
        debug_assert_eq!(coeffs.len(), (2 * R + 1).pow(3));
        let s: Vec<T> = coeffs.iter().map(|&c| T::of(c)).collect();
        Cube {
            v: s.iter().map(|&c| T::Simd::splat(c)).collect(),
            s,
        }
    }
}

impl<T: Real, const R: usize> RowKernel<T> for Cube<T, R> {
    const RADIUS: usize = R;
    const BOX: bool = true;

    #[inline(always)]
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> T::Simd {
        let w = 2 * R + 1;
        let zero = T::Simd::splat(T::zero());
        let mut planes = [zero; 2 * crate::stencil::MAX_BOX_RADIUS + 1];
        for (dz, part) in planes.iter_mut().enumerate().take(w) {
            let mut acc = zero;
            for dy in 0..w {
                let p = src.rows[dz][dy].wrapping_add(x).wrapping_sub(R);
                for dx in 0..w {
                    // SAFETY: columns x - R .. x + LANES + R of every row are readable.
                    let v = unsafe { T::Simd::load(p.wrapping_add(dx)) };
                    acc = v.mul_add(self.v[(dz * w + dy) * w + dx], acc);
                }
            }
            *part = acc;
        }
        sum_planes::<T::Simd>(&planes[..w])
    }

    #[inline(always)]
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T {
        let w = 2 * R + 1;
        let mut planes = [T::zero(); 2 * crate::stencil::MAX_BOX_RADIUS + 1];
        for (dz, part) in planes.iter_mut().enumerate().take(w) {
            let mut acc = T::zero();
            for dy in 0..w {
                let p = src.rows[dz][dy].wrapping_add(x).wrapping_sub(R);
                for dx in 0..w {
                    // SAFETY: columns x - R ..= x + R of every row are readable.
                    let v = unsafe { *p.wrapping_add(dx) };
                    acc = v.mul_add(self.s[(dz * w + dy) * w + dx], acc);
                }
            }
            *part = acc;
        }
        sum_planes::<T>(&planes[..w])
    }
}

/// Adds the per-plane partial sums in a fixed order (shared by the vector and scalar paths so
/// both round identically).
#[inline(always)]
fn sum_planes<V: Copy + std::ops::Add<Output = V>>(parts: &[V]) -> V {
    let mut total = parts[0];
    for &p in &parts[1..] {
        total = total + p;
    }
    total
}

/// A computation that is generic over the row kernel (Rust has no generic closures).
pub(crate) trait WithKernel<T: Real> {
    /// What the computation returns.
    type Output;
    /// Runs the computation with the specialised kernel.
    fn call<K: RowKernel<T>>(self, kernel: K) -> Self::Output;
}

/// Instantiates the row kernel for `stencil`'s shape and radius and runs `job` with it.
/// The stencil must be valid (the planner checks radius and coefficient count).
pub(crate) fn dispatch<T: Real, J: WithKernel<T>>(stencil: &Stencil, job: J) -> J::Output {
    let c = stencil.coeffs();
    match (stencil.shape(), stencil.radius()) {
        (Shape::Star { .. }, 1) => job.call(Star::<T, 1>::new(c)),
        (Shape::Star { .. }, 2) => job.call(Star::<T, 2>::new(c)),
        (Shape::Star { .. }, 3) => job.call(Star::<T, 3>::new(c)),
        (Shape::Star { .. }, 4) => job.call(Star::<T, 4>::new(c)),
        (Shape::Box { .. }, 1) => job.call(Cube::<T, 1>::new(c)),
        (Shape::Box { .. }, 2) => job.call(Cube::<T, 2>::new(c)),
        (_, r) => unreachable!("stencil radius {r} passed validation but has no kernel"),
    }
}
