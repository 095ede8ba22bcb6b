//! [`KernelCost`]: the few numbers about a kernel that the planner's model and the engines'
//! reports need (the 3.5D paper's R, E, γ). It sits below both: stencils and lattices state
//! their cost here, and the planner reads it.

use serde::{Deserialize, Serialize};

/// The kernel's side of the bytes-per-op balance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCost {
    /// R: how far an update reads, and the width of the fixed boundary.
    pub radius: usize,
    /// E: bytes of state per cell kept in the blocking buffers.
    pub element_bytes: usize,
    /// Fewest bytes moved to or from memory per cell update.
    pub bytes_per_update: usize,
    /// Operations per update in the paper's sense (arithmetic, loads, stores).
    pub ops_per_update: usize,
    /// Floating-point operations per update.
    pub flops_per_update: usize,
    /// Loads per update (counted in `ops_per_update`).
    pub loads_per_update: usize,
    /// Stores per update (counted in `ops_per_update`).
    pub stores_per_update: usize,
}

impl KernelCost {
    /// γ: bytes per op the kernel demands (0.5 for the SP 7-point stencil).
    pub fn bytes_per_op(&self) -> f64 {
        self.bytes_per_update as f64 / self.ops_per_update as f64
    }
}
