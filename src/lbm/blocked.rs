//! The 3.5D-blocked lattice-Boltzmann engine: each pass advances `dim_t` time steps while
//! reading and writing the 19 population arrays once, as the stencil engine does (see
//! `crate::cpu::blocked`), with the lattice's geometry from [`crate::blocking::lattice`].
//!
//! All threads of the pinned team work on one tile at a time and stream through z (or through
//! one chunk of z and its halo, see `crate::blocking::tiling::z_chunk_count`; passes of one level
//! work otherwise, see `Pass::work_spatial`). Level `j` keeps its last planes of the tile in
//! a ring buffer; at pipeline step `s` it computes plane `z = z1 + s − lag·(j − 1)` from level
//! `j − 1`'s planes `z − 1 ..= z + 1`. Several threads compute their levels side by side, so
//! a level reads only planes finished at the previous steps (lag 2), and one spin barrier per
//! step is the only synchronisation; a one-thread group computes its levels in order and reads
//! the plane the level below has just written (lag 1). Each direction's ring keeps only the
//! planes it is read from: a population with `c_z = +1` is pulled from plane `z − 1`, one with
//! `c_z = −1` from `z + 1`, and bounce-back reads plane `z` (see [`ring_slots`](crate::blocking::rings::ring_slots)).
//!
//! A one-thread group (the planner's usual choice on many cores) keeps rows instead of planes
//! ([`Slots::Rows`], [`row_slots`](crate::blocking::rings::row_slots)): it computes its levels a few rows at a time
//! ([`ROW_BATCH`](crate::blocking::rings::ROW_BATCH)), each level one plane and one row behind the level below, so a level needs
//! only the rows from one plane and a row back to the newest: 24 rows per tile row, where a
//! ring of planes keeps 43. The smaller rings let deeper passes keep taller tiles in the L2
//! (on the H100 machine's 16-core host `dim_t` 3 262×20 at κ 1.14 instead of 262×14 at κ 1.24).
//!
//! Level 0 is the lattice; the last level writes the tile's output into the second population
//! buffer, each row into a staging row first, then streamed out with non-temporal stores
//! ([`super::stage`]), so the output costs no write-allocate reads. Each level's rows are split
//! evenly among the threads of a tile group (see `crate::runtime::groups`: groups claim units, a
//! tile's chunk of z, and have their own rings and barrier; one group of the whole team on
//! whole tiles is the paper's scheme; with deep enough shares the barrier gives way to waiting
//! for the two neighbouring members, see `crate::runtime::progress`). Wall nodes are carried
//! through the levels by copying, except those on the x faces (computed apart, at the ends of
//! each row), which ring levels leave out and the last level copies from the lattice (no node
//! uses a wall's populations: see `super::rows::FaceWalls`). The lattice's flag, class and
//! links arrays (constant in time) are read in place.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::naive;
use super::populations::{Populations, ZCut};
use super::rows::{z_class, AxisMap, FlowKernel, Level, NodeBytes, Row, Slots};
use super::stage::{self, Stage};
use crate::aligned::{line_start, AlignedBuf, CACHE_LINE};
use crate::blocking::lattice::{Blocking, Mode};
use crate::blocking::tiling::tapered_chunks;
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::runtime::barrier::PoisonOnPanic;
use crate::runtime::groups::{claimed, GroupSync, Groups, Member};
use crate::runtime::progress::Progress;
use crate::runtime::stream;
use crate::runtime::team::Team;
use crate::simd::{Isa, Tracker};
use crate::Real;

use super::model::Q;
use crate::blocking::rings::{keeps_rows, lag, ring_slots, row_slots, ROW_BATCH};

/// The slots of a ring level for tile groups of `members` threads on tiles whose level 1 is
/// `height` rows high: rows where [`keeps_rows`], planes otherwise.
fn ring_kind(members: usize, whole_y: bool, height: usize) -> Slots {
    if keeps_rows(members, whole_y) {
        Slots::Rows {
            n: row_slots(height),
            height,
        }
    } else {
        Slots::Planes(ring_slots(lag(members)))
    }
}

/// A blocked run: `steps` steps of `dim_t` per pass with loaded tiles of `tile` nodes.
pub(crate) struct BlockedRun<'a, T: Real, S: Isa> {
    pub(crate) kernel: &'a FlowKernel<T, S>,
    pub(crate) bytes: NodeBytes,
    pub(crate) periodic: [bool; 3],
    pub(crate) steps: usize,
    pub(crate) dim_t: usize,
    pub(crate) tile: [usize; 2],
    /// Threads per tile group (clamped to the team size).
    pub(crate) tile_threads: usize,
    /// Chunks z is cut into (see [`crate::blocking::tiling::z_chunk_count`]).
    pub(crate) z_chunks: usize,
    pub(crate) team: &'a Team,
    /// Whether a pass that went non-finite is replayed a step at a time (see
    /// `EngineParams::replay`); else the lattice keeps the pass's input.
    pub(crate) replay: bool,
}

