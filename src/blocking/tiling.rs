//! Geometry of 3.5D blocking: how the XY interior is cut into tiles, which region of a tile
//! each time level computes, and how much work the overlapping ghost zones redo (κ).
//!
//! A tile is given by its *loaded* size `dim_X × dim_Y` (the 3.5D paper's convention): with
//! `dim_t` time levels per pass, the valid output is `dim - 2·R·dim_t` wide, and level `j`
//! computes the output region grown by `R·(dim_t - j)` on each side, clipped to the interior.

use std::ops::Range;

/// One tile: the part of the XY interior whose final values it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    /// Output columns.
    pub(crate) x: Range<usize>,
    /// Output rows.
    pub(crate) y: Range<usize>,
}

/// The tiles of one pass and the buffer size every tile fits in. The tiles are the products
/// of the output ranges along x and along y, formed on demand: a small tile on a large grid
/// has more tiles than are worth listing (40,000² cells in 3×3 tiles: 1.6·10⁹).
#[derive(Clone, Debug)]
pub(crate) struct Tiling {
    /// Output columns of the tiles along x.
    xs: Vec<Range<usize>>,
    /// Output rows of the tiles along y.
    ys: Vec<Range<usize>>,
    /// Width of the widest tile's buffered region (output + ghost zones + boundary columns).
    pub(crate) buf_w: usize,
    /// Height of the tallest tile's buffered region.
    pub(crate) buf_h: usize,
}

/// Cuts `[r, n - r)` into the fewest near-equal pieces no longer than `max_len`.
pub(crate) fn split_even(n: usize, r: usize, max_len: usize) -> Vec<Range<usize>> {
    split_into(n, r, (n - 2 * r).div_ceil(max_len.max(1)))
}

/// Cuts `[r, n - r)` into `pieces` near-equal pieces.
fn split_into(n: usize, r: usize, pieces: usize) -> Vec<Range<usize>> {
    let len = n - 2 * r;
    (0..pieces)
        .map(|i| r + i * len / pieces..r + (i + 1) * len / pieces)
        .collect()
}

/// Work units (one tile's chunk of planes) each tile group should get per pass; see
/// [`z_chunk_count`].
pub(crate) const UNITS_PER_GROUP: usize = 6;

/// Into how many chunks a blocked pass cuts the `planes` planes it computes along z, so that
/// `groups` tile groups sharing `tiles` tiles get about [`UNITS_PER_GROUP`] units each. A group
/// claims a unit (a tile's chunk) at a time, so fast cores take more units than slow ones: with
/// whole tiles only, 16 one-thread groups on 32 tiles ran each pass at the pace of the slowest core
/// (on the H100 machine's 16-core host its last thread finished 20-35% after the median one; its
/// cores run the same kernel at 3.7-7.0 GUPS when all are busy). Each chunk recomputes a halo of
/// `grow·(dim_t − j)` planes on each side at level `j`, so chunks stay at least `16·grow·dim_t`
/// planes long on average (the lattice's [`tapered_chunks`] run from about 1.6 to 0.55 times that):
/// at most `(dim_t − 1) / (16·dim_t)` more planes computed (3% at `dim_t` 2, 5% at 4) and `1 / 8`
/// more read by level 1 (2·R·dim_t halo planes per chunk). The planner's model leaves that cost
/// out. One group, or one level per pass, needs no chunks.
pub(crate) fn z_chunk_count(
    planes: usize,
    grow: usize,
    dim_t: usize,
    tiles: usize,
    groups: usize,
) -> usize {
    if groups <= 1 || dim_t <= 1 {
        return 1;
    }
    let wanted = (UNITS_PER_GROUP * groups).div_ceil(tiles.max(1));
    let most = (planes / (16 * grow.max(1) * dim_t)).max(1);
    wanted.clamp(1, most)
}

/// The output planes of each of `count` near-equal chunks of `[r, n - r)` (one per plane when
/// there are fewer planes than chunks).
pub(crate) fn z_chunks(n: usize, r: usize, count: usize) -> Vec<Range<usize>> {
    split_into(n, r, count.clamp(1, (n - 2 * r).max(1)))
}

/// How much longer a pass's first chunk of z is than its last in [`tapered_chunks`].
const TAPER: f64 = 3.0;

