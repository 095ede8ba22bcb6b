//! Sources and receivers at arbitrary points, and their trilinear taps on the grid's cells.

use serde::{Deserialize, Serialize};

use super::Wavelet;
use crate::{Error, Result};

/// A point source: `wavelet` injected at `position` (metres; cell `(i, j, k)` sits at
/// `(i·hx, j·hy, k·hz)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Where, metres.
    pub position: [f64; 3],
    /// What, over time.
    pub wavelet: Wavelet,
}

/// A receiver recording the wavefield at `position` (metres) after every step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receiver {
    /// Where, metres.
    pub position: [f64; 3],
}

impl Receiver {
    /// A receiver at `position` (metres).
    pub fn at(position: [f64; 3]) -> Receiver {
        Receiver { position }
    }

    /// `n` receivers evenly spaced on the segment from `from` to `to` (both included).
    ///
    /// Errors: more receivers than the memory this process may take holds
    /// ([`Error::InvalidArgument`], before anything is allocated).
    pub fn line(from: [f64; 3], to: [f64; 3], n: usize) -> Result<Vec<Receiver>> {
        let bytes = n as u128 * std::mem::size_of::<Receiver>() as u128;
        let budget = crate::memory::available().map_or(u64::MAX, crate::memory::usable_host);
        if bytes > u128::from(budget) {
            return Err(Error::InvalidArgument(format!(
                "a line of {n} receivers takes {bytes} bytes, more than the {budget} this \
                 process may take"
            )));
        }
        Ok((0..n)
            .map(|i| {
                let t = if n > 1 {
                    i as f64 / (n - 1) as f64
                } else {
                    0.0
                };
                Receiver::at(std::array::from_fn(|a| from[a] + t * (to[a] - from[a])))
            })
            .collect())
    }
}

/// One cell a point touches: the point's index, the cell and its trilinear weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tap {
    /// Index of the source or receiver.
    pub(crate) point: usize,
    /// The cell `[x, y, z]`.
    pub(crate) cell: [usize; 3],
    /// Trilinear weight (times the source scaling for sources).
    pub(crate) weight: f64,
}

/// The trilinear taps of the point `index` at `position`, weights times `scale`, skipping
/// zero weights. A coordinate within [`ON_CELL`] (relative) of a cell's is taken as on that
/// cell, so a point placed at `k·h` is found at cell `k` whatever the rounding of `k·h / h`.
/// Errors when the point lies outside the updated cells `r ..= n − r − 1`.
pub(crate) fn taps(
    index: usize,
    what: &str,
    position: [f64; 3],
    spacing: [f64; 3],
    dims: [usize; 3],
    r: usize,
    scale: f64,
) -> Result<Vec<Tap>> {
    let mut base = [0usize; 3];
    let mut frac = [0f64; 3];
    for a in 0..3 {
        let g = snap_to_cell(position[a] / spacing[a]);
        let (lo, hi) = (r as f64, (dims[a] - r - 1) as f64);
        if !(g.is_finite() && g >= lo && g <= hi) {
            return Err(Error::InvalidArgument(format!(
                "{what} {index} at {:?} m lies outside the updated cells: its {} coordinate must \
                 lie in [{}, {}] m ({} of the {} on each side)",
                position,
                ["x", "y", "z"][a],
                lo * spacing[a],
                hi * spacing[a],
                crate::error::count(r, "boundary cell"),
                dims[a]
            )));
        }
        let i = (g.floor() as usize).min(dims[a] - r - 1);
        base[a] = i;
        frac[a] = g - i as f64;
    }
    let mut out = Vec::with_capacity(8);
    for corner in 0..8 {
        let mut weight = scale;
        let mut cell = base;
        for a in 0..3 {
            let up = corner >> a & 1 == 1;
            weight *= if up { frac[a] } else { 1.0 - frac[a] };
            cell[a] += usize::from(up);
        }
        if weight != 0.0 {
            out.push(Tap {
                point: index,
                cell,
                weight,
            });
        }
    }
    Ok(out)
}

/// Relative distance in cells within which a coordinate counts as on a cell: well above the
/// rounding of `k·h / h` (a few ulps), far below any offset a user means.
const ON_CELL: f64 = 1e-9;

