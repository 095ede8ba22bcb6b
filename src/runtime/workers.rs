//! [`Workers`]: the threads a solver keeps between runs.

use std::any::Any;

use super::team::Team;
use crate::{Error, Result};

/// Threads a solver keeps between runs: the pinned team of the blocked engines and the rayon
/// pool of the naive ones, each made on first use, and the team's ring buffers.
#[derive(Default)]
pub(crate) struct Workers {
    team: Option<Team>,
    pool: Option<rayon::ThreadPool>,
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
