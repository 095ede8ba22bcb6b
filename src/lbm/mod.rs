//! D3Q19 lattice-Boltzmann flows: the model, boundary conditions, and the reference, naive and
//! 3.5D-blocked engines, all run through [`crate::Solver`] like the stencil engines.
//!
//! ```
//! use stencil35d::lbm::{Cell, Face, Lattice, Physics};
//! use stencil35d::{Plan, Solver};
//!
//! // A lid-driven cavity: walls on every face, the top one moving in +x.
//! let mut lat = Lattice::<f32>::new([32, 32, 32], Physics::trt(0.6, 3.0 / 16.0))?;
//! for face in Face::ALL {
//!     lat.set_face(face, Cell::Wall)?;
//! }
//! lat.set_face(Face::YMax, Cell::MovingWall { velocity: [0.1, 0.0, 0.0] })?;
//! let plan = Plan::for_lattice(&lat)?; // engine, dim_t and tile for this machine
//! let report = Solver::new(plan).run(&mut lat, 50)?;
//! let speed = lat.speed()?; // density(), velocity() likewise
//! # assert!(report.mups > 0.0 && speed.get(16, 30, 16) > 0.0);
//! # Ok::<(), stencil35d::Error>(())
//! ```
//!
//! # The scheme
//!
//! The lattice stores, for every node `x` and direction `i` (see [`VELOCITIES`]), the
//! **post-collision** population `f*_i(x, t)`, as 19 structure-of-arrays arrays. One time step
//! is **pull streaming followed by collision**, node by node:
//!
//! 1. *Stream.* `f_i(x) = f*_i(x − c_i, t)` — unless the node `x − c_i` is a wall, in which case
//!    the population that left `x` towards the wall comes back reversed: **half-way
//!    bounce-back**, `f_i(x) = f*_ī(x, t)` (the wall sits half-way between the nodes). For a
//!    **moving wall** with velocity `u_w` the momentum term `6 w_i ρ₀ (c_i · u_w)`, `ρ₀ = 1`, is
//!    added (Ladd). A neighbour beyond a face is wrapped around a **periodic** axis and clamped
//!    to the face on a closed one; fluid nodes may not lie on the faces of a closed axis, so
//!    clamping only ever feeds inlet and outlet nodes (a zero-gradient extrapolation of the
//!    populations that would come from outside).
//! 2. *Collide.* For a **fluid** node, `ρ = Σ f_i`, `u = (Σ c_i f_i + F/2)/ρ` with the body force
//!    `F`, then BGK, `f*_i = f_i − (f_i − f_i^eq)/τ + (1 − 1/2τ) S_i`, or TRT, which relaxes the
//!    symmetric and antisymmetric parts of each opposite pair at `ω⁺ = 1/τ` and `ω⁻` (set by
//!    the magic parameter Λ), with Guo's forcing `S_i = w_i [3 (c_i − u) + 9 (c_i·u) c_i]·F`
//!    split the same way. `f^eq` is the usual second-order equilibrium
//!    (`w_i ρ (1 + 3 c·u + 4.5 (c·u)² − 1.5 u²)`). Viscosity `ν = (τ − 1/2)/3`.
//!
//!    A **velocity inlet** node is reset to `f^eq(ρ, u_in)` with its streamed density `ρ`; a
//!    **pressure outlet** node to `f^eq(ρ_out, u)` with its streamed velocity `u = Σ c_i f_i/ρ`
//!    (equilibrium boundary conditions: first order, robust). Neither is forced.
//!    **Wall** nodes are not updated: their populations are never read and never change.
//!
//! Density and velocity are computed on demand from the stored populations
//! ([`Lattice::density`], [`Lattice::velocity`]; the force shifts the momentum by `F/2`).
//!
//! # Engines
//!
//! * `reference`: the scheme above as an obvious scalar loop (the oracle of the tests).
//! * `naive`: one parallel SIMD sweep per step; memory-bound (≥ 153 bytes per node update in
//!   `f32`: 19 populations read and written and a class byte).
//! * `blocked`: 3.5D blocking — `dim_t` steps per pass over memory, XY tiles streamed through z,
//!   a ring buffer per level that keeps each direction only for the planes it is read from
//!   (43 tile-sized array planes per level for one-thread tile groups, 62 for larger groups,
//!   where four whole planes of 19 arrays would be 76), one barrier per plane for groups of
//!   several threads. The planner charges a pass those rings and one plane of each population
//!   streamed into level 1, and fits strips to the private caches with them; fitted to a
//!   last-level cache, tiles are sized from eq. (1) with `E = 19·size + 1` bytes per node (77
//!   in `f32`, 153 in `f64`, the paper's 80/160 with a one-byte flag). Periodic axes are handled
//!   as described in `crate::blocking::lattice`: a periodic x axis always gets full-width tiles and reads wrap
//!   inside each level; periodic y and z get ghost zones in unwrapped coordinates.
//!
//! * `gpu-naive` (`src/gpu/lbm.rs`, `src/gpu/kernels/lbm.cu`): the same update as one fused
//!   CUDA kernel per step, one thread per node, with two copies of the populations or, with
//!   [`crate::PlanBuilder::in_place`], one copy updated in place by the AA pattern, which halves
//!   the device memory.
//! * There is no lattice `gpu-blocked`: two steps per pass through L2 measured 0.28-0.70× of
//!   gpu-naive (`docs/lattice-boltzmann.md`).
//!
//! * 16-bit storage ([`Lattice::set_storage`], [`Storage`]): the GPU engines keep the
//!   populations as 16-bit codes of their deviation from rest (f16s or f16c), half the bytes per
//!   update, arithmetic in `f32`; the CPU engines are refused for it.
//!
//! Both fast engines precompute a class byte per node (bulk fluid or not) and, next to walls,
//! a word of bounce-back links; a vector of bulk nodes takes a path with no flag logic at all.
//!
//! # Checkpoints
//!
//! [`Lattice::save`] and [`Lattice::load`] write and read the whole state bit-exactly;
//! [`Lattice::save_tagged`] and [`Lattice::load_tagged`] also record and return a
//! [`CheckpointTag`] (the scenario and geometry of the run). The format is described in
//! [`checkpoint`].

