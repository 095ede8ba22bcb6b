//! Software prefetch of the rows a thread will read at its next pipeline step. Tiles narrower
//! than the grid read each plane as many short row segments, which hardware stream prefetchers
//! do not follow, so memory latency would show; asking for the next plane one step ahead hides
//! it (the 3.5D paper's "software prefetching").

use crate::aligned::CACHE_LINE;

/// Hints the cache hierarchy to fetch `len` elements starting at `row` (no effect on
/// correctness; the address is never dereferenced).
#[inline(always)]
pub(crate) fn prefetch_row<T>(row: *const T, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = len * std::mem::size_of::<T>();
        let start = row.cast::<i8>();
        let mut offset = 0;
        while offset < bytes + CACHE_LINE {
            // SAFETY: prefetch instructions never fault, whatever the address; SSE is part of the
            // x86_64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += CACHE_LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (row, len);
}
