//! [`Machine`]: what the planner knows about the CPU it runs on — cores, SIMD width, caches (read
//! from the OS), clock, measured memory bandwidth — and the derived peak op rate and bytes-per-op
//! ratio Γ of the 3.5D paper (section III-E).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{bandwidth, cache_probe, compute};
use crate::lbm::LbmKernel;
use crate::{DType, Error, Level, Result};

/// The row overhead of the CPU engines' row kernels, in cell updates, fitted to 16-thread runs
/// of one-thread tiles on a 16-core AVX-512 server (star7 and D3Q19 gave 35 and 52 cells), where
/// full-width strips of 16-24 rows beat squares of lower κ by up to 1.6×; it hardly matters for
/// rows of 500 cells.
pub const ROW_OVERHEAD_CELLS: f64 = 40.0;

/// Per-thread last-level-cache rate (GB/s) at which the lattice's rings that overflow the
/// private caches cost nothing; fitted to the 16-core server, where 18 GB/s per thread ran such
/// tiles at half speed (f64 star7, dim_t 3: 516x38, 1.8 MiB per thread, against 516x24, 1.2
/// MiB, with 2 MiB L2s), and D3Q19 strips in the L2s ran 1.2-1.6× faster than larger ones.
pub const SPILL_FULL_SPEED_GBS: f64 = 36.0;

/// The same for the stencils' rings (see [`Machine::spill_speed`]): their kernels do far less
/// arithmetic per byte than the lattice's collision, so they need more of the last level per
/// core. 64 GB/s charges the 16-core server's 19 GB/s per core 0.3, well below the measured
/// 0.6 (its L2-resident plans also ran 1.3-1.6× their prediction and the L3-resident ones not,
/// so a charge near the measured one let probe noise flip its plan to the L3), a 2-core Xeon
/// slice's 49 GB/s 0.77 (f64 star7 rings of 3.1 MB ran at 0.73-0.76× the speed of L2-resident
/// ones, 1,312 against 1,734-1,796 MUPS, in its 2 MiB L2s) and the 2-core Zen 5's 158 GB/s 1
/// (measured 0.95-1).
pub const STENCIL_SPILL_FULL_SPEED_GBS: f64 = 64.0;

/// One level of the cache hierarchy, as reported by the OS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// 1, 2, 3, ...
    pub level: u32,
    /// Size of one instance in bytes.
    pub bytes: usize,
    /// Number of logical CPUs sharing one instance.
    pub shared_by: usize,
}

/// The CPU facts the planner works from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Processor name.
    pub cpu_model: String,
    /// Logical cores this process may use (for one of several MPI ranks started on one host
    /// without binding, its equal share of them).
    pub cores: usize,
    /// Clock used for the peak estimate, GHz.
    pub freq_ghz: f64,
    /// The SIMD instruction-set level the CPU engines run at (the highest the CPU has, capped
    /// by the `isa` tuning knob).
    #[serde(default = "Level::active")]
    pub isa: Level,
    /// f32 lanes per SIMD vector at that level (f64 has half).
    pub f32_lanes: usize,
    /// Floating-point vector operations issued per cycle per core (2 on current x86 cores:
    /// two FMA/add pipes; the paper's Core i7 issues one add and one multiply).
    pub fp_ops_per_cycle: usize,
    /// Data and unified caches, smallest level first.
    pub caches: Vec<CacheLevel>,
    /// Memory bandwidth the planner uses, GB/s (bytes read + written per second).
    pub bandwidth_gbs: f64,
    /// Where the bandwidth figure came from ("measured", "cached", a spec sheet, ...).
    pub bandwidth_source: String,
    /// Memory bandwidth one core reaches on its own, GB/s (0 = not measured: any number of
    /// threads reaches [`Machine::bandwidth_gbs`]). A server core's share of the memory system is
    /// small (the 16-core host: a naive star7 sweep on 1 or 4 threads moved 7.7 and 6.4 GB/s
    /// per core), so few threads are memory-bound where the whole team would not be.
    #[serde(default)]
    pub core_bandwidth_gbs: f64,
    /// Where the single-core figure came from.
    #[serde(default)]
    pub core_bandwidth_source: String,
    /// Share of the nominal peak the cores sustain on the stencil row kernels with data in the
    /// last-level cache, all at once (1.0 = the peak; see `compute` for why servers fall short).
    #[serde(default = "full_efficiency")]
    pub compute_efficiency: f64,
    /// Where the efficiency came from ("measured", "nominal", ...).
    #[serde(default)]
    pub compute_source: String,
    /// The same share for the D3Q19 lattice kernel, measured on its own (0 = not measured: the
    /// stencil's [`Machine::compute_efficiency`] serves).
    #[serde(default)]
    pub lattice_efficiency: f64,
    /// Where the lattice efficiency came from.
    #[serde(default)]
    pub lattice_source: String,
    /// Share of [`Machine::bandwidth_gbs`] a naive D3Q19 sweep moves (its 38 streams per node
    /// reach less than the probe's two on some machines; 1 = the probe's rate).
    #[serde(default = "full_efficiency")]
    pub lattice_stream_share: f64,
    /// Where the lattice stream share came from.
    #[serde(default)]
    pub lattice_stream_source: String,
    /// Fixed cost of computing one row, in cell updates: pointer setup, the tail vector and the
    /// prefetchers picking up a new stream (0 in the paper's model). Detected machines use
    /// `ROW_OVERHEAD_CELLS`.
    #[serde(default)]
    pub row_overhead_cells: f64,
    /// Cache all cores together can stream from at least twice as fast as from memory, bytes
    /// (0 = not measured: the reported last-level cache is trusted). See `cache_probe`.
    #[serde(default)]
    pub measured_cache_bytes: usize,
    /// Rate all cores together stream that cache at, GB/s read + write (0 = not measured).
    #[serde(default)]
    pub cache_gbs: f64,
    /// Rate all cores together stream half their private caches at, GB/s read + write (0 = not
    /// measured). Reported by `probe` beside the last level's rate; the planner's spill charge
    /// does not use it (see [`Machine::spill_speed`]).
    #[serde(default)]
    pub private_cache_gbs: f64,
    /// Where the measured cache figure came from.
    #[serde(default)]
    pub cache_source: String,
}

