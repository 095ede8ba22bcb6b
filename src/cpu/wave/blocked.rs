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
//! level `dim_t − 1` copies the box of `u^{n+dim_t−1}` row by row as it computes it (a
//! one-level pass copies the field's `u`), into the scratch buffers, which then become the
//! field. Level `k` computes the box grown by `(dim_t − k)·R` cells on each side (clamped to
//! the updated cells), so a unit needs no other unit's results: neighbouring units recompute
//! those halo cells. Cells outside the updated ones hold zeros in every ring.
//!
//! Sources are added at every level to every cell a unit computes (halo copies included);
//! receivers are read at every level only from the cells of the unit's own box, each probe's
//! value into its own slot, and summed in probe order after the pass, as the naive engine sums.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::naive::sweep;
use super::rows::{
    prefetch_x_layers, star_rows, RowDamping, Rows, WaveRowKernel, WithWave, PHI_AHEAD,
};
use super::step::{advance, failure, inject, GridPtr, WaveScratch};
use crate::aligned::{line_elems, line_start, AlignedBuf};
use crate::engine::Failure;
use crate::grid::padded_stride;
use crate::wave::{Wavefield, MAX_WAVE_RADIUS};
use crate::Real;

/// A blocked run of `steps` steps, `dim_t` per pass, on units of `tile` cells in x and y and
/// `depth` planes in z.
pub(crate) struct BlockedRun<'a, 'b, T: Real> {
    pub(crate) field: &'a mut Wavefield<T>,
    pub(crate) scratch: &'a mut WaveScratch<T>,
    pub(crate) steps: usize,
    pub(crate) dim_t: usize,
    pub(crate) tile: [usize; 2],
    pub(crate) depth: usize,
    pub(crate) pool: &'a rayon::ThreadPool,
    /// Work to run beside the first pass (a split run's exchange of its z halos), if any.
    pub(crate) beside: Option<WaveBeside<'b, T>>,
    /// Whether a pass that went non-finite is replayed a step at a time (see
    /// `EngineParams::replay`); else the field keeps the pass's input.
    pub(crate) replay: bool,
}

/// One grid cut at its z halos: the low halo's planes, the planes between, the high halo's.
pub(crate) type HaloCut<'c, T> = (&'c mut [T], &'c [T], &'c mut [T]);

/// A halo exchange as [`WaveBeside`] runs it: given `u`, `u⁻` and `φ` cut at the z halos, it
/// reads the planes between and fills the halos. The flag says whether a pass computes
/// meanwhile (the work should then leave the cores to it) or waits for it.
pub(crate) type WaveHaloWork<'a, T> = dyn FnMut([HaloCut<'_, T>; 3], bool) + 'a;

/// Work a split run does beside the blocked engine's first pass: the exchange that fills the
/// field's z halos. As for the stencils (see [`crate::cpu::blocked::Beside`]), the pass first
/// computes the output planes at least `R·dim_t` from both halos while `work` runs on the
/// calling thread (the pool's threads compute; that thread only waits for them otherwise),
/// then the bands of `R·dim_t` planes next to the halos. The halo planes' own outputs, which
/// the next exchange overwrites where a later pass reads them, are not computed.
pub(crate) struct WaveBeside<'a, T> {
    /// Planes of the low and the high z halo (0 where the field has none).
    pub(crate) halo: [usize; 2],
    /// The exchange (see [`WaveHaloWork`]).
    pub(crate) work: &'a mut WaveHaloWork<'a, T>,
    /// Where the run puts how long the computation waited for `work` (zero when the pass's
    /// first part took longer).
    pub(crate) waited: &'a mut Duration,
}

impl<T: Real> WaveBeside<'_, T> {
    /// Runs the work on `field` before anything computes; all of its time counts as waited.
    pub(crate) fn run_first(&mut self, field: &mut Wavefield<T>) {
        let start = Instant::now();
        let halo = self.halo;
        let (u, prev, phi) = (&mut field.u, &mut field.prev, &mut field.phi);
        (self.work)(
            [cut_at(u, halo), cut_at(prev, halo), cut_at(phi, halo)],
            false,
        );
        *self.waited = start.elapsed();
    }
}

/// `grid` cut at `halo` planes (see [`HaloCut`]).
fn cut_at<T: Real>(grid: &mut crate::Grid<T>, halo: [usize; 2]) -> HaloCut<'_, T> {
    let (low, mid, high) = grid.planes_cut_mut(halo);
    (low, mid, high)
}

