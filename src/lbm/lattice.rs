//! [`Lattice`]: the state of a D3Q19 simulation — 19 population arrays, a flag per node, the
//! boundary-condition table, the physics, which axes are periodic, and the step count — with
//! the calls that build geometry and initial conditions and read back density and velocity.

use super::cell::{check_velocity, Cell, CellTable, FLUID};
use super::classify::{neighbour, Classes};
use super::model::{equilibrium, Q, VELOCITIES};
use super::physics::Physics;
use super::populations::{Layout, Populations};
use super::shapes::{Axis, Face, Shape};
use super::storage::Storage;
use crate::memory::{Data, Footprint};
use crate::{Error, Grid, Real, Result};

/// Bytes per node of a lattice besides its populations: the flag.
pub(crate) const FLAG_BYTES: u64 = 1;
/// Bytes per node of the node classes and bounce-back links the engines derive.
pub(crate) const CLASS_BYTES: u64 = 5;

/// Bytes per node a lattice holds besides its populations once it has run: its flag, node
/// class and bounce-back links.
pub const LATTICE_NODE_BYTES: u64 = FLAG_BYTES + CLASS_BYTES;

/// Bytes per node of the node words (class and bounce-back links in one `u32`) that a run of a
/// lattice with walls on the GPU builds on the host and keeps on the device.
pub const NODE_WORD_BYTES: u64 = 4;

impl Footprint {
    /// `copies` copies of a D3Q19 lattice's populations in `dtype`, and `node_bytes` bytes
    /// per node besides (a lattice holds one flag byte per node, and once run five more: its
    /// node class and bounce-back links, [`LATTICE_NODE_BYTES`] in all).
    pub fn lattice(dtype: crate::DType, copies: u64, node_bytes: u64) -> Footprint {
        Footprint::new(LATTICES, dtype, copies, node_bytes)
    }

    /// The same for populations held in `storage` (16-bit storage: 2 bytes a value).
    pub fn lattice_stored(
        dtype: crate::DType,
        storage: Storage,
        copies: u64,
        node_bytes: u64,
    ) -> Footprint {
        let data = if storage.is_16_bit() {
            LATTICES_16
        } else {
            LATTICES
        };
        Footprint::new(data, dtype, copies, node_bytes)
    }
}

/// D3Q19 lattices, as [`Footprint`]s count them: one array is one copy of the 19 populations,
/// with the populations' [`Layout`].
const LATTICES: Data = Data {
    name: "D3Q19 lattice",
    array: |dtype, dims| {
        let (layout, size) = match dtype {
            crate::DType::F32 => (Layout::new::<f32>(dims).ok()?, 4),
            crate::DType::F64 => (Layout::new::<f64>(dims).ok()?, 8),
        };
        let elems = layout.array.checked_mul(Q)?;
        let bytes = u64::try_from(elems.checked_mul(size)?).ok()?;
        Some((bytes, u64::try_from(layout.cells_len()).ok()?))
    },
};

/// D3Q19 lattices in 16-bit storage: the layout of the `f32` lattice, 2 bytes a value.
const LATTICES_16: Data = Data {
    name: "D3Q19 lattice in 16-bit storage",
    array: |_, dims| {
        let layout = Layout::new::<f32>(dims).ok()?;
        let bytes = u64::try_from(layout.array.checked_mul(Q)?.checked_mul(2)?).ok()?;
        Some((bytes, u64::try_from(layout.cells_len()).ok()?))
    },
};