/// The most cores a described machine may have: far beyond any one host, and small enough
/// that the model's thread counts stay exact.
const MAX_DESCRIBED_CORES: usize = 1 << 16;

fn full_efficiency() -> f64 {
    1.0
}

impl Machine {
    /// Checks a described machine ([`crate::PlanBuilder::machine`]) before the model divides by
    /// its figures: 1 to 65,536 cores, at least one `f32` lane and one operation per cycle, a
    /// positive finite clock, bandwidth, compute share and lattice stream share, finite and
    /// non-negative figures where 0 means not measured (one core's bandwidth, the lattice
    /// efficiency, the caches' rates, a row's overhead), and at least one cache of non-zero size.
    ///
    /// Errors: [`Error::InvalidPlan`] naming the first figure out of range.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, value: String| {
            Err(Error::InvalidPlan(format!(
                "the machine's {what} is {value}: a machine needs at least one core, one f32 \
                 lane, one operation per cycle, positive finite clock and bandwidths and a cache"
            )))
        };
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if self.cores == 0 || self.cores > MAX_DESCRIBED_CORES {
            return bad("core count", self.cores.to_string());
        }
        if self.f32_lanes == 0 {
            return bad("f32 lane count", "0".into());
        }
        if self.fp_ops_per_cycle == 0 {
            return bad("operations per cycle", "0".into());
        }
        for (what, v) in [
            ("clock (GHz)", self.freq_ghz),
            ("memory bandwidth (GB/s)", self.bandwidth_gbs),
            ("compute efficiency", self.compute_efficiency),
            ("lattice stream share", self.lattice_stream_share),
        ] {
            if !positive(v) {
                return bad(what, v.to_string());
            }
        }
        // 0: not measured (a row's overhead: none).
        for (what, v) in [
            ("one core's bandwidth (GB/s)", self.core_bandwidth_gbs),
            ("lattice efficiency", self.lattice_efficiency),
            ("row overhead (cells)", self.row_overhead_cells),
            ("cache bandwidth (GB/s)", self.cache_gbs),
            ("private cache bandwidth (GB/s)", self.private_cache_gbs),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(what, v.to_string());
            }
        }
        if self.caches.is_empty() || self.caches.iter().any(|c| c.bytes == 0 || c.shared_by == 0) {
            return bad("cache list", format!("{:?}", self.caches));
        }
        Ok(())
    }

    /// This machine with its SIMD level lowered to `level` where that is lower (the lanes
    /// follow); a level above the machine's is ignored.
    pub fn with_isa_at_most(mut self, level: Level) -> Machine {
        if level < self.isa {
            self.isa = level;
            self.f32_lanes = level.lanes(DType::F32);
        }
        self
    }

    /// The machine this process runs on. Detection (the memory-bandwidth probes of all cores
    /// and of one core, the cache and compute probes: about 1-3 s) runs once per process; the
    /// figures are also cached on disk per boot (see `measure_bandwidth` and its cache), so
    /// most processes do not probe at all.
    pub fn detect() -> &'static Machine {
        static MACHINE: OnceLock<Machine> = OnceLock::new();
        MACHINE.get_or_init(|| Machine::probe(false))
    }

    /// The logical cores this process's workers may use, as [`Machine::cores`] counts them
    /// (what the system allows, or an unbound MPI rank's share of its host), without
    /// detecting anything else: the thread limit's base ([`crate::plan::MAX_THREADS_PER_CORE`]).
    pub fn usable_cores() -> usize {
        crate::runtime::cores::usable_cores()
    }

    /// Detects the machine now; with `refresh`, re-measures the bandwidth even if cached.
    pub fn probe(refresh: bool) -> Machine {
        let cores = crate::runtime::cores::usable_cores();
        let caches = read_caches();
        let llc = caches.last().map_or(8 << 20, |c| c.bytes);
        let (bandwidth_gbs, bandwidth_source) = bandwidth::measured_or_cached(cores, llc, refresh);
        let (core_bandwidth_gbs, core_bandwidth_source) =
            bandwidth::core_measured_or_cached(llc, refresh);
        let (bandwidth_gbs, bandwidth_source) =
            bandwidth::within_cores(bandwidth_gbs, bandwidth_source, core_bandwidth_gbs, cores);
        let mut m = Machine {
            cpu_model: read_cpu_model(),
            cores,
            freq_ghz: read_freq_ghz(),
            isa: Level::active(),
            f32_lanes: Level::active().lanes(DType::F32),
            fp_ops_per_cycle: 2,
            caches,
            bandwidth_gbs,
            bandwidth_source,
            core_bandwidth_gbs,
            core_bandwidth_source,
            compute_efficiency: 1.0,
            compute_source: "nominal".into(),
            lattice_efficiency: 0.0,
            lattice_source: String::new(),
            lattice_stream_share: 1.0,
            lattice_stream_source: "nominal".into(),
            row_overhead_cells: ROW_OVERHEAD_CELLS,
            measured_cache_bytes: 0,
            cache_gbs: 0.0,
            private_cache_gbs: 0.0,
            cache_source: String::new(),
        };
        let cache = cache_probe::measured_or_cached(cores, m.llc_bytes(), m.private_cache_bytes());
        m.measured_cache_bytes = cache.bytes;
        m.cache_gbs = cache.gbs;
        m.private_cache_gbs = cache.private_gbs;
        m.cache_source = cache.source;
        (m.compute_efficiency, m.compute_source) = compute::measured_or_cached(
            cores,
            m.private_cache_bytes(),
            m.peak_gops(DType::F32, cores),
        );
        let lattice = LbmKernel {
            periodic: [true; 3],
            forced: false,
            storage: crate::lbm::Storage::Native,
        }
        .cost(DType::F32);
        (m.lattice_efficiency, m.lattice_source) = compute::lattice_measured_or_cached(
            cores,
            m.private_cache_bytes(),
            m.peak_gops(DType::F32, cores),
            lattice.ops_per_update,
        );
        (m.lattice_stream_share, m.lattice_stream_source) =
            compute::lattice_stream_measured_or_cached(
                cores,
                llc,
                m.bandwidth_gbs,
                lattice.bytes_per_update,
            );
        m
    }

    /// The 3.5D paper's quad-core Intel Core i7 (section III-D, table I): 3.2 GHz, 4-wide SSE,
    /// one add and one multiply per cycle, 8 MB shared LLC, 30 GB/s peak bandwidth. Used to check
    /// the planner against the paper's own numbers.
    pub fn paper_core_i7() -> Machine {
        Machine {
            cpu_model: "Intel Core i7 (Nehalem, 3.5D paper table I)".into(),
            cores: 4,
            freq_ghz: 3.2,
            isa: Level::Base,
            f32_lanes: 4,
            fp_ops_per_cycle: 2,
            caches: vec![
                CacheLevel {
                    level: 1,
                    bytes: 32 << 10,
                    shared_by: 1,
                },
                CacheLevel {
                    level: 2,
                    bytes: 256 << 10,
                    shared_by: 1,
                },
                CacheLevel {
                    level: 3,
                    bytes: 8 << 20,
                    shared_by: 4,
                },
            ],
            bandwidth_gbs: 30.0,
            bandwidth_source: "peak, table I".into(),
            core_bandwidth_gbs: 0.0,
            core_bandwidth_source: String::new(),
            compute_efficiency: 1.0,
            compute_source: "nominal (the paper's model)".into(),
            lattice_efficiency: 0.0,
            lattice_source: String::new(),
            lattice_stream_share: 1.0,
            lattice_stream_source: "nominal (the paper's model)".into(),
            row_overhead_cells: 0.0,
            measured_cache_bytes: 0,
            cache_gbs: 0.0,
            private_cache_gbs: 0.0,
            cache_source: String::new(),
        }
    }

    /// SIMD lanes for `dtype`.
    pub fn lanes(&self, dtype: DType) -> usize {
        match dtype {
            DType::F32 => self.f32_lanes,
            DType::F64 => (self.f32_lanes / 2).max(1),
        }
    }

    /// Peak operations per second in units of 10⁹ (Gops) for `dtype` on `threads` cores:
    /// cores × clock × lanes × ops per cycle (102 SP / 51 DP Gops for the paper's Core i7).
    pub fn peak_gops(&self, dtype: DType, threads: usize) -> f64 {
        threads.min(self.cores) as f64
            * self.freq_ghz
            * self.lanes(dtype) as f64
            * self.fp_ops_per_cycle as f64
    }

    /// The rate the planner expects the stencil kernels (or, with `lattice`, the D3Q19 kernel)
    /// to sustain: the peak times the measured [`Machine::efficiency`] (10⁹ ops per second).
    pub fn sustained_gops(&self, dtype: DType, threads: usize, lattice: bool) -> f64 {
        self.peak_gops(dtype, threads) * self.efficiency(lattice)
    }

    /// The share of the peak the planner expects from the lattice kernel (`lattice`) or the
    /// stencil kernels: the lattice's own measurement where there is one.
    pub fn efficiency(&self, lattice: bool) -> f64 {
        if lattice && self.lattice_efficiency > 0.0 {
            self.lattice_efficiency
        } else {
            self.compute_efficiency
        }
    }

    /// Γ: bytes of memory traffic the machine delivers per operation at full speed
    /// (bandwidth / sustained ops of the stencil kernels, or with `lattice` of the D3Q19 kernel;
    /// 0.29 SP and 0.59 DP for the paper's Core i7).
    pub fn bytes_per_op(&self, dtype: DType, lattice: bool) -> f64 {
        self.bandwidth_gbs / self.sustained_gops(dtype, self.cores, lattice)
    }

    /// Memory bandwidth `threads` cores reach together, GB/s: each core's own rate times the
    /// threads, up to what the whole machine delivers (all of it for a thread per core).
    pub fn bandwidth_for(&self, threads: usize) -> f64 {
        if self.core_bandwidth_gbs > 0.0 && threads < self.cores {
            self.bandwidth_gbs
                .min(self.core_bandwidth_gbs * threads.max(1) as f64)
        } else {
            self.bandwidth_gbs
        }
    }

    /// Size of the last-level cache in bytes.
    pub fn llc_bytes(&self) -> usize {
        self.caches.last().map_or(8 << 20, |c| c.bytes)
    }

    /// The last-level cache the planner budgets from: the reported size, or the measured
    /// usable cache if that is smaller (a shared or virtualised LLC; see `cache_probe`).
    pub fn usable_llc_bytes(&self) -> usize {
        match self.measured_cache_bytes {
            0 => self.llc_bytes(),
            m => m.min(self.llc_bytes()),
        }
    }

    /// How fast the stencil kernels run, relative to their compute roof, when a thread's ring
    /// buffers overflow its private caches into the last level: a core's share of the
    /// measured last-level rate over `STENCIL_SPILL_FULL_SPEED_GBS`, at most 1 (unmeasured:
    /// 1). What the spill costs follows the last level's rate per core, not its ratio to the
    /// private caches: on the 2-core Zen 5 EPYC (158 GB/s of L3 per core, 0.56 of its L2s'
    /// rate) star7 `f32` rings of 1.9-7.6 MB ran within 5% of rings of 1 MB in its 1 MiB L2s
    /// per computed update, and its L3-resident plans (`dim_t` 5-7) beat the L2-resident
    /// ones (`dim_t` 3) by 1.4×; on the 16-core server (19 GB/s per core) L3-resident star7
    /// plans ran at 0.6× the L2-resident ones per computed update.
    pub fn spill_speed(&self) -> f64 {
        self.llc_speed_at(STENCIL_SPILL_FULL_SPEED_GBS)
    }

    /// A core's share of the measured last-level rate over `full_speed_gbs`, in 0.1 ..= 1
    /// (unmeasured: 1).
    fn llc_speed_at(&self, full_speed_gbs: f64) -> f64 {
        if self.cache_gbs <= 0.0 {
            return 1.0;
        }
        let per_core = self.cache_gbs / self.cores.max(1) as f64;
        (per_core / full_speed_gbs).clamp(0.1, 1.0)
    }

    /// How fast the lattice kernel runs with its rings spilled into the last level: a core's
    /// share of the measured last-level rate over `SPILL_FULL_SPEED_GBS`, at most 1
    /// (unmeasured: 1). The lattice's rings ran fastest at 5-8 MB, well past the 2 MiB L2s,
    /// on 2-core slices whose L3 streams 49-62 GB/s per core, but at 2 MB on the 16-core
    /// server at 18.7 GB/s per core (D3Q19 f32 256³, one-thread strips, two runs: `dim_t` 2
    /// 260×12 587 / 507 MLUPS, 260×20 413 / 315, `dim_t` 4 264×16 495 / 404; naive 471-508).
    pub fn llc_core_speed(&self) -> f64 {
        self.llc_speed_at(SPILL_FULL_SPEED_GBS)
    }

    /// Logical CPUs sharing one instance of the last-level cache.
    pub fn llc_shared_by(&self) -> usize {
        self.caches
            .last()
            .map_or(self.cores, |c| c.shared_by.max(1))
    }

    /// Size of the last private (per-core) cache in bytes.
    pub fn private_cache_bytes(&self) -> usize {
        self.caches
            .iter()
            .filter(|c| c.shared_by <= 1)
            .map(|c| c.bytes)
            .max()
            .unwrap_or(256 << 10)
    }
}

