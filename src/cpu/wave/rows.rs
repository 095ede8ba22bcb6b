//! The wave update's row kernels, written once over the radius and the instruction-set level
//! and instantiated for radius 1..=4 at the plan's level by [`dispatch`]. Inner cells take the
//! plain update `u⁺ = 2u − u⁻ + c·∇²u`; cells in an absorbing layer take the layer's update
//! with `η` and the auxiliary field `φ`. A row is cut into at most three segments by the x
//! layers (a whole row inside a y or z layer is one layer segment), so no cell tests where it
//! lies. The naive and the blocked engines both call [`WaveRowKernel::row`], so at one level
//! they compute bitwise the same values.

use std::marker::PhantomData;

use crate::runtime::prefetch::prefetch_row;
use crate::simd::{with_isa, Isa, Level, Vector, WithIsa};
use crate::wave::{Damping, WaveKernel, MAX_WAVE_RADIUS};
use crate::{FlowLane, Lane, OneLane, Real, SimdVec};

/// Source rows of `u` one output row reads: the centre, then for each distance `d` the rows
/// `y − d`, `y + d`, `z − d`, `z + d` (entries `4(d − 1) + 1 ..`).
pub(crate) const SPAN: usize = 1 + 4 * MAX_WAVE_RADIUS;

/// The `u` rows one output row reads, in [`SPAN`] order, from `at(dy, dz)`: column 0 of the
/// row `dy` rows and `dz` planes from the output's (one of them zero, both within `±r`). The
/// one statement of the order the row kernel reads them in, for every engine.
#[inline(always)]
pub(crate) fn star_rows<T>(r: usize, at: impl Fn(isize, isize) -> *const T) -> [*const T; SPAN] {
    let mut u = [std::ptr::null(); SPAN];
    u[0] = at(0, 0);
    for d in 1..=r {
        let (b, s) = (4 * (d - 1) + 1, d as isize);
        u[b] = at(-s, 0);
        u[b + 1] = at(s, 0);
        u[b + 2] = at(0, -s);
        u[b + 3] = at(0, s);
    }
    u
}

/// Columns of the centre row one output reads: `x − R ..= x + R`, at most `2·MAX_WAVE_RADIUS
/// + 1`.
const WINDOW: usize = 1 + 2 * MAX_WAVE_RADIUS;

/// The rows one output row reads and writes. Every pointer addresses column 0 of its row
/// (global x) and may lie outside its buffer by a column offset: only the columns the buffer
/// holds are touched.
#[derive(Clone, Copy)]
pub(crate) struct Rows<T> {
    /// `u^n` rows (see [`SPAN`]).
    pub(crate) u: [*const T; SPAN],
    /// `u^{n−1}` at the output row.
    pub(crate) prev: *const T,
    /// `(v·dt)²` at the output row.
    pub(crate) coef: *const T,
    /// `φ^n` at the output row (read in layer segments only).
    pub(crate) phi: *const T,
    /// `u^{n+1}`, written.
    pub(crate) out: *mut T,
    /// `φ^{n+1}`, written in layer segments only.
    pub(crate) phi_out: *mut T,
}

/// What the absorbing layers give one row: `η` of its y and z, their gradient weights, and
/// whether the whole row lies in a y or z layer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowDamping<T> {
    pub(crate) eta_yz: T,
    pub(crate) grad_y: T,
    pub(crate) grad_z: T,
    pub(crate) layer: bool,
}

impl<T: Real> RowDamping<T> {
    /// The row at `(y, z)`.
    pub(crate) fn at(d: &Damping<T>, y: usize, z: usize) -> RowDamping<T> {
        RowDamping {
            eta_yz: d.eta[1][y] + d.eta[2][z],
            grad_y: d.grad[1][y],
            grad_z: d.grad[2][z],
            layer: d.layer_row(y, z),
        }
    }
}

/// Rows ahead of the row being updated whose `φ` segments the sweep asks the caches for.
pub(crate) const PHI_AHEAD: usize = 4;

/// Asks the caches for the x-layer segments (of columns `cols`) of `φ` and `φ^{n+1}` at
/// `rows`, row `(y, z)`, unless that row lies in a y or z layer. Outside those layers a row
/// reads and writes `φ` only in its x layers, a few lines at each end of rows a pitch apart,
/// which the hardware prefetchers do not follow; whole layer rows stream.
#[inline(always)]
pub(crate) fn prefetch_x_layers<T: Real>(
    damping: &Damping<T>,
    rows: [*mut T; 2],
    y: usize,
    z: usize,
    cols: [usize; 2],
) {
    if damping.layer_row(y, z) {
        return;
    }
    let [lo, hi] = damping.inner[0];
    let (left, right) = ([cols[0], lo.min(cols[1])], [hi.max(cols[0]), cols[1]]);
    for row in rows.map(<*mut T>::cast_const) {
        for [a, b] in [left, right] {
            if a < b {
                prefetch_row(row.wrapping_add(a), b - a);
            }
        }
    }
}

