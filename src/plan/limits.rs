//! The planner's limits and budgets: how deep it looks, how much cache it plans with.

/// Largest `dim_t` the planner considers on its own.
pub const PLANNER_MAX_DIM_T: usize = 8;
/// GPU blocking configurations listed in a plan besides the chosen one.
pub(crate) const GPU_CANDIDATES_SHOWN: usize = 6;
/// Largest `dim_t` a plan accepts.
pub const MAX_DIM_T: usize = 16;
/// Longest run, in seconds at a plan's predicted speed, that [`Plan::check_run_length`]
/// accepts: a year.
///
/// [`Plan::check_run_length`]: crate::Plan::check_run_length
pub const LONGEST_RUN_SECONDS: f64 = 365.0 * 86_400.0;
/// Most worker threads a plan accepts per logical core of the machine it is for. More threads
/// than cores can be measured (they share cores, slowly), but the engines' barriers wait for
/// every thread each step: on the 2-core Xeon a 64³ `bench` ran 3 s with 128 threads and 7 s
/// with 1,000, and with 10,000 it had not finished one step after a minute.
pub const MAX_THREADS_PER_CORE: usize = 64;
/// Share of the last-level cache the planner budgets for blocking buffers (the paper uses half:
/// the rest holds streamed data, other structures and other processes).
pub const DEFAULT_CACHE_SHARE: f64 = 0.5;
/// The same share for lattice-Boltzmann kernels: all of the cache the cores stream at least
/// twice as fast as memory. The collision hides the slower outer cache, and the fastest
/// one-thread tiles measured filled it (D3Q19 f32 192³ on a 2-core EPYC with 16 MiB usable:
/// `dim_t` 4 200×24-32 rings, 5.8-7.8 MB per thread, 140-145 MLUPS, 200×18 at 4.4 MB 107-131;
/// 2-core Xeon: 198×40 at `dim_t` 3, 7.2 MB per thread, fastest).
pub const LATTICE_CACHE_SHARE: f64 = 1.0;
