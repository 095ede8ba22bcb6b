//! Software prefetch of the rows a thread will read at its next pipeline step. Tiles narrower
//! than the grid read each plane as many short row segments, which hardware stream prefetchers
//! do not follow, so memory latency would show; asking for the next plane one step ahead hides
//! it (the 3.5D paper's "software prefetching"). The lattice-Boltzmann rows read 19 streams at
//! once, more than the hardware prefetchers track, so they ask for each a few lines ahead.

use crate::aligned::CACHE_LINE;

/// Hints the cache hierarchy to fetch `len` elements starting at `row` (no effect on
/// correctness; the address is never dereferenced).
#[inline(always)]
pub(crate) fn prefetch_row<T>(row: *const T, len: usize) {
    let bytes = len * std::mem::size_of::<T>();
    let mut offset = 0;
    while offset < bytes + CACHE_LINE {
        prefetch_line(row.cast::<u8>().wrapping_add(offset));
        offset += CACHE_LINE;
    }
}

/// Hints the cache hierarchy to fetch the cache line holding `p` into L1 (no effect on
/// correctness; the address is never dereferenced and may lie outside any allocation).
#[inline(always)]
pub(crate) fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetch instructions never fault, whatever the address; SSE is part of the
        // x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
