//! The 3.5D-blocked engine (sections V-C..V-E of the 3.5D paper): each pass advances `dim_t`
//! time steps while reading and writing the grid once.
//!
//! The XY interior is cut into tiles (see [`crate::blocking::tiling`]); all threads of a pinned team work
//! on one tile at a time and stream through z (passes of one level work otherwise: see
//! `Pass::work_spatial`). Level `j` (time step `j` of the pass) keeps its last `2R + 2` planes
//! of the tile in a ring buffer; at pipeline step `s` level `j` computes plane
//! `z = z1 + s - (j-1)(R+1)` (`z1`: level 1's first plane) from level `j-1`'s planes
//! `z-R ..= z+R`, which were all finished at earlier steps, so every level advances in the same
//! step and one spin-barrier per step is the only synchronisation (the prolog and epilog are
//! the steps where some levels have no plane yet / any more). A group of one thread, the
//! planner's usual choice, computes its levels in order instead and takes two planes per level
//! and step, R planes behind the level below, with the two planes' rows interleaved (see
//! [`Schedule`]). Level 0 is read straight from the source grid and the last level writes only
//! the tile's valid output into the destination grid. Each level's rows are split evenly among
//! the threads, as in the paper's figure 3(b).
//!
//! The team may be cut into tile groups (see [`crate::runtime::groups`]): each group claims units of
//! work from a shared counter, a tile's chunk of z planes (see
//! [`crate::blocking::tiling::z_chunk_count`]; each level below the last also computes the chunk's halo,
//! `R` more planes per level on each side), and runs the pipeline above on each with its own
//! ring buffers and its own barrier; a group of the whole team on whole tiles is the paper's
//! scheme. Where every member's share is deep enough that it reads rows of its two neighbours
//! only, the per-step barrier gives way to waiting for those two ([`crate::runtime::progress`]), so a
//! late member holds up its neighbours instead of the whole group.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::naive;
use super::rows::{Planes, RowKernel, WithKernel};
use crate::aligned::{line_elems, line_start, AlignedBuf};
use crate::blocking::tiling::{grown, z_chunks, Tile, Tiling};
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::runtime::barrier::PoisonOnPanic;
use crate::runtime::groups::{claimed, GroupSync, Groups, Member};
use crate::runtime::prefetch::prefetch_row;
use crate::runtime::progress::Progress;
use crate::runtime::stream::{self, stream_copy};
use crate::runtime::team::Team;
use crate::simd::{Isa, Tracker};
use crate::{Grid, Real};

/// A blocked run of `steps` steps, `dim_t` per pass, with loaded tiles of `tile` cells.
pub(crate) struct BlockedRun<'a, 'b, T: Real> {
    pub(crate) grid: &'a mut Grid<T>,
    pub(crate) scratch: &'a mut Grid<T>,
    pub(crate) steps: usize,
    pub(crate) dim_t: usize,
    pub(crate) tile: [usize; 2],
    /// Threads per tile group (clamped to the team size).
    pub(crate) tile_threads: usize,
    /// Chunks z is cut into (see [`crate::blocking::tiling::z_chunk_count`]).
    pub(crate) z_chunks: usize,
    /// Whether the last level streams its rows to the grid with non-temporal stores, which
    /// skip the write-allocate read of every output line (see [`crate::runtime::stream`]): for grids
    /// that do not stay in the last-level cache between passes anyway. Passes of one level
    /// (`dim_t` 1) write directly.
    pub(crate) stream: bool,
    pub(crate) team: &'a Team,
    /// The ring buffers: kept from an earlier run (grown when too small) and left for the next.
    pub(crate) ring: &'a mut Option<AlignedBuf<T>>,
    /// Work to run beside the first pass (a split run's exchange of its z halos), if any.
    pub(crate) beside: Option<Beside<'b, T>>,
    /// Whether a pass that went non-finite is replayed a step at a time (see
    /// `EngineParams::replay`); else the grid keeps the pass's input.
    pub(crate) replay: bool,
}

/// A halo exchange as [`Beside`] runs it: given the low halo's planes, the planes between and
/// the high halo's, it reads the planes between and fills the halos. The flag says whether a
/// pass computes meanwhile (the work should then leave the cores to it) or waits for it.
pub(crate) type HaloWork<'a, T> = dyn FnMut(&mut [T], &[T], &mut [T], bool) + 'a;

/// Work a split run does beside its engine's first pass: the exchange that fills the grid's z
/// halos. The pass first computes the output planes whose inputs lie outside the halos while
/// `work` runs on the calling thread (the team's members compute; that thread only waits for
/// them otherwise), then the bands of `R·dim_t` planes next to the halos. The halo planes' own
/// outputs, which the next exchange overwrites, are not computed.
pub(crate) struct Beside<'a, T> {
    /// Planes of the low and the high z halo (0 where the grid has none).
    pub(crate) halo: [usize; 2],
    /// The exchange, given the grid's storage cut at the halos (see [`HaloWork`]).
    pub(crate) work: &'a mut HaloWork<'a, T>,
    /// Where the run puts how long the computation waited for `work` (zero when the pass's
    /// first part took longer).
    pub(crate) waited: &'a mut Duration,
}

impl<T: Real> Beside<'_, T> {
    /// Runs the work on `grid` before anything computes (for engines that cannot compute
    /// beside it); all of its time counts as waited.
    pub(crate) fn run_first(&mut self, grid: &mut Grid<T>) {
        let start = Instant::now();
        let (low, mid, high) = grid.planes_cut_mut(self.halo);
        (self.work)(low, mid, high, false);
        *self.waited = start.elapsed();
    }
}

impl<T: Real> WithKernel<T> for BlockedRun<'_, '_, T> {
    type Output = Result<(), Failure>;

    fn call<K: RowKernel<T>>(mut self, kernel: K) -> Self::Output {
        let r = K::RADIUS;
        if self.steps > self.dim_t {
            // Later passes would read the halo planes' outputs, which a pass beside the
            // exchange leaves out.
            if let Some(mut beside) = self.beside.take() {
                beside.run_first(self.grid);
            }
        }
        let mut done = 0;
        while done < self.steps {
            let dim_t = self.dim_t.min(self.steps - done);
            let tiling = Tiling::new(self.grid.dims(), r, self.tile, dim_t);
            let layout = RingLayout::new::<T>(&tiling, r, dim_t);
            let groups = Groups::new(self.team.size(), self.tile_threads);
            let ring_len = layout.len * groups.count();
            if self.ring.as_ref().is_none_or(|b| b.len() < ring_len) {
                drop(self.ring.take());
                *self.ring = Some(
                    AlignedBuf::zeroed(ring_len.max(1))
                        .expect("ring buffers are a few cache-sized planes"),
                );
            }
            let pass = PassShape {
                tiling: &tiling,
                layout,
                dim_t,
                groups,
            };
            let finite = match self.beside.take() {
                Some(mut beside) => self.pass_beside(&kernel, &pass, &mut beside),
                None => {
                    let chunks = z_chunks(self.grid.dims()[2], r, self.z_chunks);
                    self.pass(&kernel, &pass, chunks)
                }
            };
            if finite {
                self.grid.swap_storage(self.scratch);
            } else if !self.replay {
                // The ranks of a split run find the failing step together, from this input.
                return Err(Failure::locate(self.scratch, r, done + 1));
            } else {
                // Replay the pass one step at a time to find the first step that went bad and
                // leave the grid at the step before it.
                for i in 1..=dim_t {
                    if !naive::step(&kernel, self.grid, self.scratch) {
                        return Err(Failure::locate(self.scratch, r, done + i));
                    }
                    self.grid.swap_storage(self.scratch);
                }
            }
            done += dim_t;
        }
        Ok(())
    }
}

