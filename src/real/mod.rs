//! The numbers the engines compute with: [`DType`] (the precision at run time), [`Real`]
//! (`f32`, `f64`), the lane traits the kernels are written over, and the SIMD instruction-set
//! levels ([`Level`], [`Isa`]) whose vector types they run on. The levels' implementations are
//! in `crate::simd`.

mod dtype;
mod lanes;
mod level;

pub use dtype::DType;
pub(crate) use lanes::{window_of_loads, Vector};
pub use lanes::{FlowLane, Isa, Lane, OneLane, Real, SimdVec};
pub use level::Level;
