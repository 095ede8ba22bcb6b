//! CUDA's limits on a launch's grid of blocks, checked before a run uploads anything.

use crate::{Error, Result};

/// The most blocks one launch takes along x, y and z on every device this library runs on
/// (compute capability 3.0 and later).
pub(crate) const MAX_BLOCKS: [usize; 3] = [(1 << 31) - 1, 65_535, 65_535];

/// The advice that ends [`launch_grid`]'s error.
pub(crate) const CPU_ADVICE: &str = ": run it on a CPU engine";

/// `blocks` as a launch's grid, or [`Error::InvalidPlan`] naming what the launch covers (`what`
/// says it only then: "a 3 x 600000 x 3 grid") and the axis over its limit.
pub(crate) fn launch_grid(
    blocks: [usize; 3],
    what: impl FnOnce() -> String,
) -> Result<(u32, u32, u32)> {
    if let Some(axis) = (0..3).find(|&a| blocks[a] > MAX_BLOCKS[a]) {
        return Err(Error::InvalidPlan(format!(
            "{} needs {} blocks along {} of one GPU launch, more than CUDA's {}{CPU_ADVICE}",
            what(),
            blocks[axis],
            ["x", "y", "z"][axis],
            MAX_BLOCKS[axis]
        )));
    }
    Ok((blocks[0] as u32, blocks[1] as u32, blocks[2] as u32))
}

/// Whether a launch's grid of `blocks` keeps to CUDA's limits ([`MAX_BLOCKS`]).
pub(crate) fn within_launch_limits(blocks: [usize; 3]) -> bool {
    (0..3).all(|a| blocks[a] <= MAX_BLOCKS[a])
}

/// "a NX x NY x NZ grid", the words [`launch_grid`] names a grid's launches by.
pub(crate) fn grid_words([nx, ny, nz]: [usize; 3]) -> String {
    format!("a {nx} x {ny} x {nz} grid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_within_the_limits_pass_and_others_name_their_axis() {
        assert_eq!(
            launch_grid([MAX_BLOCKS[0], 65_535, 65_535], || "g".into()).unwrap(),
            (u32::MAX >> 1, 65_535, 65_535)
        );
        for (axis, name) in ["x", "y", "z"].iter().enumerate() {
            let mut blocks = [1; 3];
            blocks[axis] = MAX_BLOCKS[axis] + 1;
            let Err(Error::InvalidPlan(m)) = launch_grid(blocks, || grid_words([1, 2, 3])) else {
                panic!("{blocks:?} must be refused");
            };
            assert!(
                m.starts_with("a 1 x 2 x 3 grid needs") && m.contains(&format!("along {name}")),
                "{m}"
            );
        }
    }
}