/// What the passes of one length share: the tiling, the rings' shape, the levels and groups.
struct PassShape<'a> {
    tiling: &'a Tiling,
    layout: RingLayout,
    dim_t: usize,
    groups: Groups,
}

impl<T: Real> BlockedRun<'_, '_, T> {
    /// One pass of `shape` computing the output planes `chunks` from the grid into the scratch
    /// grid; false if any output is not finite.
    fn pass<K: RowKernel<T>>(
        &mut self,
        kernel: &K,
        shape: &PassShape,
        chunks: Vec<Range<usize>>,
    ) -> bool {
        let src = Source::of(self.grid);
        let ring = self.ring.as_mut().expect("allocated by the run");
        Pass::new(kernel, shape, ring, src, self.scratch, chunks, self.stream).run(self.team)
    }

    /// One pass with `beside`'s work on the calling thread (see [`Beside`]): first the output
    /// planes at least `R·dim_t` from both halos, beside the work, then the bands next to the
    /// halos. A grid too thin for such planes runs the work first.
    fn pass_beside<K: RowKernel<T>>(
        &mut self,
        kernel: &K,
        shape: &PassShape,
        beside: &mut Beside<'_, T>,
    ) -> bool {
        let r = K::RADIUS;
        let nz = self.grid.dims()[2];
        let [lo, hi] = beside.halo;
        let depth = r * shape.dim_t;
        let start = if lo > 0 { lo + depth } else { r };
        let end = if hi > 0 {
            nz - hi - depth.min(nz - hi)
        } else {
            nz - r
        };
        if start >= end {
            beside.run_first(self.grid);
            return self.pass(kernel, shape, z_chunks(nz, r, self.z_chunks));
        }
        let inner = chunks_of(start..end, self.z_chunks);
        let (dims, pitch, plane) = (
            self.grid.dims(),
            self.grid.pitch(),
            self.grid.plane_stride(),
        );
        let storage = self.grid.storage_mut();
        let (len, base) = (storage.len(), storage.as_mut_ptr());
        let (low_len, high_start) = (lo * plane, len - hi * plane);
        // SAFETY: the three slices cut the grid's storage at `lo` and `nz - hi` planes, all
        // derived from `base`, which the pass reads through too; while they live, the pass
        // reads only planes `start - depth .. end + depth`, which lie between the halos, and
        // `work` reads those planes only through the shared slice.
        let (low, mid, high) = unsafe {
            (
                std::slice::from_raw_parts_mut(base, low_len),
                std::slice::from_raw_parts(base.add(low_len), high_start - low_len),
                std::slice::from_raw_parts_mut(base.add(high_start), len - high_start),
            )
        };
        let src = Source {
            ptr: base,
            dims,
            pitch,
            plane,
        };
        let ring = self.ring.as_mut().expect("allocated by the run");
        let first = Pass::new(kernel, shape, ring, src, self.scratch, inner, self.stream);
        let work = &mut beside.work;
        let (finite, waited) = first.run_beside(self.team, || work(low, mid, high, true));
        *beside.waited = waited;
        let bands = [
            (lo > 0).then_some(lo..start),
            (hi > 0).then_some(end..nz - hi),
        ];
        let finite_bands = self.pass(kernel, shape, bands.into_iter().flatten().collect());
        finite && finite_bands
    }
}

/// The output planes of `count` near-equal chunks of `planes` (one per plane when there are
/// fewer planes than chunks).
fn chunks_of(planes: Range<usize>, count: usize) -> Vec<Range<usize>> {
    let len = planes.len();
    let count = count.clamp(1, len.max(1));
    (0..count)
        .map(|i| planes.start + i * len / count..planes.start + (i + 1) * len / count)
        .collect()
}

/// Rows of level `j` (of `dim_t`, radius `r`, `ny` rows in the grid) that member `local` of
/// `size` handles on `tile`: its even share of the computed rows, plus, for levels kept in ring
/// buffers, the fixed boundary rows next to them (copied, not computed, so the next level finds
/// every row it reads in the ring).
fn member_rows(
    tile: &Tile,
    j: usize,
    dim_t: usize,
    r: usize,
    ny: usize,
    local: usize,
    size: usize,
) -> Range<usize> {
    let mut rows = tile.level_y(j, dim_t, r, ny);
    if j < dim_t {
        if rows.start == r {
            rows.start = 0;
        }
        if rows.end == ny - r {
            rows.end = ny;
        }
    }
    share(rows, local, size)
}

/// Rows of `rows` that the `index`-th of `of` threads computes.
fn share(rows: Range<usize>, index: usize, of: usize) -> Range<usize> {
    let len = rows.len();
    rows.start + len * index / of..rows.start + len * (index + 1) / of
}

/// Whether, on `tile` with `size` members, every member reads ring rows only from its own
/// share and its two neighbours' shares of the level below, so that waiting for those two
/// (see [`crate::runtime::progress`]) orders the pipeline as a barrier would. Shares of at least R rows
/// make it so; very short shares (many threads on few rows) keep the barrier. Edge tiles may
/// differ from inner ones, so one pass can use both.
fn neighbours_suffice(tile: &Tile, dim_t: usize, r: usize, ny: usize, size: usize) -> bool {
    let share = |j: usize, local: usize| member_rows(tile, j, dim_t, r, ny, local, size);
    (2..=dim_t).all(|j| {
        (0..size).all(|t| {
            let rows = share(j, t);
            if rows.is_empty() {
                return true;
            }
            let first = share(j - 1, t.saturating_sub(1)).start;
            let last = share(j - 1, (t + 1).min(size - 1)).end;
            rows.start.saturating_sub(r) >= first && rows.end + r <= last
        })
    })
}

/// Most planes a level computes in one pipeline step.
const MAX_PLANES_PER_STEP: usize = 2;

