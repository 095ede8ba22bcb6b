//! The x86-64 levels above the baseline: AVX2 + FMA (256-bit) and AVX-512 (512-bit) vectors
//! over `std::arch`.
//!
//! Every operation calls an intrinsic of its level. The operations are `#[inline(always)]` and
//! run only inside [`Isa::enter`] of their level, whose function is compiled with the level's
//! target features; inlined there, each intrinsic becomes one instruction. Values of these types
//! exist only on CPUs that have the level: [`super::with_isa`] never picks a level above
//! [`Level::detected`], which is the safety argument of every `unsafe` intrinsic call below.

use std::arch::x86_64::*;
use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{FlowLane, Isa, Lane, Level, SimdVec};
use crate::real::window_of_loads;

/// AVX2 with FMA: 8 `f32` or 4 `f64` lanes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Avx2;

/// AVX-512 F, DQ, VL and BW: 16 `f32` or 8 `f64` lanes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Avx512;

#[target_feature(enable = "avx,avx2,fma")]
#[inline(never)]
unsafe fn enter_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[target_feature(enable = "avx,avx2,fma,avx512f,avx512dq,avx512vl,avx512bw")]
#[inline(never)]
unsafe fn enter_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

impl Isa for Avx2 {
    const LEVEL: Level = Level::Avx2;
    type F32 = F32x8;
    type F64 = F64x4;
    type One32 = f32;
    type One64 = f64;

    unsafe fn enter<R>(f: impl FnOnce() -> R) -> R {
        // SAFETY: the caller guarantees the CPU has AVX2 and FMA.
        unsafe { enter_avx2(f) }
    }
}

impl Isa for Avx512 {
    const LEVEL: Level = Level::Avx512;
    type F32 = F32x16;
    type F64 = F64x8;
    type One32 = f32;
    type One64 = f64;

    unsafe fn enter<R>(f: impl FnOnce() -> R) -> R {
        // SAFETY: the caller guarantees the CPU has AVX-512 F/DQ/VL/BW (and AVX2, FMA).
        unsafe { enter_avx512(f) }
    }
}

/// 8 `f32` lanes (AVX2).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub(crate) struct F32x8(__m256);
/// 4 `f64` lanes (AVX2).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub(crate) struct F64x4(__m256d);
/// 16 `f32` lanes (AVX-512).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub(crate) struct F32x16(__m512);
/// 8 `f64` lanes (AVX-512).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub(crate) struct F64x8(__m512d);

/// Link words widened to the lanes of a vector type (an integer vector).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub(crate) struct Links<I>(I);

impl<I> Default for Links<I> {
    fn default() -> Self {
        // SAFETY: integer vectors are plain bits; all zeros is a valid value.
        Links(unsafe { std::mem::zeroed() })
    }
}

/// The arithmetic operators, [`Lane`] and [`SimdVec`] of vector `$v` over the raw type of its
/// level, each through the intrinsic named for it; `no_nan` is the expression that tests the
/// raw vector `$a` for a NaN lane, and `window`, where given, the function that replaces
/// [`Lane::window`]'s loads (see [`window_avx512`]).
macro_rules! arith {
    ($v:ident, $scalar:ty, $lanes:expr,
     add: $add:ident, sub: $sub:ident, mul: $mul:ident, div: $div:ident, xor: $xor:ident,
     set1: $set1:ident, fmadd: $fmadd:ident, loadu: $loadu:ident, storeu: $storeu:ident,
     no_nan: |$a:ident| $no_nan:expr $(, window: $window:ident)?) => {
        impl Add for $v {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                // SAFETY: see the module docs (values exist only where the level runs).
                $v(unsafe { $add(self.0, o.0) })
            }
        }
        impl Sub for $v {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $sub(self.0, o.0) })
            }
        }
        impl Mul for $v {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $mul(self.0, o.0) })
            }
        }
        impl Div for $v {
            type Output = Self;
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $div(self.0, o.0) })
            }
        }
        impl Neg for $v {
            type Output = Self;
            /// Flips the sign bits, as scalar negation does (also of zeros).
            #[inline(always)]
            fn neg(self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $xor(self.0, $set1(-0.0)) })
            }
        }
        impl Lane for $v {
            type Scalar = $scalar;
            #[inline(always)]
            fn splat(x: $scalar) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $set1(x) })
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $fmadd(self.0, a.0, b.0) })
            }
            #[inline(always)]
            unsafe fn load(p: *const $scalar) -> Self {
                // SAFETY: the caller guarantees LANES readable scalars at p (unaligned load);
                // the level: see the module docs.
                $v(unsafe { $loadu(p) })
            }
            $(
            #[inline(always)]
            unsafe fn window<const N: usize>(p: *const $scalar, n: usize) -> [Self; N] {
                // SAFETY: forwarded from the caller.
                unsafe { $window(p, n) }
            }
            )?
        }
        impl SimdVec for $v {
            const LANES: usize = $lanes;
            #[inline(always)]
            fn sum(self) -> $scalar {
                let mut lanes = [0.0; $lanes];
                // SAFETY: `lanes` holds LANES scalars.
                unsafe { self.store(lanes.as_mut_ptr()) };
                lanes.iter().sum()
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut $scalar) {
                // SAFETY: the caller guarantees LANES writable scalars at p (unaligned store);
                // the level: see the module docs.
                unsafe { $storeu(p, self.0) }
            }
            #[inline(always)]
            fn no_nan(self) -> bool {
                let $a = self.0;
                // SAFETY: see the module docs.
                unsafe { $no_nan }
            }
        }
    };
}

