//! Shot gathers as figures, drawn as seismologists draw them: receivers across, time increasing
//! downward, amplitudes in a red–white–blue map clipped symmetrically at the 99th percentile of
//! |amplitude|, so that weak reflections stay visible next to the direct wave, with title, axes
//! in metres and seconds, and colour bar (the house style of [`super::write_png_slice`]).

use std::ops::Range;
use std::path::Path;

use super::figure::{write_png_slice, PictureAxis, PictureLayout, PictureOptions};
use super::png::{ColorMap, Slice};
use crate::{Error, Result};

/// The field's width in pixels: fewer receivers are widened by a whole factor to at least
/// `MIN_WIDTH`, more than `MAX_WIDTH` are binned down to it.
const MIN_WIDTH: usize = 480;
const MAX_WIDTH: usize = 960;
/// The field's height in pixels, likewise for samples.
const MIN_HEIGHT: usize = 480;
const MAX_HEIGHT: usize = 800;
/// The share of |amplitude| values below the clip level.
const CLIP_QUANTILE: f64 = 0.99;

/// Writes a shot gather as a PNG figure at `path`: `traces` holds `receivers` traces of
/// `samples` samples each, row-major (trace by trace), sampled every `dt_s` seconds from time
/// 0; receiver `r` lies at `first + r · spacing` along the x axis labelled `x_label` (metres
/// along a line, "receiver position (m)", or trace numbers). Receivers run
/// across, time down; where there are more traces or samples than pixels, each pixel shows the
/// value of largest magnitude among those it covers, so that no wavelet is lost. Non-finite
/// values are grey. Returns where the field and the colour bar lie in the picture.
///
/// Errors: `traces` does not hold `receivers · samples` values or holds none, `dt_s` is not
/// positive, the receiver positions are not finite or the spacing is zero, drawing or I/O.
pub fn write_gather_png(
    path: &Path,
    traces: &[f32],
    [receivers, samples]: [usize; 2],
    dt_s: f64,
    [first_m, spacing_m]: [f64; 2],
    x_label: &str,
    title: &str,
) -> Result<PictureLayout> {
    check(traces, [receivers, samples], dt_s, [first_m, spacing_m])?;
    let width = display_len(receivers, MIN_WIDTH, MAX_WIDTH);
    let height = display_len(samples, MIN_HEIGHT, MAX_HEIGHT);
    let slice = resample(traces, [receivers, samples], [width, height]);
    let clip = clip_level(traces);
    let x_axis = PictureAxis {
        label: x_label.into(),
        origin: first_m - spacing_m / 2.0,
        cell_size: receivers as f64 * spacing_m / width as f64,
    };
    let y_axis = PictureAxis {
        label: "time (s)".into(),
        origin: (samples as f64 - 0.5) * dt_s,
        cell_size: -(samples as f64 * dt_s) / height as f64,
    };
    let options = PictureOptions::new(title, "amplitude (clipped at the 99th percentile)")
        .with_axes(x_axis, y_axis)
        .with_map(ColorMap::RedBlue)
        .with_range(-clip, clip)
        .with_scale(1);
    write_png_slice(path, &slice, &options)
}

/// An error unless the gather's sizes, sampling and receiver positions make sense.
fn check(traces: &[f32], [receivers, samples]: [usize; 2], dt_s: f64, x: [f64; 2]) -> Result<()> {
    if receivers.checked_mul(samples) != Some(traces.len()) || traces.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "a gather of {receivers} traces of {samples} samples needs {receivers}·{samples} \
             values (and at least one), got {}",
            traces.len()
        )));
    }
    if !(dt_s > 0.0 && dt_s.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "a gather's sample interval must be positive, got {dt_s} s"
        )));
    }
    if !(x.iter().all(|v| v.is_finite()) && x[1] != 0.0) {
        return Err(Error::InvalidArgument(format!(
            "a gather's receivers need a finite first position and a non-zero spacing, got \
             {} m and {} m",
            x[0], x[1]
        )));
    }
    Ok(())
}

/// Pixels for `n` values along one side: `n` times the whole factor that reaches `min`,
/// `n` itself up to `max`, and `max` beyond.
fn display_len(n: usize, min: usize, max: usize) -> usize {
    if n < min {
        n * min.div_ceil(n)
    } else {
        n.min(max)
    }
}

