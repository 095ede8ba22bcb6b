//! Seismic wave propagation: the acoustic wave equation with constant density, space order
//! 2-8, absorbing boundaries (PML) or a free surface, point sources and receivers.
//!
//! A [`Wavefield`] holds one shot's state on a velocity model; [`crate::Plan::for_wavefield`]
//! plans it like any other kernel (reference, naive and 3.5D-blocked CPU engines) and
//! [`crate::Solver`] runs it, injecting the sources and recording the receivers at every step.
//! [`models`] builds velocity models (homogeneous, layered, a salt body).

mod field;
mod kernel;
pub mod models;
#[cfg(feature = "mpi")]
pub(crate) mod parts;
mod points;
mod profile;
pub(crate) mod rigid;
#[doc(hidden)]
pub mod test_shot;
mod wavelet;

pub(crate) use field::sample_into;
pub use field::Wavefield;
pub use kernel::{Face, WaveKernel, DEFAULT_PML_WIDTH, MAX_WAVE_RADIUS, MIN_DAMPED_CELLS};
pub use points::{Receiver, Source};
pub(crate) use profile::Damping;
pub use wavelet::Wavelet;
