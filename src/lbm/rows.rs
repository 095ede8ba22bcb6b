//! The fast engines' node update, one row at a time: pull streaming, bounce-back, boundary
//! conditions and collision for nodes `x0 .. x1` of one row of one time level, written once
//! over [`FlowLane`] so the SIMD body, the scalar tail and the edge nodes share the code and
//! round identically. The naive and blocked engines both call [`FlowKernel::row`], so they
//! compute bitwise the same values.
//!
//! Each vector of nodes takes one of two paths, chosen by one load of its class bytes:
//! **bulk** (all fluid, no wall neighbour: 19 loads, collision, 19 stores) or **general**
//! (the bulk computation with per-lane fix-ups: bounced populations, a moving wall's momentum,
//! an inlet's velocity or an outlet's density, wall nodes copied). The fix-ups are selections
//! that leave bulk lanes bitwise untouched, so a node gets the same value on either path and
//! vectors may overlap. Nodes on the x faces read their x-neighbours through the periodic or
//! clamping rule and take the scalar general path, except walls, which are copied as the row's
//! [`FaceWalls`] says (or left out).

use super::cell::Cell;
use super::classify::{neighbour, IS_INLET, IS_OUTLET, IS_WALL, NEAR_MOVING, NEAR_WALL};
use super::collide::{moments, relax, Moments, Rates};
use super::lattice::Lattice;
use super::model::{OPPOSITE, Q, VELOCITIES, WEIGHTS};
use super::populations::Layout;
use crate::runtime::prefetch::prefetch_line;
use crate::simd::{FlowLane, Isa, OneLane, Tracker, Vector};
use crate::{Lane, Real, SimdVec};

/// How many vectors ahead of the current one the bulk loop asks for its rows. Four vectors:
/// 128 bytes with 8 lanes, tuned on the 2-core AVX2 EPYC (d3q19 `f32` 160³, 1 thread: naive
/// 51-54 MLUPS without prefetch, 57-64 with; 256 and 512 bytes no better); 256 bytes with 16
/// (on the H100 machine's 16-core Xeon host, 256³ `f32` blocked at `dim_t` 2: 934, 816, 810
/// MLUPS against 775, 756, 800 at 128 bytes; on the 2-core AMD EPYC Zen 5, 192³ at `dim_t` 4:
/// 357 against 339). `f64` with AVX-512 takes the same 256 bytes, not measured on its own.
const PREFETCH_VECTORS: usize = 4;

/// How a neighbour's row or plane coordinate maps to a stored one along y or z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AxisMap {
    /// Clamped to `0 .. n` (a closed axis).
    Clamp(usize),
    /// Wrapped modulo `n` (a periodic axis stored whole).
    Wrap(usize),
    /// Stored as is (a periodic axis whose ghost zones a blocked level computes itself).
    Direct,
}

impl AxisMap {
    /// The map of the lattice itself along an axis of `n` nodes.
    pub(crate) fn lattice(n: usize, periodic: bool) -> AxisMap {
        if periodic {
            AxisMap::Wrap(n)
        } else {
            AxisMap::Clamp(n)
        }
    }

    #[inline(always)]
    fn map(self, v: isize) -> isize {
        match self {
            AxisMap::Clamp(n) => neighbour(v, n, false) as isize,
            AxisMap::Wrap(n) => neighbour(v, n, true) as isize,
            AxisMap::Direct => v,
        }
    }
}

/// The z class of direction `i`: `1 − c_iz`, the index among planes `z − 1, z, z + 1` of the
/// plane its population is pulled from.
#[inline(always)]
pub(crate) const fn z_class(i: usize) -> usize {
    (1 - VELOCITIES[i][2]) as usize
}

/// Directions in each z class (see [`z_class`]): 5, 9 and 5 for D3Q19.
pub(crate) const Z_CLASS_SIZES: [usize; 3] = {
    let mut n = [0; 3];
    let mut i = 0;
    while i < Q {
        n[z_class(i)] += 1;
        i += 1;
    }
    n
};

/// Which planes and rows of a time level are stored, and where (see [`Level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slots {
    /// Every plane: the lattice (or a staging row, one plane of one row).
    All,
    /// A ring of planes: z class `c` (see [`z_class`]) keeps its planes at `z mod n[c]`.
    Planes([usize; 3]),
    /// A ring of rows: z class `c` keeps row `(y, z)` at position `z·height + y − origin_y`
    /// modulo `n[c]` (a level `height` rows high, computed row by row in that order).
    Rows { n: [usize; 3], height: usize },
}

