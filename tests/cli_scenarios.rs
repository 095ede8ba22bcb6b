//! Bad input to the `run` scenarios (wave, cavity, channel, sphere, heat), refused at once with
//! a message that names the option and says what is allowed: files that are not regular or
//! longer than their header says, absurd time steps, velocities and frequencies, lattice speeds
//! and spheres that do not fit, a checkpoint of the other precision, output paths that cannot
//! be written; and a refused run leaves no output directory behind.

#[allow(dead_code)]
#[path = "setup/mod.rs"]
mod setup;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use stencil35d::output::write_npy;

/// A fresh directory for one test, in the temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil35d-cli-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the tool with `args`; fails when it still runs after 60 s (a check that should refuse
/// the run at once did not).
fn cli(args: &[&str]) -> Output {
    let limit = Duration::from_secs(60);
    let (out, _, killed) = setup::cli_within(args, limit);
    assert!(
        !killed,
        "stencil35d {} still ran after {limit:?}",
        args.join(" ")
    );
    out
}

/// What the tool wrote to stderr.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the tool with `args`, expects it to fail, and returns its error output.
fn refused(args: &[&str]) -> String {
    let out = cli(args);
    assert!(
        !out.status.success(),
        "stencil35d {} ran: {}",
        args.join(" "),
        stderr(&out)
    );
    stderr(&out)
}

/// Asserts that `text` holds each of `parts`.
fn says(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no '{part}' in: {text}");
    }
}

/// `p` as an argument.
fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `run wave` on a small grid (24³ cells, 8-cell absorbing layers, 90 ms: past the default
/// 12 Hz wavelet's peak at 1/12 s), writing to `out`, with `extra` options.
fn wave<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "wave",
        "--size",
        "24",
        "--pml",
        "8",
        "--time",
        "0.09",
        "--snapshots",
        "1",
        "--threads",
        "1",
        "--out",
        path_str(out),
    ];
    args.extend_from_slice(extra);
    args
}

/// `run wave` as [`wave`] makes it, the model read from `--velocity` (and `--size` left out:
/// the file gives it).
fn wave_from_file<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = wave(out, extra);
    let at = args.iter().position(|a| *a == "--size").unwrap();
    args.drain(at..at + 2);
    args
}

/// `args` with the value of `option` replaced by `value`.
fn with<'a>(mut args: Vec<&'a str>, option: &str, value: &'a str) -> Vec<&'a str> {
    let at = args.iter().position(|a| *a == option).unwrap();
    args[at + 1] = value;
    args
}

