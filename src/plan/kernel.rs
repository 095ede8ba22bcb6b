//! [`Kernel`]: what a plan computes (a stencil or a lattice-Boltzmann step); its cost figures
//! are a [`KernelCost`].

use serde::{Deserialize, Serialize};

pub use crate::cost::KernelCost;
use crate::lbm::LbmKernel;
use crate::{DType, Result, Stencil};

/// The computation a plan is for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Kernel {
    /// A linear stencil on a [`crate::Grid`].
    Stencil(Stencil),
    /// A D3Q19 lattice-Boltzmann step on a [`crate::lbm::Lattice`].
    Lbm(LbmKernel),
}

impl From<LbmKernel> for Kernel {
    fn from(k: LbmKernel) -> Self {
        Kernel::Lbm(k)
    }
}

impl From<Stencil> for Kernel {
    fn from(s: Stencil) -> Self {
        Kernel::Stencil(s)
    }
}

impl Kernel {
    /// Checks the kernel's definition.
    pub fn validate(&self) -> Result<()> {
        match self {
            Kernel::Stencil(s) => s.validate(),
            Kernel::Lbm(_) => Ok(()),
        }
    }

    /// The cost figures for `dtype`.
    pub fn cost(&self, dtype: DType) -> KernelCost {
        match self {
            Kernel::Stencil(s) => KernelCost {
                radius: s.radius(),
                element_bytes: dtype.size(),
                bytes_per_update: s.min_bytes_per_update(dtype),
                ops_per_update: s.ops_per_update(),
                flops_per_update: s.flops_per_update(),
                loads_per_update: s.points(),
                stores_per_update: 1,
            },
            Kernel::Lbm(k) => k.cost(dtype),
        }
    }

    /// Machine-readable name (`star7`, `box:2`, ...).
    pub fn name(&self) -> String {
        match self {
            Kernel::Stencil(s) => s.kind_name(),
            Kernel::Lbm(_) => "d3q19".to_string(),
        }
    }

    /// Width of the fixed boundary layer the engines never update: R for stencils (the
    /// Dirichlet layer), 0 for lattice-Boltzmann (every node is updated; walls are flags).
    pub fn fixed_boundary(&self) -> usize {
        match self {
            Kernel::Stencil(s) => s.radius(),
            Kernel::Lbm(_) => 0,
        }
    }

    /// Which axes wrap around (lattice-Boltzmann only; stencil grids have fixed boundaries).
    pub fn periodic(&self) -> [bool; 3] {
        match self {
            Kernel::Stencil(_) => [false; 3],
            Kernel::Lbm(k) => k.periodic,
        }
    }

    /// The lattice-Boltzmann kernel, if this is one.
    pub fn lbm(&self) -> Option<&LbmKernel> {
        match self {
            Kernel::Lbm(k) => Some(k),
            Kernel::Stencil(_) => None,
        }
    }

    /// The stencil, if this is a stencil kernel.
    pub fn stencil(&self) -> Option<&Stencil> {
        match self {
            Kernel::Stencil(s) => Some(s),
            Kernel::Lbm(_) => None,
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Stencil(s) => s.fmt(f),
            Kernel::Lbm(k) => k.fmt(f),
        }
    }
}
