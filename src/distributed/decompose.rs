//! [`Decomposition`]: how a grid is split over ranks. A Cartesian process grid over y and z
//! (x stays whole, so every rank's rows stay contiguous and its SIMD sweeps unchanged), blocks
//! as even as the sizes allow, and a halo of `halo` cells on each side that has a neighbour
//! (across the grid's faces too, on a periodic axis split over several ranks). Pure
//! arithmetic, shared by every rank, so all ranks agree on it without talking.

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
    /// Whether y and z are periodic: the first and last ranks along a periodic axis split over
    /// several are neighbours.
    pub periodic: [bool; 2],
}

/// One rank's part: the cells it owns and the local array it computes on, which is the owned
/// block widened by a halo on each side that has a neighbour. Local y and z indices run from 0
/// at the start of the low halo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its coordinates in the process grid (y, z).
    pub coords: [usize; 2],
    /// Global y and z ranges it owns.
    pub owned: [Range<usize>; 2],
    /// Halo depths below and above along y and z (0 on a side without a neighbour).
    pub halos: [[usize; 2]; 2],
    /// The whole grid's y and z sizes.
    pub extent: [usize; 2],
}

impl Block {
    /// The local array's dimensions.
    pub fn local_dims(&self, nx: usize) -> [usize; 3] {
        [nx, self.local_len(0), self.local_len(1)]
    }

    /// The local array's size along y (`axis` 0) or z (1).
    pub fn local_len(&self, axis: usize) -> usize {
        self.halos[axis][0] + self.owned[axis].len() + self.halos[axis][1]
    }

    /// The local indices of the owned cells along `axis`.
    pub fn owned_local(&self, axis: usize) -> Range<usize> {
        let lo = self.halos[axis][0];
        lo..lo + self.owned[axis].len()
    }

    /// The global y (`axis` 0) or z (1) coordinate of local index `i`, wrapped across a
    /// periodic axis's ends.
    pub fn global(&self, axis: usize, i: usize) -> usize {
        let n = self.extent[axis];
        (self.owned[axis].start + n + i - self.halos[axis][0]) % n
    }

    /// `error` with the cell of a non-finite value ([`Error::NonFinite`]) in the whole grid's
    /// coordinates instead of the local array's (halos included); other errors as they are.
    #[cfg(feature = "mpi")]
    pub(crate) fn in_whole_grid(&self, error: Error) -> Error {
        match error {
            Error::NonFinite { step, cell, value } => Error::NonFinite {
                step,
                cell: [cell[0], self.global(0, cell[1]), self.global(1, cell[2])],
                value,
            },
            other => other,
        }
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
            .map(|procs| Decomposition {
                dims,
                procs,
                halo,
                periodic: [false; 2],
            })
            .ok_or_else(|| Self::too_many(dims, ranks, halo))
    }

    /// The split over the given process grid; the same errors as [`Decomposition::new`].
    pub fn with_procs(dims: [usize; 3], procs: [usize; 2], halo: usize) -> Result<Decomposition> {
        if procs.contains(&0) || !Self::fits(dims, procs, halo) {
            return Err(Self::too_many(dims, procs[0] * procs[1], halo));
        }
        Ok(Decomposition {
            dims,
            procs,
            halo,
            periodic: [false; 2],
        })
    }

    /// The same split with y and z periodic as `periodic` says.
    pub fn with_periodic(self, periodic: [bool; 2]) -> Decomposition {
        Decomposition { periodic, ..self }
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
             the halo of {} (stencil radius × steps between exchanges); use fewer ranks or a \
             larger grid",
            dims[0],
            dims[1],
            dims[2],
            crate::error::count(halo, "cell")
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

    /// The neighbour of `rank` one step down (`side` 0) or up (1) along y (`axis` 0) or z (1),
    /// across the grid's faces on a periodic axis split over several ranks.
    pub fn neighbour(&self, rank: usize, axis: usize, side: usize) -> Option<usize> {
        let mut c = self.coords(rank);
        let p = self.procs[axis];
        let wraps = self.periodic[axis] && p > 1;
        match side {
            0 if c[axis] > 0 => c[axis] -= 1,
            0 if wraps => c[axis] = p - 1,
            1 if c[axis] + 1 < p => c[axis] += 1,
            1 if wraps => c[axis] = 0,
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
        let halos = std::array::from_fn(|a| {
            [0, 1].map(|side| {
                if self.neighbour(rank, a, side).is_some() {
                    self.halo
                } else {
                    0
                }
            })
        });
        Block {
            coords,
            owned,
            halos,
            extent: [self.dims[1], self.dims[2]],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blow-up on a rank names the cell of the whole grid, as one process would: the
    /// local array's y and z (halos included) mapped through the block, x and the rest kept.
    #[cfg(feature = "mpi")]
    #[test]
    fn a_non_finite_cell_is_named_in_the_whole_grid() {
        let d = Decomposition::with_procs([24, 24, 24], [2, 2], 3).unwrap();
        let b = (0..d.ranks())
            .map(|r| d.block(r))
            .find(|b| b.coords == [1, 1])
            .unwrap();
        assert_eq!(b.halos.map(|h| h[0]), [3, 3], "neighbours below in y and z");
        let local = [22, b.halos[0][0] + 2, b.halos[1][0] + 4];
        let e = Error::NonFinite {
            step: 28,
            cell: local,
            value: f64::NEG_INFINITY,
        };
        match b.in_whole_grid(e) {
            Error::NonFinite { step, cell, value } => {
                assert_eq!(step, 28);
                assert_eq!(cell, [22, b.owned[0].start + 2, b.owned[1].start + 4]);
                assert_eq!(value, f64::NEG_INFINITY);
            }
            other => panic!("{other}"),
        }
        let other = Error::ZeroSteps;
        assert!(matches!(b.in_whole_grid(other), Error::ZeroSteps));
    }

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
                let [lo, hi] = b.halos[a];
                assert_eq!(lo > 0, d.neighbour(r, a, 0).is_some());
                assert_eq!(hi > 0, d.neighbour(r, a, 1).is_some());
                assert!(lo == 0 || lo == 4);
            }
        }
        assert!(owner.iter().all(|&r| r != usize::MAX));
    }

    #[test]
    fn periodic_axes_join_the_first_and_last_ranks() {
        let d = Decomposition::with_procs([8, 12, 20], [1, 4], 2)
            .unwrap()
            .with_periodic([false, true]);
        assert_eq!(d.neighbour(0, 1, 0), Some(3));
        assert_eq!(d.neighbour(3, 1, 1), Some(0));
        assert_eq!(d.neighbour(0, 0, 0), None);
        let b = d.block(0);
        assert_eq!(b.halos, [[0, 0], [2, 2]]);
        assert_eq!(b.local_dims(8), [8, 12, 9]);
        // Local z 0 and 1 are the last two planes of the grid; 2 is the first owned.
        assert_eq!([0, 1, 2, 8].map(|i| b.global(1, i)), [18, 19, 0, 6]);
        assert_eq!(b.owned_local(1), 2..7);
        // One rank along a periodic axis has no halo: the local array wraps by itself.
        let alone = Decomposition::with_procs([8, 12, 20], [1, 1], 2)
            .unwrap()
            .with_periodic([true, true]);
        assert_eq!(alone.block(0).halos, [[0, 0], [0, 0]]);
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
