//! A zero-initialised heap buffer aligned to a cache line (to whole pages when large; from
//! 2 MiB on Linux, a mapping of its own on a huge-page boundary), so SIMD rows start on
//! cache-line boundaries and large buffers get transparent huge pages.

use std::alloc::{alloc_zeroed, dealloc, Layout};
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
        let raw = allocate_zeroed(layout);
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

/// Zeroed memory for `layout`, or null (also for a zero size, which callers never ask for).
/// On Linux a block of a huge page or more is a mapping of its own (see [`huge`]); smaller ones
/// come from the global allocator.
fn allocate_zeroed(layout: Layout) -> *mut u8 {
    if layout.size() == 0 {
        return std::ptr::null_mut();
    }
    #[cfg(target_os = "linux")]
    if layout.size() >= HUGE_PAGE {
        return huge::map(layout.size());
    }
    // SAFETY: layout has non-zero size (checked above).
    unsafe { alloc_zeroed(layout) }
}

/// Frees what [`allocate_zeroed`] returned for `layout`.
///
/// # Safety
/// `ptr` must come from `allocate_zeroed(layout)`, be non-null and be freed once.
unsafe fn release(ptr: *mut u8, layout: Layout) {
    #[cfg(target_os = "linux")]
    if layout.size() >= HUGE_PAGE {
        // SAFETY: forwarded from the caller.
        unsafe { huge::unmap(ptr, layout.size()) };
        return;
    }
    // SAFETY: forwarded from the caller: ptr came from alloc_zeroed with this layout.
    unsafe { dealloc(ptr, layout) }
}

/// Large buffers as anonymous mappings on 2 MiB boundaries, asked for transparent huge pages
/// before any page is touched (fewer TLB misses when streaming planes, as the 3.5D paper does
/// with 2 MB pages), then populated. Through the global allocator the hint came too late: it
/// zeroes an over-aligned block (touching every page) before returning it, and reuses freed
/// memory whose pages are already mapped small.
#[cfg(target_os = "linux")]
mod huge {
    use super::HUGE_PAGE;

