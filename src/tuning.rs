//! [`Tuning`]: the one typed set of knobs that change what the planner assumes about the machine
//! and how the GPU kernels are built. Each knob has a `STENCIL35D_*` environment variable; this
//! module is the only place they are read ([`KNOBS`] lists them, and `docs/planner.md` has the
//! same table). A program sets knobs in code with [`Tuning::install`] or
//! `PlanBuilder::tuning`; the CLI takes `--tune KEY=VALUE`.
//!
//! Knobs are process-wide, like the probe cache and the compiled-kernel cache they affect: the
//! first use reads the environment, and an installed `Tuning` replaces that for every later plan
//! and kernel.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use crate::{Error, Result};

/// Overrides of the planner's machine figures and the GPU kernels' build options. `None` (or
/// `false`) leaves the library's own choice.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Tuning {
    /// Memory bandwidth of all cores, GB/s, instead of the probe.
    pub bandwidth_gbs: Option<f64>,
    /// Memory bandwidth of one core alone, GB/s, instead of the probe.
    pub core_bandwidth_gbs: Option<f64>,
    /// Usable cache for blocking, bytes, instead of the probe.
    pub cache_bytes: Option<usize>,
    /// Sustained share (0.001 to 1) of the nominal peak the stencil kernels reach.
    pub compute_efficiency: Option<f64>,
    /// Sustained share (0.001 to 1) of the nominal peak the D3Q19 kernel reaches.
    pub lattice_efficiency: Option<f64>,
    /// Share (0.001 to 1) of the copy bandwidth a naive D3Q19 sweep reaches.
    pub lattice_stream_share: Option<f64>,
    /// Where probe results and GPU autotuning winners are cached.
    pub cache_dir: Option<PathBuf>,
    /// Never use a GPU, even where one is present.
    pub no_gpu: bool,
    /// The CUDA device to use (default: the process's local rank under an MPI launcher, modulo
    /// the devices, so ranks on one host take one GPU each; else device 0).
    pub gpu_device: Option<usize>,
    /// How a split run on GPUs moves its halos between ranks (default: NCCL, device to device,
    /// where every rank has a GPU of its own and NCCL loads; else through host memory).
    pub gpu_halos: Option<GpuHalos>,
    /// Whether a split run on GPUs moves its z halos beside each pass's planes that need
    /// none (default: yes where the halos go through NCCL).
    pub gpu_overlap: Option<bool>,
    /// Whether a split run on the CPU's blocked engine moves its z halos beside each pass's
    /// planes that need none (default: yes).
    pub cpu_overlap: Option<bool>,
    /// Highest SIMD instruction-set level the CPU engines use (default: the highest the CPU
    /// has; a higher one than that is capped to it).
    pub isa: Option<crate::Level>,
    /// Host memory available to this process, bytes, instead of the system's figure
    /// (`MemAvailable` and the cgroup limit) that grids, lattices and runs are checked against.
    pub memory_bytes: Option<u64>,
    /// What the CPU engines do with subnormal numbers (default: [`Subnormals::Flush`]).
    pub subnormals: Option<Subnormals>,
    /// Build options of the GPU kernels.
    pub gpu: GpuTuning,
}

/// What the CPU engines' arithmetic does with subnormal numbers, values below the smallest
/// normal one (2⁻¹²⁶ in `f32`, 2⁻¹⁰²² in `f64`). Waves starting from rest and heat spreading
/// into a cold region leave such values ahead of their fronts, and on x86 each instruction that
/// meets one takes a microcode assist of about a hundred cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Subnormals {
    /// Results that would be subnormal are zero and subnormal inputs count as zero (x86-64's
    /// FTZ and DAZ modes, set on the engines' threads and the calling thread for the run; on
    /// other architectures the mode is left as it is), as Devito's operators do. The default.
    Flush,
    /// IEEE 754 gradual underflow, at the cost above.
    Keep,
}

/// How the halos of a run split over ranks with GPUs travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum GpuHalos {
    /// Device to device through NCCL.
    Nccl,
    /// Device to host, MPI, host to device.
    Host,
}