/// Work a split run does beside a blocked pass: the exchange that fills the lattice's z halos,
/// given the populations cut at them. As for the stencils (see
/// [`crate::cpu::blocked::Beside`]), the pass first computes the output planes at least
/// `dim_t` from both halos while `work` runs on the calling thread (the team's members
/// compute; that thread only waits for them otherwise), then the bands of `dim_t` planes next
/// to the halos. The halo planes' own outputs, which the next exchange overwrites where a
/// later pass reads them, are not computed.
pub(crate) struct LatticeBeside<'a, T> {
    /// Planes of the low and the high z halo (0 where the lattice has none).
    pub(crate) halo: [usize; 2],
    /// The exchange, given the populations cut at the halos; the flag says whether a pass
    /// computes meanwhile (the work should then leave the cores to it).
    pub(crate) work: &'a mut dyn FnMut(ZCut<'_, T>, bool),
    /// Where the run puts how long the computation waited for `work` (zero when the pass's
    /// first part took longer).
    pub(crate) waited: &'a mut Duration,
}

impl<T: Real> LatticeBeside<'_, T> {
    /// Runs the work on `pop` before anything computes; all of its time counts as waited.
    pub(crate) fn run_first(&mut self, pop: &mut Populations<T>) {
        let start = Instant::now();
        (self.work)(pop.z_cut(self.halo), false);
        *self.waited = start.elapsed();
    }
}

/// What the passes of one length share: the tiling, the rings' shape and storage, the groups.
struct PassShape<T> {
    blocking: Blocking,
    layout: RingLayout,
    groups: Groups,
    ring: *mut T,
}

impl<T: Real, S: Isa> BlockedRun<'_, T, S> {
    /// Runs the steps, ping-ponging between `pop` and `scratch` and swapping after each pass so
    /// `pop` always holds the newest finite state. On a non-finite value the failing pass is
    /// replayed one step at a time (naive sweeps) to find the step and keep the state before it.
    /// `ring`: the ring buffers kept from an earlier run (grown when too small), left for the
    /// next. `beside`: work to run beside the first pass (see [`LatticeBeside`]); before it
    /// when the run has more than one pass, since later passes would read the halo planes'
    /// outputs, which a pass beside the work leaves out.
    pub(crate) fn run(
        &self,
        pop: &mut Populations<T>,
        scratch: &mut Populations<T>,
        ring: &mut Option<AlignedBuf<T>>,
        mut beside: Option<LatticeBeside<'_, T>>,
    ) -> Result<(), Failure> {
        if self.steps > self.dim_t {
            if let Some(mut beside) = beside.take() {
                beside.run_first(pop);
            }
        }
        let dims = pop.layout().dims;
        let mut done = 0;
        while done < self.steps {
            let dim_t = self.dim_t.min(self.steps - done);
            let blocking = Blocking::new(dims, self.periodic, self.tile, dim_t);
            let groups = Groups::new(self.team.size(), self.tile_threads);
            // The rings fit the largest group's lag.
            let slots = ring_kind(
                groups.largest(),
                blocking.modes[1] == Mode::Whole,
                blocking.buf[1],
            );
            let layout = RingLayout::new::<T>(&blocking, slots);
            let ring_len = layout.len * groups.count();
            if ring.as_ref().is_none_or(|b| b.len() < ring_len) {
                drop(ring.take()); // free the old buffer before allocating the new one
                *ring = Some(
                    AlignedBuf::zeroed(ring_len.max(1))
                        .expect("ring buffers are a few cache-sized planes"),
                );
            }
            let shape = PassShape {
                blocking,
                layout,
                groups,
                ring: ring.as_mut().expect("allocated above").as_mut_ptr(),
            };
            let finite = match beside.take() {
                Some(mut beside) => self.pass_beside(&shape, pop, scratch, &mut beside),
                None => {
                    let chunks = shape.blocking.z_chunks(self.z_chunks);
                    let src = pop.storage_mut().as_mut_ptr();
                    self.pass(&shape, src, scratch, chunks).run(self.team).0
                }
            };
            if finite {
                pop.swap(scratch);
            } else if !self.replay {
                // The ranks of a split run find the failing step together, from this input.
                return Err(scratch.failure(done + 1));
            } else {
                for i in 1..=dim_t {
                    if !naive::step(self.kernel, pop, self.periodic, &self.bytes, scratch) {
                        return Err(scratch.failure(done + i));
                    }
                    pop.swap(scratch);
                }
            }
            done += dim_t;
        }
        Ok(())
    }

    /// A pass of `shape` from the populations at `src` (laid out as `dst`'s) into `dst`,
    /// computing the output planes `chunks`.
    fn pass(
        &self,
        shape: &PassShape<T>,
        src: *mut T,
        dst: &mut Populations<T>,
        chunks: Vec<std::ops::Range<isize>>,
    ) -> Pass<'_, T, S> {
        let layout = *dst.layout();
        Pass {
            kernel: self.kernel,
            src: Level::lattice(src, &layout, self.periodic),
            dst: Level::lattice(dst.storage_mut().as_mut_ptr(), &layout, self.periodic),
            ring: shape.ring,
            layout: shape.layout,
            bytes: self.bytes,
            sync: GroupSync::new(shape.groups, shape.blocking.len() * chunks.len()),
            chunks,
            progress: Progress::new(self.team.size()),
            non_finite: AtomicBool::new(false),
            next_plane: AtomicUsize::new(0),
            blocking: shape.blocking.clone(),
        }
    }

    /// One pass with `beside`'s work on the calling thread (see [`LatticeBeside`]): first the
    /// output planes at least `dim_t` from both halos, beside the work, then the bands next to
    /// the halos. A lattice without z halos, or too thin for planes that need none, runs the
    /// work first. False if any output is not finite.
    fn pass_beside(
        &self,
        shape: &PassShape<T>,
        pop: &mut Populations<T>,
        scratch: &mut Populations<T>,
        beside: &mut LatticeBeside<'_, T>,
    ) -> bool {
        let nz = shape.blocking.dims[2];
        let depth = shape.blocking.dim_t;
        let [lo, hi] = beside.halo;
        let start = if lo > 0 { lo + depth } else { 0 };
        let end = if hi > 0 {
            (nz - hi).saturating_sub(depth)
        } else {
            nz
        };
        if lo + hi == 0 || start >= end {
            beside.run_first(pop);
            let chunks = shape.blocking.z_chunks(self.z_chunks);
            let src = pop.storage_mut().as_mut_ptr();
            return self.pass(shape, src, scratch, chunks).run(self.team).0;
        }
        let inner = tapered_chunks(end - start, 0, self.z_chunks)
            .into_iter()
            .map(|c| (c.start + start) as isize..(c.end + start) as isize)
            .collect();
        let layout = *pop.layout();
        let base = pop.storage_mut().as_mut_ptr();
        // SAFETY: `base` holds the Q arrays of `layout` and outlives both passes (the borrow of
        // `pop`). While the cut lives, the first pass reads only the planes `start − depth ..
        // end + depth`, all between the halos, and writes only `scratch`; the cut reads those
        // planes and writes only the halo planes.
        let cut = unsafe { ZCut::from_raw(base, layout, beside.halo) };
        let first = self.pass(shape, base, scratch, inner);
        let work = &mut beside.work;
        let (finite, waited) = first.run_beside(self.team, || work(cut, true));
        *beside.waited = waited;
        let bands = [
            (lo > 0).then_some(lo as isize..start as isize),
            (hi > 0).then_some(end as isize..(nz - hi) as isize),
        ];
        let bands = bands.into_iter().flatten().collect();
        let finite_bands = self.pass(shape, base, scratch, bands).run(self.team).0;
        finite && finite_bands
    }
}

