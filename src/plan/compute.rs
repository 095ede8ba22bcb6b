//! The stencil compute probe: how fast the cores run the engines' own 7-point row kernel on data
//! that overflows their private caches into the last level (where the blocked engine's ring
//! buffers live), all cores at once, as a share of the nominal peak
//! ([`super::Machine::peak_gops`]).
//!
//! The nominal peak (clock × lanes × two vector ops per cycle) is what the 3.5D paper's model
//! uses, and on a desktop core the row kernels come close to it. On a shared server slice they
//! may not: wide vectors lower the clock, virtual cores share physical ones, caches and the mesh
//! are shared with other tenants. There the model would believe the cores are ~4-10× faster than
//! they are and push `dim_t` (and tiles) far past what pays off. The probe measures the rate the
//! blocked engine can sustain when its ring buffers stay in the last-level cache, and the planner
//! scales the peak by it.
//!
//! The D3Q19 lattice kernel gets its own measurement: its collision (a division, many
//! dependent sums, 19 streams in and out) reaches a different share of the peak than the
//! 7-point kernel (on the 16-core server the stencil's share made the model expect 1.1-1.8×
//! naive from blocking, where it measured 0.8×).
//!
//! The lattice's memory side is measured too: a pull-streaming sweep reads 19 streams and
//! writes 19 others per node, and on small server slices those 38 streams reach far less of the
//! copy probe's bandwidth than two streams do (58% on a 2-core AVX2 EPYC slice, where naive
//! sweeps of a 192³ cavity ran 76-92 MLUPS against 144 from the copy rate; 71-81% on the
//! 16-core host). The probe steps its lattices with the naive engine's kernel, output-row
//! prefetch included (`FlowKernel::streaming`), so it measures the sweep the planner predicts (64% on the 2-core Zen 5 EPYC; on the 16-core host
//! the naive sweep then moved 82-94 GB/s against the copy probe's 78-93).
//!
//! Like the bandwidth, the results are cached on disk per boot (and per SIMD build, see
//! `probe_key`); `STENCIL35D_COMPUTE_EFFICIENCY` and `STENCIL35D_LATTICE_EFFICIENCY` set them
//! instead (a share of the peak in `(0, 1]`), and `STENCIL35D_LATTICE_STREAM_SHARE` the
//! lattice's share of the measured bandwidth.

use std::sync::Barrier;
use std::time::Instant;

use super::bandwidth::{boot_key, cached_measurement};
use super::pinned::on_pinned_threads;
use crate::cpu::rows::{Planes, RowKernel, WithKernel};
use crate::lbm::naive::SerialLattice;
use crate::lbm::{Axis, Lattice, Physics};
use crate::simd::{with_isa, Isa, WithIsa};
use crate::tuning::Tuning;
use crate::{DType, Grid, Level, Stencil};

/// Interior x and y of each thread's private grid (rows of 1 KiB in f32); z follows from the
/// footprint, twice the private cache.
const PLANE: [usize; 2] = [256, 64];
/// x and y of each thread's lattice for the lattice probe; z follows from the footprint.
const LATTICE_PLANE: [usize; 2] = [LATTICE_PROBE_ROW, 16];
/// Nodes per row of the lattice probe (the planner charges other rows relative to these).
pub(crate) const LATTICE_PROBE_ROW: usize = 128;
/// x and y of each thread's lattice for the lattice streaming probe (1.2 MiB planes).
const STREAM_PLANE: [usize; 2] = [128, 64];
/// How long every thread runs the kernel per round.
const SECONDS: f64 = 0.04;
/// Timed rounds; the median counts.
const ROUNDS: usize = 3;
/// Operations per 7-point update in the unit of the peak: 8 flops, 7 loads, 1 store.
const OPS_PER_UPDATE: f64 = 16.0;

/// The sustained share of `peak_gops` (the nominal all-core f32 peak) and where it came from.
pub(crate) fn measured_or_cached(
    cores: usize,
    private_bytes: usize,
    peak_gops: f64,
) -> (f64, String) {
    share_measured_or_cached(
        (
            Tuning::current().compute_efficiency,
            "STENCIL35D_COMPUTE_EFFICIENCY",
        ),
        "compute-llc",
        cores,
        1.0,
        || {
            let gops = measure_stencil_gops(cores, private_bytes)?;
            // Never above 1: a kernel faster than the nominal peak (turbo clocks, loads retired
            // beside the vector ops) leaves the paper's model as it is.
            Some((gops / peak_gops).clamp(0.01, 1.0))
        },
    )
}