/// The inputs (of `n`) that each of `m` pixels covers: every input repeated when `m ≥ n`,
/// consecutive bins of about `n / m` inputs when `m < n`.
fn bins(n: usize, m: usize) -> impl Iterator<Item = Range<usize>> {
    (0..m).map(move |k| {
        let start = k * n / m;
        start..((k + 1) * n / m).max(start + 1)
    })
}

/// The value of largest magnitude, or the first non-finite one (0 for none).
fn peak(values: impl Iterator<Item = f32>) -> f32 {
    values.fold(0.0, |best, v| {
        if best.is_finite() && (!v.is_finite() || v.abs() > best.abs()) {
            v
        } else {
            best
        }
    })
}

/// The gather as a `width × height` slice, receivers across and time down, each pixel the
/// peak of the traces and samples it covers.
fn resample(
    traces: &[f32],
    [receivers, samples]: [usize; 2],
    [width, height]: [usize; 2],
) -> Slice {
    let columns: Vec<Vec<f32>> = traces
        .chunks_exact(samples)
        .map(|trace| {
            let bins = bins(samples, height);
            bins.map(|b| peak(trace[b].iter().copied())).collect()
        })
        .collect();
    let receiver_bins: Vec<Range<usize>> = bins(receivers, width).collect();
    let mut values = Vec::with_capacity(width * height);
    for row in 0..height {
        for b in &receiver_bins {
            values.push(f64::from(peak(columns[b.clone()].iter().map(|c| c[row]))));
        }
    }
    Slice {
        width,
        height,
        values,
    }
}