pub(crate) mod blocked;
mod cell;
pub mod checkpoint;
mod classify;
mod collide;
mod flow_range;
mod lattice;
mod model;
pub(crate) mod naive;
#[cfg(feature = "mpi")]
mod parts;
mod physics;
pub(crate) mod populations;
mod reference;
mod rows;
pub(crate) mod run;
mod shapes;
mod stage;
mod storage;
#[doc(hidden)]
pub mod test_flows;

use serde::{Deserialize, Serialize};

pub use cell::{Cell, MAX_BOUNDARY_CONDITIONS};
pub use checkpoint::CheckpointTag;
pub use flow_range::FlowRange;
pub use lattice::{Lattice, LATTICE_NODE_BYTES, NODE_WORD_BYTES};
pub use model::{equilibrium, CS2, MAX_SPEED, OPPOSITE, Q, VELOCITIES, WEIGHTS};
#[cfg(feature = "mpi")]
pub(crate) use parts::Shared;
pub use physics::{Collision, Physics, MAGIC_POISEUILLE};
pub use shapes::{Axis, Face, Shape};
pub use storage::Storage;

pub(crate) use classify::{neighbour, Classes, IS_INLET, IS_OUTLET};
pub(crate) use populations::{Layout, Populations};
pub(crate) use rows::Z_CLASS_SIZES;

use crate::cost::KernelCost;
use crate::{DType, Real};

/// The lattice-Boltzmann computation a [`crate::Plan`] is made for: D3Q19 with this
/// periodicity, with or without a body force. The physics itself (τ, boundary values) lives in
/// the [`Lattice`]; a plan made with [`crate::Plan::for_lattice`] fits any lattice of the same
/// size, precision, periodicity, forcing and storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LbmKernel {
    /// Which axes (x, y, z) are periodic.
    pub periodic: [bool; 3],
    /// Whether a body force is applied (it adds operations to the update).
    pub forced: bool,
    /// How the populations are stored (16-bit storage halves the bytes moved; GPU only).
    #[serde(default)]
    pub storage: Storage,
}

impl LbmKernel {
    /// The kernel of `lat`.
    pub fn of<T: Real>(lat: &Lattice<T>) -> LbmKernel {
        LbmKernel {
            periodic: lat.periodic(),
            forced: lat.physics().has_force(),
            storage: lat.storage(),
        }
    }

    /// The cost figures of one node update: R = 1; E = 19 populations (in the storage's
    /// size) plus the class byte; 19 populations read and written plus the class byte read; the fast kernel's arithmetic
    /// instructions (counted in `collide.rs`, FMA = 1 op, 2 flops) plus 20 loads and 19 stores —
    /// 182 ops and 192 flops without force, 200 and 233 with (the 3.5D paper: 259 and 220).
    pub fn cost(&self, dtype: DType) -> KernelCost {
        let size = self.storage.bytes(dtype.size());
        let (mut arith, mut fmas) = (collide::OPS, collide::FMAS);
        if self.forced {
            arith += collide::FORCE_OPS.0;
            fmas += collide::FORCE_OPS.1;
        }
        let (loads, stores) = (Q + 1, Q);
        KernelCost {
            radius: 1,
            element_bytes: Q * size + 1,
            bytes_per_update: 2 * Q * size + 1,
            ops_per_update: arith + loads + stores,
            flops_per_update: arith + fmas,
            loads_per_update: loads,
            stores_per_update: stores,
        }
    }
}

impl std::fmt::Display for LbmKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "D3Q19 lattice-Boltzmann")?;
        let axes: Vec<&str> = ["x", "y", "z"]
            .iter()
            .zip(self.periodic)
            .filter_map(|(a, p)| p.then_some(*a))
            .collect();
        if !axes.is_empty() {
            write!(f, ", periodic in {}", axes.join(", "))?;
        }
        if self.forced {
            write!(f, ", body force")?;
        }
        if self.storage.is_16_bit() {
            write!(f, ", {} storage", self.storage)?;
        }
        Ok(())
    }
}