/// The sustained share of `peak_gops` (the nominal all-core f32 peak) for the D3Q19 kernel,
/// whose updates count `ops_per_update` operations, and where it came from.
pub(crate) fn lattice_measured_or_cached(
    cores: usize,
    private_bytes: usize,
    peak_gops: f64,
    ops_per_update: usize,
) -> (f64, String) {
    share_measured_or_cached(
        (
            Tuning::current().lattice_efficiency,
            "STENCIL35D_LATTICE_EFFICIENCY",
        ),
        "compute-lattice",
        cores,
        0.0,
        || {
            let mlups = measure_lattice_mlups(cores, private_bytes)?;
            Some((mlups * ops_per_update as f64 / 1e3 / peak_gops).clamp(0.01, 1.0))
        },
    )
}

/// The share of `bandwidth_gbs` (the copy probe, all cores) a naive f32 D3Q19 sweep out of
/// cache moves at `bytes_per_update`, and where it came from.
pub(crate) fn lattice_stream_measured_or_cached(
    cores: usize,
    llc_bytes: usize,
    bandwidth_gbs: f64,
    bytes_per_update: usize,
) -> (f64, String) {
    share_measured_or_cached(
        (
            Tuning::current().lattice_stream_share,
            "STENCIL35D_LATTICE_STREAM_SHARE",
        ),
        // A key of its own, so a share cached by an earlier build's kernel (one without the
        // output-row prefetch) is not read as this kernel's.
        "lattice-stream-prefetch",
        cores,
        1.0,
        || {
            let mlups = measure_lattice_stream_mlups(cores, llc_bytes)?;
            Some((mlups * bytes_per_update as f64 / 1e3 / bandwidth_gbs).clamp(0.05, 1.0))
        },
    )
}

/// A share in `(0, 1]` that `measure` takes on `cores` threads, cached per boot under the name
/// `probe` (see `cached_measurement`); the tuning knob's value `set.0` (variable `set.1`) replaces it.
/// When the probe's arrays do not fit the memory available (`measure` gives `None`), the
/// share is `nominal`, said so and not cached.
fn share_measured_or_cached(
    set: (Option<f64>, &str),
    probe: &str,
    cores: usize,
    nominal: f64,
    measure: impl FnOnce() -> Option<f64>,
) -> (f64, String) {
    let (share, source) = cached_measurement(set, &probe_key(probe, cores), false, || {
        measure().unwrap_or(f64::NAN)
    });
    if share.is_finite() && share > 0.0 {
        (share, source)
    } else {
        (nominal, NOT_MEASURED.into())
    }
}

/// The source of a share the probe could not measure.
pub(crate) const NOT_MEASURED: &str =
    "nominal: not measured, the probe's arrays do not fit the memory available";

/// The cache key of a compute probe's share: per boot, thread count and SIMD build (instruction
/// set and `f32` lanes). The kernels' shares are of a peak that scales with the build's lanes,
/// and builds of equal lanes run at different rates (`wide`'s 8-lane vectors are two SSE halves
/// without AVX), so one build's share read by another misleads the model: on the 16-core host
/// an AVX-512 build that read an AVX2 build's shares planned D3Q19 `f32` 256³ at `dim_t` 4
/// 264×30 (1.15-1.21× naive) where its own lead to `dim_t` 2 260×12 (1.6-1.7×). The lattice
/// stream share, a share of the copy bandwidth, is keyed the same way.
fn probe_key(probe: &str, cores: usize) -> String {
    format!(
        "{} {probe} threads={cores} simd={} f32-lanes={}",
        boot_key(),
        Level::active().name(),
        Level::active().lanes(DType::F32)
    )
}

/// Rate of the f32 D3Q19 kernel on `threads` pinned threads whose lattices together take four
/// times `llc_bytes` (64 MiB to 1 GiB, as the bandwidth probe's arrays), so every step streams
/// from memory: million node updates per second, the median of 3 rounds of at least 3 steps.
pub fn measure_lattice_stream_mlups(threads: usize, llc_bytes: usize) -> Option<f64> {
    let total = (4 * llc_bytes).clamp(64 << 20, 1 << 30);
    lattice_rate(threads, total / threads.max(1), STREAM_PLANE, 1 << 16, true).map(|r| r / 1e6)
}