/// A D3Q19 lattice-Boltzmann state, in `f32` or `f64`.
///
/// Populations are stored post-collision (see [the module docs](super) for the exact scheme);
/// density and velocity are computed on demand. Every node has a [`Cell`] kind. An axis is
/// either periodic or closed: on a closed axis the two faces must not hold fluid nodes (put
/// walls, moving walls, inlets or outlets there), which [`Lattice::validate`] and every run
/// check.
///
/// ```
/// use stencil35d::lbm::{Cell, Face, Lattice, Physics};
/// use stencil35d::{Plan, Solver};
/// let mut lat = Lattice::<f32>::new([24, 24, 24], Physics::bgk(0.6)).unwrap();
/// for face in Face::ALL {
///     lat.set_face(face, Cell::Wall).unwrap();
/// }
/// lat.set_face(Face::YMax, Cell::MovingWall { velocity: [0.1, 0.0, 0.0] }).unwrap();
/// let plan = Plan::for_lattice(&lat).unwrap();
/// Solver::new(plan).run(&mut lat, 20).unwrap();
/// let [ux, _, _] = lat.velocity().unwrap();
/// assert!(ux.get(12, 22, 12) > 0.0); // the lid drags the fluid below it
/// assert_eq!(lat.steps(), 20);
/// ```
#[derive(Clone, Debug)]
pub struct Lattice<T: Real> {
    pub(crate) pop: Populations<T>,
    pub(crate) flags: Vec<u8>,
    pub(crate) table: CellTable,
    pub(crate) physics: Physics,
    pub(crate) periodic: [bool; 3],
    pub(crate) steps: u64,
    /// How the GPU engines hold the populations.
    pub(crate) storage: Storage,
    /// In 16-bit storage, the codes the populations were decoded from, when no host write
    /// changed them since: the exact state (an `f32` can hold `w + d` only to 2⁻²⁵, less than
    /// a code resolves for tiny deviations), which runs upload and checkpoints save, so a run
    /// continued from the host or from a file matches an uninterrupted one bit for bit.
    pub(crate) codes: Option<Vec<u16>>,
    /// Per-node classes and bounce-back links for the fast engines, rebuilt after geometry
    /// changes.
    derived: Option<Classes>,
    /// Faces (x, y, z; low, high) that are a rank's halo in a distributed run: fluid may lie
    /// there on a closed axis, since those nodes are refreshed from the neighbouring rank
    /// before anything reads them.
    pub(crate) halo_faces: [[bool; 2]; 3],
}

impl<T: Real> Lattice<T> {
    /// A lattice of `dims` fluid nodes at rest with density 1, no periodic axis.
    ///
    /// Errors: zero or too large dimensions, physics [`Physics::validate`] rejects, and
    /// [`Error::OutOfMemory`] when the populations and flags would take more than
    /// [`crate::memory::USABLE_SHARE`] of the memory available (checked as for
    /// [`Grid::new`]).
    pub fn new(dims: [usize; 3], physics: Physics) -> Result<Self> {
        physics.validate()?;
        Footprint::lattice(T::DTYPE, 1, FLAG_BYTES).check_allocation(dims)?;
        let mut pop = Populations::new(dims)?;
        let layout = *pop.layout();
        let feq = equilibrium(1.0, [0.0; 3]);
        for (i, &v) in feq.iter().enumerate() {
            let start = i * layout.array;
            pop.storage_mut()[start..start + layout.cells_len()].fill(T::of(v));
        }
        Ok(Lattice {
            pop,
            flags: vec![FLUID; layout.cells_len()],
            table: CellTable::default(),
            physics,
            periodic: [false; 3],
            steps: 0,
            storage: Storage::Native,
            codes: None,
            derived: None,
            halo_faces: [[false; 2]; 3],
        })
    }

    /// `[nx, ny, nz]`.
    pub fn dims(&self) -> [usize; 3] {
        self.pop.layout().dims
    }

    /// Number of nodes.
    pub fn cells(&self) -> usize {
        self.pop.layout().cells()
    }

    /// The collision operator and body force.
    pub fn physics(&self) -> &Physics {
        &self.physics
    }

    /// Replaces the physics (e.g. to change the viscosity between runs) after validating it.
    pub fn set_physics(&mut self, physics: Physics) -> Result<()> {
        physics.validate()?;
        self.physics = physics;
        Ok(())
    }

    /// Which axes (x, y, z) are periodic.
    pub fn periodic(&self) -> [bool; 3] {
        self.periodic
    }

    /// Makes `axis` periodic (populations leaving one face enter at the opposite one) or closed.
    pub fn set_periodic(&mut self, axis: Axis, periodic: bool) {
        self.periodic[axis.index()] = periodic;
        self.derived = None;
    }

