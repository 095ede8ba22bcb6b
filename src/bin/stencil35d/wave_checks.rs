//! The checks of `run wave`'s options and model, made before anything is built: the memory
//! a shot needs, the model's velocities, the peak frequency against the grid, the time step
//! against stability and SEG-Y, and the options that need no model.

use stencil35d::memory::Footprint;
use stencil35d::{Error, Real};

use crate::checks::{approx, at_least, at_most, positive, shown};
use crate::wave::WaveArgs;

/// Grids of the field's size a shot holds at most on the host, while it runs: the wavefield's
/// four, the CPU engines' three of scratch, the model's values kept for the snapshots and a
/// snapshot's pressure. Preparing the shot holds fewer: the model's grid besides the
/// wavefield and the kept values.
pub const SHOT_GRIDS: u64 = 9;

/// Refuses a shot on `dims` that would not fit the `available` bytes of host memory (`None`:
/// unknown, nothing checked), before anything is built. The error names the largest cube that
/// fits where it is at least `smallest` cells a side (the smallest the shot's options take).
pub fn check_memory<T: Real>(
    dims: [usize; 3],
    smallest: usize,
    available: Option<u64>,
) -> Result<(), Error> {
    Footprint::grids(T::DTYPE, SHOT_GRIDS)
        .at_least(smallest)
        .with_label("in run wave (wavefield, solver scratch, model, snapshot)")
        .check(dims, 0, available)
}

/// Slowest and fastest velocities a model may hold, m/s. Sound travels at about 330 m/s in
/// air, 1,500 m/s in water and below 20 km/s in any rock or crystal (diamond: about 18 km/s):
/// a value outside these is a model in other units or a broken file, and would make the time
/// step absurd (1e-30 m/s makes it 3.6e30 s).
const VELOCITY_RANGE: (f64, f64) = (10.0, 20_000.0);

/// The slowest and the fastest of the velocities `cells` (with their cells, x, y, z) of the
/// model `model` (as the options name it). Errors: the first velocity outside
/// [`VELOCITY_RANGE`] (or not a number), with its cell and value.
pub fn velocity_range(
    cells: impl Iterator<Item = ([usize; 3], f64)>,
    model: &str,
) -> Result<(f64, f64), Error> {
    let (lo, hi) = VELOCITY_RANGE;
    let mut range = (f64::INFINITY, 0.0f64);
    for ([x, y, z], v) in cells {
        if !(lo..=hi).contains(&v) {
            return Err(Error::InvalidArgument(format!(
                "{model}: the velocity at cell x = {x}, y = {y}, z = {z} is {} m/s; velocities \
                 from {lo} to {hi} m/s are taken (sound travels at about 330 m/s in air, 1500 \
                 m/s in water and below 20000 m/s in any rock): is the model in m/s?",
                shown(v)
            )));
        }
        range = (range.0.min(v), range.1.max(v));
    }
    Ok(range)
}

/// Points per shortest wavelength below which the grid visibly disperses the waves: about 5
/// for high-order (fourth order and above) differences in space (Levander, Geophysics 53,
/// 1988; Alford, Kelly & Boore, Geophysics 39, 1974, for the second order's 10 or more).
const POINTS_PER_WAVELENGTH: f64 = 5.0;

/// The highest frequency a Ricker wavelet carries, over its peak frequency: its spectrum
/// `(f/fp)²·exp(−(f/fp)²)` falls to 3% of its peak at 2.5·fp (0.3% at 3·fp).
const RICKER_TOP: f64 = 2.5;

/// Refuses a Ricker peak frequency (--freq, positive: [`check_options`]) above the grid's
/// Nyquist frequency for the slowest velocity `v_min` (`v_min / 2h`: shorter waves do not
/// exist on the grid); warns on stderr when the wavelet's content up to [`RICKER_TOP`] times
/// the peak has fewer than [`POINTS_PER_WAVELENGTH`] cells per shortest wavelength, and when
/// the recording ends before the wavelet peaks.
pub fn check_frequency(args: &WaveArgs, v_min: f64) -> Result<(), Error> {
    let h = args.spacing;
    let nyquist = v_min / (2.0 * h);
    let resolved = v_min / (RICKER_TOP * POINTS_PER_WAVELENGTH * h);
    if args.freq > nyquist {
        return Err(Error::InvalidArgument(format!(
            "--freq {} Hz is above the grid's Nyquist frequency, {} Hz (the slowest velocity, \
             {} m/s, over twice the {} m spacing): shorter waves do not exist on the grid; use \
             --freq at most {} Hz ({} Hz keeps {POINTS_PER_WAVELENGTH} cells per shortest \
             wavelength), or a smaller --spacing",
            shown(args.freq),
            approx(nyquist),
            shown(v_min),
            shown(h),
            at_most(nyquist),
            at_most(resolved)
        )));
    }
    if args.freq > resolved {
        eprintln!(
            "warning: --freq {} Hz: the Ricker wavelet carries frequencies up to about {RICKER_TOP} \
             times its peak, whose shortest wavelength at {} m/s spans {:.1} cells; below \
             {POINTS_PER_WAVELENGTH} cells the grid disperses the waves (use --freq at most {} \
             Hz or a smaller --spacing)",
            shown(args.freq),
            shown(v_min),
            v_min / (RICKER_TOP * args.freq * h),
            at_most(resolved)
        );
    }
    // The source's Ricker wavelet peaks 1/f after the start: a shorter recording holds only
    // its onset, near-zero values that the gather's picture would scale to full contrast.
    let peak = 1.0 / args.freq;
    if args.time <= peak {
        eprintln!(
            "warning: --time {} s ends before the source's {} Hz Ricker wavelet peaks at {} s \
             (it is delayed by 1/freq): the gather holds only the wavelet's onset; record \
             longer than {} s or raise --freq",
            shown(args.time),
            shown(args.freq),
            approx(peak),
            approx(peak)
        );
    }
    Ok(())
}

