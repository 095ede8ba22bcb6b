//! The data layer of `stencil35d compare`: a tiny comparison gives finite, related numbers, its
//! CSV and JSON read back to the same values, and the charts render (also with GPU rows).

use std::path::PathBuf;

use stencil35d::perf::{
    compare, from_csv, from_json, roofline_png, speedup_png, to_csv, to_json, write_all,
    write_data, Backend, CompareConfig, Comparison, Roof,
};
use stencil35d::{Engine, Error};

/// A fresh directory for this test's files (the system's temporary directory, so the test
/// binary also runs where the build tree does not exist, e.g. from the GPU bundle).
fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil35d-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks that `path` is a chart as the plotting code draws it: the PNG signature, an IHDR of
/// 1000 x 680 pixels (the charts' fixed size), 8-bit RGB pixels that decode, and not blank:
/// more than 16 distinct colours (background, grid, axes, text and the series' colours; an
/// empty plot area has a handful) and at least 1% of the pixels off the background colour.
fn assert_chart(path: &std::path::Path) {
    let bytes = std::fs::read(path).unwrap();
    let name = path.display();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}: not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR", "{name}: no IHDR first");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (1000, 680), "{name}: size in the IHDR");
    let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut rgb).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb, "{name}");
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "{name}");
    rgb.truncate(info.buffer_size());
    let pixels: Vec<&[u8]> = rgb.chunks_exact(3).collect();
    assert_eq!(pixels.len(), 1000 * 680);
    let colours: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    let background = pixels[0];
    let drawn = pixels.iter().filter(|&&p| p != background).count();
    assert!(
        colours.len() > 16 && drawn * 100 >= pixels.len(),
        "{name}: {} colours, {drawn} pixels drawn",
        colours.len()
    );
}

fn tiny() -> Comparison {
    let mut config = CompareConfig::new([14, 13, 12], 2);
    config.repeat = 2;
    compare(&config, |_| {}).unwrap()
}

#[test]
fn tiny_comparison_has_finite_related_rows() {
    let c = tiny();
    assert_eq!(c.rows.len(), 5 * 4, "5 kernels x 4 engines");
    assert_eq!(c.failures().count(), 0);
    // The wave equation's 20-cell layers do not fit 12 planes: the comparison says what ran.
    assert_eq!(c.fitted.len(), 1, "{:?}", c.fitted);
    assert!(
        c.fitted[0].starts_with("wave:8: every face free instead of absorbing layers"),
        "{:?}",
        c.fitted
    );
    assert!(stencil35d::perf::table(&c).contains("fitted: wave:8"));
    for row in &c.rows {
        assert_eq!(row.backend, Backend::of(row.engine));
        if row.backend == Backend::Cpu {
            let m = row.measured.as_ref().expect("CPU engines always run");
            for v in [
                m.seconds,
                m.mups,
                m.gflops,
                m.effective_gbs,
                m.intensity,
                m.achieved_gops,
                m.roofline_mups,
                m.roofline_fraction,
            ] {
                assert!(v.is_finite() && v > 0.0, "{row:?}");
            }
            assert!(m.runs >= 1 && m.runs <= 2);
            let s = m.speedup_vs_naive.unwrap();
            if row.engine == Engine::Naive {
                assert_eq!(s, 1.0);
            }
            assert!(m.gpu_speedup.is_none());
        }
        match (&row.measured, c.gpu.is_some()) {
            (None, _) => assert!(row.note.starts_with("not available"), "{row:?}"),
            (Some(m), _) if row.backend == Backend::Gpu => {
                assert!(m.gpu_speedup.unwrap() > 0.0);
                assert!(m.gpu_speedup_with_transfer.unwrap() <= m.gpu_speedup.unwrap());
            }
            _ => {}
        }
    }
}