/// `g`, or the nearest whole number when `g` lies within [`ON_CELL`] of it.
fn snap_to_cell(g: f64) -> f64 {
    let k = g.round();
    if (g - k).abs() <= ON_CELL * k.abs().max(1.0) {
        k
    } else {
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_the_scale_and_grid_points_take_one_cell() {
        let t = taps(0, "source", [15.0, 20.0, 25.0], [10.0; 3], [10; 3], 1, 2.0).unwrap();
        let sum: f64 = t.iter().map(|t| t.weight).sum();
        assert!((sum - 2.0).abs() < 1e-12);
        assert_eq!(t.len(), 4);
        let on = taps(0, "source", [20.0; 3], [10.0; 3], [10; 3], 1, 1.0).unwrap();
        assert_eq!(
            on,
            vec![Tap {
                point: 0,
                cell: [2; 3],
                weight: 1.0
            }]
        );
    }

    /// Trilinear weights reproduce a linear field exactly, and each weight is its corner's
    /// product of `frac` and `1 − frac` (fractions 0.25 and 0.7 on unequal spacings, so a
    /// swapped fraction or axis shows).
    #[test]
    fn taps_interpolate_a_linear_field_exactly() {
        let spacing = [10.0, 12.0, 9.0];
        let cells = [3.25, 5.7, 4.25];
        let position: [f64; 3] = std::array::from_fn(|a| cells[a] * spacing[a]);
        let t = taps(0, "receiver", position, spacing, [12; 3], 2, 1.0).unwrap();
        assert_eq!(t.len(), 8);
        let field = |c: [f64; 3]| 3.0 * c[0] - 2.0 * c[1] + 0.5 * c[2] + 7.0;
        let sampled: f64 = t
            .iter()
            .map(|t| t.weight * field(t.cell.map(|i| i as f64)))
            .sum();
        assert!((sampled - field(cells)).abs() < 1e-12, "{sampled}");
        let low = t.iter().find(|t| t.cell == [3, 5, 4]).unwrap();
        assert!((low.weight - 0.75 * 0.3 * 0.75).abs() < 1e-12, "{low:?}");
        let high = t.iter().find(|t| t.cell == [4, 6, 5]).unwrap();
        assert!((high.weight - 0.25 * 0.7 * 0.25).abs() < 1e-12, "{high:?}");
    }

    /// `k·h / h` rounds below or above `k` for some spacings (3.3·3 / 3.3 < 3): a point on the
    /// first or last updated cell is still taken, on that one cell.
    #[test]
    fn points_on_the_edge_cells_survive_rounding() {
        for h in [0.1, 0.3, 0.7, 1.1, 3.3] {
            for r in 1..=4usize {
                let n = 40;
                for k in [r, n - r - 1] {
                    let x = k as f64 * h;
                    let t = taps(0, "receiver", [x; 3], [h; 3], [n; 3], r, 1.0)
                        .unwrap_or_else(|e| panic!("h {h}, r {r}, cell {k}: {e}"));
                    assert_eq!(t.len(), 1, "h {h}, r {r}, cell {k}: {t:?}");
                    assert_eq!(t[0].cell, [k; 3]);
                }
            }
        }
        let beyond = (40 - 2 - 1) as f64 * 3.3 * (1.0 + 1e-6);
        assert!(taps(0, "receiver", [beyond; 3], [3.3; 3], [40; 3], 2, 1.0).is_err());
    }

    #[test]
    fn points_in_the_boundary_layer_are_refused() {
        assert!(taps(3, "receiver", [5.0, 20.0, 20.0], [10.0; 3], [10; 3], 1, 1.0).is_err());
        assert!(taps(
            3,
            "receiver",
            [80.0, 20.0, 20.0],
            [10.0; 3],
            [10; 3],
            1,
            1.0
        )
        .is_ok());
        let e = taps(
            3,
            "receiver",
            [81.0, 20.0, 20.0],
            [10.0; 3],
            [10; 3],
            1,
            1.0,
        );
        assert!(e.unwrap_err().to_string().contains("receiver 3"));
    }
}
