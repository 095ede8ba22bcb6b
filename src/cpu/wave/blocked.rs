//! The 3.5D-blocked wave engine: each pass advances `dim_t` steps while reading the field and
//! writing the next one once.
//!
//! The updated cells are cut into units: boxes of `tile` cells in x and y and a chunk of z
//! planes. A thread takes a unit and streams through its planes: level `k` (time step `k` of
//! the pass) computes plane `z` of `u^{n+k}` and `φ^{n+k}` from level `k − 1`'s planes
//! `z − R ..= z + R` and level `k − 2`'s plane `z` (the leapfrog's second time level), so every
//! level keeps its last `2R + 1` planes in a ring, `R` planes ahead of the level above it; the
//! ring two levels down still holds plane `z` when it is needed. Level 1 reads `u^n`, `u^{n−1}`
//! and `φ^n` from the field; level `dim_t` writes the unit's box of `u^{n+dim_t}` and `φ`, and
//! the box of `u^{n+dim_t−1}` is copied from the ring below, into the scratch buffers, which
//! then become the field. Level `k` computes the box grown by `(dim_t − k)·R` cells on each
//! side (clamped to the updated cells), so a unit needs no other unit's results: neighbouring
//! units recompute those halo cells. Cells outside the updated ones hold zeros in every ring.
//!
//! Sources are added at every level to every cell a unit computes (halo copies included);
//! receivers are read at every level only from the cells of the unit's own box, each probe's
//! value into its own slot, and summed in probe order after the pass, as the naive engine sums.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::naive::sweep;
use super::rows::{RowDamping, Rows, WaveRowKernel, WithWave, SPAN};
use super::step::{advance, failure, inject, GridPtr, WaveScratch};
use crate::aligned::{line_elems, line_start, AlignedBuf};
use crate::engine::Failure;
use crate::wave::Wavefield;
use crate::Real;

/// A blocked run of `steps` steps, `dim_t` per pass, on units of `tile` cells in x and y and
/// `depth` planes in z.
pub(crate) struct BlockedRun<'a, T: Real> {
    pub(crate) field: &'a mut Wavefield<T>,
    pub(crate) scratch: &'a mut WaveScratch<T>,
    pub(crate) steps: usize,
    pub(crate) dim_t: usize,
    pub(crate) tile: [usize; 2],
    pub(crate) depth: usize,
    pub(crate) pool: &'a rayon::ThreadPool,
}

impl<T: Real> WithWave<T> for BlockedRun<'_, T> {
    type Output = Result<(), Failure>;

    fn call<K: WaveRowKernel<T>>(self, kernel: K) -> Self::Output {
        let r = K::RADIUS;
        let threads = self.pool.current_num_threads();
        if self.scratch.rings.len() < threads {
            self.scratch.rings.resize_with(threads, || Mutex::new(None));
        }
        let mut done = 0;
        while done < self.steps {
            let dim_t = self.dim_t.min(self.steps - done);
            let units = units(self.field.dims(), r, self.tile, self.depth);
            let pass = Pass::new(self.field, dim_t, r);
            let finite = AtomicBool::new(true);
            let out = Outputs {
                u: GridPtr::of_mut(&mut self.scratch.u),
                prev: GridPtr::of_mut(&mut self.scratch.prev),
                phi: GridPtr::of_mut(&mut self.scratch.phi),
            };
            let (field, rings): (&Wavefield<T>, _) = (self.field, &self.scratch.rings);
            self.pool.install(|| {
                units.par_iter().for_each(|unit| {
                    // Each worker thread has its own rings, which only it locks: a unit runs no
                    // parallel work, so a thread never takes up another unit while it holds them.
                    let slot = &rings[rayon::current_thread_index().unwrap_or(0)];
                    let mut ring = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if !pass.unit(&kernel, field, &out, *unit, &mut ring) {
                        finite.store(false, Ordering::Relaxed);
                    }
                })
            });
            if finite.into_inner() {
                let samples = pass.samples();
                let f = &mut *self.field;
                f.u.swap_storage(&mut self.scratch.u);
                f.prev.swap_storage(&mut self.scratch.prev);
                f.phi.swap_storage(&mut self.scratch.phi);
                f.step += dim_t;
                for level in samples {
                    for (trace, s) in f.traces.iter_mut().zip(level) {
                        trace.push(s);
                    }
                }
            } else {
                // Replay the pass a step at a time to find the step that went bad and leave
                // the field at the step before it.
                for i in 1..=dim_t {
                    let swept = sweep(&kernel, self.field, self.scratch, self.pool);
                    if !(swept && inject(self.field, self.scratch)) {
                        return Err(failure(self.scratch, r, done + i));
                    }
                    advance(self.field, self.scratch);
                }
            }
            done += dim_t;
        }
        Ok(())
    }
}

