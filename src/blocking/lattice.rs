//! Geometry of the blocked lattice-Boltzmann engine: how the XY plane is cut into tiles and
//! which region each time level of a pass computes.
//!
//! Unlike a stencil grid, a lattice has no fixed boundary layer: every node is updated, and
//! what lies beyond a face depends on the axis.
//!
//! * **Closed axis** (`Clamp`): level `j` of a pass of `d` levels (`dim_t`) computes the
//!   tile's output grown by `d − j` on each side, clipped to the lattice (the 3.5D ghost zones,
//!   R = 1);
//!   reads past the face are clamped, as in every engine.
//! * **Periodic axis covered by one tile** (`Whole`): every level computes the whole axis and
//!   reads wrap around inside the level's own buffer, so there are no ghost zones at all.
//!   Periodic x is always handled this way (the planner gives periodic-x lattices full-width
//!   tiles).
//! * **Periodic axis cut into several tiles** (`Ghost`, y only): level `j` computes the
//!   output grown by `d − j` *without* clipping, in unwrapped coordinates (rows −1, −2, ... and
//!   ny, ny + 1, ... are ghost copies); level 1 reads the lattice with wrapped coordinates and
//!   later levels read their ring buffers directly.
//!
//! Along z the pipeline streams one chunk of planes at a time (see
//! `crate::blocking::tiling::z_chunk_count`), and the levels below the last also compute `d − j`
//! halo planes beyond each end of the chunk: clipped to the lattice on a closed axis; on a
//! periodic one in unwrapped coordinates (a chunk starting at plane 0 has level 1 start at
//! z = −(d − 1)), because plane −1 of level j is needed before plane nz − 1 of level j could be
//! computed.

use std::ops::Range;

use crate::blocking::tiling::{split_even, tapered_chunks};

/// How a blocked level treats one axis (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A closed axis: ghost zones clipped to the lattice.
    Clamp,
    /// A periodic axis in one tile: no ghost zones, reads wrap.
    Whole,
    /// A periodic axis in several tiles: unclipped ghost zones in unwrapped coordinates.
    Ghost,
}

/// The tiles of one pass and how levels grow on each axis. A tile's output region is the
/// product of one range along x and one along y, formed on demand (see
/// [`crate::blocking::tiling::Tiling`]).
#[derive(Clone, Debug)]
pub(crate) struct Blocking {
    /// Output ranges of the tiles along x and along y.
    pieces: [Vec<Range<isize>>; 2],
    /// Mode of x and y.
    pub(crate) modes: [Mode; 2],
    /// Whether z is periodic.
    pub(crate) z_periodic: bool,
    /// Time levels per pass.
    pub(crate) dim_t: usize,
    /// Lattice dimensions.
    pub(crate) dims: [usize; 3],
    /// Largest level-1 extent of any tile in x and y (ring rows are wider where a tile's first
    /// column is not at a cache line: see `lbm::blocked::ring_origin`).
    pub(crate) buf: [usize; 2],
}

impl Blocking {
    /// Tiles for a lattice of `dims` with `periodic` axes, loaded tile size `tile` (output
    /// `tile − 2·dim_t` per side) and `dim_t` levels per pass. The caller guarantees
    /// `tile[i] > 2·dim_t`; a periodic x axis is never cut.
    pub(crate) fn new(
        dims: [usize; 3],
        periodic: [bool; 3],
        tile: [usize; 2],
        dim_t: usize,
    ) -> Blocking {
        let pieces = |a: usize| -> Vec<Range<isize>> {
            if a == 0 && periodic[0] {
                return std::iter::once(0..dims[0] as isize).collect();
            }
            split_even(dims[a], 0, tile[a] - 2 * dim_t)
                .into_iter()
                .map(|r| r.start as isize..r.end as isize)
                .collect()
        };
        let (xs, ys) = (pieces(0), pieces(1));
        let mode = |a: usize, count: usize| match (periodic[a], count) {
            (false, _) => Mode::Clamp,
            (true, 1) => Mode::Whole,
            (true, _) => Mode::Ghost,
        };
        let modes = [mode(0, xs.len()), mode(1, ys.len())];
        let mut b = Blocking {
            pieces: [xs, ys],
            modes,
            z_periodic: periodic[2],
            dim_t,
            dims,
            buf: [0, 0],
        };
        b.buf = [0, 1].map(|a| {
            b.pieces[a]
                .iter()
                .map(|out| b.level_along(out, a, 1).len())
                .max()
                .unwrap_or(0)
        });
        b
    }

    /// The number of tiles.
    pub(crate) fn len(&self) -> usize {
        self.pieces[0].len() * self.pieces[1].len()
    }

    /// Tile `i` (`i < len()`), x fastest: its output region (x, y).
    pub(crate) fn tile(&self, i: usize) -> [Range<isize>; 2] {
        let [xs, ys] = &self.pieces;
        [xs[i % xs.len()].clone(), ys[i / xs.len()].clone()]
    }