/// Shape of one group's ring buffers: `dim_t − 1` levels, each keeping the slots of
/// [`Slots::Planes`] (tile-sized planes) or [`Slots::Rows`] (tile-wide rows) of every direction
/// (groups' rings follow each other, `len` apart).
#[derive(Clone, Copy, Debug)]
struct RingLayout {
    pitch: usize,
    /// Elements of one slot: a tile-sized plane of one direction (a ring of planes) or one row
    /// (a ring of rows).
    slot: usize,
    /// Offset of each direction's first slot within a level.
    arrays: [usize; Q],
    slots: Slots,
    level: usize,
    len: usize,
}

impl RingLayout {
    fn new<T>(b: &Blocking, slots: Slots) -> Self {
        let size = std::mem::size_of::<T>();
        // A tile's ring width depends on its columns only.
        let width = b
            .first_row()
            .map(|t| (b.level(&t, 0, 1).end - ring_origin::<T>(b, &t)[0]) as usize);
        let pitch = padded_stride::<T>(width.max().unwrap_or(0));
        // Stagger the planes (or each direction's rows) across cache sets, like the lattice's
        // arrays.
        let (slot, per_class, gap) = match slots {
            Slots::Planes(n) => {
                let bytes = (pitch * b.buf[1] * size).next_multiple_of(4096) + 2 * CACHE_LINE;
                (bytes / size, n, 0)
            }
            Slots::Rows { n, .. } => (pitch, n, 2 * CACHE_LINE / size),
            Slots::All => unreachable!("a ring keeps planes or rows"),
        };
        let mut first = 0;
        let arrays = std::array::from_fn(|i| {
            let at = first;
            first += per_class[z_class(i)] * slot + gap;
            at
        });
        RingLayout {
            pitch,
            slot,
            arrays,
            slots,
            level: first,
            len: (b.dim_t - 1) * first,
        }
    }
}

