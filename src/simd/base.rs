//! The base level: 128-bit `wide` vectors (SSE2 on x86-64, NEON on aarch64) and the scalar
//! lanes. On x86-64 the baseline has no FMA, so this level's `mul_add` is a multiplication then
//! an addition in its vectors and in its one-lane type ([`Unfused`]) alike; elsewhere (NEON has
//! FMA) it is fused, as the plain scalars' is.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{FlowLane, Isa, Lane, Level, OneLane, SimdVec};

/// The base instruction-set level (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Base;

/// Whether the base level fuses multiply-adds.
const FUSED: bool = !cfg!(target_arch = "x86_64");

impl Isa for Base {
    const LEVEL: Level = Level::Base;
    type F32 = wide::f32x4;
    type F64 = wide::f64x2;
    #[cfg(target_arch = "x86_64")]
    type One32 = Unfused<f32>;
    #[cfg(target_arch = "x86_64")]
    type One64 = Unfused<f64>;
    #[cfg(not(target_arch = "x86_64"))]
    type One32 = f32;
    #[cfg(not(target_arch = "x86_64"))]
    type One64 = f64;

    #[inline(never)]
    unsafe fn enter<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// One scalar lane whose `mul_add` is a multiplication then an addition (two roundings), as
/// the x86-64 baseline's vectors compute it.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub(crate) struct Unfused<T>(pub(crate) T);

macro_rules! unfused_ops {
    ($($tr:ident $f:ident),*) => {$(
        impl<T: $tr<Output = T>> $tr for Unfused<T> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                Unfused(self.0.$f(o.0))
            }
        }
    )*};
}
unfused_ops!(Add add, Sub sub, Mul mul, Div div);

impl<T: Neg<Output = T>> Neg for Unfused<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Unfused(-self.0)
    }
}

/// [`Lane`], [`FlowLane`] and [`OneLane`] for a one-lane type `$t` of scalar `$s`; `$wrap` and
/// `$get` convert from and to the scalar, `$fma` computes `mul_add`.
macro_rules! one_lane {
    ($t:ty, $s:ty, $wrap:expr, $get:expr, $fma:expr) => {
        impl Lane for $t {
            type Scalar = $s;
            #[inline(always)]
            fn splat(x: $s) -> Self {
                $wrap(x)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                $fma(self, a, b)
            }
            #[inline(always)]
            unsafe fn load(p: *const $s) -> Self {
                // SAFETY: the caller guarantees p is readable.
                $wrap(unsafe { *p })
            }
        }

        impl FlowLane for $t {
            type Mask = bool;
            type Links = u32;
            const WIDTH: usize = 1;

            #[inline(always)]
            fn mask(mut f: impl FnMut(usize) -> bool) -> bool {
                f(0)
            }
            #[inline(always)]
            unsafe fn links(p: *const u32) -> u32 {
                // SAFETY: the caller guarantees one readable word.
                unsafe { *p }
            }
            #[inline(always)]
            fn bit(links: u32, i: usize) -> bool {
                links >> i & 1 != 0
            }
            #[inline(always)]
            fn select(m: bool, yes: Self, no: Self) -> Self {
                if m {
                    yes
                } else {
                    no
                }
            }
            #[inline(always)]
            fn from_fn(mut f: impl FnMut(usize) -> $s) -> Self {
                $wrap(f(0))
            }
            #[inline(always)]
            unsafe fn put(self, p: *mut $s) {
                // SAFETY: the caller guarantees p is writable.
                unsafe { *p = $get(self) }
            }
            #[inline(always)]
            unsafe fn bytes_zero(p: *const u8) -> bool {
                // SAFETY: the caller guarantees one readable byte.
                unsafe { *p == 0 }
            }
        }

        impl OneLane for $t {
            #[inline(always)]
            fn get(self) -> $s {
                $get(self)
            }
        }
    };
}