/// Where one time level keeps its populations: the lattice's arrays, or a blocked engine's
/// ring buffer of planes or rows. Array `i`, plane `z`, row `y`, column `x` is at
/// `base + arrays[i] + slot(z)·plane + (y − origin_y)·pitch + (x − origin_x)`, where `slot(z)`
/// is the mapped plane for the lattice and the mapped plane modulo the slots of `i`'s z class
/// (see [`z_class`]) for a ring of planes; a ring of rows keeps each row at
/// `base + arrays[i] + slot(y, z)·pitch + (x − origin_x)` (see [`Slots::Rows`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level<T> {
    pub(crate) base: *mut T,
    /// Offset of each direction's array (its first slot in a ring).
    pub(crate) arrays: [usize; Q],
    /// Elements from one plane (ring slot) of an array to the next.
    pub(crate) plane: usize,
    /// Elements from one row to the next.
    pub(crate) pitch: usize,
    pub(crate) origin: [isize; 2],
    pub(crate) y: AxisMap,
    pub(crate) z: AxisMap,
    /// Which planes or rows are kept.
    pub(crate) slots: Slots,
}

/// Offsets (from [`Level::row`]'s base) of the rows one node row reads from a level: for each
/// z class `c` the rows `y − 1 ..= y + 1` of plane `z − 1 + c` it pulls from, and row `y` of
/// plane `z` (bounce-back and wall nodes read their own node).
pub(crate) struct Neighbourhood {
    pub(crate) pulled: [[usize; 3]; 3],
    pub(crate) own: [usize; 3],
}

/// Offsets of `Q` arrays `array` elements apart.
pub(crate) fn consecutive_arrays(array: usize) -> [usize; Q] {
    std::array::from_fn(|i| i * array)
}

impl<T> Level<T> {
    /// The lattice storage at `base` with `layout`, mapped by the lattice's periodicity.
    pub(crate) fn lattice(base: *mut T, layout: &Layout, periodic: [bool; 3]) -> Level<T> {
        Level {
            base,
            arrays: consecutive_arrays(layout.array),
            plane: layout.plane,
            pitch: layout.pitch,
            origin: [0, 0],
            y: AxisMap::lattice(layout.dims[1], periodic[1]),
            z: AxisMap::lattice(layout.dims[2], periodic[2]),
            slots: Slots::All,
        }
    }

    /// Element offset of the (mapped) plane `z` for the arrays of z class `class` (a level
    /// that keeps planes).
    #[inline(always)]
    pub(crate) fn plane_offset(&self, class: usize, z: isize) -> usize {
        let z = self.z.map(z);
        match self.slots {
            // A division per class and row, not per node.
            Slots::Planes(s) => z.rem_euclid(s[class] as isize) as usize * self.plane,
            Slots::All => z as usize * self.plane,
            Slots::Rows { .. } => unreachable!("a ring of rows has no planes"),
        }
    }

    /// Element offset of the (mapped) row `y` within a plane (a level that keeps planes).
    #[inline(always)]
    pub(crate) fn row_offset(&self, y: isize) -> usize {
        (self.y.map(y) - self.origin[1]) as usize * self.pitch
    }

    /// Offsets of the rows node row `(y, z)` reads from this level (see [`Neighbourhood`]).
    #[inline(always)]
    pub(crate) fn neighbourhood(&self, y: isize, z: isize) -> Neighbourhood {
        let Slots::Rows { n, height } = self.slots else {
            let rows = [
                self.row_offset(y - 1),
                self.row_offset(y),
                self.row_offset(y + 1),
            ];
            let planes = [
                self.plane_offset(0, z - 1),
                self.plane_offset(1, z),
                self.plane_offset(2, z + 1),
            ];
            let own = [self.plane_offset(0, z), planes[1], self.plane_offset(2, z)];
            return Neighbourhood {
                pulled: std::array::from_fn(|c| std::array::from_fn(|r| planes[c] + rows[r])),
                own: std::array::from_fn(|c| own[c] + rows[1]),
            };
        };
        let position = |y: isize, z: isize| self.row_position(height, y, z);
        let at = position(y, z);
        let mut pulled = [[0; 3]; 3];
        let mut own = [0; 3];
        for c in 0..3 {
            let slots = n[c] as isize;
            // One division per class and row; the neighbours lie within a plane and a row of
            // it, closer than a class's slots (see `lbm::blocked::row_slots`).
            let slot = at.rem_euclid(slots);
            own[c] = slot as usize * self.pitch;
            for (r, pulled) in pulled[c].iter_mut().enumerate() {
                let step = position(y - 1 + r as isize, z - 1 + c as isize) - at;
                debug_assert!(step.abs() < slots, "{step} rows apart in a ring of {slots}");
                let s = slot + step;
                let s = if s < 0 {
                    s + slots
                } else if s >= slots {
                    s - slots
                } else {
                    s
                };
                *pulled = s as usize * self.pitch;
            }
        }
        Neighbourhood { pulled, own }
    }

    /// Position of the (mapped) row `(y, z)` in a ring of rows for a level `height` rows high
    /// (see [`Slots::Rows`]), before it is reduced modulo a class's slots.
    #[inline(always)]
    fn row_position(&self, height: usize, y: isize, z: isize) -> isize {
        self.z.map(z) * height as isize + self.y.map(y) - self.origin[1]
    }