/// The output planes of `count` chunks of `[r, n - r)` (one per plane when there are fewer
/// planes than chunks) whose lengths fall geometrically from about [`TAPER`] times the last
/// one's, each at least one plane. Groups that claim units chunk by chunk take the short ones
/// last, so the cores that finish early wait less for the last units of a pass (guided
/// scheduling); each chunk's halo costs the same whatever its length, so the total work is
/// that of `count` equal chunks.
pub(crate) fn tapered_chunks(n: usize, r: usize, count: usize) -> Vec<Range<usize>> {
    let len = (n - 2 * r).max(1);
    let count = count.clamp(1, len);
    if count == 1 {
        return z_chunks(n, r, 1);
    }
    let weight = |k: usize| TAPER.powf((count - 1 - k) as f64 / (count - 1) as f64);
    let total: f64 = (0..count).map(weight).sum();
    // One plane each and the floor of the chunk's share of the rest (non-increasing, as the
    // weights are), then what the floors left over one plane each to the first chunks.
    let extra = len - count;
    let mut lens: Vec<usize> = (0..count)
        .map(|k| 1 + (extra as f64 * weight(k) / total) as usize)
        .collect();
    let short = len - lens.iter().sum::<usize>();
    for l in lens.iter_mut().take(short) {
        *l += 1;
    }
    let mut start = r;
    lens.into_iter()
        .map(|l| {
            start += l;
            start - l..start
        })
        .collect()
}

/// The output range grown by `grow` on each side and clipped to the interior `[r, n - r)`.
#[inline]
pub(crate) fn grown(out: &Range<usize>, grow: usize, r: usize, n: usize) -> Range<usize> {
    out.start.saturating_sub(grow).max(r)..(out.end + grow).min(n - r)
}

impl Tiling {
    /// Tiles for a grid of `dims`, radius `r`, loaded tile size `tile` and `dim_t` levels per
    /// pass. The caller guarantees `tile[i] > 2·r·dim_t`.
    pub(crate) fn new(dims: [usize; 3], r: usize, tile: [usize; 2], dim_t: usize) -> Tiling {
        let ghost = 2 * r * dim_t;
        let xs = split_even(dims[0], r, tile[0] - ghost);
        let ys = split_even(dims[1], r, tile[1] - ghost);
        let buf = |ranges: &[Range<usize>], n: usize| {
            ranges
                .iter()
                .map(|o| o.start.saturating_sub(r * dim_t)..(o.end + r * dim_t).min(n))
                .map(|b| b.len())
                .max()
                .unwrap_or(0)
        };
        let (buf_w, buf_h) = (buf(&xs, dims[0]), buf(&ys, dims[1]));
        Tiling {
            xs,
            ys,
            buf_w,
            buf_h,
        }
    }

    /// The number of tiles.
    pub(crate) fn len(&self) -> usize {
        self.xs.len() * self.ys.len()
    }

    /// Tile `i` (`i < len()`), x fastest.
    pub(crate) fn tile(&self, i: usize) -> Tile {
        Tile {
            x: self.xs[i % self.xs.len()].clone(),
            y: self.ys[i / self.xs.len()].clone(),
        }
    }

    /// Every tile, x fastest.
    #[cfg(test)]
    pub(crate) fn tiles(&self) -> impl Iterator<Item = Tile> + '_ {
        (0..self.len()).map(|i| self.tile(i))
    }
}

impl Tile {
    /// Columns that level `j` (1-based) of a pass with `dim_t` levels computes.
    #[inline]
    pub(crate) fn level_x(&self, j: usize, dim_t: usize, r: usize, nx: usize) -> Range<usize> {
        grown(&self.x, r * (dim_t - j), r, nx)
    }

    /// Rows that level `j` of a pass with `dim_t` levels computes.
    #[inline]
    pub(crate) fn level_y(&self, j: usize, dim_t: usize, r: usize, ny: usize) -> Range<usize> {
        grown(&self.y, r * (dim_t - j), r, ny)
    }

    /// Global (x, y) of the first cell of this tile's buffered region.
    #[inline]
    pub(crate) fn buffer_origin(&self, dim_t: usize, r: usize) -> [usize; 2] {
        [
            self.x.start.saturating_sub(r * dim_t),
            self.y.start.saturating_sub(r * dim_t),
        ]
    }
}