impl<T: Real> WithWave<T> for BlockedRun<'_, '_, T> {
    type Output = Result<(), Failure>;

    fn call<K: WaveRowKernel<T>>(mut self, kernel: K) -> Self::Output {
        let r = K::RADIUS;
        let threads = self.pool.current_num_threads();
        if self.scratch.rings.len() < threads {
            self.scratch.rings.resize_with(threads, || Mutex::new(None));
        }
        if self.steps > self.dim_t {
            // Later passes would read the halo planes' outputs, which a pass beside the
            // exchange leaves out.
            if let Some(mut beside) = self.beside.take() {
                beside.run_first(self.field);
            }
        }
        let mut done = 0;
        while done < self.steps {
            let dim_t = self.dim_t.min(self.steps - done);
            let pass = Pass::new(self.field, dim_t, r);
            let finite = match self.beside.take() {
                Some(mut beside) => self.pass_beside(&kernel, &pass, &mut beside),
                None => {
                    let nz = self.field.dims()[2];
                    self.run_units(&kernel, &pass, [r, nz - r], || {}).0
                }
            };
            if finite {
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
            } else if !self.replay {
                // The ranks of a split run find the failing step together, from this input.
                return Err(failure(self.scratch, r, done + 1));
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

impl<T: Real> BlockedRun<'_, '_, T> {
    /// Runs `pass`'s units whose output planes lie in `planes` on the pool, with `beside` on
    /// the calling thread meanwhile: whether every value computed is finite, and how long the
    /// units' last finish preceded `beside`'s (zero when `beside` finished first).
    fn run_units<K: WaveRowKernel<T>>(
        &mut self,
        kernel: &K,
        pass: &Pass,
        planes: [usize; 2],
        beside: impl FnOnce(),
    ) -> (bool, Duration) {
        let units = units(self.field.dims(), K::RADIUS, self.tile, self.depth, planes);
        let finite = AtomicBool::new(true);
        let out = Outputs {
            u: GridPtr::of_mut(&mut self.scratch.u),
            prev: GridPtr::of_mut(&mut self.scratch.prev),
            phi: GridPtr::of_mut(&mut self.scratch.phi),
        };
        let (field, rings): (&Wavefield<T>, _) = (self.field, &self.scratch.rings);
        let grids = [&field.u, &field.prev, &field.coef, &field.phi].map(GridPtr::of);
        let mut computed = None;
        let beside_done = self.pool.in_place_scope(|scope| {
            let computed = &mut computed;
            scope.spawn(|_| {
                units.par_iter().for_each(|unit| {
                    // Each worker thread has its own rings, which only it locks: a unit runs no
                    // parallel work, so a thread never takes up another unit while it holds them.
                    let slot = &rings[rayon::current_thread_index().unwrap_or(0)];
                    let mut ring = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if !pass.unit(kernel, field, &grids, &out, *unit, &mut ring) {
                        finite.store(false, Ordering::Relaxed);
                    }
                });
                *computed = Some(Instant::now());
            });
            beside();
            Instant::now()
        });
        let computed = computed.unwrap_or(beside_done);
        (
            finite.into_inner(),
            beside_done.saturating_duration_since(computed),
        )
    }

    /// One pass with `beside`'s work on the calling thread (see [`WaveBeside`]): first the
    /// output planes at least `R·dim_t` from both halos, beside the work, then the bands next
    /// to the halos. A field without z halos, or too thin for planes that need none, runs the
    /// work first. Whether every value computed is finite.
    fn pass_beside<K: WaveRowKernel<T>>(
        &mut self,
        kernel: &K,
        pass: &Pass,
        beside: &mut WaveBeside<'_, T>,
    ) -> bool {
        let r = K::RADIUS;
        let nz = self.field.dims()[2];
        let depth = r * pass.dim_t;
        let [lo, hi] = beside.halo;
        let start = if lo > 0 { lo + depth } else { r };
        let end = if hi > 0 {
            (nz - hi).saturating_sub(depth)
        } else {
            nz - r
        };
        if lo + hi == 0 || start >= end {
            beside.run_first(self.field);
            return self.run_units(kernel, pass, [r, nz - r], || {}).0;
        }
        let f = &mut *self.field;
        let raw = [&mut f.u, &mut f.prev, &mut f.phi].map(|g| {
            let plane = g.plane_stride();
            let storage = g.storage_mut();
            (storage.as_mut_ptr(), storage.len(), plane)
        });
        let work = &mut beside.work;
        let (finite, waited) = self.run_units(kernel, pass, [start, end], || {
            // SAFETY: each triple is one grid's storage (base, length, plane), valid while the
            // field is borrowed; the slices cut it at the halos. While they live the units
            // read only planes `start − depth .. end + depth`, all between the halos, and
            // write only the scratch grids; the work reads the planes between through the
            // shared slices and writes only the halos.
            let cuts = raw.map(|(base, len, plane)| unsafe {
                let (low, high) = (lo * plane, len - hi * plane);
                (
                    std::slice::from_raw_parts_mut(base, low),
                    std::slice::from_raw_parts(base.add(low), high - low),
                    std::slice::from_raw_parts_mut(base.add(high), len - high),
                )
            });
            work(cuts, true);
        });
        *beside.waited = waited;
        let low_band = self.run_units(kernel, pass, [lo.max(r), start], || {}).0;
        let high_band = self
            .run_units(kernel, pass, [end, (nz - hi).min(nz - r)], || {})
            .0;
        finite && low_band && high_band
    }
}

/// The output box of a unit: `[lo, hi)` per axis.
type Unit = [[usize; 2]; 3];

/// Whether `cell` lies in `unit`'s own box.
fn owns(unit: &Unit, cell: [usize; 3]) -> bool {
    (0..3).all(|a| (unit[a][0]..unit[a][1]).contains(&cell[a]))
}

/// The units covering the updated cells of `dims` whose output planes lie in `planes`.
fn units(
    dims: [usize; 3],
    r: usize,
    tile: [usize; 2],
    depth: usize,
    planes: [usize; 2],
) -> Vec<Unit> {
    let cuts = |a: usize, size: usize| -> Vec<[usize; 2]> {
        let (lo, hi) = if a == 2 {
            (planes[0], planes[1])
        } else {
            (r, dims[a] - r)
        };
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

    /// Runs one unit, reading the field's `u`, `u⁻`, `(v·dt)²` and `φ` through `grids`;
    /// returns whether every value it computed is finite.
    fn unit<T: Real, K: WaveRowKernel<T>>(
        &self,
        kernel: &K,
        field: &Wavefield<T>,
        grids: &[GridPtr<T>; 4],
        out: &Outputs<T>,
        unit: Unit,
        buf: &mut Option<AlignedBuf<T>>,
    ) -> bool {
        let n = field.dims();
        let rings = Rings::new(self, &unit, n, buf);
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
                ok &= self.plane(kernel, field, grids, &rings, out, &level);
            }
        }
        ok
    }

    /// Level `level.k`'s plane `level.z`: zeros for a boundary plane, else its rows, sources
    /// and receivers (and, at the level that copies it, the unit's box of the previous time
    /// level).
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
            rings.zero_plane(k, z, false);
            return true;
        }
        if !last && self.stale_phi(field, z) {
            rings.zero_plane(k, z, true);
        }
        let (xs, ys) = (
            self.computed(level.unit, n, k, 0),
            self.computed(level.unit, n, k, 1),
        );
        let src = self.sources(grids, rings, out, level);
        let copies = self.copies_previous(level);
        // SAFETY: the CPU has the kernel's level; every row read lies in the field's grids or
        // in a ring that holds it (see the module docs), the rows written belong to this
        // unit's rings or to its own box of the scratch grids; a level that copies the previous
        // time level has its plane in the unit's z range and its computed rows hold the unit's
        // columns.
        let mut ok = unsafe {
            K::enter(
                #[inline(always)]
                || {
                    let mut ok = true;
                    for y in ys[0]..ys[1] {
                        if y + PHI_AHEAD < ys[1] {
                            let ahead = src.phi_rows(y + PHI_AHEAD);
                            prefetch_x_layers(&field.damping, ahead, y + PHI_AHEAD, z, xs);
                        }
                        let rows = src.rows(y);
                        let damp = RowDamping::at(&field.damping, y, z);
                        ok &= kernel.row(&rows, &damp, xs[0], xs[1]);
                        if copies {
                            let from = if self.dim_t == 1 {
                                src.u[r].row(y)
                            } else {
                                src.out.row(y)
                            };
                            self.copy_previous(from, out, level, y);
                        }
                    }
                    ok
                },
            )
        };
        let target = |y: usize| src.out.row(y);
        ok &= self.inject(field, level, [xs, ys], target);
        if copies && !last {
            self.copy_injected(field, level, target, out);
        }
        self.record(field, level, target);
        ok
    }

    /// Whether a ring's `φ` slot for plane `z` may hold non-zero values in inner cells: `z`
    /// lies outside the z layers and the plane the slot held before, `2R + 1` planes back,
    /// inside them, where every cell's `φ` was written. The row kernel reads `φ` in the inner
    /// cells next to the x layers (see `aligned_inner` in the rows module) and needs zeros there,
    /// which the ring's planes otherwise keep: the unit starts with zeroed rings, and inner
    /// cells are written only with the zero they read.
    fn stale_phi<T: Real>(&self, field: &Wavefield<T>, z: usize) -> bool {
        let [lo, hi] = field.damping.inner[2];
        let back = z.checked_sub(2 * self.r + 1);
        (lo..hi).contains(&z) && back.is_some_and(|p| !(lo..hi).contains(&p))
    }

    /// The planes level `level.k` reads and writes for plane `level.z`: `u` at `z − R ..= z +
    /// R` of the level below, `u⁻`, `(v·dt)²`, `φ` and the outputs at `z`.
    fn sources<T: Real>(
        &self,
        grids: &[GridPtr<T>; 4],
        rings: &Rings<T>,
        out: &Outputs<T>,
        level: &Level<'_>,
    ) -> Sources<T> {
        let (k, z, r) = (level.k, level.z, self.r);
        let last = k == self.dim_t;
        let empty = PlaneRows {
            origin: std::ptr::null_mut(),
            pitch: 0,
        };
        let mut u = [empty; 2 * MAX_WAVE_RADIUS + 1];
        for (i, plane) in u.iter_mut().enumerate().take(2 * r + 1) {
            let zi = z + i - r;
            *plane = if k == 1 {
                PlaneRows::of(&grids[0], zi)
            } else {
                rings.plane_rows(k - 1, zi, false)
            };
        }
        Sources {
            u,
            r,
            prev: match k {
                1 => PlaneRows::of(&grids[1], z),
                2 => PlaneRows::of(&grids[0], z),
                _ => rings.plane_rows(k - 2, z, false),
            },
            coef: PlaneRows::of(&grids[2], z),
            phi: if k == 1 {
                PlaneRows::of(&grids[3], z)
            } else {
                rings.plane_rows(k - 1, z, true)
            },
            phi_out: if last {
                PlaneRows::of(&out.phi, z)
            } else {
                rings.plane_rows(k, z, true)
            },
            out: if last {
                PlaneRows::of(&out.u, z)
            } else {
                rings.plane_rows(k, z, false)
            },
        }
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
        let p = self.counts[0];
        for (i, tap) in field.probes.iter().enumerate() {
            if tap.cell[2] == level.z && owns(level.unit, tap.cell) {
                let [x, y, _] = tap.cell;
                // SAFETY: the cell lies in this unit's box, computed into row `y` of the plane.
                let v = unsafe { *target(y).wrapping_add(x) };
                let value = tap.weight * v.to_f64().unwrap_or(f64::NAN);
                self.probes[(level.k - 1) * p + i].store(value.to_bits(), Ordering::Relaxed);
            }
        }
    }

    /// Whether level `level.k` copies the unit's box of its plane `level.z` to the scratch's
    /// previous time level, `u^{n+dim_t−1}`: the level below the last does, row by row as it
    /// computes them (a one-level pass copies the field's `u` at its only level). Between the
    /// rows of a level that computes from the caches, the copy's stores to memory overlap its
    /// arithmetic; after the last level's rows, which store to memory themselves, they would
    /// not. On a 2-core Intel Xeon (order 8 `f32` 256³, 20-cell layers, `dim_t` 3, 248×32,
    /// a per-level profile) a copy after the last level's rows left that level at 2.0 ns a
    /// cell and the one below at 1.1; copied beside the level below, they take 1.4 and 1.45.
    /// With this and the planes located once per plane ([`PlaneRows`]), passes on the tiles
    /// measured (`dim_t` 2-3, 248×32 and 248×64) ran 1-6% faster.
    fn copies_previous(&self, level: &Level<'_>) -> bool {
        (level.k + 1 == self.dim_t || self.dim_t == 1)
            && (level.unit[2][0]..level.unit[2][1]).contains(&level.z)
    }

    /// Copies row `y` of the unit's box from `from` (column 0 of the row holding
    /// `u^{n+dim_t−1}`) to the scratch's previous level, if the row is one of the unit's.
    ///
    /// # Safety
    /// `from` holds the unit's columns, and `level.z` lies in the unit's z range (as
    /// [`Pass::copies_previous`] guarantees).
    #[inline(always)]
    unsafe fn copy_previous<T: Real>(
        &self,
        from: *const T,
        out: &Outputs<T>,
        level: &Level<'_>,
        y: usize,
    ) {
        if !(level.unit[1][0]..level.unit[1][1]).contains(&y) {
            return;
        }
        let [x0, x1] = level.unit[0];
        // SAFETY: the caller guarantees the source columns; the destination is the unit's own
        // box of the scratch grid, which no other unit writes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                from.wrapping_add(x0),
                out.prev.row(y, level.z).wrapping_add(x0),
                x1 - x0,
            );
        }
    }

    /// Copies the cells of the unit's box on plane `level.z` that the sources changed after
    /// their rows were copied (see [`Pass::copies_previous`]) from `target` to the scratch's
    /// previous level.
    fn copy_injected<T: Real>(
        &self,
        field: &Wavefield<T>,
        level: &Level<'_>,
        target: impl Fn(usize) -> *mut T,
        out: &Outputs<T>,
    ) {
        for tap in field
            .injections
            .iter()
            .filter(|t| t.cell[2] == level.z && owns(level.unit, t.cell))
        {
            let [x, y, z] = tap.cell;
            // SAFETY: the cell lies in this unit's box: computed into row `y` of the plane and
            // owned by this unit in the scratch grid.
            unsafe { *out.prev.row(y, z).wrapping_add(x) = *target(y).wrapping_add(x) };
        }
    }
}