/// Build options of the GPU kernels, for experiments; the defaults are the measured best.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuTuning {
    /// Planes the blocked stencil kernel prefetches into L2 (0: none).
    pub l2_ahead: Option<usize>,
    /// Input planes the shuffle kernel stages in shared memory (at least 1).
    pub stages: Option<usize>,
    /// Skewed levels in the shared-memory stencil kernel (default: in f64 only).
    pub skew: Option<bool>,
    /// Tiles inside the fixed boundary get their own loop in the shuffle kernel.
    pub inner_tiles: Option<bool>,
    /// Blocks per SM the compiler must leave registers for (`__launch_bounds__`).
    pub min_blocks: Option<usize>,
    /// The two-copy lattice kernel loads populations before testing the node class.
    pub lbm_early_loads: Option<bool>,
    /// Resident 128-thread blocks per SM the two-copy lattice step is compiled for.
    pub lbm_min_blocks: Option<usize>,
    /// Resident 128-thread blocks per SM the in-place (AA) lattice kernels are compiled for.
    pub lbm_aa_min_blocks: Option<usize>,
    /// Input planes the one-step wave kernels stage in shared memory (at least 2).
    pub wave_stages: Option<usize>,
    /// Planes the one-step wave kernels compute per barrier (1 or 2).
    pub wave_sync: Option<usize>,
}

/// One knob: its key (`--tune KEY=VALUE`), its environment variable, what it does, and how a
/// value is stored.
pub struct Knob {
    /// The key, e.g. `bandwidth_gbs`.
    pub key: &'static str,
    /// The environment variable, e.g. `STENCIL35D_BANDWIDTH_GBS`.
    pub env: &'static str,
    /// What it sets.
    pub doc: &'static str,
    set: fn(&mut Tuning, &str) -> std::result::Result<(), String>,
}

macro_rules! knobs {
    ($($key:literal, $env:literal, $doc:literal, |$t:ident, $v:ident| $set:expr;)*) => {
        /// Every knob, in the order `docs/planner.md` lists them.
        pub const KNOBS: &[Knob] = &[$(Knob {
            key: $key,
            env: $env,
            doc: $doc,
            set: |$t, $v| {
                $set;
                Ok(())
            },
        }),*];
    };
}

