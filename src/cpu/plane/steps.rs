//! Steps of a 2D engine one after another: the ping-pong between the grid and the second
//! buffer, and where a step that produced a non-finite value failed.

use crate::engine::Failure;
use crate::{Grid, Real};

/// Runs `steps` steps of `step` (from its first grid into its second; false when an output
/// is infinite or NaN), swapping `grid` and `scratch` after each, so `grid` always holds the
/// newest finite state; on failure, where it happened (cells more than `r` from the edges).
pub(super) fn run_steps<T: Real>(
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
    r: usize,
    mut step: impl FnMut(&Grid<T>, &mut Grid<T>) -> bool,
) -> Result<(), Failure> {
    for s in 1..=steps {
        if !step(grid, scratch) {
            return Err(failure(scratch, r, s));
        }
        grid.swap_storage(scratch);
    }
    Ok(())
}

/// The first non-finite cell of `grid` more than `r` from the edges, the output of step
/// `step` (a cell a finiteness tracker flagged; the first interior cell if none is found).
pub(super) fn failure<T: Real>(grid: &Grid<T>, r: usize, step: usize) -> Failure {
    Failure::locate_plane(grid, r, step).unwrap_or(Failure {
        step,
        cell: [r, r, 0],
        value: f64::NAN,
    })
}
