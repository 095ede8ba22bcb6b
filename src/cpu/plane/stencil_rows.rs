//! The 2D stencil row kernels: one output row of a star (radius 1..=4) or a box (radius
//! 1..=3) from the `2R + 1` rows around it, written once over the shape, a compile-time
//! radius and the instruction-set level, and instantiated for every supported (shape,
//! radius) pair at the plan's level by [`dispatch`]. The naive and the blocked 2D engines both
//! call them through the row loop the 3D kernels use ([`row_loop`]), so at one level they
//! compute bitwise the same values.

use crate::plane::{Shape2, Stencil2, MAX_BOX2_RADIUS, MAX_STAR2_RADIUS};
use crate::simd::{with_isa, Isa, Level, Tracker, Vector, WithIsa};
use crate::{Lane, Real};

use crate::cpu::rows::{row_loop, RowPoints};

/// Most rows a kernel reads: offsets `-4..=4`.
pub(crate) const SPAN: usize = 2 * MAX_STAR2_RADIUS + 1;

/// The source rows around one output row: entry `dy + R` is row `y + dy` of the level below,
/// indexable by global column (a pointer may lie outside its buffer by a column offset; only
/// columns the buffer holds are read).
#[derive(Clone, Copy)]
pub(crate) struct Rows<T> {
    pub(crate) row: [*const T; SPAN],
}

impl<T> Rows<T> {
    /// The rows for radius `r`, asking `row(dy)` for each of `dy = -r ..= r`.
    #[inline(always)]
    pub(crate) fn gather(r: usize, mut row: impl FnMut(isize) -> *const T) -> Self {
        let mut rows = Rows {
            row: [std::ptr::null(); SPAN],
        };
        for (i, dy) in (-(r as isize)..=r as isize).enumerate() {
            rows.row[i] = row(dy);
        }
        rows
    }
}

/// A 2D stencil specialised for one shape, radius and instruction-set level.
pub(crate) trait PlaneKernel<T: Real>: Sync + Send + Copy {
    /// The radius R.
    const RADIUS: usize;
    /// The instruction-set level it runs at.
    type Isa: Isa;

    /// The update at columns `x ..` for one lane type (a vector or one scalar).
    ///
    /// # Safety
    /// Rows `0 ..= 2R` of `rows` must be readable at columns `x - R .. x + lanes + R`.
    unsafe fn point<L: Lane<Scalar = T>>(&self, rows: &Rows<T>, x: usize) -> L;

    /// Computes columns `x0 .. x1` of the row around which `rows` lie into `out[x0 .. x1]` and
    /// folds the outputs into `check`. Runs inside the level's entry ([`Isa::enter`]).
    ///
    /// # Safety
    /// Rows `0 ..= 2R` of `rows` readable at columns `x0 - R .. x1 + R`, `out` writable at
    /// `x0 .. x1` and aliasing no source row, and the CPU runs the kernel's level.
    #[inline(always)]
    unsafe fn row_at_level(
        &self,
        rows: &Rows<T>,
        out: *mut T,
        x0: usize,
        x1: usize,
        check: &mut Tracker<T>,
    ) {
        // A local copy: the coefficients then live in registers for the whole row, where
        // through `self` every store to `out` (which might alias it, for all the compiler
        // knows) would reload them.
        let kernel = *self;
        // SAFETY: forwarded from the caller.
        unsafe {
            row_loop(
                &KernelRow {
                    kernel: &kernel,
                    rows,
                },
                out,
                x0,
                x1,
                check,
            )
        }
    }
}

/// A 2D kernel with the rows around one output row: the outputs the shared row loop computes.
struct KernelRow<'a, T, K> {
    kernel: &'a K,
    rows: &'a Rows<T>,
}

impl<T: Real, K: PlaneKernel<T>> RowPoints<T> for KernelRow<'_, T, K> {
    type Isa = K::Isa;

    #[inline(always)]
    fn aligned_to(&self) -> *const T {
        self.rows.row[K::RADIUS]
    }

    #[inline(always)]
    unsafe fn vector(&self, x: usize) -> Vector<T, K::Isa> {
        // SAFETY: forwarded from the caller.
        unsafe { self.kernel.point(self.rows, x) }
    }

    #[inline(always)]
    unsafe fn scalar(&self, x: usize) -> T::One<K::Isa> {
        // SAFETY: forwarded from the caller.
        unsafe { self.kernel.point(self.rows, x) }
    }
}

/// Star of radius `R`: the centre times `c[0]`, plus `c[d]` times the sum of the four
/// neighbours at distance `d` (summed as two pairs). The coefficients are scalars broadcast at
/// each use, as in the 3D box kernel.
#[derive(Clone, Copy)]
pub(crate) struct Star<T: Real, S: Isa, const R: usize> {
    c: [T; MAX_STAR2_RADIUS + 1],
    _isa: std::marker::PhantomData<S>,
}

impl<T: Real, S: Isa, const R: usize> PlaneKernel<T> for Star<T, S, R> {
    const RADIUS: usize = R;
    type Isa = S;

