//! The blocked convolution engine: work items are bands of output rows (`tile[1]` rows, from
//! the plan), shared out on the pool, each computed [`CONV_ROWS`] rows at a time with
//! register blocking ([`super::conv_rows`]): each loaded input vector feeds every output row
//! of the group that reads it.
//!
//! A group's rows are cut into column spans: the spans that reach past the left or right
//! edge (at most a cache line or two of columns) read padded copies of their input rows with
//! the border applied ([`Window`]), every other span reads the grid's rows in place; `tile[0]`
//! cuts the row into further spans of that many columns (the planner keeps whole rows: see
//! [`crate::plan`]'s `plane_conv_tile`). The spans of a group run left to right, so the input
//! rows stream through memory in order, and the `kh + CONV_ROWS − 1` rows a group reads stay
//! in L2 for the next group. The output rows are written in place: computing them into a
//! staging buffer and streaming that to the grid with non-temporal stores (which skip the
//! read of each output line) was slower on the 2-core AMD EPYC Zen 5, `f32` 4096², 2
//! threads: `dense:3x3` 4.2-5.7 ms against 3.5, `dense:5x5` 5.2-5.3 against 4.4-5.0.
//!
//! Rank-one filters ([`Filter2::separable`]: Gaussians, means, Sobel) take the separable
//! path: a row pass applies the row factor to each input row into a ring of intermediate rows,
//! and a column pass applies the column factor to them, `kw + kh` instead of `kw·kh`
//! multiply-adds per pixel; both passes are the same register-blocked kernel (the row pass a
//! `kw × 1` filter on [`CONV_ROWS`] input rows at once, the column pass a `1 × kh` filter on
//! the intermediate rows).

use std::ops::Range;

use super::conv_rows::{block_vectors, group};
use super::items::{for_each_item, Shared};
use super::padded::{window_elems, Window};
use super::steps::run_steps;
use super::taps::{Taps, MAX_ROWS};
use crate::aligned::{line_elems, AlignedBuf};
use crate::blocking::CONV_ROWS;
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::plane::Filter2;
use crate::simd::{with_isa, Isa, Level, Tracker, WithIsa};
use crate::{Grid, Real};

/// Vectors per register block of a group of [`CONV_ROWS`] rows.
const XV: usize = block_vectors(CONV_ROWS);
const _: () = assert!(
    CONV_ROWS <= MAX_ROWS,
    "the kernel computes at most MAX_ROWS rows"
);

/// Most input rows of a group: `kh + CONV_ROWS − 1` for the tallest filter.
const MAX_INPUTS: usize = crate::plane::MAX_FILTER_SIZE + CONV_ROWS - 1;

/// Applies `filter` `steps` times to `grid` with the blocked engine at `level` on `pool`,
/// work items of `tile = [span columns, band rows]` (see the module docs), `scratch` the
/// second buffer; `grid` ends with the newest finite state.
pub(crate) fn run<T: Real>(
    filter: &Filter2,
    level: Level,
    tile: [usize; 2],
    pool: &rayon::ThreadPool,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    with_isa(
        level,
        Blocked {
            filter,
            tile,
            pool,
            grid,
            scratch,
            steps,
        },
    )
}

/// [`run`] as a computation generic over the level.
struct Blocked<'a, T: Real> {
    filter: &'a Filter2,
    tile: [usize; 2],
    pool: &'a rayon::ThreadPool,
    grid: &'a mut Grid<T>,
    scratch: &'a mut Grid<T>,
    steps: usize,
}

impl<T: Real> WithIsa for Blocked<'_, T> {
    type Output = Result<(), Failure>;

    fn call<S: Isa>(self) -> Self::Output {
        let f = self.filter;
        let kernel = match f.separable() {
            Some((row, col)) => Kernel::Separable {
                row: Taps::new([row.len(), 1], CONV_ROWS, |i, _| row[i], T::of),
                col: Taps::new([1, col.len()], CONV_ROWS, |_, j| col[j], T::of),
            },
            None => Kernel::Direct(Taps::new(f.size(), CONV_ROWS, |i, j| f.weight(i, j), T::of)),
        };
        let (tile, pool) = (self.tile, self.pool);
        let step =
            |src: &Grid<T>, dst: &mut Grid<T>| Pass::new(f, &kernel, tile, src, dst).run::<S>(pool);
        run_steps(self.grid, self.scratch, self.steps, 0, step)
    }
}

/// The filter's taps as the blocked engine applies them.
enum Kernel<T> {
    /// Every tap of the filter, for groups of [`CONV_ROWS`] rows.
    Direct(Taps<T>),
    /// The row factor (a `kw × 1` filter) and the column factor (`1 × kh`).
    Separable { row: Taps<T>, col: Taps<T> },
}