/// A wave kernel specialised for one radius and instruction-set level.
pub(crate) trait WaveRowKernel<T: Real>: Copy + Send + Sync {
    /// The star radius R.
    const RADIUS: usize;

    /// Runs `f` compiled for the kernel's level.
    ///
    /// # Safety
    /// The CPU must have the level (the dispatch checks it).
    unsafe fn enter<O>(f: impl FnOnce() -> O) -> O;

    /// Computes columns `x0 .. x1` of one row; returns whether every output is finite. Runs
    /// inside [`WaveRowKernel::enter`]. The layer update also computes the inner cells next to
    /// the x layers (see [`aligned_inner`]), reading `φ` there, which must be zero, as it
    /// is in the inner cells of every `φ` the engines keep, and writing the zero back.
    ///
    /// # Safety
    /// The `u` rows readable at columns `x0 − R .. x1 + R`, `prev`, `coef`, `phi` readable and
    /// `out`, `phi_out` writable at `x0 .. x1`; the outputs alias no input.
    unsafe fn row(&self, rows: &Rows<T>, damp: &RowDamping<T>, x0: usize, x1: usize) -> bool;
}

/// The kernel at radius `R` and level `S`: coefficients `w_d / h_a²` and the x damping.
#[derive(Clone, Copy)]
pub(crate) struct Wave<T: Real, S: Isa, const R: usize> {
    c0: T,
    c: [[T; MAX_WAVE_RADIUS + 1]; 3],
    eta_x: *const T,
    grad_x: *const T,
    inner_x: [usize; 2],
    /// `1 + α·dt`: `φ`'s denominator beyond `η`.
    one_leak: T,
    _isa: PhantomData<S>,
}

// SAFETY: the pointers address the state's damping arrays, which are only read and outlive
// every run that holds the kernel.
unsafe impl<T: Real, S: Isa, const R: usize> Send for Wave<T, S, R> {}
// SAFETY: as for `Send`: shared reads only.
unsafe impl<T: Real, S: Isa, const R: usize> Sync for Wave<T, S, R> {}

impl<T: Real, S: Isa, const R: usize> Wave<T, S, R> {
    fn new(kernel: &WaveKernel, damping: &Damping<T>) -> Self {
        let w = kernel.weights();
        let inv: [f64; 3] = std::array::from_fn(|a| 1.0 / kernel.spacing[a].powi(2));
        let mut c = [[T::zero(); MAX_WAVE_RADIUS + 1]; 3];
        for (a, ca) in c.iter_mut().enumerate() {
            for d in 1..=R {
                ca[d] = T::of(w[d] * inv[a]);
            }
        }
        Wave {
            c0: T::of(w[0] * inv.iter().sum::<f64>()),
            c,
            eta_x: damping.eta[0].as_ptr(),
            grad_x: damping.grad[0].as_ptr(),
            inner_x: damping.inner[0],
            one_leak: T::one() + damping.leak,
            _isa: PhantomData,
        }
    }

    /// The centre row's values at columns `x − R + k ..` in entry `k` (`k ≤ 2R`).
    #[inline(always)]
    unsafe fn x_window<L: Lane<Scalar = T>>(&self, u: &[*const T; SPAN], x: usize) -> [L; WINDOW] {
        // SAFETY: the caller guarantees columns `x − R .. x + lanes + R` of the centre row.
        unsafe { L::window::<WINDOW>(u[0].wrapping_add(x - R), 2 * R + 1) }
    }