/// How a group's levels advance through z: each pipeline step, level `j` computes `planes`
/// consecutive planes, `lag` planes behind level `j - 1`. A group of several threads computes
/// its levels side by side within a step (a member may reach level `j` before its neighbour has
/// written level `j - 1`), so a level reads only planes finished at earlier steps: one plane a
/// step, R + 1 behind. A one-thread group computes its levels in order, so level `j` may read
/// the planes level `j - 1` has just written: R behind, two planes a step, their rows
/// interleaved so that the 2R input planes the two outputs share are reused from L1 (on the
/// H100 machine's 16-core host 7-point sweeps so run 2,726 against 2,286 MUPS per thread at 16
/// threads; `plane_sweep_speed`). In the engine there, against one plane a step R + 1 behind:
/// star7 `f64` 512³ `dim_t` 6 522×44, whose rings overflow the L2, +30-69%; `f32` 518×24,
/// rings in L2, no change beyond the noise. Both keep every plane a level reads within the
/// last `2R + 2` its level below wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Schedule {
    planes: usize,
    lag: usize,
}

impl Schedule {
    /// The schedule of a group of `members` threads, radius `r`.
    fn for_group(members: usize, r: usize) -> Self {
        if members == 1 {
            Schedule {
                planes: MAX_PLANES_PER_STEP,
                lag: r,
            }
        } else {
            Schedule {
                planes: 1,
                lag: r + 1,
            }
        }
    }

    /// The planes level `j` (1-based) computes at step `s`: its `planes` planes from
    /// `start + planes·s − (j−1)·lag` on, where `start` is level 1's first plane, less those
    /// outside the level's planes `zs` (the prolog and epilog).
    fn planes_at(
        &self,
        s: usize,
        j: usize,
        start: usize,
        zs: &Range<usize>,
    ) -> impl Iterator<Item = usize> {
        let first = (start + self.planes * s) as isize - ((j - 1) * self.lag) as isize;
        let zs = zs.start as isize..zs.end as isize;
        (first..first + self.planes as isize)
            .filter(move |z| zs.contains(z))
            .map(|z| z as usize)
    }

    /// Pipeline steps until the last of `dim_t` levels, starting `lag` planes behind each level
    /// below from level 1's plane `start`, has computed plane `end - 1`.
    fn steps(&self, start: usize, end: usize, dim_t: usize) -> usize {
        ((end - start) + (dim_t - 1) * self.lag).div_ceil(self.planes)
    }
}

/// Planes of the interior `[r, nz - r)` that level `j` of `dim_t` computes for the output
/// planes `chunk`: the chunk grown by `R·(dim_t − j)` on each side (its halo), clipped.
fn level_z(chunk: &Range<usize>, j: usize, dim_t: usize, r: usize, nz: usize) -> Range<usize> {
    grown(chunk, r * (dim_t - j), r, nz)
}

/// Shape of one group's ring buffers: `dim_t - 1` levels of `2R + 2` slots, each a tile-sized
/// plane (groups' rings follow each other, `len` apart).
#[derive(Clone, Copy, Debug)]
struct RingLayout {
    pitch: usize,
    slot: usize,
    slots: usize,
    len: usize,
}

impl RingLayout {
    fn new<T>(tiling: &Tiling, r: usize, dim_t: usize) -> Self {
        // Room for the columns a ring row gains at its start when its origin is moved down
        // to a cache line (see `ring_origin`).
        let pitch = padded_stride::<T>(tiling.buf_w + line_elems::<T>() - 1);
        // Padded like the grid's planes: slots a multiple of 4 KiB apart would put the same row
        // of every plane a level reads into the same cache sets.
        let slot = padded_stride::<T>(pitch * tiling.buf_h);
        let slots = 2 * r + 2;
        RingLayout {
            pitch,
            slot,
            slots,
            len: (dim_t - 1) * slots * slot,
        }
    }
}

/// The global (x, y) that a tile's ring rows start at: the buffered region's first cell, with
/// x moved down to a multiple of a cache line so that a column has the same alignment in the
/// ring rows as in the grid's rows, and the row kernel's aligned vectors are aligned in both.
fn ring_origin<T>(tile: &Tile, dim_t: usize, r: usize) -> [usize; 2] {
    let [x, y] = tile.buffer_origin(dim_t, r);
    [line_start::<T>(x), y]
}

/// Columns, rows (this member's share) and planes (the chunk's, with its halo) that one level
/// computes in a unit.
struct LevelSpan {
    xs: Range<usize>,
    ys: Range<usize>,
    zs: Range<usize>,
}

/// What one member of a multi-level pass sets up once and carries from unit to unit (see
/// [`Pass::work`]).
struct Worker<T: Real> {
    tid: usize,
    m: Member,
    /// The group's ring buffers.
    ring: *mut T,
    /// Where the current unit's tile starts in its ring rows (see [`ring_origin`]).
    origin: [usize; 2],
    schedule: Schedule,
    /// Whether to prefetch the next step's memory rows: hardware prefetchers follow
    /// whole-plane streams, tiles narrower than the grid read short row segments.
    prefetch: bool,
    /// The staging row the last level's rows are computed into and streamed from, when the
    /// pass streams its output.
    stage: Option<AlignedBuf<T>>,
    /// The neighbouring members of the group, waited for when the pass runs by neighbours.
    neighbours: [Option<usize>; 2],
    /// Steps this thread has finished in this pass, over all its units (every member of a
    /// group runs the same number of steps per unit).
    finished: usize,
    /// The finiteness trackers, carried over from step to step.
    trackers: Trackers<Tracker<T>>,
}

/// Where the row kernels fold their outputs (zero while every output is finite, NaN after the
/// first that is not): a level step works on a copy in locals.
#[derive(Clone, Copy)]
struct Trackers<S> {
    /// Finiteness tracker of the last level's outputs.
    check: S,
    /// Where the ring levels' row kernels fold their outputs (never tested).
    unchecked: S,
}

/// One pass over the grid: shared, read-only state of every team member.
struct Pass<'a, T: Real, K> {
    kernel: &'a K,
    tiling: &'a Tiling,
    dim_t: usize,
    dims: [usize; 3],
    pitch: usize,
    plane: usize,
    src: *const T,
    dst: *mut T,
    ring: *mut T,
    layout: RingLayout,
    /// Output planes of each z chunk; a work unit is a tile's chunk (unit `u`: tile
    /// `u / chunks.len()`, chunk `u % chunks.len()`).
    chunks: Vec<Range<usize>>,
    /// Whether the last level streams its output (see [`BlockedRun::stream`]).
    stream: bool,
    sync: GroupSync,
    progress: Progress,
    non_finite: AtomicBool,
    /// The next unit of a one-level pass, a tile's plane (see [`Pass::work_spatial`]).
    next_plane: AtomicUsize,
}

// SAFETY: the raw pointers are shared among the team under the schedule described in the module
// docs: each unit (a tile's chunk of z, whose output planes no other unit writes) is claimed by
// one group, which alone uses its own ring buffers; in each pipeline step every thread writes
// only its own rows of its planes of each level (into its group's ring slots or its unit's dst
// rows, which no other thread reads or writes in that step), a group of several threads reads
// only planes finished in earlier steps (separated by the group's barrier or the neighbour
// wait), a one-thread group reads its own earlier writes, and the pass never writes `src` (a
// pass beside a halo exchange reads none of the halo planes the exchange writes meanwhile). A
// one-level pass writes each tile's plane from the one thread that claimed it.
unsafe impl<T: Real, K: Sync> Sync for Pass<'_, T, K> {}

