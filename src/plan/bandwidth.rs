//! The memory-bandwidth probe: a short multi-threaded STREAM-style "scale" sweep (`b = s·a`, one
//! read and one ordinary store per element, the same traffic pattern as a naive stencil sweep)
//! over arrays several times larger than the last-level cache, the median of a few repetitions
//! (one repetition disturbed by other work does not move it).
//!
//! The result is cached on disk per boot (the key includes `/proc/sys/kernel/random/boot_id`),
//! so CLI calls and test binaries after the first do not run the full probe. A cached figure
//! is checked against one quick sweep (three repetitions over the same arrays) by the first
//! process that reads it [`REVALIDATE_AFTER_SECS`] or more after it was measured or last
//! confirmed, and measured again in full where they disagree by more than
//! [`REVALIDATE_DEVIATION`]: a figure measured under another load of the machine, or misread,
//! would otherwise steer every plan of the boot. Each of the sweep's two arrays is four times
//! the last-level cache (64 MiB to 1 GiB), whose allocation and first touch take seconds where
//! that cache is large, so processes started in quick succession (a test suite, a script of
//! CLI calls) share one check. Both arrays together take at most a quarter of the memory the
//! system has available; a figure measured on arrays cut shorter than that may come from the
//! cache and serves its process only. Set `STENCIL35D_BANDWIDTH_GBS` to skip the probe,
//! `STENCIL35D_CACHE_DIR` to move the cache.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::tuning::Tuning;

use super::contention::disturbed;
use super::pinned::{median_span, on_pinned_threads};

/// Bandwidth of `threads` cores in GB/s and where it came from: `STENCIL35D_BANDWIDTH_GBS`,
/// the cache, or a fresh measurement.
pub(crate) fn measured_or_cached(threads: usize, llc_bytes: usize, refresh: bool) -> (f64, String) {
    revalidated(
        (Tuning::current().bandwidth_gbs, "STENCIL35D_BANDWIDTH_GBS"),
        &cache_key(threads, llc_bytes),
        refresh,
        |reps| measure_reps(threads, llc_bytes, reps),
    )
}

/// Bandwidth of one core on its own in GB/s and where it came from:
/// `STENCIL35D_CORE_BANDWIDTH_GBS`, the cache, or a fresh measurement.
pub(crate) fn core_measured_or_cached(llc_bytes: usize, refresh: bool) -> (f64, String) {
    revalidated(
        (
            Tuning::current().core_bandwidth_gbs,
            "STENCIL35D_CORE_BANDWIDTH_GBS",
        ),
        &cache_key(1, llc_bytes),
        refresh,
        |reps| measure_reps(1, llc_bytes, reps),
    )
}

/// A cached figure further than this share from a quick sweep is measured again in full.
pub(crate) const REVALIDATE_DEVIATION: f64 = 0.3;

