//! A zero-initialised heap buffer aligned to a cache line (and to whole pages when large), so
//! SIMD rows start on cache-line boundaries and the kernel can ask for transparent huge pages.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::Real;

/// Cache-line size the grid layout pads to.
pub const CACHE_LINE: usize = 64;

/// Elements of `T` per cache line.
pub(crate) const fn line_elems<T>() -> usize {
    CACHE_LINE / std::mem::size_of::<T>()
}

/// The first column of the cache line that holds column `x` of a row starting on a line: the
/// origin that gives a buffer's rows the same alignment within a line as the grid's.
pub(crate) const fn line_start<T>(x: usize) -> usize {
    x - x % line_elems::<T>()
}
const PAGE: usize = 4096;
const HUGE_PAGE: usize = 2 << 20;

/// An owned, zeroed, cache-line-aligned slice of `T`.
pub struct AlignedBuf<T: Real> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like Vec<T>; T is Send + Sync.
unsafe impl<T: Real> Send for AlignedBuf<T> {}
// SAFETY: shared access only hands out &[T], like Vec<T>.
unsafe impl<T: Real> Sync for AlignedBuf<T> {}

impl<T: Real> AlignedBuf<T> {
    /// Allocates `len` zeroed elements; `None` if the size overflows or the allocation fails.
    pub fn zeroed(len: usize) -> Option<Self> {
        if len == 0 {
            return Some(Self {
                ptr: NonNull::dangling(),
                len: 0,
            });
        }
        let layout = Self::layout(len)?;
        let raw = if layout.size() >= HUGE_PAGE {
            // The hint must come before the first write: a page touched without it is mapped
            // as 4 KiB (and the allocator's zeroing of an over-aligned block touches them all).
            // SAFETY: layout has non-zero size (len > 0 and T is not zero-sized).
            let raw = unsafe { alloc(layout) };
            if !raw.is_null() {
                advise_huge_pages(raw, layout.size());
                // SAFETY: raw is a fresh allocation of layout.size() writable bytes.
                unsafe { raw.write_bytes(0, layout.size()) };
            }
            raw
        } else {
            // SAFETY: as above.
            unsafe { alloc_zeroed(layout) }
        };
        let ptr = NonNull::new(raw.cast::<T>())?;
        Some(Self { ptr, len })
    }

    fn layout(len: usize) -> Option<Layout> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let align = if bytes >= HUGE_PAGE {
            HUGE_PAGE
        } else if bytes >= PAGE {
            PAGE
        } else {
            CACHE_LINE
        };
        Layout::from_size_align(bytes, align).ok()
    }
}

/// Asks Linux for transparent huge pages on a large buffer (fewer TLB misses when streaming
/// planes, as the 3.5D paper does with 2 MB pages); a no-op elsewhere or when refused.
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        // SAFETY: ptr..ptr+bytes is one live allocation aligned to 2 MiB; madvise only changes
        // paging hints and reports failure through its return value, which we may ignore.
        unsafe {
            madvise(ptr.cast(), bytes, MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

impl<T: Real> Drop for AlignedBuf<T> {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Self::layout(self.len).expect("layout was valid at allocation");
            // SAFETY: ptr was returned by alloc or alloc_zeroed with this same layout and is freed
            // once.
            unsafe { dealloc(self.ptr.as_ptr().cast(), layout) }
        }
    }
}

impl<T: Real> Deref for AlignedBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr is valid for len initialised (zeroed, and f32/f64 zero bits are 0.0) elements.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Real> DerefMut for AlignedBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Real> Clone for AlignedBuf<T> {
    fn clone(&self) -> Self {
        let mut copy = Self::zeroed(self.len).expect("allocation of a buffer that already exists");
        copy.copy_from_slice(self);
        copy
    }
}

impl<T: Real> std::fmt::Debug for AlignedBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf<{}>[{}]", T::DTYPE, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [1usize, 17, 1000, 1 << 20] {
            let b = AlignedBuf::<f32>::zeroed(len).unwrap();
            assert_eq!(b.as_ptr() as usize % CACHE_LINE, 0);
            assert!(b.iter().all(|&x| x == 0.0));
            assert_eq!(b.len(), len);
        }
        assert_eq!(AlignedBuf::<f64>::zeroed(0).unwrap().len(), 0);
        assert!(AlignedBuf::<f64>::zeroed(usize::MAX / 2).is_none());
    }

    /// The kernel's transparent-huge-page mode where it grants pages to `madvise`d regions
    /// (`None` where it would not: the test cannot expect huge pages there).
    #[cfg(target_os = "linux")]
    fn huge_pages_granted() -> Option<()> {
        let read =
            |f: &str| std::fs::read_to_string(format!("/sys/kernel/mm/transparent_hugepage/{f}"));
        let enabled = read("enabled").ok()?;
        let defrag = read("defrag").ok()?;
        let on = enabled.contains("[always]") || enabled.contains("[madvise]");
        (on && !defrag.contains("[never]")).then_some(())
    }

    /// Kilobytes of `/proc/self/smaps`' `AnonHugePages` in the mappings overlapping `range`.
    #[cfg(target_os = "linux")]
    fn huge_kb(range: std::ops::Range<usize>) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps is readable");
        let mut inside = false;
        let mut kb = 0;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = first.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a < range.end && range.start < b;
                    continue;
                }
            }
            if inside {
                if let Some(v) = line.strip_prefix("AnonHugePages:") {
                    kb += v
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<usize>()
                        .unwrap_or(0);
                }
            }
        }
        kb
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn large_buffers_are_backed_by_huge_pages() {
        if huge_pages_granted().is_none() {
            println!("skipped: transparent huge pages are off for madvised memory here");
            return;
        }
        // 16 MiB: eight huge pages. Asking after the zeroing had touched every page (the bug
        // this guards against) left them all 4 KiB where the mode is `madvise`.
        let b = AlignedBuf::<f32>::zeroed(4 << 20).unwrap();
        let start = b.as_ptr() as usize;
        let kb = huge_kb(start..start + b.len() * 4);
        assert!(kb >= 2048, "no huge page backs a 16 MiB buffer ({kb} kB)");
        assert!(b.iter().all(|&x| x == 0.0));
    }
}
