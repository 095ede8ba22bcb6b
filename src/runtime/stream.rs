//! Non-temporal copies for the last level of a blocked pass. A row written with ordinary stores
//! is first read from memory (write-allocate), so each byte written to the output grid costs a
//! byte read as well; whole cache lines written with non-temporal stores skip that read. Both
//! blocked engines compute their last level's rows into a small cache-resident staging row and
//! copy them out with this: the lattice-Boltzmann kernel writes 19 arrays at once, more
//! streams than the CPU's write-combining buffers hold, so it copies one array at a time; the
//! stencil engine does so when the grid does not fit in the last-level cache. (Non-temporal
//! stores straight from the stencil's row kernel, between its loads and arithmetic, are slower
//! than ordinary stores and than this copy: a tight copy loop fills each write-combining buffer
//! at once.)

use crate::aligned::CACHE_LINE;

/// Copies `len` elements from `src` to `dst`: the cache lines that lie wholly inside the
/// destination range with non-temporal stores, the partial lines at either end with ordinary
/// ones (a neighbouring range may share those lines). Call [`fence`] before another thread may
/// read what was written.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` elements, and they must not overlap.
#[inline]
pub(crate) unsafe fn stream_copy<T: Copy>(dst: *mut T, src: *const T, len: usize) {
    let bytes = len * std::mem::size_of::<T>();
    let (d, s) = (dst.cast::<u8>(), src.cast::<u8>());
    let head = (d as usize).next_multiple_of(CACHE_LINE) - d as usize;
    // SAFETY (whole body): every offset touched is below `bytes`, inside both ranges.
    unsafe {
        if head + CACHE_LINE > bytes {
            std::ptr::copy_nonoverlapping(s, d, bytes);
            return;
        }
        std::ptr::copy_nonoverlapping(s, d, head);
        let end = head + (bytes - head) / CACHE_LINE * CACHE_LINE;
        lines(d.add(head), s.add(head), end - head);
        std::ptr::copy_nonoverlapping(s.add(end), d.add(end), bytes - end);
    }
}

/// Whole lines from `s` to the line-aligned `d` with non-temporal stores, as wide as the target
/// allows: one AVX-512 store per line, two AVX or four SSE2 ones (with 16-byte stores this loop
/// took 6% of a one-thread blocked star7 pass on the H100 machine's 16-core host; 64-byte ones
/// gained 1-5%).
///
/// # Safety
/// `d` is line-aligned; both ranges hold `bytes` (a multiple of the line) and do not overlap.
#[inline(always)]
unsafe fn lines(d: *mut u8, s: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut o = 0;
        while o < bytes {
            // SAFETY (each store): o + CACHE_LINE <= bytes in both ranges; d + o is line-aligned,
            // so every store address is aligned to its width; each instruction set is enabled
            // at compile time (SSE2 is part of the x86_64 baseline).
            #[cfg(target_feature = "avx512f")]
            unsafe {
                _mm512_stream_si512(d.add(o).cast(), _mm512_loadu_si512(s.add(o).cast()));
            }
            #[cfg(all(target_feature = "avx", not(target_feature = "avx512f")))]
            for k in (0..CACHE_LINE).step_by(32) {
                // SAFETY: as above.
                unsafe {
                    _mm256_stream_si256(
                        d.add(o + k).cast(),
                        _mm256_loadu_si256(s.add(o + k).cast()),
                    );
                }
            }
            #[cfg(not(any(target_feature = "avx", target_feature = "avx512f")))]
            for k in (0..CACHE_LINE).step_by(16) {
                // SAFETY: as above.
                unsafe {
                    _mm_stream_si128(d.add(o + k).cast(), _mm_loadu_si128(s.add(o + k).cast()));
                }
            }
            o += CACHE_LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded from the caller.
    unsafe {
        std::ptr::copy_nonoverlapping(s, d, bytes)
    }
}

/// Orders this thread's non-temporal stores before its later stores and atomics (they are
/// weakly ordered otherwise), so a barrier or join after it publishes them.
#[inline]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE has no operands and is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aligned::AlignedBuf;

    #[test]
    fn every_offset_and_length_copies_exactly_the_range() {
        let src: Vec<f32> = (0..300).map(|i| i as f32 + 0.5).collect();
        let mut dst = AlignedBuf::<f32>::zeroed(300).unwrap();
        for start in 0..20 {
            for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 64, 100, 250] {
                dst.fill(-1.0);
                // SAFETY: start + len <= 270 < 300 in both buffers, which are distinct.
                unsafe { stream_copy(dst.as_mut_ptr().add(start), src.as_ptr().add(start), len) };
                fence();
                for (i, &v) in dst.iter().enumerate() {
                    let want = if (start..start + len).contains(&i) {
                        src[i]
                    } else {
                        -1.0
                    };
                    assert_eq!(v, want, "start {start} len {len} index {i}");
                }
            }
        }
    }
}
