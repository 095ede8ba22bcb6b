//! The CUDA backend: `gpu-naive` and `gpu-blocked` (N.5D register/shared-memory temporal
//! blocking after AN5D) stencil engines, and the 2D engines (`plane`: the systolic warp-shuffle
//! convolution and the temporally blocked 2D stencils), and the acoustic wave equation's (`wave`:
//! naive and N.5D blocked, inner region and absorbing layers decided per block). The kernels are CUDA C sources in
//! `kernels/`, specialised at run time (shape, radius, coefficients, precision, dim_t, block
//! shape) and compiled with NVRTC for the device's own architecture, once per configuration per
//! process. CUDA is loaded dynamically: without a driver, NVRTC or a device every GPU entry point
//! returns [`crate::Error::NoGpu`] saying which is missing, and the CPU engines serve.

mod compile;
mod device;
mod device_grid;
#[cfg(test)]
mod host_cxx;
mod launch_grid;
pub(crate) mod lbm;
#[cfg(test)]
mod lbm_emulate;
mod lbm_source;
#[cfg(feature = "mpi")]
pub(crate) mod lbm_split;
#[cfg(test)]
mod naive_emulate;
pub(crate) mod plane;
#[cfg(test)]
mod plane_emulate;
pub(crate) mod plane_source;
// Only split runs (the `mpi` feature) copy halo boxes; its unit test runs in every build.
#[cfg(any(feature = "mpi", test))]
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) mod regions;
mod source;
pub(crate) mod stencil;
#[cfg(test)]
mod stencil_emulate;
pub(crate) mod stencil_run;
#[doc(hidden)]
pub mod test_gate;
pub(crate) mod wave;
#[cfg(test)]
mod wave_emulate;
pub(crate) mod wave_launches;
pub(crate) mod wave_run;
pub(crate) mod wave_source;
mod wave_split;
pub(crate) mod wave_tiles;
pub(crate) mod zplanes;
pub use stencil::KernelResources;

pub(crate) use device::gpu;
pub use device::{detect_gpu, GpuInfo};
pub use device_grid::DeviceGrid;
pub(crate) use launch_grid::{within_launch_limits, CPU_ADVICE};
pub(crate) use source::{levels_in_place, BlockedShape};