/// One application of the filter: shared, read-only state of every thread.
struct Pass<'a, T: Real> {
    filter: &'a Filter2,
    kernel: &'a Kernel<T>,
    src: &'a Grid<T>,
    dst: Shared<T>,
    pitch: usize,
    /// Output columns of each span of a row.
    spans: Vec<Range<usize>>,
    /// Output rows of each band (the work items).
    bands: Vec<Range<usize>>,
}

/// Scratch of one thread: a window of input rows per span and the ring of intermediate rows
/// (separable path), `pitch` apart.
struct Scratch<T: Real> {
    windows: Vec<Window<T>>,
    ring: AlignedBuf<T>,
    pitch: usize,
}

impl<'a, T: Real> Pass<'a, T> {
    fn new(
        filter: &'a Filter2,
        kernel: &'a Kernel<T>,
        [cols, rows]: [usize; 2],
        src: &'a Grid<T>,
        dst: &'a mut Grid<T>,
    ) -> Self {
        let [nx, ny, _] = src.dims();
        let height = rows.max(1).next_multiple_of(CONV_ROWS);
        Pass {
            filter,
            kernel,
            src,
            pitch: dst.pitch(),
            dst: Shared::new(dst.storage_mut().as_mut_ptr()),
            spans: spans::<T>(filter, nx, cols),
            bands: (0..ny)
                .step_by(height)
                .map(|y| y..(y + height).min(ny))
                .collect(),
        }
    }

    /// Runs the pass on `pool` at level `S`; false if any output is infinite or NaN.
    fn run<S: Isa>(&self, pool: &rayon::ThreadPool) -> bool {
        let kh = self.filter.size()[1];
        let nx = self.src.dims()[0];
        let pitch = padded_stride::<T>(nx + line_elems::<T>());
        let separable = matches!(self.kernel, Kernel::Separable { .. });
        let buffer = |rows: usize| {
            AlignedBuf::zeroed((rows * pitch).max(1))
                .expect("intermediate rows are a few rows of the image")
        };
        for_each_item(
            pool,
            self.bands.len(),
            || Scratch {
                windows: self
                    .spans
                    .iter()
                    .map(|span| {
                        let mut w = Window::new(self.src, self.filter, span.len(), kh + CONV_ROWS);
                        w.set_columns(span.clone());
                        w
                    })
                    .collect(),
                ring: buffer(if separable { kh + 2 * CONV_ROWS } else { 0 }),
                pitch,
            },
            |scratch, band| {
                let band = self.bands[band].clone();
                let mut check = Tracker::new();
                // SAFETY: the level is the one `with_isa` picked; the item's reads and
                // writes are argued in `direct` and `separable`.
                unsafe {
                    S::enter(
                        #[inline(always)]
                        || match self.kernel {
                            Kernel::Direct(taps) => {
                                self.direct::<S>(scratch, taps, &band, &mut check)
                            }
                            Kernel::Separable { row, col } => {
                                self.separable::<S>(scratch, row, col, &band, &mut check)
                            }
                        },
                    )
                };
                check.is_finite()
            },
        )
    }

    /// Output rows `y .. y + CONV_ROWS` of the destination as pointers indexable by column,
    /// and how many of them lie in `band`.
    #[inline(always)]
    fn outputs(&self, y: usize, band: &Range<usize>) -> ([*mut T; CONV_ROWS], usize) {
        let rows = std::array::from_fn(|k| self.dst.get().wrapping_add((y + k) * self.pitch));
        (rows, (band.end - y).min(CONV_ROWS))
    }

    /// The band's outputs from every tap of the filter, [`CONV_ROWS`] rows at a time, span by
    /// span.
    ///
    /// # Safety
    /// Inside the level's entry for `S`; the band is this thread's alone.
    #[inline(always)]
    unsafe fn direct<S: Isa>(
        &self,
        scratch: &mut Scratch<T>,
        taps: &Taps<T>,
        band: &Range<usize>,
        check: &mut Tracker<T>,
    ) {
        let ay = self.filter.anchor()[1] as isize;
        let mut inputs = [std::ptr::null(); MAX_INPUTS];
        let inputs = &mut inputs[..taps.inputs.len()];
        for y in band.clone().step_by(CONV_ROWS) {
            let (out, valid) = self.outputs(y, band);
            for (span, window) in self.spans.iter().zip(scratch.windows.iter_mut()) {
                for (r, input) in inputs.iter_mut().enumerate() {
                    *input = window.row((y + r) as isize - ay);
                }
                // SAFETY: the window's rows are readable at x + i for x in the span, i < kw;
                // the valid output rows are this band's own rows of dst (not src, not the
                // windows) at the span's columns.
                unsafe {
                    group::<T, S, CONV_ROWS, XV>(
                        taps, inputs, &out, valid, span.start, span.end, check,
                    )
                };
            }
        }
    }

