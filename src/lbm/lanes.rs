//! [`FlowLane`]: what the lattice-Boltzmann kernels need from a lane type beyond
//! [`crate::Lane`] — subtraction, division, per-lane masks and selection — implemented for the
//! scalars and for the SIMD vectors the crate builds with, so each kernel is written once and
//! serves the vector body, the scalar tail and the edge nodes with identical rounding.

use std::ops::{Div, Neg, Sub};

use crate::{Lane, Real};

/// A scalar or SIMD vector of nodes, for the lattice-Boltzmann kernels.
pub(crate) trait FlowLane:
    Lane + Sub<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
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

macro_rules! impl_scalar {
    ($t:ty) => {
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
            fn from_fn(mut f: impl FnMut(usize) -> $t) -> Self {
                f(0)
            }
            #[inline(always)]
            unsafe fn put(self, p: *mut $t) {
                // SAFETY: the caller guarantees p is writable.
                unsafe { *p = self }
            }
            #[inline(always)]
            unsafe fn bytes_zero(p: *const u8) -> bool {
                // SAFETY: the caller guarantees one readable byte.
                unsafe { *p == 0 }
            }
        }
    };
}

impl_scalar!(f32);
impl_scalar!(f64);

macro_rules! impl_vector {
    ($vec:ty, $scalar:ty, $lanes:expr, $word:ty, $links:ty, $link:ty) => {
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
                // SAFETY: the caller guarantees LANES writable scalars at p; no alignment needed.
                unsafe { std::ptr::write_unaligned(p.cast::<$vec>(), self) }
            }
            #[inline(always)]
            unsafe fn bytes_zero(p: *const u8) -> bool {
                // SAFETY: the caller guarantees LANES readable bytes at p, exactly one word.
                unsafe { std::ptr::read_unaligned(p.cast::<$word>()) == 0 }
            }
        }
    };
}

#[cfg(target_feature = "avx512f")]
impl_vector!(wide::f32x16, f32, 16, u128, wide::u32x16, u32);
#[cfg(target_feature = "avx512f")]
impl_vector!(wide::f64x8, f64, 8, u64, wide::u64x8, u64);
#[cfg(not(target_feature = "avx512f"))]
impl_vector!(wide::f32x8, f32, 8, u64, wide::u32x8, u32);
#[cfg(not(target_feature = "avx512f"))]
impl_vector!(wide::f64x4, f64, 4, u32, wide::u64x4, u64);

/// The SIMD vector of `T` as a [`FlowLane`] (every `T::Simd` is one).
pub(crate) trait FlowReal:
    Real<Simd: FlowLane<Scalar = Self>> + FlowLane<Scalar = Self>
{
}
impl FlowReal for f32 {}
impl FlowReal for f64 {}

#[cfg(test)]
mod tests {
    use super::super::model::Q;
    use super::*;

    fn exercise<L: FlowLane<Scalar = f64>>() {
        let a = L::from_fn(|l| l as f64);
        let b = L::splat(-1.0);
        let m = L::mask(|l| l % 2 == 1);
        let c = L::select(m, a, b);
        let mut out = [0.0f64; 16];
        // SAFETY: out holds 16 >= WIDTH values.
        unsafe { c.put(out.as_mut_ptr()) };
        for (l, &v) in out.iter().enumerate().take(L::WIDTH) {
            assert_eq!(v, if l % 2 == 1 { l as f64 } else { -1.0 });
        }
        let bytes = [0u8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        // SAFETY: 17 bytes cover WIDTH from offsets 0 and 1.
        unsafe {
            assert!(L::bytes_zero(bytes.as_ptr()) == (L::WIDTH <= 8));
            assert!(!L::bytes_zero(bytes.as_ptr().add(8)));
        }
    }

    /// `bit` selects exactly the lanes whose link word has the bit, for every direction's bit.
    fn link_bits<L: FlowLane>() {
        let (one, zero) = (<L::Scalar as Real>::of(1.0), <L::Scalar as Real>::of(0.0));
        // Words with low and high direction bits set and clear across the lanes.
        let words: [u32; 16] =
            std::array::from_fn(|l| 0x5a5a5u32.rotate_left(3 * l as u32) & 0x7ffff);
        // SAFETY: 16 >= WIDTH readable words.
        let links = unsafe { L::links(words.as_ptr()) };
        let mut out = [zero; 16];
        for i in 0..Q {
            let set = L::select(L::bit(links, i), L::splat(one), L::splat(zero));
            // SAFETY: out holds 16 >= WIDTH values.
            unsafe { set.put(out.as_mut_ptr()) };
            for (l, &v) in out.iter().enumerate().take(L::WIDTH) {
                assert_eq!(v == one, words[l] >> i & 1 != 0, "lane {l}, bit {i}");
            }
        }
    }

    #[test]
    fn link_bits_select_their_lanes() {
        link_bits::<f32>();
        link_bits::<f64>();
        link_bits::<<f32 as Real>::Simd>();
        link_bits::<<f64 as Real>::Simd>();
    }

    #[test]
    fn scalar_and_vector_lanes_agree() {
        exercise::<f64>();
        exercise::<<f64 as Real>::Simd>();
        let v = <f32 as Real>::Simd::from_fn(|l| l as f32) - <f32 as Real>::Simd::splat(1.0);
        let w = v / <f32 as Real>::Simd::splat(2.0);
        assert_eq!(w.to_array()[3], 1.0);
    }
}