    /// The kernel's page size (4 KiB on x86-64; 16 or 64 KiB on some arm64 and ppc64 kernels).
    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions and is thread-safe.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
    }

    /// `bytes` of zero pages starting on a huge-page boundary, all mapped (as huge pages where
    /// the kernel grants them), or null when the memory is not there.
    pub(super) fn map(bytes: usize) -> *mut u8 {
        let page = page_size();
        let len = bytes.next_multiple_of(page);
        let Some(span) = len.checked_add(HUGE_PAGE) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a new private anonymous mapping at an address the kernel picks; it touches
        // no existing memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let base = base as usize;
        let start = base.next_multiple_of(HUGE_PAGE);
        let (head, tail) = (start - base, base + span - (start + len));
        // SAFETY: the head and tail lie inside the mapping just made, start and end on page
        // boundaries (base, HUGE_PAGE and len are page multiples), and nothing refers to them;
        // munmap of such a range fails only when the kernel cannot split the mapping, which
        // would leave those pages mapped (a leak, not unsoundness). madvise(MADV_HUGEPAGE)
        // only sets a paging hint; its failure (THP off) is harmless.
        unsafe {
            if head > 0 {
                libc::munmap(base as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        // Fault every page in now, writable, in pieces on the global rayon pool: the kernel
        // zeroes each page as it maps it, which for gigabytes takes seconds on one core. Inside
        // a pool's worker (an engine's buffers, allocated where a lock may be held) the pieces
        // go in turn: a worker waiting for its pieces could take up other work meanwhile.
        use rayon::prelude::*;
        let pieces = len.div_ceil(POPULATE_PIECE);
        let piece = |i: usize| {
            let at = i * POPULATE_PIECE;
            populate(start + at, POPULATE_PIECE.min(len - at), page)
        };
        let populated = if rayon::current_thread_index().is_none() {
            (0..pieces).into_par_iter().all(piece)
        } else {
            (0..pieces).all(piece)
        };
        if !populated {
            // The pages could not be populated (ENOMEM, EFAULT): give the mapping back and
            // report the allocation as failed.
            // SAFETY: the mapping kept above, referred to by nothing yet.
            unsafe { libc::munmap(start as *mut libc::c_void, len) };
            return std::ptr::null_mut();
        }
        start as *mut u8
    }

    /// Bytes one worker populates at a time: a whole number of huge pages.
    const POPULATE_PIECE: usize = 16 * HUGE_PAGE;

    /// Faults in the `len` bytes at `start` (page-aligned, within a fresh writable mapping)
    /// writable; returns false when the memory is not there.
    fn populate(start: usize, len: usize, page: usize) -> bool {
        // Writable from the start: read first, an untouched range would map the shared huge
        // zero page, which older kernels split into small pages on the first write.
        // SAFETY: the range lies in the caller's mapping, readable and writable.
        let populated =
            unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
        if populated == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return false;
        }
        // Kernels before 5.14 lack MADV_POPULATE_WRITE: write a zero into every page.
        for offset in (0..len).step_by(page) {
            // SAFETY: start + offset lies in the caller's writable mapping; writing a zero
            // keeps the fresh page's contents.
            unsafe { std::ptr::write_volatile((start + offset) as *mut u8, 0) };
        }
        true
    }

    /// Unmaps a block from [`map`].
    ///
    /// # Safety
    /// `ptr` must come from `map(bytes)` and not be used afterwards.
    pub(super) unsafe fn unmap(ptr: *mut u8, bytes: usize) {
        // SAFETY: the caller hands back the whole mapping `map` kept for `bytes`.
        unsafe { libc::munmap(ptr.cast(), bytes.next_multiple_of(page_size())) };
    }
}

impl<T: Real> Drop for AlignedBuf<T> {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Self::layout(self.len).expect("layout was valid at allocation");
            // SAFETY: ptr was returned by allocate_zeroed with this same layout and is freed
            // once.
            unsafe { release(self.ptr.as_ptr().cast(), layout) }
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

impl<T: Real> AlignedBuf<T> {
    /// A copy, made in pieces on the global rayon pool (one core does not reach the memory
    /// bandwidth of a many-core host); inside a pool's worker, in one piece (as
    /// `huge::map` populates). `None` when the allocation fails (a process limit such as
    /// `ulimit -v` the memory figures do not see).
    pub fn try_clone(&self) -> Option<Self> {
        use rayon::prelude::*;
        let mut copy = Self::zeroed(self.len)?;
        if rayon::current_thread_index().is_some() {
            copy.copy_from_slice(self);
            return Some(copy);
        }
        let piece = (1 << 20) / std::mem::size_of::<T>();
        copy.par_chunks_mut(piece)
            .zip(self.par_chunks(piece))
            .for_each(|(d, s)| d.copy_from_slice(s));
        Some(copy)
    }
}

impl<T: Real> Clone for AlignedBuf<T> {
    /// [`AlignedBuf::try_clone`]; panics where the allocation fails (paths that must not
    /// panic call `try_clone`).
    fn clone(&self) -> Self {
        self.try_clone()
            .expect("allocation of a buffer that already exists")
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

    /// Why this process cannot count on huge pages for `madvise`d memory, if it cannot: THP
    /// off for the system, the 2 MiB size or the process, or no compaction when none is free.
    #[cfg(target_os = "linux")]
    fn huge_pages_unavailable() -> Option<String> {
        let sys =
            |f: &str| std::fs::read_to_string(format!("/sys/kernel/mm/transparent_hugepage/{f}"));
        let Ok(enabled) = sys("enabled") else {
            return Some("no transparent_hugepage in /sys".into());
        };
        if !(enabled.contains("[always]") || enabled.contains("[madvise]")) {
            return Some(format!("THP is {}", enabled.trim()));
        }
        if sys("hpage_pmd_size").is_ok_and(|v| v.trim() != (HUGE_PAGE).to_string()) {
            return Some("transparent huge pages here are not 2 MiB".into());
        }
        if sys("hugepages-2048kB/enabled").is_ok_and(|e| e.contains("[never]")) {
            return Some("2 MiB THP is never".into());
        }
        let defrag = sys("defrag").unwrap_or_default();
        if !["[always]", "[madvise]", "[defer+madvise]"]
            .iter()
            .any(|m| defrag.contains(m))
        {
            return Some(format!(
                "no direct compaction for madvised memory (defrag: {})",
                defrag.trim()
            ));
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if status.lines().any(|l| {
            l.strip_prefix("THP_enabled:")
                .is_some_and(|v| v.trim() == "0")
        }) {
            return Some("THP is disabled for this process".into());
        }
        None
    }

    /// Kilobytes of `AnonHugePages` in the mappings overlapping `range` (`None`: no smaps).
    #[cfg(target_os = "linux")]
    fn huge_kb(range: std::ops::Range<usize>) -> Option<usize> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
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
        Some(kb)
    }

    /// Large buffers start on a huge-page boundary, so that the pages `madvise` asks for can
    /// be huge: a property of the allocation alone.
    #[test]
    fn large_buffers_start_on_a_huge_page_boundary() {
        for len in [(2 << 20) + 1, 4 << 20, 5_000_000] {
            let b = AlignedBuf::<f32>::zeroed(len).unwrap();
            assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0, "{len} values");
            assert!(b.iter().all(|&x| x == 0.0));
        }
    }

    /// Whether the kernel backs the advised buffer with huge pages depends on the system's
    /// THP settings and on free, unfragmented memory at that moment (compaction may fail on a
    /// busy host), so this is a check of the machine, not part of the default suite. Run it
    /// with `cargo test --release --lib aligned -- --ignored`.
    #[test]
    #[cfg(target_os = "linux")]
    #[ignore = "depends on the system's huge pages; run with --ignored"]
    fn large_buffers_are_backed_by_huge_pages() {
        if let Some(why) = huge_pages_unavailable() {
            println!("skipped: {why}");
            return;
        }
        // Heap memory already mapped small: through the global allocator, freeing the 24 MiB
        // block raised glibc's mapping threshold, so the 20 MiB Vec and a later 16 MiB block
        // came from the heap.
        drop(AlignedBuf::<f32>::zeroed(6 << 20));
        let mut touched = vec![1u8; 20 << 20];
        touched[12345] = 2;
        drop(std::hint::black_box(touched));
        // 16 MiB: eight huge pages. Advised after the allocator's zeroing had touched every
        // page (the first bug this guards against) or taken from that heap (the second), none
        // were huge.
        let b = AlignedBuf::<f32>::zeroed(4 << 20).unwrap();
        let start = b.as_ptr() as usize;
        assert_eq!(start % HUGE_PAGE, 0);
        let Some(kb) = huge_kb(start..start + b.len() * 4) else {
            println!("skipped: /proc/self/smaps is unreadable");
            return;
        };
        assert!(kb >= 2048, "no huge page backs a 16 MiB buffer ({kb} kB)");
        assert!(b.iter().all(|&x| x == 0.0));
    }
}
