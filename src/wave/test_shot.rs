//! A random shot for the engine tests and the differences between two runs (the unit tests of
//! the GPU kernels' emulator and the integration suites share them).

use rand::{Rng, SeedableRng};

use super::{Receiver, Source, WaveKernel, Wavefield, Wavelet};
use crate::rel_diff::nan_max;
use crate::{Grid, Real};

/// A test shot: a random velocity model (1,500-2,500 m/s), a random initial field (zero
/// boundary layer, `u⁻ = 0.9·u`), one source near the centre whose samples are large enough
/// that the injected values are of the field's order (a source added at the wrong level or
/// cell shows in `f32` too), and receivers at a corner, the centre, the far corner and along a
/// line of five. For the engine tests; panics on grids too small for the kernel.
pub fn random_shot<T: Real>(kernel: WaveKernel, dims: [usize; 3], seed: u64) -> Wavefield<T> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let velocity = Grid::from_fn(dims, |_, _, _| T::of(rng.random_range(1500.0..2500.0))).unwrap();
    let r = kernel.radius();
    let h = kernel.spacing;
    let mut f = Wavefield::new(kernel, &velocity).unwrap();
    let inside = |c: [usize; 3]| (0..3).all(|a| c[a] >= r && c[a] < dims[a] - r);
    let u = Grid::from_fn(dims, |x, y, z| {
        let v = if inside([x, y, z]) {
            rng.random_range(-1.0..1.0)
        } else {
            0.0
        };
        T::of(v)
    })
    .unwrap();
    let prev = Grid::from_fn(dims, |x, y, z| u.get(x, y, z) * T::of(0.9)).unwrap();
    f.set_state(&u, &prev).unwrap();
    let mid: [f64; 3] = std::array::from_fn(|a| (dims[a] as f64 / 2.0 - 0.3) * h[a]);
    // Samples large enough that the injected values (dt²/h³ times them) are of the field's
    // order, so a source added at the wrong level or cell shows in f32 too.
    let wavelet = Wavelet::Samples((0..64).map(|_| rng.random_range(-1e9..1e9)).collect());
    f.add_source(Source {
        position: mid,
        wavelet,
    })
    .unwrap();
    let lo: [f64; 3] = std::array::from_fn(|a| (r as f64 + 0.25) * h[a]);
    let hi: [f64; 3] = std::array::from_fn(|a| (dims[a] - r - 1) as f64 * h[a]);
    let mut receivers = vec![Receiver::at(lo), Receiver::at(mid), Receiver::at(hi)];
    receivers.extend(Receiver::line(lo, [hi[0], lo[1], hi[2]], 5).unwrap());
    f.add_receivers(&receivers).unwrap();
    f
}

/// Largest relative difference of two runs: fields, previous fields, auxiliary fields and
/// traces (each field relative to its largest value, the traces relative to the largest of
/// `b`'s samples and pressures).
pub fn diff<T: Real>(a: &Wavefield<T>, b: &Wavefield<T>) -> f64 {
    let fields = [
        a.pressure().max_rel_diff(b.pressure()).unwrap(),
        a.previous().max_rel_diff(b.previous()).unwrap(),
        a.auxiliary().max_rel_diff(b.auxiliary()).unwrap(),
    ];
    let mut worst = fields.into_iter().fold(0.0, nan_max);
    // A sample interpolates field values with weights in [0, 1], so its rounding error is
    // bounded by the unit roundoff times those values, not by the sample itself, which is
    // small where they cancel: the traces are compared relative to the largest magnitude of
    // any sample and of the field. A receiver whose true amplitude is below the tolerance
    // times that scale is then not checked; the random shot's field is of order one
    // throughout, so a wrong cell, weight or step still shows.
    let field = b
        .pressure()
        .iter()
        .map(|(_, v)| v.to_f64().unwrap_or(0.0).abs());
    let samples = b.traces().iter().flatten().map(|v| v.abs());
    let scale = field.chain(samples).fold(1e-30, f64::max);
    for (ta, tb) in a.traces().iter().zip(b.traces()) {
        assert_eq!(ta.len(), tb.len());
        for (x, y) in ta.iter().zip(tb) {
            worst = nan_max(worst, (x - y).abs() / scale);
        }
    }
    worst
}

/// Whether two runs are equal bit for bit: fields, previous fields, auxiliary fields, traces.
pub fn same<T: Real>(a: &Wavefield<T>, b: &Wavefield<T>) -> bool {
    a.pressure() == b.pressure()
        && a.previous() == b.previous()
        && a.auxiliary() == b.auxiliary()
        && a.traces() == b.traces()
}