    /// Offsets of row `(y, z)` of each z class's arrays in this level.
    #[inline(always)]
    pub(crate) fn own_offsets(&self, y: isize, z: isize) -> [usize; 3] {
        match self.slots {
            Slots::Rows { n, height } => {
                let at = self.row_position(height, y, z);
                std::array::from_fn(|c| at.rem_euclid(n[c] as isize) as usize * self.pitch)
            }
            _ => {
                let row = self.row_offset(y);
                std::array::from_fn(|c| self.plane_offset(c, z) + row)
            }
        }
    }

    /// Row pointer of array `i` at the given offsets, indexable by global column.
    #[inline(always)]
    pub(crate) fn row(&self, i: usize, plane: usize, row: usize) -> *mut T {
        self.base
            .wrapping_add(self.arrays[i] + plane + row)
            .wrapping_sub(self.origin[0] as usize)
    }
}

/// The per-node byte arrays of the lattice (never buffered: they do not change in time).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeBytes {
    pub(crate) flags: *const u8,
    pub(crate) class: *const u8,
    pub(crate) links: *const u32,
    pub(crate) pitch: usize,
    pub(crate) plane: usize,
    pub(crate) y: AxisMap,
    pub(crate) z: AxisMap,
}

// SAFETY: the pointers are only read, and the arrays (a lattice's flags and classes) outlive
// every run that uses them and are not changed during it.
unsafe impl Send for NodeBytes {}
// SAFETY: as for Send: shared read-only access.
unsafe impl Sync for NodeBytes {}

impl NodeBytes {
    /// The byte arrays of `lat` (prepared: its classes are current).
    pub(crate) fn new<T: Real>(lat: &Lattice<T>) -> NodeBytes {
        let l = lat.layout();
        let classes = lat.classes();
        NodeBytes {
            flags: lat.flags.as_ptr(),
            class: classes.class.as_ptr(),
            links: classes.links.as_ptr(),
            pitch: l.pitch,
            plane: l.plane,
            y: AxisMap::lattice(l.dims[1], lat.periodic[1]),
            z: AxisMap::lattice(l.dims[2], lat.periodic[2]),
        }
    }

    /// Offset of the (mapped) plane `z` in the byte arrays.
    #[inline(always)]
    fn plane(&self, z: isize) -> usize {
        self.z.map(z) as usize * self.plane
    }

    /// Offset of the (mapped) row `y` within a plane of the byte arrays.
    #[inline(always)]
    fn row(&self, y: isize) -> usize {
        self.y.map(y) as usize * self.pitch
    }
}

/// Pointers for computing one row, all indexable by global column.
pub(crate) struct Row<T> {
    /// Direction `i`'s source row: array `i` of the level below at `(y − c_iy, z − c_iz)`.
    src: [*const T; Q],
    /// Array `i` of the level below at `(y, z)` (bounce-back and wall nodes read their own).
    own: [*const T; Q],
    /// Array `i` of the level being computed at `(y, z)`.
    out: [*mut T; Q],
    class: *const u8,
    links: *const u32,
    /// Entry 0: the row's own flags; entry `i`: the flags of direction `i`'s source row.
    flags: [*const u8; Q],
    /// Where the row's wall nodes on the x faces get their populations.
    face_walls: FaceWalls<T>,
}

/// Where a row's wall nodes on the x faces (`FlowKernel::row` computes them apart, after the
/// rest of the row) get their populations. A wall keeps its populations forever and no other
/// node uses them (a population pulled from a wall is loaded but replaced by the bounced-back
/// one), so the ring levels of a blocked pass can leave them out and the last level copy them
/// from the pass's source. Most of the 19 rows a face wall copies are rows no other node of
/// its row reads, so each copy waits on cache misses at the end of its row (on the 2-core AMD EPYC
/// Zen 5, 7.7% of a blocked pass's samples; leaving them out of the ring levels gained 2-4%
/// there and nothing measurable on the H100 machine's 16-core host, where the last level's copy
/// waits as level 1's did). Prefetching those lines at the row's start costs time on that host,
/// and neither at the row's start nor a row ahead does it pay on the Zen 5, so they are not
/// prefetched (apart from the few that `FlowKernel::prefetch_end` asks for the end vectors).
/// The last level's copy costs that host about 3-5% (a build without it, wrong at the walls,
/// runs that much faster).
#[derive(Clone, Copy, Debug)]
pub(crate) enum FaceWalls<T> {
    /// Copied from the level below (`Row::own`).
    Own,
    /// Not written: a ring level, whose later levels never use them.
    Skip,
    /// Copied from these rows, array by array (the pass's source lattice at the row).
    From([*const T; Q]),
}

