//! Finiteness scans of whole grids and lattices: the solver checks every input value before a
//! run, so these scans are part of every call a user makes. Planes are checked in parallel
//! (rayon) and rows with a branch-free loop the compiler vectorises; only the first plane that
//! fails is searched cell by cell.

use rayon::prelude::*;

use crate::Real;

/// True when every value is finite: branch-free within chunks so the compiler vectorises it.
pub(crate) fn all_finite<T: Real>(values: &[T]) -> bool {
    let mut chunks = values.chunks_exact(32);
    let whole = chunks
        .by_ref()
        .all(|c| c.iter().fold(true, |ok, v| ok & v.is_finite()));
    whole && chunks.remainder().iter().all(|v| v.is_finite())
}

/// The lowest plane `z` in `planes` for which `plane_finite(z)` is false, checking planes in
/// parallel.
pub(crate) fn first_bad_plane(
    planes: std::ops::Range<usize>,
    plane_finite: impl Fn(usize) -> bool + Sync + Send,
) -> Option<usize> {
    planes.into_par_iter().find_first(|&z| !plane_finite(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_position_of_a_bad_value_is_seen() {
        for len in [0, 1, 31, 32, 33, 100] {
            let mut v = vec![1.0f32; len];
            assert!(all_finite(&v), "len {len}");
            for at in 0..len {
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    v[at] = bad;
                    assert!(!all_finite(&v), "len {len}, at {at}, {bad}");
                    v[at] = 1.0;
                }
            }
        }
    }

    #[test]
    fn the_lowest_bad_plane_is_found() {
        assert_eq!(first_bad_plane(0..100, |z| z != 37 && z != 80), Some(37));
        assert_eq!(first_bad_plane(40..100, |z| z != 37 && z != 80), Some(80));
        assert_eq!(first_bad_plane(0..100, |_| true), None);
        assert_eq!(first_bad_plane(0..0, |_| false), None);
    }
}
