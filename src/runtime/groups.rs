//! Tile groups: the blocked engines split their team into groups of a few threads; each group
//! claims units of work (an XY tile's chunk of z) from a shared counter and streams them
//! through z on its own, with its own ring buffers and its own spin barrier. One group of the
//! whole team is the 3.5D paper's scheme (every thread on every tile); smaller groups make each
//! barrier span fewer threads and let tiles proceed independently, at the price of a smaller
//! cache share per tile.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::barrier::{Poisoned, SpinBarrier};

/// The units `0 .. units` this thread claims from the shared counter `next`, one at a time
/// (each unit goes to one thread; the counter starts at 0 for each pass). Threads that run
/// faster take more, so no thread waits at the end for a share fixed in advance.
pub(crate) fn claimed(next: &AtomicUsize, units: usize) -> impl Iterator<Item = usize> + '_ {
    std::iter::from_fn(move || {
        let unit = next.fetch_add(1, Ordering::Relaxed);
        (unit < units).then_some(unit)
    })
}

/// How a team of `threads` is cut into groups of at most `per_group` threads: `count =
/// ⌈threads / per_group⌉` groups of near-equal size (sizes differ by at most one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Groups {
    threads: usize,
    count: usize,
}

/// One thread's place in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    /// Index of the group.
    pub(crate) group: usize,
    /// Index of the thread inside its group.
    pub(crate) local: usize,
    /// Threads in the group.
    pub(crate) size: usize,
}

impl Groups {
    /// Groups of at most `per_group` (clamped to `1..=threads`) of `threads` threads.
    pub(crate) fn new(threads: usize, per_group: usize) -> Groups {
        let threads = threads.max(1);
        let per_group = per_group.clamp(1, threads);
        Groups {
            threads,
            count: threads.div_ceil(per_group),
        }
    }

    /// Threads in the team.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Number of groups.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Threads in the largest group (sizes differ by at most one).
    pub(crate) fn largest(&self) -> usize {
        self.threads.div_ceil(self.count)
    }

    /// Team threads of group `g`.
    fn members(&self, g: usize) -> Range<usize> {
        self.threads * g / self.count..self.threads * (g + 1) / self.count
    }

    /// Where team thread `tid` belongs.
    pub(crate) fn member(&self, tid: usize) -> Member {
        // The group whose range holds tid: ranges start at ⌊threads·g / count⌋.
        let mut group = (tid * self.count / self.threads).min(self.count - 1);
        while self.members(group).start > tid {
            group -= 1;
        }
        while self.members(group).end <= tid {
            group += 1;
        }
        let members = self.members(group);
        Member {
            group,
            local: tid - members.start,
            size: members.len(),
        }
    }
}

/// Synchronisation of one pass: a barrier per group and the shared tile counter.
pub(crate) struct GroupSync {
    groups: Groups,
    barriers: Vec<SpinBarrier>,
    /// Next unclaimed tile.
    next: CachePadded<AtomicUsize>,
    /// The unit each group works on, published by its first member, in two slots that
    /// alternate from claim to claim (see [`GroupSync::claim`]).
    current: Vec<[CachePadded<AtomicUsize>; 2]>,
    tiles: usize,
}

impl GroupSync {
    /// Synchronisation for `groups` sharing `tiles` tiles.
    pub(crate) fn new(groups: Groups, tiles: usize) -> GroupSync {
        GroupSync {
            groups,
            barriers: (0..groups.count)
                .map(|g| SpinBarrier::new(groups.members(g).len()))
                .collect(),
            next: CachePadded::new(AtomicUsize::new(0)),
            current: (0..groups.count)
                .map(|_| [0, 0].map(|v| CachePadded::new(AtomicUsize::new(v))))
                .collect(),
            tiles,
        }
    }

    /// The groups.
    pub(crate) fn groups(&self) -> Groups {
        self.groups
    }

    /// The barrier of `m`'s group.
    pub(crate) fn barrier(&self, m: Member) -> &SpinBarrier {
        &self.barriers[m.group]
    }

    /// The next unit of work (a tile's chunk of z) for `m`'s group, the same for every member;
    /// `round` counts the claims this member has made before (all members call this together,
    /// after finishing the previous unit); `None` when all are claimed.
    pub(crate) fn claim(&self, m: Member, round: usize) -> Result<Option<usize>, Poisoned> {
        // Claims alternate between two slots. The barrier orders the first member's store before
        // every member's load. With the neighbour sync a member may still be before its load
        // when the first member has finished the unit (it waits only for its neighbours), but
        // not past the next claim's barrier, which every member reaches after its load: so the
        // first member's next store, to the other slot, cannot overwrite an index not yet read,
        // and the store after that waits for that barrier.
        let slot = &self.current[m.group][round % 2];
        if m.local == 0 {
            let t = self.next.fetch_add(1, Ordering::Relaxed);
            slot.store(t, Ordering::Relaxed);
        }
        self.barrier(m).wait()?;
        let t = slot.load(Ordering::Relaxed);
        Ok((t < self.tiles).then_some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_partition_the_team() {
        for threads in 1..=17 {
            for per in 1..=threads + 1 {
                let g = Groups::new(threads, per);
                let mut sizes = vec![0; g.count()];
                for tid in 0..threads {
                    let m = g.member(tid);
                    assert_eq!(m.local, sizes[m.group], "threads {threads} per {per}");
                    sizes[m.group] += 1;
                    assert_eq!(m.size, g.members(m.group).len());
                }
                assert!(sizes.iter().all(|&s| s >= 1 && s <= per.min(threads)));
                assert_eq!(g.largest(), *sizes.iter().max().unwrap());
                assert_eq!(sizes.iter().sum::<usize>(), threads);
            }
        }
        assert_eq!(Groups::new(3, 2).count(), 2);
        assert_eq!(Groups::new(16, 16).count(), 1);
        assert_eq!(Groups::new(16, 4).count(), 4);
    }

    /// Every unit is claimed once, and every member of a group sees the same units in the same
    /// order, even with no barrier between a group's units (the neighbour sync has none), so
    /// the first member may claim the next unit while the others are still reading this one.
    /// (With one slot for the claimed unit a member could read the next unit's index and skip
    /// one; the group's barriers then never meet again, hence the time limit.)
    #[test]
    fn every_unit_is_claimed_once_and_seen_alike_by_a_group() {
        let groups = Groups::new(5, 3);
        let units = 2_000;
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let sync = GroupSync::new(groups, units);
            let hits: Vec<AtomicUsize> = (0..units).map(|_| AtomicUsize::new(0)).collect();
            let seen: Vec<Vec<usize>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..5)
                    .map(|tid| {
                        let (sync, hits) = (&sync, &hits);
                        s.spawn(move || {
                            let m = sync.groups().member(tid);
                            let mut mine = Vec::new();
                            let mut round = 0;
                            while let Some(t) = sync.claim(m, round).unwrap() {
                                round += 1;
                                if m.local == 0 {
                                    hits[t].fetch_add(1, Ordering::Relaxed);
                                }
                                mine.push(t);
                            }
                            mine
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let once = hits.iter().all(|h| h.load(Ordering::Relaxed) == 1);
            done.send((once, seen)).unwrap();
        });
        let (once, seen) = result
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the group's members claimed different units and never met again");
        assert!(once, "a unit was claimed twice or never");
        for tid in 0..5 {
            let first = groups.members(groups.member(tid).group).start;
            assert_eq!(seen[tid], seen[first], "thread {tid}");
        }
    }
}
