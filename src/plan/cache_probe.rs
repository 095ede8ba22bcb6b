//! The usable-cache probe: how much data all cores together can keep re-reading faster than
//! memory delivers it — the on-chip capacity `C` of the 3.5D paper's eq. (1), measured rather
//! than read from the OS.
//!
//! The OS reports what the hardware (or a hypervisor) claims. On a shared server slice the
//! last-level cache is shared with other tenants, and a virtual machine may report the whole
//! socket's cache — or a figure that matches no cache at all (a 16-core slice reporting a
//! 300 MiB L3). Tiles sized from such a figure spill to memory and run slower than no blocking.
//! The probe streams (read, scale, write back) a private buffer per thread, doubling the
//! footprint up to twice the reported cache, and keeps the largest footprint that still streams
//! at least [`CACHE_SPEEDUP`]× as fast as the largest one (which memory serves; the same access
//! pattern, so write-allocate traffic does not skew the ratio).
//!
//! The first footprint (half of each thread's private cache) also gives the rate the private
//! caches stream at, which `probe` reports beside the last level's; how much a ring buffer
//! that spills out of the private caches slows the kernels down follows the last level's rate
//! per core (`Machine::spill_speed`).
//!
//! Cached on disk per boot with the bandwidth; `STENCIL35D_CACHE_BYTES` sets it instead.

use crate::tuning::Tuning;
use std::time::Instant;

use super::bandwidth::{boot_key, read_cache, write_cache};
use super::pinned::{fastest_span, on_pinned_threads};

/// How much faster than the memory-resident footprint a footprint must stream to count as
/// cached.
pub const CACHE_SPEEDUP: f64 = 2.0;
/// Timed repetitions per footprint; the fastest counts.
const REPEATS: usize = 3;
/// Bytes each thread streams per footprint (enough passes to time a cache-resident buffer).
const TRAFFIC_PER_THREAD: usize = 32 << 20;

/// One point of the probe: total footprint over all threads and its streaming rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachePoint {
    /// Bytes streamed repeatedly, summed over the threads.
    pub bytes: usize,
    /// Read plus write rate, GB/s.
    pub gbs: f64,
}

/// What the probe found (all threads together).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CacheUse {
    /// The usable cache, bytes.
    pub(crate) bytes: usize,
    /// The rate all threads stream it at, GB/s (0 when unknown).
    pub(crate) gbs: f64,
    /// The rate all threads stream half their private caches at, GB/s (0 when unknown).
    pub(crate) private_gbs: f64,
    /// Where the figures came from.
    pub(crate) source: String,
}

/// The usable cache and its rates: from `STENCIL35D_CACHE_BYTES` (no rates), from this boot's
/// disk cache, or measured now.
pub(crate) fn measured_or_cached(
    threads: usize,
    llc_bytes: usize,
    private_bytes: usize,
) -> CacheUse {
    if let Some(b) = Tuning::current().cache_bytes {
        // No more cache than the OS reports can be used: a larger value is capped, and says so.
        let source = if b > llc_bytes {
            format!("STENCIL35D_CACHE_BYTES {b} capped at the last-level cache's {llc_bytes} bytes")
        } else {
            "STENCIL35D_CACHE_BYTES".into()
        };
        return CacheUse {
            bytes: b.min(llc_bytes),
            gbs: 0.0,
            private_gbs: 0.0,
            source,
        };
    }
    let key = format!("{} cache threads={threads} llc={llc_bytes}", boot_key());
    let (rate_key, private_key) = (format!("{key} rate"), format!("{key} private rate"));
    if let (Some(b), Some(gbs), Some(private_gbs)) = (
        read_cache(&key),
        read_cache(&rate_key),
        read_cache(&private_key),
    ) {
        return CacheUse {
            bytes: b as usize,
            gbs,
            private_gbs,
            source: "measured earlier this boot".into(),
        };
    }
    let curve = confirmed_curve(
        measure_cache_curve(threads, llc_bytes, private_bytes),
        || measure_cache_curve(threads, llc_bytes, private_bytes),
    );
    let (bytes, gbs) = usable(&curve)
        .map(|p| (p.bytes, p.gbs))
        .unwrap_or((private_bytes * threads.max(1) / 2, 0.0));
    let private_gbs = curve.first().map_or(0.0, |p| p.gbs);
    if super::contention::disturbed() {
        return CacheUse {
            bytes,
            gbs,
            private_gbs,
            source: super::bandwidth::DISTURBED_SOURCE.into(),
        };
    }
    write_cache(&key, bytes as f64);
    write_cache(&rate_key, gbs);
    write_cache(&private_key, private_gbs);
    CacheUse {
        bytes,
        gbs,
        private_gbs,
        source: "measured".into(),
    }
}

/// `first`, or a second curve from `again` when `first` finds no usable cache beyond the private
/// caches (its usable footprint is its smallest, or none) and the second finds more. On the
/// 16-core server the last-level footprints stream only ~2.1× as fast as memory, so one slow
/// footprint can end the run early: one probe in three on a boot kept just the private caches
/// (spill speed 100%), which sent star7 `f64` to 96×74 tiles. A machine that
/// really has nothing beyond its private caches pays one more curve, once per boot.
fn confirmed_curve(
    first: Vec<CachePoint>,
    again: impl FnOnce() -> Vec<CachePoint>,
) -> Vec<CachePoint> {
    let beyond_private = |curve: &[CachePoint]| {
        usable(curve).is_some_and(|p| curve.first().is_some_and(|f| p.bytes > f.bytes))
    };
    if beyond_private(&first) {
        return first;
    }
    let second = again();
    if beyond_private(&second) {
        second
    } else {
        first
    }
}