/// Data and unified caches from Linux sysfs, one entry per level (largest instance), sorted.
fn read_caches() -> Vec<CacheLevel> {
    let mut caches: Vec<CacheLevel> = Vec::new();
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    for index in 0..16 {
        let dir = base.join(format!("index{index}"));
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Ok(level), Some(bytes)) = (level.trim().parse::<u32>(), parse_size(size.trim()))
        else {
            continue;
        };
        let shared_by = read("shared_cpu_list").map_or(1, |l| count_cpu_list(l.trim()));
        if let Some(existing) = caches.iter_mut().find(|c| c.level == level) {
            existing.bytes = existing.bytes.max(bytes);
        } else {
            caches.push(CacheLevel {
                level,
                bytes,
                shared_by,
            });
        }
    }
    if caches.is_empty() {
        // Not Linux, or sysfs hidden: a conservative typical hierarchy.
        caches = vec![
            CacheLevel {
                level: 1,
                bytes: 32 << 10,
                shared_by: 1,
            },
            CacheLevel {
                level: 2,
                bytes: 512 << 10,
                shared_by: 1,
            },
            CacheLevel {
                level: 3,
                bytes: 8 << 20,
                shared_by: std::thread::available_parallelism().map_or(1, |n| n.get()),
            },
        ];
    }
    caches.sort_by_key(|c| c.level);
    caches
}