arith!(F32x8, f32, 8, add: _mm256_add_ps, sub: _mm256_sub_ps, mul: _mm256_mul_ps,
    div: _mm256_div_ps, xor: _mm256_xor_ps, set1: _mm256_set1_ps, fmadd: _mm256_fmadd_ps,
    loadu: _mm256_loadu_ps, storeu: _mm256_storeu_ps,
    no_nan: |a| _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(a, a)) == 0);
arith!(F64x4, f64, 4, add: _mm256_add_pd, sub: _mm256_sub_pd, mul: _mm256_mul_pd,
    div: _mm256_div_pd, xor: _mm256_xor_pd, set1: _mm256_set1_pd, fmadd: _mm256_fmadd_pd,
    loadu: _mm256_loadu_pd, storeu: _mm256_storeu_pd,
    no_nan: |a| _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_UNORD_Q>(a, a)) == 0);
arith!(F32x16, f32, 16, add: _mm512_add_ps, sub: _mm512_sub_ps, mul: _mm512_mul_ps,
    div: _mm512_div_ps, xor: _mm512_xor_ps, set1: _mm512_set1_ps, fmadd: _mm512_fmadd_ps,
    loadu: _mm512_loadu_ps, storeu: _mm512_storeu_ps,
    no_nan: |a| _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a) == 0, window: window_f32x16);
arith!(F64x8, f64, 8, add: _mm512_add_pd, sub: _mm512_sub_pd, mul: _mm512_mul_pd,
    div: _mm512_div_pd, xor: _mm512_xor_pd, set1: _mm512_set1_pd, fmadd: _mm512_fmadd_pd,
    loadu: _mm512_loadu_pd, storeu: _mm512_storeu_pd,
    no_nan: |a| _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(a, a) == 0, window: window_f64x8);

/// [`Lane::window`] of the AVX-512 vector `$v` of `$lanes` lanes: one
/// unaligned load of the first `lanes` values and one masked load of the `n − 1` after them
/// (the masked-off lanes are not read), and entry `k` is the two concatenated and shifted
/// down by `k` lanes (`valignd` / `valignq` by `$align`, through the integer casts `$to` and
/// `$from`): two loads and at most `n − 1` shifts instead of `n` unaligned loads. A count
/// beyond `lanes + 1` (never asked for at this width) takes the loads.
macro_rules! window_avx512 {
    ($name:ident, $v:ident, $scalar:ty, $lanes:expr, $mask:ty,
     loadu: $loadu:ident, maskz_loadu: $maskz:ident, align: $align:ident,
     to: $to:ident, from: $from:ident, shifts: [$($k:literal)*]) => {
        /// See [`window_avx512`].
        ///
        /// # Safety
        /// As [`Lane::window`]; the level: see the module docs.
        #[inline(always)]
        unsafe fn $name<const N: usize>(p: *const $scalar, n: usize) -> [$v; N] {
            debug_assert!((1..=N).contains(&n));
            if n - 1 > $lanes {
                // SAFETY: forwarded from the caller.
                return unsafe { window_of_loads(p, n) };
            }
            // SAFETY: the caller guarantees `p .. p + lanes + n − 1`: the first load reads
            // `lanes` scalars, the masked one the `n − 1 ≤ lanes` after them.
            unsafe {
                let lo = $to($loadu(p));
                let hi = $to($maskz(((1u32 << (n - 1)) - 1) as $mask, p.wrapping_add($lanes)));
                // Straight-line code, one test per shift with the shift a constant: with `N`
                // and `n` constants the tests fold away and the entries live in registers (a
                // loop or a closure left them in memory, and a closure is compiled without
                // the level's features).
                let mut out = [$v($from(lo)); N];
                $(
                    if $k < n {
                        out[$k] = $v($from($align::<$k>(hi, lo)));
                    }
                )*
                if $lanes < n {
                    out[$lanes] = $v($from(hi));
                }
                out
            }
        }
    };
}