knobs! {
    "bandwidth_gbs", "STENCIL35D_BANDWIDTH_GBS", "all-core memory bandwidth, GB/s (0.01 to 100000)",
        |t, v| t.bandwidth_gbs = Some(gbs(v)?);
    "core_bandwidth_gbs", "STENCIL35D_CORE_BANDWIDTH_GBS", "one core's memory bandwidth, GB/s (0.01 to 100000)",
        |t, v| t.core_bandwidth_gbs = Some(gbs(v)?);
    "cache_bytes", "STENCIL35D_CACHE_BYTES", "usable cache for blocking, bytes (> 0; at most the last-level cache the OS reports)",
        |t, v| t.cache_bytes = Some(positive_count(v)?);
    "compute_efficiency", "STENCIL35D_COMPUTE_EFFICIENCY", "stencil share of the nominal peak, 0.001 to 1",
        |t, v| t.compute_efficiency = Some(share(v)?);
    "lattice_efficiency", "STENCIL35D_LATTICE_EFFICIENCY", "D3Q19 share of the nominal peak, 0.001 to 1",
        |t, v| t.lattice_efficiency = Some(share(v)?);
    "lattice_stream_share", "STENCIL35D_LATTICE_STREAM_SHARE", "naive D3Q19 share of the copy bandwidth, 0.001 to 1",
        |t, v| t.lattice_stream_share = Some(share(v)?);
    "cache_dir", "STENCIL35D_CACHE_DIR", "directory of the probe and autotuning caches",
        |t, v| t.cache_dir = Some(directory(v)?);
    "no_gpu", "STENCIL35D_NO_GPU", "1: never use a GPU",
        |t, v| t.no_gpu = switch(v)?;
    "gpu_device", "STENCIL35D_GPU_DEVICE", "CUDA device ordinal (default: local MPI rank modulo devices, else 0)",
        |t, v| t.gpu_device = Some(count(v)?);
    "gpu_halos", "STENCIL35D_GPU_HALOS", "how split runs on GPUs move halos: nccl or host (default: nccl where each rank has its own GPU)",
        |t, v| t.gpu_halos = Some(match v.trim() {
            "nccl" => GpuHalos::Nccl,
            "host" => GpuHalos::Host,
            _ => return Err("expected nccl or host".into()),
        });
    "gpu_overlap", "STENCIL35D_GPU_OVERLAP", "0|1: split runs on GPUs exchange z halos while each pass computes the planes that need none (default: 1 through NCCL)",
        |t, v| t.gpu_overlap = Some(switch(v)?);
    "cpu_overlap", "STENCIL35D_CPU_OVERLAP", "0|1: split runs on the blocked CPU engine exchange z halos while each pass computes the planes that need none (default: 1)",
        |t, v| t.cpu_overlap = Some(switch(v)?);
    "isa", "STENCIL35D_ISA", "highest SIMD level of the CPU engines: sse2, avx2 or avx512 (x86-64); neon (aarch64)",
        |t, v| t.isa = Some(v.trim().parse::<crate::Level>().map_err(|e| match e {
            crate::Error::InvalidArgument(why) => why,
            other => other.to_string(),
        })?);
    "memory_bytes", "STENCIL35D_MEMORY_BYTES", "host memory this process's data may take, bytes (> 0)",
        |t, v| t.memory_bytes = Some(positive_count(v)? as u64);
    "subnormals", "STENCIL35D_SUBNORMALS", "what the CPU engines do with subnormal numbers: flush (to zero, the default) or keep",
        |t, v| t.subnormals = Some(match v.trim() {
            "flush" => Subnormals::Flush,
            "keep" => Subnormals::Keep,
            _ => return Err("expected flush or keep".into()),
        });
    "gpu_l2_ahead", "STENCIL35D_GPU_L2_AHEAD", "planes the blocked stencil kernel prefetches into L2 (0-16; 0 and 1: off)",
        |t, v| t.gpu.l2_ahead = Some(count_in(v, 0, 16)?);
    "gpu_stages", "STENCIL35D_GPU_STAGES", "input planes the shuffle kernel stages in shared memory (1-8)",
        |t, v| t.gpu.stages = Some(count_in(v, 1, 8)?);
    "gpu_skew", "STENCIL35D_GPU_SKEW", "0|1: skewed levels in the shared-memory stencil kernel",
        |t, v| t.gpu.skew = Some(switch(v)?);
    "gpu_inner", "STENCIL35D_GPU_INNER", "0|1: interior tiles get their own loop in the shuffle kernel",
        |t, v| t.gpu.inner_tiles = Some(switch(v)?);
    "gpu_min_blocks", "STENCIL35D_GPU_MIN_BLOCKS", "blocks per SM the compiler leaves registers for in the shared-memory stencil kernel (0-32)",
        |t, v| t.gpu.min_blocks = Some(count_in(v, 0, 32)?);
    "lbm_early_loads", "STENCIL35D_LBM_EARLY_LOADS", "0|1: the lattice kernel loads before testing the node class",
        |t, v| t.gpu.lbm_early_loads = Some(switch(v)?);
    "lbm_min_blocks", "STENCIL35D_LBM_MIN_BLOCKS", "resident 128-thread blocks per SM the two-copy lattice step is compiled for (1-16; caps registers; default 8, 5 in f64)",
        |t, v| t.gpu.lbm_min_blocks = Some(count_in(v, 1, 16)?);
    "lbm_aa_min_blocks", "STENCIL35D_LBM_AA_MIN_BLOCKS", "resident 128-thread blocks per SM the in-place lattice kernels are compiled for (1-16; default 1, the compiler's registers; 8 in 16-bit storage on lattices with walls, 6 in f16c without walls)",
        |t, v| t.gpu.lbm_aa_min_blocks = Some(count_in(v, 1, 16)?);
    "gpu_wave_stages", "STENCIL35D_GPU_WAVE_STAGES", "input planes the one-step wave kernels stage in shared memory (2-8)",
        |t, v| t.gpu.wave_stages = Some(count_in(v, 2, 8)?);
    "gpu_wave_sync", "STENCIL35D_GPU_WAVE_SYNC", "planes the one-step wave kernels compute per barrier (1 or 2)",
        |t, v| t.gpu.wave_sync = Some(count_in(v, 1, 2)?);
}

