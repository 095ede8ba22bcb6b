//! Memory checked before it is taken. A grid, a lattice or a run that would not fit is refused
//! with [`Error::OutOfMemory`] (host) or [`Error::GpuOutOfMemory`] (device) before anything is
//! allocated, and the error names the largest cube that fits; without the check the kernel's
//! OOM killer ends the process, often a minute into filling the data, with no message.
//!
//! A [`Footprint`] is what something holds as a function of its dimensions (whole grids or
//! lattice copies, bytes per node, fixed buffers), from the same stride formulas the
//! allocations use. [`available`] is the host memory this process may still take: Linux's
//! `MemAvailable` capped by the cgroup's headroom and the address space left under
//! `ulimit -v` (less what the threads of a run have still to map), or the `memory_bytes`
//! tuning knob; `None` where it is unknown, and then nothing is checked.

use std::path::{Path, PathBuf};

pub use crate::error::USABLE_SHARE;
use crate::tuning::Tuning;
use crate::{DType, Error, Result};

/// Device memory left free on a GPU besides a run's buffers (the context, kernel modules and
/// the driver's own allocations).
pub const GPU_RESERVE: u64 = 64 << 20;

/// Allocations smaller than this skip the check in the constructors when no figure is set:
/// reading `/proc` costs more than they risk.
const CHECK_FROM: u64 = 64 << 20;

/// The kind of data a footprint counts: its name in messages and the bytes and padded nodes of
/// one array of it (a grid, or one copy of a lattice's populations) for given dimensions, from
/// the stride formulas its allocation uses (`None` when the size overflows).
#[derive(Clone, Copy)]
pub(crate) struct Data {
    pub(crate) name: &'static str,
    pub(crate) array: fn(DType, [usize; 3]) -> Option<(u64, u64)>,
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.name == other.name
    }
}

impl Eq for Data {}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// What a grid, a lattice or a run holds, as a function of its dimensions: `arrays` whole
/// grids (or copies of a lattice's populations), `node_bytes` bytes per padded node (a lattice's
/// flags, node classes and links), and `fixed` bytes whatever the size (ring buffers).
///
/// ```
/// use stencil35d::memory::Footprint;
/// use stencil35d::DType;
/// let run = Footprint::grids(DType::F32, 2).with_label("with its scratch");
/// let bytes = run.bytes([100, 100, 100]).unwrap();
/// assert!(bytes >= 2 * 4 * 100 * 100 * 100);
/// let n = run.largest_cube(bytes);
/// assert!(n >= 100 && run.bytes([n + 1; 3]).unwrap() > bytes);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    data: Data,
    dtype: DType,
    arrays: u64,
    node_bytes: u64,
    fixed: u64,
    smallest: usize,
    label: String,
}

impl Footprint {
    /// `arrays` arrays of `data` in `dtype` and `node_bytes` bytes per padded node (the
    /// constructors users call are `Footprint::grids` and `Footprint::lattice`, beside the
    /// grid and lattice types whose strides they use).
    pub(crate) fn new(data: Data, dtype: DType, arrays: u64, node_bytes: u64) -> Footprint {
        Footprint {
            data,
            dtype,
            arrays,
            node_bytes,
            fixed: 0,
            smallest: 1,
            label: String::new(),
        }
    }

    /// The same with `bytes` more whatever the size.
    pub fn plus(mut self, bytes: u64) -> Footprint {
        self.fixed = self.fixed.saturating_add(bytes);
        self
    }

    /// The same, described in errors with `label` after the data (e.g. "with its scratch").
    pub fn with_label(mut self, label: impl Into<String>) -> Footprint {
        self.label = label.into();
        self
    }

    /// The same for a kernel that takes no grid with a side under `side` cells (a stencil's
    /// boundary layers, a wave's absorbing layers): an error then names the largest grid that
    /// fits only where it is at least that large, and says that not even the smallest fits
    /// otherwise.
    pub fn at_least(mut self, side: usize) -> Footprint {
        self.smallest = side.max(1);
        self
    }

    /// Bytes held for `dims`; `None` when the size overflows the address space.
    pub fn bytes(&self, dims: [usize; 3]) -> Option<u64> {
        let (array, nodes) = self.array_and_nodes(dims)?;
        self.arrays
            .checked_mul(array)?
            .checked_add(self.node_bytes.checked_mul(nodes)?)?
            .checked_add(self.fixed)
    }