/// Longest time step SEG-Y records, microseconds (a signed 16-bit sample interval).
const MAX_DT_US: f64 = stencil35d::output::SEGY_MAX_16 as f64;

/// The time step: --dt, refused unless positive, a whole number of microseconds from 1 to
/// [`MAX_DT_US`] and stable; or 80% of the stability limit `limit` (seconds) in whole
/// microseconds. Errors also when the limit is below 1 µs, the shortest step SEG-Y records.
pub fn time_step(args: &WaveArgs, limit: f64, v_max: f64) -> Result<f64, Error> {
    if limit < 1e-6 {
        return Err(Error::Unstable(format!(
            "--spacing {} m with velocities up to {} m/s needs a time step below {} s for \
             order {} to be stable, shorter than 1 µs, the shortest --dt SEG-Y records: use \
             --spacing of at least {} m",
            shown(args.spacing),
            shown(v_max),
            approx(limit),
            args.order,
            at_least(args.spacing * 1e-6 / limit)
        )));
    }
    let Some(dt) = args.dt else {
        // Divided rather than multiplied by 1e-6, so that 2886 µs is the double nearest
        // 0.002886 s, which a message can show and the user can type back.
        return Ok((0.8 * limit * 1e6).floor().clamp(1.0, MAX_DT_US) / 1e6);
    };
    positive("--dt", dt, "the time step")?;
    let us = dt * 1e6;
    if (us - us.round()).abs() >= 1e-6 {
        return Err(Error::InvalidArgument(format!(
            "--dt {} s is not a whole number of microseconds, which SEG-Y records need",
            shown(dt)
        )));
    }
    if !(1.0 - 1e-6..=MAX_DT_US + 1e-6).contains(&us) {
        return Err(Error::InvalidArgument(format!(
            "--dt {} s is outside the 1 to {MAX_DT_US} microseconds a SEG-Y sample interval \
             holds",
            shown(dt)
        )));
    }
    if dt > limit {
        // The limit floored to a tenth of a microsecond, so that it reads below the refused
        // step (a whole number of microseconds above it), and the largest whole step at most
        // the limit, which the check above accepts.
        let below = (limit * 1e7).floor() / 1e7;
        let largest = (limit * 1e6).floor().min(MAX_DT_US) / 1e6;
        return Err(Error::Unstable(format!(
            "--dt {} s exceeds the stability limit of order {} at {} m/s on a {} m spacing, {} \
             s: use --dt {} or less",
            shown(dt),
            args.order,
            shown(v_max),
            shown(args.spacing),
            shown(below),
            shown(largest)
        )));
    }
    Ok(dt)
}

/// The checks of the options that need no model, made before the model is built or read:
/// the order, the spacing, the recording time, the frequency's sign and the receivers'
/// spacing.
pub fn check_options(args: &WaveArgs) -> Result<(), Error> {
    if ![2, 4, 6, 8].contains(&args.order) {
        return Err(Error::InvalidArgument(format!(
            "--order {}: the space orders are 2, 4, 6 and 8",
            args.order
        )));
    }
    positive("--spacing", args.spacing, "the cell size")?;
    positive("--time", args.time, "the recording time")?;
    positive("--freq", args.freq, "the peak frequency")?;
    if args.receiver_spacing == 0 {
        return Err(Error::InvalidArgument(
            "--receiver-spacing 0: receivers lie at least 1 cell apart".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shot_larger_than_memory_is_refused_before_it_is_built() {
        let gib = 1u64 << 30;
        // 9 grids of 200³ f32 take about 0.3 GB, of 400³ about 2.3 GB.
        assert!(check_memory::<f32>([200; 3], 1, Some(gib)).is_ok());
        match check_memory::<f32>([400; 3], 1, Some(gib)) {
            Err(Error::OutOfMemory { largest, .. }) => {
                assert!((200..400).contains(&largest), "{largest}")
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        // A shot whose layers take 350 cells a side: no cube that fits (297³) is large enough.
        let err = check_memory::<f32>([400; 3], 350, Some(gib)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::OutOfMemory {
                    largest: 0,
                    smallest: 350,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("not even the smallest this kernel takes, 350³, fits"),
            "{err}"
        );
        assert!(check_memory::<f64>([300; 3], 1, Some(gib)).is_err());
        assert!(check_memory::<f64>([300; 3], 1, None).is_ok());
    }
}
