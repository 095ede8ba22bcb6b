//! Staging rows: a row's outputs computed into a small cache-resident buffer (19 arrays of one
//! row) and then streamed to the lattice one array at a time with non-temporal stores (see
//! `crate::runtime::stream`). Written directly, the 19 output streams would each be read from
//! memory before being overwritten (write-allocate), a third of a sweep's memory traffic.

use super::model::Q;
use super::rows::{consecutive_arrays, z_class, AxisMap, Level, Slots};
use crate::aligned::{line_elems, line_start, AlignedBuf};
use crate::grid::padded_stride;
use crate::runtime::stream::stream_copy;
use crate::Real;

/// One thread's staging row, for rows of up to `width` nodes.
pub(crate) struct Stage<T: Real> {
    buf: AlignedBuf<T>,
    pitch: usize,
}

impl<T: Real> Stage<T> {
    /// A staging row for rows of at most `width` nodes starting at any column.
    pub(crate) fn new(width: usize) -> Self {
        let line = line_elems::<T>();
        let pitch = padded_stride::<T>(width + 2 * line);
        Stage {
            buf: AlignedBuf::zeroed(Q * pitch).expect("a staging row is a few KiB"),
            pitch,
        }
    }

    /// The staging row as a level whose columns `x0 ..` (at most `width` of them) map into it,
    /// with the same alignment within a cache line as the lattice's.
    pub(crate) fn level(&mut self, x0: usize) -> Level<T> {
        Level {
            base: self.buf.as_mut_ptr(),
            arrays: consecutive_arrays(self.pitch),
            plane: 0,
            pitch: 0,
            origin: [line_start::<T>(x0) as isize, 0],
            y: AxisMap::Direct,
            z: AxisMap::Direct,
            slots: Slots::All,
        }
    }
}

/// Streams columns `x0 .. x1` of the row held in `staged` (from [`Stage::level`]) to row
/// `(y, z)` of `dst`. Call `crate::runtime::stream::fence` before another thread reads it.
///
/// # Safety
/// `staged` must come from a live [`Stage`] whose columns cover `x0 .. x1`, and row `(y, z)` of
/// `dst` must be writable at those columns by this thread alone.
#[inline]
pub(crate) unsafe fn stream_row<T: Real>(
    staged: &Level<T>,
    dst: &Level<T>,
    y: isize,
    z: isize,
    x0: usize,
    x1: usize,
) {
    let planes = [
        dst.plane_offset(0, z),
        dst.plane_offset(1, z),
        dst.plane_offset(2, z),
    ];
    let row = dst.row_offset(y);
    for i in 0..Q {
        let plane = planes[z_class(i)];
        // SAFETY: the caller guarantees both rows at columns x0 .. x1; they are distinct
        // buffers.
        unsafe {
            stream_copy(
                dst.row(i, plane, row).add(x0),
                staged.row(i, 0, 0).add(x0).cast_const(),
                x1 - x0,
            )
        };
    }
}