/// The source grid as a pass reads it: where its storage starts, and its shape.
#[derive(Clone, Copy)]
struct Source<T> {
    ptr: *const T,
    dims: [usize; 3],
    pitch: usize,
    plane: usize,
}

impl<T: Real> Source<T> {
    fn of(grid: &Grid<T>) -> Self {
        Source {
            ptr: grid.storage().as_ptr(),
            dims: grid.dims(),
            pitch: grid.pitch(),
            plane: grid.plane_stride(),
        }
    }
}

impl<'a, T: Real, K: RowKernel<T>> Pass<'a, T, K> {
    /// A pass of `shape` computing the output planes `chunks` of `src` into `dst`.
    fn new(
        kernel: &'a K,
        shape: &PassShape<'a>,
        ring: &'a mut AlignedBuf<T>,
        src: Source<T>,
        dst: &'a mut Grid<T>,
        chunks: Vec<Range<usize>>,
        stream: bool,
    ) -> Self {
        let tiling = shape.tiling;
        Pass {
            kernel,
            tiling,
            dim_t: shape.dim_t,
            dims: src.dims,
            pitch: src.pitch,
            plane: src.plane,
            src: src.ptr,
            dst: dst.storage_mut().as_mut_ptr(),
            ring: ring.as_mut_ptr(),
            layout: shape.layout,
            sync: GroupSync::new(shape.groups, tiling.len() * chunks.len()),
            chunks,
            stream,
            progress: Progress::new(shape.groups.threads()),
            non_finite: AtomicBool::new(false),
            next_plane: AtomicUsize::new(0),
        }
    }

    /// Runs the pass on the team; false if any value written is infinite or NaN.
    fn run(self, team: &Team) -> bool {
        self.run_beside(team, || {}).0
    }

    /// [`Pass::run`] with `beside` on the calling thread meanwhile (see [`Team::run_beside`]);
    /// also how long the pass's last member waited for `beside` to finish.
    fn run_beside(self, team: &Team, beside: impl FnOnce()) -> (bool, Duration) {
        let waited = team.run_beside(&|tid| self.work(tid), beside);
        (!self.non_finite.load(Ordering::Relaxed), waited)
    }

    /// The ring buffers of group `group`.
    #[inline]
    fn ring_of(&self, group: usize) -> *mut T {
        self.ring.wrapping_add(group * self.layout.len)
    }

    /// Row (z, y) of the source grid, indexable by global column.
    #[inline]
    fn src_row(&self, z: usize, y: usize) -> *const T {
        self.src.wrapping_add(z * self.plane + y * self.pitch)
    }

    /// Row (z, y) of level `level`'s ring buffer in `ring`, indexable by global column.
    #[inline]
    fn ring_row(
        &self,
        ring: *mut T,
        level: usize,
        z: usize,
        y: usize,
        origin: [usize; 2],
    ) -> *mut T {
        let slot = (level - 1) * self.layout.slots + z % self.layout.slots;
        ring.wrapping_add(slot * self.layout.slot + (y - origin[1]) * self.layout.pitch)
            .wrapping_sub(origin[0])
    }

    /// Where level `level` keeps plane `z`, as (base, pitch) with `base + y·pitch + x` the cell
    /// (x, y): the source grid for level 0 and for the fixed boundary planes (they never
    /// change), the level's ring buffer in `ring` otherwise.
    #[inline]
    fn plane(&self, ring: *mut T, level: usize, z: usize, origin: [usize; 2]) -> (*const T, usize) {
        let r = K::RADIUS;
        if level == 0 || z < r || z >= self.dims[2] - r {
            (self.src.wrapping_add(z * self.plane), self.pitch)
        } else {
            let slot = (level - 1) * self.layout.slots + z % self.layout.slots;
            let base = ring
                .wrapping_add(slot * self.layout.slot)
                .wrapping_sub(origin[1] * self.layout.pitch + origin[0]);
            (base.cast_const(), self.layout.pitch)
        }
    }

    /// Rows of level `j` this member handles (see [`member_rows`]).
    fn level_rows(&self, tile: &Tile, j: usize, m: Member) -> Range<usize> {
        member_rows(
            tile,
            j,
            self.dim_t,
            K::RADIUS,
            self.dims[1],
            m.local,
            m.size,
        )
    }

    /// The state member `m` (thread `tid`) starts a multi-level pass with.
    fn worker(&self, tid: usize, m: Member) -> Worker<T> {
        let zero = Tracker::new();
        Worker {
            tid,
            m,
            ring: self.ring_of(m.group),
            origin: [0, 0],
            schedule: Schedule::for_group(m.size, K::RADIUS),
            prefetch: self.tiling.buf_w < self.dims[0],
            stage: self.stream.then(|| {
                AlignedBuf::<T>::zeroed(self.tiling.buf_w + 2 * line_elems::<T>())
                    .expect("a staging row is a few KiB")
            }),
            neighbours: [
                (m.local > 0).then(|| tid - 1),
                (m.local + 1 < m.size).then_some(tid + 1),
            ],
            finished: 0,
            trackers: Trackers {
                check: zero,
                unchecked: zero,
            },
        }
    }

    /// One member's share of a multi-level pass: the units its group claims, each run through
    /// the pipeline by [`Self::unit`].
    fn work(&self, tid: usize) {
        if self.dim_t == 1 {
            return self.work_spatial();
        }
        let m = self.sync.groups().member(tid);
        let _poison = PoisonOnPanic(self.sync.barrier(m));
        let mut w = self.worker(tid, m);
        let mut levels: Vec<LevelSpan> = Vec::with_capacity(self.dim_t);
        // Units this thread's group has claimed (see `GroupSync::claim`).
        let mut claims = 0;
        // Every member claims together; a poisoned barrier (a member panicked) ends the loop.
        while let Ok(Some(unit)) = self.sync.claim(m, claims) {
            claims += 1;
            if !self.unit(&mut w, &mut levels, unit) {
                return;
            }
        }
        if self.stream {
            // The team's join publishes the streamed rows.
            stream::fence();
        }
        if !w.trackers.check.is_finite() {
            self.non_finite.store(true, Ordering::Relaxed);
        }
    }

