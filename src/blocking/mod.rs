//! Blocking geometry that the planner and the engines both need: how the XY plane is cut into
//! tiles and z into chunks, how far each level of a pass reaches, and the redundant work `κ`
//! this costs ([`tiling`] for stencil grids, [`lattice`] for lattice-Boltzmann lattices with
//! periodic axes), and the lattice engine's ring sizes ([`rings`]). Pure arithmetic: nothing here runs or allocates.

pub(crate) mod lattice;
pub(crate) mod rings;
pub(crate) mod tiling;
