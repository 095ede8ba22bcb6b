//! [`Decomposition`]: how a grid is split over ranks. A Cartesian process grid over y and z
//! (x stays whole, so every rank's rows stay contiguous and its SIMD sweeps unchanged), blocks
//! as even as the sizes allow, and a halo of `halo` cells on each side that has a neighbour.
//! Pure arithmetic, shared by every rank, so all ranks agree on it without talking.

use std::ops::Range;

use crate::{Error, Result};

/// A grid of `dims` split over `procs[0] × procs[1]` ranks along y and z.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition {
    /// The whole grid.
    pub dims: [usize; 3],
    /// Ranks along y and along z.
    pub procs: [usize; 2],
    /// Halo depth in cells on each side that has a neighbour: the stencil radius times the
    /// steps advanced between exchanges.
    pub halo: usize,
}

/// One rank's part: the cells it owns and the local array it computes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its coordinates in the process grid (y, z).
    pub coords: [usize; 2],
    /// Global y and z ranges it owns.
    pub owned: [Range<usize>; 2],
    /// Global y and z ranges of its local array: the owned ranges widened by the halo on each
    /// side that has a neighbour.
    pub local: [Range<usize>; 2],
}

impl Block {
    /// The local array's dimensions.
    pub fn local_dims(&self, nx: usize) -> [usize; 3] {
        [nx, self.local[0].len(), self.local[1].len()]
    }

    /// Halo depths below and above along y and z (0 on a face of the whole grid).
    pub fn halos(&self) -> [[usize; 2]; 2] {
        std::array::from_fn(|a| {
            [
                self.owned[a].start - self.local[a].start,
                self.local[a].end - self.owned[a].end,
            ]
        })
    }
}

impl Decomposition {
    /// The split of `dims` over `ranks` that exchanges the fewest cells, preferring z (whole
    /// planes) on ties. Errors when no split leaves every block thicker than `halo` along a
    /// split axis.
    pub fn new(dims: [usize; 3], ranks: usize, halo: usize) -> Result<Decomposition> {
        if ranks == 0 {
            return Err(Error::InvalidArgument(
                "no ranks to split the grid over".into(),
            ));
        }
        let cost = |[py, pz]: [usize; 2]| (py - 1) * dims[2] + (pz - 1) * dims[1];
        (1..=ranks)
            .filter(|&py| ranks.is_multiple_of(py))
            .map(|py| [py, ranks / py])
            .filter(|&p| Self::fits(dims, p, halo))
            .min_by_key(|&p| (cost(p), p[0]))
            .map(|procs| Decomposition { dims, procs, halo })
            .ok_or_else(|| Self::too_many(dims, ranks, halo))
    }

    /// The split over the given process grid; the same errors as [`Decomposition::new`].
    pub fn with_procs(dims: [usize; 3], procs: [usize; 2], halo: usize) -> Result<Decomposition> {
        if procs.contains(&0) || !Self::fits(dims, procs, halo) {
            return Err(Self::too_many(dims, procs[0] * procs[1], halo));
        }
        Ok(Decomposition { dims, procs, halo })
    }

    /// Whether every block of the split is thicker than `halo` along each split axis: a
    /// neighbour's whole halo then comes from one block, and every local array (block and
    /// halo) is at least `2·halo + 1` thick, as a grid for a stencil of radius `halo` must be.
    fn fits(dims: [usize; 3], procs: [usize; 2], halo: usize) -> bool {
        (0..2).all(|a| procs[a] == 1 || dims[a + 1] / procs[a] > halo)
    }

    fn too_many(dims: [usize; 3], ranks: usize, halo: usize) -> Error {
        Error::InvalidArgument(format!(
            "{ranks} ranks cannot split a {}x{}x{} grid over y and z into blocks thicker than \
             the halo of {halo} cells (stencil radius × steps between exchanges); use fewer \
             ranks or a larger grid",
            dims[0], dims[1], dims[2]
        ))
    }

    /// Ranks in the process grid.
    pub fn ranks(&self) -> usize {
        self.procs[0] * self.procs[1]
    }

    /// The rank at process coordinates `c` (y fastest).
    pub fn rank_of(&self, c: [usize; 2]) -> usize {
        c[0] + self.procs[0] * c[1]
    }

