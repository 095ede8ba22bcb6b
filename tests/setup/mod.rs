//! Settings and helpers shared by the stencil (`tests/common`) and lattice-Boltzmann
//! (`tests/lbm_common`) test helpers: engine settings for one run, recorded machines, and
//! running the command-line tool within a time limit.

use stencil35d::plan::CacheLevel;
use stencil35d::{Engine, Machine};

/// Engine settings for one run.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub engine: Engine,
    pub dim_t: usize,
    pub tile: Option<[usize; 2]>,
    pub threads: usize,
    /// Threads per tile group of the blocked engine (None: the planner's choice).
    pub tile_threads: Option<usize>,
    /// Chunks the blocked CPU engine cuts z into (None: the planner's choice).
    pub z_chunks: Option<usize>,
}

impl Setup {
    pub fn reference() -> Self {
        Setup {
            engine: Engine::Reference,
            dim_t: 1,
            tile: None,
            threads: 1,
            tile_threads: None,
            z_chunks: None,
        }
    }
    pub fn naive(threads: usize) -> Self {
        Setup {
            engine: Engine::Naive,
            dim_t: 1,
            tile: None,
            threads,
            tile_threads: None,
            z_chunks: None,
        }
    }
    pub fn blocked(dim_t: usize, tile: [usize; 2], threads: usize) -> Self {
        Setup {
            engine: Engine::Blocked,
            dim_t,
            tile: Some(tile),
            threads,
            // The whole team on every tile (the paper's scheme); `groups_of` splits it.
            tile_threads: Some(threads),
            z_chunks: None,
        }
    }
    /// This blocked setup with tile groups of `n` threads.
    pub fn groups_of(mut self, n: usize) -> Self {
        self.tile_threads = Some(n);
        self
    }
    /// This blocked setup with z cut into `n` chunks.
    pub fn chunks(mut self, n: usize) -> Self {
        self.z_chunks = Some(n);
        self
    }
}

/// This machine (its SIMD level, so the engines run their real kernels) described with fixed
/// caches (32 KiB L1 and 256 KiB L2 per core, a 2 MiB L3 for two cores) and 2 GB/s of memory
/// bandwidth: a grid or lattice well past the cache is memory-bound for a naive sweep, so the
/// planner blocks it whatever this machine's own figures are.
pub fn slow_memory_machine() -> Machine {
    let mut m = Machine::detect().clone();
    m.cores = 2;
    m.caches = vec![
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
            bytes: 2 << 20,
            shared_by: 2,
        },
    ];
    m.bandwidth_gbs = 2.0;
    m.core_bandwidth_gbs = 1.0;
    m.measured_cache_bytes = 0;
    m.cache_gbs = 0.0;
    m.private_cache_gbs = 0.0;
    m
}

/// Runs the command-line tool with `args` from the temporary directory, with
/// `STENCIL35D_MEMORY_BYTES` unset (so a figure injected for another test does not leak in),
/// and kills it once it has run for `limit`. Returns its output, its wall time and whether it
/// had to be killed (a check that should refuse the run at once did not).
pub fn cli_within(
    args: &[&str],
    limit: std::time::Duration,
) -> (std::process::Output, std::time::Duration, bool) {
    use std::process::{Command, Stdio};
    let start = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stencil35d"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_remove("STENCIL35D_MEMORY_BYTES")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), start.elapsed(), killed)
}