    /// How the GPU engines store the populations (see [`Storage`]).
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// Stores the populations in `storage` on the GPU from now on, and rounds the host's
    /// populations to it at once, so what the host holds is what the device will hold. Later
    /// host writes ([`Lattice::set_equilibrium`], [`Lattice::set_populations`]) are rounded when
    /// a run uploads them or a checkpoint saves them; a value they left beyond the format's
    /// range is then an error, before anything is uploaded or written. 16-bit storage keeps
    /// arithmetic in `f32` and runs on the GPU engines only: the planner refuses CPU engines
    /// for it.
    ///
    /// Errors, before anything is changed: 16-bit storage of an `f64` lattice, a population
    /// whose deviation from rest exceeds the format's range ([`Storage::max_deviation`]), and
    /// [`Error::OutOfMemory`] when the host cannot also hold the 16-bit codes (half the size
    /// of the `f32` populations), which the lattice keeps so that runs continue bit for bit.
    pub fn set_storage(&mut self, storage: Storage) -> Result<()> {
        if storage == self.storage {
            // Already stored so: keep the exact codes a run or a checkpoint left.
            return Ok(());
        }
        if storage.is_16_bit() {
            if T::DTYPE != crate::DType::F32 {
                return Err(Error::InvalidArgument(format!(
                    "{storage} storage computes in f32: make the lattice f32, not {}",
                    T::DTYPE
                )));
            }
            self.pop.check_storage(storage)?;
            // The codes are taken beside the populations, which a budget counts too.
            let dims = self.dims();
            let held = Footprint::lattice(T::DTYPE, 1, 0).bytes(dims).unwrap_or(0);
            Footprint::lattice(T::DTYPE, 1, storage.code_bytes_per_node())
                .with_label("with its 16-bit codes")
                .check_beside(dims, held, None)?;
            let codes = self.pop.encode(storage);
            self.pop.decode(storage, &codes);
            self.codes = Some(codes);
        } else {
            self.codes = None;
        }
        self.storage = storage;
        Ok(())
    }

    /// Time steps advanced since the lattice was made (kept across checkpoints).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Adds `n` steps done to the count, which stops at `u64::MAX` (a count a checkpoint's
    /// header may have set near it never wraps).
    pub(crate) fn count_steps(&mut self, n: u64) {
        self.steps = self.steps.saturating_add(n);
    }

    /// The kind of node (x, y, z). Panics when out of bounds, like slice indexing.
    pub fn cell(&self, x: usize, y: usize, z: usize) -> Cell {
        self.table.cell(self.flags[self.index([x, y, z])])
    }

    /// Makes node (x, y, z) a `cell`. When the kind changes, the node's populations are reset to
    /// the equilibrium of the kind's natural state (rest at density 1; an inlet's velocity; an
    /// outlet's density), so a node turned into fluid starts sensibly.
    ///
    /// Errors: out of bounds; invalid prescribed values (too fast: [`Error::Unstable`]).
    pub fn set_cell(&mut self, x: usize, y: usize, z: usize, cell: Cell) -> Result<()> {
        self.check_bounds([x, y, z])?;
        let (flag, feq) = self.prepare_cells(cell)?;
        self.put_cell([x, y, z], flag, &feq);
        self.derived = None;
        Ok(())
    }

    /// Makes every node on `face` a `cell` (see [`Lattice::set_cell`]).
    ///
    /// Errors, nothing changed: those of [`Lattice::set_cell`], and a moving wall whose
    /// velocity has a component normal to the face (a wall moving into or out of the fluid
    /// would push mass through the face at every step; a lid moves in its own plane).
    pub fn set_face(&mut self, face: Face, cell: Cell) -> Result<usize> {
        if let Cell::MovingWall { velocity } = cell {
            let normal = velocity[face.axis().index()];
            if normal != 0.0 {
                return Err(Error::InvalidArgument(format!(
                    "a moving wall on face {face:?} must move in the face's plane: its velocity \
                     {velocity:?} has {normal} along the face's normal"
                )));
            }
        }
        let dims = self.dims();
        self.set_cells(cell, |c| face.contains(dims, c))
    }

