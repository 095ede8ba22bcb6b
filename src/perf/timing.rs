//! Timing a solver the same way everywhere (`bench`, `compare`, the examples): one short
//! warm-up run, then `repeat` timed runs, reporting the median.

use crate::{Result, RunReport, Solver, State};

/// Most timed runs the command-line tools take a median of (`bench` and `compare --repeat`):
/// the median of a few runs is already stable, and a thousand is far past what it needs.
pub const MAX_REPEAT: usize = 1000;

/// The timed runs of one solver on one state.
#[derive(Clone, Debug)]
pub struct Timed {
    /// The run with the median computation time (for an even count, the upper median).
    pub median: RunReport,
    /// Computation seconds of every timed run, sorted.
    pub seconds: Vec<f64>,
    /// What the solver's check of its plan did during the warm-up or the timed runs, if
    /// anything (see [`RunReport::adapted`]).
    pub adapted: Option<String>,
}

/// Warms `solver` up on `state` (threads, scratch buffers, GPU modules and page faults stay
/// out of the timings: `min(steps, dim_t)` steps, at least one), then times `repeat` runs of
/// `steps` steps each, continuing from the state the previous run left. Runs made while the
/// solver still checks its plan (see [`Solver`]; the first run of an automatic CPU plan, at
/// least) are run but not timed, up to eight of them, so that every timed run is of the
/// configuration the solver settled on.
///
/// Errors, before any step: `repeat == 0` ([`crate::Error::InvalidArgument`]), `steps == 0`
/// ([`crate::Error::ZeroSteps`]) and runs the plan refuses ([`crate::Plan::check_run_length`],
/// all `repeat` runs together); then whatever the runs return.
///
/// ```
/// use stencil35d::perf::time_runs;
/// use stencil35d::{Grid, Plan, Solver, Stencil};
/// let stencil = Stencil::seven_point(0.4, 0.1);
/// let mut grid = Grid::<f32>::random([24, 20, 16], 0.0, 1.0, 3).unwrap();
/// let mut solver = Solver::new(Plan::for_grid(&stencil, &grid).unwrap());
/// let timed = time_runs(&mut solver, &mut grid, 4, 3).unwrap();
/// assert_eq!(timed.seconds.len(), 3);
/// assert!(timed.median.mups > 0.0);
/// ```
pub fn time_runs<S: State>(
    solver: &mut Solver,
    state: &mut S,
    steps: usize,
    repeat: usize,
) -> Result<Timed> {
    time_runs_within(solver, state, steps, repeat, f64::INFINITY)
}

/// [`time_runs`], but stops repeating once the timed runs have taken `budget_seconds` in all
/// (at least one run is always timed): slow configurations get fewer repeats, fast ones the
/// full `repeat`. [`Timed::seconds`] says how many runs there were.
pub fn time_runs_within<S: State>(
    solver: &mut Solver,
    state: &mut S,
    steps: usize,
    repeat: usize,
    budget_seconds: f64,
) -> Result<Timed> {
    if repeat == 0 {
        return Err(crate::Error::InvalidArgument(
            "the repeat count must be at least 1".into(),
        ));
    }
    // Checked before the warm-up, which would otherwise advance the state and then fail.
    crate::solver::check_steps(steps)?;
    // Without a budget every repeat runs: their whole length is checked, with the runs left
    // untimed while the solver checks its plan.
    let untimed = if solver.checking() && !S::SPLIT {
        MAX_UNSETTLED_RUNS
    } else {
        0
    };
    let runs = if budget_seconds.is_finite() {
        1
    } else {
        repeat.saturating_add(untimed)
    };
    let timed = runs - if runs > 1 { untimed } else { 0 };
    let what = match untimed {
        0 => format!("{timed} timed runs of {steps} steps"),
        _ => format!(
            "{timed} timed runs of {steps} steps, with up to {untimed} more while the solver \
             checks its plan,"
        ),
    };
    let all = steps.checked_mul(runs).ok_or_else(|| {
        crate::Error::InvalidArgument(format!("{what} are more steps than a count holds"))
    })?;
    solver.plan().check_run_length(all).map_err(|e| match e {
        crate::Error::InvalidArgument(m) if runs > 1 => {
            crate::Error::InvalidArgument(format!("{what}: {m}"))
        }
        e => e,
    })?;
    let warm_up = steps.min(solver.plan().dim_t()).max(1);
    let mut adapted = solver.run(state, warm_up)?.adapted;
    // Grown as runs finish, not sized from `repeat`: the budget may end the runs long
    // before, and a huge count must not be allocated up front.
    let mut reports = Vec::new();
    let (mut spent, mut unsettled) = (0.0, 0);
    while reports.len() < repeat && (reports.is_empty() || spent < budget_seconds) {
        // A run made while the solver still checks its plan may time an alternative for a
        // segment, or switch to it halfway: only runs after the check count, so that the
        // figures are of the configuration reported. Runs too short to conclude the check
        // count after a few. (A state split over ranks runs its plan as given.)
        let settled = S::SPLIT || !solver.checking() || unsettled == MAX_UNSETTLED_RUNS;
        let report = solver.run(state, steps)?;
        spent += report.seconds + report.transfer_seconds;
        adapted = adapted.or(report.adapted.clone());
        if settled {
            reports.push(report);
        } else {
            unsettled += 1;
        }
    }
    reports.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let seconds = reports.iter().map(|r| r.seconds).collect();
    let median = reports.swap_remove(reports.len() / 2);
    Ok(Timed {
        median,
        seconds,
        adapted,
    })
}

/// Runs [`time_runs`] leaves out while the solver checks its plan, at most.
const MAX_UNSETTLED_RUNS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Grid, Plan, Stencil};

    /// Repeats whose steps would take over a year together are refused before the warm-up,
    /// though one run alone would be accepted; the state is left alone.
    #[test]
    fn repeats_count_towards_the_longest_run() {
        let mut grid = Grid::<f32>::random([16, 16, 16], 0.0, 1.0, 3).unwrap();
        let kept = grid.clone();
        let plan = Plan::for_grid(&Stencil::seven_point(0.4, 0.1), &grid).unwrap();
        let year = 365.0 * 86_400.0 * plan.predicted_mups() * 1e6;
        let steps = (0.6 * year / plan.interior_cells() as f64) as usize;
        assert!(plan.check_run_length(steps).is_ok());
        let mut solver = Solver::new(plan);
        let refused = time_runs(&mut solver, &mut grid, steps, 2);
        assert!(
            matches!(&refused, Err(crate::Error::InvalidArgument(m)) if m.contains("2 timed runs")),
            "{refused:?}"
        );
        assert_eq!(grid.storage(), kept.storage());
    }
}
