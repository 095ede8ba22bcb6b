//! [`DType`]: the precision of a grid or lattice, known at run time.

use std::fmt::Display;
use std::str::FromStr;

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