/// One plane's rows as the address of its row 0 (column 0, global coordinates) and the
/// distance between rows: a row is then one multiply-add away, where locating it in a ring
/// from `(y, z)` takes a division (the ring's slot).
#[derive(Clone, Copy)]
struct PlaneRows<T> {
    origin: *mut T,
    pitch: usize,
}

impl<T: Real> PlaneRows<T> {
    /// Plane `z` of a whole grid.
    fn of(grid: &GridPtr<T>, z: usize) -> Self {
        let (origin, pitch) = grid.plane_origin(z);
        PlaneRows { origin, pitch }
    }

    /// Column 0 of row `y` (the address may lie outside the buffer; only the columns it holds
    /// are read or written).
    #[inline(always)]
    fn row(self, y: usize) -> *mut T {
        self.origin.wrapping_add(y.wrapping_mul(self.pitch))
    }
}

/// The planes one level reads and writes to compute one plane (see [`Pass::sources`]).
struct Sources<T> {
    /// `u` of the level below at `z − R + i` in entry `i`.
    u: [PlaneRows<T>; 2 * MAX_WAVE_RADIUS + 1],
    r: usize,
    prev: PlaneRows<T>,
    coef: PlaneRows<T>,
    phi: PlaneRows<T>,
    phi_out: PlaneRows<T>,
    out: PlaneRows<T>,
}

