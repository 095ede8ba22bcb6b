//! [`Workers`]: the threads a solver keeps between runs.

use super::team::Team;
use crate::{Error, Result};

/// Threads a solver keeps between runs: the pinned team of the blocked engines and the rayon
/// pool of the naive ones, each made on first use.
#[derive(Default)]
pub(crate) struct Workers {
    team: Option<Team>,
    pool: Option<rayon::ThreadPool>,
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