#[test]
fn csv_and_json_round_trip_and_files_are_written() {
    let c = tiny();
    assert_eq!(from_csv(&to_csv(&c)).unwrap(), c.rows);
    assert_eq!(from_json(&to_json(&c)).unwrap(), c);
    let dir = out_dir("compare-files");
    write_data(&c, &dir).unwrap();
    roofline_png(&c, &dir.join("roofline.png")).unwrap();
    speedup_png(&c, &dir.join("speedup.png")).unwrap();
    for name in ["compare.csv", "compare.json"] {
        let len = std::fs::metadata(dir.join(name)).unwrap().len();
        assert!(len > 100, "{name} has {len} bytes");
    }
    assert_chart(&dir.join("roofline.png"));
    assert_chart(&dir.join("speedup.png"));
    let csv = std::fs::read_to_string(dir.join("compare.csv")).unwrap();
    assert_eq!(from_csv(&csv).unwrap(), c.rows);
    assert!(from_csv("kernel,engine\nstar7,naive\n").is_err());
    assert!(from_json("{}").is_err());
    std::fs::remove_dir_all(&dir).ok();
}

/// A chart that cannot be written fails `write_all` with an error naming the chart the user
/// asked for, not the hidden temporary file it is staged in; none of the four outputs is
/// written and no temporary file is left. The failure is provoked by a directory where the
/// chart's temporary file goes (`.NAME.stencil35d-<pid>.tmp` beside the target, as
/// `output::Staged` names it): the chart's own staged write cannot rename its bytes over it.
#[test]
fn a_chart_that_cannot_be_written_is_named_as_the_user_knows_it() {
    let c = tiny();
    for chart in ["roofline.png", "speedup.png"] {
        let dir = out_dir(&format!("compare-chart-error-{chart}"));
        let blocker = format!(".{chart}.stencil35d-{}.tmp", std::process::id());
        std::fs::create_dir_all(dir.join(&blocker)).unwrap();
        let err = write_all(&c, &dir).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(&err, Error::Io { path, .. } if path == &dir.join(chart)),
            "{message}"
        );
        assert!(!message.contains(&blocker), "{message}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, [blocker], "{chart}: files left beside the blocker");
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// The charts with GPU rows, whether or not this machine has a GPU: the CPU rows of a real
/// tiny run plus made-up GPU rows 40x faster.
#[test]
fn charts_render_with_gpu_rows() {
    let mut c = tiny();
    c.gpu = Some(Roof {
        device: "made-up GPU".into(),
        peak_gops: 60_000.0,
        bandwidth_gbs: 3000.0,
    });
    for row in c.rows.iter_mut().filter(|r| r.backend == Backend::Gpu) {
        let scale = if row.engine.is_blocked() { 2.0 } else { 1.0 };
        let mut m = gpu_measurement(scale);
        m.dim_t = if row.engine.is_blocked() { 4 } else { 1 };
        row.measured = Some(m);
        row.note.clear();
    }
    let dir = out_dir("compare-gpu-charts");
    roofline_png(&c, &dir.join("roofline.png")).unwrap();
    speedup_png(&c, &dir.join("speedup.png")).unwrap();
    assert_chart(&dir.join("roofline.png"));
    assert_chart(&dir.join("speedup.png"));
    std::fs::remove_dir_all(&dir).ok();
}

fn gpu_measurement(scale: f64) -> stencil35d::perf::Measured {
    stencil35d::perf::Measured {
        threads: 1,
        dim_t: 1,
        tile: [32, 32],
        runs: 1,
        seconds: 0.01 / scale,
        transfer_seconds: 0.02,
        updates: 1_000_000,
        mups: 40_000.0 * scale,
        gflops: 300.0 * scale,
        effective_gbs: 300.0 * scale,
        predicted_mups: 40_000.0,
        intensity: scale,
        achieved_gops: 800.0 * scale,
        roofline_mups: 100_000.0,
        bound: stencil35d::plan::Bound::Memory,
        roofline_fraction: 0.4,
        speedup_vs_naive: Some(scale),
        gpu_speedup: Some(40.0 * scale),
        gpu_speedup_with_transfer: Some(10.0),
    }
}

#[test]
fn zero_threads_or_a_bad_budget_is_an_error() {
    let mut config = CompareConfig::new([14, 13, 12], 2);
    config.threads = Some(0);
    assert!(matches!(
        compare(&config, |_| {}),
        Err(Error::InvalidArgument(_))
    ));
    let mut config = CompareConfig::new([14, 13, 12], 2);
    config.budget_seconds = f64::NAN;
    assert!(matches!(
        compare(&config, |_| {}),
        Err(Error::InvalidArgument(_))
    ));
}