    /// Bytes of one array (a grid, or one copy of the populations) and padded nodes per array.
    fn array_and_nodes(&self, dims: [usize; 3]) -> Option<(u64, u64)> {
        (self.data.array)(self.dtype, dims)
    }

    /// The largest `n` whose `n³` footprint is at most `budget` bytes (0 when not even `1³`
    /// fits). Footprints grow with every dimension, so a bisection finds it.
    pub fn largest_cube(&self, budget: u64) -> usize {
        self.largest_of(|n| [n; 3], budget)
    }

    /// The largest `n` whose `n × n` footprint (a 2D grid, one plane) is at most `budget`
    /// bytes (0 when not even `1 × 1` fits).
    pub fn largest_square(&self, budget: u64) -> usize {
        self.largest_of(|n| [n, n, 1], budget)
    }

    /// The largest grid of `dims`' shape (a square where `dims` is one plane, else a cube)
    /// that fits in `budget` bytes, 0 when it is smaller than the kernel takes
    /// ([`Footprint::at_least`]), and whether it is a square.
    fn largest_like(&self, dims: [usize; 3], budget: u64) -> (usize, bool) {
        let (largest, plane) = if dims[2] == 1 {
            (self.largest_square(budget), true)
        } else {
            (self.largest_cube(budget), false)
        };
        (if largest < self.smallest { 0 } else { largest }, plane)
    }

