//! The blocked convolution engine: work items are a band of output rows by a tile of columns
//! (`tile = [columns, rows]` from the plan), shared out on the pool. Within an item the output
//! rows are computed [`CONV_ROWS`] at a time with register blocking ([`super::conv_rows`]):
//! each loaded input vector feeds every output row of the group that reads it. A tile's input
//! rows are the grid's own rows unless the tile reaches past the left or right edge, where
//! they are copied with the border applied ([`Window`]); tiles narrow enough that the rows a
//! group reads stay in L1.
//!
//! Rank-one filters ([`Filter2::separable`]: Gaussians, means, Sobel) take the separable
//! path: a row pass applies the row factor to each input row into a ring of intermediate rows
//! of the tile, and a column pass applies the column factor to them, `kw + kh` instead of
//! `kw·kh` multiply-adds per pixel; both passes are the same register-blocked kernel (the row
//! pass a `kw × 1` filter on [`CONV_ROWS`] input rows at once, the column pass a `1 × kh`
//! filter on the intermediate rows).

use std::ops::Range;

use super::conv_rows::{block_vectors, group};
use super::items::{for_each_item, Shared};
use super::padded::Window;
use super::run_steps;
use super::taps::{Taps, MAX_ROWS};
use crate::aligned::{line_elems, AlignedBuf};
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::plan::CONV_ROWS;
use crate::plane::Filter2;
use crate::simd::{with_isa, Isa, Level, Tracker, WithIsa};
use crate::{Grid, Real};

/// Vectors per register block of a group of [`CONV_ROWS`] rows.
const XV: usize = block_vectors(CONV_ROWS);
const _: () = assert!(
    CONV_ROWS <= MAX_ROWS,
    "the kernel computes at most MAX_ROWS rows"
);

/// Applies `filter` `steps` times to `grid` with the blocked engine at `level` on `pool`,
/// work items of `tile = [columns, rows]` (0: the whole width / a share of the height),
/// `scratch` the second buffer; `grid` ends with the newest finite state.
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
    /// Output columns of each tile.
    tiles: Vec<Range<usize>>,
    /// Output rows of each band.
    bands: Vec<Range<usize>>,
}