/// Rate of the f32 D3Q19 kernel (BGK, periodic, all bulk nodes) on `threads` pinned threads,
/// each stepping its own lattice (two copies together twice `private_bytes`), the median of 3
/// rounds of ~40 ms: million node updates per second.
pub fn measure_lattice_mlups(threads: usize, private_bytes: usize) -> Option<f64> {
    lattice_rate(threads, 2 * private_bytes, LATTICE_PLANE, 64, false).map(|r| r / 1e6)
}

/// Node updates per second of `threads` pinned threads, each stepping its own periodic f32
/// lattice of `plane` x and y and as many planes as fit `bytes` (two copies), 4 to `max_nz`,
/// stepped with the naive engine's kernel when `streaming`, else the blocked engine's (see
/// [`SerialLattice`]), at the active SIMD level.
fn lattice_rate(
    threads: usize,
    bytes: usize,
    plane: [usize; 2],
    max_nz: usize,
    streaming: bool,
) -> Option<f64> {
    median_rate(threads, |start| {
        // 19 populations of 4 bytes in two copies per node.
        let plane_bytes = plane[0] * plane[1] * 2 * 19 * 4;
        let nz = (bytes / plane_bytes).clamp(4, max_nz);
        let Ok(mut lat) = Lattice::<f32>::new([plane[0], plane[1], nz], Physics::bgk(0.8)) else {
            return sit_out(start);
        };
        for axis in [Axis::X, Axis::Y, Axis::Z] {
            lat.set_periodic(axis, true);
        }
        let job = LatticeRounds {
            start,
            lattice: lat,
            streaming,
        };
        with_isa(Level::active(), job)
    })
}

/// One thread's timed rounds of [`lattice_rate`] on its lattice.
struct LatticeRounds<'a> {
    start: &'a Barrier,
    lattice: Lattice<f32>,
    streaming: bool,
}

impl WithIsa for LatticeRounds<'_> {
    type Output = Vec<(f64, f64)>;

    fn call<S: Isa>(self) -> Vec<(f64, f64)> {
        let lat = if self.streaming {
            SerialLattice::<f32, S>::streaming(self.lattice)
        } else {
            SerialLattice::<f32, S>::new(self.lattice)
        };
        let Ok(mut lat) = lat else {
            return sit_out(self.start);
        };
        // One untimed step maps the second copy's pages.
        std::hint::black_box(lat.step());
        rounds(self.start, || {
            std::hint::black_box(lat.step());
            lat.cells()
        })
    }
}

/// Rate of the f32 7-point row kernel on `threads` pinned threads, each sweeping its own pair of
/// grids (together twice `private_bytes`), the median of 3 rounds of ~40 ms: 10⁹ operations per
/// second in the unit of the peak.
pub fn measure_stencil_gops(threads: usize, private_bytes: usize) -> Option<f64> {
    let per_second = median_rate(threads, |start| {
        let plane_bytes = (PLANE[0] + 2) * (PLANE[1] + 2) * std::mem::size_of::<f32>();
        let nz = (private_bytes / plane_bytes).clamp(4, 256);
        let inner = [PLANE[0], PLANE[1], nz];
        let Ok(mut a) = Grid::<f32>::random(inner.map(|d| d + 2), -1.0, 1.0, 7) else {
            return sit_out(start);
        };
        let mut b = a.clone();
        let cells: usize = inner.iter().product();
        rounds(start, || {
            let stencil = Stencil::seven_point(0.4, 0.1);
            crate::cpu::rows::dispatch(&stencil, Level::active(), Sweep { a: &a, b: &mut b });
            std::mem::swap(&mut a, &mut b);
            cells
        })
    });
    Some(per_second? * OPS_PER_UPDATE / 1e9)
}