    /// The largest `n` for which `shape(n)` fits in `budget` bytes.
    fn largest_of(&self, shape: impl Fn(usize) -> [usize; 3], budget: u64) -> usize {
        let fits = |n: usize| self.bytes(shape(n)).is_some_and(|b| b <= budget);
        if !fits(1) {
            return 0;
        }
        // fits(lo) holds and fits(hi) does not: 2^32 squared cells overflow any address space.
        let (mut lo, mut hi) = (1usize, 1usize << 32);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// "a 1500³ f32 grid with its scratch".
    pub fn describe(&self, dims: [usize; 3]) -> String {
        let mut s = format!("a {} {} {}", format_dims(dims), self.dtype, self.data.name);
        if !self.label.is_empty() {
            s.push(' ');
            s.push_str(&self.label);
        }
        s
    }

    /// Checks that the footprint for `dims` fits in host memory, `held` bytes of it being
    /// allocated already: the rest must be at most [`USABLE_SHARE`] of `available` (the
    /// figure now, which no longer counts what is held). `None` (unknown) passes. The error
    /// counts the held bytes on both sides, and names the largest cube that fits from scratch.
    pub fn check(&self, dims: [usize; 3], held: u64, available: Option<u64>) -> Result<()> {
        let Some(available) = available else {
            return Ok(());
        };
        let Some(total) = self.bytes(dims) else {
            return Ok(()); // the allocation's own overflow check reports it
        };
        if total.saturating_sub(held) <= usable_host(available) {
            return Ok(());
        }
        let whole = available.saturating_add(held);
        let (largest, plane) = self.largest_like(dims, usable_host(whole));
        Err(Error::OutOfMemory {
            what: self.describe(dims),
            needed: total,
            available: whole,
            largest,
            smallest: self.smallest,
            plane,
        })
    }

    /// The check made before a state's scratch (or a second copy of it) is allocated, `held`
    /// bytes of the footprint being allocated already: against `free` (a solver's figure,
    /// [`crate::Solver::available_memory`]: memory free besides what is held) when given;
    /// else against the `memory_bytes` knob, a budget for the whole footprint (a fixed figure
    /// does not shrink as the state is allocated, so what is held counts against it); else
    /// against the system's figure now, which no longer counts what is held.
    pub fn check_beside(&self, dims: [usize; 3], held: u64, free: Option<u64>) -> Result<()> {
        if free.is_some() {
            return self.check(dims, held, free);
        }
        match Tuning::current().memory_bytes {
            Some(budget) => self.check(dims, 0, Some(budget)),
            None => self.check(dims, held, system_available()),
        }
    }

    /// Checks that the footprint for `dims` fits in the `free` bytes of a GPU, `held` bytes of
    /// it being allocated there already, leaving [`GPU_RESERVE`] free.
    pub fn check_device(&self, dims: [usize; 3], held: u64, free: u64) -> Result<()> {
        let Some(total) = self.bytes(dims) else {
            return Ok(());
        };
        if total.saturating_sub(held) <= free.saturating_sub(GPU_RESERVE) {
            return Ok(());
        }
        let whole = free.saturating_add(held);
        let (largest, plane) = self.largest_like(dims, whole.saturating_sub(GPU_RESERVE));
        Err(Error::GpuOutOfMemory {
            what: self.describe(dims),
            needed: usize::try_from(total).unwrap_or(usize::MAX),
            free: usize::try_from(whole).unwrap_or(usize::MAX),
            largest,
            smallest: self.smallest,
            plane,
        })
    }

    /// The check a constructor makes before allocating the whole footprint: against the
    /// `memory_bytes` knob when set, else against the system's figure for allocations from
    /// 64 MiB on.
    pub(crate) fn check_allocation(&self, dims: [usize; 3]) -> Result<()> {
        let Some(bytes) = self.bytes(dims) else {
            return Ok(());
        };
        if bytes < CHECK_FROM && Tuning::current().memory_bytes.is_none() {
            return Ok(());
        }
        self.check_beside(dims, 0, None)
    }
}

/// Bytes of `budget` a check lets a footprint take.
pub fn usable_host(available: u64) -> u64 {
    (available as f64 * USABLE_SHARE) as u64
}

/// `1500³` for a cube, else `1500x600x300`.
pub(crate) fn format_dims([x, y, z]: [usize; 3]) -> String {
    if x == y && y == z {
        format!("{x}³")
    } else {
        format!("{x}x{y}x{z}")
    }
}

/// Host memory this process may still take, in bytes: the `memory_bytes` tuning knob when
/// set, else [`system_available`].
pub fn available() -> Option<u64> {
    Tuning::current().memory_bytes.or_else(system_available)
}

/// The system's figure: Linux's `MemAvailable` (free memory plus what the kernel can reclaim
/// without swapping), capped by the headroom of this process's memory cgroup and its parents
/// (v2 `memory.max`, v1 `memory.limit_in_bytes`, less the usage without inactive file pages)
/// and by the address space left under `ulimit -v` ([`address_space_headroom`]). `None` where
/// it is unknown (other systems).
pub fn system_available() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        let mem = parse_meminfo(&meminfo)?;
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let read = |f: &str| std::fs::read_to_string(f).unwrap_or_default();
        let status = read("/proc/self/status");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let limits = [
            cgroup_headroom(&cgroup, Path::new("/sys/fs/cgroup")),
            address_space_headroom(&read("/proc/self/limits"), &status).map(|room| {
                room.saturating_sub(threads_to_come(&status, &read("/proc/self/maps"), cores))
            }),
        ];
        Some(limits.into_iter().flatten().fold(mem, u64::min))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The address space this process may still map under its soft `RLIMIT_AS` (`ulimit -v`,
/// which batch systems set): the limit of `/proc/self/limits`' text less `VmSize` of
/// `/proc/self/status`' text; `None` when unlimited or unknown.
fn address_space_headroom(limits: &str, status: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let kb = proc_field(status, "VmSize:")?;
    Some(soft.saturating_sub(kb.saturating_mul(1024)))
}

/// Address space glibc reserves for each arena of `malloc`: a thread other than the main one
/// gets an arena of its own on its first allocation (up to eight per core), a `HEAP_MAX_SIZE`
/// mapping of 64 MiB on 64-bit systems, aligned to its size, of which the part not yet in use
/// is mapped without access. Other C libraries reserve none.
const ARENA_BYTES: u64 = if cfg!(target_env = "gnu") {
    64 << 20
} else {
    0
};

/// Address space of a worker thread's stack (Rust's 2 MiB) and its guard page.
const STACK_BYTES: u64 = (2 << 20) + 4096;

/// Address space the threads of a run may still map, which `ulimit -v` counts as it counts the
/// data: an estimate. A run on a machine of `cores` cores keeps up to `2 + 3·cores` threads
/// (more where `--threads` or `RAYON_NUM_THREADS` ask for more than the cores): the main one,
/// rayon's global pool (filling and checking grids), a blocked engine's team and a naive
/// engine's pool of one thread per core each, and one more (a progress bar, a probe). Of those,
/// the `Threads:` line of `/proc/self/status`' text counts the threads that exist, and
/// `/proc/self/maps`' text the arenas mapped (a thread maps its arena on its first allocation,
/// which may not have come yet). Without this, a headroom read before the workers start names
/// sizes that fit the data and fail once the workers have mapped their arenas.
fn threads_to_come(status: &str, maps: &str, cores: usize) -> u64 {
    let arena_max = std::env::var("MALLOC_ARENA_MAX").ok();
    threads_to_come_within(status, maps, cores, arena_max.as_deref())
}

/// [`threads_to_come`] with `MALLOC_ARENA_MAX`'s value, which caps the arenas glibc makes
/// (eight per core without it; the main thread's is one of them).
fn threads_to_come_within(status: &str, maps: &str, cores: usize, arena_max: Option<&str>) -> u64 {
    let threads = 2 + 3 * cores as u64;
    let now = proc_field(status, "Threads:").unwrap_or(1);
    // Every thread but the main one maps an arena, up to glibc's limit less the main arena.
    let limit = arena_max
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(8 * cores as u64);
    let arenas = (threads - 1).min(limit.saturating_sub(1));
    let stacks = threads.saturating_sub(now) * STACK_BYTES;
    stacks + arenas.saturating_sub(arenas_mapped(maps)) * ARENA_BYTES
}

/// The glibc arenas in `/proc/self/maps`' text: anonymous mappings without access that end on
/// an [`ARENA_BYTES`] boundary, each the unused tail of one arena's reservation (a thread's
/// stack guard is one page at an address of no particular alignment).
fn arenas_mapped(maps: &str) -> u64 {
    if ARENA_BYTES == 0 {
        return 0;
    }
    let arena = |line: &str| {
        let mut fields = line.split_whitespace();
        let (Some(range), Some("---p")) = (fields.next(), fields.next()) else {
            return false;
        };
        let anonymous = fields.nth(3).is_none();
        let Some((start, end)) = range.split_once('-') else {
            return false;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        else {
            return false;
        };
        anonymous && end % ARENA_BYTES == 0 && end > start && end - start < ARENA_BYTES
    };
    maps.lines().filter(|l| arena(l)).count() as u64
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn parse_meminfo(text: &str) -> Option<u64> {
    proc_field(text, "MemAvailable:")?.checked_mul(1024)
}

/// The number after `key` on the line of `/proc` text (`meminfo`, `self/status`) that starts
/// with it, e.g. `VmSize:\t  200000 kB` gives 200000.
fn proc_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The smallest headroom (limit less usage) of the memory cgroups of this process and their
/// parents under `root` (the cgroup mount), from `/proc/self/cgroup`'s `own` text; `None`
/// when none sets a limit.
fn cgroup_headroom(own: &str, root: &Path) -> Option<u64> {
    let (base, path, v2) = cgroup_dir(own, root)?;
    let mut dir = base.join(path.trim_start_matches('/'));
    let mut room: Option<u64> = None;
    loop {
        if let Some(r) = headroom_in(&dir, v2) {
            room = Some(room.map_or(r, |x| x.min(r)));
        }
        if dir == base || !dir.pop() || !dir.starts_with(&base) {
            break;
        }
    }
    room
}

/// The memory controller's mount and this process's path under it: the v1 `memory` hierarchy
/// when there is one, else the v2 unified one (`0::/path`).
fn cgroup_dir<'a>(own: &'a str, root: &Path) -> Option<(PathBuf, &'a str, bool)> {
    let v1 = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    });
    if let Some(path) = v1 {
        return Some((root.join("memory"), path, false));
    }
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let unified = root.join("unified");
    let base = if unified.join("memory.max").exists() || !root.join("cgroup.controllers").exists() {
        unified
    } else {
        root.to_path_buf()
    };
    Some((base, path, true))
}

/// Limit less usage (without inactive file pages, which the kernel reclaims first) of the
/// cgroup in `dir`; `None` without a limit.
fn headroom_in(dir: &Path, v2: bool) -> Option<u64> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (limit, usage, stat, inactive) = if v2 {
        (
            read("memory.max")?,
            read("memory.current")?,
            read("memory.stat"),
            "inactive_file",
        )
    } else {
        (
            read("memory.limit_in_bytes")?,
            read("memory.usage_in_bytes")?,
            read("memory.stat"),
            "total_inactive_file",
        )
    };
    headroom(&limit, &usage, stat.as_deref().unwrap_or(""), inactive)
}