/// κ: cells computed per useful cell update for this tiling (1.0 = no redundant work), counted
/// exactly over the actual tiles rather than with eq. (2)'s infinite-grid approximation. A
/// tile's level is the product of its x and y ranges, so the sum over the tiles is the product
/// of the sums along each axis.
pub(crate) fn redundancy(dims: [usize; 3], r: usize, tile: [usize; 2], dim_t: usize) -> f64 {
    let tiling = Tiling::new(dims, r, tile, dim_t);
    let computed: f64 = (1..=dim_t)
        .map(|j| {
            let grow = r * (dim_t - j);
            let along = |ranges: &[Range<usize>], n: usize| -> usize {
                ranges.iter().map(|o| grown(o, grow, r, n).len()).sum()
            };
            along(&tiling.xs, dims[0]) as f64 * along(&tiling.ys, dims[1]) as f64
        })
        .sum();
    let useful = dim_t as f64 * (dims[0] - 2 * r) as f64 * (dims[1] - 2 * r) as f64;
    computed / useful
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_interior_once() {
        let dims = [37, 29, 5];
        for (r, dim_t, tile) in [
            (1, 1, [8, 8]),
            (1, 3, [16, 9]),
            (2, 2, [64, 64]),
            (4, 1, [10, 12]),
        ] {
            let t = Tiling::new(dims, r, tile, dim_t);
            let mut hits = vec![0u8; dims[0] * dims[1]];
            for tile_ in t.tiles() {
                assert!(tile_.x.len() + 2 * r * dim_t <= tile[0]);
                for y in tile_.y.clone() {
                    for x in tile_.x.clone() {
                        hits[y * dims[0] + x] += 1;
                    }
                }
            }
            for y in 0..dims[1] {
                for x in 0..dims[0] {
                    let interior = (r..dims[0] - r).contains(&x) && (r..dims[1] - r).contains(&y);
                    assert_eq!(
                        hits[y * dims[0] + x],
                        interior as u8,
                        "r={r} dim_t={dim_t} ({x},{y})"
                    );
                }
            }
        }
    }

    #[test]
    fn levels_shrink_by_r_per_step() {
        let t = Tile { x: 10..20, y: 5..8 };
        assert_eq!(t.level_x(3, 3, 2, 100), 10..20);
        assert_eq!(t.level_x(1, 3, 2, 100), 6..24);
        assert_eq!(t.level_y(1, 3, 2, 100), 2..12, "clipped to the interior");
    }

    #[test]
    fn tapered_chunks_cover_the_interior_longest_first() {
        let mut cases = vec![
            (256, 0, 5),
            (23, 1, 3),
            (10, 0, 10),
            (7, 0, 9),
            (1, 0, 3),
            (64, 2, 4),
        ];
        // Every small case, and those where rounding cumulative shares made a later chunk
        // longer than the one before it.
        cases.extend((1..300).flat_map(|n| (1..40).map(move |count| (n, 0, count))));
        cases.extend([(851, 0, 26), (6, 0, 3), (40, 0, 9)]);
        for (n, r, count) in cases {
            let chunks = tapered_chunks(n, r, count);
            assert_eq!(chunks.len(), count.clamp(1, n - 2 * r), "{n} {r} {count}");
            assert_eq!(chunks[0].start, r);
            assert_eq!(chunks.last().unwrap().end, n - r);
            for w in chunks.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert!(w[0].len() >= w[1].len(), "{chunks:?}");
            }
            assert!(chunks.iter().all(|c| !c.is_empty()));
        }
        let lens: Vec<usize> = tapered_chunks(256, 0, 5).iter().map(|c| c.len()).collect();
        assert_eq!(lens.iter().sum::<usize>(), 256);
        let ratio = lens[0] as f64 / lens[4] as f64;
        assert!((ratio - TAPER).abs() < 0.2, "{lens:?}");
    }

    #[test]
    fn chunks_give_each_group_several_units_but_stay_long() {
        // 32 tiles, 16 groups: 96 units wanted, 3 chunks of the 510 planes.
        assert_eq!(z_chunk_count(510, 1, 4, 32, 16), 3);
        // Few planes: chunks of at least 16·R·dim_t planes.
        assert_eq!(z_chunk_count(100, 1, 4, 1, 16), 1);
        assert_eq!(z_chunk_count(200, 1, 4, 1, 16), 3);
        // Enough tiles already, one group, or one level per pass: no chunks.
        assert_eq!(z_chunk_count(510, 1, 4, 200, 16), 1);
        assert_eq!(z_chunk_count(510, 1, 4, 2, 1), 1);
        assert_eq!(z_chunk_count(510, 1, 1, 2, 16), 1);
        let chunks = z_chunks(23, 1, 3);
        assert_eq!(chunks, vec![1..8, 8..15, 15..22]);
        assert_eq!(z_chunks(5, 2, 3), vec![2..3], "one plane, one chunk");
        assert_eq!(
            z_chunks(6, 1, 3),
            vec![1..2, 2..3, 3..5],
            "exactly the count asked for"
        );
    }

    #[test]
    fn one_tile_has_no_redundancy() {
        assert_eq!(redundancy([50, 50, 50], 1, [64, 64], 2), 1.0);
        let k = redundancy([514, 514, 8], 1, [100, 100], 2);
        assert!(k > 1.0 && k < 1.2, "{k}");
    }
}