/// The median over [`ROUNDS`] of the updates per second of all `threads` pinned threads
/// together: `work` sets up one thread's data and runs its rounds ([`rounds`]); a round's rate
/// is all threads' updates over the slowest thread's time. The median, not the best: one round
/// on a shared host can run far faster or slower than the engines will.
fn median_rate(threads: usize, work: impl Fn(&Barrier) -> Vec<(f64, f64)> + Sync) -> Option<f64> {
    let results = on_pinned_threads(threads, work);
    // A thread that could not take its arrays timed nothing: the others' rate would not be
    // the cores' rate.
    if results.len() < threads || results.iter().any(|t| t.len() < ROUNDS) {
        return None;
    }
    let mut rates: Vec<f64> = (0..ROUNDS)
        .filter_map(|r| {
            let updates: f64 = results.iter().map(|t| t.get(r).map_or(0.0, |x| x.0)).sum();
            let seconds = results
                .iter()
                .filter_map(|t| t.get(r))
                .map(|x| x.1)
                .reduce(f64::max)?;
            Some(updates / seconds.max(1e-9))
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.get(rates.len() / 2).copied()
}

/// What a thread whose arrays could not be allocated (the memory available, or the
/// `memory_bytes` knob, refused them) does instead of its rounds: it meets the others at each
/// round's start, so none of them waits for it forever, and times nothing.
fn sit_out(start: &Barrier) -> Vec<(f64, f64)> {
    for _ in 0..ROUNDS {
        start.wait();
    }
    Vec::new()
}

/// One thread's [`ROUNDS`] timed rounds, each started with the others at `start`: `step` runs
/// one unit of work and returns the updates it did; a round repeats it for [`SECONDS`] (and at
/// least 3 times). Returns (updates, seconds) per round.
fn rounds(start: &Barrier, mut step: impl FnMut() -> usize) -> Vec<(f64, f64)> {
    (0..ROUNDS)
        .map(|_| {
            start.wait();
            let t0 = Instant::now();
            let (mut n, mut updates) = (0usize, 0usize);
            while n < 3 || t0.elapsed().as_secs_f64() < SECONDS {
                updates += step();
                n += 1;
            }
            (updates as f64, t0.elapsed().as_secs_f64())
        })
        .collect()
}

/// One serial sweep of the interior of `a` into `b`.
struct Sweep<'a> {
    a: &'a Grid<f32>,
    b: &'a mut Grid<f32>,
}

impl WithKernel<f32> for Sweep<'_> {
    type Output = ();

    fn call<K: RowKernel<f32>>(self, kernel: K) {
        let [nx, ny, nz] = self.a.dims();
        let (pitch, plane) = (self.a.pitch(), self.a.plane_stride());
        let base = self.a.storage().as_ptr();
        let out = self.b.storage_mut().as_mut_ptr();
        let mut check = crate::simd::Tracker::new();
        for z in 1..nz - 1 {
            let planes = Planes::gather(1, |dz| {
                (base.wrapping_add((z as isize + dz) as usize * plane), pitch)
            });
            for y in 1..ny - 1 {
                // SAFETY: planes z-1..=z+1 of `a` hold rows y-1..=y+1 with columns 0..nx, so
                // reads at columns 0..nx stay inside them; `out` is `b`'s storage (disjoint from
                // `a`, same layout), and row y of plane z holds columns 1..nx-1.
                unsafe {
                    kernel.row(
                        &planes,
                        y,
                        out.wrapping_add(z * plane + y * pitch),
                        1,
                        nx - 1,
                        &mut check,
                    )
                };
            }
        }
        std::hint::black_box(check);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that cannot take its arrays sits out: nobody waits for it, and the rate of
    /// the others is not taken for the cores' rate.
    #[test]
    fn a_probe_thread_without_its_arrays_leaves_no_figure() {
        let arrived = std::sync::atomic::AtomicUsize::new(0);
        let one_sits_out = median_rate(2, |start| {
            if arrived.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                return sit_out(start);
            }
            rounds(start, || 1)
        });
        assert_eq!(one_sits_out, None);
        assert!(median_rate(2, |start| rounds(start, || 1)).is_some_and(|r| r > 0.0));
        let (share, source) =
            share_measured_or_cached((None, "UNSET"), "test-unfit-probe", 1, 0.5, || None);
        assert_eq!((share, source.as_str()), (0.5, NOT_MEASURED));
    }

    #[test]
    fn probe_keys_name_the_simd_width() {
        let key = probe_key("compute-lattice", 4);
        assert!(key.starts_with(&boot_key()), "{key}");
        assert!(key.contains("compute-lattice threads=4"), "{key}");
        let active = Level::active();
        let build = format!(
            "simd={} f32-lanes={}",
            active.name(),
            active.lanes(DType::F32)
        );
        assert!(key.ends_with(&build), "{key}");
    }
}
