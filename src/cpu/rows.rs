//! Row kernels: the stencil update of one contiguous run of cells along x, written once as a
//! generic over the shape (star / box), a compile-time radius and the instruction-set level, and
//! instantiated for every supported (shape, radius) pair at the plan's level by [`dispatch`].
//! Every CPU engine (naive and blocked) calls these, so at one level they all compute bitwise
//! the same values for the same inputs.

use std::mem::MaybeUninit;

use crate::simd::{with_isa, Isa, Level, OneLane, Tracker, Vector, WithIsa};
use crate::stencil::{Shape, MAX_BOX_RADIUS, MAX_STAR_RADIUS};
use crate::{Lane, Real, SimdVec, Stencil};

/// Most planes a kernel reads: offsets `-4..=4`.
pub(crate) const SPAN: usize = 2 * MAX_STAR_RADIUS + 1;

/// Where the planes `z - R ..= z + R` around an output plane live: the address
/// `base[dz + R] + y·pitch[dz + R] + x` holds cell (x, y, z + dz). Planes may sit in different buffers (the grid, a ring
/// buffer) with different pitches; a base pointer may point outside its buffer by a row and
/// column offset, and only addresses of cells the buffer holds are dereferenced.
#[derive(Clone, Copy)]
pub(crate) struct Planes<T> {
    pub(crate) base: [*const T; SPAN],
    pub(crate) pitch: [usize; SPAN],
}

impl<T> Planes<T> {
    /// The planes for radius `r`, asking `plane(dz)` for each (base, pitch).
    #[inline]
    pub(crate) fn gather(r: usize, mut plane: impl FnMut(isize) -> (*const T, usize)) -> Self {
        let mut p = Planes {
            base: [std::ptr::null(); SPAN],
            pitch: [0; SPAN],
        };
        for (i, dz) in (-(r as isize)..=r as isize).enumerate() {
            (p.base[i], p.pitch[i]) = plane(dz);
        }
        p
    }

    /// Row `y` of plane `i` (`i = dz + R`), indexable by global column.
    #[inline(always)]
    pub(crate) fn row(&self, i: usize, y: usize) -> *const T {
        self.base[i].wrapping_add(y * self.pitch[i])
    }
}

/// Pointers to the source rows around one output row: entry `[dz + R][dy + R]` is row
/// `(y + dy, z + dz)`, indexable by global column. Only the rows the kernel's shape reads are set
/// (the rest stay uninitialised, so building the table costs no clearing).
pub(crate) struct RowSources<T> {
    rows: [[MaybeUninit<*const T>; SPAN]; SPAN],
}

impl<T> RowSources<T> {
    /// Row `[dz][dy]` (indices offset by R).
    ///
    /// # Safety
    /// The entry must have been set by [`RowKernel::sources`] for this kernel's shape.
    #[inline(always)]
    unsafe fn get(&self, dz: usize, dy: usize) -> *const T {
        // SAFETY: the caller only asks for entries its shape set.
        unsafe { self.rows[dz][dy].assume_init() }
    }
}

/// A stencil specialised for one shape, radius and instruction-set level.
pub(crate) trait RowKernel<T: Real>: Sync + Send + Sized {
    /// The radius R.
    const RADIUS: usize;
    /// Whether it reads the full cube (true) or the axes only (false).
    const BOX: bool;
    /// The instruction-set level it runs at.
    type Isa: Isa;

    /// One vector of outputs at columns `x .. x + LANES`.
    ///
    /// # Safety
    /// Every source row must be readable at columns `x - R .. x + LANES + R`.
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> Vector<T, Self::Isa>;

    /// One output at column `x`, computed exactly as one lane of [`RowKernel::vector`].
    ///
    /// # Safety
    /// Every source row must be readable at columns `x - R ..= x + R`.
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T::One<Self::Isa>;

    /// The source rows around row `y` of the planes: only the ones this shape reads are set.
    #[inline(always)]
    fn sources(planes: &Planes<T>, y: usize) -> RowSources<T> {
        let r = Self::RADIUS;
        let mut rows = RowSources {
            rows: [[MaybeUninit::uninit(); SPAN]; SPAN],
        };
        for dz in 0..=2 * r {
            for dy in 0..=2 * r {
                if Self::BOX || dz == r || dy == r {
                    rows.rows[dz][dy] = MaybeUninit::new(planes.row(dz, y + dy - r));
                }
            }
        }
        rows
    }

