//! The solver's check of its plan against the run: the planner predicts from machine figures
//! (probed or cached memory bandwidth, compute efficiency), and a figure that is wrong for this
//! run (a stale cache, a noisy probe, another job sharing the machine) steers it to a slower
//! engine. So a solver measures the first passes of its plan's CPU engine; where the rate is
//! far from the prediction it plans again with the figure the measurement implies, and where
//! that changes nothing or the plan's runner-up is predicted close, it runs one segment with the
//! alternative and keeps the faster. A long run thus ends on the faster engine whatever the
//! figures said; the [`super::RunReport`] of the run in which this happened says what was tried.
//!
//! Plans whose engine or shape (`dim_t`, tile, tile groups, z chunks) the user fixed, GPU plans (their model is autotuned on the device) and
//! the reference engine are run as given.

use crate::plan::{Bound, Candidate};
use crate::{Engine, Plan};

/// Measured rates further than this share from the prediction make the solver plan again.
pub(crate) const REPLAN_DEVIATION: f64 = 0.3;

/// A runner-up predicted within this share of the chosen configuration is tried on its own.
const CLOSE_CANDIDATE: f64 = 0.1;

/// An alternative must beat the plan by this share to replace it (timing noise between two
/// segments of the same run is a few percent).
const SWITCH_MARGIN: f64 = 0.03;

/// Seconds a measured segment should last, by the prediction (at least two passes).
const SEGMENT_SECONDS: f64 = 0.05;

/// Where a solver stands in checking its plan.
#[derive(Clone, Debug, Default)]
pub(crate) enum Check {
    /// Not checked: the plan runs as given.
    #[default]
    Off,
    /// The first segment, which also maps buffers and starts threads: not measured.
    Cold,
    /// The next segment is measured against the prediction.
    Warm,
    /// The next segment runs `alt`; the plan ran at `base_mups`.
    Trial {
        /// The alternative plan.
        alt: Box<Plan>,
        /// The plan's measured rate.
        base_mups: f64,
        /// Why the alternative is tried.
        why: String,
    },
    /// Checked: the plan (possibly replaced) runs as it is.
    Done,
}

impl Check {
    /// The check a new solver for `plan` starts with.
    pub(crate) fn for_plan(plan: &Plan) -> Check {
        let cpu = matches!(plan.engine(), Engine::Naive | Engine::Blocked);
        let o = plan.overrides();
        let fixed = o.engine || o.dim_t || o.tile || o.tile_threads || o.z_chunks;
        // The check's alternatives come from the 3D stencil, lattice and wave models (the
        // wave engines, like the others, agree bit for bit, traces included); 2D plans run as
        // planned.
        if cpu && !fixed && !plan.kernel().is_2d() {
            Check::Cold
        } else {
            Check::Off
        }
    }

    /// Whether the next segment is part of the check (and so limited to [`segment_steps`]).
    pub(crate) fn active(&self) -> bool {
        !matches!(self, Check::Off | Check::Done)
    }
}

/// Steps of one checked segment of `plan`: about [`SEGMENT_SECONDS`] by its prediction, in
/// whole passes, two to eight of them (a prediction far too high must not stretch the segment
/// that is to find that out over the whole run).
pub(crate) fn segment_steps(plan: &Plan) -> usize {
    let step_seconds = plan.interior_cells() as f64 / (plan.predicted_mups().max(1e-3) * 1e6);
    let passes = (SEGMENT_SECONDS / step_seconds / plan.dim_t().max(1) as f64).ceil();
    passes.clamp(2.0, 8.0) as usize * plan.dim_t().max(1)
}

/// After a warm segment of `plan` ran at `measured` MUPS: the alternative to try, if any, and
/// what the measurement showed.
pub(crate) fn decide(plan: &Plan, measured: f64) -> (Option<Plan>, String) {
    let predicted = plan.predicted_mups();
    let ratio = measured / predicted.max(1e-9);
    let mut why = format!(
        "{} ran {measured:.0} MUPS against {predicted:.0} predicted",
        describe(plan.chosen())
    );
    if (ratio - 1.0).abs() > REPLAN_DEVIATION {
        if let Some((replanned, figure)) = replan(plan, ratio) {
            if !same_configuration(replanned.chosen(), plan.chosen()) {
                why += &format!("; planned again with {figure}");
                return (Some(replanned), why);
            }
        }
        if let Some(alt) = best_other(plan, 0.0).and_then(|c| plan_for(plan, &c)) {
            why += "; the best other configuration is tried";
            return (Some(alt), why);
        }
        return (None, why);
    }
    match best_other(plan, 1.0 - CLOSE_CANDIDATE).and_then(|c| plan_for(plan, &c)) {
        Some(alt) => {
            why += "; the runner-up is predicted close and is tried";
            (Some(alt), why)
        }
        None => (None, why),
    }
}

