//! The element types the engines compute in (`f32`, `f64`) and the SIMD vector each one maps to.
//!
//! Every engine is generic over [`Real`]; its vector type at each instruction-set level is
//! [`Real::Vec`], and the level is chosen at run time (see [`crate::simd`]).

use std::fmt::{Debug, Display};
use std::str::FromStr;

use num_traits::{Float, FromPrimitive, ToPrimitive};
use serde::{Deserialize, Serialize};

use crate::simd::{FlowLane, Isa, Lane, OneLane, SimdVec};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_parses() {
        assert_eq!("f32".parse::<DType>().unwrap(), DType::F32);
        assert_eq!("f64".parse::<DType>().unwrap(), DType::F64);
        assert!("f16".parse::<DType>().is_err());
    }
}
