//! The element types the engines compute in (`f32`, `f64`), the lane traits their kernels are
//! written over, and the instruction-set levels ([`Isa`]) that give each its vector type.
//!
//! Every engine is generic over [`Real`]; its vector type at each instruction-set level is
//! [`Real::Vec`], and the level is chosen at run time (see [`crate::simd`]).

use std::fmt::{Debug, Display};
use std::ops::{Add, Div, Mul, Neg, Sub};

use num_traits::{Float, FromPrimitive, ToPrimitive};

use super::dtype::DType;
use super::level::Level;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A scalar the engines compute in: `f32` or `f64` (sealed).
pub trait Real:
    Float
    + FromPrimitive
    + ToPrimitive
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + 'static
    + Lane<Scalar = Self>
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + sealed::Sealed
{
    /// The run-time tag of this type.
    const DTYPE: DType;
    /// The SIMD vector of this scalar at instruction-set level `S`.
    type Vec<S: Isa>: SimdVec + FlowLane<Scalar = Self>;
    /// One lane of this scalar at level `S` (rounding as [`Real::Vec`] does).
    type One<S: Isa>: OneLane<Scalar = Self>;

    /// Converts an `f64` coefficient or value into this type (rounding for `f32`).
    fn of(x: f64) -> Self;

    /// The CUDA C name of this type (`float`, `double`).
    const CUDA_NAME: &'static str;

    /// A CUDA C literal that denotes exactly this value (`0.1f`, `0.1`).
    fn cuda_literal(self) -> String;
}

impl Real for f32 {
    const DTYPE: DType = DType::F32;
    type Vec<S: Isa> = S::F32;
    type One<S: Isa> = S::One32;
    const CUDA_NAME: &'static str = "float";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    fn cuda_literal(self) -> String {
        // Debug prints the shortest decimal that reads back as exactly this f32.
        format!("{self:?}f")
    }
}

impl Real for f64 {
    const DTYPE: DType = DType::F64;
    type Vec<S: Isa> = S::F64;
    type One<S: Isa> = S::One64;
    const CUDA_NAME: &'static str = "double";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    fn cuda_literal(self) -> String {
        format!("{self:?}")
    }
}

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

    /// The values at `p + k ..` in entry `k` for `k < n` (entries from `n` on are
    /// unspecified): the `n` overlapping loads of a row's x neighbours. A level may build
    /// them from two loads and in-register shifts; AVX-512 does (a 512-bit load costs a load
    /// port cycle, and each unaligned one crosses a cache line).
    ///
    /// # Safety
    /// `n − 1 + lanes` scalars from `p` on must be valid for reads, and `1 ≤ n ≤ N`.
    #[inline(always)]
    unsafe fn window<const N: usize>(p: *const Self::Scalar, n: usize) -> [Self; N] {
        // SAFETY: forwarded from the caller.
        unsafe { window_of_loads(p, n) }
    }
}

/// [`Lane::window`] as `n` unaligned loads: the default, and where a level's own way cannot
/// reach.
///
/// # Safety
/// As [`Lane::window`].
#[inline(always)]
pub(crate) unsafe fn window_of_loads<L: Lane, const N: usize>(
    p: *const L::Scalar,
    n: usize,
) -> [L; N] {
    let mut out = [L::splat(<L::Scalar as num_traits::Zero>::zero()); N];
    for (k, o) in out.iter_mut().enumerate().take(n) {
        // SAFETY: the caller guarantees the lanes of the loads at `p .. p + n`.
        *o = unsafe { L::load(p.wrapping_add(k)) };
    }
    out
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

    /// Whether a finiteness accumulator ([`SimdVec::track_finite`], every lane zero or NaN)
    /// has no NaN lane: one compare at the levels with masks or sign-bit extraction, which
    /// test each lane for NaN; by default a sum of the lanes (which a vector holding both
    /// infinities would also fail).
    #[inline(always)]
    fn no_nan(self) -> bool {
        !self.sum().is_nan()
    }

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