/// A bandwidth in GB/s within what any machine measures: far outside it the planner's
/// figures (η, predicted rates) overflow or vanish.
fn gbs(v: &str) -> std::result::Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(x) if (0.01..=1e5).contains(&x) => Ok(x),
        _ => Err("expected a bandwidth from 0.01 to 100000 GB/s".into()),
    }
}

/// A directory path; an empty one would put the caches in the working directory, over a
/// user's file of the same name.
fn directory(v: &str) -> std::result::Result<PathBuf, String> {
    if v.trim().is_empty() {
        return Err("expected a directory, not an empty path".into());
    }
    Ok(PathBuf::from(v))
}

/// A share of a peak or a bandwidth, 0.001 to 1: below a thousandth the planner's figures
/// (Γ, predicted rates) vanish into nonsense.
fn share(v: &str) -> std::result::Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(x) if (0.001..=1.0).contains(&x) => Ok(x),
        _ => Err("expected a share from 0.001 to 1".into()),
    }
}

fn count(v: &str) -> std::result::Result<usize, String> {
    v.trim()
        .parse::<usize>()
        .map_err(|_| "expected a whole number".into())
}

/// A whole number from `lo` to `hi`: a kernel's shared memory and registers grow with these
/// knobs, and far beyond the range the sizes computed from them would overflow.
fn count_in(v: &str, lo: usize, hi: usize) -> std::result::Result<usize, String> {
    match count(v)? {
        n if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from {lo} to {hi}")),
    }
}

fn positive_count(v: &str) -> std::result::Result<usize, String> {
    match count(v)? {
        0 => Err("expected a positive whole number".into()),
        n => Ok(n),
    }
}

fn switch(v: &str) -> std::result::Result<bool, String> {
    match v.trim() {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err("expected 0 or 1".into()),
    }
}

impl Tuning {
    /// The knobs set in the environment. A variable whose value does not parse is an error
    /// naming it (`STENCIL35D_NO_GPU` set to anything but `0`, `off` or `false` counts as on).
    pub fn from_env() -> Result<Tuning> {
        Tuning::from_env_beside(&[])
    }

    /// [`Tuning::from_env`], but the knobs `overridden` (keys, e.g. `bandwidth_gbs`) are
    /// about to be set otherwise (`--tune`): a variable of theirs that does not parse is no
    /// error, as it would not be used.
    pub fn from_env_beside(overridden: &[&str]) -> Result<Tuning> {
        let (t, bad) = env_knobs();
        match bad.into_iter().find(|(key, _)| !overridden.contains(key)) {
            Some((_, first)) => Err(Error::InvalidArgument(first)),
            None => Ok(t),
        }
    }

    /// Sets the knob `key` (see [`KNOBS`]) from `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let knob = KNOBS.iter().find(|k| k.key == key).ok_or_else(|| {
            let keys: Vec<_> = KNOBS.iter().map(|k| k.key).collect();
            Error::InvalidArgument(format!(
                "unknown tuning knob '{key}' (expected one of: {})",
                keys.join(", ")
            ))
        })?;
        (knob.set)(self, value)
            .map_err(|why| Error::InvalidArgument(format!("{key}={value}: {why}")))
    }

    /// Makes these knobs the process's, for every later plan and kernel build.
    pub fn install(self) {
        *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(self));
    }

    /// Whether the CPU engines flush subnormal numbers to zero ([`Tuning::subnormals`]).
    pub(crate) fn flushes_subnormals(&self) -> bool {
        self.subnormals != Some(Subnormals::Keep)
    }

    /// The process's knobs: the installed ones, else those of the environment (read once; a
    /// variable that does not parse is reported on stderr and left out).
    pub fn current() -> Arc<Tuning> {
        if let Some(t) = CURRENT.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            return Arc::clone(t);
        }
        let mut slot = CURRENT.write().unwrap_or_else(|e| e.into_inner());
        let t = slot.get_or_insert_with(|| Arc::new(lenient_env()));
        Arc::clone(t)
    }
}

/// The environment's knobs, each bad variable reported and skipped.
fn lenient_env() -> Tuning {
    let (t, bad) = env_knobs();
    for (_, why) in bad {
        eprintln!("stencil35d: ignoring {why}");
    }
    t
}