    /// The Laplacian at columns `x ..`, from the centre row's window `w` (three partial sums,
    /// one per axis, keep the dependency chains short).
    #[inline(always)]
    unsafe fn laplacian<L: Lane<Scalar = T>>(
        &self,
        u: &[*const T; SPAN],
        w: &[L; WINDOW],
        x: usize,
    ) -> L {
        // SAFETY: the caller guarantees column `x .. x + lanes` of every row.
        let ld = |p: *const T, i: usize| unsafe { L::load(p.wrapping_add(i)) };
        let mut ax = w[R] * L::splat(self.c0);
        let mut ay = (ld(u[1], x) + ld(u[2], x)) * L::splat(self.c[1][1]);
        let mut az = (ld(u[3], x) + ld(u[4], x)) * L::splat(self.c[2][1]);
        ax = (w[R - 1] + w[R + 1]).mul_add(L::splat(self.c[0][1]), ax);
        for d in 2..=R {
            let b = 4 * (d - 1) + 1;
            ax = (w[R - d] + w[R + d]).mul_add(L::splat(self.c[0][d]), ax);
            ay = (ld(u[b], x) + ld(u[b + 1], x)).mul_add(L::splat(self.c[1][d]), ay);
            az = (ld(u[b + 2], x) + ld(u[b + 3], x)).mul_add(L::splat(self.c[2][d]), az);
        }
        (ax + ay) + az
    }

    /// The plain update at columns `x ..`.
    #[inline(always)]
    unsafe fn inner_at<L: FlowLane<Scalar = T>>(&self, rows: &Rows<T>, x: usize) -> L {
        // SAFETY: forwarded from the caller.
        unsafe {
            let w = self.x_window::<L>(&rows.u, x);
            let (c, lap) = (w[R], self.laplacian(&rows.u, &w, x));
            let prev = L::load(rows.prev.wrapping_add(x));
            L::load(rows.coef.wrapping_add(x)).mul_add(lap, (c + c) - prev)
        }
    }

    /// The layer's update at columns `x ..`: `u⁺ = ((2 + 2η − η²)u − u⁻ + c(∇²u + φ)) /
    /// (1 + 2η)` and `φ⁺ = (φ − Σ_a g_a·(u_{a+1} − u_{a−1})) / (1 + α·dt + η)`.
    #[inline(always)]
    unsafe fn layer_at<L: FlowLane<Scalar = T>>(
        &self,
        rows: &Rows<T>,
        damp: &RowDamping<T>,
        x: usize,
    ) -> (L, L) {
        // SAFETY: forwarded from the caller; `eta_x` and `grad_x` hold every column.
        unsafe {
            let ld = |p: *const T, i: usize| L::load(p.wrapping_add(i));
            let w = self.x_window::<L>(&rows.u, x);
            let (c, lap) = (w[R], self.laplacian(&rows.u, &w, x));
            let one = L::splat(T::one());
            let two = one + one;
            let eta = ld(self.eta_x, x) + L::splat(damp.eta_yz);
            let phi = ld(rows.phi, x);
            let keep = eta.mul_add(two - eta, two);
            let num = ld(rows.coef, x).mul_add(lap + phi, keep * c - ld(rows.prev, x));
            let u_new = num / eta.mul_add(two, one);
            let u = &rows.u;
            let gx = ld(self.grad_x, x) * (w[R + 1] - w[R - 1]);
            let gy = L::splat(damp.grad_y) * (ld(u[2], x) - ld(u[1], x));
            let gz = L::splat(damp.grad_z) * (ld(u[4], x) - ld(u[3], x));
            let phi_new = (phi - ((gx + gy) + gz)) / (L::splat(self.one_leak) + eta);
            (u_new, phi_new)
        }
    }

    /// Plain updates of columns `a .. b` of the row's columns `row`.
    #[inline(always)]
    unsafe fn sweep_inner(&self, rows: &Rows<T>, [a, b]: [usize; 2], row: [usize; 2]) -> bool {
        // SAFETY (both closures): the columns computed lie within `row`, those stored within
        // `a .. b`, both within the caller's contract.
        unsafe {
            segment::<T, S>(
                [a, b],
                row,
                rows.out,
                false,
                #[inline(always)]
                |x, part| {
                    let v: Vector<T, S> = self.inner_at(rows, x);
                    put(v, rows.out, x, part)
                },
                #[inline(always)]
                |x| {
                    let v = self.inner_at::<T::One<S>>(rows, x).get();
                    *rows.out.wrapping_add(x) = v;
                    v.is_finite()
                },
            )
        }
    }