/// Set once a probe of this process ran on arrays cut short by the memory available.
static CAPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a bandwidth probe of this process ran on arrays smaller than four times the
/// last-level cache, cut short by the memory available: they may have streamed from the
/// cache, so its figures are neither cached nor compared with a cached one.
fn capped() -> bool {
    CAPPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Seconds a measured or confirmed figure stands before a process checks it again.
pub(crate) const REVALIDATE_AFTER_SECS: u64 = 600;

/// Timed repetitions of the full probe (after one warm-up).
const FULL_REPS: usize = 5;

/// Timed repetitions of the quick check of a cached figure.
const QUICK_REPS: usize = 3;

/// [`cached_measurement`] for a bandwidth, with `measure(reps)` timing `reps` repetitions: a
/// cached figure is kept only if a quick measurement agrees with it.
fn revalidated(
    set: (Option<f64>, &str),
    key: &str,
    refresh: bool,
    measure: impl Fn(usize) -> f64,
) -> (f64, String) {
    let (v, source) = cached_measurement(set, key, refresh, || measure(FULL_REPS));
    if source != CACHED_SOURCE || checked_within(key, REVALIDATE_AFTER_SECS) {
        return (v, source);
    }
    let quick = measure(QUICK_REPS);
    // A disturbed or cut-short sweep proves nothing either way.
    let unsure = disturbed() || capped();
    if keeps_cached(v, quick, unsure) {
        if !unsure {
            write_cache(key, v); // stamped as confirmed
        }
        return (v, source);
    }
    let (fresh, how) = cached_measurement(set, key, true, || measure(FULL_REPS));
    let note = format!("{how}; the cached {v:.1} GB/s disagreed with a quick sweep ({quick:.1})");
    (fresh, note)
}

/// Whether a cached figure stands after a quick measurement `quick`: it agrees within
/// [`REVALIDATE_DEVIATION`], or the quick sweep was disturbed (then it proves nothing).
fn keeps_cached(cached: f64, quick: f64, disturbed: bool) -> bool {
    disturbed || (quick / cached - 1.0).abs() <= REVALIDATE_DEVIATION
}

/// The all-core bandwidth `bw` (from `source`), at most `cores` times one core's `core_bw`
/// (with 10% for timing noise): n threads cannot stream faster than n times one thread, so a
/// larger figure is a misreading (a cached figure from another state of the machine, a probe
/// whose timer was disturbed). Unchanged when either is unknown or set by a knob.
pub(crate) fn within_cores(bw: f64, source: String, core_bw: f64, cores: usize) -> (f64, String) {
    let limit = 1.1 * cores as f64 * core_bw;
    let measured = !source.starts_with("STENCIL35D_");
    if measured && core_bw > 0.0 && bw > limit {
        let note = format!("{source}; {bw:.1} GB/s capped at {cores} × one core's {core_bw:.1}");
        return (limit, note);
    }
    (bw, source)
}

/// A probe's figure and where it came from: the tuning knob's value `set.0` (whose variable is
/// `set.1`) if set, else the value cached under `key` this boot (unless `refresh`), else
/// `measure()`, which is then cached.
pub(crate) fn cached_measurement(
    set: (Option<f64>, &str),
    key: &str,
    refresh: bool,
    measure: impl FnOnce() -> f64,
) -> (f64, String) {
    if let (Some(v), var) = set {
        return (v, var.to_string());
    }
    if !refresh {
        if let Some(v) = read_cache(key) {
            return (v, CACHED_SOURCE.into());
        }
    }
    let v = measure();
    if disturbed() {
        return (v, DISTURBED_SOURCE.into());
    }
    if capped() {
        return (v, CAPPED_SOURCE.into());
    }
    if !(v.is_finite() && v > 0.0) {
        return (v, "measured, implausible; not cached".into());
    }
    write_cache(key, v);
    (v, "measured".into())
}

/// The source of a figure read from the cache.
pub(crate) const CACHED_SOURCE: &str = "measured earlier this boot";

/// The source of a figure measured on arrays cut short by the memory available: it serves
/// this process only.
pub(crate) const CAPPED_SOURCE: &str =
    "measured on arrays cut short by the memory available (the cache may have served them); not cached";

/// The source of a figure measured while probe threads waited for their cores: it serves this
/// process only.
pub(crate) const DISTURBED_SOURCE: &str = "measured while other work shared the cores; not cached";

/// Measures the copy-scale bandwidth with `threads` threads pinned to the cores, each scaling
/// its own pair of arrays (touched first by the thread that uses them, for NUMA placement);
/// bytes read plus bytes written over the median of 5 timed repetitions, each spanning from
/// the first thread's start to the last one's end. More threads than cores share cores, which
/// marks this process's probes disturbed (none of its figures are cached then).
pub fn measure(threads: usize, llc_bytes: usize) -> f64 {
    measure_reps(threads, llc_bytes, FULL_REPS)
}

/// [`measure`] with `reps` timed repetitions.
fn measure_reps(threads: usize, llc_bytes: usize, reps: usize) -> f64 {
    // Two arrays of `bytes` each (summed over the threads): four times the last-level cache,
    // so that they stream from memory, but both together at most a quarter of the memory the
    // system has available. Arrays cut shorter may sit in the cache: their figure serves this
    // process only ([`capped`]).
    let wanted = (4 * llc_bytes).clamp(64 << 20, 1 << 30);
    let room = crate::memory::system_available().map_or(u64::MAX, |b| b / 8);
    let bytes = wanted
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1 << 20);
    if bytes < wanted {
        CAPPED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let threads = threads.max(1);
    let n = (bytes / std::mem::size_of::<f64>()).div_ceil(threads);
    let spans: Vec<Vec<(Instant, Instant)>> = on_pinned_threads(threads, |start| {
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut b = vec![1.0f64; n];
        (0..=reps)
            .map(|rep| {
                start.wait();
                let t0 = Instant::now();
                let factor = 1.000_001 + rep as f64 * 1e-9;
                for (o, i) in b.iter_mut().zip(&a) {
                    *o = i * factor;
                }
                std::hint::black_box(&b);
                (t0, Instant::now())
            })
            .collect()
    });
    // The first repetition warms up (page mappings, clocks) and is left out.
    let span = median_span(&spans, 1..reps + 1).unwrap_or(f64::INFINITY);
    (2 * n * threads * std::mem::size_of::<f64>()) as f64 / span / 1e9
}

/// One cached measurement (this probe's bandwidth, or another probe's figure under its own key).
#[derive(Serialize, Deserialize)]
struct CacheEntry {
    key: String,
    #[serde(alias = "bandwidth_gbs")]
    value: f64,
    /// When the figure was measured or last confirmed, in seconds since the Unix epoch (0 in
    /// entries written without it: never confirmed).
    #[serde(default)]
    checked: u64,
}

/// Seconds since the Unix epoch (0 if the clock is set before it).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether the figure cached under `key` was measured or confirmed less than `secs` seconds
/// ago (a clock set back since counts as not: the figure is checked).
fn checked_within(key: &str, secs: u64) -> bool {
    read_entries()
        .into_iter()
        .find(|e| e.key == key)
        .is_some_and(|e| recent(e.checked, now_secs(), secs))
}

/// Whether a figure confirmed at `checked` is less than `secs` old at `now` (seconds since the
/// epoch; a `checked` after `now`, from a clock set back, is not).
fn recent(checked: u64, now: u64, secs: u64) -> bool {
    now.checked_sub(checked).is_some_and(|age| age < secs)
}

/// Every entry of the cache file (none if it is missing or unreadable).
fn read_entries() -> Vec<CacheEntry> {
    stored_entries().unwrap_or_default()
}

/// The cache file's entries: none when it does not exist, `None` when it holds something
/// else (which the cache then leaves alone rather than replace).
fn stored_entries() -> Option<Vec<CacheEntry>> {
    stored_list(&cache_file()?)
}

/// The list a cache file at `file` holds: empty when the file does not exist, `None` when it
/// cannot be read or holds something else, which a cache then leaves alone rather than replace.
pub(super) fn stored_list<E: serde::de::DeserializeOwned>(file: &Path) -> Option<Vec<E>> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
        Err(_) => None,
    }
}

