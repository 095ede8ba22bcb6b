//! SIMD lanes and instruction-set levels, chosen at run time.
//!
//! The hot kernels (stencil rows, lattice rows, the FMA probe) are written once over the lane
//! traits here ([`Lane`], [`SimdVec`], [`FlowLane`]) and instantiated once per [`Isa`] level:
//!
//! - [`Base`]: 128-bit vectors that every target of its architecture has (SSE2 on x86-64, NEON
//!   on aarch64, through `wide`);
//! - `Avx2` (x86-64): 256-bit vectors, AVX2 + FMA, through `std::arch`;
//! - `Avx512` (x86-64): 512-bit vectors, AVX-512 F/DQ/VL/BW, through `std::arch`.
//!
//! A build for the plain x86-64 baseline (what a crate that depends on this one gets) runs the
//! same AVX-512 code as a `-C target-cpu=native` build: each level's kernels run inside
//! [`Isa::enter`], a function compiled with that level's target features, and the level is
//! chosen from what the CPU reports ([`Level::detected`]), capped by the `isa` tuning knob.
//!
//! Every level computes `mul_add` the same way in its vector and its one-lane type
//! ([`Isa::One32`] / [`Isa::One64`]), so a vector loop and its scalar tail round alike: fused
//! where the level has FMA, a multiplication then an addition on the x86-64 baseline.

mod base;
mod level;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

pub use level::Level;
pub(crate) use level::{with_isa, WithIsa};

pub(crate) use base::Base;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

use crate::Real;

/// A value the kernels compute with — a SIMD vector or one scalar lane — so each kernel body is
/// written once and serves both the vector loop and the scalar tail, rounding identically.
pub trait Lane:
    Copy + Send + Sync + Debug + Add<Output = Self> + Mul<Output = Self> + 'static
{
    /// The scalar in each lane.
    type Scalar: Real;

    /// All lanes set to `x`.
    fn splat(x: Self::Scalar) -> Self;

    /// `self * a + b`, fused where the level has FMA.
    fn mul_add(self, a: Self, b: Self) -> Self;

    /// Loads one value per lane from consecutive scalars at `p`.
    ///
    /// # Safety
    /// One scalar per lane from `p` on must be valid for reads; no alignment is required.
    unsafe fn load(p: *const Self::Scalar) -> Self;
}

/// The vector operations beyond [`Lane`] the engines need.
pub trait SimdVec: Lane {
    /// Number of lanes.
    const LANES: usize;

    /// Sum of the lanes.
    fn sum(self) -> Self::Scalar;

    /// Stores the lanes to `p .. p + LANES`.
    ///
    /// # Safety
    /// `p .. p + LANES` must be valid for writes; no alignment is required.
    unsafe fn store(self, p: *mut Self::Scalar);

    /// Folds `v` into a finiteness accumulator: the accumulator stays zero while every value seen
    /// is finite and becomes NaN after the first infinity or NaN (`acc + v * 0`), at one FMA.
    #[inline(always)]
    fn track_finite(acc: Self, v: Self) -> Self {
        v.mul_add(Self::splat(<Self::Scalar as num_traits::Zero>::zero()), acc)
    }
}

/// A scalar or SIMD vector of nodes, for the lattice-Boltzmann kernels: subtraction, division,
/// per-lane masks and selection beyond [`Lane`].
pub trait FlowLane: Lane + Sub<Output = Self> + Div<Output = Self> + Neg<Output = Self> {
    /// A per-lane condition.
    type Mask: Copy;
    /// Number of lanes.
    const WIDTH: usize;

    /// The mask whose lane `l` is `f(l)`.
    fn mask(f: impl FnMut(usize) -> bool) -> Self::Mask;
    /// The link words of `WIDTH` nodes (bit `i`: direction `i` bounces back; see
    /// `lbm::classify`), held the way [`FlowLane::bit`] tests them: one vector load instead of a
    /// mask assembled lane by lane for each direction.
    type Links: Copy + Default;
    /// Loads the link words at `p ..`.
    ///
    /// # Safety
    /// `WIDTH` words from `p` on must be readable.
    unsafe fn links(p: *const u32) -> Self::Links;
    /// The lanes whose link word has bit `i` set.
    fn bit(links: Self::Links, i: usize) -> Self::Mask;
    /// `yes` in the lanes where `m` is set, `no` elsewhere (bitwise exact).
    fn select(m: Self::Mask, yes: Self, no: Self) -> Self;
    /// The value whose lane `l` is `f(l)`.
    fn from_fn(f: impl FnMut(usize) -> Self::Scalar) -> Self;
    /// Stores the lanes at `p ..`.
    ///
    /// # Safety
    /// `WIDTH` scalars from `p` on must be valid for writes.
    unsafe fn put(self, p: *mut Self::Scalar);
    /// Whether the `WIDTH` bytes at `p` are all zero (one load for the vector widths).
    ///
    /// # Safety
    /// `WIDTH` bytes from `p` on must be readable.
    unsafe fn bytes_zero(p: *const u8) -> bool;
}

/// A one-lane [`FlowLane`]: the scalar tails' and edge nodes' type of a level.
pub trait OneLane: FlowLane<Mask = bool, Links = u32> {
    /// The value.
    fn get(self) -> Self::Scalar;
}

