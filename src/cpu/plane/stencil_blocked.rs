//! The blocked 2D stencil engine: the 3.5D idea one dimension down. Each pass advances
//! `dim_t` time steps while reading and writing the grid once.
//!
//! The interior is cut into work items, an x tile (`tile[0]` loaded columns, halos of
//! `R·dim_t` on each side included; the whole row when that covers it) by a chunk of output
//! rows (`tile[1]`), claimed by the pool's threads from one counter. An item streams down its
//! rows through the `dim_t` levels (time steps) of the pass: level `j` computes row `y` at
//! pipeline step `y − y₀ + (j−1)·R` (`y₀`: level 1's first row), reading rows `y−R ..= y+R`
//! of level `j−1`, the last of which level `j−1` wrote earlier in the same step. Level 0 is
//! the source grid; levels `1 .. dim_t` keep their last `2R + 1` rows in a ring per level
//! (cache-resident: the thread's rings are `(dim_t−1)·(2R+1)` rows of the tile); the last
//! level writes the item's output rows into the destination grid. Each level computes the
//! item's columns and rows grown by `R` per level still to come (the halo the levels above
//! read), clipped to the interior; the fixed boundary layer is read from the source grid at
//! every level (rows) or copied next to the ring rows that touch it (columns), so levels
//! beyond the boundary see it exactly as the reference does.

use std::ops::Range;

use super::items::{for_each_item, piece};
use super::stencil_naive;
use super::stencil_rows::{PlaneKernel, Rows, WithPlaneKernel};
use super::steps::failure;
use crate::aligned::{line_elems, line_start, AlignedBuf};
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::runtime::prefetch::prefetch_row;
use crate::runtime::stream::{self, stream_copy};
use crate::simd::{Isa, Tracker};
use crate::{Grid, Real};

/// A blocked run of `steps` steps, `dim_t` per pass (the last pass shorter when `dim_t` does
/// not divide `steps`), with tiles of `tile` (see the module docs).
pub(crate) struct BlockedRun<'a, T: Real> {
    pub(crate) grid: &'a mut Grid<T>,
    pub(crate) scratch: &'a mut Grid<T>,
    pub(crate) steps: usize,
    pub(crate) dim_t: usize,
    pub(crate) tile: [usize; 2],
    /// Whether the last level streams its rows to the grid with non-temporal stores (for
    /// grids that leave the last-level cache between passes anyway; see
    /// [`crate::runtime::stream`]).
    pub(crate) stream: bool,
    pub(crate) pool: &'a rayon::ThreadPool,
}

impl<T: Real> WithPlaneKernel<T> for BlockedRun<'_, T> {
    type Output = Result<(), Failure>;

    fn call<K: PlaneKernel<T>>(self, kernel: K) -> Self::Output {
        let r = K::RADIUS;
        let mut done = 0;
        while done < self.steps {
            let dim_t = self.dim_t.clamp(1, self.steps - done);
            let pass = Pass::new(
                &kernel,
                self.grid,
                self.scratch,
                dim_t,
                self.tile,
                self.stream,
            );
            if pass.run(self.pool) {
                self.grid.swap_storage(self.scratch);
            } else {
                // Replay the pass one step at a time to find the first step that went bad and
                // leave the grid at the step before it.
                for i in 1..=dim_t {
                    let finite = self
                        .pool
                        .install(|| stencil_naive::step(&kernel, self.grid, self.scratch));
                    if !finite {
                        return Err(failure(self.scratch, r, done + i));
                    }
                    self.grid.swap_storage(self.scratch);
                }
            }
            done += dim_t;
        }
        Ok(())
    }
}

/// One pass of `dim_t` levels: the shared, read-only state of every thread.
struct Pass<'a, T: Real, K> {
    kernel: &'a K,
    dims: [usize; 2],
    pitch: usize,
    src: *const T,
    dst: *mut T,
    dim_t: usize,
    /// Output columns of each x tile.
    tiles: Vec<Range<usize>>,
    /// Output rows of each chunk.
    chunks: Vec<Range<usize>>,
    /// Elements between ring rows (a thread's rings: `(dim_t−1)·(2R+1)` rows, then the
    /// staging row).
    ring_pitch: usize,
    /// Whether the last level's rows go through the staging row and non-temporal stores.
    stream: bool,
    /// Whether level 1 asks for the next source row a step ahead: tiles narrower than the
    /// grid read each row as a short segment, which hardware stream prefetchers do not follow.
    prefetch: bool,
}

// SAFETY: the raw pointers are shared under the schedule of the module docs: `src` is never
// written; each work item (a tile's chunk of rows, claimed by exactly one thread) writes only
// its own output rows and columns of `dst`, which no other item reads or writes; the rings
// belong to the thread that made them.
unsafe impl<T: Real, K: Sync> Sync for Pass<'_, T, K> {}

