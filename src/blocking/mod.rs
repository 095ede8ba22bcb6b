//! Blocking geometry that the planner and the engines both need: how the XY plane is cut into
//! tiles and z into chunks, how far each level of a pass reaches, and the redundant work `κ`
//! this costs ([`tiling`] for stencil grids, [`lattice`] for lattice-Boltzmann lattices with
//! periodic axes), the lattice engine's ring sizes ([`rings`]) and the blocked convolution's
//! row group ([`CONV_ROWS`]). Pure arithmetic: nothing here runs or allocates.

pub(crate) mod lattice;
pub(crate) mod rings;
pub(crate) mod tiling;

/// Output rows the blocked convolution computes together (register blocking over rows): the
/// engine's loop step, and the planner's measure of its loads and band heights.
pub(crate) const CONV_ROWS: usize = 4;