/// Where level 1 of `tile` starts in a ring: x at the cache line holding its first column, so
/// ring rows keep the lattice's alignment within a line (the row kernel aligns its vectors to
/// it: see `FlowKernel::row`), y at its first row.
fn ring_origin<T>(b: &Blocking, tile: &[std::ops::Range<isize>; 2]) -> [isize; 2] {
    // x is never cut into ghost zones (see `Blocking`), so level 1 starts at a column >= 0.
    let x = b.level(tile, 0, 1).start as usize;
    [line_start::<T>(x) as isize, b.level(tile, 1, 1).start]
}

/// What one member of a multi-level pass sets up once and carries from unit to unit (see
/// [`Pass::work`]).
struct Worker<T: Real> {
    tid: usize,
    m: Member,
    /// The staging row of the last level's rows.
    stage: Stage<T>,
    /// The neighbouring members of the group, waited for when the pass runs by neighbours.
    neighbours: [Option<usize>; 2],
    /// Planes each level runs behind the level below (see [`lag`]).
    behind: usize,
    /// Steps this thread has finished in this pass, over all its units.
    finished: usize,
    /// Finiteness tracker of the last level's outputs.
    check: Tracker<T>,
    /// Where the ring levels' rows fold their outputs (never tested).
    unchecked: Tracker<T>,
}

/// One member's view of a unit: for each level `j` (0 the source lattice, `dim_t` the
/// destination) its storage, columns `(x0, x1)`, rows (the member's share) and planes, and the
/// staging row the last level is computed into.
struct UnitSpans<T: Real> {
    levels: Vec<Level<T>>,
    xs: Vec<(usize, usize)>,
    ys: Vec<std::ops::Range<isize>>,
    zs: Vec<std::ops::Range<isize>>,
    staged: Level<T>,
}

/// One pass: the shared, read-only state of every team member.
struct Pass<'a, T: Real, S: Isa> {
    kernel: &'a FlowKernel<T, S>,
    src: Level<T>,
    dst: Level<T>,
    ring: *mut T,
    layout: RingLayout,
    bytes: NodeBytes,
    /// Output planes of each z chunk, longest first; a work unit is a tile's chunk, claimed
    /// chunk by chunk (unit `u`: tile `u % tiles`, chunk `u / tiles`), so the short chunks come
    /// last.
    chunks: Vec<std::ops::Range<isize>>,
    sync: GroupSync,
    progress: Progress,
    non_finite: AtomicBool,
    /// The next unit of a one-level pass, a tile's plane (see [`Pass::work_spatial`]).
    next_plane: AtomicUsize,
    blocking: Blocking,
}

// SAFETY: the raw pointers are shared by the team under the schedule in the module docs: each
// unit (a tile's chunk of z, whose output planes no other unit writes) is claimed by one group,
// which alone uses its own ring; in each pipeline step every thread writes only its own rows of
// one plane per level (its group's ring slots or its unit's destination rows, which no other
// thread touches in that step), reads only planes finished in earlier steps (ordered by the
// barrier) or, alone in its group, planes it wrote itself earlier in the step, and never
// writes the source lattice or the byte arrays. With rings of rows every group is one thread,
// which reads only rows it wrote itself earlier in the unit (`row_slots` keeps them). A
// one-level pass writes each tile's plane from the one thread that claimed it (the planes of
// its chunks). A pass beside a halo exchange reads none of the halo planes the exchange writes
// meanwhile (`BlockedRun::pass_beside`).
unsafe impl<T: Real, S: Isa> Sync for Pass<'_, T, S> {}

