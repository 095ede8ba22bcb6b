//! Bad input to the measuring and picture tools of the command line (`bench`, `compare`,
//! `filter`, `probe`) and to the 2D filter and border names: each is refused at once with a
//! clear error naming the option, never a panic, an abort, a hang or a silent coercion; a
//! failed `compare` leaves no partial results behind.

#[path = "setup/mod.rs"]
#[allow(dead_code)]
mod setup;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs the command-line tool with `args`, killed after 20 s: whether it succeeded, and its
/// stdout and stderr. Fails the test when it had to be killed.
fn cli(args: &[&str]) -> (bool, String, String) {
    let (out, took, killed) = setup::cli_within(args, Duration::from_secs(20));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!killed, "{args:?} ran for {took:?}: {stderr}");
    (out.status.success(), stdout, stderr)
}

/// Runs `args`, which must fail quickly without a panic; its stderr.
fn refused(args: &[&str]) -> String {
    let (ok, _, stderr) = cli(args);
    assert!(!ok, "{args:?} was accepted: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(stderr.contains("error"), "{args:?}: {stderr}");
    stderr
}

/// Asserts that `args` is refused with a message holding every one of `words`.
fn refused_with(args: &[&str], words: &[&str]) {
    let stderr = refused(args);
    for w in words {
        assert!(stderr.contains(w), "{args:?}: '{w}' missing from: {stderr}");
    }
}

/// A fresh, empty temporary directory for test `name`.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "stencil35d-cli-tools-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `path` as a `&str`.
fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The names of the files in `dir`, sorted (none when a failed run removed the directory it
/// had made).
fn listing(dir: &Path) -> Vec<String> {
    if !dir.exists() {
        return Vec::new();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One PNG chunk: length, type, data and CRC.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let crc_input: Vec<u8> = kind.iter().chain(data).copied().collect();
    let mut crc = 0xffff_ffffu32;
    for &b in &crc_input {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend(crc_input);
    out.extend((!crc).to_be_bytes());
    out
}

/// A grey 8-bit PNG whose header declares `w × h` pixels, followed by `idat` as its (possibly
/// far too short) image data.
fn png_declaring(w: u32, h: u32, idat: &[u8]) -> Vec<u8> {
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    png.extend(chunk(b"IDAT", idat));
    png.extend(chunk(b"IEND", &[]));
    png
}

/// A small grey picture, 8×8, written with the library.
fn small_picture(dir: &Path) -> PathBuf {
    let plane = stencil35d::Grid2::from_fn([8, 8], |x, y| (x + 3 * y) as f32 / 40.0).unwrap();
    let picture = stencil35d::output::Picture {
        channels: vec![plane],
        alpha: None,
        bits: 8,
    };
    let path = dir.join("small.png");
    picture.write_png(&path).unwrap();
    path
}

/// `--repeat` of `bench` and `compare` takes 1 to 1000 runs: a count past it (which would
/// size a vector of reports beyond the memory) is refused before any work.
#[test]
fn repeat_counts_are_bounded() {
    for n in ["0", "1001", "100000000", "18446744073709551615", "-1", "x"] {
        let value = format!("--repeat={n}");
        refused_with(
            &["bench", "--size", "12", &value],
            &["--repeat", "1 to 1000"],
        );
        refused_with(
            &["compare", "--size", "12", &value, "--out", "/nonexistent/x"],
            &["--repeat", "1 to 1000"],
        );
    }
}

/// `compare --budget` and `probe --fma-seconds` take a finite number of seconds above 0 and
/// within a bound; NaN, infinities, zero and negatives are refused by name.
#[test]
fn seconds_are_finite_positive_and_bounded() {
    for v in ["nan", "inf", "-inf", "0", "-1", "1e9"] {
        let budget = format!("--budget={v}");
        let stderr = refused(&["compare", "--size", "12", &budget]);
        assert!(
            stderr.contains("--budget") && stderr.contains("at most 3600"),
            "{stderr}"
        );
        assert!(!stderr.contains("None"), "{stderr}");
        let fma = format!("--fma-seconds={v}");
        refused_with(&["probe", &fma], &["--fma-seconds", "at most 60"]);
    }
}

/// `compare --size2d` is a 2D size: a z is refused rather than dropped; N and NXxNY run.
#[test]
fn a_3d_size_is_refused_for_the_2d_option() {
    refused_with(
        &["compare", "--size2d", "16x16x16"],
        &["--size2d", "16x16x16", "2D"],
    );
    let out = temp_dir("size2d");
    let (ok, _, stderr) = cli(&[
        "compare",
        "--size",
        "12",
        "--size2d",
        "12x10",
        "--kernels",
        "star2d:1",
        "--engines",
        "naive",
        "--steps",
        "1",
        "--repeat",
        "1",
        "--out",
        s(&out),
    ]);
    assert!(ok, "{stderr}");
    let json = std::fs::read_to_string(out.join("compare.json")).unwrap();
    let comparison = stencil35d::perf::from_json(&json).unwrap();
    assert_eq!(comparison.plane_dims, [12, 10]);
    std::fs::remove_dir_all(&out).ok();
}

/// A comparison measured here, as compare.json would hold it: one 2D and one 3D kernel on the
/// naive engine.
fn comparison_json() -> serde_json::Value {
    let mut config = stencil35d::perf::CompareConfig::new([12, 12, 12], 1);
    config.kernels = ["star7", "star2d:1"]
        .iter()
        .map(|k| stencil35d::perf::kernel_by_name(k).unwrap())
        .collect();
    config.engines = vec![stencil35d::Engine::Naive];
    config.repeat = 1;
    config.plane_dims = [12, 12];
    let comparison = stencil35d::perf::compare(&config, |_| {}).unwrap();
    serde_json::from_str(&stencil35d::perf::to_json(&comparison)).unwrap()
}

/// `compare --from-json FILE` with `value` written to FILE and output into a fresh directory:
/// whether it succeeded, its stderr, and what the output directory holds afterwards.
fn from_json(name: &str, value: &serde_json::Value) -> (bool, String, Vec<String>) {
    let dir = temp_dir(name);
    let file = dir.join("in.json");
    std::fs::write(&file, serde_json::to_string(value).unwrap()).unwrap();
    let out = dir.join("out");
    let (ok, _, stderr) = cli(&["compare", "--from-json", s(&file), "--out", s(&out)]);
    let files = listing(&out);
    std::fs::remove_dir_all(&dir).ok();
    (ok, stderr, files)
}

/// `--from-json` checks every record and names the one at fault: zero or overflowing sizes, MUPS
/// of zero or less, unknown kernels, a backend that is not the engine's, a row given twice;
/// nothing is written then.
#[test]
fn from_json_records_are_validated() {
    let good = comparison_json();
    let (ok, stderr, files) = from_json("json-good", &good);
    assert!(ok, "{stderr}");
    assert_eq!(files.len(), 4, "{files:?}");
    type Edit = fn(&mut serde_json::Value);
    let edits: [(Edit, &[&str]); 9] = [
        (|v| v["dims"][1] = 0.into(), &["dims (y) is 0"]),
        (|v| v["steps"] = 0.into(), &["steps is 0"]),
        (
            |v| v["rows"][0]["measured"]["mups"] = (-5.0).into(),
            &["row 1 (star7 naive)", "mups is -5"],
        ),
        (
            |v| v["rows"][1]["kernel"] = "heat".into(),
            &["row 2 (heat naive)", "kernel 'heat'"],
        ),
        (
            |v| v["rows"][0]["backend"] = "gpu".into(),
            &["row 1", "backend 'gpu'"],
        ),
        (
            |v| v["cpu"]["bandwidth_gbs"] = 0.0.into(),
            &["cpu.bandwidth_gbs is 0"],
        ),
        (
            |v| v["rows"][0]["measured"]["mups"] = 0.0.into(),
            &["row 1 (star7 naive)", "mups is 0"],
        ),
        (
            |v| v["dims"] = serde_json::json!([1u64 << 62, 1u64 << 62, 4]),
            &["more cells than an address space"],
        ),
        (
            |v| v["rows"][1] = v["rows"][0].clone(),
            &["row 2 repeats star7 on naive"],
        ),
    ];
    for (i, (edit, words)) in edits.iter().enumerate() {
        let mut bad = good.clone();
        edit(&mut bad);
        let (ok, stderr, files) = from_json(&format!("json-bad-{i}"), &bad);
        assert!(!ok && !stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains("--from-json"), "{stderr}");
        for w in *words {
            assert!(stderr.contains(w), "'{w}' missing from: {stderr}");
        }
        assert!(files.is_empty(), "{files:?}");
    }
}

/// `--from-json` reads only a regular file of at most 64 MiB: /dev/zero (endless), a directory
/// and a huge file are refused at once.
#[test]
fn from_json_reads_only_sane_files() {
    let dir = temp_dir("json-files");
    let out = dir.join("out");
    if Path::new("/dev/zero").exists() {
        refused_with(
            &["compare", "--from-json", "/dev/zero", "--out", s(&out)],
            &["/dev/zero", "not a regular file"],
        );
    }
    refused_with(
        &["compare", "--from-json", s(&dir), "--out", s(&out)],
        &["is a directory"],
    );
    let huge = dir.join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    refused_with(
        &["compare", "--from-json", s(&huge), "--out", s(&out)],
        &["huge.json", "more than the 67108864"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A comparison with a failed run prints its table but writes no files, and a destination that cannot be written stops all four files
/// rather than leaving compare.csv and compare.json beside a missing chart.
#[test]
fn a_failed_compare_leaves_no_partial_results() {
    let mut failed = comparison_json();
    failed["rows"][0]["measured"] = serde_json::Value::Null;
    failed["rows"][0]["note"] = "failed: the engine broke".into();
    let (ok, stderr, files) = from_json("failed-run", &failed);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(files.is_empty(), "{files:?}");

    let dir = temp_dir("blocked-chart");
    let file = dir.join("in.json");
    std::fs::write(&file, comparison_json().to_string()).unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("roofline.png")).unwrap();
    let stderr = refused(&["compare", "--from-json", s(&file), "--out", s(&out)]);
    assert!(stderr.contains("roofline.png"), "{stderr}");
    assert_eq!(listing(&out), ["roofline.png"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// `filter` checks a picture's declared size against the memory before decoding it (a
/// 100000×100000 header is refused before any pixel is decoded) and reads only regular files.
#[test]
fn filter_refuses_pictures_it_cannot_hold() {
    let dir = temp_dir("filter-input");
    let huge = dir.join("huge.png");
    let out = dir.join("out.png");
    // One row too wide for the decoder's allowance gets the same answer as a tall picture,
    // not the decoder's.
    for (w, h) in [(100_000, 100_000), (2_147_483_647, 1)] {
        std::fs::write(&huge, png_declaring(w, h, &[0; 16])).unwrap();
        refused_with(
            &[
                "--tune",
                "memory_bytes=1073741824",
                "filter",
                s(&huge),
                s(&out),
                "--filter",
                "sobel",
            ],
            &[&format!("{w}x{h}"), "too large to read"],
        );
    }
    if Path::new("/dev/zero").exists() {
        refused_with(
            &["filter", "/dev/zero", s(&out), "--filter", "sobel"],
            &["not a regular file"],
        );
    }
    refused_with(
        &["filter", s(&dir), s(&out), "--filter", "sobel"],
        &["is a directory"],
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// `filter --times` takes 1 to 1000 applications.
#[test]
fn filter_applications_are_bounded() {
    let dir = temp_dir("filter-times");
    let input = small_picture(&dir);
    let out = dir.join("out.png");
    for n in ["0", "1001", "100000000"] {
        refused_with(
            &[
                "filter",
                s(&input),
                s(&out),
                "--filter",
                "mean:3",
                "--times",
                n,
            ],
            &["--times", "1 to 1000"],
        );
    }
    let (ok, _, stderr) = cli(&[
        "filter",
        s(&input),
        s(&out),
        "--filter",
        "mean:3",
        "--times",
        "3",
    ]);
    assert!(ok && out.exists(), "{stderr}");
    // A filter whose weights sum to 100 overflows f32 after about 20 applications: the error
    // names the growth over applications, not the weights.
    std::fs::write(dir.join("gain.txt"), "100\n").unwrap();
    refused_with(
        &[
            "filter",
            s(&input),
            s(&out),
            "--filter",
            s(&dir.join("gain.txt")),
            "--times",
            "100",
        ],
        &["outgrew f32", "fewer --times"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Filter and border names: a fixed filter takes no size, every Gaussian size out of range
/// gets the same message saying which sizes are supported, a size is checked before weights
/// are made, only `constant` takes a value, and a path that names nothing is a missing file.
#[test]
fn filter_and_border_names_are_checked() {
    let dir = temp_dir("filter-names");
    let input = small_picture(&dir);
    let out = dir.join("out.png");
    let filter = |spec: &str, border: &str, words: &[&str]| {
        refused_with(
            &[
                "filter",
                s(&input),
                s(&out),
                "--filter",
                spec,
                "--border",
                border,
            ],
            words,
        );
    };
    for spec in ["sobel:99", "laplacian:abc", "sharpen:", "sobel-y:3"] {
        filter(
            spec,
            "reflect",
            &[spec, "fixed 3x3 filter and takes no size"],
        );
    }
    for spec in [
        "gaussian:2",
        "gaussian:4",
        "gaussian:0",
        "gaussian:1000",
        "gaussian:17",
        "gaussian:x",
        "gaussian",
    ] {
        filter(spec, "reflect", &[spec, "odd size K from 1 to 15"]);
    }
    for spec in [
        "mean:100000000",
        "mean:0",
        "dense:100000x100000",
        "mean:3x16",
    ] {
        filter(spec, "reflect", &[spec, "sizes from 1 to 15"]);
    }
    filter("blur", "reflect", &["unknown filter 'blur'"]);
    for border in ["wrap:3", "reflect:1", "replicate:"] {
        filter("sobel", border, &["--border", border, "takes none"]);
    }
    filter("sobel", "constant:x", &["constant:x", "finite number"]);
    filter("sobel", "mirror", &["border 'mirror' is unknown"]);
    for missing in ["missing.txt", "no/such/filter"] {
        filter(missing, "reflect", &[missing, "does not exist"]);
    }
    // A named filter and constant border still work.
    let (ok, _, stderr) = cli(&[
        "filter",
        s(&input),
        s(&out),
        "--filter",
        "gaussian:15",
        "--border",
        "constant:0.5",
    ]);
    assert!(ok, "{stderr}");
    // The same names are checked for `bench --kernel conv2d`.
    refused_with(
        &[
            "bench", "--kernel", "conv2d", "--filter", "sobel:99", "--size", "16",
        ],
        &["--filter sobel:99", "takes no size"],
    );
    // conv2d:K is K×K: a filter of another shape is refused, as is a 3D size for a 2D kernel
    // (only a bare N means a square).
    refused_with(
        &[
            "bench", "--kernel", "conv2d:3", "--filter", "mean:3x5", "--size", "16",
        ],
        &["conv2d:3 does not match the 3x5 filter"],
    );
    refused_with(
        &["bench", "--kernel", "star2d:1", "--size", "16x16x16"],
        &["2D kernel", "16x16x16"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A filter file is a regular file of at most 1 MiB; weights beyond `f32` and a filter whose
/// response overflows are worded for pictures, not for an unstable lattice or stencil.
#[test]
fn filter_files_are_checked() {
    let dir = temp_dir("filter-files");
    let input = small_picture(&dir);
    let out = dir.join("out.png");
    let run = |spec: &Path| refused(&["filter", s(&input), s(&out), "--filter", s(spec)]);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let stderr = run(&write("nan.txt", "1 nan 1\n"));
    assert!(
        stderr.contains("nan.txt") && stderr.contains("not finite"),
        "{stderr}"
    );
    let stderr = run(&write("huge.txt", "1 1e300 1\n"));
    assert!(stderr.contains("beyond the range of f32"), "{stderr}");
    assert!(!stderr.contains("lattice"), "{stderr}");
    // A border constant beyond f32 is refused by bench as by filter, before any step.
    for tool in [
        &[
            "bench",
            "--kernel",
            "conv2d:3x3",
            "--size",
            "16",
            "--steps",
            "1",
        ][..],
        &["filter", s(&input), s(&out), "--filter", "sharpen"][..],
    ] {
        let args = [tool, &["--border", "constant:1e40"][..]].concat();
        refused_with(
            &args,
            &["--border constant:1e40", "beyond the range of f32"],
        );
    }
    let stderr = run(&write(
        "overflow.txt",
        "3e38 3e38 3e38\n3e38 3e38 3e38\n3e38 3e38 3e38\n",
    ));
    assert!(
        stderr.contains("pixel")
            && stderr.contains("outgrew f32")
            && stderr.contains("weights or the border constant are too large"),
        "{stderr}"
    );
    assert!(!stderr.contains("lattice"), "{stderr}");
    let big = dir.join("big.txt");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let stderr = run(&big);
    assert!(stderr.contains("more than the 1048576"), "{stderr}");
    if Path::new("/dev/zero").exists() {
        let stderr = run(Path::new("/dev/zero"));
        assert!(stderr.contains("not a regular file"), "{stderr}");
    }
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// `--threads` takes 1 to 64 threads per logical core (the planner's limit): more would wait
/// at the engines' barriers for ever.
#[test]
fn thread_counts_are_bounded() {
    for n in ["0", "100000", "18446744073709551615"] {
        let threads = format!("--threads={n}");
        refused_with(
            &["compare", "--size", "12", &threads],
            &["--threads", "thread count from 1 to"],
        );
        refused_with(
            &["bench", "--size", "12", &threads],
            &["--threads", "thread count from 1 to"],
        );
    }
}

/// A comparison refused after its output directory was made (a `--from-json` that is not a
/// comparison) removes the directory again: a failed run leaves the place as it found it.
#[test]
fn a_refused_compare_leaves_no_output_directory() {
    let dir = temp_dir("compare-out");
    let json = dir.join("bad.json");
    std::fs::write(&json, "{\"not\": \"a comparison\"}").unwrap();
    let out = dir.join("new/out");
    refused(&["compare", "--from-json", s(&json), "--out", s(&out)]);
    assert!(
        !dir.join("new").exists(),
        "a refused compare left {}",
        out.display()
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// An option that none of the named engines takes is refused, naming it, instead of being
/// dropped; an engine list that names none is refused; a `compare` without the naive engine
/// every ratio is measured against is refused before it measures anything.
#[test]
fn options_no_named_engine_takes_are_refused() {
    refused_with(
        &["plan", "--size", "32", "--engine", "naive", "--dim-t", "4"],
        &["--dim-t", "blocked"],
    );
    refused_with(
        &[
            "bench", "--size", "32", "--steps", "2", "--engine", "naive", "--tile", "20x20",
        ],
        &["--tile"],
    );
    refused_with(
        &[
            "bench",
            "--kernel",
            "d3q19",
            "--size",
            "16",
            "--steps",
            "2",
            "--in-place",
        ],
        &["--in-place", "gpu-naive"],
    );
    refused_with(
        &[
            "bench",
            "--size",
            "32",
            "--steps",
            "2",
            "--engine",
            "naive,blocked",
            "--autotune",
        ],
        &["--autotune"],
    );
    for list in ["", ","] {
        refused_with(
            &["bench", "--size", "32", "--steps", "2", "--engine", list],
            &["names no engine"],
        );
    }
    let dir = temp_dir("compare-without-naive");
    refused_with(
        &[
            "compare",
            "--size",
            "16",
            "--steps",
            "2",
            "--engines",
            "blocked",
            "--out",
            s(&dir),
        ],
        &["naive"],
    );
    // The same options where an engine takes them are accepted.
    let (ok, _, stderr) = cli(&[
        "bench",
        "--size",
        "24",
        "--steps",
        "2",
        "--engine",
        "naive,blocked",
        "--dim-t",
        "2",
    ]);
    assert!(ok, "{stderr}");
}

/// A failed write to standard output (a full disk) ends the command with an error, not a
/// panic.
#[test]
fn a_full_standard_output_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        println!("skipped: no /dev/full");
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stencil35d"))
        .args(["plan", "--size", "32"])
        .current_dir(std::env::temp_dir())
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("cannot write to standard output"),
        "{stderr}"
    );
}

#[test]
fn a_cache_directory_never_replaces_a_file_that_is_not_a_cache() {
    refused_with(
        &["--tune", "cache_dir=", "plan", "--size", "32"],
        &["cache_dir", "empty path"],
    );
    let dir = temp_dir("foreign-cache");
    let foreign = "{\"my\": \"data\"}";
    for name in ["bandwidth.json", "gpu-tune.json"] {
        std::fs::write(dir.join(name), foreign).unwrap();
    }
    let tune = format!("cache_dir={}", dir.display());
    // The plan measures the bandwidth and would cache it in bandwidth.json.
    let (ok, _, stderr) = cli(&["--tune", &tune, "plan", "--size", "32"]);
    assert!(ok, "{stderr}");
    for name in ["bandwidth.json", "gpu-tune.json"] {
        assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), foreign);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_engine_or_kernel_named_twice_is_refused() {
    refused_with(
        &["bench", "--size", "12", "--engine", "naive,blocked,naive"],
        &["names naive twice"],
    );
    let dir = temp_dir("twice");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    refused_with(
        &[
            "compare",
            "--size",
            "12",
            "--kernels",
            "star7,star:1",
            "--out",
            out,
        ],
        &["--kernels names", "twice"],
    );
    refused_with(
        &[
            "compare",
            "--size",
            "12",
            "--engines",
            "naive,naive",
            "--out",
            out,
        ],
        &["engine 'naive' is named twice"],
    );
    refused_with(
        &["--tune", "bandwidth_gbs=1e-300", "plan", "--size", "64"],
        &["bandwidth_gbs", "0.01 to 100000"],
    );
    assert!(!Path::new(out).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