/// An instruction-set level: its vector and one-lane types and the entry into code compiled
/// for it. Implemented by zero-sized markers; a level's values exist only inside
/// [`Isa::enter`] on a CPU that has the level (the dispatch checks [`Level::detected`]).
pub trait Isa: Copy + Send + Sync + Debug + Default + 'static {
    /// The level's tag.
    const LEVEL: Level;
    /// Vector of `f32`.
    type F32: SimdVec + FlowLane<Scalar = f32>;
    /// Vector of `f64`.
    type F64: SimdVec + FlowLane<Scalar = f64>;
    /// One `f32` lane, rounding as [`Isa::F32`] does.
    type One32: OneLane<Scalar = f32>;
    /// One `f64` lane, rounding as [`Isa::F64`] does.
    type One64: OneLane<Scalar = f64>;

    /// Calls `f` from a function compiled with this level's target features, so the lane
    /// operations `f` inlines become this level's instructions. Never inlined itself: each call
    /// is one function call (the engines call it per row).
    ///
    /// # Safety
    /// The CPU must have the level ([`Level::detected`] at least [`Isa::LEVEL`]).
    unsafe fn enter<R>(f: impl FnOnce() -> R) -> R;
}

/// The vector of `T` at level `S`.
pub(crate) type Vector<T, S> = <T as Real>::Vec<S>;

/// Most lanes of any vector type (16 `f32` at AVX-512).
const MAX_LANES: usize = 16;

/// A finiteness tracker the row kernels fold their outputs into ([`SimdVec::track_finite`]),
/// kept between rows as the lanes of a vector of any level: a row loads it into a register and
/// stores it back (one load and one store per row; a horizontal sum per row would cost a row of
/// a memory-bound sweep several percent).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Tracker<T>([T; MAX_LANES]);

impl<T: Real> Tracker<T> {
    /// A tracker that has seen only finite values.
    pub(crate) fn new() -> Self {
        Tracker([T::zero(); MAX_LANES])
    }

    /// Whether every value folded in was finite.
    pub(crate) fn is_finite(&self) -> bool {
        self.0.iter().all(|v| v.is_finite())
    }

    /// The tracker as a vector of level `S`.
    #[inline(always)]
    pub(crate) fn get<V: SimdVec<Scalar = T>>(&self) -> V {
        // SAFETY: the array holds MAX_LANES >= V::LANES scalars.
        unsafe { V::load(self.0.as_ptr()) }
    }

    /// Stores `v` as the tracker.
    #[inline(always)]
    pub(crate) fn set<V: SimdVec<Scalar = T>>(&mut self, v: V) {
        // SAFETY: the array holds MAX_LANES >= V::LANES scalars.
        unsafe { v.store(self.0.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each level's vector operations agree lane by lane with its one-lane type's, at every
    /// level this CPU runs (inside the level's entry, as the engines run them).
    #[test]
    fn vector_operations_match_the_one_lane_type() {
        struct Check;
        impl WithIsa for Check {
            type Output = ();
            fn call<S: Isa>(self) {
                // SAFETY: with_isa picked a level the CPU has.
                unsafe { S::enter(check::<S::F32, S::One32>) };
                // SAFETY: as above.
                unsafe { S::enter(check::<S::F64, S::One64>) };
            }
        }
        for level in Level::ALL {
            with_isa(level, Check);
        }
    }

    fn check<V: SimdVec + FlowLane, O: OneLane<Scalar = V::Scalar>>() {
        let s = |x: f64| <V::Scalar as Real>::of(x);
        let w = V::WIDTH;
        let a: Vec<V::Scalar> = (0..w).map(|l| s(l as f64 * 0.37 - 1.1)).collect();
        let b: Vec<V::Scalar> = (0..w).map(|l| s(2.5 - l as f64 * 0.21)).collect();
        // SAFETY: a and b hold WIDTH scalars.
        let (va, vb) = unsafe { (V::load(a.as_ptr()), V::load(b.as_ptr())) };
        let mut out = vec![s(0.0); w];
        type Op<O> = fn(O, O) -> O;
        let ops: [(V, Op<O>); 6] = [
            (va + vb, |x, y| x + y),
            (va - vb, |x, y| x - y),
            (va * vb, |x, y| x * y),
            (va / vb, |x, y| x / y),
            (va.mul_add(vb, va), |x, y| x.mul_add(y, x)),
            (-va, |x, _| -x),
        ];
        for (k, (v, f)) in ops.into_iter().enumerate() {
            // SAFETY: out holds WIDTH scalars.
            unsafe { v.put(out.as_mut_ptr()) };
            for l in 0..w {
                let want = f(O::splat(a[l]), O::splat(b[l])).get();
                assert!(out[l] == want, "op {k} lane {l}");
            }
        }
        let words: Vec<u32> = (0..w as u32).map(|l| 1 << (l % 5)).collect();
        // SAFETY: words holds WIDTH words.
        let links = unsafe { V::links(words.as_ptr()) };
        for i in 0..5 {
            let picked = V::select(V::bit(links, i), va, vb);
            // SAFETY: out holds WIDTH scalars.
            unsafe { picked.put(out.as_mut_ptr()) };
            for l in 0..w {
                let want = if l % 5 == i { a[l] } else { b[l] };
                assert!(out[l] == want, "bit {i} lane {l}");
            }
        }
        let even = V::select(V::mask(|l| l % 2 == 0), va, vb);
        // SAFETY: out holds WIDTH scalars.
        unsafe { even.put(out.as_mut_ptr()) };
        assert!((0..w).all(|l| out[l] == if l % 2 == 0 { a[l] } else { b[l] }));
        let total = a.iter().fold(s(0.0), |t, &x| t + x);
        assert!(num_traits::Float::abs(va.sum() - total) <= s(1e-5));
    }
}