impl<T: Real, S: Isa> Pass<'_, T, S> {
    /// Runs the pass on the team: false if any value written to the lattice is not finite,
    /// and no wait (see [`Pass::run_beside`]).
    fn run(&self, team: &Team) -> (bool, Duration) {
        self.run_beside(team, || {})
    }

    /// Runs the pass on the team with `beside` on the calling thread meanwhile (see
    /// [`Team::run_beside`]): false if any value written to the lattice is not finite, and how
    /// long the pass's last member waited for `beside` to finish.
    fn run_beside(&self, team: &Team, beside: impl FnOnce()) -> (bool, Duration) {
        let waited = if self.kernel.forced() {
            team.run_beside(&|tid| self.member::<true>(tid), beside)
        } else {
            team.run_beside(&|tid| self.member::<false>(tid), beside)
        };
        (!self.non_finite.load(Ordering::Relaxed), waited)
    }

    /// Member `tid`'s share of the pass.
    fn member<const FORCED: bool>(&self, tid: usize) {
        if self.blocking.dim_t == 1 {
            self.work_spatial::<FORCED>()
        } else {
            self.work::<FORCED>(tid)
        }
    }

    /// The `index`-th of `of` parts of `range` (an even split of rows).
    fn share(range: std::ops::Range<isize>, index: usize, of: usize) -> std::ops::Range<isize> {
        let len = range.len();
        range.start + (len * index / of) as isize..range.start + (len * (index + 1) / of) as isize
    }

    /// Level `j`'s storage in group `group`'s ring for a tile whose level-1 region starts at
    /// `origin`.
    fn level(&self, group: usize, j: usize, origin: [isize; 2]) -> Level<T> {
        let d = self.blocking.dim_t;
        if j == 0 {
            return self.src;
        }
        if j == d {
            return self.dst;
        }
        let [nx, ny, nz] = self.blocking.dims;
        let y = match self.blocking.modes[1] {
            Mode::Clamp => AxisMap::Clamp(ny),
            Mode::Whole => AxisMap::Wrap(ny),
            Mode::Ghost => AxisMap::Direct,
        };
        debug_assert!(self.blocking.modes[0] != Mode::Ghost && origin[0] >= 0 && nx > 0);
        Level {
            base: self
                .ring
                .wrapping_add(group * self.layout.len + (j - 1) * self.layout.level),
            arrays: self.layout.arrays,
            plane: self.layout.slot,
            pitch: self.layout.pitch,
            origin,
            y,
            z: if self.blocking.z_periodic {
                AxisMap::Direct
            } else {
                AxisMap::Clamp(nz)
            },
            slots: self.layout.slots,
        }
    }

    /// One member's share of a multi-level pass: the units its group claims, each run through
    /// the pipeline by [`Self::unit`].
    fn work<const FORCED: bool>(&self, tid: usize) {
        let m = self.sync.groups().member(tid);
        let _poison = PoisonOnPanic(self.sync.barrier(m));
        let zero = Tracker::new();
        let mut w = Worker {
            tid,
            m,
            // The last level's rows are computed into a staging row and streamed to the
            // lattice (see `super::stage`).
            stage: Stage::<T>::new(self.blocking.buf[0]),
            neighbours: [
                (m.local > 0).then(|| tid - 1),
                (m.local + 1 < m.size).then_some(tid + 1),
            ],
            behind: lag(m.size),
            finished: 0,
            check: zero,
            unchecked: zero,
        };
        // Units this thread's group has claimed (see `GroupSync::claim`).
        let mut claims = 0;
        // Every member claims together; a poisoned barrier (a member panicked) ends the loop.
        while let Ok(Some(unit)) = self.sync.claim(m, claims) {
            claims += 1;
            if !self.unit::<FORCED>(&mut w, unit) {
                return;
            }
        }
        // The team's join publishes the streamed rows.
        stream::fence();
        if !w.check.is_finite() {
            self.non_finite.store(true, Ordering::Relaxed);
        }
    }

    /// Runs the pipeline over work unit `unit` (a tile's chunk of z): rows in batches for a
    /// ring of rows, planes in steps closed by the group's barrier or by waiting for the two
    /// neighbouring members otherwise. False if the barrier was poisoned (a member panicked).
    fn unit<const FORCED: bool>(&self, w: &mut Worker<T>, unit: usize) -> bool {
        let b = &self.blocking;
        let tile = &b.tile(unit % b.len());
        let chunk = &self.chunks[unit / b.len()];
        let (steps, z1) = b.pipeline(chunk, w.behind);
        let origin = ring_origin::<T>(b, tile);
        let spans = self.unit_spans(w, tile, chunk, origin);
        if let Slots::Rows { height, .. } = self.layout.slots {
            self.row_batches::<FORCED>(w, &spans, z1, origin[1], height);
            return true;
        }
        let by_neighbours = w.m.size > 1 && self.neighbours_suffice(tile, w.m.size);
        self.plane_steps::<FORCED>(w, &spans, steps, z1, by_neighbours)
    }

    /// Each level's storage, columns, rows (member `w`'s share) and planes in the unit of
    /// `tile` and `chunk`, whose level 1 starts at `origin` in the ring.
    fn unit_spans(
        &self,
        w: &mut Worker<T>,
        tile: &[std::ops::Range<isize>; 2],
        chunk: &std::ops::Range<isize>,
        origin: [isize; 2],
    ) -> UnitSpans<T> {
        let b = &self.blocking;
        let d = b.dim_t;
        let m = w.m;
        let xs: Vec<(usize, usize)> = (0..=d)
            .map(|j| {
                let r = b.level(tile, 0, j.max(1));
                (r.start as usize, r.end as usize)
            })
            .collect();
        UnitSpans {
            levels: (0..=d).map(|j| self.level(m.group, j, origin)).collect(),
            staged: w.stage.level(xs[d].0),
            xs,
            ys: (0..=d)
                .map(|j| Self::share(b.level(tile, 1, j.max(1)), m.local, m.size))
                .collect(),
            zs: (0..=d).map(|j| b.z_range(j.max(1), chunk)).collect(),
        }
    }

    /// A one-thread group's unit with rings of rows (see `keeps_rows`): at tick t (a multiple
    /// of ROW_BATCH) level j computes the rows at positions n = t − (j − 1)·(height + 1) and
    /// the next ROW_BATCH − 1, position n being plane z1 + n / height and row
    /// origin_y + n mod height, where they lie in the level's region; rows (y + 1, z + 1) and
    /// before of level j − 1 are done by then.
    fn row_batches<const FORCED: bool>(
        &self,
        w: &mut Worker<T>,
        spans: &UnitSpans<T>,
        z1: isize,
        origin_y: isize,
        height: usize,
    ) {
        let d = self.blocking.dim_t;
        let h = height as isize;
        let row_lag = h + 1;
        let ticks = (1..=d)
            .map(|j| (spans.zs[j].end - z1) * h + (j as isize - 1) * row_lag)
            .max()
            .unwrap_or(0);
        let batch = ROW_BATCH as isize;
        for t in (0..ticks).step_by(ROW_BATCH) {
            for j in 1..=d {
                let n0 = t - (j as isize - 1) * row_lag;
                if n0 + batch <= 0 {
                    break;
                }
                for n in n0.max(0)..n0 + batch {
                    let (z, y) = (z1 + n / h, origin_y + n % h);
                    if spans.zs[j].contains(&z) && spans.ys[j].contains(&y) {
                        self.compute::<FORCED>(w, spans, j, y, z);
                    }
                }
            }
        }
    }

    /// A unit with rings of planes: `steps` pipeline steps, level `j` computing plane
    /// `z1 + s − lag·(j − 1)` at step `s`, each step closed by the barrier or, where
    /// `by_neighbours`, by waiting for the two neighbouring members. False if the barrier was
    /// poisoned.
    fn plane_steps<const FORCED: bool>(
        &self,
        w: &mut Worker<T>,
        spans: &UnitSpans<T>,
        steps: usize,
        z1: isize,
        by_neighbours: bool,
    ) -> bool {
        let barrier = self.sync.barrier(w.m);
        for s in 0..steps as isize {
            if by_neighbours
                && self
                    .progress
                    .wait(w.neighbours, w.finished, barrier)
                    .is_err()
            {
                return false;
            }
            for j in 1..=self.blocking.dim_t {
                let z = z1 + s - w.behind as isize * (j as isize - 1);
                if spans.zs[j].contains(&z) {
                    for y in spans.ys[j].clone() {
                        self.compute::<FORCED>(w, spans, j, y, z);
                    }
                }
            }
            // Published in both modes: a later tile of this pass may run by neighbours while
            // this one ran with the barrier.
            w.finished += 1;
            self.progress.finish(w.tid, w.finished);
            if !by_neighbours && barrier.wait().is_err() {
                return false;
            }
        }
        true
    }

    /// Computes row (y, z) of level `j` from level `j − 1`: into the ring, or for the last
    /// level into the staging row and from there to the lattice.
    #[inline(always)]
    fn compute<const FORCED: bool>(
        &self,
        w: &mut Worker<T>,
        spans: &UnitSpans<T>,
        j: usize,
        y: isize,
        z: isize,
    ) {
        let (x0, x1) = spans.xs[j];
        let levels = &spans.levels;
        let d = self.blocking.dim_t;
        let last = j == d;
        let out = if last { &spans.staged } else { &levels[j] };
        let mut row = Row::new(&levels[j - 1], out, &self.bytes, y, z);
        // Face walls keep their populations: ring levels leave them out, the last level copies
        // them from the pass's source (see `FaceWalls`).
        if last {
            row.copy_face_walls_from(&levels[0], y, z);
        } else {
            row.skip_face_walls();
        }
        // SAFETY: level j − 1 holds rows y − 1 ..= y + 1 of planes z − 1 ..= z + 1 (mapped) at
        // columns x0 − 1 .. x1 + 1 within the lattice (crate::blocking::lattice: each level's region is the next
        // one's grown by one), finished in earlier steps or, in a one-thread group, earlier in
        // this one; each class's slots still hold the planes (`ring_slots`) or rows
        // (`row_slots`) it is read from. Row (y, z) of level j < d is this thread's alone in
        // this step and lies in slots no other thread reads in this step (in a one-thread group
        // level j + 1 reads it later, after this write). The last level goes to this thread's
        // staging row, which covers the level's columns, and from there to row (y, z) of the
        // lattice, which no other thread writes (tiles' outputs are disjoint); its face walls
        // read row (y, z) of the source lattice, which nothing writes in the pass.
        unsafe {
            if last {
                self.kernel.row::<FORCED, true>(&row, x0, x1, &mut w.check);
                stage::stream_row(&spans.staged, &levels[d], y, z, x0, x1);
            } else {
                self.kernel
                    .row::<FORCED, false>(&row, x0, x1, &mut w.unchecked)
            }
        }
    }

    /// Whether, on `tile` with `size` members, every member reads ring rows only from its own
    /// share and its two neighbours' shares of the level below (see `crate::runtime::progress`).
    /// A periodic y axis in one tile wraps the first member's reads to the last member's rows,
    /// so it keeps the barrier, as do shares too short for the rule.
    fn neighbours_suffice(&self, tile: &[std::ops::Range<isize>; 2], size: usize) -> bool {
        let b = &self.blocking;
        if b.modes[1] == Mode::Whole {
            return false;
        }
        (2..=b.dim_t).all(|j| {
            let below = b.level(tile, 1, j - 1);
            (0..size).all(|t| {
                let rows = Self::share(b.level(tile, 1, j), t, size);
                if rows.is_empty() {
                    return true;
                }
                let first = Self::share(below.clone(), t.saturating_sub(1), size).start;
                let last = Self::share(below.clone(), (t + 1).min(size - 1), size).end;
                (rows.start - 1).max(below.start) >= first && (rows.end + 1).min(below.end) <= last
            })
        })
    }

    /// One step per pass needs no pipeline: the threads claim one tile's plane of the pass's
    /// chunks at a time, in order, from a shared counter and compute it from the lattice into the second buffer,
    /// without barriers (claimed, not split evenly in advance: see `crate::cpu::blocked`'s
    /// one-level pass for the measurements).
    fn work_spatial<const FORCED: bool>(&self) {
        let b = &self.blocking;
        let mut check = Tracker::new();
        let planes: Vec<isize> = self.chunks.iter().flat_map(|c| c.clone()).collect();
        let per_tile = planes.len();
        for unit in claimed(&self.next_plane, per_tile * b.len()) {
            let (tile, z) = (&b.tile(unit / per_tile), planes[unit % per_tile]);
            let x = b.level(tile, 0, 1);
            for y in b.level(tile, 1, 1) {
                let row = Row::new(&self.src, &self.dst, &self.bytes, y, z);
                // SAFETY: the source is the whole lattice; row (y, z) of the destination is in
                // this unit, which only this thread claimed.
                unsafe {
                    self.kernel.row::<FORCED, true>(
                        &row,
                        x.start as usize,
                        x.end as usize,
                        &mut check,
                    )
                };
            }
        }
        if !check.is_finite() {
            self.non_finite.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aligned::line_elems;
    use crate::lbm::rows::Z_CLASS_SIZES;

    /// The planner's charge for a D3Q19 ring level.
    fn ring_rows(members: usize, whole_y: bool, height: usize) -> usize {
        crate::blocking::rings::ring_rows(members, whole_y, height, Z_CLASS_SIZES)
    }

    /// A pass beside a halo exchange (see [`LatticeBeside`]) gives the planes between the halos
    /// the same bits as a pass whose halos were filled first: one- and many-level passes, tile
    /// groups and z chunks, halos on one side or both, a lattice too thin to compute anything
    /// before the halos arrive, walls and a moving wall (the cavity) or none (periodic x and
    /// y), `f32` and `f64` at every ISA level. The halos hold a wrong finite value until `work`
    /// fills them, so a pass that read them early would give other values.
    #[test]
    fn a_pass_beside_the_exchange_matches_one_after_it() {
        use crate::lbm::{Axis, Lattice};
        use crate::perf::{cavity_lattice, periodic_lattice};
        use crate::simd::{with_isa, WithIsa};
        use crate::Level;

        struct Check<'a, T: Real> {
            lat: &'a Lattice<T>,
            team: &'a Team,
            // (dim_t, tile threads, z chunks, halo planes)
            case: (usize, usize, usize, [usize; 2]),
        }
        impl<T: Real> WithIsa for Check<'_, T> {
            type Output = ();
            fn call<S: Isa>(self) {
                let (dim_t, tile_threads, z_chunks, halo) = self.case;
                let lat = self.lat;
                let kernel = FlowKernel::<T, S>::new(lat);
                let run = |pop: &mut Populations<T>, beside: Option<LatticeBeside<'_, T>>| {
                    let mut scratch = pop.clone();
                    let run = BlockedRun {
                        kernel: &kernel,
                        bytes: NodeBytes::new(lat),
                        periodic: lat.periodic,
                        steps: dim_t,
                        dim_t,
                        tile: [2 * dim_t + 9, 2 * dim_t + 4],
                        tile_threads,
                        z_chunks,
                        team: self.team,
                        replay: true,
                    };
                    assert!(run.run(pop, &mut scratch, &mut None, beside).is_ok());
                };
                let [_, ny, nz] = lat.dims();
                let halo_planes = || (0..halo[0]).chain(nz - halo[1]..nz);
                let mut after = lat.pop.clone();
                run(&mut after, None);
                let mut early = lat.pop.clone();
                let mut cut = early.z_cut(halo);
                for (i, y, z) in rows(ny, halo_planes()) {
                    cut.row_mut(i, y, z).fill(T::of(7.0));
                }
                let mut calls = 0;
                let mut work = |mut cut: ZCut<'_, T>, _beside| {
                    calls += 1;
                    // Late enough that the pass computes its first part from the wrong halos
                    // if it reads them.
                    std::thread::sleep(Duration::from_millis(20));
                    for (i, y, z) in rows(ny, halo_planes()) {
                        cut.row_mut(i, y, z).copy_from_slice(lat.pop.row(i, y, z));
                    }
                };
                let mut waited = Duration::MAX;
                let beside = LatticeBeside {
                    halo,
                    work: &mut work,
                    waited: &mut waited,
                };
                run(&mut early, Some(beside));
                assert!(waited < Duration::MAX);
                assert_eq!(calls, 1);
                for (i, y, z) in rows(ny, halo[0]..nz - halo[1]) {
                    assert!(
                        early.row(i, y, z) == after.row(i, y, z),
                        "{} {:?}: population {i} row ({y}, {z}) differs",
                        T::DTYPE,
                        self.case
                    );
                }
            }
        }
        /// Every population's rows (y, z) of the planes `zs`.
        fn rows(
            ny: usize,
            zs: impl Iterator<Item = usize> + Clone,
        ) -> impl Iterator<Item = (usize, usize, usize)> {
            (0..Q).flat_map(move |i| {
                zs.clone()
                    .flat_map(move |z| (0..ny).map(move |y| (i, y, z)))
            })
        }
        fn check<T: Real>(team: &Team) {
            let cases = [
                (3, 1, 2, [3, 3], 17),
                (2, 3, 3, [2, 0], 13),
                (1, 1, 3, [0, 1], 11),
                (1, 2, 1, [1, 1], 9),
                (2, 2, 2, [2, 2], 3),
            ];
            for (dim_t, tile_threads, z_chunks, halo, owned) in cases {
                let dims = [19, 13, owned + halo[0] + halo[1]];
                let lattices = [cavity_lattice::<T>(dims, 3), periodic_lattice::<T>(dims, 4)];
                for lat in lattices {
                    let mut lat = lat.unwrap();
                    // A rank's local lattice is closed across a split axis.
                    lat.set_periodic(Axis::Z, false);
                    lat.prepare();
                    for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
                        let case = (dim_t, tile_threads, z_chunks, halo);
                        with_isa(
                            level,
                            Check {
                                lat: &lat,
                                team,
                                case,
                            },
                        );
                    }
                }
            }
        }
        let team = Team::new(3, false, false).unwrap();
        check::<f32>(&team);
        check::<f64>(&team);
    }

    #[test]
    fn ring_rows_count_every_directions_slots() {
        // Planes: five directions with c_z = +1 keep lag + 2 slots, the other 14 lag + 1.
        let h = 10;
        assert_eq!(ring_rows(2, false, h), (5 * 4 + 14 * 3) * h);
        assert_eq!(ring_rows(8, false, h), ring_rows(2, false, h));
        assert_eq!(ring_rows(1, true, h), (5 * 3 + 14 * 2) * h);
        // Rows: class 0 (5 directions) 2h + 2 + B, class 1 (9) h + 2 + B, class 2 (5) h + 1 + B.
        let b = ROW_BATCH;
        let rows = 5 * (2 * h + 2 + b) + 9 * (h + 2 + b) + 5 * (h + 1 + b);
        assert_eq!(ring_rows(1, false, h), rows);
        let blocking = Blocking::new([40, 30, 20], [false; 3], [20, 12], 3);
        let h = blocking.buf[1];
        for members in [1, 2, 4] {
            let ring = RingLayout::new::<f32>(&blocking, ring_kind(members, false, h));
            let expected = if members == 1 {
                // Rows of the ring's pitch, two cache lines between directions.
                ring_rows(1, false, h) * ring.pitch + Q * 2 * line_elems::<f32>()
            } else {
                ring_rows(members, false, h) / h * ring.slot
            };
            assert_eq!(ring.level, expected, "{members}");
        }
    }

    #[test]
    fn ring_rows_hold_each_tiles_columns_from_its_line() {
        // Level 1's x ranges 0..18, 14..34 and 30..48: the middle tile starts two columns
        // into a line of 16 f32, so its row needs 34 columns where its level 1 has 20.
        let b = Blocking::new([48, 30, 20], [false; 3], [22, 12], 3);
        let line = line_elems::<f32>() as isize;
        let needs =
            |t: &[std::ops::Range<isize>; 2]| b.level(t, 0, 1).end - ring_origin::<f32>(&b, t)[0];
        assert!(b
            .tiles()
            .any(|t| needs(&t) > padded_stride::<f32>(b.buf[0]) as isize));
        let ring = RingLayout::new::<f32>(&b, Slots::Planes(ring_slots(1)));
        for t in &b.tiles().collect::<Vec<_>>() {
            let [x, _] = ring_origin::<f32>(&b, t);
            assert_eq!(x % line, 0);
            assert!(x <= b.level(t, 0, 1).start);
            assert!(needs(t) <= ring.pitch as isize, "{t:?}");
        }
    }
}
