//! The output planes one launch of a stencil kernel computes: up to two ranges of planes, cut
//! into z-chunks of `hz` planes numbered across both (the kernels' `z_chunk`). A run in one
//! process launches each pass over the whole interior; a run split over GPUs launches the
//! planes whose inputs need no halo while the halos travel, then the two bands next to the
//! halos.

use std::ops::Range;

/// Output planes of one launch: `a`, then `b` (either may be empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ZPlanes {
    pub(crate) a: Range<usize>,
    pub(crate) b: Range<usize>,
}

impl ZPlanes {
    /// The planes of `range` alone.
    pub(crate) fn one(range: Range<usize>) -> Self {
        let end = range.end.max(range.start);
        ZPlanes {
            a: range.start..end,
            b: end..end,
        }
    }

    /// No planes.
    pub(crate) fn none() -> Self {
        ZPlanes { a: 0..0, b: 0..0 }
    }

    /// Whether the launch has no plane to compute.
    pub(crate) fn is_empty(&self) -> bool {
        self.a.is_empty() && self.b.is_empty()
    }

    /// The z-chunks of `hz` planes (at least 1) the launch needs: one block row per chunk.
    pub(crate) fn chunks(&self, hz: usize) -> usize {
        let hz = hz.max(1);
        self.a.len().div_ceil(hz) + self.b.len().div_ceil(hz)
    }

    /// The kernels' `a0, a1, b0, b1` arguments.
    pub(crate) fn args(&self) -> [i32; 4] {
        [self.a.start, self.a.end, self.b.start, self.b.end].map(|z| z as i32)
    }

    /// The launches covering this launch's planes when those inside `middle` and those outside
    /// it go to different kernels: `(outside, inside)`, each a list of launches of up to two
    /// ranges, no chunk of which straddles an end of `middle`.
    pub(crate) fn split_by(&self, middle: &Range<usize>) -> (Vec<ZPlanes>, Vec<ZPlanes>) {
        let (mut outside, mut inside) = (Vec::new(), Vec::new());
        for r in [&self.a, &self.b] {
            let below = r.start..r.end.min(middle.start);
            let within = r.start.max(middle.start)..r.end.min(middle.end);
            let above = r.start.max(middle.end)..r.end;
            outside.extend([below, above].into_iter().filter(|p| !p.is_empty()));
            inside.extend(Some(within).filter(|p| !p.is_empty()));
        }
        (pair_up(&outside), pair_up(&inside))
    }
}

/// Launches of up to two of `ranges` each, in order.
fn pair_up(ranges: &[Range<usize>]) -> Vec<ZPlanes> {
    ranges
        .chunks(2)
        .map(|p| ZPlanes {
            a: p[0].clone(),
            b: p.get(1).cloned().unwrap_or(p[0].end..p[0].end),
        })
        .collect()
}

/// The halo planes of a split run's local arrays still being filled while a pass starts:
/// `[0, lo)` and `[nz - hi, nz)` (0 where nothing is in flight on that side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct InFlight {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
}

impl InFlight {
    /// Nothing in flight: every halo is in place before the pass.
    pub(crate) const NONE: InFlight = InFlight { lo: 0, hi: 0 };
}