impl<T> Row<T> {
    /// The pointers for row `(y, z)` computed from level `src` into level `out`.
    #[inline(always)]
    pub(crate) fn new(
        src: &Level<T>,
        out: &Level<T>,
        bytes: &NodeBytes,
        y: isize,
        z: isize,
    ) -> Row<T> {
        // Written out rather than through `array::map`, whose closures are not inlined there:
        // the set-up of a row would cost as much as five vectors of nodes.
        // Class `c` (see `z_class`) pulls from plane `z − 1 + c`; bounce-back reads plane `z`.
        let near = src.neighbourhood(y, z);
        let outs = out.own_offsets(y, z);
        let byte_planes = [bytes.plane(z - 1), bytes.plane(z), bytes.plane(z + 1)];
        let byte_rows = [bytes.row(y - 1), bytes.row(y), bytes.row(y + 1)];
        let own_bytes = byte_planes[1] + byte_rows[1];
        let at = |i: usize| (z_class(i), (1 - VELOCITIES[i][1]) as usize);
        let mut row = Row {
            src: [std::ptr::null(); Q],
            own: [std::ptr::null(); Q],
            out: [std::ptr::null_mut(); Q],
            class: bytes.class.wrapping_add(own_bytes),
            links: bytes.links.wrapping_add(own_bytes),
            flags: [std::ptr::null(); Q],
            face_walls: FaceWalls::Own,
        };
        for i in 0..Q {
            let (pz, py) = at(i);
            row.src[i] = src.row(i, near.pulled[pz][py], 0).cast_const();
            row.own[i] = src.row(i, near.own[pz], 0).cast_const();
            row.out[i] = out.row(i, outs[pz], 0);
            row.flags[i] = bytes.flags.wrapping_add(byte_planes[pz] + byte_rows[py]);
        }
        row
    }

    /// Leaves the row's wall nodes on the x faces out (see [`FaceWalls::Skip`]). Set in place:
    /// moved into a new value, the row would be copied right after it is written, wide loads of
    /// narrow stores (11% of the row set-up's samples on the 2-core AMD EPYC Zen 5).
    #[inline(always)]
    pub(crate) fn skip_face_walls(&mut self) {
        self.face_walls = FaceWalls::Skip;
    }

    /// Copies the row's wall nodes on the x faces from row `(y, z)` of `level` (see
    /// [`FaceWalls::From`]); set in place, as [`Row::skip_face_walls`].
    #[inline(always)]
    pub(crate) fn copy_face_walls_from(&mut self, level: &Level<T>, y: isize, z: isize) {
        let own = level.own_offsets(y, z);
        self.face_walls = FaceWalls::From(std::array::from_fn(|i| {
            level.row(i, own[z_class(i)], 0).cast_const()
        }));
    }
}

/// What the general path needs to know about one flag value.
#[derive(Clone, Copy, Debug)]
struct FlagInfo<T> {
    inlet_velocity: [T; 3],
    outlet_density: T,
    /// `6 w_i (c_i · u_w)`: added to a population bounced off this moving wall.
    wall_term: [T; Q],
}

/// The node update of one lattice's physics and boundary conditions at instruction-set level
/// `S`, shared by all threads.
pub(crate) struct FlowKernel<T: Real, S: Isa> {
    fluid: Rates<T::One<S>>,
    boundary: Rates<T::One<S>>,
    fluid_v: Rates<Vector<T, S>>,
    boundary_v: Rates<Vector<T, S>>,
    info: Box<[FlagInfo<T>; 256]>,
    forced: bool,
    nx: usize,
    periodic_x: bool,
    /// Whether the bulk loop asks for its output rows ahead too (see [`FlowKernel::streaming`]).
    prefetch_outputs: bool,
}

/// Column of direction `i`'s source among `cols = [x − 1, x, x + 1]` (pull: from `x − c_ix`).
#[inline(always)]
fn source_col(i: usize, cols: [usize; 3]) -> usize {
    cols[(1 - VELOCITIES[i][0]) as usize]
}

impl<T: Real, S: Isa> FlowKernel<T, S> {
    /// The kernel for `lat`'s physics, boundary table and periodicity.
    pub(crate) fn new(lat: &Lattice<T>) -> FlowKernel<T, S> {
        let none = FlagInfo {
            inlet_velocity: [T::zero(); 3],
            outlet_density: T::one(),
            wall_term: [T::zero(); Q],
        };
        let mut info = Box::new([none; 256]);
        for (k, cell) in lat.table.entries().iter().enumerate() {
            let e = &mut info[k + super::cell::FIRST_ENTRY as usize];
            match *cell {
                Cell::MovingWall { velocity } => {
                    e.wall_term = std::array::from_fn(|i| {
                        let cu: f64 = (0..3).map(|a| VELOCITIES[i][a] as f64 * velocity[a]).sum();
                        T::of(6.0 * WEIGHTS[i] * cu)
                    });
                }
                Cell::Inlet { velocity } => e.inlet_velocity = velocity.map(T::of),
                Cell::Outlet { density } => e.outlet_density = T::of(density),
                Cell::Fluid | Cell::Wall => {}
            }
        }
        FlowKernel {
            fluid_v: Rates::fluid(&lat.physics),
            boundary_v: Rates::boundary(),
            fluid: Rates::fluid(&lat.physics),
            boundary: Rates::boundary(),
            info,
            forced: lat.physics.has_force(),
            nx: lat.dims()[0],
            periodic_x: lat.periodic[0],
            prefetch_outputs: false,
        }
    }

