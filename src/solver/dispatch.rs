//! The one dispatch from a plan's engine to the code that runs it. Each kind of state (a host
//! grid, a grid in GPU memory, a lattice) implements [`Engines`], the seam between the solver
//! and the engine modules; [`dispatch`] picks the method for the plan's engine.

use std::time::Instant;

use super::scratch::Scratch;
use crate::engine::{Engine, EngineParams};
use crate::memory::Footprint;
use crate::runtime::Workers;
use crate::Result;

/// Seconds a run spent computing, and copying between host and device.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Timing {
    /// Seconds of computation.
    pub(crate) compute: f64,
    /// Seconds of host-device transfers (0 on the CPU).
    pub(crate) transfer: f64,
}

impl Timing {
    /// A CPU run that started at `start` and has just ended.
    pub(crate) fn since(start: Instant) -> Timing {
        Timing {
            compute: start.elapsed().as_secs_f64(),
            transfer: 0.0,
        }
    }
}

/// What a run has besides its state: the plan's parameters, the solver's threads and kept
/// buffers, and the step count.
pub(crate) struct Run<'a> {
    pub(crate) params: &'a EngineParams,
    pub(crate) workers: &'a mut Workers,
    pub(crate) scratch: &'a mut Scratch,
    pub(crate) steps: usize,
    /// Available host memory to check against instead of the system's figure.
    pub(crate) memory: Option<u64>,
    /// Bytes of ring buffers the blocked CPU engines allocate.
    pub(crate) ring_bytes: u64,
}

impl Run<'_> {
    /// What a CPU run allocates besides its state, for error messages.
    pub(crate) fn scratch_label(&self, second: &str) -> String {
        if self.ring_bytes > 0 {
            format!("with its {second} and ring buffers")
        } else {
            format!("with its {second}")
        }
    }
}

/// Checks, once the state and its scratch exist, that the `rings` bytes of ring buffers a
/// blocked CPU engine allocates next fit the memory available: a scratch kept from an earlier
/// run skipped the check of the whole `need` (state, scratch and rings), and a plan the solver
/// switched to may need larger rings than the one the scratch was made for.
pub(crate) fn rings_fit(
    need: &Footprint,
    dims: [usize; 3],
    rings: u64,
    memory: Option<u64>,
) -> Result<()> {
    if rings == 0 {
        return Ok(());
    }
    let held = need.bytes(dims).unwrap_or(0).saturating_sub(rings);
    need.check_beside(dims, held, memory)
}

/// The engines a kind of state runs on. Each method advances the state by `run.steps` steps
/// with one engine and leaves it at its newest finite state, also on error.
pub(crate) trait Engines {
    /// The scalar reference engine.
    fn reference(&mut self, run: &mut Run<'_>) -> Result<Timing>;
    /// One parallel SIMD sweep per step.
    fn naive(&mut self, run: &mut Run<'_>) -> Result<Timing>;
    /// 3.5D blocking on the CPU.
    fn blocked(&mut self, run: &mut Run<'_>) -> Result<Timing>;
    /// The GPU engines (`run.params.engine` says which).
    fn gpu(&mut self, run: &mut Run<'_>) -> Result<Timing>;
}

/// A kind of state whose CPU engines share one entry (the engine module picks the engine from
/// `run.params`): its [`Engines`] follow from these two methods.
pub(crate) trait OneCpuEntry {
    /// Runs the plan's CPU engine.
    fn on_cpu(&mut self, run: &mut Run<'_>) -> Result<Timing>;
    /// Runs the plan's GPU engine.
    fn on_gpu(&mut self, run: &mut Run<'_>) -> Result<Timing>;
}

impl<S: OneCpuEntry> Engines for S {
    fn reference(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.on_cpu(run)
    }

    fn naive(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.on_cpu(run)
    }

    fn blocked(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.on_cpu(run)
    }

    fn gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.on_gpu(run)
    }
}

/// Runs `state` with the engine `run.params` names.
pub(crate) fn dispatch<S: Engines>(state: &mut S, run: &mut Run<'_>) -> Result<Timing> {
    match run.params.engine {
        Engine::Reference => state.reference(run),
        Engine::Naive => state.naive(run),
        Engine::Blocked => state.blocked(run),
        Engine::GpuNaive | Engine::GpuBlocked => state.gpu(run),
    }
}
