//! [`Taps`]: a filter's weights laid out for a kernel that computes `rows` output rows at once
//! (register blocking over rows, [`super::conv_rows`]): per input row of the group, the output
//! rows it feeds and, for each filter column it is read at, the weight each of those output
//! rows applies. Zero taps are left out.

/// Most output rows a group computes: the kernel's dispatch over the rows an input row feeds
/// is written out for up to this many.
pub(crate) const MAX_ROWS: usize = 4;

/// What input row `r` of a group (input row `y + r − anchor` for the group's first output row
/// `y`) contributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowTaps {
    /// First output row of the group it feeds.
    pub(crate) lo: usize,
    /// One past the last output row it feeds.
    pub(crate) hi: usize,
    /// Its first tap in [`Taps::cols`] / [`Taps::weights`].
    pub(crate) start: usize,
    /// Its number of taps (0: the row is not read).
    pub(crate) len: usize,
}

/// The taps of a `kw × kh` filter for groups of `rows` output rows (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Taps<T> {
    /// Output rows per group.
    pub(crate) rows: usize,
    /// Per input row of a group (`kh + rows − 1` of them).
    pub(crate) inputs: Vec<RowTaps>,
    /// The filter column of each tap.
    pub(crate) cols: Vec<usize>,
    /// [`MAX_ROWS`] weights per tap: the weight output row `k` applies at index `k` (zero where
    /// row `k` does not read this input row, or reads it with a zero weight).
    pub(crate) weights: Vec<T>,
}

impl<T: Copy + Default> Taps<T> {
    /// The taps of the `kw × kh` filter whose weight at column `i`, row `j` is `weight(i, j)`,
    /// for groups of `rows` (1 ..= [`MAX_ROWS`]) output rows. A tap of input row `r` at column
    /// `i` is kept when any output row it feeds weights it non-zero.
    pub(crate) fn new(
        [kw, kh]: [usize; 2],
        rows: usize,
        weight: impl Fn(usize, usize) -> f64,
        of: impl Fn(f64) -> T,
    ) -> Taps<T> {
        debug_assert!((1..=MAX_ROWS).contains(&rows));
        let mut taps = Taps {
            rows,
            inputs: Vec::with_capacity(kh + rows - 1),
            cols: Vec::new(),
            weights: Vec::new(),
        };
        for r in 0..kh + rows - 1 {
            // Output row k reads input row r through filter row r - k.
            let (lo, hi) = ((r + 1).saturating_sub(kh), (r + 1).min(rows));
            let start = taps.cols.len();
            for i in 0..kw {
                let w: Vec<f64> = (0..MAX_ROWS)
                    .map(|k| {
                        if (lo..hi).contains(&k) {
                            weight(i, r - k)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                if w.iter().any(|&w| w != 0.0) {
                    taps.cols.push(i);
                    taps.weights.extend(w.into_iter().map(&of));
                }
            }
            let len = taps.cols.len() - start;
            taps.inputs.push(RowTaps { lo, hi, start, len });
        }
        taps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_rows_feed_the_output_rows_that_read_them() {
        // A 3x2 filter (kw 3, kh 2) with a zero column in its second row.
        let w = [[1.0, 2.0, 3.0], [4.0, 0.0, 6.0]];
        let taps = Taps::new([3, 2], 4, |i, j| w[j][i], |v| v);
        let spans: Vec<_> = taps.inputs.iter().map(|t| (t.lo, t.hi, t.len)).collect();
        // Input row 0 feeds output 0 (filter row 0); rows 1..=3 feed k-1 (row 1) and k
        // (row 0); row 4 feeds output 3 through filter row 1, whose middle weight is zero.
        assert_eq!(
            spans,
            [(0, 1, 3), (0, 2, 3), (1, 3, 3), (2, 4, 3), (3, 4, 2)]
        );
        let row1 = taps.inputs[1];
        let first = &taps.weights[row1.start * MAX_ROWS..][..MAX_ROWS];
        assert_eq!(first, [4.0, 1.0, 0.0, 0.0]);
        let last = taps.inputs[4];
        assert_eq!(taps.cols[last.start..][..last.len], [0, 2]);
        let single = Taps::new([1, 1], 1, |_, _| 0.5, |v| v);
        assert_eq!(single.inputs.len(), 1);
        assert_eq!(single.weights, [0.5, 0.0, 0.0, 0.0]);
    }
}
