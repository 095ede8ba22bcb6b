//! Where the one-step wave kernels' tiles lie. At one step per pass the inner kernel computes
//! the tiles that lie inside the inner box (the cells outside every layer) in the plain form,
//! and the layers' kernel every other tile, inner cells included, in the layers' form, which
//! costs about twice as much per tile and plane. How many tiles lie inside the box depends on
//! where the tiling starts: on a 400×400×300 grid with 20-cell layers, 64-wide tiles starting
//! at the first updated column (4) hold 4 inner tiles per row and 3 layer tiles, and starting
//! at column 58 (−6 for the first) 5 and 2. So the tiling starts where the modelled cost of a
//! pass is least. The first tile may then begin before the updated cells or before the grid:
//! the kernels store no cell outside the updated ones and clamp their loads onto the grid.

use super::wave_source::WaveShape;

/// The layers' kernel's time per tile and plane over the inner kernel's. On the H200 (order 8
/// `f32`, 64×16 tiles, 20-cell layers) timings at 512³ and 1000³ fit 2.07.
const LAYER_COST: u64 = 2;

/// Where the tiles of a pass with `shape` start in x and y (the first tile's first cell) on a
/// grid of `dims` at radius `r` whose inner box spans `inner` (`[lo, hi)` per axis): `[r, r]`
/// for passes of several steps; at one step the origin at or below `r`, a multiple of `rx`
/// columns from it (vector loads start on such columns) and within one tile of it, whose pass
/// is modelled cheapest; among equals the x origin nearest to `r`, then the y origin.
pub(crate) fn tile_origin(
    shape: &WaveShape,
    r: usize,
    dims: [usize; 3],
    inner: [[usize; 2]; 3],
) -> [i64; 2] {
    match shape.dim_t {
        1 => cheapest(shape, r, dims, inner).0,
        _ => [r as i64; 2],
    }
}

/// The modelled work of a one-step pass with `shape` (tiles from [`tile_origin`]) per updated
/// cell, in units of the plain form's work per cell: 1 when every tile lies inside the inner
/// box and the tiles cover the updated cells exactly; more for the layers' tiles and for the
/// columns and rows of the first and last tiles outside the updated cells (1 on a grid with
/// none).
pub(crate) fn one_step_work(
    shape: &WaveShape,
    r: usize,
    dims: [usize; 3],
    inner: [[usize; 2]; 3],
) -> f64 {
    let updated: f64 = dims
        .iter()
        .map(|&n| n.saturating_sub(2 * r) as f64)
        .product();
    if updated == 0.0 {
        return 1.0;
    }
    let (_, cost) = cheapest(&WaveShape { dim_t: 1, ..*shape }, r, dims, inner);
    let tile = (shape.bx * shape.rx * shape.by * shape.ry) as f64;
    cost as f64 * tile / updated
}

/// The origin of [`tile_origin`] for a one-step `shape`, with its modelled cost in tile-planes
/// of the plain form.
fn cheapest(
    shape: &WaveShape,
    r: usize,
    dims: [usize; 3],
    inner: [[usize; 2]; 3],
) -> ([i64; 2], u64) {
    let r0 = r as i64;
    let (tw, ty) = (shape.bx * shape.rx, shape.by * shape.ry);
    let xs: Vec<Axis> = (0..tw / shape.rx)
        .map(|k| Axis::at(r0 - (k * shape.rx) as i64, tw, r, dims[0], inner[0]))
        .collect();
    let ys: Vec<Axis> = (0..ty)
        .map(|k| Axis::at(r0 - k as i64, ty, r, dims[1], inner[1]))
        .collect();
    let [z0, z1] = inner[2];
    let middle = z1.saturating_sub(z0) as u64;
    let outside = (dims[2] - 2 * r) as u64 - middle;
    let cost = |x: &Axis, y: &Axis| {
        let (all, inside) = (x.tiles * y.tiles, x.inside * y.inside);
        middle * (LAYER_COST * (all - inside) + inside) + outside * LAYER_COST * all
    };
    let mut best = ([r0, r0], u64::MAX);
    for x in &xs {
        for y in &ys {
            let c = cost(x, y);
            if c < best.1 {
                best = ([x.origin, y.origin], c);
            }
        }
    }
    best
}

/// The tiles of one axis from an origin.
struct Axis {
    /// The first tile's first cell.
    origin: i64,
    /// Tiles covering the updated cells.
    tiles: u64,
    /// Of those, the tiles inside the inner box.
    inside: u64,
}

