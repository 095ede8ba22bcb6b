//! [`Window`]: the input rows a convolution reads for one span of output columns, with the
//! border applied. Rows are handed out as pointers indexable by output column, so the kernel
//! reads `row[x + i]` for filter column `i` and never branches on the border: a row whose span
//! lies inside the image is the grid's own row (no copy); a row that reaches past the left or
//! right edge is copied once into a slot with its outside columns filled by the border rule; a
//! row above or below the image is the border's source row, or for a constant border one row
//! of the constant.

use std::ops::Range;

use crate::aligned::{line_elems, AlignedBuf};
use crate::plane::{Border, Filter2};
use crate::{Grid, Real};

/// Padded input rows for one span of output columns at a time (see the module docs).
pub(crate) struct Window<T: Real> {
    src: *const T,
    pitch: usize,
    dims: [usize; 2],
    border: Border,
    /// The filter's anchor column: output column `x` reads input columns `x − ax ..`.
    ax: usize,
    /// Columns a filter row spans, `kw`.
    kw: usize,
    /// The current span of output columns.
    cols: Range<usize>,
    /// Whether every input column of the span lies inside the image.
    inside: bool,
    /// Copied rows: `slots + 1` slots of `slot_len` (the last one the constant row).
    buf: AlignedBuf<T>,
    slots: usize,
    slot_len: usize,
    /// Offset in a slot of the span's first output column (a line multiple, at least `ax`).
    pad: usize,
    /// The input row each copied slot holds (`None`: not filled for this span).
    held: Vec<Option<isize>>,
    /// Whether the constant slot is filled for this span.
    constant_ready: bool,
}

/// The offset in a slot of a span's first output column and the slot's length, for spans of
/// at most `max_cols` columns of `filter`: the anchor's columns moved up to a cache line, the
/// span, the filter's width, and a line more.
fn slot_layout<T>(filter: &Filter2, max_cols: usize) -> (usize, usize) {
    let [kw, _] = filter.size();
    let line = line_elems::<T>();
    let pad = filter.anchor()[0].next_multiple_of(line).max(line);
    (pad, (pad + max_cols + kw).next_multiple_of(line) + line)
}

/// Elements a [`Window::new`] of these arguments allocates: `slots + 1` slots.
pub(crate) fn window_elems<T>(filter: &Filter2, max_cols: usize, slots: usize) -> usize {
    (slots + 1).saturating_mul(slot_layout::<T>(filter, max_cols).1)
}

impl<T: Real> Window<T> {
    /// A window on the one-plane grid `src` for `filter`, for spans of at most `max_cols`
    /// output columns, keeping `slots` copied rows at once (the rows a group reads).
    pub(crate) fn new(src: &Grid<T>, filter: &Filter2, max_cols: usize, slots: usize) -> Self {
        let [nx, ny, _] = src.dims();
        let [kw, _] = filter.size();
        let (pad, slot_len) = slot_layout::<T>(filter, max_cols);
        Window {
            src: src.storage().as_ptr(),
            pitch: src.pitch(),
            dims: [nx, ny],
            border: filter.border(),
            ax: filter.anchor()[0],
            kw,
            cols: 0..0,
            inside: false,
            buf: AlignedBuf::zeroed(window_elems::<T>(filter, max_cols, slots))
                .expect("a window's rows are a few cache-sized rows"),
            slots,
            slot_len,
            pad,
            held: vec![None; slots],
            constant_ready: false,
        }
    }

    /// Starts a span of output columns (at most the `max_cols` the window was made for).
    pub(crate) fn set_columns(&mut self, cols: Range<usize>) {
        debug_assert!(cols.len() + self.kw + self.pad <= self.slot_len);
        self.inside = cols.start >= self.ax && cols.end + self.kw - 1 - self.ax <= self.dims[0];
        self.cols = cols;
        self.held.fill(None);
        self.constant_ready = false;
    }

    /// Input row `y` (any integer; the border decides what lies outside) as `q` with `q[x + i]`
    /// the value filter column `i` reads for output column `x` of the span: readable at
    /// `x + i` for `x` in the span and `i < kw`. Valid until `slots` further rows have been
    /// asked for.
    pub(crate) fn row(&mut self, y: isize) -> *const T {
        let p = match self.border.source(y, self.dims[1]) {
            Some(sy) if self.inside => self.src.wrapping_add(sy * self.pitch),
            Some(sy) => self.copied(y, sy),
            None => self.constant(),
        };
        p.wrapping_sub(self.ax)
    }

    /// The slot of copied row `y` (grid row `sy`), filled if it does not hold it yet, as a
    /// pointer indexable by input column.
    fn copied(&mut self, y: isize, sy: usize) -> *const T {
        let slot = y.rem_euclid(self.slots as isize) as usize;
        let base = self.slot_base(slot);
        if self.held[slot] != Some(y) {
            self.held[slot] = Some(y);
            let row = self.src.wrapping_add(sy * self.pitch);
            let (nx, border) = (self.dims[0], self.border);
            let constant = T::of(border.constant());
            let span = self.input_columns();
            let inside = span.start.max(0)..span.end.min(nx as isize);
            // SAFETY: the columns of `inside` are columns of the image, which the grid row
            // holds, and lie inside the slot (see `input_columns`).
            // (The span always reaches into the image: it starts left of nx and ends right of 0.)
            unsafe {
                if !inside.is_empty() {
                    let start = inside.start as usize;
                    std::ptr::copy_nonoverlapping(
                        row.add(start),
                        base.wrapping_add(start),
                        inside.len(),
                    );
                }
            }
            let outside = (span.start..inside.start).chain(inside.end..span.end);
            for c in outside {
                let v = match border.source(c, nx) {
                    // SAFETY: `source` returns a column of the image; the row holds nx columns.
                    Some(sx) => unsafe { *row.add(sx) },
                    None => constant,
                };
                // SAFETY: as above, c lies inside the slot.
                unsafe { *base.wrapping_offset(c) = v };
            }
        }
        base
    }

    /// The constant border's row for this span, filled on first use.
    fn constant(&mut self) -> *const T {
        let base = self.slot_base(self.slots);
        if !self.constant_ready {
            self.constant_ready = true;
            let v = T::of(self.border.constant());
            for c in self.input_columns() {
                // SAFETY: c lies inside the slot (see `input_columns`).
                unsafe { *base.wrapping_offset(c) = v };
            }
        }
        base
    }

    /// Slot `slot` as a pointer indexable by input column (the span's first output column at
    /// offset `pad`).
    fn slot_base(&mut self, slot: usize) -> *mut T {
        self.buf
            .as_mut_ptr()
            .wrapping_add(slot * self.slot_len + self.pad)
            .wrapping_sub(self.cols.start)
    }

    /// The input columns the span reads, `cols.start − ax .. cols.end − ax + kw − 1`: at
    /// slot offsets from `pad − ax ≥ 0` to below `pad + cols.len() + kw ≤ slot_len`.
    fn input_columns(&self) -> Range<isize> {
        let first = self.cols.start as isize - self.ax as isize;
        first..first + (self.cols.len() + self.kw - 1) as isize
    }
}