    /// Runs the pipeline over work unit `unit` (a tile's chunk of z): every level's planes of
    /// the chunk, step by step, each step closed by the group's barrier or by waiting for the
    /// two neighbouring members. False if the barrier was poisoned (a member panicked).
    fn unit(&self, w: &mut Worker<T>, levels: &mut Vec<LevelSpan>, unit: usize) -> bool {
        let r = K::RADIUS;
        let [nx, ny, nz] = self.dims;
        let dim_t = self.dim_t;
        let m = w.m;
        let barrier = self.sync.barrier(m);
        let tile = &self.tiling.tile(unit / self.chunks.len());
        let chunk = &self.chunks[unit % self.chunks.len()];
        w.origin = ring_origin::<T>(tile, dim_t, r);
        levels.clear();
        levels.extend((1..=dim_t).map(|j| LevelSpan {
            xs: tile.level_x(j, dim_t, r, nx),
            ys: self.level_rows(tile, j, m),
            zs: level_z(chunk, j, dim_t, r, nz),
        }));
        let start = levels[0].zs.start;
        let pipeline_steps = w.schedule.steps(start, chunk.end, dim_t);
        let by_neighbours = m.size > 1 && neighbours_suffice(tile, dim_t, r, ny, m.size);
        for s in 0..pipeline_steps {
            if by_neighbours
                && self
                    .progress
                    .wait(w.neighbours, w.finished, barrier)
                    .is_err()
            {
                return false;
            }
            for (j, level) in (1..=dim_t).zip(levels.iter()) {
                self.level_step(w, j, level, s, start);
            }
            // Published in both modes: a later tile of this pass may run by neighbours
            // while this one ran with the barrier.
            w.finished += 1;
            self.progress.finish(w.tid, w.finished);
            if !by_neighbours && barrier.wait().is_err() {
                return false;
            }
        }
        true
    }

    /// Level `j`'s planes of pipeline step `s` (level 1 starting at plane `start`), row by
    /// row, the rows interleaved across the step's planes: a row of one plane is read again by
    /// the next plane's row while it is still in L1.
    #[inline(always)]
    fn level_step(&self, w: &mut Worker<T>, j: usize, level: &LevelSpan, s: usize, start: usize) {
        let r = K::RADIUS;
        let (ring, origin) = (w.ring, w.origin);
        // This level's planes of this step inside its planes of the chunk, with the planes
        // each reads from the level below.
        let mut planes: [Option<(usize, Planes<T>)>; MAX_PLANES_PER_STEP] =
            [None; MAX_PLANES_PER_STEP];
        for (slot, z) in planes
            .iter_mut()
            .zip(w.schedule.planes_at(s, j, start, &level.zs))
        {
            *slot = Some((
                z,
                Planes::gather(r, |dz| {
                    self.plane(ring, j - 1, (z as isize + dz) as usize, origin)
                }),
            ));
        }
        if planes[0].is_none() {
            return;
        }
        let mut trackers = w.trackers;
        // SAFETY: `dispatch` picked the kernel's level, which the CPU has.
        unsafe {
            K::Isa::enter(
                #[inline(always)]
                || {
                    for y in level.ys.clone() {
                        for plane in planes.iter().flatten() {
                            self.level_row(w, &mut trackers, j, level, y, plane);
                        }
                    }
                },
            )
        };
        w.trackers = trackers;
    }

    /// Row `y` of plane `z` of level `j`, from `planes` of the level below: a fixed boundary
    /// row is copied into the ring, any other computed into the ring or, at the last level,
    /// into the destination grid.
    #[inline(always)]
    fn level_row(
        &self,
        w: &mut Worker<T>,
        trackers: &mut Trackers<Tracker<T>>,
        j: usize,
        level: &LevelSpan,
        y: usize,
        plane: &(usize, Planes<T>),
    ) {
        let z = plane.0;
        let r = K::RADIUS;
        let ny = self.dims[1];
        let (xs, zs) = (&level.xs, &level.zs);
        if y < r || y >= ny - r {
            self.copy_boundary_row(w, j, y, z, xs);
            return;
        }
        if w.prefetch && z + w.schedule.planes < zs.end {
            self.prefetch_ahead(j, y, z + w.schedule.planes, xs);
        }
        if j == self.dim_t {
            self.last_level_row(w, &mut trackers.check, plane, y, xs);
        } else {
            self.ring_level_row(w, &mut trackers.unchecked, j, plane, y, xs);
        }
    }

    /// Copies fixed boundary row `y` of plane `z` from the source grid into level `j`'s ring,
    /// for the next level to read.
    #[inline(always)]
    fn copy_boundary_row(&self, w: &Worker<T>, j: usize, y: usize, z: usize, xs: &Range<usize>) {
        let r = K::RADIUS;
        let (from, to) = (self.src_row(z, y), self.ring_row(w.ring, j, z, y, w.origin));
        for x in xs.start - r..xs.end + r {
            // SAFETY: columns xs ± R lie inside the tile's buffered columns and inside the grid
            // row; this thread owns this ring row.
            unsafe { *to.wrapping_add(x) = *from.wrapping_add(x) };
        }
    }

    /// Asks for the memory rows that row `y` of plane `next` (a level's next step) reads
    /// (level 1, from the source grid) or writes in place (the last level when it does not
    /// stream): hardware prefetchers follow whole-plane streams, and tiles narrower than the
    /// grid read short row segments.
    #[inline(always)]
    fn prefetch_ahead(&self, j: usize, y: usize, next: usize, xs: &Range<usize>) {
        let r = K::RADIUS;
        if j == 1 {
            let first = xs.start - r;
            prefetch_row(
                self.src_row(next + r, y).wrapping_add(first),
                xs.end + r - first,
            );
        }
        if !self.stream && j == self.dim_t {
            let row = self.dst.wrapping_add(next * self.plane + y * self.pitch);
            prefetch_row(row.wrapping_add(xs.start), xs.len());
        }
    }

    /// Computes row `y` of plane `z` of the last level into the destination grid, directly or
    /// through the staging row, streamed from there with its edge columns.
    #[inline(always)]
    fn last_level_row(
        &self,
        w: &mut Worker<T>,
        check: &mut Tracker<T>,
        (z, planes): &(usize, Planes<T>),
        y: usize,
        xs: &Range<usize>,
    ) {
        let (r, line) = (K::RADIUS, line_elems::<T>());
        let out = self.dst.wrapping_add(z * self.plane + y * self.pitch);
        // Global columns map into the staging row with the alignment they have in the grid, so
        // its whole lines stream as whole lines of the output row.
        let staged = w
            .stage
            .as_mut()
            .map(|buf| buf.as_mut_ptr().wrapping_sub(xs.start - xs.start % line));
        // SAFETY: level j-1 holds columns xs ± R of rows y ± R, z ± R (the tiling grows each
        // level by R, boundary rows and columns are copied in; the schedule keeps those planes
        // in the ring); out is this thread's row of dst. The staging row holds buf_w + 2 lines
        // from the line holding xs.start on: more than the xs.len() <= buf_w columns computed,
        // and, when the edges are added (R less than a line, see `with_edges`), than the
        // columns from 0 (the line holding xs.start = R) up to xs.end + R (less than
        // xs.start % line + buf_w + R). Only the tiles at the grid's edges reach those columns,
        // so no other tile writes them.
        unsafe {
            let to = staged.unwrap_or(out);
            self.kernel
                .row_at_level(planes, y, to, xs.start, xs.end, check);
            if staged.is_some() {
                let written = self.with_edges(xs);
                if written != *xs {
                    self.copy_boundary_columns(planes.row(r, y), to, xs);
                }
                stream_copy(
                    out.wrapping_add(written.start),
                    to.wrapping_add(written.start),
                    written.len(),
                );
            }
        }
    }