/// The largest footprint of `curve` (smallest first) that streams at least [`CACHE_SPEEDUP`]×
/// as fast as the last (memory-resident) one, counting only the unbroken run from the smallest
/// footprint; `None` when too few footprints were measured or none is fast enough.
pub fn usable_bytes(curve: &[CachePoint]) -> Option<usize> {
    usable(curve).map(|p| p.bytes)
}

/// The point of `curve` that [`usable_bytes`] picks.
fn usable(curve: &[CachePoint]) -> Option<CachePoint> {
    let memory = curve.last().filter(|_| curve.len() >= 3)?.gbs;
    curve
        .iter()
        .take_while(|p| p.gbs >= CACHE_SPEEDUP * memory)
        .last()
        .copied()
}

/// Streams footprints from half the private cache per thread up to twice the reported
/// last-level cache (all threads together, at most 1 GiB), doubling; one point per footprint.
pub fn measure_cache_curve(
    threads: usize,
    llc_bytes: usize,
    private_bytes: usize,
) -> Vec<CachePoint> {
    let threads = threads.max(1);
    let mut per_thread = (private_bytes / 2).max(64 << 10);
    // At most 1 GiB in all: a (virtual) machine may report an implausibly large cache.
    let last = (2 * llc_bytes).min(1 << 30) / threads;
    let mut curve = Vec::new();
    while per_thread <= last {
        let n = per_thread / std::mem::size_of::<f64>();
        let passes = (TRAFFIC_PER_THREAD / per_thread).max(2);
        let spans: Vec<Vec<(Instant, Instant)>> = on_pinned_threads(threads, |start| {
            let mut a: Vec<f64> = (0..n).map(|i| i as f64).collect();
            // One untimed pass brings the buffer into whatever cache holds it.
            scale(&mut a, 1.0);
            (0..REPEATS)
                .map(|_| {
                    start.wait();
                    let t0 = Instant::now();
                    for p in 0..passes {
                        scale(&mut a, 1.0 + p as f64 * 1e-12);
                    }
                    (t0, Instant::now())
                })
                .collect()
        });
        let best = fastest_span(&spans, 0..REPEATS);
        let Some(best) = best.filter(|_| spans.len() == threads) else {
            break;
        };
        let bytes = (2 * per_thread * passes * threads) as f64;
        curve.push(CachePoint {
            bytes: per_thread * threads,
            gbs: bytes / best.max(1e-9) / 1e9,
        });
        per_thread *= 2;
    }
    curve
}

#[inline(never)]
fn scale(a: &mut [f64], k: f64) {
    for v in a.iter_mut() {
        *v *= k;
    }
    std::hint::black_box(a);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_bytes_stops_at_the_first_slow_footprint() {
        let p = |mib: usize, gbs: f64| CachePoint {
            bytes: mib << 20,
            gbs,
        };
        let curve = [
            p(1, 400.0),
            p(2, 300.0),
            p(4, 90.0),
            p(8, 250.0),
            p(16, 50.0),
        ];
        assert_eq!(usable_bytes(&curve), Some(2 << 20));
        assert_eq!(
            usable_bytes(&curve[..4]),
            None,
            "250 GB/s is the floor: none is 2x faster"
        );
        assert_eq!(
            usable_bytes(&curve[..3]),
            Some(2 << 20),
            "90 GB/s is the floor"
        );
        assert_eq!(usable_bytes(&curve[..2]), None, "too few points");
    }

    /// A curve that keeps only the private caches is measured again, and the second counts if
    /// it finds more; a curve that finds the last-level cache is not re-measured.
    #[test]
    fn a_curve_stopping_at_the_private_caches_is_measured_again() {
        let p = |mib: usize, gbs: f64| CachePoint {
            bytes: mib << 20,
            gbs,
        };
        // The 16-core host: the L3 plateau at ~2.1x memory, one footprint dipping.
        let dipped = vec![
            p(16, 470.0),
            p(32, 280.0),
            p(64, 300.0),
            p(128, 307.0),
            p(512, 145.0),
        ];
        let good = vec![
            p(16, 470.0),
            p(32, 296.0),
            p(64, 300.0),
            p(128, 307.0),
            p(512, 145.0),
        ];
        assert_eq!(usable_bytes(&dipped), Some(16 << 20));
        let chosen = confirmed_curve(dipped.clone(), || good.clone());
        assert_eq!(usable_bytes(&chosen), Some(128 << 20));
        let kept = confirmed_curve(good.clone(), || panic!("a good curve is not re-measured"));
        assert_eq!(kept, good);
        // Nothing beyond the private caches either time: the first curve stands.
        let private_only = vec![p(16, 470.0), p(32, 150.0), p(64, 148.0), p(512, 145.0)];
        let again = vec![p(16, 460.0), p(32, 149.0), p(64, 147.0), p(512, 146.0)];
        assert_eq!(
            confirmed_curve(private_only.clone(), || again),
            private_only
        );
    }
}