    /// Computes row `y` for columns `x0 .. x1` into `out[x0 .. x1]` and folds the outputs into
    /// the finiteness tracker `check`, in code compiled for the kernel's level ([`Isa::enter`]).
    ///
    /// # Safety
    /// Rows `y - R ..= y + R` of every plane must be readable at columns `x0 - R .. x1 + R`,
    /// `out` writable at `x0 .. x1`, and `out` must not alias a source.
    #[inline(always)]
    unsafe fn row(
        &self,
        planes: &Planes<T>,
        y: usize,
        out: *mut T,
        x0: usize,
        x1: usize,
        check: &mut Tracker<T>,
    ) {
        // SAFETY: the kernel's level was picked by `dispatch`, which never picks a level the CPU
        // lacks; the row's contract is the caller's.
        unsafe {
            Self::Isa::enter(
                #[inline(always)]
                || self.row_at_level(planes, y, out, x0, x1, check),
            )
        }
    }

    /// [`RowKernel::row`] without entering the level: for loops over rows that run inside
    /// `Self::Isa::enter` themselves (a call per row costs a memory-bound sweep several percent).
    /// Outside such an entry it computes the same values, slowly.
    ///
    /// # Safety
    /// As for [`RowKernel::row`], and the CPU runs the kernel's level.
    #[inline(always)]
    unsafe fn row_at_level(
        &self,
        planes: &Planes<T>,
        y: usize,
        out: *mut T,
        x0: usize,
        x1: usize,
        check: &mut Tracker<T>,
    ) {
        let points = KernelRow {
            kernel: self,
            src: Self::sources(planes, y),
        };
        // SAFETY: forwarded from the caller: the sources are readable at every column the
        // loop asks for, `x0 - R .. x1 + R`.
        unsafe { row_loop(&points, out, x0, x1, check) }
    }
}

/// The outputs of one row, a vector or one lane at a time: what [`row_loop`] computes. The 3D
/// row kernels (through [`KernelRow`]) and the 2D ones (`crate::cpu::plane`) share the loop.
pub(crate) trait RowPoints<T: Real> {
    /// The instruction-set level the outputs are computed at.
    type Isa: Isa;

    /// Column 0 of the source row whose alignment the loop follows (the centre row).
    fn aligned_to(&self) -> *const T;

    /// The outputs at columns `x .. x + LANES`.
    ///
    /// # Safety
    /// The sources must be readable at every column these outputs read.
    unsafe fn vector(&self, x: usize) -> Vector<T, Self::Isa>;

    /// The output at column `x`, computed exactly as one lane of [`RowPoints::vector`].
    ///
    /// # Safety
    /// As for [`RowPoints::vector`].
    unsafe fn scalar(&self, x: usize) -> T::One<Self::Isa>;
}

/// A 3D row kernel with the source rows around one output row.
struct KernelRow<'a, T, K> {
    kernel: &'a K,
    src: RowSources<T>,
}

impl<T: Real, K: RowKernel<T>> RowPoints<T> for KernelRow<'_, T, K> {
    type Isa = K::Isa;

    #[inline(always)]
    fn aligned_to(&self) -> *const T {
        // SAFETY: every shape sets its centre row.
        unsafe { self.src.get(K::RADIUS, K::RADIUS) }
    }

    #[inline(always)]
    unsafe fn vector(&self, x: usize) -> Vector<T, K::Isa> {
        // SAFETY: forwarded from the caller.
        unsafe { self.kernel.vector(&self.src, x) }
    }

    #[inline(always)]
    unsafe fn scalar(&self, x: usize) -> T::One<K::Isa> {
        // SAFETY: forwarded from the caller.
        unsafe { self.kernel.scalar(&self.src, x) }
    }
}

