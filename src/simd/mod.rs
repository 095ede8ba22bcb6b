//! The SIMD instruction-set levels' implementations and their dispatch, chosen at run time.
//!
//! The hot kernels (stencil rows, lattice rows, the FMA probe) are written once over the lane
//! traits of `crate::real` ([`Lane`], [`SimdVec`], [`FlowLane`]) and instantiated once per
//! [`Isa`] level:
//!
//! - [`Base`]: 128-bit vectors that every target of its architecture has (SSE2 on x86-64, NEON
//!   on aarch64, through `wide`);
//! - `Avx2` (x86-64): 256-bit vectors, AVX2 + FMA, through `std::arch`;
//! - `Avx512` (x86-64): 512-bit vectors, AVX-512 F/DQ/VL/BW, through `std::arch`.
//!
//! A build for the plain x86-64 baseline (what a crate that depends on this one gets) runs the
//! same AVX-512 code as a `-C target-cpu=native` build: each level's kernels run inside
//! [`Isa::enter`], a function compiled with that level's target features, and the level is
//! chosen from what the CPU reports ([`Level::detected`]), capped by the `isa` tuning knob
//! ([`Level::active`]).
//!
//! Every level computes `mul_add` the same way in its vector and its one-lane type
//! ([`Isa::One32`] / [`Isa::One64`]), so a vector loop and its scalar tail round alike: fused
//! where the level has FMA, a multiplication then an addition on the x86-64 baseline.

mod base;
mod dispatch;
mod tracker;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use crate::real::Vector;
pub use crate::real::{FlowLane, Isa, Lane, Level, OneLane, SimdVec};
pub(crate) use base::Base;
pub(crate) use dispatch::{with_isa, WithIsa};
pub(crate) use tracker::Tracker;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};
