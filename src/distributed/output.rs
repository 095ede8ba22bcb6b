//! A [`DistributedLattice`] written for ParaView without gathering it: each rank writes the
//! nodes it owns as one `.vti` piece, rank 0 the `.pvti` file that joins them.

use std::ops::Range;
use std::path::{Path, PathBuf};

use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::agree::{agreed, common_step};
use super::grid::exchange_grid;
use super::{Block, DistributedLattice};
use crate::output::{lattice_arrays, lattice_moments, write_moments_vti_piece};
use crate::output::{write_pvti, VtiValues};
use crate::{DType, Real, Result};

/// Rank `rank`'s piece of the output `stem` in `dir`: `<dir>/<stem>_<rank>.vti`.
pub fn piece_path(dir: &Path, stem: &str, rank: usize) -> PathBuf {
    dir.join(piece_name(stem, rank))
}

/// The file joining the pieces of the output `stem` in `dir`: `<dir>/<stem>.pvti`.
pub fn pvti_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.pvti"))
}

/// The name of rank `rank`'s piece, as the `.pvti` file refers to it (beside it).
fn piece_name(stem: &str, rank: usize) -> String {
    format!("{stem}_{rank}.vti")
}

impl<T: Real + Equivalence> DistributedLattice<T> {
    /// Writes `<dir>/<stem>_<rank>.vti` on every rank (density, velocity and node kinds of the
    /// nodes it owns, plus the first layer of its upper neighbours so that the pieces join
    /// without gaps) and `<dir>/<stem>.pvti` on rank 0, which ParaView opens as the whole
    /// lattice. Returns the `.pvti` path. Collective: an I/O error on any rank is an error on
    /// every rank, and so are blocks of different steps (see [`DistributedLattice::gather`]).
    ///
    /// The layer a piece shares with the one above comes from that neighbour: each rank
    /// computes the moments of its nodes and exchanges them as a split grid's halos. The
    /// lattice's own halos are left alone (after a run they hold the neighbours' populations
    /// as they were before its last pass, and, one layer deep, only those streaming inward).
    pub fn write_pvti(&self, dir: &Path, stem: &str) -> Result<PathBuf> {
        common_step(&self.comm, Some(self.local.steps()), "lattice")?;
        let rank = self.comm.rank() as usize;
        let mut moments = agreed(&self.comm, lattice_moments(&self.local))?;
        let mut buffers = Vec::new();
        for grid in &mut moments {
            let (c, d, b) = (&self.comm, &self.decomposition, &self.block);
            exchange_grid(c, d, b, grid, &mut buffers);
        }
        let (origin, region) = piece_of(&self.block, self.local.dims()[0]);
        let mine = piece_path(dir, stem, rank);
        let [rho, ux, uy, uz] = &moments;
        let kinds = self.local.kind_codes();
        let written = write_moments_vti_piece(&mine, [rho, ux, uy, uz], &kinds, origin, region);
        agreed(&self.comm, written)?;
        let path = pvti_path(dir, stem);
        let joined = if rank == 0 {
            let pieces: Vec<_> = (0..self.decomposition.ranks())
                .map(|r| {
                    let (origin, region) = piece_of(&self.decomposition.block(r), self.dims()[0]);
                    (origin, region.map(|r| r.len()), piece_name(stem, r))
                })
                .collect();
            let (f32s, f64s, bytes) = ([0f32; 0], [0f64; 0], [0u8; 0]);
            let real = match T::DTYPE {
                DType::F32 => VtiValues::F32(&f32s),
                DType::F64 => VtiValues::F64(&f64s),
            };
            let arrays = lattice_arrays(real, real, VtiValues::U8(&bytes));
            write_pvti(&path, self.dims(), &pieces, &arrays)
        } else {
            Ok(())
        };
        agreed(&self.comm, joined)?;
        Ok(path)
    }
}

/// A block's piece: its first point in the whole lattice and the local region written (all of
/// x; the owned y and z, one layer more above where the block has a neighbour that is not
/// across a periodic end).
fn piece_of(block: &Block, nx: usize) -> ([usize; 3], [Range<usize>; 3]) {
    let [y, z]: [Range<usize>; 2] = std::array::from_fn(|a| {
        let owned = block.owned_local(a);
        let more = block.halos[a][1] > 0 && block.owned[a].end < block.extent[a];
        owned.start..owned.end + usize::from(more)
    });
    (
        [0, block.owned[0].start, block.owned[1].start],
        [0..nx, y, z],
    )
}