impl<T: Real> Sources<T> {
    /// The rows the update of output row `y` reads and writes.
    #[inline(always)]
    fn rows(&self, y: usize) -> Rows<T> {
        let [phi, phi_out] = self.phi_rows(y);
        let r = self.r;
        Rows {
            u: star_rows(r, |dy, dz| {
                self.u[r.wrapping_add_signed(dz)]
                    .row(y.wrapping_add_signed(dy))
                    .cast_const()
            }),
            prev: self.prev.row(y).cast_const(),
            coef: self.coef.row(y).cast_const(),
            phi: phi.cast_const(),
            out: self.out.row(y),
            phi_out,
        }
    }

    /// The `φ` row read and the one written for output row `y`.
    #[inline(always)]
    fn phi_rows(&self, y: usize) -> [*mut T; 2] {
        [self.phi.row(y), self.phi_out.row(y)]
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
            // Planes a multiple of 4 KiB apart would put the rows a level reads at one (x, y)
            // of its 2R + 1 planes into one set of the L1 cache.
            let plane = padded_stride::<T>(pitch * (ey1 - ey0));
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

    /// Level `k`'s `u` (`phi = false`) or `φ` plane `z` as [`PlaneRows`].
    fn plane_rows(&self, k: usize, z: usize, phi: bool) -> PlaneRows<T> {
        let l = self.levels[k - 1];
        let slot = z % self.slots + if phi { self.slots } else { 0 };
        PlaneRows {
            origin: self
                .base
                .wrapping_add(l.offset + slot * l.plane)
                .wrapping_sub(l.y0 * l.pitch + l.x0),
            pitch: l.pitch,
        }
    }

    /// Zeroes level `k`'s `u` (`phi = false`) or `φ` plane `z`.
    fn zero_plane(&self, k: usize, z: usize, phi: bool) {
        let l = self.levels[k - 1];
        let slot = z % self.slots + if phi { self.slots } else { 0 };
        let start = l.offset + slot * l.plane;
        // SAFETY: the plane lies within the unit's buffer, which only this thread uses.
        unsafe { std::ptr::write_bytes(self.base.wrapping_add(start), 0, l.plane) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::test_shot::random_shot;
    use crate::wave::WaveKernel;
    use crate::{Grid, Level};

    /// A pass beside a halo exchange (see [`WaveBeside`]) gives `u`, `u⁻` and `φ` of the planes
    /// between the halos the same bits as a pass whose halos were filled first: orders 2 and 8
    /// with absorbing layers, one- and many-level passes, z chunks, halos on one side or both,
    /// a field too thin to compute anything before the halos arrive, `f32` and `f64` at every
    /// ISA level. The halos hold a wrong finite value until `work` fills them, so a pass that
    /// read them early would give other values.
    #[test]
    fn a_pass_beside_the_exchange_matches_one_after_it() {
        fn check<T: Real>(pool: &rayon::ThreadPool, level: Level) {
            // (order, dim_t, z chunk depth, halo in passes' reach, owned planes)
            let cases = [
                (8, 2, 7, [1, 1], 31),
                (2, 3, 5, [1, 0], 17),
                (8, 1, 4, [0, 1], 19),
                (2, 1, 100, [1, 1], 9),
                (8, 2, 9, [1, 1], 6),
            ];
            for (order, dim_t, depth, reach, owned) in cases {
                let r = order / 2;
                let halo = reach.map(|k| k * r * dim_t);
                let kernel = WaveKernel::new(10.0, 1e-3, 2500.0)
                    .with_order(order)
                    .with_pml(r + 4);
                let dims = [21 + 2 * r, 15 + 2 * r, owned + halo[0] + halo[1] + 2 * r];
                let exchanged = random_shot::<T>(kernel.clone(), dims, order as u64);
                let damping = exchanged.damping.clone();
                let run = |field: &mut Wavefield<T>, beside: Option<WaveBeside<'_, T>>| {
                    let mut scratch = WaveScratch::new(dims).unwrap();
                    let job = BlockedRun {
                        field,
                        scratch: &mut scratch,
                        steps: dim_t,
                        dim_t,
                        tile: [9, 7],
                        depth,
                        pool,
                        beside,
                        replay: true,
                    };
                    assert!(super::super::rows::dispatch(&kernel, &damping, level, job).is_ok());
                };
                let mut after = exchanged.clone();
                run(&mut after, None);
                let mut early = exchanged.clone();
                for g in [&mut early.u, &mut early.prev, &mut early.phi] {
                    let (low, _, high) = g.planes_cut_mut(halo);
                    low.fill(T::of(1e3));
                    high.fill(T::of(1e3));
                }
                let whole = [&exchanged.u, &exchanged.prev, &exchanged.phi].map(Grid::storage);
                let mut calls = 0;
                let mut work = |cuts: [HaloCut<'_, T>; 3], _beside| {
                    calls += 1;
                    // Late enough that the pass computes its first part from the wrong halos
                    // if it reads them.
                    std::thread::sleep(Duration::from_millis(20));
                    for ((low, _, high), whole) in cuts.into_iter().zip(whole) {
                        let n = whole.len();
                        low.copy_from_slice(&whole[..low.len()]);
                        high.copy_from_slice(&whole[n - high.len()..]);
                    }
                };
                let mut waited = Duration::MAX;
                let beside = WaveBeside {
                    halo,
                    work: &mut work,
                    waited: &mut waited,
                };
                run(&mut early, Some(beside));
                assert!(waited < Duration::MAX);
                assert_eq!(calls, 1);
                let grids = |f: &Wavefield<T>| [f.u.clone(), f.prev.clone(), f.phi.clone()];
                for (g, (a, b)) in grids(&early).iter().zip(grids(&after).iter()).enumerate() {
                    for z in halo[0]..dims[2] - halo[1] {
                        for y in 0..dims[1] {
                            assert!(
                                a.row(y, z) == b.row(y, z),
                                "{} {level} order {order} dim_t {dim_t} halo {halo:?}: grid \
                                 {g} row ({y}, {z}) differs",
                                T::DTYPE
                            );
                        }
                    }
                }
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
            check::<f32>(&pool, level);
            check::<f64>(&pool, level);
        }
    }
}