/// Computes columns `x0 .. x1` of one row of `points` into `out[x0 .. x1]` and folds the
/// outputs into the finiteness tracker `check`. Runs inside the level's entry
/// ([`Isa::enter`]); outside one it computes the same values, slowly.
///
/// # Safety
/// `points` must be readable for every output of `x0 .. x1` ([`RowPoints::vector`]), `out`
/// writable at `x0 .. x1` and not aliasing a source, and the CPU must run the level.
#[inline(always)]
pub(crate) unsafe fn row_loop<T: Real, P: RowPoints<T>>(
    points: &P,
    out: *mut T,
    x0: usize,
    x1: usize,
    check: &mut Tracker<T>,
) {
    type V<T, P> = Vector<T, <P as RowPoints<T>>::Isa>;
    let lanes = V::<T, P>::LANES;
    let mut x = x0;
    // A local accumulator stays in a register; updating `*check` in the loop would carry a
    // store-to-load dependency through memory from one vector to the next.
    let mut acc: V<T, P> = check.get();
    // SAFETY (whole body): the caller's contract covers every column touched: vectors start
    // at x >= x0 and end at x + lanes <= x1; the tail vector starts at x1 - lanes >= x0.
    unsafe {
        // Vectors that straddle two cache lines cost two loads each; so after a first,
        // unaligned vector the loop starts at the next column whose address in the centre
        // row is a multiple of the vector size (the overlap rewrites identical values). The
        // grid's rows and the ring rows keep global columns aligned alike, so the rows
        // above and below and the output then align too.
        if x1 - x0 >= lanes {
            let size = std::mem::size_of::<T>();
            let centre = points.aligned_to().wrapping_add(x0) as usize;
            let skew = centre % (lanes * size) / size;
            if skew != 0 {
                let v = points.vector(x0);
                v.store(out.wrapping_add(x0));
                acc = V::<T, P>::track_finite(acc, v);
                x = x0 + lanes - skew;
            }
        }
        // Two vectors per iteration, tracked in two accumulators: one chain of dependent
        // fused multiply-adds would bound the loop by the FMA latency.
        let mut acc2 = V::<T, P>::splat(T::zero());
        while x + 2 * lanes <= x1 {
            let v = points.vector(x);
            let w = points.vector(x + lanes);
            v.store(out.wrapping_add(x));
            w.store(out.wrapping_add(x + lanes));
            acc = V::<T, P>::track_finite(acc, v);
            acc2 = V::<T, P>::track_finite(acc2, w);
            x += 2 * lanes;
        }
        acc = acc + acc2;
        while x + lanes <= x1 {
            let v = points.vector(x);
            v.store(out.wrapping_add(x));
            acc = V::<T, P>::track_finite(acc, v);
            x += lanes;
        }
        if x < x1 {
            if x1 - x0 >= lanes {
                // Recompute the last full vector; the overlap rewrites identical values.
                let v = points.vector(x1 - lanes);
                v.store(out.wrapping_add(x1 - lanes));
                acc = V::<T, P>::track_finite(acc, v);
            } else {
                for xs in x..x1 {
                    let v = points.scalar(xs).get();
                    *out.wrapping_add(xs) = v;
                    acc = V::<T, P>::track_finite(acc, V::<T, P>::splat(v));
                }
            }
        }
    }
    check.set(acc);
}

/// Star stencil of radius `R`: centre times `c[0]`, plus `c[d]` times the sum of the six
/// neighbours at distance `d` (summed as three pairs).
pub(crate) struct Star<T: Real, S: Isa, const R: usize> {
    v: [Vector<T, S>; MAX_STAR_RADIUS + 1],
    s: [T::One<S>; MAX_STAR_RADIUS + 1],
}

impl<T: Real, S: Isa, const R: usize> Star<T, S, R> {
    fn new(coeffs: &[f64]) -> Self {
        debug_assert_eq!(coeffs.len(), R + 1);
        let mut s = [T::zero(); MAX_STAR_RADIUS + 1];
        for (d, c) in coeffs.iter().enumerate() {
            s[d] = T::of(*c);
        }
        Star {
            v: s.map(Lane::splat),
            s: s.map(Lane::splat),
        }
    }