    /// Computes row `y` of plane `z` of ring level `j`, with its fixed boundary columns.
    #[inline(always)]
    fn ring_level_row(
        &self,
        w: &Worker<T>,
        unchecked: &mut Tracker<T>,
        j: usize,
        (z, planes): &(usize, Planes<T>),
        y: usize,
        xs: &Range<usize>,
    ) {
        let r = K::RADIUS;
        let out = self.ring_row(w.ring, j, *z, y, w.origin);
        // SAFETY: as for the last level; out is this thread's row of a ring slot that no other
        // thread reads in this step (a one-thread group reads it only after this write, at the
        // next level), and it holds the buffered columns; it belongs to level j, the sources to
        // level j-1, so they do not alias; `level_step` entered the kernel's level.
        unsafe {
            self.kernel
                .row_at_level(planes, y, out, xs.start, xs.end, unchecked)
        };
        self.copy_boundary_columns(planes.row(r, y), out, xs);
    }

    /// One time step per pass is 2.5D spatial blocking alone: no level reads another, so the
    /// threads claim one tile's plane at a time, in order, from a shared counter and compute it
    /// without any barrier. Claimed, not split evenly in advance: on the H100 machine's 16-core
    /// host the vCPUs run at uneven speeds, and the lattice engine's one-level D3Q19 passes (the
    /// same scheme, `crate::lbm::blocked`) cut into equal shares ran at 0.73-0.77× the naive sweep
    /// (whose rayon tasks are taken the same way), claimed planes at 1.0-1.3×, and claimed blocks
    /// of about 4 planes, which a thread reads on from its own cache, at 0.9×. For box27 the three
    /// measured alike (0.66-0.87× naive there).
    fn work_spatial(&self) {
        let r = K::RADIUS;
        let [nx, ny, _] = self.dims;
        let mut check = Tracker::new();
        let planes: Vec<usize> = self.chunks.iter().flat_map(|c| c.clone()).collect();
        let per_tile = planes.len();
        for unit in claimed(&self.next_plane, per_tile * self.tiling.len()) {
            let (tile, z) = (&self.tiling.tile(unit / per_tile), planes[unit % per_tile]);
            let xs = tile.level_x(1, 1, r, nx);
            let planes = Planes::gather(r, |dz| {
                self.plane(self.ring, 0, (z as isize + dz) as usize, [0, 0])
            });
            // SAFETY: `dispatch` picked the kernel's level, which the CPU has. For each row: the
            // source grid holds rows y ± R of planes z ± R with all columns; out is row y of
            // plane z of dst, inside this unit, which only this thread claimed.
            unsafe {
                K::Isa::enter(
                    #[inline(always)]
                    || {
                        for y in tile.level_y(1, 1, r, ny) {
                            let out = self.dst.wrapping_add(z * self.plane + y * self.pitch);
                            self.kernel
                                .row_at_level(&planes, y, out, xs.start, xs.end, &mut check);
                        }
                    },
                )
            };
        }
        if !check.is_finite() {
            self.non_finite.store(true, Ordering::Relaxed);
        }
    }

    /// The columns a streamed output row writes for a level computing `xs`: those, plus the fixed
    /// boundary columns where `xs` reaches the grid's edge. They hold the values the destination
    /// already has (both grids share the boundary), and with them the first line of a row becomes a
    /// whole one, as does the last where `nx` is a multiple of a line (the 256³ and 512³ grids),
    /// streamed like the rest instead of stored ordinarily, which reads the line from memory first:
    /// with `R` boundary columns at each end, every row of a whole-width tile had two such lines
    /// (on the 2-core AMD EPYC Zen 5 the copy of those two took 16% of a one-thread star7 512³
    /// pass). Only for R below a line's elements (every supported radius), so the added columns
    /// stay within the staging row's lines.
    fn with_edges(&self, xs: &Range<usize>) -> Range<usize> {
        let (r, nx) = (K::RADIUS, self.dims[0]);
        if r >= line_elems::<T>() {
            return xs.clone();
        }
        let start = if xs.start == r { 0 } else { xs.start };
        let end = if xs.end == nx - r { nx } else { xs.end };
        start..end
    }