impl Axis {
    /// Tiles of `w` cells from `origin` covering the updated cells `[r, n − r)` of an axis of
    /// `n` cells whose inner box spans `[lo, hi)`.
    fn at(origin: i64, w: usize, r: usize, n: usize, [lo, hi]: [usize; 2]) -> Self {
        let w = w as i64;
        let tiles = (n as i64 - r as i64 - origin + w - 1).div_euclid(w);
        // Tile k spans [origin + k·w, origin + (k + 1)·w): inside when lo ≤ its start and its
        // end ≤ hi.
        let first = (lo as i64 - origin + w - 1).div_euclid(w);
        let last = (hi as i64 - origin - w).div_euclid(w);
        Axis {
            origin,
            tiles: tiles.max(0) as u64,
            inside: (last - first + 1).max(0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planner's one-step shape at radius 4 (32×8 threads of 2 rows), with `rx` cells per
    /// thread along x.
    fn one_step(rx: usize) -> WaveShape {
        WaveShape {
            dim_t: 1,
            bx: 32,
            by: 8,
            ry: 2,
            rx,
            hz: 32,
        }
    }

    /// The counts of tiles along one axis, checked against listing the tiles.
    #[test]
    fn an_axis_counts_its_tiles_and_those_inside_the_box() {
        for (origin, w, r, n, box_) in [
            (4, 64, 4, 400, [21, 379]),
            (-42, 64, 4, 400, [21, 379]),
            (3, 5, 3, 17, [6, 11]),
            (-1, 5, 3, 17, [3, 14]),
            (2, 8, 2, 30, [9, 9]),
        ] {
            let a = Axis::at(origin, w, r, n, box_);
            let starts: Vec<i64> = (0..)
                .map(|k| origin + k * w as i64)
                .take_while(|s| *s < (n - r) as i64)
                .collect();
            let inside = starts
                .iter()
                .filter(|s| **s >= box_[0] as i64 && **s + w as i64 <= box_[1] as i64)
                .count();
            assert_eq!(a.tiles, starts.len() as u64, "{origin} {w} {n}");
            assert_eq!(a.inside, inside as u64, "{origin} {w} {n}");
        }
    }

    /// On 400×400×300 with 20-cell layers the tiling moves so that five 64-wide tiles lie in
    /// the inner box per row instead of four; on 1000³ and 512³, where starting at the first
    /// updated column is already the cheapest, it stays.
    #[test]
    fn the_tiling_starts_where_the_pass_is_cheapest() {
        let shape = one_step(2);
        let inner = |n: usize| [21, n - 21];
        let at = |d: [usize; 3]| tile_origin(&shape, 4, d, [inner(d[0]), inner(d[1]), inner(d[2])]);
        let o = at([400, 400, 300]);
        assert_eq!(o[0], -6, "the nearest origin to 4 with five inner tiles");
        let x = Axis::at(o[0], 64, 4, 400, inner(400));
        assert_eq!((x.tiles, x.inside), (7, 5));
        assert_eq!(at([1000, 1000, 1000]), [4, 4]);
        assert_eq!(at([512, 512, 512]), [4, 4]);
        // 12-cell layers on 137×70×60 (a case of tests/gpu_wave.rs): the first tile starts
        // before the grid.
        let thin = |n: usize| [13, n - 13];
        assert_eq!(
            tile_origin(&shape, 4, [137, 70, 60], [thin(137), thin(70), thin(60)]),
            [-4, 4]
        );
        // No layers: every tile from the first updated cell is inside.
        assert_eq!(
            tile_origin(&shape, 4, [100, 90, 80], [[4, 96], [4, 86], [4, 76]]),
            [4, 4]
        );
        // Several steps per pass start at the radius.
        let deep = WaveShape {
            dim_t: 2,
            rx: 1,
            ..shape
        };
        assert_eq!(
            tile_origin(&deep, 4, [400, 400, 300], [inner(400); 3]),
            [4, 4]
        );
        // The work per updated cell, against the plain form's: 1 without layers on a grid the
        // tiles fit; on 400×400×300, 7×25 tiles of which 5×21 inside the box, over 258 of the
        // 292 planes.
        let fit = [[4, 68], [4, 36], [4, 28]];
        assert_eq!(one_step_work(&shape, 4, [72, 40, 32], fit), 1.0);
        let w = one_step_work(
            &shape,
            4,
            [400, 400, 300],
            [inner(400), inner(400), inner(300)],
        );
        let want = (258.0 * (2.0 * (175.0 - 105.0) + 105.0) + 34.0 * 2.0 * 175.0) * 1024.0
            / (392.0 * 392.0 * 292.0);
        assert!((w - want).abs() < 1e-12, "{w} {want}");
        // The launch counts the tiles the axis lists, from any origin; passes of several steps
        // count theirs from the radius.
        for o in [4, 2, -6, -42, -59] {
            let g = shape.grid(4, [400, 402, 300], [o, o + 1]).unwrap();
            let x = Axis::at(o, 64, 4, 400, inner(400));
            let y = Axis::at(o + 1, 16, 4, 402, inner(402));
            assert_eq!([g[0], g[1]], [x.tiles as usize, y.tiles as usize], "{o}");
        }
        let two = WaveShape {
            dim_t: 2,
            rx: 1,
            ..shape
        };
        let g = two.grid(4, [400, 402, 300], [-6, -5]).unwrap();
        assert_eq!([g[0], g[1]], [392usize.div_ceil(24), 394usize.div_ceil(8)]);
        // One cell per thread: any column.
        let o = tile_origin(&one_step(1), 3, [200, 200, 100], [[23, 177]; 3]);
        assert!(
            o[0] <= 3 && o[0] > 3 - 32 && o[1] <= 3 && o[1] > 3 - 16,
            "{o:?}"
        );
    }
}