/// The clip level: the 99th percentile of the finite |amplitude| values, their maximum where
/// that percentile is 0, and 1 for a gather of zeros.
fn clip_level(traces: &[f32]) -> f64 {
    let mut magnitudes: Vec<f32> = traces
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| v.abs())
        .collect();
    if magnitudes.is_empty() {
        return 1.0;
    }
    let k = ((magnitudes.len() - 1) as f64 * CLIP_QUANTILE).round() as usize;
    let (_, &mut quantile, above) = magnitudes.select_nth_unstable_by(k, f32::total_cmp);
    let largest = above.iter().fold(quantile, |m, &v| m.max(v));
    [quantile, largest, 1.0]
        .into_iter()
        .map(f64::from)
        .find(|&v| v > 0.0)
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("stencil35d-gather-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The picture at `path` as (width, height, RGB bytes).
    fn decode(path: &Path) -> (usize, usize, Vec<u8>) {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        (info.width as usize, info.height as usize, buf)
    }

    /// The colour of pixel (`x`, `y`) of an RGB picture `width` pixels wide.
    fn pixel(rgb: &[u8], width: usize, x: usize, y: usize) -> [i32; 3] {
        let i = (y * width + x) * 3;
        [rgb[i], rgb[i + 1], rgb[i + 2]].map(i32::from)
    }

    #[test]
    fn writes_a_png_of_the_expected_size() {
        let dir = scratch("size");
        let path = dir.join("gather.png");
        let (receivers, samples) = (48, 1500);
        let traces: Vec<f32> = (0..receivers * samples)
            .map(|i| ((i % samples) as f32 * 0.05 - (i / samples) as f32).sin())
            .collect();
        let layout = write_gather_png(
            &path,
            &traces,
            [receivers, samples],
            0.001,
            [0.0, 10.0],
            "receiver position (m)",
            "shot 1",
        )
        .unwrap();
        assert_eq!((layout.field.width, layout.field.height), (480, 800));
        let (w, h, _) = decode(&path);
        assert_eq!((w, h), (layout.width, layout.height));
        assert!(
            (600..900).contains(&w) && (850..1000).contains(&h),
            "{w}x{h}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn time_runs_down_and_weak_events_survive_the_clip() {
        let dir = scratch("clip");
        let path = dir.join("gather.png");
        let (receivers, samples) = (60, 600);
        let mut traces: Vec<f32> = (0..receivers * samples)
            .map(|i| {
                if i % samples < samples / 2 {
                    0.01
                } else {
                    -0.01
                }
            })
            .collect();
        traces[30 * samples + 300] = 100.0;
        let layout = write_gather_png(
            &path,
            &traces,
            [receivers, samples],
            0.002,
            [0.0, 5.0],
            "receiver position (m)",
            "t",
        )
        .unwrap();
        let (w, _, rgb) = decode(&path);
        let f = layout.field;
        let [r, _, b] = pixel(&rgb, w, f.x + 5, f.y + 5);
        assert!(
            b > r + 60,
            "early, positive samples are blue at the top: {r} {b}"
        );
        let [r, _, b] = pixel(&rgb, w, f.x + 5, f.y + f.height - 5);
        assert!(
            r > b + 60,
            "late, negative samples are red at the bottom: {r} {b}"
        );
        let bar = layout.colour_bar;
        let top = pixel(&rgb, w, bar.x + 5, bar.y);
        assert_eq!(top, pixel(&rgb, w, f.x + 5, f.y + 5), "0.01 is at the clip");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn zeros_and_single_samples_do_not_panic() {
        let dir = scratch("zeros");
        let path = dir.join("gather.png");
        let one = write_gather_png(
            &path,
            &[0.0],
            [1, 1],
            0.004,
            [0.0, 1.0],
            "receiver position (m)",
            "one",
        )
        .unwrap();
        assert_eq!((one.field.width, one.field.height), (480, 480));
        write_gather_png(
            &path,
            &[0.0; 200],
            [10, 20],
            0.004,
            [100.0, -2.0],
            "receiver position (m)",
            "zeros",
        )
        .unwrap();
        let nan = [f32::NAN, 1.0, f32::INFINITY, -1.0];
        write_gather_png(
            &path,
            &nan,
            [2, 2],
            0.004,
            [0.0, 1.0],
            "receiver position (m)",
            "non-finite",
        )
        .unwrap();
        assert!(decode(&path).0 > 480);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn refuses_inconsistent_gathers() {
        let path = std::env::temp_dir().join("stencil35d-gather-never-written.png");
        let bad = [
            write_gather_png(
                &path,
                &[0.0; 6],
                [2, 4],
                0.001,
                [0.0, 1.0],
                "receiver position (m)",
                "size",
            ),
            write_gather_png(
                &path,
                &[],
                [0, 4],
                0.001,
                [0.0, 1.0],
                "receiver position (m)",
                "empty",
            ),
            write_gather_png(&path, &[0.0; 8], [2, 4], 0.0, [0.0, 1.0], "x", "dt"),
            write_gather_png(&path, &[0.0; 8], [2, 4], 0.001, [0.0, 0.0], "x", "spacing"),
            write_gather_png(&path, &[0.0; 8], [2, 4], 0.001, [f64::NAN, 1.0], "x", "x"),
        ];
        for result in bad {
            assert!(
                matches!(result, Err(Error::InvalidArgument(_))),
                "{result:?}"
            );
        }
        assert!(!path.exists());
    }

    #[test]
    fn resampling_keeps_peaks_and_the_clip_is_the_99th_percentile() {
        let ranges = |n, m| bins(n, m).collect::<Vec<_>>();
        assert_eq!(ranges(3, 6), [0..1, 0..1, 1..2, 1..2, 2..3, 2..3]);
        assert_eq!(ranges(10, 3), [0..3, 3..6, 6..10]);
        assert_eq!(peak([1.0, -3.0, 2.0].into_iter()), -3.0);
        assert!(peak([1.0, f32::NAN, 5.0].into_iter()).is_nan());
        assert_eq!(
            (display_len(48, 480, 960), display_len(700, 480, 960)),
            (480, 700)
        );
        assert_eq!(
            (display_len(7, 480, 960), display_len(5000, 480, 960)),
            (483, 960)
        );
        let slice = resample(&[1.0, -4.0, 2.0, 0.5, 3.0, -1.0], [2, 3], [1, 2]);
        assert_eq!(
            slice.values,
            [1.0, -4.0],
            "peaks of samples 0..1 and 1..3 over both traces"
        );
        let ramp: Vec<f32> = (0..1000).map(|i| -(i as f32) / 1000.0).collect();
        assert_eq!(clip_level(&ramp), 0.989f32 as f64);
        let mut sparse = vec![0.0f32; 1000];
        sparse[7] = -2.5;
        assert_eq!(
            clip_level(&sparse),
            2.5,
            "the maximum where the percentile is 0"
        );
        assert_eq!(clip_level(&[0.0; 10]), 1.0);
    }
}