/// A 24³ velocity model of `v` m/s everywhere as `.npy`, with `extra` bytes appended.
fn velocity_file(dir: &Path, v: f64, extra: usize) -> PathBuf {
    let path = dir.join(format!("v-{v}-{extra}.npy"));
    write_npy(&path, &[24, 24, 24], &vec![v; 24 * 24 * 24]).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.resize(bytes.len() + extra, 0);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_velocity_model_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = scratch("velocity-device");
    let out = dir.join("out");
    if Path::new("/dev/zero").exists() {
        let text = refused(&wave_from_file(&out, &["--velocity", "/dev/zero"]));
        says(
            &text,
            &["/dev/zero", "regular file", "a device, pipe or socket"],
        );
    }
    let fifo = dir.join("fifo.npy");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let text = refused(&wave_from_file(&out, &["--velocity", path_str(&fifo)]));
        says(&text, &["fifo.npy", "regular file"]);
    }
    let text = refused(&wave_from_file(&out, &["--velocity", path_str(&dir)]));
    says(&text, &["regular file", "a directory"]);
    assert!(!out.exists(), "a refused run left {}", out.display());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_velocity_model_with_trailing_bytes_or_absurd_velocities_is_refused() {
    let dir = scratch("velocity-values");
    let out = dir.join("out");
    let long = velocity_file(&dir, 2000.0, 5);
    let text = refused(&wave_from_file(&out, &["--velocity", path_str(&long)]));
    says(
        &text,
        &[
            "needs 110592 data bytes, the file holds 110597",
            "5 bytes after",
        ],
    );
    // A file gives the grid: a --size beside it is refused, not silently overridden.
    let text = refused(&wave(&out, &["--velocity", path_str(&long)]));
    says(&text, &["--velocity", "cannot be used with", "--size"]);
    let slow = velocity_file(&dir, 1e-30, 0);
    let text = refused(&wave_from_file(&out, &["--velocity", path_str(&slow)]));
    says(
        &text,
        &[path_str(&slow), "is 1e-30 m/s", "from 10 to 20000 m/s"],
    );
    let fast = velocity_file(&dir, 1e9, 0);
    let text = refused(&wave_from_file(&out, &["--velocity", path_str(&fast)]));
    says(&text, &["is 1e9 m/s"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_grid_the_options_cannot_use_is_refused_before_its_model_is_read() {
    let dir = scratch("velocity-dims");
    let out = dir.join("out");
    // The file's values are refused once read (1e-30 m/s): each refusal comes before that.
    let slow = velocity_file(&dir, 1e-30, 0);
    let model = ["--velocity", path_str(&slow)];
    let text = refused(&with(wave_from_file(&out, &model), "--pml", "13"));
    says(&text, &["wider than half"]);
    let text = refused(&wave_from_file(
        &out,
        &[&model[..], &["--source-depth", "30"]].concat(),
    ));
    says(&text, &["--source-depth 30 lies outside"]);
    // Receivers 4 cells of 6e8 m from the source: offsets SEG-Y cannot hold in 32 bits.
    let text = refused(&wave_from_file(
        &out,
        &[&model[..], &["--spacing", "6e8"]].concat(),
    ));
    says(&text, &["SEG-Y shot record", "does not fit 32 bits"]);
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn time_steps_are_positive_whole_microseconds_and_shown_short() {
    let dir = scratch("dt");
    let out = dir.join("out");
    for dt in ["0", "-0.001", "NaN", "inf"] {
        let option = format!("--dt={dt}");
        let text = refused(&wave(&out, &[&option]));
        says(&text, &["--dt", "positive, finite"]);
    }
    let text = refused(&wave(&out, &["--dt", "1e-300"]));
    says(
        &text,
        &["--dt 1e-300 s", "outside the 1 to 32767 microseconds"],
    );
    assert!(text.len() < 300, "{text}");
    let text = refused(&wave(&out, &["--dt", "0.0012345"]));
    says(
        &text,
        &["--dt 0.0012345 s", "not a whole number of microseconds"],
    );
    // SEG-Y rev 1's sample interval is a signed 16-bit field.
    for dt in ["0.1", "0.04"] {
        let text = refused(&wave(&out, &["--dt", dt]));
        says(&text, &[&format!("--dt {dt} s"), "outside the 1 to 32767"]);
    }
    let text = refused(&wave(&out, &["--dt", "0.01"]));
    says(
        &text,
        &[
            "--dt 0.01 s exceeds the stability limit",
            "0.0010063 s: use --dt 0.001006 or less",
        ],
    );
    // The limit is shown below the refused step, however near: the step one microsecond
    // past the largest stable one is refused naming that one.
    let text = refused(&wave(&out, &["--dt", "0.001007"]));
    says(&text, &["limit", "0.0010063 s: use --dt 0.001006 or less"]);
    // The largest whole step, 1283 µs, is named exactly (1283 × 1e-6 is 0.0012829999…, which
    // must not be rounded down to 0.001282).
    let text = refused(&wave(&out, &["--order", "2", "--dt", "0.001284"]));
    says(&text, &["order 2", "use --dt 0.001283 or less"]);
    let text = refused(&wave(&out, &["--spacing", "1e-9"]));
    says(
        &text,
        &[
            "--spacing 1e-9 m",
            "shorter than 1 µs",
            "--spacing of at least",
        ],
    );
    // 8-cell layers on 16 depth cells leave the default shot, 2 cells below the top layer,
    // in the bottom one.
    let text = refused(&with(wave(&out, &[]), "--size", "24x24x16"));
    says(
        &text,
        &[
            "the default source depth, 10 cells,",
            "bottom absorbing layer (cells 8 to 15)",
        ],
    );
    // Layers far wider than any grid are refused at once (the smallest grid for the memory
    // advice is not searched for cube by cube), in the process's own precision.
    for pml in ["3000000000000", "18446744073709551615"] {
        let text = refused(&with(wave(&out, &[]), "--pml", pml));
        says(&text, &[&format!("layers of {pml} cells")]);
    }
    let text = refused(&with(wave(&out, &[]), "--time", "1e300"));
    says(&text, &["--time 1e300 s", "1 to 32766 steps"]);
    assert!(!out.exists(), "a refused run left {}", out.display());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An output the run would replace at its end that is read-only is refused before the first
/// step, whichever of the run's files it is, and left as it was.
#[cfg(unix)]
#[test]
fn a_read_only_output_is_refused_before_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("read-only");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let summary = out.join("summary.json");
    std::fs::write(&summary, b"kept").unwrap();
    std::fs::set_permissions(&summary, std::fs::Permissions::from_mode(0o444)).unwrap();
    let text = refused(&wave(&out, &[]));
    says(&text, &["summary.json", "read-only"]);
    assert_eq!(std::fs::read(&summary).unwrap(), b"kept");
    assert!(!out.join("gather.npy").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn receivers_are_at_least_a_cell_apart() {
    let dir = scratch("receivers");
    let out = dir.join("out");
    let text = refused(&wave(&out, &["--receiver-spacing", "0"]));
    says(&text, &["--receiver-spacing 0", "at least 1 cell"]);
    let text = refused(&wave(&out, &["--rigid", "top,x-low,top"]));
    says(&text, &["--rigid names top twice"]);
    // Rigid faces need no absorbing layer: the receivers then start at the first updated
    // cell whatever --pml says (24 cells, radius 4: x = 4 to 19, every second cell).
    let rigid = "x-low,x-high,y-low,y-high,top,bottom";
    let run = cli(&with(wave(&out, &["--rigid", rigid]), "--pml", "40"));
    assert!(run.status.success(), "{}", stderr(&run));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("\"receivers\": 8"), "{summary}");
    // No face absorbs: the summary records no layers, whatever --pml said.
    assert!(summary.contains("\"pml\": 0,"), "{summary}");
    // Layers of half the grid leave no room for a receiver: refused (the shot placed between
    // them, where the default, 2 cells below the top layer, would lie in the bottom one).
    let text = refused(&with(wave(&out, &["--source-depth", "12"]), "--pml", "12"));
    says(&text, &["0 receivers"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_peak_frequency_above_the_grids_nyquist_is_refused_and_a_coarse_one_warned() {
    let dir = scratch("freq");
    let out = dir.join("out");
    // The salt model's slowest velocity, 1500 m/s, over twice the 10 m spacing: 75 Hz.
    let text = refused(&wave(&out, &["--freq", "1e6"]));
    says(
        &text,
        &[
            "--freq 1000000 Hz",
            "Nyquist frequency, 75 Hz",
            "at most 75 Hz",
        ],
    );
    let text = refused(&wave(&out, &["--freq", "0"]));
    says(&text, &["--freq 0"]);
    // 30 Hz: 2 cells per wavelength at 2.5 × 30 Hz. The warning comes with the checks of the
    // model, before the recording time (here less than a step, so nothing runs) is checked.
    let short = |freq| with(wave(&out, &["--freq", freq]), "--time", "1e-9");
    let text = refused(&short("30"));
    says(
        &text,
        &[
            "warning: --freq 30 Hz",
            "2.0 cells",
            "at most 12 Hz",
            "--time",
        ],
    );
    let text = refused(&short("12"));
    assert!(!text.contains("warning: --freq"), "{text}");
    // A recording shorter than the wavelet's delay (1/12 s) holds only its onset.
    says(&text, &["warning: --time 1e-9 s", "peaks at 0.08333 s"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run <scenario>` on a tiny lattice for 2 steps, writing to `out`, with `extra` options.
fn flow<'a>(scenario: &'a str, size: &'a str, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        scenario,
        "--size",
        size,
        "--steps",
        "2",
        "--threads",
        "1",
        "--out",
        path_str(out),
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn every_flow_scenario_refuses_a_lattice_speed_above_the_limit() {
    let dir = scratch("speeds");
    let out = dir.join("new/out");
    for (scenario, size, option) in [
        ("channel", "8x10x6", "--u-max"),
        ("cavity", "8", "--lid"),
        ("sphere", "24x16x16", "--u-in"),
    ] {
        for value in ["10", "0", "-0.1"] {
            let typed = format!("{option}={value}");
            // A negative value after a space is the option's value too, not an unknown flag.
            for extra in [vec![typed.as_str()], vec![option, value]] {
                let text = refused(&flow(scenario, size, &out, &extra));
                says(
                    &text,
                    &[
                        &format!("{option} {value}"),
                        "a lattice velocity must be positive and at most 0.2",
                    ],
                );
            }
        }
    }
    // The refused runs created no output directory, nor its parent.
    assert!(!dir.join("new").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flow_parameters_are_checked_first_and_relaxation_times_above_4_refused() {
    let dir = scratch("tau");
    let out = dir.join("out");
    // Re 1 in a 32³ cavity at lid speed 0.1: ν = 3, τ = 9.5 (it blew up in step 10).
    let text = refused(&flow("cavity", "32", &out, &["--re", "1"]));
    says(&text, &["τ = 9.5", "above τ = 4"]);
    let text = refused(&flow("channel", "4x34x4", &out, &["--re", "0.05"]));
    says(&text, &["above τ = 4", "lower lattice velocity"]);
    // A bad flow parameter is named before the cadence it would set.
    let text = refused(&flow(
        "channel",
        "4x34x4",
        &out,
        &["--re", "inf", "--every", "1"],
    ));
    says(&text, &["--re inf"]);
    assert!(!text.contains("--every"), "{text}");
    let ran = cli(&flow("cavity", "32", &out, &["--re", "3", "--no-vti"]));
    assert!(ran.status.success(), "{}", stderr(&ran));
    // The walled benchmark lattice needs fluid between its walls.
    let text = refused(&["bench", "--kernel", "d3q19", "--size", "2", "--steps", "1"]);
    says(&text, &["holds no fluid", "at least 3 nodes"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_sphere_must_fit_with_room_around_it() {
    let dir = scratch("sphere");
    let out = dir.join("out");
    let text = refused(&flow("sphere", "3x16x16", &out, &[]));
    says(
        &text,
        &[
            "the default radius ny/8 = 2",
            "does not fit",
            "at least 16x16x16",
        ],
    );
    let text = refused(&flow("sphere", "4x16x16", &out, &["--radius", "7"]));
    says(&text, &["--radius 7 does not fit", "at least 36x16x16"]);
    let text = refused(&flow("sphere", "64x14x14", &out, &["--radius", "7"]));
    says(&text, &["use --radius at most 6, or", "at least 36x16x16"]);
    let text = refused(&flow("sphere", "40x6x6", &out, &[]));
    says(&text, &["radius of at least 1 cell"]);
    let text = refused(&flow("sphere", "32x16x16", &out, &["--radius", "1e300"]));
    says(
        &text,
        &["--radius 1e300 does not fit", "use --radius at most 6"],
    );
    assert!(!text.contains("--size of at least"), "{text}");
    assert!(!out.exists(), "a refused run left {}", out.display());
    let ran = cli(&flow("sphere", "16x16x16", &out, &["--no-vti"]));
    assert!(ran.status.success(), "{}", stderr(&ran));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_of_the_other_precision_names_the_option_to_load_it() {
    let dir = scratch("restart-dtype");
    let (out, ckpt) = (dir.join("out"), dir.join("ck.bin"));
    let made = cli(&flow(
        "cavity",
        "8",
        &out,
        &["--checkpoint", path_str(&ckpt)],
    ));
    assert!(made.status.success(), "{}", stderr(&made));
    let restart = ["--restart", path_str(&ckpt), "--dtype", "f64"];
    let text = refused(&flow("cavity", "8", &out, &restart));
    says(
        &text,
        &["the checkpoint holds f32 populations: run with --dtype f32"],
    );
    assert!(!text.contains("Lattice<"), "{text}");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    if Path::new("/dev/zero").exists() {
        let text = refused(&flow("cavity", "8", &out, &["--restart", "/dev/zero"]));
        says(&text, &["regular file"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint named like a picture of the run, however spelt, is refused before the run
/// instead of replacing it; `--storage` naming the other precision is refused; a sphere whose
/// `--radius` sets τ is told to change the radius, not the lattice.
#[test]
fn a_checkpoint_over_an_output_and_a_storage_of_the_other_precision_are_refused() {
    let dir = scratch("clash");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    for name in ["cavity.png", "../out/cavity.vti"] {
        let ckpt = out.join(name);
        let text = refused(&flow(
            "cavity",
            "8",
            &out,
            &["--checkpoint", path_str(&ckpt)],
        ));
        says(
            &text,
            &[
                "the checkpoint",
                "names the same file as",
                "give --checkpoint another name",
            ],
        );
    }
    let names: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert!(names.is_empty(), "{names:?}");
    let text = refused(&flow(
        "cavity",
        "8",
        &out,
        &["--dtype", "f64", "--storage", "f32"],
    ));
    says(&text, &["--storage f32", "--dtype f64"]);
    let ran = cli(&flow(
        "cavity",
        "8",
        &out,
        &["--dtype", "f64", "--storage", "f64", "--no-vti"],
    ));
    assert!(ran.status.success(), "{}", stderr(&ran));
    let text = refused(&flow(
        "sphere",
        "96x48x48",
        &out,
        &["--radius", "2", "--re", "400"],
    ));
    says(&text, &["below τ = 0.505", "use a larger --radius"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint whose tag names the run but whose lattice is another is refused on restart.
#[test]
fn a_restart_compares_the_lattice_not_only_its_tag() {
    use stencil35d::lbm::{CheckpointTag, Lattice, Physics};
    let dir = scratch("retagged");
    let (out, ckpt) = (dir.join("out"), dir.join("ck.bin"));
    let small = Lattice::<f32>::new([12; 3], Physics::trt(0.53, 0.1875)).unwrap();
    let tag = CheckpointTag::new("cavity", "16x16x16, Re 100, lid 0.1");
    small.save_tagged(&ckpt, &tag).unwrap();
    let text = refused(&flow("cavity", "16", &out, &["--restart", path_str(&ckpt)]));
    says(
        &text,
        &["its lattice (12x12x12", "is not this run's (16x16x16"],
    );
    // The right size with another relaxation time is refused too.
    let viscous = Lattice::<f32>::new([16; 3], Physics::trt(0.6, 0.1875)).unwrap();
    viscous.save_tagged(&ckpt, &tag).unwrap();
    let text = refused(&flow("cavity", "16", &out, &["--restart", path_str(&ckpt)]));
    says(&text, &["its lattice (16x16x16, τ = 0.6)", "τ = 0.542"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A flow whose densities turn negative while every value stays finite (a sphere far too
/// fast for its lattice) stops with the divergence named instead of writing them, before any
/// value overflows; its first ten steps, before it diverges, run.
#[test]
fn a_flow_that_diverges_without_overflowing_stops() {
    let dir = scratch("diverged");
    let out = dir.join("out");
    let mut args = flow(
        "sphere",
        "32x16x16",
        &out,
        &["--u-in", "0.2", "--re", "160"],
    );
    args[5] = "80";
    let text = refused(&args);
    says(
        &text,
        &[
            "the flow diverged (found at step 80 of the lattice)",
            "lower the Reynolds number",
        ],
    );
    assert!(!out.exists(), "the failed run left {}", out.display());
    args[5] = "10";
    let ran = cli(&args);
    assert!(ran.status.success(), "{}", stderr(&ran));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each scenario checks every file it will write before its first step: a directory where a
/// file goes is refused at once, and nothing is written.
#[test]
fn an_output_file_that_is_a_directory_is_refused_before_the_run() {
    let dir = scratch("outputs");
    let cases: [(&str, Vec<&str>); 5] = [
        ("gather.segy", vec![]),
        ("cavity.vti", vec!["run", "cavity", "--size", "8"]),
        (
            "channel_0000002.png",
            vec!["run", "channel", "--size", "8x10x6", "--every", "2"],
        ),
        (
            "heat_000002.png",
            vec!["run", "heat", "--size", "12", "--every", "2"],
        ),
        ("heat.png", vec!["run", "heat", "--size", "12"]),
    ];
    for (i, (file, scenario)) in cases.into_iter().enumerate() {
        let out = dir.join(format!("out{i}"));
        std::fs::create_dir_all(out.join(file)).unwrap();
        let args = if scenario.is_empty() {
            wave(&out, &[])
        } else {
            let mut a = scenario;
            a.extend_from_slice(&["--steps", "4", "--threads", "1", "--out", path_str(&out)]);
            a
        };
        let text = refused(&args);
        says(&text, &[file, "is a directory"]);
        assert!(!text.contains("choice:"), "the plan was printed: {text}");
        let left = std::fs::read_dir(&out).unwrap().count();
        assert_eq!(left, 1, "{file}: files were written");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_run_leaves_no_output_directory() {
    let dir = scratch("no-empty-out");
    let out = dir.join("a/b");
    let missing = dir.join("missing.ckpt");
    let runs: [Vec<&str>; 4] = [
        wave(&out, &["--dt", "0.5"]),
        flow("sphere", "3x16x16", &out, &[]),
        flow("cavity", "8", &out, &["--restart", path_str(&missing)]),
        flow("channel", "8x10x6", &out, &["--re", "0"]),
    ];
    for args in runs {
        refused(&args);
        assert!(!dir.join("a").exists(), "{}", args.join(" "));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With --every and --checkpoint-every both given, the pictures come at every multiple of
/// --every and at every multiple of --checkpoint-every, not only at those of the smaller.
#[test]
fn pictures_come_every_every_steps_beside_checkpoints() {
    let dir = scratch("every");
    let (out, ckpt) = (dir.join("out"), dir.join("ck.bin"));
    let extra = [
        "--every",
        "3",
        "--checkpoint-every",
        "2",
        "--checkpoint",
        path_str(&ckpt),
        "--no-vti",
    ];
    let ran = cli(&with(flow("cavity", "8", &out, &extra), "--steps", "7"));
    assert!(ran.status.success(), "{}", stderr(&ran));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["cavity.png", "cavity_0000003.png", "cavity_0000006.png"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A picture cadence that would write more than 100,000 pictures is refused before anything
/// is listed or written (listing 10¹² picture names alone would not end), naming the
/// smallest cadence that is taken.
#[test]
fn a_cadence_of_more_pictures_than_a_run_writes_is_refused() {
    let dir = scratch("cadence");
    let out = dir.join("out");
    let steps = "1000000000000";
    for scenario in ["heat", "cavity"] {
        let text = refused(&[
            "run",
            scenario,
            "--size",
            "16",
            "--steps",
            steps,
            "--every",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        says(&text, &["--every 1", "--every 10000000 or more"]);
        assert!(
            !out.exists(),
            "{scenario}: a refused run left {}",
            out.display()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_heat_picture_beyond_the_size_limit_is_refused_before_the_run() {
    let dir = scratch("heat-picture");
    let out = dir.join("out");
    // The field is 20,000,000 × 3 pixels, within the limit; with its margins the figure is not.
    let text = refused(&[
        "run",
        "heat",
        "--size",
        "20000000x3x3",
        "--steps",
        "1",
        "--out",
        path_str(&out),
    ]);
    says(
        &text,
        &["20000190x113 picture", "larger than a picture may be"],
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A lattice that blows up names the step counted from the start of the command's run, not
/// from the part of it between two progress updates or pictures (parts of at most 76 steps
/// here: a step counted from a part's start would be at most 76). The run is long, so that
/// the checks for a diverged flow come only before the pictures, and the first picture's
/// comes before the densities turn negative.
#[test]
fn a_lattice_blow_up_names_the_step_of_the_whole_run() {
    let dir = scratch("blow-up");
    let step_of = |every: &str| {
        let out = dir.join(format!("every-{every}"));
        let args = [
            "run",
            "sphere",
            "--size",
            "48x24x24",
            "--u-in",
            "0.2",
            "--re",
            "250",
            "--steps",
            "100000",
            "--engine",
            "naive",
            "--threads",
            "1",
            "--no-vti",
            "--every",
            every,
            "--out",
            path_str(&out),
        ];
        let text = refused(&args);
        let at = text
            .find("in time step ")
            .unwrap_or_else(|| panic!("no step in: {text}"));
        let digits: String = text[at + 13..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<usize>().unwrap()
    };
    let whole = step_of("0");
    assert!(
        whole > 76,
        "the blow-up comes at step {whole}, within the first part: the test needs a later one"
    );
    assert_eq!(step_of("76"), whole);
    std::fs::remove_dir_all(&dir).ok();
}

/// A lattice too large for the memory is refused before it is built, counting the second copy
/// a CPU run takes, so that the largest cube it names does run (on the naive engine, which
/// takes no ring buffers besides).
#[test]
fn a_lattice_too_large_names_a_cube_that_runs() {
    let dir = scratch("lattice-memory");
    let out = dir.join("out");
    let budget = ["--tune", "memory_bytes=300000000"];
    let args = [
        &flow("cavity", "300", &out, &["--engine", "naive"])[..],
        &budget[..],
    ]
    .concat();
    let text = refused(&args);
    says(&text, &["second copy", "the largest cube that fits is "]);
    let at = text.find("fits is ").unwrap() + 8;
    let n: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let fits = [
        &flow("cavity", &n, &out, &["--engine", "naive", "--no-vti"])[..],
        &budget[..],
    ]
    .concat();
    let run = cli(&fits);
    assert!(run.status.success(), "{}: {}", n, stderr(&run));
    std::fs::remove_dir_all(&dir).ok();
}

/// A disk that fills while a shot writes its last files (the gather, the last snapshot and
/// the summary) leaves the earlier run's set as it was, no temporary file behind, and says
/// so. Runs on a 1 MiB tmpfs mounted in a mount namespace of its own (`unshare`); skipped,
/// with the reason, where one cannot be made.
#[test]
fn a_full_disk_at_the_end_of_a_shot_keeps_the_earlier_files() {
    let dir = scratch("full-disk");
    let (disk, keep) = (dir.join("disk"), dir.join("keep"));
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::create_dir_all(&keep).unwrap();
    let script = r#"
        set -e
        mount -t tmpfs -o size=1m tmpfs "$D"
        shot() { "$B" run wave --size 24 --pml 8 --snapshots 1 --threads 1 --out "$D/run" "$@"; }
        shot --time 0.09 > /dev/null 2>&1
        cp "$D/run/summary.json" "$K/summary-before.json"
        avail=$(df -B1 --output=avail "$D" | tail -1)
        head -c $((avail - 60000)) /dev/zero > "$D/fill"
        set +e
        shot --time 0.12 > /dev/null 2> "$K/stderr"
        echo $? > "$K/rc"
        ls -a "$D/run" > "$K/listing"
        cp "$D/run/summary.json" "$K/summary-after.json"
    "#;
    let run = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("D", &disk)
        .env("K", &keep)
        .env("B", env!("CARGO_BIN_EXE_stencil35d"))
        .output();
    let read = |name: &str| std::fs::read_to_string(keep.join(name)).unwrap_or_default();
    let ran = run.as_ref().is_ok_and(|r| r.status.success()) && !read("rc").is_empty();
    if !ran {
        let why = run.map_or_else(|e| e.to_string(), |r| stderr(&r));
        eprintln!(
            "skipped: no tmpfs in a mount namespace here ({})",
            why.trim()
        );
        std::fs::remove_dir_all(&dir).ok();
        return;
    }
    assert_ne!(read("rc").trim(), "0", "the shot on a full disk succeeded");
    says(
        &read("stderr"),
        &[
            "steps ran, but its last files",
            "are as they were",
            "No space left",
        ],
    );
    assert_eq!(read("summary-before.json"), read("summary-after.json"));
    let listing = read("listing");
    assert!(!listing.contains(".tmp"), "temporary files left: {listing}");
    std::fs::remove_dir_all(&dir).ok();
}
