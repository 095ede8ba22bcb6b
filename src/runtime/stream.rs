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
use crate::Level;

/// Copies `len` elements from `src` to `dst`: the cache lines that lie wholly inside the
/// destination range with non-temporal stores, the partial lines at either end with ordinary
/// ones (a neighbouring range may share those lines). Call [`fence`] before another thread may
/// read what was written.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` elements, and they must not overlap.
#[inline]
pub(crate) unsafe fn stream_copy<T: Copy>(dst: *mut T, src: *const T, len: usize) {
    // SAFETY: forwarded; the detected level is one the CPU has.
    unsafe { stream_copy_at(Level::detected(), dst, src, len) }
}

/// [`stream_copy`] with the stores of instruction-set `level`.
///
/// # Safety
/// As for [`stream_copy`]; the CPU must have `level`.
#[inline]
unsafe fn stream_copy_at<T: Copy>(level: Level, dst: *mut T, src: *const T, len: usize) {
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
        lines(level, d.add(head), s.add(head), end - head);
        std::ptr::copy_nonoverlapping(s.add(end), d.add(end), bytes - end);
    }
}

/// Whole lines from `s` to the line-aligned `d` with non-temporal stores, as wide as `level`
/// allows: one AVX-512 store per line, two AVX or four SSE2 ones (with 16-byte stores this loop
/// took 6% of a one-thread blocked star7 pass on the H100 machine's 16-core host; 64-byte ones
/// gained 1-5%; on the 2-core AMD EPYC Zen 5 the lattice's copy-out took 1.7× as long with
/// 16-byte stores).
///
/// # Safety
/// `d` is line-aligned; both ranges hold `bytes` (a multiple of the line) and do not overlap;
/// the CPU has `level`.
#[inline(always)]
unsafe fn lines(level: Level, d: *mut u8, s: *const u8, bytes: usize) {
    // SAFETY (each call): forwarded from the caller, who guarantees the level.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        match level {
            Level::Avx512 => x86::lines_avx512(d, s, bytes),
            Level::Avx2 => x86::lines_avx(d, s, bytes),
            Level::Base => x86::lines_sse2(d, s, bytes),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded from the caller.
    unsafe {
        let _ = level;
        std::ptr::copy_nonoverlapping(s, d, bytes)
    }
}

/// The non-temporal line copies of each x86-64 level. Safety of each: `d` is line-aligned,
/// both ranges hold `bytes` (a multiple of the line) and do not overlap, and the CPU has the
/// function's target features; then every store address is aligned to its width.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CACHE_LINE;
    use std::arch::x86_64::*;

    /// One 64-byte store per line.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn lines_avx512(d: *mut u8, s: *const u8, bytes: usize) {
        for o in (0..bytes).step_by(CACHE_LINE) {
            // SAFETY: see the module docs.
            unsafe { _mm512_stream_si512(d.add(o).cast(), _mm512_loadu_si512(s.add(o).cast())) };
        }
    }

    /// Two 32-byte stores per line.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn lines_avx(d: *mut u8, s: *const u8, bytes: usize) {
        for o in (0..bytes).step_by(32) {
            // SAFETY: see the module docs.
            unsafe { _mm256_stream_si256(d.add(o).cast(), _mm256_loadu_si256(s.add(o).cast())) };
        }
    }

    /// Four 16-byte stores per line (SSE2 is part of the x86-64 baseline).
    pub(super) unsafe fn lines_sse2(d: *mut u8, s: *const u8, bytes: usize) {
        for o in (0..bytes).step_by(16) {
            // SAFETY: see the module docs.
            unsafe { _mm_stream_si128(d.add(o).cast(), _mm_loadu_si128(s.add(o).cast())) };
        }
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
        for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
            copies_exactly_the_range(level);
        }
    }

    fn copies_exactly_the_range(level: Level) {
        let src: Vec<f32> = (0..300).map(|i| i as f32 + 0.5).collect();
        let mut dst = AlignedBuf::<f32>::zeroed(300).unwrap();
        for start in 0..20 {
            for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 64, 100, 250] {
                dst.fill(-1.0);
                // SAFETY: start + len <= 270 < 300 in both buffers, which are distinct.
                unsafe {
                    stream_copy_at(
                        level,
                        dst.as_mut_ptr().add(start),
                        src.as_ptr().add(start),
                        len,
                    )
                };
                fence();
                for (i, &v) in dst.iter().enumerate() {
                    let want = if (start..start + len).contains(&i) {
                        src[i]
                    } else {
                        -1.0
                    };
                    assert_eq!(v, want, "{level} start {start} len {len} index {i}");
                }
            }
        }
    }
}
