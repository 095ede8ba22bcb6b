//! The CPU thread runtime both the stencil and the lattice engines run on: the [`cores`] its
//! workers use, a pinned [`team`] of workers, a spin [`barrier`], tile [`groups`] that claim
//! units of work, neighbour [`progress`] counters that replace a barrier between pipeline
//! levels, streaming stores ([`stream`]) and software [`prefetch`]. [`Workers`] keeps a
//! solver's threads between runs, in the floating-point mode of [`float_mode`].

pub(crate) mod barrier;
pub(crate) mod cores;
pub(crate) mod float_mode;
pub(crate) mod groups;
pub(crate) mod prefetch;
pub(crate) mod progress;
pub(crate) mod stream;
pub(crate) mod team;
mod workers;

pub(crate) use workers::{Rings, Workers};