    /// The band's outputs by the separable path: the row factor into the ring of
    /// intermediate rows ([`CONV_ROWS`] input rows at a time, as far as the next group of
    /// output rows reads), then the column factor from the ring, span by span.
    ///
    /// # Safety
    /// As for [`Pass::direct`].
    #[inline(always)]
    unsafe fn separable<S: Isa>(
        &self,
        scratch: &mut Scratch<T>,
        row: &Taps<T>,
        col: &Taps<T>,
        band: &Range<usize>,
        check: &mut Tracker<T>,
    ) {
        let kh = self.filter.size()[1];
        let ay = self.filter.anchor()[1] as isize;
        let slots = kh + 2 * CONV_ROWS;
        let (pitch, base) = (scratch.pitch, scratch.ring.as_mut_ptr());
        // Intermediate row y, indexable by column.
        let ring = |y: isize| base.wrapping_add(y.rem_euclid(slots as isize) as usize * pitch);
        let mut unchecked = Tracker::new();
        let mut next = band.start as isize - ay;
        let mut inputs = [std::ptr::null(); MAX_INPUTS];
        for y in band.clone().step_by(CONV_ROWS) {
            let top = y as isize - ay;
            while next < top + (kh + CONV_ROWS - 1) as isize {
                let out = std::array::from_fn(|k| ring(next + k as isize));
                for (span, window) in self.spans.iter().zip(scratch.windows.iter_mut()) {
                    for (r, input) in inputs.iter_mut().take(CONV_ROWS).enumerate() {
                        *input = window.row(next + r as isize);
                    }
                    // SAFETY: the window's rows are readable at x + i for x in the span,
                    // i < kw; the ring rows hold every column; the ring is this thread's and
                    // keeps the rows from `top` on (slots ≥ kh + 2·CONV_ROWS − 2 rows).
                    unsafe {
                        group::<T, S, CONV_ROWS, XV>(
                            row,
                            &inputs[..CONV_ROWS],
                            &out,
                            CONV_ROWS,
                            span.start,
                            span.end,
                            &mut unchecked,
                        )
                    };
                }
                next += CONV_ROWS as isize;
            }
            let inputs = &mut inputs[..col.inputs.len()];
            for (r, input) in inputs.iter_mut().enumerate() {
                *input = ring(top + r as isize).cast_const();
            }
            let (out, valid) = self.outputs(y, band);
            for span in &self.spans {
                // SAFETY: the ring rows top .. top + kh + CONV_ROWS − 1 were computed above
                // for every column; the outputs as in `direct`.
                unsafe {
                    group::<T, S, CONV_ROWS, XV>(
                        col, inputs, &out, valid, span.start, span.end, check,
                    )
                };
            }
        }
    }
}

/// The column spans of a row for `filter` on `nx` columns: the spans that reach past an edge
/// (the first `ax` columns, moved up to a cache line, and the last `kw − 1 − ax`) apart from
/// the inside ones, which read the grid in place; all cut further at multiples of `cols`
/// (0: no further cuts).
/// Elements of the scratch each thread of a pass on rows of `nx` with tiles `tile` allocates:
/// the input window of each span (`kh + CONV_ROWS + 1` rows of the span, its filter margin and
/// two lines; see [`Window::new`]) and the separable path's intermediate rows (counted for
/// every filter, an upper bound).
pub(super) fn scratch_elems<T>(filter: &Filter2, nx: usize, tile: [usize; 2]) -> usize {
    let [_, kh] = filter.size();
    let line = line_elems::<T>();
    let windows: usize = spans::<T>(filter, nx, tile[0])
        .iter()
        .map(|span| window_elems::<T>(filter, span.len(), kh + CONV_ROWS))
        .sum();
    windows + (kh + 2 * CONV_ROWS) * padded_stride::<T>(nx + line)
}

fn spans<T>(filter: &Filter2, nx: usize, cols: usize) -> Vec<Range<usize>> {
    let [kw, _] = filter.size();
    let ax = filter.anchor()[0];
    let left = ax.next_multiple_of(line_elems::<T>());
    let right = nx.saturating_sub(kw - 1 - ax);
    let mut cuts = vec![0, nx];
    if left < right {
        cuts.extend([left, right]);
    }
    if cols > 0 && cols < nx {
        let step = cols.next_multiple_of(line_elems::<T>());
        cuts.extend((step..nx).step_by(step));
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|c| c[0]..c[1]).collect()
}