    /// The process coordinates of `rank`.
    pub fn coords(&self, rank: usize) -> [usize; 2] {
        [rank % self.procs[0], rank / self.procs[0]]
    }

    /// The neighbour of `rank` one step down (`side` 0) or up (1) along y (`axis` 0) or z (1).
    pub fn neighbour(&self, rank: usize, axis: usize, side: usize) -> Option<usize> {
        let mut c = self.coords(rank);
        match side {
            0 if c[axis] > 0 => c[axis] -= 1,
            1 if c[axis] + 1 < self.procs[axis] => c[axis] += 1,
            _ => return None,
        }
        Some(self.rank_of(c))
    }

    /// What `rank` owns and computes on. Uneven sizes give the first blocks one cell more.
    pub fn block(&self, rank: usize) -> Block {
        let coords = self.coords(rank);
        let owned: [Range<usize>; 2] = std::array::from_fn(|a| {
            let (n, p, c) = (self.dims[a + 1], self.procs[a], coords[a]);
            let (base, extra) = (n / p, n % p);
            let start = c * base + c.min(extra);
            start..start + base + usize::from(c < extra)
        });
        let local = std::array::from_fn(|a| {
            let lo = if coords[a] > 0 { self.halo } else { 0 };
            let hi = if coords[a] + 1 < self.procs[a] {
                self.halo
            } else {
                0
            };
            owned[a].start - lo..owned[a].end + hi
        });
        Block {
            coords,
            owned,
            local,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_grid_once_and_halos_reach_only_neighbours() {
        let d = Decomposition::with_procs([9, 23, 17], [3, 2], 4).unwrap();
        let mut owner = vec![usize::MAX; 23 * 17];
        for r in 0..d.ranks() {
            let b = d.block(r);
            assert_eq!(d.rank_of(b.coords), r);
            for z in b.owned[1].clone() {
                for y in b.owned[0].clone() {
                    assert_eq!(owner[y + 23 * z], usize::MAX, "({y}, {z}) owned twice");
                    owner[y + 23 * z] = r;
                }
            }
            // Uneven: 23 = 8 + 8 + 7 along y, 17 = 9 + 8 along z.
            assert!([7, 8].contains(&b.owned[0].len()) && [8, 9].contains(&b.owned[1].len()));
            for a in 0..2 {
                let [lo, hi] = b.halos()[a];
                assert_eq!(lo > 0, d.neighbour(r, a, 0).is_some());
                assert_eq!(hi > 0, d.neighbour(r, a, 1).is_some());
                assert!(lo == 0 || lo == 4);
            }
        }
        assert!(owner.iter().all(|&r| r != usize::MAX));
    }

    #[test]
    fn the_split_exchanges_least_and_prefers_whole_planes() {
        // A cube: 4 ranks as 2 × 2 (two cuts of 64²) beat 1 × 4 (three); 2 ranks cut z once.
        assert_eq!(Decomposition::new([64; 3], 4, 2).unwrap().procs, [2, 2]);
        assert_eq!(Decomposition::new([64; 3], 2, 2).unwrap().procs, [1, 2]);
        // A grid long in y is cut along y.
        assert_eq!(
            Decomposition::new([16, 256, 16], 4, 2).unwrap().procs,
            [4, 1]
        );
        // 8 ranks, halo 4: 1 × 8 leaves z blocks of 2; 4 × 2 cuts 3·16 + 32 = 80 cells of
        // face against 112 for 2 × 4 and 8 × 1.
        assert_eq!(
            Decomposition::new([32, 32, 16], 8, 4).unwrap().procs,
            [4, 2]
        );
    }

    #[test]
    fn blocks_thinner_than_the_halo_are_refused() {
        let err = Decomposition::new([8, 8, 8], 16, 4).unwrap_err();
        assert!(err.to_string().contains("16 ranks cannot split"), "{err}");
        assert!(Decomposition::with_procs([8, 8, 8], [1, 3], 2).is_err());
        assert!(Decomposition::with_procs([8, 8, 8], [1, 2], 4).is_err());
        assert!(Decomposition::with_procs([8, 8, 8], [1, 2], 3).is_ok());
        assert!(Decomposition::new([8, 8, 8], 0, 1).is_err());
    }
}