/// Scratch of one thread: the padded input rows and, for the separable path, the ring of
/// intermediate rows.
struct Scratch<T: Real> {
    window: Window<T>,
    ring: AlignedBuf<T>,
    ring_pitch: usize,
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
        // Tiles start on cache lines (the output stores of a tile align alike).
        let line = line_elems::<T>();
        let width = if cols == 0 || cols >= nx {
            nx
        } else {
            cols.next_multiple_of(line)
        };
        let height = rows.max(1).next_multiple_of(CONV_ROWS);
        let cut = |n: usize, by: usize| (0..n).step_by(by).map(move |s| s..(s + by).min(n));
        Pass {
            filter,
            kernel,
            src,
            pitch: dst.pitch(),
            dst: Shared::new(dst.storage_mut().as_mut_ptr()),
            tiles: cut(nx, width).collect(),
            bands: cut(ny, height).collect(),
        }
    }

    /// Runs the pass on `pool` at level `S`; false if any output is infinite or NaN.
    fn run<S: Isa>(&self, pool: &rayon::ThreadPool) -> bool {
        let [kw, kh] = self.filter.size();
        let widest = self.tiles.iter().map(Range::len).max().unwrap_or(1);
        let ring_rows = kh + 2 * CONV_ROWS;
        let ring_pitch = padded_stride::<T>(widest + line_elems::<T>());
        let separable = matches!(self.kernel, Kernel::Separable { .. });
        let _ = kw;
        for_each_item(
            pool,
            self.tiles.len() * self.bands.len(),
            || Scratch {
                window: Window::new(self.src, self.filter, widest, kh + CONV_ROWS),
                ring: AlignedBuf::zeroed(if separable { ring_rows * ring_pitch } else { 1 })
                    .expect("a ring of intermediate rows is a few cache-sized rows"),
                ring_pitch,
            },
            |scratch, item| {
                let tile = self.tiles[item % self.tiles.len()].clone();
                let band = self.bands[item / self.tiles.len()].clone();
                scratch.window.set_columns(tile.clone());
                let mut check = Tracker::new();
                // SAFETY: the level is the one `with_isa` picked; the item's reads and
                // writes are argued in `direct` and `separable`.
                unsafe {
                    S::enter(
                        #[inline(always)]
                        || match self.kernel {
                            Kernel::Direct(taps) => {
                                self.direct::<S>(scratch, taps, &tile, &band, &mut check)
                            }
                            Kernel::Separable { row, col } => {
                                self.separable::<S>(scratch, row, col, &tile, &band, &mut check)
                            }
                        },
                    )
                };
                check.is_finite()
            },
        )
    }

    /// Output rows `y .. y + CONV_ROWS` of the destination, as pointers indexable by column;
    /// how many of them lie in `band`.
    #[inline(always)]
    fn outputs(&self, y: usize, band: &Range<usize>) -> ([*mut T; CONV_ROWS], usize) {
        let rows = std::array::from_fn(|k| self.dst.get().wrapping_add((y + k) * self.pitch));
        (rows, (band.end - y).min(CONV_ROWS))
    }

    /// The item's outputs from every tap of the filter, [`CONV_ROWS`] rows at a time.
    ///
    /// # Safety
    /// Inside the level's entry for `S`; the item (tile × band) is this thread's alone.
    #[inline(always)]
    unsafe fn direct<S: Isa>(
        &self,
        scratch: &mut Scratch<T>,
        taps: &Taps<T>,
        tile: &Range<usize>,
        band: &Range<usize>,
        check: &mut Tracker<T>,
    ) {
        let ay = self.filter.anchor()[1] as isize;
        let mut inputs = [std::ptr::null(); MAX_INPUTS];
        let inputs = &mut inputs[..taps.inputs.len()];
        for y in band.clone().step_by(CONV_ROWS) {
            for (r, input) in inputs.iter_mut().enumerate() {
                *input = scratch.window.row((y + r) as isize - ay);
            }
            let (out, valid) = self.outputs(y, band);
            // SAFETY: the window's rows are readable at x + i for x in the tile, i < kw; the
            // valid output rows are the item's own rows of dst (not src, not the window) at
            // the tile's columns.
            unsafe {
                group::<T, S, CONV_ROWS, XV>(taps, inputs, &out, valid, tile.start, tile.end, check)
            };
        }
    }

    /// The item's outputs by the separable path: the row factor into the ring of
    /// intermediate rows ([`CONV_ROWS`] input rows at a time, as far as the next group of
    /// output rows reads), then the column factor from the ring.
    ///
    /// # Safety
    /// As for [`Pass::direct`].
    #[inline(always)]
    unsafe fn separable<S: Isa>(
        &self,
        scratch: &mut Scratch<T>,
        row: &Taps<T>,
        col: &Taps<T>,
        tile: &Range<usize>,
        band: &Range<usize>,
        check: &mut Tracker<T>,
    ) {
        let kh = self.filter.size()[1];
        let ay = self.filter.anchor()[1] as isize;
        let slots = kh + 2 * CONV_ROWS;
        let (pitch, base) = (scratch.ring_pitch, scratch.ring.as_mut_ptr());
        // Intermediate row y, indexable by output column.
        let ring = |y: isize| {
            let slot = y.rem_euclid(slots as isize) as usize;
            base.wrapping_add(slot * pitch).wrapping_sub(tile.start)
        };
        let mut unchecked = Tracker::new();
        let mut next = band.start as isize - ay;
        let mut inputs = [std::ptr::null(); MAX_INPUTS];
        for y in band.clone().step_by(CONV_ROWS) {
            let top = y as isize - ay;
            while next < top + (kh + CONV_ROWS - 1) as isize {
                for (r, input) in inputs.iter_mut().take(CONV_ROWS).enumerate() {
                    *input = scratch.window.row(next + r as isize);
                }
                let out = std::array::from_fn(|k| ring(next + k as isize));
                // SAFETY: the window's rows are readable at x + i for x in the tile, i < kw;
                // the ring rows hold the tile's columns; the ring is this thread's and holds
                // the rows from `top` on (slots ≥ kh + 2·CONV_ROWS − 2 rows).
                unsafe {
                    group::<T, S, CONV_ROWS, XV>(
                        row,
                        &inputs[..CONV_ROWS],
                        &out,
                        CONV_ROWS,
                        tile.start,
                        tile.end,
                        &mut unchecked,
                    )
                };
                next += CONV_ROWS as isize;
            }
            for (r, input) in inputs.iter_mut().take(col.inputs.len()).enumerate() {
                *input = ring(top + r as isize).cast_const();
            }
            let (out, valid) = self.outputs(y, band);
            // SAFETY: the ring rows top .. top + kh + CONV_ROWS − 1 were computed above and
            // hold the tile's columns; the outputs as in `direct`.
            unsafe {
                group::<T, S, CONV_ROWS, XV>(
                    col,
                    &inputs[..col.inputs.len()],
                    &out,
                    valid,
                    tile.start,
                    tile.end,
                    check,
                )
            };
        }
    }
}

/// Most input rows of a group: `kh + CONV_ROWS − 1` for the tallest filter.
const MAX_INPUTS: usize = crate::plane::MAX_FILTER_SIZE + CONV_ROWS - 1;