/// The knobs the environment sets, and a message for each variable that does not parse.
fn env_knobs() -> (Tuning, Vec<(&'static str, String)>) {
    let mut t = Tuning::default();
    let mut bad = Vec::new();
    for knob in KNOBS {
        let Some(value) = std::env::var_os(knob.env) else {
            continue;
        };
        let value = value.to_string_lossy();
        // Setting the variable is what hides the GPU, unless it says off.
        let value = if knob.key == "no_gpu" && switch(&value).is_err() {
            "1".into()
        } else {
            value
        };
        if let Err(why) = (knob.set)(&mut t, &value) {
            bad.push((knob.key, format!("{}={value}: {why}", knob.env)));
        }
    }
    (t, bad)
}

static CURRENT: RwLock<Option<Arc<Tuning>>> = RwLock::new(None);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_parse_and_reject_bad_values() {
        let mut t = Tuning::default();
        t.set("bandwidth_gbs", "42.5").unwrap();
        t.set("gpu_skew", "1").unwrap();
        t.set("lbm_min_blocks", "5").unwrap();
        t.set("compute_efficiency", "0.5").unwrap();
        assert_eq!(t.bandwidth_gbs, Some(42.5));
        assert_eq!(t.gpu.skew, Some(true));
        assert_eq!(t.gpu.lbm_min_blocks, Some(5));
        // Counts that size a kernel's shared memory or registers keep to their ranges.
        for (key, bad) in [
            ("lbm_min_blocks", "0"),
            ("gpu_stages", "0"),
            ("gpu_stages", "1000000000000"),
            ("gpu_wave_stages", "1"),
            ("gpu_l2_ahead", "17"),
            ("gpu_min_blocks", "33"),
        ] {
            let e = t.set(key, bad).unwrap_err().to_string();
            assert!(e.contains("from"), "{key}={bad}: {e}");
        }
        t.set("gpu_stages", "8").unwrap();
        assert_eq!(t.gpu.stages, Some(8));
        assert_eq!(t.compute_efficiency, Some(0.5));
        assert!(t.set("bandwidth_gbs", "-1").is_err());
        assert!(t.set("bandwidth_gbs", "1e-300").is_err());
        assert!(t.set("core_bandwidth_gbs", "1e308").is_err());
        assert!(
            t.set("cache_dir", " ").is_err(),
            "the working directory is no cache"
        );
        assert!(t.set("compute_efficiency", "1.5").is_err());
        assert!(t.set("gpu_skew", "maybe").is_err());
        assert!(t.flushes_subnormals(), "flushing is the default");
        t.set("subnormals", "keep").unwrap();
        assert_eq!(t.subnormals, Some(Subnormals::Keep));
        assert!(!t.flushes_subnormals());
        t.set("subnormals", "flush").unwrap();
        assert!(t.flushes_subnormals());
        assert!(t.set("subnormals", "on").is_err());
        assert!(
            t.set("cache_bytes", "0").is_err(),
            "a cache of 0 bytes is no figure"
        );
        let e = t.set("bandwith_gbs", "1").unwrap_err().to_string();
        assert!(e.contains("bandwidth_gbs"), "{e}");
    }

    #[test]
    fn the_planner_doc_lists_every_knob() {
        let doc = include_str!("../docs/planner.md");
        for k in KNOBS {
            let row = format!("| `{}` | `{}` |", k.key, k.env);
            assert!(doc.contains(&row), "docs/planner.md has no row {row}");
        }
    }

    #[test]
    fn the_cli_help_lists_every_knob() {
        let main = include_str!("bin/stencil35d/main.rs");
        for k in KNOBS {
            assert!(
                main.contains(k.key),
                "--tune's help does not name {}",
                k.key
            );
        }
    }

    #[test]
    fn every_knob_has_a_unique_key_and_variable() {
        for (i, a) in KNOBS.iter().enumerate() {
            assert_eq!(a.env, format!("STENCIL35D_{}", a.key.to_uppercase()));
            for b in &KNOBS[i + 1..] {
                assert_ne!(a.key, b.key);
            }
        }
    }
}
