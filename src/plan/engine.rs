//! [`Engine`]: the implementations a plan can choose between.

use std::fmt::{self, Display};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;

/// Which implementation runs the time steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Engine {
    /// The plain scalar loop the tests trust (one thread, one step at a time).
    Reference,
    /// One parallel SIMD sweep per time step: bandwidth-bound, no temporal blocking.
    Naive,
    /// 3.5D blocking: 2.5D tiles streamed through z, `dim_T` steps per pass, pinned team.
    Blocked,
    /// CUDA: one thread per (x, y) column streaming along z, one launch per time step.
    GpuNaive,
    /// CUDA: N.5D blocking (AN5D): 2.5D tiles streamed along z, `dim_T` steps per launch,
    /// register and shared-memory buffering.
    GpuBlocked,
}

impl Engine {
    /// All engines, in the order reports list them.
    pub const ALL: [Engine; 5] = [
        Engine::Reference,
        Engine::Naive,
        Engine::Blocked,
        Engine::GpuNaive,
        Engine::GpuBlocked,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Reference => "reference",
            Engine::Naive => "naive",
            Engine::Blocked => "blocked",
            Engine::GpuNaive => "gpu-naive",
            Engine::GpuBlocked => "gpu-blocked",
        }
    }

    /// Whether the engine runs on the GPU.
    pub fn is_gpu(self) -> bool {
        matches!(self, Engine::GpuNaive | Engine::GpuBlocked)
    }

    /// Whether the engine advances several time steps per pass (uses `dim_T` and tiles).
    pub fn is_blocked(self) -> bool {
        matches!(self, Engine::Blocked | Engine::GpuBlocked)
    }
}

impl Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Engine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Engine::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Engine::ALL.iter().map(|e| e.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown engine '{s}' (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}