    #[inline(always)]
    unsafe fn point<L: Lane<Scalar = T>>(&self, rows: &Rows<T>, x: usize) -> L {
        let ld = |p: *const T, i: usize| {
            // SAFETY: the caller guarantees the columns `x - R .. x + lanes + R` of every row.
            unsafe { L::load(p.wrapping_add(i)) }
        };
        let centre = rows.row[R];
        let mut acc = ld(centre, x) * L::splat(self.c[0]);
        for d in 1..=R {
            let sum = (ld(centre, x - d) + ld(centre, x + d))
                + (ld(rows.row[R - d], x) + ld(rows.row[R + d], x));
            acc = sum.mul_add(L::splat(self.c[d]), acc);
        }
        acc
    }
}

/// Coefficients of the largest box, `(2·MAX_BOX2_RADIUS + 1)²`.
const SQUARE_MAX: usize = (2 * MAX_BOX2_RADIUS + 1).pow(2);

/// Box of radius `R`: one fused multiply-add per point of the square, one independent partial
/// sum per row (short dependency chains keep both FMA units busy), the partial sums added in
/// row order. Every coefficient is applied, zeros included, so a non-finite value always
/// reaches the outputs that read it.
#[derive(Clone, Copy)]
pub(crate) struct Square<T: Real, S: Isa, const R: usize> {
    c: [T; SQUARE_MAX],
    _isa: std::marker::PhantomData<S>,
}

impl<T: Real, S: Isa, const R: usize> PlaneKernel<T> for Square<T, S, R> {
    const RADIUS: usize = R;
    type Isa = S;

    #[inline(always)]
    unsafe fn point<L: Lane<Scalar = T>>(&self, rows: &Rows<T>, x: usize) -> L {
        let w = 2 * R + 1;
        let mut total = L::splat(T::zero());
        for dy in 0..w {
            let p = rows.row[dy].wrapping_add(x).wrapping_sub(R);
            let mut part = L::splat(T::zero());
            for dx in 0..w {
                // SAFETY: the caller guarantees the columns `x - R .. x + lanes + R`.
                let v = unsafe { L::load(p.wrapping_add(dx)) };
                part = v.mul_add(L::splat(self.c[dy * w + dx]), part);
            }
            total = if dy == 0 { part } else { total + part };
        }
        total
    }
}

/// The coefficients of `stencil` as `T`, in its storage order, padded with zeros to `N`.
fn coeffs<T: Real, const N: usize>(stencil: &Stencil2) -> [T; N] {
    let mut c = [T::zero(); N];
    for (dst, &v) in c.iter_mut().zip(stencil.coeffs()) {
        *dst = T::of(v);
    }
    c
}

/// A computation generic over the 2D kernel (Rust has no generic closures).
pub(crate) trait WithPlaneKernel<T: Real> {
    /// What the computation returns.
    type Output;
    /// Runs the computation with the specialised kernel.
    fn call<K: PlaneKernel<T>>(self, kernel: K) -> Self::Output;
}

/// Instantiates the kernel for `stencil`'s shape and radius at instruction-set `level` (or
/// the highest level below it the CPU has) and runs `job` with it. The stencil must be valid
/// (the planner checks radius and coefficient count).
pub(crate) fn dispatch<T: Real, J: WithPlaneKernel<T>>(
    stencil: &Stencil2,
    level: Level,
    job: J,
) -> J::Output {
    with_isa(
        level,
        AtLevel {
            stencil,
            job,
            _t: std::marker::PhantomData::<T>,
        },
    )
}

/// [`dispatch`]'s job once the level is known.
struct AtLevel<'a, T, J> {
    stencil: &'a Stencil2,
    job: J,
    _t: std::marker::PhantomData<T>,
}

impl<T: Real, J: WithPlaneKernel<T>> WithIsa for AtLevel<'_, T, J> {
    type Output = J::Output;

    fn call<S: Isa>(self) -> J::Output {
        let (s, job) = (self.stencil, self.job);
        let _isa = std::marker::PhantomData::<S>;
        match (s.shape(), s.radius()) {
            (Shape2::Star { .. }, 1) => job.call(Star::<T, S, 1> { c: coeffs(s), _isa }),
            (Shape2::Star { .. }, 2) => job.call(Star::<T, S, 2> { c: coeffs(s), _isa }),
            (Shape2::Star { .. }, 3) => job.call(Star::<T, S, 3> { c: coeffs(s), _isa }),
            (Shape2::Star { .. }, 4) => job.call(Star::<T, S, 4> { c: coeffs(s), _isa }),
            (Shape2::Box { .. }, 1) => job.call(Square::<T, S, 1> { c: coeffs(s), _isa }),
            (Shape2::Box { .. }, 2) => job.call(Square::<T, S, 2> { c: coeffs(s), _isa }),
            (Shape2::Box { .. }, 3) => job.call(Square::<T, S, 3> { c: coeffs(s), _isa }),
            (_, r) => unreachable!("2D stencil radius {r} passed validation but has no kernel"),
        }
    }
}