    /// The star update at column `x` for one lane type (a vector or a scalar).
    ///
    /// # Safety
    /// The shape's rows must be set in `src` and readable at columns `x - R .. x + lanes + R`.
    #[inline(always)]
    unsafe fn point<L: Lane<Scalar = T>>(
        src: &RowSources<T>,
        x: usize,
        c: &[L; MAX_STAR_RADIUS + 1],
    ) -> L {
        // SAFETY: the star's rows ([R][*] and [*][R]) were set, and the caller guarantees the
        // columns read here are inside them.
        unsafe {
            let ld = |p: *const T, i: usize| L::load(p.wrapping_add(i));
            let centre = src.get(R, R);
            let mut acc = ld(centre, x) * c[0];
            for (d, &cd) in c.iter().enumerate().take(R + 1).skip(1) {
                let xy = (ld(centre, x - d) + ld(centre, x + d))
                    + (ld(src.get(R, R - d), x) + ld(src.get(R, R + d), x));
                let sum = xy + (ld(src.get(R - d, R), x) + ld(src.get(R + d, R), x));
                acc = sum.mul_add(cd, acc);
            }
            acc
        }
    }
}

impl<T: Real, S: Isa, const R: usize> RowKernel<T> for Star<T, S, R> {
    const RADIUS: usize = R;
    const BOX: bool = false;
    type Isa = S;

    #[inline(always)]
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> Vector<T, S> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::point(src, x, &self.v) }
    }

    #[inline(always)]
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T::One<S> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::point(src, x, &self.s) }
    }
}

/// Coefficients of the largest box stencil, `(2·MAX_BOX_RADIUS + 1)³`.
const CUBE_MAX: usize = (2 * MAX_BOX_RADIUS + 1).pow(3);

/// Box stencil of radius `R`: one fused multiply-add per point of the cube, accumulated in one
/// independent partial sum per z-plane (associative partial sums keep the FMA units busy
/// instead of waiting on one long dependency chain). The coefficients are kept as scalars and
/// broadcast at each use (with AVX-512 the broadcast is part of the FMA's memory operand): 27
/// scalars share two cache lines where 27 vectors of them took 27.
pub(crate) struct Cube<T: Real, S: Isa, const R: usize> {
    // A fixed-size array, not a Vec: with constant indices after unrolling there are no bounds
    // checks, and no length to reload after every store through the output pointer.
    c: [T; CUBE_MAX],
    _isa: std::marker::PhantomData<S>,
}

impl<T: Real, S: Isa, const R: usize> Cube<T, S, R> {
    fn new(coeffs: &[f64]) -> Self {
        debug_assert_eq!(coeffs.len(), (2 * R + 1).pow(3));
        let mut c = [T::zero(); CUBE_MAX];
        for (dst, &v) in c.iter_mut().zip(coeffs) {
            *dst = T::of(v);
        }
        Cube {
            c,
            _isa: std::marker::PhantomData,
        }
    }

    /// The box update at column `x` for one lane type (a vector or a scalar).
    ///
    /// # Safety
    /// Every row of the cube must be set in `src` and readable at `x - R .. x + lanes + R`.
    #[inline(always)]
    unsafe fn point<L: Lane<Scalar = T>>(src: &RowSources<T>, x: usize, c: &[T; CUBE_MAX]) -> L {
        let w = 2 * R + 1;
        let zero = L::splat(T::zero());
        let mut total = zero;
        for dz in 0..w {
            let mut part = zero;
            for dy in 0..w {
                // SAFETY: all (2R+1)² rows were set; the caller guarantees the columns.
                let p = unsafe { src.get(dz, dy) }.wrapping_add(x).wrapping_sub(R);
                for dx in 0..w {
                    // SAFETY: as above.
                    let v = unsafe { L::load(p.wrapping_add(dx)) };
                    part = v.mul_add(L::splat(c[(dz * w + dy) * w + dx]), part);
                }
            }
            total = if dz == 0 { part } else { total + part };
        }
        total
    }
}

impl<T: Real, S: Isa, const R: usize> RowKernel<T> for Cube<T, S, R> {
    const RADIUS: usize = R;
    const BOX: bool = true;
    type Isa = S;

    #[inline(always)]
    unsafe fn vector(&self, src: &RowSources<T>, x: usize) -> Vector<T, S> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::point(src, x, &self.c) }
    }

    #[inline(always)]
    unsafe fn scalar(&self, src: &RowSources<T>, x: usize) -> T::One<S> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::point(src, x, &self.c) }
    }
}

/// A computation that is generic over the row kernel (Rust has no generic closures).
pub(crate) trait WithKernel<T: Real> {
    /// What the computation returns.
    type Output;
    /// Runs the computation with the specialised kernel.
    fn call<K: RowKernel<T>>(self, kernel: K) -> Self::Output;
}

