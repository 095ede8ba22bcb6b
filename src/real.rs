//! The element types the engines compute in (`f32`, `f64`) and the SIMD vector each one maps to.
//!
//! Every engine is generic over [`Real`]; the vector type is chosen at compile time from the target
//! features (`wide` selects AVX-512, AVX2 or SSE instructions). `.cargo/config.toml` builds with
//! `-C target-cpu=native`, so an AVX-512 machine gets 16 f32 lanes without code changes.

use std::fmt::{Debug, Display};
use std::ops::{Add, Mul};
use std::str::FromStr;

use num_traits::{Float, FromPrimitive, ToPrimitive};
use serde::{Deserialize, Serialize};

use crate::Error;

/// Floating-point precision of a grid or lattice, known at run time (plans and the CLI use it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// The short name used on the command line and in reports (`f32`, `f64`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }
}

impl Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "f32" | "float" | "sp" => Ok(DType::F32),
            "f64" | "double" | "dp" => Ok(DType::F64),
            _ => Err(Error::InvalidArgument(format!(
                "unknown dtype '{s}' (expected f32 or f64)"
            ))),
        }
    }
}

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
    /// The SIMD vector of this scalar for the compile-time target.
    type Simd: SimdVec + Lane<Scalar = Self>;

    /// Converts an `f64` coefficient or value into this type (rounding for `f32`).
    fn of(x: f64) -> Self;

    /// The CUDA C name of this type (`float`, `double`).
    const CUDA_NAME: &'static str;

    /// A CUDA C literal that denotes exactly this value (`0.1f`, `0.1`).
    fn cuda_literal(self) -> String;
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

    /// `self * a + b`, fused where the target has FMA.
    fn mul_add(self, a: Self, b: Self) -> Self;

    /// Loads one value per lane from consecutive scalars at `p`.
    ///
    /// # Safety
    /// One scalar per lane from `p` on must be valid for reads; no alignment is required.
    unsafe fn load(p: *const Self::Scalar) -> Self;
}

/// The vector operations beyond [`Lane`] the engines need, over `wide`'s vector types.
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

macro_rules! impl_scalar_lane {
    ($t:ty) => {
        impl Lane for $t {
            type Scalar = $t;

            #[inline(always)]
            fn splat(x: $t) -> Self {
                x
            }

            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }

            #[inline(always)]
            unsafe fn load(p: *const $t) -> Self {
                // SAFETY: the caller guarantees p is readable.
                unsafe { *p }
            }
        }
    };
}

impl_scalar_lane!(f32);
impl_scalar_lane!(f64);

macro_rules! impl_simd {
    ($vec:ty, $scalar:ty, $lanes:expr) => {
        impl Lane for $vec {
            type Scalar = $scalar;

            #[inline(always)]
            fn splat(x: $scalar) -> Self {
                <$vec>::splat(x)
            }

            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$vec>::mul_add(self, a, b)
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
    };
}

#[cfg(target_feature = "avx512f")]
mod lanes {
    pub type F32 = wide::f32x16;
    pub type F64 = wide::f64x8;
}
#[cfg(not(target_feature = "avx512f"))]
mod lanes {
    pub type F32 = wide::f32x8;
    pub type F64 = wide::f64x4;
}

#[cfg(target_feature = "avx512f")]
impl_simd!(wide::f32x16, f32, 16);
#[cfg(target_feature = "avx512f")]
impl_simd!(wide::f64x8, f64, 8);
#[cfg(not(target_feature = "avx512f"))]
impl_simd!(wide::f32x8, f32, 8);
#[cfg(not(target_feature = "avx512f"))]
impl_simd!(wide::f64x4, f64, 4);

impl Real for f32 {
    const DTYPE: DType = DType::F32;
    type Simd = lanes::F32;
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
    type Simd = lanes::F64;
    const CUDA_NAME: &'static str = "double";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    fn cuda_literal(self) -> String {
        format!("{self:?}")
    }
}

/// SIMD lanes of `dtype` in this build (8 f32 / 4 f64 on AVX2, twice that on AVX-512).
pub fn simd_lanes(dtype: DType) -> usize {
    match dtype {
        DType::F32 => <f32 as Real>::Simd::LANES,
        DType::F64 => <f64 as Real>::Simd::LANES,
    }
}

/// The instruction set the SIMD engines were compiled for (shown in plans).
pub fn simd_isa() -> &'static str {
    if cfg!(target_feature = "avx512f") {
        "AVX-512"
    } else if cfg!(target_feature = "avx2") {
        "AVX2"
    } else if cfg!(target_feature = "sse2") {
        "SSE2"
    } else {
        "portable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_store_round_trip_unaligned() {
        let data: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let mut out = vec![0.0f32; 40];
        let lanes = <f32 as Real>::Simd::LANES;
        // SAFETY: offsets 3 .. 3 + lanes are inside both 40-element buffers.
        unsafe {
            let v = <f32 as Real>::Simd::load(data.as_ptr().add(3));
            v.store(out.as_mut_ptr().add(3));
        }
        assert_eq!(&out[3..3 + lanes], &data[3..3 + lanes]);
        assert_eq!(out[2], 0.0);
        assert_eq!(out[3 + lanes], 0.0);
    }

    #[test]
    fn finiteness_tracker_catches_inf_and_nan() {
        type V = <f64 as Real>::Simd;
        let ok = V::track_finite(V::splat(0.0), V::splat(1e300));
        assert!(ok.sum().is_finite());
        let inf = V::track_finite(ok, V::splat(f64::INFINITY));
        assert!(!inf.sum().is_finite());
        let nan = V::track_finite(V::splat(0.0), V::splat(f64::NAN));
        assert!(!V::track_finite(nan, V::splat(2.0)).sum().is_finite());
    }

    #[test]
    fn dtype_parses() {
        assert_eq!("f32".parse::<DType>().unwrap(), DType::F32);
        assert_eq!("f64".parse::<DType>().unwrap(), DType::F64);
        assert!("f16".parse::<DType>().is_err());
    }
}
