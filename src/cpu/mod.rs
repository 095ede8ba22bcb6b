//! The CPU engines: [`reference`] (the oracle), [`naive`] (one parallel SIMD sweep per step) and
//! [`blocked`] (3.5D blocking on a pinned team), sharing the row kernels of [`rows`].

pub(crate) mod barrier;
pub(crate) mod blocked;
pub(crate) mod groups;
pub(crate) mod naive;
pub(crate) mod prefetch;
pub(crate) mod progress;
pub(crate) mod reference;
pub(crate) mod rows;
pub(crate) mod stream;
pub(crate) mod team;
pub(crate) mod tiling;

use crate::plan::Engine;
use crate::{Error, Grid, Plan, Real, Result};

use team::Team;

/// Where a run stopped because a value became infinite or NaN.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// 1-based step of the run that produced the value.
    pub(crate) step: usize,
    /// A cell holding it.
    pub(crate) cell: [usize; 3],
    /// The value.
    pub(crate) value: f64,
}

impl Failure {
    /// Finds the first non-finite interior cell of `grid` (the output of step `step`).
    pub(crate) fn locate<T: Real>(grid: &Grid<T>, r: usize, step: usize) -> Failure {
        let [nx, ny, nz] = grid.dims();
        let interior = |[x, y, z]: [usize; 3]| {
            (r..nx - r).contains(&x) && (r..ny - r).contains(&y) && (r..nz - r).contains(&z)
        };
        let (cell, value) = grid
            .iter()
            .find(|&(c, v)| interior(c) && !v.is_finite())
            .map_or(([r, r, r], f64::NAN), |(c, v)| {
                (c, v.to_f64().unwrap_or(f64::NAN))
            });
        Failure { step, cell, value }
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Self {
        Error::NonFinite {
            step: f.step,
            cell: f.cell,
            value: f.value,
        }
    }
}

/// Threads a solver keeps between runs: the pinned team of the blocked engine and the rayon pool
/// of the naive one, each made on first use.
#[derive(Default)]
pub(crate) struct CpuWorkers {
    team: Option<Team>,
    pool: Option<rayon::ThreadPool>,
}

impl CpuWorkers {
    /// The pinned team of `threads` workers, made (or remade) on first use.
    pub(crate) fn team(&mut self, threads: usize, pin: bool) -> Result<&Team> {
        if self
            .team
            .as_ref()
            .is_none_or(|t| t.size() != threads || t.pinned() != pin)
        {
            self.team = None;
            self.team = Some(Team::new(threads, pin)?);
        }
        Ok(self.team.as_ref().expect("made above"))
    }

    /// The rayon pool of `threads` workers, made (or remade) on first use.
    pub(crate) fn pool(&mut self, threads: usize) -> Result<&rayon::ThreadPool> {
        if self
            .pool
            .as_ref()
            .is_none_or(|p| p.current_num_threads() != threads)
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("stencil35d-naive-{i}"))
                .build()
                .map_err(|e| Error::InvalidPlan(format!("cannot start {threads} threads: {e}")))?;
            self.pool = Some(pool);
        }
        Ok(self.pool.as_ref().expect("made above"))
    }
}

/// Advances `grid` by `steps` stencil steps with the plan's CPU engine, using `scratch` (same
/// shape, boundary layer already equal to `grid`'s) as the second buffer. On success and on
/// failure `grid` holds the newest finite state.
pub(crate) fn run_stencil<T: Real>(
    plan: &Plan,
    workers: &mut CpuWorkers,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<()> {
    let stencil = plan
        .kernel()
        .stencil()
        .expect("the solver checked the kernel kind");
    let r = stencil.radius();
    match plan.engine() {
        Engine::Reference => {
            for s in 1..=steps {
                reference::step(stencil, grid, scratch);
                if !reference::interior_is_finite(scratch, r) {
                    return Err(Failure::locate(scratch, r, s).into());
                }
                grid.swap_storage(scratch);
            }
            Ok(())
        }
        Engine::Naive => {
            let pool = workers.pool(plan.threads())?;
            rows::dispatch(
                stencil,
                naive::NaiveRun {
                    grid,
                    scratch,
                    steps,
                    pool,
                },
            )
            .map_err(Error::from)
        }
        Engine::Blocked => {
            let team = workers.team(plan.threads(), plan.pin())?;
            // Two copies of a grid larger than the last-level cache leave it between passes.
            let bytes = 2 * std::mem::size_of_val(grid.storage());
            let run = blocked::BlockedRun {
                stream: bytes > plan.machine().llc_bytes(),
                grid,
                scratch,
                steps,
                dim_t: plan.dim_t(),
                tile: plan.tile(),
                tile_threads: plan.tile_threads(),
                z_chunks: plan.z_chunks(),
                team,
            };
            rows::dispatch(stencil, run).map_err(Error::from)
        }
        other => Err(Error::PlanMismatch(format!(
            "engine {other} does not run on the CPU"
        ))),
    }
}