window_avx512!(window_f32x16, F32x16, f32, 16, __mmask16,
    loadu: _mm512_loadu_ps, maskz_loadu: _mm512_maskz_loadu_ps, align: _mm512_alignr_epi32,
    to: _mm512_castps_si512, from: _mm512_castsi512_ps,
    shifts: [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
window_avx512!(window_f64x8, F64x8, f64, 8, __mmask8,
    loadu: _mm512_loadu_pd, maskz_loadu: _mm512_maskz_loadu_pd, align: _mm512_alignr_epi64,
    to: _mm512_castpd_si512, from: _mm512_castsi512_pd, shifts: [1 2 3 4 5 6 7]);

/// The [`FlowLane`] parts every vector type shares: `from_fn`, `put`, `bytes_zero` (over the
/// integer `$word` of one byte per lane).
macro_rules! flow_common {
    ($scalar:ty, $lanes:expr, $word:ty) => {
        const WIDTH: usize = $lanes;

        #[inline(always)]
        fn from_fn(f: impl FnMut(usize) -> $scalar) -> Self {
            let lanes: [$scalar; $lanes] = std::array::from_fn(f);
            // SAFETY: `lanes` holds LANES scalars.
            unsafe { Self::load(lanes.as_ptr()) }
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
    };
}

/// AVX2 lanes select with a float vector whose selected lanes are all ones (`blendv`).
macro_rules! flow_avx2 {
    ($v:ident, $scalar:ty, $lanes:expr, $word:ty, $int:ident,
     links: |$p:ident| $load_links:expr, cmpeq: $cmpeq:ident, set1i: $set1i:ident,
     cast: $cast:ident, blendv: $blendv:ident) => {
        impl FlowLane for $v {
            type Mask = $v;
            type Links = Links<__m256i>;
            flow_common!($scalar, $lanes, $word);

            #[inline(always)]
            fn mask(mut f: impl FnMut(usize) -> bool) -> $v {
                let on = <$scalar>::from_bits(!0);
                Self::from_fn(|l| if f(l) { on } else { 0.0 })
            }
            #[inline(always)]
            unsafe fn links($p: *const u32) -> Links<__m256i> {
                // SAFETY: the caller guarantees LANES readable words at p (unaligned load).
                Links(unsafe { $load_links })
            }
            #[inline(always)]
            fn bit(links: Links<__m256i>, i: usize) -> $v {
                // SAFETY: see the module docs.
                unsafe {
                    let b = $set1i((1 as $int) << i);
                    $v($cast($cmpeq(_mm256_and_si256(links.0, b), b)))
                }
            }
            #[inline(always)]
            fn select(m: $v, yes: Self, no: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $blendv(no.0, yes.0, m.0) })
            }
        }
    };
}

flow_avx2!(F32x8, f32, 8, u64, i32,
    links: |p| _mm256_loadu_si256(p.cast()), cmpeq: _mm256_cmpeq_epi32,
    set1i: _mm256_set1_epi32, cast: _mm256_castsi256_ps, blendv: _mm256_blendv_ps);
flow_avx2!(F64x4, f64, 4, u32, i64,
    links: |p| _mm256_cvtepu32_epi64(_mm_loadu_si128(p.cast())), cmpeq: _mm256_cmpeq_epi64,
    set1i: _mm256_set1_epi64x, cast: _mm256_castsi256_pd, blendv: _mm256_blendv_pd);

/// AVX-512 lanes select with a mask register (`$mask`: one bit per lane).
macro_rules! flow_avx512 {
    ($v:ident, $scalar:ty, $lanes:expr, $word:ty, $int:ident, $mask:ty,
     links: |$p:ident| $load_links:expr, test: $test:ident, set1i: $set1i:ident,
     blend: $blend:ident) => {
        impl FlowLane for $v {
            type Mask = $mask;
            type Links = Links<__m512i>;
            flow_common!($scalar, $lanes, $word);

            #[inline(always)]
            fn mask(mut f: impl FnMut(usize) -> bool) -> $mask {
                (0..$lanes).fold(0, |m, l| m | (f(l) as $mask) << l)
            }
            #[inline(always)]
            unsafe fn links($p: *const u32) -> Links<__m512i> {
                // SAFETY: the caller guarantees LANES readable words at p (unaligned load).
                Links(unsafe { $load_links })
            }
            #[inline(always)]
            fn bit(links: Links<__m512i>, i: usize) -> $mask {
                // SAFETY: see the module docs.
                unsafe { $test(links.0, $set1i((1 as $int) << i)) }
            }
            #[inline(always)]
            fn select(m: $mask, yes: Self, no: Self) -> Self {
                // SAFETY: see the module docs.
                $v(unsafe { $blend(m, no.0, yes.0) })
            }
        }
    };
}

flow_avx512!(F32x16, f32, 16, u128, i32, __mmask16,
    links: |p| _mm512_loadu_si512(p.cast()), test: _mm512_test_epi32_mask,
    set1i: _mm512_set1_epi32, blend: _mm512_mask_blend_ps);
flow_avx512!(F64x8, f64, 8, u64, i64, __mmask8,
    links: |p| _mm512_cvtepu32_epi64(_mm256_loadu_si256(p.cast())), test: _mm512_test_epi64_mask,
    set1i: _mm512_set1_epi64, blend: _mm512_mask_blend_pd);