    /// Every tile, x fastest.
    pub(crate) fn tiles(&self) -> impl Iterator<Item = [Range<isize>; 2]> + '_ {
        (0..self.len()).map(|i| self.tile(i))
    }

    /// One tile of each x range (the first row of tiles): what depends on a tile's columns
    /// only, over all tiles.
    pub(crate) fn first_row(&self) -> impl Iterator<Item = [Range<isize>; 2]> + '_ {
        self.tiles().take(self.pieces[0].len())
    }

    /// The range level `j` (1-based) of tile `t` computes along axis `a` (0 = x, 1 = y).
    #[inline]
    pub(crate) fn level(&self, t: &[Range<isize>; 2], a: usize, j: usize) -> Range<isize> {
        self.level_along(&t[a], a, j)
    }

    /// The range level `j` computes along axis `a` for a tile whose output range there is
    /// `out`.
    #[inline]
    fn level_along(&self, out: &Range<isize>, a: usize, j: usize) -> Range<isize> {
        let n = self.dims[a] as isize;
        let grow = (self.dim_t - j) as isize;
        match self.modes[a] {
            Mode::Clamp => (out.start - grow).max(0)..(out.end + grow).min(n),
            Mode::Whole => 0..n,
            Mode::Ghost => out.start - grow..out.end + grow,
        }
    }

    /// The output planes of each of `count` chunks of z (one per plane when there are fewer),
    /// longest first (see [`tapered_chunks`]): tile groups claim one tile's chunk at a time
    /// (see [`crate::blocking::tiling::z_chunk_count`]).
    pub(crate) fn z_chunks(&self, count: usize) -> Vec<Range<isize>> {
        tapered_chunks(self.dims[2], 0, count)
            .into_iter()
            .map(|r| r.start as isize..r.end as isize)
            .collect()
    }

    /// The planes level `j` computes for the output planes `chunk`: the chunk grown by
    /// `dim_t − j` on each side, clipped to the lattice on a closed z axis, in unwrapped
    /// coordinates on a periodic one.
    #[inline]
    pub(crate) fn z_range(&self, j: usize, chunk: &Range<isize>) -> Range<isize> {
        let n = self.dims[2] as isize;
        let grow = (self.dim_t - j) as isize;
        if self.z_periodic {
            chunk.start - grow..chunk.end + grow
        } else {
            (chunk.start - grow).max(0)..(chunk.end + grow).min(n)
        }
    }

    /// Pipeline steps for the output planes `chunk`, and level 1's first plane `z1`: level `j`
    /// computes plane `z1 + s − lag·(j − 1)` at step `s`.
    pub(crate) fn pipeline(&self, chunk: &Range<isize>, lag: usize) -> (usize, isize) {
        let z1 = self.z_range(1, chunk).start;
        ((chunk.end - z1) as usize + lag * (self.dim_t - 1), z1)
    }
}

/// κ: nodes computed per useful node update for this tiling, counted exactly.
pub(crate) fn redundancy(
    dims: [usize; 3],
    periodic: [bool; 3],
    tile: [usize; 2],
    dim_t: usize,
) -> f64 {
    // A tile's level is the product of its x and y ranges: the sum over the tiles is the
    // product of the sums along each axis.
    let b = Blocking::new(dims, periodic, tile, dim_t);
    let computed: f64 = (1..=dim_t)
        .map(|j| {
            let planes = b.z_range(j, &(0..dims[2] as isize)).len() as f64;
            let along = |a: usize| -> f64 {
                b.pieces[a]
                    .iter()
                    .map(|out| b.level_along(out, a, j).len() as f64)
                    .sum()
            };
            along(0) * along(1) * planes
        })
        .sum();
    computed / (dim_t as f64 * dims.iter().map(|&n| n as f64).product::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_axes_clip_and_cover() {
        let b = Blocking::new([40, 30, 10], [false; 3], [20, 16], 3);
        assert_eq!(b.modes, [Mode::Clamp, Mode::Clamp]);
        let mut hits = vec![0; 40 * 30];
        for t in &b.tiles().collect::<Vec<_>>() {
            assert!(t[0].len() <= 14 && t[1].len() <= 10);
            for y in t[1].clone() {
                for x in t[0].clone() {
                    hits[(y * 40 + x) as usize] += 1;
                }
            }
            // Level 1 grows by 2, clipped to the lattice.
            let l1 = b.level(t, 0, 1);
            assert_eq!(l1.start, (t[0].start - 2).max(0));
            assert_eq!(b.level(t, 0, 3), t[0]);
        }
        assert!(hits.iter().all(|&h| h == 1));
        let all = 0..10;
        assert_eq!(b.z_range(1, &all), 0..10);
        assert_eq!(b.pipeline(&all, 2), (14, 0));
        assert_eq!(b.pipeline(&all, 1), (12, 0));
        // A chunk inside: its halo of 2 planes at level 1, none at level 3.
        // Two chunks, the first about three times as long.
        let chunks = b.z_chunks(2);
        assert_eq!(chunks, vec![0..7, 7..10]);
        assert_eq!(b.z_range(1, &chunks[1]), 5..10);
        assert_eq!(b.z_range(3, &chunks[1]), 7..10);
        assert_eq!(b.pipeline(&chunks[1], 2), (5 + 4, 5));
    }

    #[test]
    fn periodic_axes() {
        let b = Blocking::new([40, 30, 10], [true, true, true], [20, 16], 3);
        assert_eq!(b.len(), 3, "x is never cut when periodic");
        assert_eq!(b.modes, [Mode::Whole, Mode::Ghost]);
        let t = &b.tile(0);
        assert_eq!(b.level(t, 0, 1), 0..40);
        assert_eq!(b.level(t, 1, 1), -2..12);
        let all = 0..10;
        assert_eq!(b.z_range(1, &all), -2..12);
        assert_eq!(b.z_range(3, &all), 0..10);
        assert_eq!(b.pipeline(&all, 2), (10 + 2 + 4, -2));
        assert_eq!(
            b.z_range(2, &(5..10)),
            4..11,
            "unclipped on a periodic axis"
        );
        let whole = Blocking::new([8, 8, 8], [false, true, false], [20, 20], 2);
        assert_eq!(whole.modes[1], Mode::Whole);
        assert_eq!(redundancy([64, 64, 64], [false; 3], [70, 70], 3), 1.0);
        assert!(redundancy([64, 64, 64], [true; 3], [70, 20], 3) > 1.0);
    }
}