    /// Layer updates of columns `a .. b` of the row's columns `row`.
    #[inline(always)]
    unsafe fn sweep_layer(
        &self,
        rows: &Rows<T>,
        damp: &RowDamping<T>,
        [a, b]: [usize; 2],
        row: [usize; 2],
    ) -> bool {
        // SAFETY (both closures): the columns computed lie within `row`, those stored within
        // `a .. b`, both within the caller's contract.
        unsafe {
            segment::<T, S>(
                [a, b],
                row,
                rows.out,
                true,
                #[inline(always)]
                |x, part| {
                    let (u, phi): (Vector<T, S>, Vector<T, S>) = self.layer_at(rows, damp, x);
                    let u = put(u, rows.out, x, part);
                    let phi = put(phi, rows.phi_out, x, part);
                    // Zero where both are finite, NaN where either is not (a plain sum of
                    // two large finite values could overflow).
                    let zero = Vector::<T, S>::splat(T::zero());
                    u.mul_add(zero, phi * zero)
                },
                #[inline(always)]
                |x| {
                    let (u, phi) = self.layer_at::<T::One<S>>(rows, damp, x);
                    let (u, phi) = (u.get(), phi.get());
                    *rows.out.wrapping_add(x) = u;
                    *rows.phi_out.wrapping_add(x) = phi;
                    u.is_finite() && phi.is_finite()
                },
            )
        }
    }
}

/// Runs `vector` (which computes the outputs at columns `x .. x + lanes`, stores them, or with
/// `Some([lo, hi])` only those at columns `lo .. hi`, and returns a value that is not finite
/// where a stored output is not, for a part NaN there and zero elsewhere) over columns
/// `a .. b` of a row whose columns `row` may be computed; returns whether every output is
/// finite. After a first, unaligned vector the loop continues
/// at the next column whose address in `out` is a multiple of the vector size, and a last
/// vector ends at `b`: the overlaps rewrite identical values, and no load straddles two cache
/// lines more than once per row (rows of the grids and the rings align alike). A segment
/// shorter than a vector (the few columns between the row's first updated cell and the end of
/// a narrow absorbing layer, say) is one vector placed within the row, stored whole with
/// `spill` (the layer's update, whose values in inner cells are the plain update's) and in
/// part without it; `scalar` serves only rows shorter than a vector.
#[inline(always)]
unsafe fn segment<T: Real, S: Isa>(
    [a, b]: [usize; 2],
    row: [usize; 2],
    out: *mut T,
    spill: bool,
    mut vector: impl FnMut(usize, Option<[usize; 2]>) -> Vector<T, S>,
    mut scalar: impl FnMut(usize) -> bool,
) -> bool {
    type V<T, S> = Vector<T, S>;
    let lanes = V::<T, S>::LANES;
    if b - a < lanes {
        if a == b {
            return true;
        }
        if row[1] - row[0] < lanes {
            return (a..b).fold(true, |ok, x| scalar(x) & ok);
        }
        let x = a.min(row[1] - lanes);
        return vector(x, (!spill).then_some([a, b])).no_nan();
    }
    let skew = past_aligned::<T, S>(out, a);
    let mut acc = V::<T, S>::splat(T::zero());
    let mut x = a;
    if skew != 0 {
        acc = V::<T, S>::track_finite(acc, vector(a, None));
        x = a + lanes - skew;
    }
    while x + lanes <= b {
        acc = V::<T, S>::track_finite(acc, vector(x, None));
        x += lanes;
    }
    if x < b {
        acc = V::<T, S>::track_finite(acc, vector(b - lanes, None));
    }
    acc.no_nan()
}

/// The inner columns `[a, b)` of a row of columns `row` outside the y and z layers whose
/// output starts at `out`: those of `inner` within the row, narrowed where they meet an x
/// layer to the next column whose address is a multiple of the vector size. The layer's
/// update computes the columns between, as it computes the plain update's values wherever
/// `η` and `φ` vanish (its division is then by one). The plain loop's vectors are then all
/// aligned, and a layer of fewer columns than a vector is one vector stored whole instead of
/// in part (at 256³ with 20-cell layers a row computes two vectors fewer).
#[inline(always)]
fn aligned_inner<T: Real, S: Isa>(
    inner: [usize; 2],
    [x0, x1]: [usize; 2],
    out: *mut T,
) -> [usize; 2] {
    let lanes = Vector::<T, S>::LANES;
    let mut a = inner[0].clamp(x0, x1);
    let mut b = inner[1].clamp(a, x1);
    if a > x0 {
        a = (a + (lanes - past_aligned::<T, S>(out, a)) % lanes).min(b);
    }
    if b < x1 {
        b = b.saturating_sub(past_aligned::<T, S>(out, b)).max(a);
    }
    [a, b]
}

/// How many columns column `x` of the row at `out` lies past the last column whose address is
/// a multiple of the vector size.
#[inline(always)]
fn past_aligned<T: Real, S: Isa>(out: *mut T, x: usize) -> usize {
    let size = std::mem::size_of::<T>();
    (out.wrapping_add(x) as usize) % (Vector::<T, S>::LANES * size) / size
}