    /// Makes every node inside `shape` a `cell`; returns how many nodes that was.
    pub fn fill_shape(&mut self, shape: &Shape, cell: Cell) -> Result<usize> {
        shape.validate()?;
        self.set_cells(cell, |c| shape.contains(c))
    }

    /// Makes every node whose `mask` entry is true a `cell`. `mask` holds one value per node in
    /// x-fastest order (`mask[x + nx·(y + ny·z)]`).
    ///
    /// Errors: a mask of the wrong length ([`Error::InvalidArgument`], nothing changed).
    pub fn set_mask(&mut self, mask: &[bool], cell: Cell) -> Result<usize> {
        let [nx, ny, nz] = self.dims();
        if mask.len() != nx * ny * nz {
            return Err(Error::InvalidArgument(format!(
                "the mask has {} values but the {nx}x{ny}x{nz} lattice has {} nodes \
                 (one value per node, x fastest)",
                mask.len(),
                nx * ny * nz
            )));
        }
        self.set_cells(cell, |[x, y, z]| mask[x + nx * (y + ny * z)])
    }

    /// Makes every node (x, y, z) with `pick([x, y, z])` a `cell`; returns the count.
    pub fn set_cells(
        &mut self,
        cell: Cell,
        mut pick: impl FnMut([usize; 3]) -> bool,
    ) -> Result<usize> {
        let (flag, feq) = self.prepare_cells(cell)?;
        let [nx, ny, nz] = self.dims();
        let mut count = 0;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    if pick([x, y, z]) {
                        count += 1;
                        self.put_cell([x, y, z], flag, &feq);
                    }
                }
            }
        }
        self.derived = None;
        Ok(count)
    }

    /// Checks `cell` and gives it a flag in the boundary table; returns the flag and the
    /// equilibrium of the kind's natural state. Errors, nothing changed: an invalid cell, an
    /// equilibrium beyond `T`, a full table.
    fn prepare_cells(&mut self, cell: Cell) -> Result<(u8, [T; 19])> {
        cell.validate()?;
        let (rho, u) = cell.rest_state();
        let feq = equilibrium(rho, u).map(T::of);
        if feq.iter().any(|v| !v.is_finite()) {
            return Err(overflow(rho, T::DTYPE));
        }
        if self.table.is_full_for(cell) {
            // Renumbering the flags leaves every node's condition as it was.
            self.table.compact(&mut self.flags);
            self.derived = None;
        }
        let mut table = self.table.clone();
        let flag = table.flag_for(cell)?;
        self.table = table;
        Ok((flag, feq))
    }

    /// Makes node (x, y, z) a node of `flag`, its populations `feq` when its kind changes.
    fn put_cell(&mut self, [x, y, z]: [usize; 3], flag: u8, feq: &[T; 19]) {
        let o = self.pop.layout().offset(x, y, z);
        if self.flags[o] != flag {
            self.flags[o] = flag;
            for (i, &v) in feq.iter().enumerate() {
                self.pop.set(i, x, y, z, v);
            }
            self.codes = None;
        }
    }

    /// Sets every fluid node to the equilibrium of `state(x, y, z) = (density, velocity)`
    /// (other nodes keep their populations).
    ///
    /// Errors, before anything is changed: a non-finite or non-positive density
    /// ([`Error::InvalidArgument`]), a non-finite velocity or one faster than
    /// [`super::MAX_SPEED`] (as [`Lattice::set_cell`] refuses them), a density whose
    /// equilibrium lies beyond `T` ([`Error::InvalidArgument`]), no memory for a second copy of
    /// the populations ([`Error::OutOfMemory`]).
    pub fn set_equilibrium(
        &mut self,
        mut state: impl FnMut(usize, usize, usize) -> (f64, [f64; 3]),
    ) -> Result<()> {
        // The new populations are built beside the old ones, so that an error leaves them.
        let dims = self.dims();
        let held = Footprint::lattice(T::DTYPE, 1, 0).bytes(dims).unwrap_or(0);
        Footprint::lattice(T::DTYPE, 2, 0)
            .with_label("and the copy its equilibrium is built in")
            .check_beside(dims, held, None)?;
        let mut next = self.pop.try_clone()?;
        let [nx, ny, nz] = dims;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    if self.flags[self.pop.layout().offset(x, y, z)] != FLUID {
                        continue;
                    }
                    let (rho, u) = state(x, y, z);
                    if !(rho.is_finite() && rho > 0.0) {
                        return Err(Error::InvalidArgument(format!(
                            "initial density {rho} at ({x}, {y}, {z}) must be positive and finite"
                        )));
                    }
                    check_velocity(u, &format!("initial ({x}, {y}, {z})"))?;
                    let feq = equilibrium(rho, u).map(T::of);
                    if feq.iter().any(|v| !v.is_finite()) {
                        return Err(overflow(rho, T::DTYPE));
                    }
                    for (i, v) in feq.into_iter().enumerate() {
                        next.set(i, x, y, z, v);
                    }
                }
            }
        }
        self.pop = next;
        self.codes = None;
        Ok(())
    }

    /// The 19 populations of node (x, y, z), in the order of [`super::VELOCITIES`].
    /// Panics when out of bounds.
    pub fn populations(&self, x: usize, y: usize, z: usize) -> [T; Q] {
        let o = self.index([x, y, z]);
        let a = self.pop.layout().array;
        std::array::from_fn(|i| self.pop.storage()[i * a + o])
    }

    /// Sets the 19 populations of node (x, y, z). Panics when out of bounds.
    pub fn set_populations(&mut self, x: usize, y: usize, z: usize, f: [T; Q]) {
        let o = self.index([x, y, z]);
        let a = self.pop.layout().array;
        for (i, v) in f.into_iter().enumerate() {
            self.pop.storage_mut()[i * a + o] = v;
        }
        self.codes = None;
    }

    /// Sets the populations of each node for which `f(x, y, z)` gives some, planes in
    /// parallel (a lattice of 10⁸ nodes is filled in seconds rather than minutes). `f` must
    /// not depend on the order it is called in.
    pub(crate) fn set_populations_with<F>(&mut self, f: F)
    where
        F: Fn(usize, usize, usize) -> Option<[T; Q]> + Sync,
    {
        use rayon::prelude::*;
        let layout = *self.pop.layout();
        let [nx, ny, nz] = layout.dims;
        // Plane z of each of the Q arrays, gathered per plane.
        let mut planes: Vec<Vec<&mut [T]>> = (0..nz).map(|_| Vec::with_capacity(Q)).collect();
        for array in self.pop.storage_mut().chunks_mut(layout.array).take(Q) {
            for (arrays, plane) in planes.iter_mut().zip(array.chunks_mut(layout.plane)) {
                arrays.push(plane);
            }
        }
        planes
            .into_par_iter()
            .enumerate()
            .for_each(|(z, mut arrays)| {
                for y in 0..ny {
                    for x in 0..nx {
                        if let Some(f) = f(x, y, z) {
                            for (plane, v) in arrays.iter_mut().zip(f) {
                                plane[y * layout.pitch + x] = v;
                            }
                        }
                    }
                }
            });
        self.codes = None;
    }

    /// Density and velocity of node (x, y, z) in `f64`: for fluid nodes `ρ = Σ f_i` and
    /// `u = (Σ c_i f_i − F/2)/ρ` (the populations are stored after collision, which added the
    /// force F to the momentum); inlets and outlets give their streamed-and-reset state; walls
    /// give their velocity (zero for resting walls) and the density their untouched populations
    /// hold. Panics when out of bounds, like slice indexing.
    pub fn moments(&self, x: usize, y: usize, z: usize) -> (f64, [f64; 3]) {
        let f = self
            .populations(x, y, z)
            .map(|v| v.to_f64().unwrap_or(f64::NAN));
        let rho: f64 = f.iter().sum();
        let cell = self.cell(x, y, z);
        let u = match cell {
            Cell::Wall => [0.0; 3],
            Cell::MovingWall { velocity } => velocity,
            _ => {
                let shift = if cell == Cell::Fluid {
                    self.physics.force.map(|g| g / 2.0)
                } else {
                    [0.0; 3]
                };
                std::array::from_fn(|a| {
                    let j: f64 = (0..Q).map(|i| f[i] * VELOCITIES[i][a] as f64).sum();
                    (j - shift[a]) / rho
                })
            }
        };
        (rho, u)
    }

    /// The density field. Errors: [`Error::OutOfMemory`] when the grid does not fit.
    pub fn density(&self) -> Result<Grid<T>> {
        Grid::from_fn(self.dims(), |x, y, z| T::of(self.moments(x, y, z).0))
    }

    /// The velocity field as three grids (x, y and z components). Errors:
    /// [`Error::OutOfMemory`] when the three grids do not fit.
    pub fn velocity(&self) -> Result<[Grid<T>; 3]> {
        let dims = self.dims();
        crate::memory::Footprint::grids(T::DTYPE, 3).check_allocation(dims)?;
        let mut out = [
            Grid::unchecked(dims)?,
            Grid::unchecked(dims)?,
            Grid::unchecked(dims)?,
        ];
        for z in 0..dims[2] {
            for y in 0..dims[1] {
                for x in 0..dims[0] {
                    let (_, u) = self.moments(x, y, z);
                    for a in 0..3 {
                        out[a].set(x, y, z, T::of(u[a]));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The speed |u| at every node. Errors: [`Error::OutOfMemory`] when the grid does not fit.
    pub fn speed(&self) -> Result<Grid<T>> {
        Grid::from_fn(self.dims(), |x, y, z| {
            let (_, u) = self.moments(x, y, z);
            T::of((u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
        })
    }

    /// Total mass `Σ f_i` over every node that is not a wall, summed in `f64`.
    pub fn mass(&self) -> f64 {
        let [nx, ny, nz] = self.dims();
        let mut total = 0.0;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    if !self.cell(x, y, z).is_wall() {
                        let f = self.populations(x, y, z);
                        total += f
                            .iter()
                            .map(|v| v.to_f64().unwrap_or(f64::NAN))
                            .sum::<f64>();
                    }
                }
            }
        }
        total
    }

    /// The force the fluid exerts on the resting wall nodes selected by `body` (an obstacle),
    /// by momentum exchange: every link from a fluid, inlet or outlet node `x` to a body node
    /// `x + c_i` carries `f*_i(x)` into the wall, which half-way bounce-back returns reversed,
    /// so the body receives `Σ 2 f*_i(x) c_i` per step. In lattice units; divide by
    /// `ρ u² A / 2` for a drag coefficient.
    pub fn force_on(&self, body: impl Fn([usize; 3]) -> bool) -> [f64; 3] {
        let [nx, ny, nz] = self.dims();
        let mut force = [0.0; 3];
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    if self.cell(x, y, z).is_wall() {
                        continue;
                    }
                    let f = self.populations(x, y, z);
                    for (i, c) in VELOCITIES.iter().enumerate().skip(1) {
                        let p = self.periodic;
                        let n = [
                            neighbour(x as isize + c[0] as isize, nx, p[0]),
                            neighbour(y as isize + c[1] as isize, ny, p[1]),
                            neighbour(z as isize + c[2] as isize, nz, p[2]),
                        ];
                        if body(n) && self.cell(n[0], n[1], n[2]).is_wall() {
                            let fi = f[i].to_f64().unwrap_or(f64::NAN);
                            for a in 0..3 {
                                force[a] += 2.0 * fi * c[a] as f64;
                            }
                        }
                    }
                }
            }
        }
        force
    }

    /// A code per node for visualisation, x fastest without padding: 0 fluid, 1 wall, 2 moving
    /// wall, 3 inlet, 4 outlet.
    pub fn kind_codes(&self) -> Vec<u8> {
        let [nx, ny, nz] = self.dims();
        let mut out = Vec::with_capacity(nx * ny * nz);
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    out.push(match self.cell(x, y, z) {
                        Cell::Fluid => 0,
                        Cell::Wall => 1,
                        Cell::MovingWall { .. } => 2,
                        Cell::Inlet { .. } => 3,
                        Cell::Outlet { .. } => 4,
                    });
                }
            }
        }
        out
    }

    /// `max |self − other| / max |other|` over every population of every node: the error
    /// measure of the tests and `bench --verify` (`other` is the reference).
    ///
    /// Errors: lattices of different dimensions.
    pub fn max_rel_diff(&self, other: &Lattice<T>) -> Result<f64> {
        if self.dims() != other.dims() {
            return Err(Error::InvalidArgument(format!(
                "cannot compare lattices of sizes {:?} and {:?}",
                self.dims(),
                other.dims()
            )));
        }
        Ok(self.pop.max_rel_diff(&other.pop))
    }

    /// Checks what a run needs beyond the physics (already checked when set): no fluid node on
    /// a face of a closed axis (its neighbour outside the lattice would be undefined).
    pub fn validate(&self) -> Result<()> {
        self.physics.validate()?;
        let dims = self.dims();
        for face in Face::ALL {
            let a = face.axis().index();
            let side = usize::from(!matches!(face, Face::XMin | Face::YMin | Face::ZMin));
            if self.periodic[a] || self.halo_faces[a][side] {
                continue;
            }
            // The face's nodes: the other two axes in full, this one at its end.
            let at = if side == 0 { 0 } else { dims[a] - 1 };
            let [b, c] = [(a + 1) % 3, (a + 2) % 3];
            for j in 0..dims[c] {
                for i in 0..dims[b] {
                    let mut node = [0; 3];
                    (node[a], node[b], node[c]) = (at, i, j);
                    if self.flags[self.index(node)] == FLUID {
                        let [x, y, z] = node;
                        return Err(Error::InvalidArgument(format!(
                            "fluid node ({x}, {y}, {z}) lies on the {face:?} face but the {} \
                             axis is not periodic: put walls, inlets or outlets on that face \
                             or make the axis periodic",
                            ["x", "y", "z"][a]
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Drops the node classes and links: the flags changed.
    #[cfg(feature = "mpi")]
    pub(crate) fn geometry_changed(&mut self) {
        self.derived = None;
    }

    /// Builds the node classes and links for the current geometry if it changed since the
    /// last build.
    pub(crate) fn prepare(&mut self) {
        if self.derived.is_none() {
            self.derived = Some(Classes::build(
                self.pop.layout(),
                &self.flags,
                &self.table,
                self.periodic,
            ));
        }
    }

    /// Whether the node classes and links are built (what [`Lattice::prepare`] allocates).
    pub(crate) fn has_classes(&self) -> bool {
        self.derived.is_some()
    }

    /// Bytes this lattice holds per node besides its populations.
    pub(crate) fn node_bytes(&self) -> u64 {
        FLAG_BYTES + if self.has_classes() { CLASS_BYTES } else { 0 }
    }

    /// Bytes of the 16-bit codes the lattice holds (none in native storage).
    pub(crate) fn codes_bytes(&self) -> u64 {
        self.codes.as_ref().map_or(0, |c| 2 * c.len() as u64)
    }

    /// The node classes and links; [`Lattice::prepare`] must have run since the last change.
    pub(crate) fn classes(&self) -> &Classes {
        self.derived
            .as_ref()
            .expect("Lattice::prepare runs before the engines")
    }

    /// The strides shared by populations and per-node bytes.
    pub(crate) fn layout(&self) -> &Layout {
        self.pop.layout()
    }

    fn index(&self, [x, y, z]: [usize; 3]) -> usize {
        let [nx, ny, nz] = self.dims();
        assert!(
            x < nx && y < ny && z < nz,
            "node ({x}, {y}, {z}) is outside a {nx}x{ny}x{nz} lattice"
        );
        self.pop.layout().offset(x, y, z)
    }

    fn check_bounds(&self, [x, y, z]: [usize; 3]) -> Result<()> {
        let [nx, ny, nz] = self.dims();
        if x < nx && y < ny && z < nz {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "node ({x}, {y}, {z}) is outside the {nx}x{ny}x{nz} lattice"
            )))
        }
    }
}

/// The error for a density whose equilibrium populations overflow the lattice's precision.
fn overflow(rho: f64, dtype: crate::DType) -> Error {
    Error::InvalidArgument(format!(
        "density {rho} gives populations beyond the range of {dtype}: lattice densities are \
         near 1"
    ))
}