/// Instantiates the row kernel for `stencil`'s shape and radius at instruction-set `level` (or
/// the highest level below it the CPU has) and runs `job` with it. The stencil must be valid
/// (the planner checks radius and coefficient count).
pub(crate) fn dispatch<T: Real, J: WithKernel<T>>(
    stencil: &Stencil,
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
    stencil: &'a Stencil,
    job: J,
    _t: std::marker::PhantomData<T>,
}

impl<T: Real, J: WithKernel<T>> WithIsa for AtLevel<'_, T, J> {
    type Output = J::Output;

    fn call<S: Isa>(self) -> J::Output {
        let (c, job) = (self.stencil.coeffs(), self.job);
        match (self.stencil.shape(), self.stencil.radius()) {
            (Shape::Star { .. }, 1) => job.call(Star::<T, S, 1>::new(c)),
            (Shape::Star { .. }, 2) => job.call(Star::<T, S, 2>::new(c)),
            (Shape::Star { .. }, 3) => job.call(Star::<T, S, 3>::new(c)),
            (Shape::Star { .. }, 4) => job.call(Star::<T, S, 4>::new(c)),
            (Shape::Box { .. }, 1) => job.call(Cube::<T, S, 1>::new(c)),
            (Shape::Box { .. }, 2) => job.call(Cube::<T, S, 2>::new(c)),
            (_, r) => unreachable!("stencil radius {r} passed validation but has no kernel"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `$f::<f32, S>()` and `$f::<f64, S>()` at every level this CPU has.
    macro_rules! at_every_level {
        ($f:ident) => {{
            struct Job;
            impl WithIsa for Job {
                type Output = ();
                fn call<S: Isa>(self) {
                    $f::<f32, S>();
                    $f::<f64, S>();
                }
            }
            for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
                with_isa(level, Job);
            }
        }};
    }

    /// Row 1 of the middle plane of three planes of 3 rows of `pitch` ones, with `bad` (if
    /// any) set to infinity there; returns the finiteness tracker and the output row.
    fn run_row<T: Real, S: Isa>(width: usize, bad: Option<usize>) -> (Tracker<T>, Vec<T>) {
        let kernel = Star::<T, S, 1>::new(&[0.5, 0.1]);
        let (pitch, rows) = (width + 2, 3);
        let mut data = vec![T::one(); 3 * rows * pitch];
        if let Some(x) = bad {
            data[rows * pitch + pitch + x] = T::infinity();
        }
        let planes = Planes::gather(1, |dz| {
            let plane = (dz + 1) as usize * rows * pitch;
            (data.as_ptr().wrapping_add(plane), pitch)
        });
        let mut out = vec![T::zero(); pitch];
        let mut check = Tracker::new();
        // SAFETY: rows 0..3 of the three planes are readable at columns 0 .. width + 2, and
        // out is writable at 1 ..= width.
        unsafe { kernel.row(&planes, 1, out.as_mut_ptr(), 1, width + 1, &mut check) };
        (check, out)
    }

    /// Rows of every width up to several vectors, with a single infinite source value at each
    /// column in turn: the row's finiteness tracker must flag every one of them, whichever
    /// vector (and accumulator) of the loop computes that column.
    fn flags_every_column<T: Real, S: Isa>() {
        let lanes = Vector::<T, S>::LANES;
        for width in [1, lanes - 1, lanes, 2 * lanes + 1, 4 * lanes + 3, 9 * lanes] {
            for bad in 1..=width {
                let (check, out) = run_row::<T, S>(width, Some(bad));
                assert!(
                    !check.is_finite(),
                    "{:?} width {width}, column {bad}",
                    S::LEVEL
                );
                assert!(!out[bad].is_finite(), "width {width}, column {bad}");
            }
            let (check, out) = run_row::<T, S>(width, None);
            assert!(check.is_finite(), "width {width}");
            let expected = T::of(0.5 + 6.0 * 0.1);
            assert!(out[1..=width]
                .iter()
                .all(|&v| (v - expected).abs() < T::of(1e-6)));
        }
    }

    /// The first output column of the probes below: `X0` (1..=31, default 1) in the
    /// environment, so rows can start at any alignment.
    fn first_column() -> usize {
        let x0 = std::env::var("X0").map_or(1, |v| v.parse().expect("X0 is a column number"));
        assert!((1..=31).contains(&x0), "X0 must be in 1..=31");
        x0
    }

    /// The row kernel's own speed with its rows in L1 (run by hand:
    /// `cargo test --release --lib row_kernel_speed -- --ignored --nocapture`; `X0` sets the
    /// first column, see [`first_column`]).
    #[test]
    #[ignore]
    fn row_kernel_speed() {
        fn time<T: Real, S: Isa>(width: usize) {
            let kernel = Star::<T, S, 1>::new(&[0.4, 0.1]);
            let (pitch, rows) = (width + 32, 3);
            let x0 = first_column();
            let mut data = crate::aligned::AlignedBuf::<T>::zeroed(3 * rows * pitch).unwrap();
            data.iter_mut().for_each(|v| *v = T::one());
            let planes = Planes::gather(1, |dz| {
                let plane = (dz + 1) as usize * rows * pitch;
                (data.as_ptr().wrapping_add(plane), pitch)
            });
            let mut out = crate::aligned::AlignedBuf::<T>::zeroed(pitch).unwrap();
            let mut check = Tracker::new();
            let reps = 50_000_000 / width;
            // The best of three rounds, the first also a warm-up; the finiteness tracker is
            // kept alive so its work is timed too.
            let mut ns = f64::MAX;
            for _ in 0..3 {
                let start = std::time::Instant::now();
                for _ in 0..reps {
                    // SAFETY: rows 0..3 of the three planes hold width + 32 columns, and
                    // columns x0 - 1 .. width + x0 + 1 lie inside them for x0 in 1..=31; out
                    // holds width + 32 columns.
                    unsafe { kernel.row(&planes, 1, out.as_mut_ptr(), x0, width + x0, &mut check) };
                    std::hint::black_box(&mut out);
                    std::hint::black_box(&mut check);
                }
                ns = ns.min(start.elapsed().as_nanos() as f64 / (reps * width) as f64);
            }
            println!(
                "{} {:?} width {width}: {ns:.3} ns per cell, {:.0} MUPS",
                S::LEVEL,
                T::DTYPE,
                1e3 / ns
            );
        }
        fn widths<T: Real, S: Isa>() {
            for width in [64, 256, 512] {
                time::<T, S>(width);
            }
        }
        at_every_level!(widths);
    }

    /// Planes from cache: computes `nz - 2` output planes of `width × rows` cells from a stack
    /// of `nz` input planes, `k` planes at a time with their rows interleaved (so rows of the
    /// planes between them are reused from L1), on `PROBE_THREADS` threads at once, each with
    /// its own planes; prints the mean rate per thread. Run by hand:
    /// `PROBE_THREADS=16 cargo test --release --lib plane_sweep_speed -- --ignored --nocapture`
    /// (`X0` sets the first column, see [`first_column`]).
    #[test]
    #[ignore]
    fn plane_sweep_speed() {
        struct Time(usize, usize, usize, usize);
        impl WithIsa for Time {
            type Output = f64;
            fn call<S: Isa>(self) -> f64 {
                time::<S>(self.0, self.1, self.2, self.3)
            }
        }
        fn time<S: Isa>(width: usize, rows: usize, nz: usize, k: usize) -> f64 {
            let kernel = Star::<f32, S, 1>::new(&[0.4, 0.1]);
            let pitch = width + 32;
            let plane = pitch * (rows + 2) + 16;
            let x0 = first_column();
            let mut data = crate::aligned::AlignedBuf::<f32>::zeroed(nz * plane).unwrap();
            data.iter_mut().for_each(|v| *v = 1.0);
            let mut out = crate::aligned::AlignedBuf::<f32>::zeroed(nz * plane).unwrap();
            let mut check = Tracker::new();
            let cells = (nz - 2) * rows * width;
            let reps = (200_000_000 / cells).max(1);
            let mut ns = f64::MAX;
            for _ in 0..3 {
                let start = std::time::Instant::now();
                for _ in 0..reps {
                    for z in (1..nz - 1).step_by(k) {
                        for y in 1..=rows {
                            for zc in z..(z + k).min(nz - 1) {
                                let planes = Planes::gather(1, |d| {
                                    let p = (zc as isize + d) as usize * plane;
                                    (data.as_ptr().wrapping_add(p), pitch)
                                });
                                let o = out.as_mut_ptr().wrapping_add(zc * plane + y * pitch);
                                // SAFETY: rows 0..rows+2 of planes 0..nz are readable at
                                // columns x0 - 1 .. width + x0 + 1 (inside the width + 32 of a
                                // row for x0 in 1..=31); o is writable there too.
                                unsafe { kernel.row(&planes, y, o, x0, width + x0, &mut check) };
                            }
                        }
                    }
                    std::hint::black_box(&mut out);
                    std::hint::black_box(&mut check);
                }
                ns = ns.min(start.elapsed().as_nanos() as f64 / (reps * cells) as f64);
            }
            1e3 / ns
        }
        let threads: usize = std::env::var("PROBE_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
        for (width, rows) in [
            (512, 4),
            (512, 12),
            (512, 24),
            (512, 48),
            (512, 96),
            (512, 192),
        ] {
            let nz = 8;
            let mib = 2.0 * (nz * (rows + 2) * (width + 32) * 4) as f64 / (1 << 20) as f64;
            let rates: Vec<String> = [1, 2, 4]
                .iter()
                .map(|&k| {
                    let per_thread: f64 = std::thread::scope(|s| {
                        let handles: Vec<_> = (0..threads)
                            .map(|_| {
                                s.spawn(move || {
                                    with_isa(Level::detected(), Time(width, rows, nz, k))
                                })
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().unwrap()).sum()
                    });
                    format!("k{k} {:.0}", per_thread / threads as f64)
                })
                .collect();
            println!(
                "f32 {width}x{rows}x{nz} ({mib:.2} MiB), {threads} threads, MUPS per thread: {}",
                rates.join("  ")
            );
        }
    }

    /// The row loop at every alignment of its first column (the aligned head) and widths
    /// around the vector length: every column of `x0 .. x1` equals the scalar update of that
    /// column bit for bit, and the columns on either side are left alone.
    fn every_column_at_every_alignment<T: Real, S: Isa>() {
        let lanes = Vector::<T, S>::LANES;
        let kernel = Star::<T, S, 1>::new(&[0.4, 0.13]);
        let (pitch, rows) = (8 * lanes + 64, 3);
        let mut data = crate::aligned::AlignedBuf::<T>::zeroed(3 * rows * pitch).unwrap();
        for (i, v) in data.iter_mut().enumerate() {
            *v = T::of(((i * 7919) % 1009) as f64 / 1009.0);
        }
        let planes = Planes::gather(1, |dz| {
            let plane = (dz + 1) as usize * rows * pitch;
            (data.as_ptr().wrapping_add(plane), pitch)
        });
        let src = Star::<T, S, 1>::sources(&planes, 1);
        let sentinel = T::of(-7.0);
        for width in [1, lanes - 1, lanes, lanes + 1, 2 * lanes + 3, 5 * lanes + 1] {
            for x0 in 1..=lanes + 1 {
                let x1 = x0 + width;
                let mut out = crate::aligned::AlignedBuf::<T>::zeroed(pitch).unwrap();
                out.fill(sentinel);
                let mut check = Tracker::new();
                // SAFETY: rows 0..3 of the three planes hold `pitch` columns, more than
                // x1 + 1; out holds `pitch` columns.
                unsafe { kernel.row(&planes, 1, out.as_mut_ptr(), x0, x1, &mut check) };
                for (x, &v) in out.iter().enumerate() {
                    if (x0..x1).contains(&x) {
                        // SAFETY: as above.
                        let want = unsafe { S::enter(|| kernel.scalar(&src, x).get()) };
                        assert!(v == want, "{:?} width {width} x0 {x0} column {x}", T::DTYPE);
                    } else {
                        assert!(
                            v == sentinel,
                            "{:?} width {width} x0 {x0} wrote {x}",
                            T::DTYPE
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_row_loop_computes_every_column_at_every_alignment() {
        at_every_level!(every_column_at_every_alignment);
    }

    #[test]
    fn the_row_loop_flags_a_non_finite_value_in_any_column() {
        at_every_level!(flags_every_column);
    }
}