/// Where one work item's levels work: the ring origin and each level's columns and rows.
struct Item {
    /// The global column at offset 0 of the ring rows (a cache-line start, so that a column
    /// is aligned alike in the ring and in the grid).
    origin: usize,
    /// Columns of level `j` at index `j - 1`.
    xs: Vec<Range<usize>>,
    /// Rows of level `j` at index `j - 1`.
    ys: Vec<Range<usize>>,
}

impl<'a, T: Real, K: PlaneKernel<T>> Pass<'a, T, K> {
    fn new(
        kernel: &'a K,
        src: &'a Grid<T>,
        dst: &'a mut Grid<T>,
        dim_t: usize,
        tile: [usize; 2],
        stream: bool,
    ) -> Self {
        let r = K::RADIUS;
        let [nx, ny, _] = src.dims();
        let inner_y = r..ny - r;
        let tiles = column_tiles(r, nx, tile[0], dim_t);
        let chunks = split(inner_y.clone(), inner_y.len().div_ceil(tile[1].max(1)));
        let prefetch = tiles.len() > 1;
        let ring_pitch = ring_pitch::<T>(r, &tiles, dim_t);
        Pass {
            kernel,
            dims: [nx, ny],
            pitch: src.pitch(),
            src: src.storage().as_ptr(),
            dst: dst.storage_mut().as_mut_ptr(),
            dim_t,
            tiles,
            chunks,
            ring_pitch,
            stream,
            prefetch,
        }
    }

    /// Runs the pass on `pool`; false if any value computed is infinite or NaN.
    fn run(&self, pool: &rayon::ThreadPool) -> bool {
        let r = K::RADIUS;
        let rows = (self.dim_t - 1) * (2 * r + 1) + 1;
        let items = self.tiles.len() * self.chunks.len();
        for_each_item(
            pool,
            items,
            || {
                AlignedBuf::<T>::zeroed((rows * self.ring_pitch).max(1))
                    .expect("a thread's rings are a few cache-sized rows")
            },
            |ring, item| {
                let finite = self.item(ring, item);
                if self.stream {
                    // The pool's join publishes the streamed rows.
                    stream::fence();
                }
                finite
            },
        )
    }

    /// The columns and rows every level of work item `index` computes.
    fn item_span(&self, index: usize) -> Item {
        let r = K::RADIUS;
        let [nx, ny] = self.dims;
        let tile = &self.tiles[index % self.tiles.len()];
        let chunk = &self.chunks[index / self.tiles.len()];
        let grow = |range: &Range<usize>, by: usize, n: usize| {
            range.start.saturating_sub(by).max(r)..(range.end + by).min(n - r)
        };
        let xs: Vec<_> = (1..=self.dim_t)
            .map(|j| grow(tile, r * (self.dim_t - j), nx))
            .collect();
        let ys = (1..=self.dim_t)
            .map(|j| grow(chunk, r * (self.dim_t - j), ny))
            .collect();
        Item {
            origin: line_start::<T>(xs[0].start - r),
            xs,
            ys,
        }
    }

    /// Runs work item `index` through every level with the thread's rings; false if a value
    /// computed was infinite or NaN.
    fn item(&self, ring: &mut AlignedBuf<T>, index: usize) -> bool {
        let r = K::RADIUS;
        let span = self.item_span(index);
        let ring = ring.as_mut_ptr();
        let y0 = span.ys[0].start;
        let last = span.ys[self.dim_t - 1].end;
        let steps = last - y0 + (self.dim_t - 1) * r;
        let mut check = Tracker::new();
        // SAFETY: `dispatch` picked the kernel's level, which the CPU has; the rows and
        // columns each level reads and writes are argued in `level_row`.
        unsafe {
            K::Isa::enter(
                #[inline(always)]
                || {
                    for s in 0..steps {
                        for j in 1..=self.dim_t {
                            let y = (y0 + s).checked_sub((j - 1) * r);
                            if let Some(y) = y.filter(|y| span.ys[j - 1].contains(y)) {
                                self.level_row(ring, &span, j, y, &mut check);
                            }
                        }
                    }
                },
            )
        };
        check.is_finite()
    }

    /// Row `y` of level `j − 1`, indexable by global column: the source grid for level 0 and
    /// for the fixed boundary rows, the level's ring otherwise.
    #[inline(always)]
    fn row_below(&self, ring: *mut T, span: &Item, j: usize, y: usize) -> *const T {
        let r = K::RADIUS;
        if j == 1 || y < r || y >= self.dims[1] - r {
            self.src.wrapping_add(y * self.pitch)
        } else {
            self.ring_row(ring, span, j - 1, y).cast_const()
        }
    }

    /// Row `y` of ring level `level` (1 ..= dim_t − 1), indexable by global column; level
    /// `dim_t` is the staging row.
    #[inline(always)]
    fn ring_row(&self, ring: *mut T, span: &Item, level: usize, y: usize) -> *mut T {
        let slots = 2 * K::RADIUS + 1;
        let row = if level == self.dim_t {
            (self.dim_t - 1) * slots
        } else {
            (level - 1) * slots + y % slots
        };
        ring.wrapping_add(row * self.ring_pitch)
            .wrapping_sub(span.origin)
    }