/// The output box of a unit: `[lo, hi)` per axis.
type Unit = [[usize; 2]; 3];

/// The units covering the updated cells of `dims`.
fn units(dims: [usize; 3], r: usize, tile: [usize; 2], depth: usize) -> Vec<Unit> {
    let cuts = |a: usize, size: usize| -> Vec<[usize; 2]> {
        let (lo, hi) = (r, dims[a] - r);
        let size = size.max(1);
        (lo..hi)
            .step_by(size)
            .map(|s| [s, (s + size).min(hi)])
            .collect()
    };
    let (xs, ys, zs) = (cuts(0, tile[0]), cuts(1, tile[1]), cuts(2, depth));
    let mut out = Vec::with_capacity(xs.len() * ys.len() * zs.len());
    for z in &zs {
        for y in &ys {
            for x in &xs {
                out.push([*x, *y, *z]);
            }
        }
    }
    out
}

/// The scratch buffers a pass writes, shared by the units (disjoint boxes).
struct Outputs<T> {
    u: GridPtr<T>,
    prev: GridPtr<T>,
    phi: GridPtr<T>,
}

/// What every unit of one pass shares: its depth, the sources' values at each level and the
/// receivers' slots.
struct Pass {
    dim_t: usize,
    r: usize,
    /// `injected[k − 1][i]`: what tap `i` adds at level `k`.
    injected: Vec<Vec<f64>>,
    /// `probes[(k − 1)·P + i]`: probe `i`'s weighted value at level `k` (f64 bits).
    probes: Vec<AtomicU64>,
    /// Probe count P and the receivers' count.
    counts: [usize; 2],
    /// For each probe, its receiver.
    owners: Vec<usize>,
}

impl Pass {
    fn new<T: Real>(field: &Wavefield<T>, dim_t: usize, r: usize) -> Pass {
        let injected = (0..dim_t)
            .map(|k| {
                let n = field.step + k;
                field
                    .injections
                    .iter()
                    .map(|t| field.injected(t, n).to_f64().unwrap_or(0.0))
                    .collect()
            })
            .collect();
        let p = field.probes.len();
        Pass {
            dim_t,
            r,
            injected,
            probes: (0..p * dim_t).map(|_| AtomicU64::new(0)).collect(),
            counts: [p, field.traces.len()],
            owners: field.probes.iter().map(|t| t.point).collect(),
        }
    }

    /// The receivers' samples at each level, summed in probe order.
    fn samples(&self) -> Vec<Vec<f64>> {
        let [p, n] = self.counts;
        (0..self.dim_t)
            .map(|k| {
                let mut s = vec![0.0; n];
                for i in 0..p {
                    let v = f64::from_bits(self.probes[k * p + i].load(Ordering::Relaxed));
                    s[self.owners[i]] += v;
                }
                s
            })
            .collect()
    }