    /// Copies the fixed boundary columns of a row from `src`, the previous level's same row,
    /// into its ring row `out` when the level's columns reach the grid's edge (the next level
    /// reads them), or into the last level's staging row (see [`Self::with_edges`]). The
    /// previous level's row was just read by the row kernel, so these reads hit L1; reading
    /// them from the source grid instead cost a cache miss per row and level (9.7% of a
    /// one-thread blocked star7 run on the 2-core AMD EPYC Zen 5).
    fn copy_boundary_columns(&self, src: *const T, out: *mut T, xs: &Range<usize>) {
        let r = K::RADIUS;
        let nx = self.dims[0];
        let columns = (xs.start == r)
            .then_some(0..r)
            .into_iter()
            .chain((xs.end == nx - r).then_some(nx - r..nx));
        for x in columns.flatten() {
            // SAFETY: when the level starts at column r (ends at nx - r) the tile's buffer
            // starts at column 0 (ends at nx), so column x exists in both rows (a staging row
            // holds it too: see the caller); the row kernel has just read columns
            // xs.start - R .. xs.end + R of `src` (every shape reads its own row across x ± R),
            // which include x, and the previous level holds them (the source grid, or a ring
            // row whose level copied them in the same way).
            unsafe { *out.wrapping_add(x) = *src.wrapping_add(x) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, Level, PlanBuilder, Real, Solver, Stencil};

    /// Plays both schedules through the engine's rings (slots from [`RingLayout`]), unit after
    /// unit on the same rings as a group does, for z cut into 1, 2 and 3 chunks: every level
    /// computes each plane of its chunk and halo exactly once per unit, every plane it reads
    /// from the level below is still in that level's ring and was written in this unit (never
    /// a stale plane of the previous chunk), at an earlier step (groups of several threads) or
    /// earlier in the same step by the level below (one thread, levels in order), and the last
    /// level writes every interior plane exactly once. Radius 1-4, `dim_t` 2-8, every z extent
    /// from 2R + 1 to 2R + 2·dim_t + 2 planes.
    #[test]
    fn schedules_read_only_planes_their_rings_still_hold() {
        let cases = (1..=4).flat_map(|r| {
            (2..=8).flat_map(move |dim_t| {
                [1, 3].into_iter().flat_map(move |members| {
                    (0..=2 * dim_t + 1).flat_map(move |extra| {
                        (1..=3).map(move |chunks| (r, dim_t, members, 2 * r + 1 + extra, chunks))
                    })
                })
            })
        });
        for (r, dim_t, members, nz, count) in cases {
            let schedule = Schedule::for_group(members, r);
            let side = 2 * r * dim_t + 1;
            let tiling = Tiling::new([side, side, nz], r, [side, side], dim_t);
            let slots = RingLayout::new::<f64>(&tiling, r, dim_t).slots;
            let chunks = z_chunks(nz, r, count);
            let case = format!("R {r} dim_t {dim_t} members {members} nz {nz} chunks {chunks:?}");
            // (unit, plane, step) last written into each slot of each level's ring.
            let mut rings = vec![vec![None::<(usize, usize, usize)>; slots]; dim_t + 1];
            let mut outputs = vec![0usize; nz];
            for (unit, chunk) in chunks.iter().enumerate() {
                let zs: Vec<Range<usize>> = (0..=dim_t)
                    .map(|j| level_z(chunk, j.max(1), dim_t, r, nz))
                    .collect();
                let start = zs[1].start;
                let mut computed = vec![vec![0usize; nz]; dim_t + 1];
                for s in 0..schedule.steps(start, chunk.end, dim_t) {
                    for j in 1..=dim_t {
                        for z in schedule.planes_at(s, j, start, &zs[j]) {
                            for zr in z - r..=z + r {
                                if j == 1 || zr < r || zr >= nz - r {
                                    continue; // the grid: source or fixed boundary plane
                                }
                                let held = rings[j - 1][zr % slots];
                                // A one-thread group may read a plane written in this step:
                                // the level below ran before this one.
                                let ok = held.is_some_and(|(u, p, step)| {
                                    u == unit
                                        && p == zr
                                        && (step < s || (members == 1 && step == s))
                                });
                                assert!(
                                    ok,
                                    "{case} unit {unit} step {s}: level {j} plane {z} reads \
                                     plane {zr} of level {}, its slot holds {held:?}",
                                    j - 1
                                );
                            }
                            rings[j][z % slots] = Some((unit, z, s));
                            computed[j][z] += 1;
                        }
                    }
                }
                for (j, planes) in computed.iter().enumerate().skip(1) {
                    let expected: Vec<usize> =
                        (0..nz).map(|z| zs[j].contains(&z) as usize).collect();
                    assert_eq!(planes, &expected, "{case} unit {unit}: level {j}");
                }
                for (out, n) in outputs.iter_mut().zip(&computed[dim_t]) {
                    *out += n;
                }
            }
            assert!(
                outputs[r..nz - r].iter().all(|&n| n == 1),
                "{case}: last level wrote {outputs:?}"
            );
        }
    }

    /// The last level streamed through a staging row with non-temporal stores (the engine's
    /// choice for grids larger than the last-level cache, which no test grid is) against the
    /// reference: odd sizes, tiles that do not divide the grid, with rows of 45-49 cells, so
    /// whole cache lines between partial ones at both ends, several depths, shapes, tile groups
    /// and z chunks, both precisions.
    #[test]
    fn streamed_output_matches_the_reference() {
        fn check<T: Real>(level: Level) {
            let team = Team::new(3, false, false).unwrap();
            let dims = [101, 29, 23];
            for (i, stencil) in [
                Stencil::seven_point(0.4, 0.1),
                Stencil::star(2, &[0.4, 0.06, 0.04]).unwrap(),
                Stencil::twenty_seven_point(0.3, 0.05, 0.02, 0.01),
            ]
            .into_iter()
            .enumerate()
            {
                let input = Grid::<T>::random(dims, 0.0, 1.0, i as u64).unwrap();
                let mut expected = input.clone();
                let plan = PlanBuilder::new(stencil.clone(), T::DTYPE, dims)
                    .engine(Engine::Reference)
                    .build()
                    .unwrap();
                Solver::new(plan).run(&mut expected, 7).unwrap();
                let r = stencil.radius();
                // One ring buffer for the three runs, as a solver keeps it: later runs reuse
                // it (grown or not) with the earlier runs' values in it.
                let mut ring = None;
                for (dim_t, tile_threads, z_chunks) in [(2, 1, 1), (3, 3, 2), (4, 1, 3)] {
                    let tile = [2 * r * dim_t + 45, 2 * r * dim_t + 6];
                    let mut grid = input.clone();
                    let mut scratch = input.clone();
                    let run = BlockedRun {
                        grid: &mut grid,
                        scratch: &mut scratch,
                        steps: 7,
                        dim_t,
                        tile,
                        tile_threads,
                        z_chunks,
                        stream: true,
                        team: &team,
                        ring: &mut ring,
                        beside: None,
                        replay: true,
                    };
                    assert!(super::super::rows::dispatch(&stencil, level, run).is_ok());
                    let err = grid.max_rel_diff(&expected).unwrap();
                    let tolerance = if T::DTYPE == crate::DType::F32 {
                        1e-5
                    } else {
                        1e-12
                    };
                    assert!(
                        err <= tolerance,
                        "{stencil} {} {level} dim_t {dim_t} groups of {tile_threads}, \
                         {z_chunks} chunks: max rel err {err:e}",
                        T::DTYPE
                    );
                }
            }
        }
        for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
            check::<f32>(level);
            check::<f64>(level);
        }
    }

    /// A pass that goes non-finite replays its steps to the last finite one, unless told not
    /// to (a split run's ranks trace it together): then the grid keeps the pass's input, bit
    /// for bit, and the failure names the pass's first step.
    #[test]
    fn a_failed_pass_replays_or_keeps_its_input() {
        let team = Team::new(2, false, false).unwrap();
        let stencil = Stencil::seven_point(4.0, 4.0);
        // The seed grows about 28-fold a step and overflows within a few, inside a pass of three.
        let input = Grid::<f32>::from_fn([40, 23, 19], |x, y, z| match (x, y, z) {
            (20, 11, 9) => 1e30,
            _ => 0.0,
        })
        .unwrap();
        let naive = PlanBuilder::new(stencil.clone(), f32::DTYPE, input.dims())
            .engine(Engine::Naive)
            .build()
            .unwrap();
        let mut expected = input.clone();
        let failed = Solver::new(naive.clone()).run(&mut expected, 20);
        let Err(crate::Error::NonFinite { step, .. }) = failed else {
            panic!("no overflow: {failed:?}");
        };
        assert!((2..=20).contains(&step), "overflow at step {step}");
        for replay in [true, false] {
            let mut grid = input.clone();
            let mut scratch = input.clone();
            let mut ring = None;
            let run = BlockedRun {
                grid: &mut grid,
                scratch: &mut scratch,
                steps: 20,
                dim_t: 3,
                tile: [30, 17],
                tile_threads: 1,
                z_chunks: 1,
                stream: false,
                team: &team,
                ring: &mut ring,
                beside: None,
                replay,
            };
            let failure = super::super::rows::dispatch(&stencil, Level::Base, run).unwrap_err();
            let pass_start = (step - 1) / 3 * 3;
            if replay {
                assert_eq!(failure.step, step);
                assert!(
                    grid.max_rel_diff(&expected).unwrap() == 0.0,
                    "not the last finite step"
                );
            } else {
                assert_eq!(failure.step, pass_start + 1);
                // The pass's input: the last finite step where the pass's first step failed.
                let mut at_start = input.clone();
                if pass_start > 0 {
                    Solver::new(naive.clone())
                        .run(&mut at_start, pass_start)
                        .unwrap();
                }
                assert!(
                    grid.max_rel_diff(&at_start).unwrap() == 0.0,
                    "not the pass's input"
                );
            }
        }
    }

    /// A pass beside a halo exchange (see [`Beside`]) gives the owned planes the same bits as
    /// a pass whose halos were filled first, for every depth, one- and many-level passes, tile
    /// groups and z chunks, halos on one side or both, and a grid too thin to compute anything
    /// before the halos arrive. The halos hold a wrong finite value until `work` fills them, so
    /// a pass that read them early would give other values (a non-finite one would be replayed
    /// after the exchange and hide the read).
    #[test]
    fn a_pass_beside_the_exchange_matches_one_after_it() {
        fn check<T: Real>(level: Level) {
            let team = Team::new(3, false, false).unwrap();
            let stencils = [
                Stencil::seven_point(0.4, 0.1),
                Stencil::star(2, &[0.4, 0.06, 0.04]).unwrap(),
                Stencil::twenty_seven_point(0.3, 0.05, 0.02, 0.01),
            ];
            let cases = [
                (3, 1, 2, [4, 5], 27),
                (2, 3, 3, [6, 0], 23),
                (1, 1, 1, [0, 3], 19),
                (4, 1, 1, [9, 9], 7),
            ];
            for (i, stencil) in stencils.into_iter().enumerate() {
                let r = stencil.radius();
                for (dim_t, tile_threads, z_chunks, halo_steps, owned) in cases {
                    let halo = halo_steps.map(|h| h * r);
                    let nz = owned + halo[0] + halo[1];
                    let dims = [45, 17, nz];
                    let exchanged = Grid::<T>::random(dims, 0.0, 1.0, i as u64).unwrap();
                    let mut ring = None;
                    let mut run = |grid: &mut Grid<T>, beside: Option<Beside<'_, T>>| {
                        let mut scratch = grid.clone();
                        let run = BlockedRun {
                            grid,
                            scratch: &mut scratch,
                            steps: dim_t,
                            dim_t,
                            tile: [2 * r * dim_t + 20, 2 * r * dim_t + 5],
                            tile_threads,
                            z_chunks,
                            stream: false,
                            team: &team,
                            ring: &mut ring,
                            beside,
                            replay: true,
                        };
                        assert!(super::super::rows::dispatch(&stencil, level, run).is_ok());
                    };
                    let mut after = exchanged.clone();
                    run(&mut after, None);
                    let mut beside_grid = exchanged.clone();
                    let plane = beside_grid.plane_stride();
                    let (lo_len, hi_len) = (halo[0] * plane, halo[1] * plane);
                    let storage = beside_grid.storage_mut();
                    let n = storage.len();
                    storage[..lo_len].fill(T::from(1e3).expect("1e3 is a T"));
                    storage[n - hi_len..].fill(T::from(1e3).expect("1e3 is a T"));
                    let whole = exchanged.storage();
                    let mut calls = 0;
                    let mut work = |low: &mut [T], mid: &[T], high: &mut [T], _beside| {
                        calls += 1;
                        // Late enough that the pass computes its first part from the wrong halos
                        // if it reads them.
                        std::thread::sleep(Duration::from_millis(20));
                        assert_eq!(mid.len(), n - lo_len - hi_len);
                        low.copy_from_slice(&whole[..lo_len]);
                        high.copy_from_slice(&whole[n - hi_len..]);
                    };
                    let mut waited = Duration::MAX;
                    let beside = Beside {
                        halo,
                        work: &mut work,
                        waited: &mut waited,
                    };
                    run(&mut beside_grid, Some(beside));
                    assert!(waited < Duration::MAX);
                    assert_eq!(calls, 1);
                    for z in halo[0]..nz - halo[1] {
                        for y in 0..dims[1] {
                            assert!(
                                beside_grid.row(y, z) == after.row(y, z),
                                "{stencil} {} {level} dim_t {dim_t} halos {halo:?}: \
                                 row ({y}, {z}) differs",
                                T::DTYPE
                            );
                        }
                    }
                }
            }
        }
        for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
            check::<f32>(level);
            check::<f64>(level);
        }
    }

    /// A pass whose tiles do not all allow the neighbour sync, in tile order: first a tile that
    /// keeps the barrier, then one that runs by neighbours. (dims, tile, dim_t, members).
    fn mixed_pass() -> ([usize; 3], [usize; 2], usize, usize) {
        for ny in 8..40 {
            for tile_y in 5..24 {
                for dim_t in 2..=4 {
                    for size in 2..=4 {
                        let (dims, tile) = ([12, ny, 9], [12, tile_y]);
                        if tile_y <= 2 * dim_t {
                            continue;
                        }
                        let tiling = Tiling::new(dims, 1, tile, dim_t);
                        let modes: Vec<bool> = tiling
                            .tiles()
                            .map(|t| neighbours_suffice(&t, dim_t, 1, ny, size))
                            .collect();
                        if modes.first() == Some(&false) && modes.contains(&true) {
                            return (dims, tile, dim_t, size);
                        }
                    }
                }
            }
        }
        panic!("no tiling mixes the two modes; the regression test below would prove nothing")
    }

    /// A tile that runs by neighbours after one that ran with the barrier waits for step
    /// counts that both modes must publish; were they published by neighbour tiles only, it
    /// would wait forever. The run must finish (within a generous time limit) and match the
    /// reference.
    #[test]
    fn a_pass_mixing_barrier_and_neighbour_tiles_finishes_and_is_correct() {
        let (dims, tile, dim_t, size) = mixed_pass();
        let stencil = Stencil::seven_point(0.4, 0.1);
        let input =
            Grid::<f64>::from_fn(dims, |x, y, z| ((x * 7 + y * 3 + z) % 11) as f64).unwrap();
        let run = move |engine: Engine| {
            let mut b = PlanBuilder::new(stencil.clone(), f64::DTYPE, dims)
                .engine(engine)
                .threads(if engine == Engine::Blocked { size } else { 1 });
            if engine == Engine::Blocked {
                b = b.dim_t(dim_t).tile(tile).tile_threads(size);
            }
            let mut grid = input.clone();
            Solver::new(b.build().unwrap())
                .run(&mut grid, 2 * dim_t)
                .unwrap();
            grid
        };
        let expected = run(Engine::Reference);
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(run(Engine::Blocked)).unwrap());
        let got = result
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!("dims {dims:?} tile {tile:?} dim_t {dim_t} groups of {size}: no end")
            });
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(err <= 1e-12, "max rel err {err:e}");
    }
}