    /// Computes row `y` of level `j` from the rows of level `j − 1` around it: into the ring,
    /// with the boundary columns next to it copied from the source grid when the level's
    /// columns reach the boundary, or, at the last level, into the destination grid (through
    /// the staging row when the pass streams).
    ///
    /// # Safety
    /// Runs inside the kernel's level entry, in the item's pipeline order: the rows of level
    /// `j − 1` it reads were computed earlier (level `j − 1`'s rows are level `j`'s grown by
    /// `R`, clipped to the interior, and hold its columns grown by `R` or the copied
    /// boundary; a ring of `2R + 1` rows still holds rows `y − R ..= y + R`).
    #[inline(always)]
    unsafe fn level_row(
        &self,
        ring: *mut T,
        span: &Item,
        j: usize,
        y: usize,
        check: &mut Tracker<T>,
    ) {
        let r = K::RADIUS;
        let xs = span.xs[j - 1].clone();
        let around = Rows::gather(r, |dy| {
            self.row_below(ring, span, j, y.wrapping_add_signed(dy))
        });
        if j == 1 && self.prefetch && y + r + 1 < self.dims[1] {
            // The source row level 1 reads first at the next step.
            let row = self.src.wrapping_add((y + r + 1) * self.pitch);
            prefetch_row(row.wrapping_add(xs.start - r), xs.len() + 2 * r);
        }
        let last = j == self.dim_t;
        let dst = self.dst.wrapping_add(y * self.pitch);
        let out = if last && !self.stream {
            dst
        } else {
            self.ring_row(ring, span, j, y)
        };
        // SAFETY: the rows read hold columns xs.start − R .. xs.end + R (the grid's rows hold
        // every column; ring rows hold level j − 1's columns and the boundary columns next to
        // them, from `origin` on, inside `ring_pitch`); `out` is this item's own row, writable
        // at xs and at the boundary columns next to them: a ring or staging row of this
        // thread or, at the last level, the item's output row of dst, which no other item
        // touches and no source aliases.
        unsafe {
            self.kernel
                .row_at_level(&around, out, xs.start, xs.end, check);
            if last && !self.stream {
                return;
            }
            let cols = self.with_boundary(out, y, &xs);
            if last {
                stream_copy(dst.add(cols.start), out.add(cols.start), cols.len());
            }
        }
    }

    /// Copies the fixed boundary columns next to `xs` (where `xs` reaches the boundary) of
    /// row `y` from the source grid into the ring or staging row `out`; the columns `out`
    /// then holds.
    ///
    /// # Safety
    /// `out` writable at the boundary columns next to `xs`.
    #[inline(always)]
    unsafe fn with_boundary(&self, out: *mut T, y: usize, xs: &Range<usize>) -> Range<usize> {
        let r = K::RADIUS;
        let nx = self.dims[0];
        let src = self.src.wrapping_add(y * self.pitch);
        let mut cols = xs.clone();
        // SAFETY: the source row holds every column; `out` is writable there (the caller).
        unsafe {
            if xs.start == r {
                std::ptr::copy_nonoverlapping(src, out, r);
                cols.start = 0;
            }
            if xs.end == nx - r {
                std::ptr::copy_nonoverlapping(src.add(xs.end), out.add(xs.end), r);
                cols.end = nx;
            }
        }
        cols
    }
}

/// `range` cut into `parts` (at least one) near-equal consecutive ranges.
/// The output columns of each tile of a pass: the inner columns cut into near-equal tiles whose
/// output, the loaded width `tile_x` less the `2R·dim_t` halo, fits.
fn column_tiles(r: usize, nx: usize, tile_x: usize, dim_t: usize) -> Vec<Range<usize>> {
    let inner_x = r..nx - r;
    let halo = 2 * r * dim_t;
    let width = if tile_x >= inner_x.len() + halo {
        inner_x.len()
    } else {
        tile_x.saturating_sub(halo).max(1)
    };
    split(inner_x.clone(), inner_x.len().div_ceil(width))
}

/// A ring row's pitch: the widest tile, its halos and a boundary layer, plus the columns the
/// ring origin moves down to a line start; padded like the grid's rows.
fn ring_pitch<T>(r: usize, tiles: &[Range<usize>], dim_t: usize) -> usize {
    let widest = tiles.iter().map(|t| t.len()).max().unwrap_or(0);
    padded_stride::<T>(widest + 2 * r * dim_t + line_elems::<T>())
}

/// Elements of the ring each thread of a pass allocates: `(dim_t − 1)(2R + 1) + 1` rows of
/// [`ring_pitch`] (see [`Pass::run`]).
pub(super) fn ring_elems<T>(r: usize, nx: usize, tile_x: usize, dim_t: usize) -> usize {
    let rows = dim_t.saturating_sub(1) * (2 * r + 1) + 1;
    rows * ring_pitch::<T>(r, &column_tiles(r, nx, tile_x, dim_t), dim_t)
}

fn split(range: Range<usize>, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, range.len().max(1));
    (0..parts).map(|i| piece(range.clone(), i, parts)).collect()
}