    /// Cells level `k` computes along axis `a` of `unit`: its box grown by `(dim_t − k)·R`,
    /// clamped to the updated cells.
    fn computed(&self, unit: &Unit, n: [usize; 3], k: usize, a: usize) -> [usize; 2] {
        let g = (self.dim_t - k) * self.r;
        [
            unit[a][0].saturating_sub(g).max(self.r),
            (unit[a][1] + g).min(n[a] - self.r),
        ]
    }

    /// Cells level `k`'s ring holds along axis `a`: what level `k + 1` reads, clamped to the
    /// grid (the cells beyond the updated ones hold zeros).
    fn held(&self, unit: &Unit, n: [usize; 3], k: usize, a: usize) -> [usize; 2] {
        let g = (self.dim_t - k) * self.r;
        [unit[a][0].saturating_sub(g), (unit[a][1] + g).min(n[a])]
    }

    /// Runs one unit; returns whether every value it computed is finite.
    fn unit<T: Real, K: WaveRowKernel<T>>(
        &self,
        kernel: &K,
        field: &Wavefield<T>,
        out: &Outputs<T>,
        unit: Unit,
        buf: &mut Option<AlignedBuf<T>>,
    ) -> bool {
        let n = field.dims();
        let rings = Rings::new(self, &unit, n, buf);
        let grids = [
            GridPtr::of(&field.u),
            GridPtr::of(&field.prev),
            GridPtr::of(&field.coef),
            GridPtr::of(&field.phi),
        ];
        let mut ok = true;
        let first = self.held(&unit, n, 1, 2)[0];
        let last = unit[2][1] + (self.dim_t - 1) * self.r;
        for q in first..last {
            for k in 1..=self.dim_t {
                let Some(z) = (q + self.r).checked_sub(k * self.r) else {
                    continue;
                };
                let planes = if k == self.dim_t {
                    unit[2]
                } else {
                    self.held(&unit, n, k, 2)
                };
                if !(planes[0]..planes[1]).contains(&z) {
                    continue;
                }
                let level = Level {
                    k,
                    z,
                    unit: &unit,
                    n,
                };
                ok &= self.plane(kernel, field, &grids, &rings, out, &level);
            }
        }
        ok
    }

    /// Level `level.k`'s plane `level.z`: zeros for a boundary plane, else its rows, sources
    /// and receivers (and, at the last level, the unit's box of the previous time level).
    fn plane<T: Real, K: WaveRowKernel<T>>(
        &self,
        kernel: &K,
        field: &Wavefield<T>,
        grids: &[GridPtr<T>; 4],
        rings: &Rings<T>,
        out: &Outputs<T>,
        level: &Level<'_>,
    ) -> bool {
        let (k, z, n) = (level.k, level.z, level.n);
        let r = self.r;
        let last = k == self.dim_t;
        if z < r || z >= n[2] - r {
            // A boundary plane level k + 1 reads: zeros (only levels below the last hold one).
            rings.zero_plane(k, z);
            return true;
        }
        let (xs, ys) = (
            self.computed(level.unit, n, k, 0),
            self.computed(level.unit, n, k, 1),
        );
        // SAFETY: the CPU has the kernel's level; every row read lies in the field's grids or
        // in a ring that holds it (see the module docs), the rows written belong to this
        // unit's rings or to its own box of the scratch grids.
        let mut ok = unsafe {
            K::enter(
                #[inline(always)]
                || {
                    let mut ok = true;
                    for y in ys[0]..ys[1] {
                        let rows = self.rows(grids, rings, out, level, y);
                        let damp = RowDamping::at(&field.damping, y, z);
                        ok &= kernel.row(&rows, &damp, xs[0], xs[1]);
                    }
                    ok
                },
            )
        };
        let target = |y: usize| {
            if last {
                out.u.row(y, z)
            } else {
                rings.u_row(k, y, z)
            }
        };
        ok &= self.inject(field, level, [xs, ys], target);
        self.record(field, level, target);
        if last {
            self.copy_previous(grids, rings, out, level);
        }
        ok
    }

