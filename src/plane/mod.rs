//! Two-dimensional data and kernels: [`Grid2`] (an image or a 2D field), [`Stencil2`] (2D star
//! and box stencils iterated in time, with a fixed boundary layer as in 3D) and [`Filter2`] (a
//! general 2D convolution applied with a [`Border`] mode).
//!
//! A `Grid2` is a [`crate::Grid`] of one plane behind its own type: one storage type for every
//! engine (aligned, padded rows), and signatures that cannot hand a 3D grid to a 2D kernel.

mod filter;
mod grid2;
mod stencil2;

pub use filter::{Border, Filter2, MAX_FILTER_SIZE};
pub use grid2::Grid2;
pub use stencil2::{Shape2, Stencil2, MAX_BOX2_RADIUS, MAX_STAR2_RADIUS};