one_lane!(f32, f32, |x| x, |v| v, f32::mul_add);
one_lane!(f64, f64, |x| x, |v| v, f64::mul_add);
one_lane!(
    Unfused<f32>,
    f32,
    Unfused,
    |v: Unfused<f32>| v.0,
    |v: Self, a: Self, b: Self| v * a + b
);
one_lane!(
    Unfused<f64>,
    f64,
    Unfused,
    |v: Unfused<f64>| v.0,
    |v: Self, a: Self, b: Self| v * a + b
);

/// [`Lane`], [`SimdVec`] and [`FlowLane`] for a `wide` vector `$vec` of `$lanes` scalars
/// `$scalar`; `$word` is an unsigned integer of `$lanes` bytes, `$links` the `wide` vector of
/// link words widened to the lane size, `$link` its element.
macro_rules! wide_lane {
    ($vec:ty, $scalar:ty, $lanes:expr, $word:ty, $links:ty, $link:ty) => {
        impl Lane for $vec {
            type Scalar = $scalar;

            #[inline(always)]
            fn splat(x: $scalar) -> Self {
                <$vec>::splat(x)
            }

            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                if FUSED {
                    <$vec>::mul_add(self, a, b)
                } else {
                    self * a + b
                }
            }

            #[inline(always)]
            unsafe fn load(p: *const $scalar) -> Self {
                // SAFETY: the caller guarantees LANES readable scalars at p; read_unaligned has no
                // alignment requirement and the vector type is plain-old-data.
                unsafe { std::ptr::read_unaligned(p.cast::<$vec>()) }
            }
        }

        impl SimdVec for $vec {
            const LANES: usize = $lanes;

            #[inline(always)]
            fn sum(self) -> $scalar {
                self.to_array().iter().sum()
            }

            #[inline(always)]
            unsafe fn store(self, p: *mut $scalar) {
                // SAFETY: the caller guarantees LANES writable scalars at p; no alignment needed.
                unsafe { std::ptr::write_unaligned(p.cast::<$vec>(), self) }
            }
        }

        impl FlowLane for $vec {
            type Mask = $vec;
            /// One link word per lane, widened to the lane's width.
            type Links = $links;
            const WIDTH: usize = $lanes;

            #[inline(always)]
            fn mask(mut f: impl FnMut(usize) -> bool) -> $vec {
                let on = <$scalar>::from_bits(!0);
                <$vec>::new(std::array::from_fn(|l| if f(l) { on } else { 0.0 }))
            }
            #[inline(always)]
            unsafe fn links(p: *const u32) -> $links {
                // SAFETY: the caller guarantees LANES readable words at p; no alignment needed.
                let words: [u32; $lanes] = unsafe { std::ptr::read_unaligned(p.cast()) };
                <$links>::new(words.map(<$link>::from))
            }
            #[inline(always)]
            fn bit(links: $links, i: usize) -> $vec {
                let set = (links & <$links>::splat(1 << i)).simd_ne(<$links>::splat(0));
                // All-ones lanes where set: the float mask `select` takes, bit for bit.
                wide::bytemuck::cast(set)
            }
            #[inline(always)]
            fn select(m: $vec, yes: Self, no: Self) -> Self {
                m.select(yes, no)
            }
            #[inline(always)]
            fn from_fn(f: impl FnMut(usize) -> $scalar) -> Self {
                <$vec>::new(std::array::from_fn(f))
            }
            #[inline(always)]
            unsafe fn put(self, p: *mut $scalar) {
                // SAFETY: the caller guarantees LANES writable scalars at p.
                unsafe { self.store(p) }
            }
            #[inline(always)]
            unsafe fn bytes_zero(p: *const u8) -> bool {
                // SAFETY: the caller guarantees LANES readable bytes at p, exactly one word.
                unsafe { std::ptr::read_unaligned(p.cast::<$word>()) == 0 }
            }
        }
    };
}

wide_lane!(wide::f32x4, f32, 4, u32, wide::u32x4, u32);
wide_lane!(wide::f64x2, f64, 2, u16, wide::u64x2, u64);