/// The output planes of a pass over `nz` planes of radius `r`, each output plane reading the
/// `depth` planes on either side (`r` times the pass's steps), while `in_flight` is:
/// those it computes before the halos arrive and those it computes after. With nothing in
/// flight the first is the whole interior `[r, nz - r)` and the second empty. Otherwise only
/// the owned planes are computed (the halo planes' outputs would be overwritten by the next
/// exchange): first the planes whose inputs lie in the owned planes, then the bands of
/// `depth` planes next to each halo in flight.
pub(crate) fn split_pass(
    nz: usize,
    r: usize,
    depth: usize,
    in_flight: InFlight,
) -> (ZPlanes, ZPlanes) {
    let whole = r..nz.saturating_sub(r);
    if in_flight == InFlight::NONE {
        return (ZPlanes::one(whole), ZPlanes::none());
    }
    let InFlight { lo, hi } = in_flight;
    let owned = if lo > 0 { lo.max(r) } else { r }..if hi > 0 {
        nz.saturating_sub(hi).min(whole.end)
    } else {
        whole.end
    };
    let start = if lo > 0 { (lo + depth).max(r) } else { r };
    let end = if hi > 0 {
        nz.saturating_sub(hi + depth).min(whole.end)
    } else {
        whole.end
    };
    if start >= end {
        return (ZPlanes::none(), ZPlanes::one(owned));
    }
    let late = ZPlanes {
        a: owned.start..start,
        b: end..owned.end.max(end),
    };
    (ZPlanes::one(start..end), late)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Split at a middle range, a launch's planes are covered once: the middle's by the inside
    /// launches, the rest by the outside ones, whatever the ranges and the middle (empty, inside
    /// one range, across both, beyond either end).
    #[test]
    fn a_split_by_the_middle_covers_every_plane_once() {
        let launches = [
            ZPlanes::one(4..40),
            ZPlanes::none(),
            ZPlanes { a: 4..9, b: 30..40 },
            ZPlanes {
                a: 9..30,
                b: 30..30,
            },
        ];
        for planes in &launches {
            for m0 in 0..44 {
                for m1 in m0..44 {
                    let middle = m0..m1;
                    let (outside, inside) = planes.split_by(&middle);
                    let mut seen = [0; 44];
                    for (list, within) in [(&outside, false), (&inside, true)] {
                        for l in list.iter() {
                            assert!(!l.a.is_empty(), "{planes:?} {middle:?}: an empty launch");
                            for z in l.a.clone().chain(l.b.clone()) {
                                assert_eq!(
                                    middle.contains(&z),
                                    within,
                                    "{planes:?} {middle:?} {z}"
                                );
                                seen[z] += 1;
                            }
                        }
                    }
                    for (z, &n) in seen.iter().enumerate() {
                        let wanted = planes.a.contains(&z) || planes.b.contains(&z);
                        assert_eq!(n, usize::from(wanted), "{planes:?} {middle:?} plane {z}");
                    }
                }
            }
        }
        // The usual pass: one launch outside (both ends), one inside.
        let (outside, inside) = ZPlanes::one(4..96).split_by(&(24..76));
        assert_eq!(
            outside,
            vec![ZPlanes {
                a: 4..24,
                b: 76..96
            }]
        );
        assert_eq!(inside, vec![ZPlanes::one(24..76)]);
    }

    /// Every owned plane is computed exactly once, the early ones read no plane in flight, and
    /// with nothing in flight the whole interior is one launch: every block size from tiny to
    /// ample, halos on either side or both, several depths.
    #[test]
    fn a_split_pass_computes_each_owned_plane_once_and_early_ones_read_no_halo() {
        for r in 1..=4 {
            for steps in 1..=4 {
                let depth = r * steps;
                for nz in 2 * r + 1..60 {
                    let (all, none) = split_pass(nz, r, depth, InFlight::NONE);
                    assert_eq!((all.a, all.b.len()), (r..nz - r, 0));
                    assert!(none.is_empty());
                    for (lo, hi) in [(depth, 0), (0, depth), (depth, depth)] {
                        if lo + hi + 1 > nz || lo.max(r) >= nz - hi.max(r) {
                            continue;
                        }
                        let (early, late) = split_pass(nz, r, depth, InFlight { lo, hi });
                        let case = format!("r {r} depth {depth} nz {nz} lo {lo} hi {hi}");
                        let mut seen = vec![0; nz];
                        for z in early.a.clone().chain(early.b.clone()) {
                            assert!(z >= lo + depth || lo == 0, "{case}: {z} reads low halo");
                            assert!(z + depth < nz - hi || hi == 0, "{case}: {z} reads high");
                            seen[z] += 1;
                        }
                        for z in late.a.clone().chain(late.b.clone()) {
                            seen[z] += 1;
                        }
                        for (z, &n) in seen.iter().enumerate() {
                            let owned = z >= lo.max(r) && z < nz - hi.max(r);
                            assert_eq!(n, usize::from(owned), "{case}: plane {z}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_count_both_ranges() {
        let p = ZPlanes {
            a: 4..8,
            b: 100..104,
        };
        assert_eq!((p.chunks(4), p.chunks(3), p.chunks(0)), (2, 4, 8));
        assert_eq!(ZPlanes::one(8..100).chunks(50), 2);
        assert_eq!(ZPlanes::none().chunks(7), 0);
        // A block thinner than its halos gives a reversed range: no planes.
        let (start, end) = (5, 3);
        assert_eq!(ZPlanes::one(start..end), ZPlanes { a: 5..5, b: 5..5 });
    }
}
