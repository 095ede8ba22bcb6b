//! [`Level`]: the run-time tag of an instruction-set level and what the CPU has. The dispatch
//! from a tag to the code instantiated for it is `crate::simd::with_isa`.

use std::fmt::{self, Display};
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::dtype::DType;
use crate::Error;

/// An instruction-set level the SIMD kernels are compiled for, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    /// 128-bit vectors every CPU of the architecture has: SSE2 on x86-64, NEON on aarch64.
    Base,
    /// x86-64 AVX2 with FMA: 256-bit vectors.
    Avx2,
    /// x86-64 AVX-512 (F, DQ, VL, BW): 512-bit vectors.
    Avx512,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Base, Level::Avx2, Level::Avx512];

    /// The highest level this CPU runs (detected once).
    pub fn detected() -> Level {
        static DETECTED: OnceLock<Level> = OnceLock::new();
        *DETECTED.get_or_init(detect)
    }

    /// The name shown in plans (`SSE2`, `AVX2`, `AVX-512`; `NEON` or `portable` for the base
    /// level off x86-64).
    pub fn name(self) -> &'static str {
        match self {
            Level::Base if cfg!(target_arch = "x86_64") => "SSE2",
            Level::Base if cfg!(target_arch = "aarch64") => "NEON",
            Level::Base => "portable",
            Level::Avx2 => "AVX2",
            Level::Avx512 => "AVX-512",
        }
    }

    /// Lanes of a vector of `dtype` at this level.
    pub fn lanes(self, dtype: DType) -> usize {
        let bits = match self {
            Level::Base => 128,
            Level::Avx2 => 256,
            Level::Avx512 => 512,
        };
        bits / 8 / dtype.size()
    }

    /// Whether the level's vectors fuse multiply-adds.
    pub fn fused(self) -> bool {
        self != Level::Base || !cfg!(target_arch = "x86_64")
    }
}

impl Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Level {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        // Names of this architecture's levels only: NEON on x86-64 (or AVX2 on aarch64) is
        // a mistake, not a request for the base level.
        let x86 = cfg!(target_arch = "x86_64");
        let base = Level::Base.name().to_ascii_lowercase();
        match s.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "base" | "portable" => Ok(Level::Base),
            name if name == base => Ok(Level::Base),
            "avx2" if x86 => Ok(Level::Avx2),
            "avx512" if x86 => Ok(Level::Avx512),
            _ if x86 => Err(Error::InvalidArgument(format!(
                "unknown instruction set '{s}' for x86-64 (expected sse2, avx2 or avx512)"
            ))),
            _ if base == "portable" => Err(Error::InvalidArgument(format!(
                "unknown instruction set '{s}' for this CPU (expected portable)"
            ))),
            _ => Err(Error::InvalidArgument(format!(
                "unknown instruction set '{s}' for this CPU (expected {base} or portable)"
            ))),
        }
    }
}

/// What this CPU runs, from its feature flags.
#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    let avx512 = avx2
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512bw");
    if avx512 {
        Level::Avx512
    } else if avx2 {
        Level::Avx2
    } else {
        Level::Base
    }
}

/// Off x86-64 only the base level exists.
#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_order_and_size() {
        if cfg!(target_arch = "x86_64") {
            assert_eq!("avx-512".parse::<Level>().unwrap(), Level::Avx512);
            assert_eq!("AVX2".parse::<Level>().unwrap(), Level::Avx2);
            assert_eq!("sse2".parse::<Level>().unwrap(), Level::Base);
            // Another architecture's level is refused, not taken for the base one.
            assert!("neon".parse::<Level>().is_err());
        } else {
            assert!("avx2".parse::<Level>().is_err());
        }
        assert_eq!("portable".parse::<Level>().unwrap(), Level::Base);
        assert!("avx3".parse::<Level>().is_err());
        assert!(Level::Base < Level::Avx2 && Level::Avx2 < Level::Avx512);
        assert_eq!(Level::Avx512.lanes(DType::F32), 16);
        assert_eq!(Level::Avx2.lanes(DType::F64), 4);
        assert_eq!(Level::Base.lanes(DType::F32), 4);
    }
}
