//! The floating-point probe: how many fused multiply-adds per second the cores actually issue
//! with the SIMD vectors the engines use (the active level) — the compute roof's measured counterpart to
//! [`super::Machine::peak_gops`], which is computed from the clock and the vector width.

use std::time::Instant;

use crate::simd::{with_isa, Isa, Vector, WithIsa};
use crate::{DType, Lane, Level, Real, SimdVec};

/// Independent accumulators per thread: enough to cover FMA latency × FMA pipes.
const CHAINS: usize = 12;

/// Measured vector arithmetic rate of `threads` threads, each running a register-only loop of
/// independent fused multiply-adds for about `seconds`: 10⁹ lane operations per second, an FMA
/// lane counted as one operation (the unit of [`super::Machine::peak_gops`]; GFLOP/s is twice
/// this). `threads` is capped at four per core and `seconds` at 60 (non-finite: 60).
///
/// ```
/// use stencil35d::advanced::measure_fma_gops;
/// use stencil35d::DType;
/// assert!(measure_fma_gops(DType::F32, 1, 0.01) > 0.0);
/// ```
pub fn measure_fma_gops(dtype: DType, threads: usize, seconds: f64) -> f64 {
    // A measurement, not a workload: at most a few threads per core and a minute.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = threads.min(4 * cores);
    let seconds = if seconds.is_finite() {
        seconds.clamp(0.0, 60.0)
    } else {
        60.0
    };
    match dtype {
        DType::F32 => measure::<f32>(threads.max(1), seconds),
        DType::F64 => measure::<f64>(threads.max(1), seconds),
    }
}

fn measure<T: Real>(threads: usize, seconds: f64) -> f64 {
    let start = Instant::now();
    let lane_ops: f64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || fma_loop::<T>(t, seconds)))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0.0)).sum()
    });
    lane_ops / start.elapsed().as_secs_f64() / 1e9
}

/// Runs FMAs at the active SIMD level for about `seconds` and returns how many lane
/// operations it did.
fn fma_loop<T: Real>(seed: usize, seconds: f64) -> f64 {
    with_isa(
        Level::active(),
        FmaLoop::<T> {
            seed,
            seconds,
            _t: std::marker::PhantomData,
        },
    )
}

/// [`fma_loop`] at one level.
struct FmaLoop<T> {
    seed: usize,
    seconds: f64,
    _t: std::marker::PhantomData<T>,
}

impl<T: Real> WithIsa for FmaLoop<T> {
    type Output = f64;

    fn call<S: Isa>(self) -> f64 {
        type V<T, S> = Vector<T, S>;
        let a = V::<T, S>::splat(T::of(0.999_999));
        let b = V::<T, S>::splat(T::of(1e-7));
        let mut acc = [V::<T, S>::splat(T::of(1.0 + self.seed as f64 * 1e-3)); CHAINS];
        let inner = 4096;
        let start = Instant::now();
        let mut rounds = 0usize;
        while rounds == 0 || start.elapsed().as_secs_f64() < self.seconds {
            // SAFETY: with_isa picked a level the CPU has.
            acc = unsafe {
                S::enter(|| {
                    for _ in 0..inner {
                        for x in acc.iter_mut() {
                            *x = x.mul_add(a, b);
                        }
                    }
                    acc
                })
            };
            acc = std::hint::black_box(acc);
            rounds += 1;
        }
        (rounds * inner * CHAINS * V::<T, S>::LANES) as f64
    }
}