    /// The rows level `level.k` reads and writes for output row `y` of plane `level.z`.
    #[inline(always)]
    fn rows<T: Real>(
        &self,
        grids: &[GridPtr<T>; 4],
        rings: &Rings<T>,
        out: &Outputs<T>,
        level: &Level<'_>,
        y: usize,
    ) -> Rows<T> {
        let (k, z, last) = (level.k, level.z, level.k == self.dim_t);
        let src_u = |y: usize, z: usize| -> *const T {
            if k == 1 {
                grids[0].row(y, z)
            } else {
                rings.u_row(k - 1, y, z)
            }
        };
        let mut rows = Rows {
            u: [std::ptr::null(); SPAN],
            prev: match k {
                1 => grids[1].row(y, z),
                2 => grids[0].row(y, z),
                _ => rings.u_row(k - 2, y, z),
            },
            coef: grids[2].row(y, z),
            phi: if k == 1 {
                grids[3].row(y, z)
            } else {
                rings.phi_row(k - 1, y, z)
            },
            out: if last {
                out.u.row(y, z)
            } else {
                rings.u_row(k, y, z)
            },
            phi_out: if last {
                out.phi.row(y, z)
            } else {
                rings.phi_row(k, y, z)
            },
        };
        rows.u[0] = src_u(y, z);
        for d in 1..=self.r {
            let b = 4 * (d - 1) + 1;
            rows.u[b] = src_u(y - d, z);
            rows.u[b + 1] = src_u(y + d, z);
            rows.u[b + 2] = src_u(y, z - d);
            rows.u[b + 3] = src_u(y, z + d);
        }
        rows
    }

    /// Adds the sources of level `level.k` to the cells of plane `level.z` this unit computed
    /// (`[xs, ys]`, rows from `target`); returns whether the sums are finite.
    fn inject<T: Real>(
        &self,
        field: &Wavefield<T>,
        level: &Level<'_>,
        [xs, ys]: [[usize; 2]; 2],
        target: impl Fn(usize) -> *mut T,
    ) -> bool {
        let mut ok = true;
        for (i, tap) in field.injections.iter().enumerate() {
            let [x, y, z] = tap.cell;
            if z == level.z && (xs[0]..xs[1]).contains(&x) && (ys[0]..ys[1]).contains(&y) {
                let add = T::of(self.injected[level.k - 1][i]);
                // SAFETY: the cell was computed into this unit's row `y` of the plane.
                unsafe {
                    let p = target(y).wrapping_add(x);
                    *p = *p + add;
                    ok &= (*p).is_finite();
                }
            }
        }
        ok
    }

    /// Stores the weighted values of the probes in this unit's own box on plane `level.z` (rows
    /// from `target`) in their slots of level `level.k`.
    fn record<T: Real>(
        &self,
        field: &Wavefield<T>,
        level: &Level<'_>,
        target: impl Fn(usize) -> *mut T,
    ) {
        let own =
            |c: [usize; 3]| (0..3).all(|a| (level.unit[a][0]..level.unit[a][1]).contains(&c[a]));
        let p = self.counts[0];
        for (i, tap) in field.probes.iter().enumerate() {
            if tap.cell[2] == level.z && own(tap.cell) {
                let [x, y, _] = tap.cell;
                // SAFETY: the cell lies in this unit's box, computed into row `y` of the plane.
                let v = unsafe { *target(y).wrapping_add(x) };
                let value = tap.weight * v.to_f64().unwrap_or(f64::NAN);
                self.probes[(level.k - 1) * p + i].store(value.to_bits(), Ordering::Relaxed);
            }
        }
    }