/// The part of every cache key that ties a measurement to this boot of this machine.
pub(crate) fn boot_key() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("v1 boot={}", boot.trim())
}

fn cache_key(threads: usize, llc_bytes: usize) -> String {
    format!("{} threads={threads} llc={llc_bytes}", boot_key())
}

/// The cache directory: `$STENCIL35D_CACHE_DIR`, else `$XDG_CACHE_HOME/stencil35d`, else
/// `~/.cache/stencil35d`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = &Tuning::current().cache_dir {
        return Some(dir.clone());
    }
    std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok()
        .map(|d| d.join("stencil35d"))
}

fn cache_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("bandwidth.json"))
}

/// The cached value under `key`, if any.
pub(crate) fn read_cache(key: &str) -> Option<f64> {
    read_entries()
        .into_iter()
        .find(|e| e.key == key)
        .map(|e| e.value)
}

/// Stores `value` under `key`, stamped as measured or confirmed at this moment. Best effort: a read-only home
/// directory just means the next process measures again.
pub(crate) fn write_cache(key: &str, value: f64) {
    let Some(file) = cache_file() else { return };
    let Some(mut entries) = stored_entries() else {
        return;
    };
    entries.retain(|e| e.key != key);
    entries.push(CacheEntry {
        key: key.to_string(),
        value,
        checked: now_secs(),
    });
    store_list(&file, &entries);
}

/// Writes `entries` to the cache file `file`, creating its directory: whole or not at all (a
/// temporary file renamed over it), so a reader never meets half a list. Best effort.
pub(super) fn store_list<E: serde::Serialize>(file: &Path, entries: &[E]) {
    if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_string_pretty(entries)) {
        let _ = std::fs::create_dir_all(dir);
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, file).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_figure_stands_only_where_a_quick_sweep_agrees() {
        assert!(keeps_cached(43.0, 44.5, false));
        assert!(keeps_cached(43.0, 31.0, false));
        // The figure this machine once cached for two threads, against fresh sweeps.
        assert!(!keeps_cached(89.3, 43.9, false));
        assert!(!keeps_cached(21.0, 43.9, false));
        assert!(keeps_cached(89.3, 43.9, true));
    }

    #[test]
    fn a_figure_is_checked_again_once_it_is_old() {
        let now = 1_800_000_000;
        assert!(recent(now - 10, now, REVALIDATE_AFTER_SECS));
        assert!(!recent(
            now - REVALIDATE_AFTER_SECS,
            now,
            REVALIDATE_AFTER_SECS
        ));
        assert!(!recent(now + 5, now, REVALIDATE_AFTER_SECS));
        // An entry without a stamp counts as never confirmed.
        let old: Vec<CacheEntry> =
            serde_json::from_str(r#"[{"key": "k", "bandwidth_gbs": 26.1}]"#).unwrap();
        assert_eq!((old[0].value, old[0].checked), (26.1, 0));
        assert!(!recent(old[0].checked, now, REVALIDATE_AFTER_SECS));
    }

    #[test]
    fn all_cores_cannot_outrun_each_core_alone() {
        let (bw, note) = within_cores(89.3, "measured".into(), 30.0, 2);
        assert_eq!(bw, 66.0);
        assert!(note.contains("capped"), "{note}");
        assert_eq!(within_cores(43.9, "measured".into(), 42.4, 2).0, 43.9);
        // A knob's figure is the user's, and an unmeasured core figure limits nothing.
        assert_eq!(
            within_cores(89.3, "STENCIL35D_BANDWIDTH_GBS".into(), 30.0, 2).0,
            89.3
        );
        assert_eq!(within_cores(89.3, "measured".into(), 0.0, 2).0, 89.3);
    }
}