/// Limits at or above this are "no limit" (v1 writes 2^63 rounded down to a page).
const NO_LIMIT: u64 = 1 << 60;

/// `limit − (usage − inactive)` from the files' texts; `None` for `max` or no limit.
fn headroom(limit: &str, usage: &str, stat: &str, inactive_key: &str) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok().filter(|&l| l < NO_LIMIT)?;
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = stat
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == inactive_key).then(|| v.trim().parse::<u64>().ok())?
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::format_bytes;

    #[test]
    fn meminfo_gives_available_bytes() {
        let text = "MemTotal:       24684092 kB\nMemFree:        22130492 kB\n\
                    MemAvailable:   24155308 kB\nCached:          2175480 kB\n";
        assert_eq!(parse_meminfo(text), Some(24155308 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn an_address_space_limit_leaves_the_limit_less_the_mapped_size() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max stack size            8388608              unlimited            bytes\n\
                      Max address space         1433600000           unlimited            bytes\n";
        let status = "Name:\tstencil35d\nVmPeak:\t  300000 kB\nVmSize:\t  200000 kB\n";
        let room = address_space_headroom(limits, status);
        assert_eq!(room, Some(1_433_600_000 - 200_000 * 1024));
        let unlimited = limits.replace("1433600000", "unlimited");
        assert_eq!(address_space_headroom(&unlimited, status), None);
        assert_eq!(address_space_headroom(limits, "Name:\tx\n"), None);
        // Mapped beyond the limit (it was lowered after the mappings): no room.
        let over = status.replace("200000", "2000000");
        assert_eq!(address_space_headroom(limits, &over), Some(0));
    }

    #[test]
    fn an_address_space_limit_keeps_room_for_the_threads_to_come() {
        let status =
            |threads: u64| format!("Name:\tx\nVmSize:\t  200000 kB\nThreads:\t{threads}\n");
        // Two arenas (their inaccessible tails end on 64 MiB boundaries), a stack guard page,
        // a file mapping without access and an anonymous one that does not end on a boundary.
        let maps = "7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 \n\
                    7f0a1c021000-7f0a20000000 ---p 00000000 00:00 0 \n\
                    7f0a24000000-7f0a24400000 rw-p 00000000 00:00 0 \n\
                    7f0a24400000-7f0a28000000 ---p 00000000 00:00 0 \n\
                    7f0a2a7ff000-7f0a2a800000 ---p 00000000 00:00 0 \n\
                    7f0a2c000000-7f0a30000000 ---p 00000000 08:01 42 /usr/lib/libx.so\n\
                    7f0a31000000-7f0a32000000 ---p 00000000 00:00 0 \n";
        let arena = if cfg!(target_env = "gnu") {
            64 << 20
        } else {
            0
        };
        assert_eq!(arenas_mapped(maps), if arena > 0 { 2 } else { 0 });
        // Two cores: eight threads at most, seven of them with arenas.
        assert_eq!(
            threads_to_come(&status(1), "", 2),
            7 * STACK_BYTES + 7 * arena
        );
        assert_eq!(
            threads_to_come(&status(4), maps, 2),
            4 * STACK_BYTES + 5 * arena
        );
        assert_eq!(threads_to_come(&status(9), maps, 2), 5 * arena);
        assert_eq!(
            threads_to_come(&status(1), "", 1),
            4 * STACK_BYTES + 4 * arena
        );
        assert_eq!(
            threads_to_come(&status(1), "", 16),
            49 * STACK_BYTES + 49 * arena
        );
        // Without a thread count, this thread is the one that exists.
        assert_eq!(
            threads_to_come("Name:\tx\n", "", 2),
            7 * STACK_BYTES + 7 * arena
        );
        // MALLOC_ARENA_MAX caps the arenas, the main one among them; 0 or text leave the default.
        let within = |max| threads_to_come_within(&status(1), "", 2, Some(max));
        assert_eq!(within("3"), 7 * STACK_BYTES + 2 * arena);
        assert_eq!(within("1"), 7 * STACK_BYTES);
        assert_eq!(within("0"), 7 * STACK_BYTES + 7 * arena);
        assert_eq!(within("x"), 7 * STACK_BYTES + 7 * arena);
    }

    #[test]
    fn a_kernel_minimum_side_stops_the_advice_below_it() {
        let run = Footprint::grids(DType::F32, 2);
        let budget = run.bytes([100; 3]).unwrap();
        let named = |fp: &Footprint| match fp.check([200; 3], 0, Some(budget)).unwrap_err() {
            Error::OutOfMemory {
                largest, smallest, ..
            } => (largest, smallest),
            other => panic!("expected OutOfMemory, got {other:?}"),
        };
        // 100³ fits the budget and the 90% a run may take of it: the largest is below 100.
        let (largest, smallest) = named(&run);
        assert!((90..100).contains(&largest) && smallest == 1, "{largest}");
        assert_eq!(named(&run.clone().at_least(largest)), (largest, largest));
        assert_eq!(named(&run.clone().at_least(largest + 1)), (0, largest + 1));
        let err = run
            .clone()
            .at_least(120)
            .check([200; 3], 0, Some(budget))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.ends_with("not even the smallest this kernel takes, 120³, fits"),
            "{msg}"
        );
        let err = run
            .at_least(120)
            .check_device([200; 3], 0, budget)
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::GpuOutOfMemory {
                    largest: 0,
                    smallest: 120,
                    ..
                }
            ),
            "{err}"
        );
        // A plane's advice is a square.
        let plane = Footprint::grids(DType::F32, 2).at_least(50_000);
        let err = plane
            .check([60_000, 60_000, 1], 0, Some(budget))
            .unwrap_err();
        assert!(err.to_string().ends_with("50000x50000, fits"), "{err}");
    }

    #[test]
    fn headroom_is_limit_less_working_set() {
        let stat = "anon 100\ninactive_file 300\nactive_file 5\n";
        assert_eq!(
            headroom("1000\n", "600\n", stat, "inactive_file"),
            Some(700)
        );
        assert_eq!(headroom("max\n", "600\n", stat, "inactive_file"), None);
        assert_eq!(
            headroom("9223372036854771712\n", "1\n", "", "total_inactive_file"),
            None,
            "v1's 'no limit'"
        );
        assert_eq!(headroom("100", "600", "", "inactive_file"), Some(0));
    }

    /// A v2 hierarchy with a limit on the parent of the process's cgroup, and a v1 one with a
    /// limit on the process's own.
    #[test]
    fn cgroup_limits_are_found_up_the_hierarchy() {
        let root = std::env::temp_dir().join(format!("stencil35d-cg-{}", std::process::id()));
        let job = root.join("v2/jobs/one");
        std::fs::create_dir_all(&job).unwrap();
        std::fs::write(root.join("v2/cgroup.controllers"), "memory\n").unwrap();
        std::fs::write(root.join("v2/jobs/memory.max"), "5000\n").unwrap();
        std::fs::write(root.join("v2/jobs/memory.current"), "1000\n").unwrap();
        std::fs::write(job.join("memory.max"), "max\n").unwrap();
        std::fs::write(job.join("memory.current"), "800\n").unwrap();
        assert_eq!(
            cgroup_headroom("0::/jobs/one\n", &root.join("v2")),
            Some(4000)
        );
        assert_eq!(cgroup_headroom("0::/\n", &root.join("v2")), None);

        let v1 = root.join("v1/memory/p/q");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "2000\n").unwrap();
        std::fs::write(v1.join("memory.usage_in_bytes"), "1500\n").unwrap();
        std::fs::write(v1.join("memory.stat"), "total_inactive_file 400\n").unwrap();
        let own = "9:name=systemd:/\n4:memory:/p/q\n0::/\n";
        assert_eq!(cgroup_headroom(own, &root.join("v1")), Some(900));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_system_figure_is_plausible_here() {
        if let Some(bytes) = system_available() {
            assert!(bytes > 0);
        }
    }

    /// The device check leaves the reserve free, counts what the GPU holds already, and names
    /// a cube that fits the whole footprint in the free memory and what is held.
    #[test]
    fn the_device_check_names_a_cube_that_fits() {
        let run = Footprint::grids(DType::F32, 2).with_label("with its scratch on the GPU");
        let dims = [512; 3];
        let grid = Footprint::grids(DType::F32, 1).bytes(dims).unwrap();
        let total = run.bytes(dims).unwrap();
        assert!(run.check_device(dims, 0, total + GPU_RESERVE).is_ok());
        assert!(run
            .check_device(dims, grid, total - grid + GPU_RESERVE)
            .is_ok());
        let err = run.check_device(dims, grid, grid).unwrap_err();
        let Error::GpuOutOfMemory {
            largest: largest_cube,
            free,
            ..
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(*free as u64, 2 * grid, "{err}");
        let budget = 2 * grid - GPU_RESERVE;
        assert!(run.bytes([*largest_cube; 3]).unwrap() <= budget, "{err}");
        assert!(run.bytes([largest_cube + 1; 3]).unwrap() > budget, "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("512³ f32 grid with its scratch on the GPU"),
            "{msg}"
        );
        assert!(msg.contains(&format!("fits is {largest_cube}³")), "{msg}");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_dims([1500; 3]), "1500³");
        assert_eq!(format_dims([10, 20, 30]), "10x20x30");
        assert_eq!(format_bytes(27_040_000_000), "27.0 GB");
        assert_eq!(format_bytes(999), "999 B");
    }
}