/// After a trial segment of `alt` ran at `alt_mups` against the plan's `base_mups`: whether to
/// switch to `alt`, and the sentence for the report.
pub(crate) fn conclude(alt: &Plan, alt_mups: f64, base_mups: f64, why: &str) -> (bool, String) {
    let switch = alt_mups > base_mups * (1.0 + SWITCH_MARGIN);
    let verdict = if switch {
        "switched to it"
    } else {
        "kept the plan"
    };
    (
        switch,
        format!(
            "{why}: {} ran {alt_mups:.0} MUPS, {verdict}",
            describe(alt.chosen())
        ),
    )
}

/// "naive", or "blocked dim_t 4 tile 64x32".
fn describe(c: &Candidate) -> String {
    match c.engine {
        Engine::Blocked => format!("blocked dim_t {} tile {}x{}", c.dim_t, c.tile[0], c.tile[1]),
        e => e.name().to_string(),
    }
}

/// Whether two candidates run the same engine configuration.
fn same_configuration(a: &Candidate, b: &Candidate) -> bool {
    a.engine == b.engine && a.dim_t == b.dim_t && a.tile == b.tile
}

/// The plan made again on the machine with one figure scaled by `ratio` (measured over
/// predicted), and that figure for the report. A configuration that streams the grid every step
/// (one step per pass) running slow is put down to the memory bandwidth, the figure most often
/// wrong (cached from another load of the machine, or misread by its probe): the probe of the
/// kernels' own compute rate runs in cache with every process. Otherwise the figure that bound
/// the prediction is scaled.
fn replan(plan: &Plan, ratio: f64) -> Option<(Plan, String)> {
    let mut machine = plan.machine().clone();
    let lattice = plan.kernel().lbm().is_some();
    let streaming_slow = plan.dim_t() == 1 && ratio < 1.0;
    let figure = match plan.chosen().bound {
        _ if streaming_slow => {
            machine.bandwidth_gbs *= ratio;
            machine.core_bandwidth_gbs *= ratio;
            format!("memory bandwidth {:.1} GB/s", machine.bandwidth_gbs)
        }
        Bound::Memory => {
            machine.bandwidth_gbs *= ratio;
            machine.core_bandwidth_gbs *= ratio;
            format!("memory bandwidth {:.1} GB/s", machine.bandwidth_gbs)
        }
        _ if lattice => {
            machine.lattice_efficiency = (machine.lattice_efficiency * ratio).min(1.0);
            format!("lattice efficiency {:.2}", machine.lattice_efficiency)
        }
        _ => {
            machine.compute_efficiency = (machine.compute_efficiency * ratio).min(1.0);
            format!("compute efficiency {:.2}", machine.compute_efficiency)
        }
    };
    let replanned = plan.rebuild().machine(machine).build().ok()?;
    Some((replanned, figure))
}

/// The fastest predicted CPU candidate of another configuration than the plan's, if its
/// prediction is at least `share` of the plan's: of another engine or number of steps per pass
/// if there is one (those differ in kind, where another tile of the same differs by degree).
fn best_other(plan: &Plan, share: f64) -> Option<Candidate> {
    let chosen = plan.chosen();
    let eligible = |c: &&Candidate| {
        matches!(c.engine, Engine::Naive | Engine::Blocked)
            && !same_configuration(c, chosen)
            && c.predicted_mups >= share * chosen.predicted_mups
    };
    let fastest = |kind: &dyn Fn(&Candidate) -> bool| {
        plan.candidates()
            .iter()
            .filter(eligible)
            .filter(|c| kind(c))
            .max_by(|a, b| a.predicted_mups.total_cmp(&b.predicted_mups))
            .cloned()
    };
    let steps = |c: &Candidate| {
        if c.engine == Engine::Naive {
            1
        } else {
            c.dim_t
        }
    };
    fastest(&|c| c.engine != chosen.engine || steps(c) != steps(chosen))
        .or_else(|| fastest(&|_| true))
}

/// The plan with candidate `c`'s engine, `dim_t` and tile.
fn plan_for(plan: &Plan, c: &Candidate) -> Option<Plan> {
    let b = plan.rebuild().engine(c.engine).dim_t(c.dim_t);
    let b = if c.engine == Engine::Blocked {
        b.tile(c.tile).tile_threads(c.tile_threads.max(1))
    } else {
        b
    };
    b.build().ok()
}
