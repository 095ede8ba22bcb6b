//! [`RunReport`]: what a run did and how fast.

use serde::Serialize;

use crate::engine::Engine;
use crate::Plan;

/// What a run did and how fast.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Engine that ran.
    pub engine: Engine,
    /// Time steps advanced.
    pub steps: usize,
    /// Seconds of computation (the rates below are per this time); GPU runs on a host grid
    /// spend `transfer_seconds` more copying the grid to the device and back, and a GPU
    /// kernel's one-time compilation (on its first use in the process) is not counted.
    pub seconds: f64,
    /// Seconds spent copying data between host and device (0 for CPU engines and for grids
    /// resident on the GPU).
    pub transfer_seconds: f64,
    /// Cell updates performed (interior cells × steps).
    pub updates: u64,
    /// Million cell updates per second.
    pub mups: f64,
    /// Floating-point throughput, 10⁹ flop/s.
    pub gflops: f64,
    /// Effective bandwidth: the traffic an unblocked sweep would need for the same updates (one
    /// read and one write of each value per step), 10⁹ bytes/s. Blocked engines exceed the
    /// memory bandwidth here by design.
    pub effective_gbs: f64,
    /// The model's prediction for this plan, MUPS.
    pub predicted_mups: f64,
    /// The plan that ran (at the end of the run).
    pub plan: Plan,
    /// What the solver's check of its plan did in this run, if it concluded here: the measured
    /// rate against the prediction, the alternative tried and whether the solver switched to it
    /// (see [`crate::Solver`]).
    pub adapted: Option<String>,
    /// Seconds a distributed run spent exchanging halos and agreeing on its outcome (0 in one
    /// process; see [`crate::distributed`]).
    pub communication_seconds: f64,
}

impl RunReport {
    pub(crate) fn new(plan: &Plan, steps: usize, seconds: f64, transfer_seconds: f64) -> Self {
        let cost = plan.kernel().cost(plan.dtype());
        let updates = plan.interior_cells() * steps as u64;
        let per_sec = updates as f64 / seconds.max(1e-12);
        RunReport {
            engine: plan.engine(),
            steps,
            seconds,
            transfer_seconds,
            updates,
            mups: per_sec / 1e6,
            gflops: per_sec * cost.flops_per_update as f64 / 1e9,
            effective_gbs: per_sec * cost.bytes_per_update as f64 / 1e9,
            predicted_mups: plan.predicted_mups(),
            plan: plan.clone(),
            adapted: None,
            communication_seconds: 0.0,
        }
    }
}

impl std::fmt::Display for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} steps in {:.3} s: {:.0} MUPS, {:.1} GFLOP/s, {:.1} GB/s effective (model: {:.0} MUPS)",
            self.engine, self.steps, self.seconds, self.mups, self.gflops, self.effective_gbs, self.predicted_mups
        )?;
        if self.communication_seconds > 0.0 {
            write!(f, "; {:.3} s exchanging halos", self.communication_seconds)?;
        }
        if let Some(note) = &self.adapted {
            write!(f, "\n  checked the plan: {note}")?;
        }
        Ok(())
    }
}