    /// The kernel for a sweep that writes its outputs to memory (the naive engine): the bulk loop
    /// asks for the 19 output rows ahead as well, so the reads a store into a line not in cache
    /// makes (write-allocate) overlap instead of waiting one by one. On the H100 machine's 16-core
    /// Xeon host, 256³ `f32`, naive: 531-636 MLUPS with, 474-573 without (81-97 GB/s against the
    /// measured 91; at the 256 bytes ahead kept for 16 lanes 602-612 against 494-573); on the
    /// 2-core AMD EPYC Zen 5: no change. The blocked engine writes to cache-resident rings and
    /// staging rows, where it only costs instructions.
    pub(crate) fn streaming(lat: &Lattice<T>) -> FlowKernel<T, S> {
        FlowKernel {
            prefetch_outputs: true,
            ..FlowKernel::new(lat)
        }
    }

    /// Whether the physics has a body force (selects the `FORCED` instantiation).
    pub(crate) fn forced(&self) -> bool {
        self.forced
    }

    /// Computes nodes `x0 .. x1` of `row` and folds their outputs into the finiteness tracker
    /// `check` when `CHECK`, in code compiled for the level `S` ([`Isa::enter`]).
    ///
    /// # Safety
    /// The source rows must be readable at columns `x0 − 1 .. x1 + 1` clipped to `0 .. nx`
    /// (all of `0 .. nx` when `x0 = 0` or `x1 = nx` and x is periodic), own rows and the byte
    /// rows at `x0 .. x1`, the neighbour flag rows at `0 .. nx`, the rows of
    /// [`FaceWalls::From`] at the face columns in `x0 .. x1`, and the output rows writable at
    /// `x0 .. x1` without aliasing any source.
    #[inline(always)]
    pub(crate) unsafe fn row<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x0: usize,
        x1: usize,
        check: &mut Tracker<T>,
    ) {
        // SAFETY: the kernel's level was picked by `with_isa`, which never picks a level the
        // CPU lacks; the row's contract is the caller's.
        unsafe {
            S::enter(
                #[inline(always)]
                || self.row_at_level::<FORCED, CHECK>(row, x0, x1, check),
            )
        }
    }

    /// [`FlowKernel::row`] without entering the level: for loops over rows that run inside
    /// `S::enter` themselves. Outside such an entry it computes the same values, slowly.
    ///
    /// # Safety
    /// As for [`FlowKernel::row`], and the CPU runs level `S`.
    #[inline(always)]
    pub(crate) unsafe fn row_at_level<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x0: usize,
        x1: usize,
        check: &mut Tracker<T>,
    ) {
        let w = Vector::<T, S>::LANES;
        let mut acc: Vector<T, S> = check.get();
        let (mut lo, mut hi) = (x0, x1);
        // SAFETY (whole body): every node handled is in x0 .. x1 and reads the columns the
        // caller guarantees; edge nodes read mapped columns inside 0 .. nx.
        unsafe {
            // The x-face nodes are computed after the rest of the row: they read columns at
            // both ends of 19 source rows, which the row's own sweep has brought into the cache
            // by then (computed first, each face node waited on a round of cache misses).
            let first_edge = lo < hi && lo == 0;
            if first_edge {
                lo = 1;
            }
            let last_edge = lo < hi && hi == self.nx;
            if last_edge {
                hi -= 1;
            }
            let mut x = lo;
            // One vector at the row's start, computed after the rest (below), and the rest on
            // from the next multiple of the lane count: column 0 of every level starts a cache
            // line, so the stores and the loads of sources in the same column do not
            // straddle two lines (with AVX-512 a vector is a whole line). The nodes both
            // vectors cover get identical values.
            let first = x % w != 0 && x + w <= hi;
            if first {
                x = if x + w == hi {
                    hi
                } else {
                    x.next_multiple_of(w)
                };
            }
            if hi - lo >= w {
                // Both vectors lie in lo .. hi, inside x0 .. x1.
                self.prefetch_end::<1>(row, lo);
                self.prefetch_end::<-1>(row, hi - w);
            }
            while x + w <= hi {
                if !Vector::<T, S>::bytes_zero(row.class.add(x)) {
                    acc = self.vector::<FORCED, CHECK>(row, x, acc);
                    x += w;
                    continue;
                }
                // A run of bulk vectors, software-pipelined: the next vector's moments (19
                // loads, the sums and the division) are computed before this vector is relaxed,
                // so two update chains overlap instead of one waiting on its division.
                let fluid = &self.fluid_v;
                let mut m =
                    Self::bulk_moments::<Vector<T, S>, FORCED>(row, [x - 1, x, x + 1], fluid);
                loop {
                    let next = x + w;
                    let more = next + w <= hi && Vector::<T, S>::bytes_zero(row.class.add(next));
                    // 19 source streams are more than the hardware prefetchers follow.
                    let ahead = x + PREFETCH_VECTORS * w;
                    for src in row.src {
                        prefetch_line(src.wrapping_add(ahead));
                    }
                    if self.prefetch_outputs {
                        for out in row.out {
                            prefetch_line(out.cast_const().wrapping_add(ahead));
                        }
                    }
                    let m_next = if more {
                        Self::bulk_moments::<Vector<T, S>, FORCED>(
                            row,
                            [next - 1, next, next + 1],
                            fluid,
                        )
                    } else {
                        m
                    };
                    let out = Self::bulk_relax::<Vector<T, S>, FORCED, CHECK>(
                        row,
                        x,
                        [x - 1, x, x + 1],
                        &m,
                        fluid,
                    );
                    if CHECK {
                        acc = Vector::<T, S>::track_finite(acc, out);
                    }
                    x = next;
                    m = m_next;
                    if !more {
                        break;
                    }
                }
            }
            if x < hi {
                if hi - lo >= w {
                    // Recompute the last full vector; overlapping nodes get identical values.
                    acc = self.vector::<FORCED, CHECK>(row, hi - w, acc);
                } else {
                    for xs in x..hi {
                        acc = self.scalar::<FORCED, CHECK>(row, xs, acc);
                    }
                }
            }
            if first {
                acc = self.vector::<FORCED, CHECK>(row, lo, acc);
            }
            if first_edge {
                acc = self.face::<FORCED, CHECK>(row, 0, acc);
            }
            if last_edge {
                acc = self.face::<FORCED, CHECK>(row, self.nx - 1, acc);
            }
        }
        check.set(acc);
    }

    /// Asks for what the vector of nodes at `x ..` at one end of a row reads besides its source
    /// rows, if it is a general vector: its link words and, for a wall beyond that end
    /// (`c_x = SIDE` streams in from it), the rows bounced back from (`own` of the opposite
    /// directions, `c_x = −SIDE`). No bulk node of the row reads those lines, so each load
    /// waited on a cache miss (from memory at level 1); asked for at the row's start, they
    /// arrive while the row's bulk is computed (on the 2-core AMD EPYC Zen 5, 192³ `f32`
    /// blocked: 429-451 MLUPS with the prefetch, 428-454 with the first vector also moved last,
    /// 413-420 with neither).
    ///
    /// # Safety
    /// The class row must be readable at `x .. x + LANES` (the other addresses are only
    /// prefetched, never read).
    #[inline(always)]
    unsafe fn prefetch_end<const SIDE: i32>(&self, row: &Row<T>, x: usize) {
        // SAFETY: the caller guarantees the class bytes.
        if unsafe { Vector::<T, S>::bytes_zero(row.class.add(x)) } {
            return;
        }
        let last = x + Vector::<T, S>::LANES - 1;
        prefetch_line(row.links.wrapping_add(x));
        prefetch_line(row.links.wrapping_add(last));
        for (own, c) in row.own.iter().zip(VELOCITIES) {
            if c[0] == -SIDE {
                prefetch_line(own.wrapping_add(x));
                prefetch_line(own.wrapping_add(last));
            }
        }
    }

    /// One vector of nodes at `x .. x + LANES` (all with both x-neighbours in the row). Out of
    /// line (its own entry into the level, [`Isa::enter`], which is never inlined): its general
    /// path is large, and the row's three call sites would inline it three times over, more hot
    /// code than the instruction caches keep (on the 2-core AMD EPYC Zen 5, 192³ `f32` blocked:
    /// 473-493 MLUPS out of line against 452-457 inlined).
    ///
    /// # Safety
    /// As for [`FlowKernel::row`] at these nodes.
    #[inline(always)]
    unsafe fn vector<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        acc: Vector<T, S>,
    ) -> Vector<T, S> {
        // SAFETY: forwarded from `row`, which runs at level `S`.
        unsafe {
            S::enter(
                #[inline(always)]
                || self.vector_at_level::<FORCED, CHECK>(row, x, acc),
            )
        }
    }

    /// [`FlowKernel::vector`]'s body.
    ///
    /// # Safety
    /// As for [`FlowKernel::vector`].
    #[inline(always)]
    unsafe fn vector_at_level<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        acc: Vector<T, S>,
    ) -> Vector<T, S> {
        let cols = [x - 1, x, x + 1];
        // SAFETY: forwarded from `row`.
        let out = unsafe {
            if Vector::<T, S>::bytes_zero(row.class.add(x)) {
                let m = Self::bulk_moments::<Vector<T, S>, FORCED>(row, cols, &self.fluid_v);
                Self::bulk_relax::<Vector<T, S>, FORCED, CHECK>(row, x, cols, &m, &self.fluid_v)
            } else {
                self.general::<Vector<T, S>, FORCED, CHECK>(
                    row,
                    x,
                    cols,
                    &self.fluid_v,
                    &self.boundary_v,
                )
            }
        };
        if CHECK {
            Vector::<T, S>::track_finite(acc, out)
        } else {
            acc
        }
    }

    /// One node at `x` with both x-neighbours in the row.
    #[inline(always)]
    unsafe fn scalar<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        acc: Vector<T, S>,
    ) -> Vector<T, S> {
        // SAFETY: forwarded from `row`.
        let out = unsafe {
            self.general::<T::One<S>, FORCED, CHECK>(
                row,
                x,
                [x - 1, x, x + 1],
                &self.fluid,
                &self.boundary,
            )
        };
        if CHECK {
            Vector::<T, S>::track_finite(acc, Vector::<T, S>::splat(out.get()))
        } else {
            acc
        }
    }

    /// Node `x` on an x face: a wall as `row.face_walls` says, any other node by [`Self::edge`].
    ///
    /// # Safety
    /// As for [`Self::edge`]; for a wall, the rows of `row.face_walls` at `x`.
    #[inline(always)]
    unsafe fn face<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        acc: Vector<T, S>,
    ) -> Vector<T, S> {
        // SAFETY: forwarded from `row`; a face wall reads its own column of the copied rows
        // and writes its own column of the output rows.
        unsafe {
            if *row.class.add(x) & IS_WALL == 0 {
                return self.edge::<FORCED, CHECK>(row, x, acc);
            }
            let rows = match row.face_walls {
                FaceWalls::Own => &row.own,
                FaceWalls::From(ref rows) => rows,
                FaceWalls::Skip => return acc,
            };
            let mut sum = T::zero();
            for (from, out) in rows.iter().zip(row.out) {
                let v = *from.add(x);
                *out.add(x) = v;
                sum = sum + v;
            }
            if CHECK {
                Vector::<T, S>::track_finite(acc, Vector::<T, S>::splat(sum))
            } else {
                acc
            }
        }
    }

    /// The node at `x` on an x face: its x-neighbours through the periodic or clamping rule.
    /// Out of line (its own entry into the level), as rare as it is large.
    ///
    /// # Safety
    /// As for [`FlowKernel::row`] at this node.
    #[inline(always)]
    unsafe fn edge<const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        acc: Vector<T, S>,
    ) -> Vector<T, S> {
        let map = |v: isize| neighbour(v, self.nx, self.periodic_x);
        let cols = [map(x as isize - 1), x, map(x as isize + 1)];
        // SAFETY: forwarded from `row` (which runs at level `S`); the mapped columns are inside
        // 0 .. nx.
        let out = unsafe {
            S::enter(
                #[inline(always)]
                || {
                    self.general::<T::One<S>, FORCED, CHECK>(
                        row,
                        x,
                        cols,
                        &self.fluid,
                        &self.boundary,
                    )
                },
            )
        };
        if CHECK {
            Vector::<T, S>::track_finite(acc, Vector::<T, S>::splat(out.get()))
        } else {
            acc
        }
    }

    /// Phase 1 of bulk fluid nodes at `x ..`: density and velocity from the streamed
    /// populations (loads straight from the source rows).
    #[inline(always)]
    unsafe fn bulk_moments<L: FlowLane<Scalar = T>, const FORCED: bool>(
        row: &Row<T>,
        cols: [usize; 3],
        fluid: &Rates<L>,
    ) -> Moments<L> {
        // SAFETY: the caller guarantees the source columns.
        let get = |i: usize| unsafe { L::load(row.src[i].add(source_col(i, cols))) };
        moments::<L, FORCED>(get, fluid, |rho, u| (rho, u))
    }

    /// Phase 2 of bulk fluid nodes at `x ..`: collide (reloading the streamed populations) and
    /// store straight to the output rows.
    #[inline(always)]
    unsafe fn bulk_relax<L: FlowLane<Scalar = T>, const FORCED: bool, const CHECK: bool>(
        row: &Row<T>,
        x: usize,
        cols: [usize; 3],
        m: &Moments<L>,
        fluid: &Rates<L>,
    ) -> L {
        // SAFETY: the caller guarantees the source columns and the output columns.
        let get = |i: usize| unsafe { L::load(row.src[i].add(source_col(i, cols))) };
        let put = |i: usize, v: L| unsafe { v.put(row.out[i].add(x)) };
        relax::<L, FORCED, CHECK>(get, m, fluid, put)
    }

    /// Direction `i`'s streamed populations of nodes `x ..`, bounced back (plus a moving
    /// wall's momentum) in the lanes whose link word has bit `i`. `bounced` is the or of the
    /// lanes' link words: directions no lane bounces cost one load. (Bit 0, the resting
    /// population, is never set: `classify` links moving directions only.)
    ///
    /// # Safety
    /// The source row of `i` must be readable at column `source_col(i, cols)` on, and where a
    /// bit of `bounced` is set, the own row of `OPPOSITE[i]` at `x ..` and the flag row of `i`
    /// at that column on (`WIDTH` elements each), as [`Self::general`]'s caller guarantees.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn pulled<L: FlowLane<Scalar = T>>(
        &self,
        row: &Row<T>,
        x: usize,
        cols: [usize; 3],
        i: usize,
        links: L::Links,
        bounced: u32,
        moving: bool,
    ) -> L {
        let col = source_col(i, cols);
        // SAFETY (whole body): forwarded from `general`.
        unsafe {
            let v = L::load(row.src[i].add(col));
            if bounced >> i & 1 == 0 {
                return v;
            }
            let term = if moving {
                L::from_fn(|l| {
                    let flag = *row.flags[i].add(col + l);
                    self.info[flag as usize].wall_term[i]
                })
            } else {
                L::splat(T::zero())
            };
            L::select(
                L::bit(links, i),
                L::load(row.own[OPPOSITE[i]].add(x)) + term,
                v,
            )
        }
    }

    /// Any nodes: the bulk computation plus the fix-ups their class bytes ask for. The 19
    /// populations are named one by one (no loop over a direction index), so they stay in
    /// registers: selected into an array in a loop, each would be stored to the stack under a
    /// mask and reloaded whole, which the store buffer cannot forward.
    #[inline(always)]
    unsafe fn general<L: FlowLane<Scalar = T>, const FORCED: bool, const CHECK: bool>(
        &self,
        row: &Row<T>,
        x: usize,
        cols: [usize; 3],
        fluid: &Rates<L>,
        boundary: &Rates<L>,
    ) -> L {
        let w = L::WIDTH;
        let mut class = [0u8; 16];
        // SAFETY (whole body): the caller guarantees the byte rows at x .. x + w, the sources at
        // `cols`, own rows and outputs at x .. x + w, and neighbour flags at every column.
        unsafe {
            for (l, c) in class[..w].iter_mut().enumerate() {
                *c = *row.class.add(x + l);
            }
            let any = class[..w].iter().fold(0, |a, &c| a | c);
            let own = |i: usize| L::load(row.own[i].add(x));
            let out: [L; Q] = if class[..w].iter().all(|&c| c == IS_WALL) {
                std::array::from_fn(own)
            } else {
                let (links, bounced) = if any & NEAR_WALL != 0 {
                    let bounced = (0..w).fold(0, |a, l| a | *row.links.add(x + l));
                    (L::links(row.links.add(x)), bounced)
                } else {
                    (L::Links::default(), 0)
                };
                let moving = any & NEAR_MOVING != 0;
                let pull = |i: usize| self.pulled::<L>(row, x, cols, i, links, bounced, moving);
                let f: [L; Q] = [
                    pull(0),
                    pull(1),
                    pull(2),
                    pull(3),
                    pull(4),
                    pull(5),
                    pull(6),
                    pull(7),
                    pull(8),
                    pull(9),
                    pull(10),
                    pull(11),
                    pull(12),
                    pull(13),
                    pull(14),
                    pull(15),
                    pull(16),
                    pull(17),
                    pull(18),
                ];
                let mut out = f;
                let put = |i: usize, v: L| out[i] = v;
                if any & (IS_INLET | IS_OUTLET) != 0 {
                    let is = |bit: u8| L::mask(|l| class[l] & bit != 0);
                    let (inlet, outlet) = (is(IS_INLET), is(IS_OUTLET));
                    let rates = Rates::select(is(IS_INLET | IS_OUTLET), boundary, fluid);
                    let info = |l: usize| &self.info[*row.flags[0].add(x + l) as usize];
                    let u_in: [L; 3] =
                        std::array::from_fn(|a| L::from_fn(|l| info(l).inlet_velocity[a]));
                    let rho_out = L::from_fn(|l| info(l).outlet_density);
                    let adjust = |rho: L, u: [L; 3]| {
                        (
                            L::select(outlet, rho_out, rho),
                            std::array::from_fn(|a| L::select(inlet, u_in[a], u[a])),
                        )
                    };
                    let m = moments::<L, FORCED>(|i| f[i], &rates, adjust);
                    relax::<L, FORCED, false>(|i| f[i], &m, &rates, put);
                } else {
                    let m = moments::<L, FORCED>(|i| f[i], fluid, |rho, u| (rho, u));
                    relax::<L, FORCED, false>(|i| f[i], &m, fluid, put);
                }
                if any & IS_WALL != 0 {
                    let wall = L::mask(|l| class[l] & IS_WALL != 0);
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = L::select(wall, own(i), *o);
                    }
                }
                out
            };
            for (i, v) in out.iter().enumerate() {
                v.put(row.out[i].add(x));
            }
            if CHECK {
                out[1..].iter().fold(out[0], |acc, &v| acc + v)
            } else {
                out[0]
            }
        }
    }
}