/// Most lanes of a vector (16 `f32` in 512 bits).
const MAX_LANES: usize = 16;

/// Stores `v`, the outputs at columns `x .. x + lanes`, into the row at `out`: all of them, or
/// with `part = Some([lo, hi])` only those at columns `lo .. hi`. Returns `v`, or for a part a
/// vector that is NaN when a stored value is not finite and zero otherwise.
///
/// # Safety
/// `out` writable at the columns stored.
#[inline(always)]
unsafe fn put<T: Real, S: Isa>(
    v: Vector<T, S>,
    out: *mut T,
    x: usize,
    part: Option<[usize; 2]>,
) -> Vector<T, S> {
    let Some([lo, hi]) = part else {
        // SAFETY: the caller guarantees columns `x .. x + lanes`.
        unsafe { v.store(out.wrapping_add(x)) };
        return v;
    };
    debug_assert!(Vector::<T, S>::LANES <= MAX_LANES && x <= lo && hi <= x + MAX_LANES);
    let mut lanes = [T::zero(); MAX_LANES];
    // SAFETY: `lanes` holds at least LANES scalars.
    unsafe { v.store(lanes.as_mut_ptr()) };
    let stored = &lanes[lo - x..hi - x];
    // SAFETY: the caller guarantees columns `lo .. hi`; `lanes` is a local array.
    unsafe { std::ptr::copy_nonoverlapping(stored.as_ptr(), out.wrapping_add(lo), hi - lo) };
    let finite = stored.iter().all(|v| v.is_finite());
    Vector::<T, S>::splat(if finite { T::zero() } else { T::nan() })
}

impl<T: Real, S: Isa, const R: usize> WaveRowKernel<T> for Wave<T, S, R> {
    const RADIUS: usize = R;

    unsafe fn enter<O>(f: impl FnOnce() -> O) -> O {
        // SAFETY: forwarded from the caller.
        unsafe { S::enter(f) }
    }

    #[inline(always)]
    unsafe fn row(&self, rows: &Rows<T>, damp: &RowDamping<T>, x0: usize, x1: usize) -> bool {
        // Local copies: the row pointers and coefficients then live in registers for the
        // whole row, where through the references every store to an output (which might alias
        // them, for all the compiler knows) would reload them.
        let (kernel, rows, damp) = (*self, *rows, *damp);
        // SAFETY: every segment lies within `x0 .. x1`.
        unsafe {
            let row = [x0, x1];
            if damp.layer {
                return kernel.sweep_layer(&rows, &damp, row, row);
            }
            let [a, b] = aligned_inner::<T, S>(kernel.inner_x, row, rows.out);
            let left = kernel.sweep_layer(&rows, &damp, [x0, a], row);
            let mid = kernel.sweep_inner(&rows, [a, b], row);
            let right = kernel.sweep_layer(&rows, &damp, [b, x1], row);
            left & mid & right
        }
    }
}

/// A computation generic over the wave kernel (Rust has no generic closures).
pub(crate) trait WithWave<T: Real> {
    /// What the computation returns.
    type Output;
    /// Runs the computation with the specialised kernel.
    fn call<K: WaveRowKernel<T>>(self, kernel: K) -> Self::Output;
}

/// Instantiates the kernel for `kernel`'s radius at instruction-set `level` (or the highest
/// level below it this CPU has) with the x damping of `damping`, and runs `job` with it.
pub(crate) fn dispatch<T: Real, J: WithWave<T>>(
    kernel: &WaveKernel,
    damping: &Damping<T>,
    level: Level,
    job: J,
) -> J::Output {
    struct AtLevel<'a, T: Real, J> {
        kernel: &'a WaveKernel,
        damping: &'a Damping<T>,
        job: J,
    }
    impl<T: Real, J: WithWave<T>> WithIsa for AtLevel<'_, T, J> {
        type Output = J::Output;
        fn call<S: Isa>(self) -> J::Output {
            let (k, d, job) = (self.kernel, self.damping, self.job);
            match k.radius() {
                1 => job.call(Wave::<T, S, 1>::new(k, d)),
                2 => job.call(Wave::<T, S, 2>::new(k, d)),
                3 => job.call(Wave::<T, S, 3>::new(k, d)),
                4 => job.call(Wave::<T, S, 4>::new(k, d)),
                r => unreachable!("wave radius {r} passed validation but has no kernel"),
            }
        }
    }
    with_isa(
        level,
        AtLevel {
            kernel,
            damping,
            job,
        },
    )
}
