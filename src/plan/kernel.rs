//! [`Kernel`]: what a plan computes (a stencil or a lattice-Boltzmann step); its cost figures
//! are a [`KernelCost`].

use serde::{Deserialize, Serialize};

pub use crate::cost::KernelCost;
use crate::lbm::LbmKernel;
use crate::plane::{Filter2, Stencil2};
use crate::wave::WaveKernel;
use crate::{DType, Result, Stencil};

/// The computation a plan is for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Kernel {
    /// A linear stencil on a [`crate::Grid`].
    Stencil(Stencil),
    /// A D3Q19 lattice-Boltzmann step on a [`crate::lbm::Lattice`].
    Lbm(LbmKernel),
    /// A 2D stencil iterated on a [`crate::Grid2`].
    Stencil2(Stencil2),
    /// A 2D convolution applied to a [`crate::Grid2`] (once per step).
    Filter(Filter2),
    /// The acoustic wave equation on a [`crate::wave::Wavefield`].
    Wave(WaveKernel),
}

impl From<WaveKernel> for Kernel {
    fn from(k: WaveKernel) -> Self {
        Kernel::Wave(k)
    }
}

impl From<Stencil2> for Kernel {
    fn from(s: Stencil2) -> Self {
        Kernel::Stencil2(s)
    }
}

impl From<Filter2> for Kernel {
    fn from(f: Filter2) -> Self {
        Kernel::Filter(f)
    }
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
            Kernel::Stencil2(s) => s.validate(),
            Kernel::Filter(f) => f.validate(),
            Kernel::Wave(w) => w.validate(),
        }
    }

    /// Checks that the kernel's coefficients (a filter's weights and constant border value
    /// included) lie within the range of `dtype`: one beyond `f32`'s is infinite once the
    /// engines convert it, and the run would report a blow-up after its first step.
    pub fn check_range(&self, dtype: DType) -> Result<()> {
        if dtype != DType::F32 {
            return Ok(());
        }
        let border = match self {
            Kernel::Filter(f) => match f.border() {
                crate::plane::Border::Constant(v) => Some(v),
                _ => None,
            },
            _ => None,
        };
        let coeffs = match self {
            Kernel::Stencil(s) => s.coeffs(),
            Kernel::Stencil2(s) => s.coeffs(),
            Kernel::Filter(f) => f.weights(),
            Kernel::Lbm(_) | Kernel::Wave(_) => &[],
        };
        let beyond = |c: &&f64| c.abs() > f64::from(f32::MAX);
        let found = match coeffs.iter().find(beyond) {
            Some(c) => Some(("coefficient", c)),
            None => border
                .iter()
                .find(beyond)
                .map(|v| ("constant border value", v)),
        };
        match found {
            Some((what, v)) => Err(crate::Error::UnsupportedStencil(format!(
                "{what} {v:e} is beyond the range of f32 (±{:e}): run in f64",
                f32::MAX
            ))),
            None => Ok(()),
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
            Kernel::Stencil2(s) => KernelCost {
                radius: s.radius(),
                element_bytes: dtype.size(),
                bytes_per_update: s.min_bytes_per_update(dtype),
                ops_per_update: s.ops_per_update(),
                flops_per_update: s.flops_per_update(),
                loads_per_update: s.points(),
                stores_per_update: 1,
            },
            Kernel::Filter(f) => KernelCost {
                radius: f.reach(),
                element_bytes: dtype.size(),
                bytes_per_update: f.min_bytes_per_update(dtype),
                ops_per_update: f.ops_per_update(),
                flops_per_update: f.flops_per_update(),
                loads_per_update: f.taps(),
                stores_per_update: 1,
            },
            Kernel::Wave(w) => KernelCost {
                radius: w.radius(),
                element_bytes: dtype.size(),
                bytes_per_update: w.min_bytes_per_update(dtype),
                ops_per_update: w.flops_per_update(),
                flops_per_update: w.flops_per_update(),
                loads_per_update: 6 * w.radius() + 3,
                stores_per_update: 1,
            },
        }
    }

    /// Machine-readable name (`star7`, `box:2`, ...).
    pub fn name(&self) -> String {
        match self {
            Kernel::Stencil(s) => s.kind_name(),
            Kernel::Lbm(_) => "d3q19".to_string(),
            Kernel::Stencil2(s) => s.kind_name(),
            Kernel::Filter(f) => f.kind_name(),
            Kernel::Wave(w) => w.kind_name(),
        }
    }

    /// Width of the fixed boundary layer the engines never update: R for stencils and the
    /// wave equation (the Dirichlet layer, in x and y only for 2D stencils), 0 for lattice-Boltzmann (every node
    /// is updated; walls are flags) and convolutions (border modes give the outside).
    pub fn fixed_boundary(&self) -> usize {
        match self {
            Kernel::Stencil(s) => s.radius(),
            Kernel::Stencil2(s) => s.radius(),
            Kernel::Wave(w) => w.radius(),
            Kernel::Lbm(_) | Kernel::Filter(_) => 0,
        }
    }

    /// The side of the smallest grid (a cube, or a square for the 2D kernels) the kernel runs
    /// on: one updated cell inside its fixed boundary layers, for a walled lattice (the
    /// benchmarks' cavity) one fluid node between its walls, and for the wave equation room
    /// for its absorbing layers and rigid faces ([`WaveKernel::smallest_side`]).
    pub fn smallest_side(&self) -> usize {
        match self {
            Kernel::Wave(w) => w.smallest_side(),
            Kernel::Lbm(k) if !k.periodic.iter().all(|&p| p) => 3,
            _ => 2 * self.fixed_boundary() + 1,
        }
    }

    /// True for the 2D kernels, which run on a [`crate::Grid2`] (dimensions `[nx, ny, 1]`).
    pub fn is_2d(&self) -> bool {
        matches!(self, Kernel::Stencil2(_) | Kernel::Filter(_))
    }

    /// Which axes wrap around (lattice-Boltzmann only; stencil grids have fixed boundaries).
    pub fn periodic(&self) -> [bool; 3] {
        match self {
            Kernel::Lbm(k) => k.periodic,
            _ => [false; 3],
        }
    }

    /// The lattice-Boltzmann kernel, if this is one.
    pub fn lbm(&self) -> Option<&LbmKernel> {
        match self {
            Kernel::Lbm(k) => Some(k),
            _ => None,
        }
    }

    /// The stencil, if this is a stencil kernel.
    pub fn stencil(&self) -> Option<&Stencil> {
        match self {
            Kernel::Stencil(s) => Some(s),
            _ => None,
        }
    }

    /// The 2D stencil, if this is one.
    pub fn stencil2(&self) -> Option<&Stencil2> {
        match self {
            Kernel::Stencil2(s) => Some(s),
            _ => None,
        }
    }

    /// The wave kernel, if this is one.
    pub fn wave(&self) -> Option<&WaveKernel> {
        match self {
            Kernel::Wave(w) => Some(w),
            _ => None,
        }
    }

    /// The 2D filter, if this is a convolution.
    pub fn filter(&self) -> Option<&Filter2> {
        match self {
            Kernel::Filter(f) => Some(f),
            _ => None,
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Stencil(s) => s.fmt(f),
            Kernel::Lbm(k) => k.fmt(f),
            Kernel::Stencil2(s) => s.fmt(f),
            Kernel::Filter(k) => k.fmt(f),
            Kernel::Wave(w) => w.fmt(f),
        }
    }
}