    /// Copies the unit's box of `u^{n+dim_t−1}` at plane `level.z` to the scratch's previous
    /// level.
    fn copy_previous<T: Real>(
        &self,
        grids: &[GridPtr<T>; 4],
        rings: &Rings<T>,
        out: &Outputs<T>,
        level: &Level<'_>,
    ) {
        let (z, [x0, x1]) = (level.z, level.unit[0]);
        for y in level.unit[1][0]..level.unit[1][1] {
            let src = if self.dim_t == 1 {
                grids[0].row(y, z)
            } else {
                rings.u_row(self.dim_t - 1, y, z)
            };
            // SAFETY: the source row holds columns x0 .. x1 (the field's grid or a ring
            // holding level dim_t − 1's grown box), and the destination's box is this unit's.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.wrapping_add(x0),
                    out.prev.row(y, z).wrapping_add(x0),
                    x1 - x0,
                );
            }
        }
    }
}

/// One level's plane of one unit.
struct Level<'a> {
    k: usize,
    z: usize,
    unit: &'a Unit,
    n: [usize; 3],
}

/// The rings of levels `1 .. dim_t` of one unit: `2R + 1` planes of `u` and of `φ` each,
/// every row aligned within a cache line as the grid's.
struct Rings<T> {
    base: *mut T,
    /// Per level (index `k − 1`): offset, pitch, plane length, first row, first column.
    levels: Vec<RingLevel>,
    slots: usize,
}

/// Where one level's ring lies in the unit's buffer.
#[derive(Clone, Copy)]
struct RingLevel {
    offset: usize,
    pitch: usize,
    plane: usize,
    y0: usize,
    x0: usize,
}

impl<T: Real> Rings<T> {
    /// Lays out (and zeroes) the rings for `unit` in `buf`, growing it as needed.
    fn new(pass: &Pass, unit: &Unit, n: [usize; 3], buf: &mut Option<AlignedBuf<T>>) -> Rings<T> {
        let slots = 2 * pass.r + 1;
        let mut levels = Vec::with_capacity(pass.dim_t);
        let mut len = 0;
        for k in 1..pass.dim_t {
            let [ex0, ex1] = pass.held(unit, n, k, 0);
            let [ey0, ey1] = pass.held(unit, n, k, 1);
            let x0 = line_start::<T>(ex0);
            let pitch = (ex1 - x0).div_ceil(line_elems::<T>()) * line_elems::<T>();
            let plane = pitch * (ey1 - ey0);
            levels.push(RingLevel {
                offset: len,
                pitch,
                plane,
                y0: ey0,
                x0,
            });
            len += 2 * slots * plane;
        }
        let len = len.max(1);
        match buf {
            Some(b) if b.len() >= len => b[..len].fill(T::zero()),
            _ => {
                *buf = None;
                *buf = Some(AlignedBuf::zeroed(len).expect("a unit's rings are a few planes"));
            }
        }
        let b = buf.as_mut().expect("set above");
        Rings {
            base: b.as_mut_ptr(),
            levels,
            slots,
        }
    }

    /// Column 0 (global x) of row `(y, z)` of level `k`'s `u` (`phi = false`) or `φ` ring.
    #[inline(always)]
    fn row(&self, k: usize, y: usize, z: usize, phi: bool) -> *mut T {
        let l = self.levels[k - 1];
        let slot = z % self.slots + if phi { self.slots } else { 0 };
        self.base
            .wrapping_add(l.offset + slot * l.plane + (y - l.y0) * l.pitch)
            .wrapping_sub(l.x0)
    }

    fn u_row(&self, k: usize, y: usize, z: usize) -> *mut T {
        self.row(k, y, z, false)
    }

    fn phi_row(&self, k: usize, y: usize, z: usize) -> *mut T {
        self.row(k, y, z, true)
    }

    /// Zeroes level `k`'s `u` plane `z`.
    fn zero_plane(&self, k: usize, z: usize) {
        let l = self.levels[k - 1];
        let start = l.offset + (z % self.slots) * l.plane;
        // SAFETY: the plane lies within the unit's buffer, which only this thread uses.
        unsafe { std::ptr::write_bytes(self.base.wrapping_add(start), 0, l.plane) };
    }
}
