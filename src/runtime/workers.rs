//! [`Workers`]: the threads a solver keeps between runs.

use std::any::Any;

use super::float_mode::ThreadMode;
use super::team::Team;
use crate::tuning::Tuning;
use crate::{Error, Result};

/// Threads a solver keeps between runs: the pinned team of the blocked engines and the rayon
/// pool of the naive ones, each made on first use, and the team's ring buffers. Both run in
/// the floating-point mode the tuning asks for when they are used ([`ThreadMode`],
/// [`crate::tuning::Subnormals`]).
#[derive(Default)]
pub(crate) struct Workers {
    team: Option<Team>,
    /// The pool, and whether its threads flush subnormal numbers to zero.
    pool: Option<(rayon::ThreadPool, bool)>,
    rings: Rings,
}

/// The ring buffers a blocked engine kept from its last run, of the type it chose (the element
/// type varies between runs of one solver only when its plan does).
#[derive(Default)]
pub(crate) struct Rings(Option<Box<dyn Any + Send>>);

impl Rings {
    /// The kept `R`, or a new `R::default()` when none of that type is kept.
    pub(crate) fn get<R: Any + Send + Default>(&mut self) -> &mut R {
        if !self.0.as_ref().is_some_and(|r| r.is::<R>()) {
            self.0 = Some(Box::new(R::default()));
        }
        let kept = self.0.as_mut().and_then(|r| r.downcast_mut::<R>());
        kept.expect("set above")
    }
}

impl Workers {
    /// The pinned team of `threads` workers, made (or remade) on first use and when the
    /// tuning's floating-point mode changes.
    pub(crate) fn team(&mut self, threads: usize, pin: bool) -> Result<&Team> {
        let flush = Tuning::current().flushes_subnormals();
        if self
            .team
            .as_ref()
            .is_none_or(|t| t.size() != threads || t.pinned() != pin || t.flushes() != flush)
        {
            self.team = None;
            self.team = Some(Team::new(threads, pin, flush)?);
        }
        Ok(self.team.as_ref().expect("made above"))
    }

    /// The team of [`Workers::team`] with the ring buffers its blocked engine kept from the
    /// last run. A distributed run advances its block one pass per run: keeping the rings
    /// spares every pass mapping and faulting in fresh pages.
    pub(crate) fn team_and_rings(
        &mut self,
        threads: usize,
        pin: bool,
    ) -> Result<(&Team, &mut Rings)> {
        self.team(threads, pin)?;
        Ok((self.team.as_ref().expect("made above"), &mut self.rings))
    }

    /// The rayon pool of `threads` workers, made (or remade) on first use and when the tuning's
    /// floating-point mode changes.
    pub(crate) fn pool(&mut self, threads: usize) -> Result<&rayon::ThreadPool> {
        let flush = Tuning::current().flushes_subnormals();
        if self
            .pool
            .as_ref()
            .is_none_or(|(p, f)| p.current_num_threads() != threads || *f != flush)
        {
            self.pool = None;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("stencil35d-naive-{i}"))
                .start_handler(move |_| ThreadMode::set_for_thread(flush))
                .build()
                .map_err(|e| Error::InvalidPlan(format!("cannot start {threads} threads: {e}")))?;
            self.pool = Some((pool, flush));
        }
        Ok(&self.pool.as_ref().expect("made above").0)
    }
}