/// Parses sysfs sizes such as `32K`, `1024K`, `32M`.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: usize = digits.parse().ok()?;
    Some(match unit {
        "" => n,
        "K" => n << 10,
        "M" => n << 20,
        "G" => n << 30,
        _ => return None,
    })
}

/// Counts the CPUs in a list such as `0-3,8,10-11`.
fn count_cpu_list(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum::<usize>()
        .max(1)
}

fn read_cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The highest clock the OS reports (cpufreq maximum, else /proc/cpuinfo), 2.5 GHz if none.
fn read_freq_ghz() -> f64 {
    let cpufreq = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .map(|khz| khz / 1e6);
    let cpuinfo = || {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .filter(|l| l.starts_with("cpu MHz"))
                    .filter_map(|l| {
                        l.split_once(':')
                            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
                    })
                    .reduce(f64::max)
                    .map(|mhz| mhz / 1e3)
            })
    };
    cpufreq.or_else(cpuinfo).filter(|&g| g > 0.1).unwrap_or(2.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_machine_matches_table_one() {
        let m = Machine::paper_core_i7();
        assert!((m.peak_gops(DType::F32, 4) - 102.4).abs() < 1e-9);
        assert!((m.peak_gops(DType::F64, 4) - 51.2).abs() < 1e-9);
        assert!((m.bytes_per_op(DType::F32, false) - 0.29).abs() < 0.005);
        assert!((m.bytes_per_op(DType::F64, false) - 0.59).abs() < 0.005);
    }

    #[test]
    fn sysfs_parsing() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(count_cpu_list("0-3,8,10-11"), 7);
        assert_eq!(count_cpu_list("0"), 1);
    }

    #[test]
    fn detection_is_sane() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(m.freq_ghz > 0.1);
        assert!(m.bandwidth_gbs > 0.1, "{m:?}");
        assert!(!m.caches.is_empty());
        assert!(m.llc_bytes() >= m.caches[0].bytes);
    }
}
