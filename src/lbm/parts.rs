//! A lattice in parts, for splitting one over MPI ranks: what every part shares (physics,
//! boundary table, periodicity, step count, storage) as one serialisable value, a part made
//! from it, and row access to the flags and populations of a part.

use serde::{Deserialize, Serialize};

use super::cell::{Cell, CellTable};
use super::lattice::Lattice;
use super::physics::Physics;
use super::storage::Storage;
use crate::{Real, Result};

/// What every part of a lattice shares.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Shared {
    /// The whole lattice's dimensions.
    pub(crate) dims: [usize; 3],
    pub(crate) physics: Physics,
    pub(crate) periodic: [bool; 3],
    pub(crate) boundaries: Vec<Cell>,
    pub(crate) steps: u64,
    pub(crate) storage: Storage,
}

impl<T: Real> Lattice<T> {
    /// What the parts of this lattice share.
    pub(crate) fn shared(&self) -> Shared {
        Shared {
            dims: self.dims(),
            physics: self.physics,
            periodic: self.periodic,
            boundaries: self.table.entries().to_vec(),
            steps: self.steps,
            storage: self.storage,
        }
    }

    /// A part of `dims` nodes (fluid at rest until its rows are written) with `shared`'s
    /// physics, boundary table, step count and storage, periodic along `periodic`, and fluid
    /// allowed on `halo_faces`. Errors: as [`Lattice::new`], and an invalid table.
    pub(crate) fn part(
        shared: &Shared,
        dims: [usize; 3],
        periodic: [bool; 3],
        halo_faces: [[bool; 2]; 3],
    ) -> Result<Lattice<T>> {
        let mut lat = Lattice::new(dims, shared.physics)?;
        lat.table = CellTable::from_entries(shared.boundaries.clone())?;
        lat.periodic = periodic;
        lat.steps = shared.steps;
        lat.storage = shared.storage;
        lat.halo_faces = halo_faces;
        Ok(lat)
    }

    /// The flags of row (y, z).
    pub(crate) fn flag_row(&self, y: usize, z: usize) -> &[u8] {
        let o = self.layout().offset(0, y, z);
        &self.flags[o..o + self.dims()[0]]
    }

    /// The flags of row (y, z), to write; the node classes are rebuilt before the next run.
    pub(crate) fn flag_row_mut(&mut self, y: usize, z: usize) -> &mut [u8] {
        self.geometry_changed();
        let o = self.layout().offset(0, y, z);
        let nx = self.dims()[0];
        &mut self.flags[o..o + nx]
    }

    /// Population `i`'s row (y, z).
    pub(crate) fn population_row(&self, i: usize, y: usize, z: usize) -> &[T] {
        self.pop.row(i, y, z)
    }

    /// Where population `i`'s row (y, z) lies in the 16-bit codes, which are laid out as the
    /// populations.
    pub(crate) fn code_row(&self, i: usize, y: usize, z: usize) -> std::ops::Range<usize> {
        let l = self.pop.layout();
        let start = i * l.array + l.offset(0, y, z);
        start..start + l.dims[0]
    }

    /// Population `i`'s row (y, z), to write (any 16-bit codes are dropped: they no longer
    /// hold the state).
    pub(crate) fn population_row_mut(&mut self, i: usize, y: usize, z: usize) -> &mut [T] {
        self.codes = None;
        self.pop.row_mut(i, y, z)
    }
}
