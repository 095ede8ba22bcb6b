//! Checkpoints and the checks around them: the hash covers the header as well as the payload,
//! a file of another format version or of another scenario or geometry is refused with an error
//! naming both sides, round trips stay bit-exact, and the command line refuses unwritable
//! checkpoint and output paths (and a zero thread count) before the first step.

mod lbm_common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use lbm_common::{assert_bitwise_equal, run, Scenario, Setup};
use stencil35d::lbm::{CheckpointTag, Lattice, Physics};
use stencil35d::{Error, Real};

/// A file name in the temporary directory, unique to this test process.
fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("stencil35d-ckpt-{}-{name}", std::process::id()))
}

/// An 8x6x4 lattice with walls, a moving lid and a random state, after 3 steps (so `steps` is
/// not zero), saved to a file named `name`; returns the lattice, the path and the bytes.
fn saved<T: Real>(name: &str) -> (Lattice<T>, PathBuf, Vec<u8>) {
    let lat = Scenario::Cavity.lattice::<T>([8, 6, 4], Physics::trt(0.7, 0.25), 7);
    let lat = run(&lat, Setup::reference(), 3);
    let path = temp_path(name);
    lat.save_tagged(&path, &CheckpointTag::new("cavity", "8x6x4"))
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (lat, path, bytes)
}

/// `bytes` with the first occurrence of `from` in the header replaced by `to`.
fn edit_header(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let header_end = bytes
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    let header = std::str::from_utf8(&bytes[..header_end]).unwrap();
    assert!(header.contains(from), "{from} not in {header}");
    let mut out = header.replacen(from, to, 1).into_bytes();
    out.extend_from_slice(&bytes[header_end..]);
    out
}

/// Writes `bytes` to `path` and returns the error loading it gives.
fn load_error(path: &Path, bytes: &[u8]) -> Error {
    std::fs::write(path, bytes).unwrap();
    match Lattice::<f32>::load(path) {
        Ok(_) => panic!("an edited or corrupt checkpoint was loaded"),
        Err(e) => e,
    }
}

#[test]
fn round_trip_is_bitwise_and_keeps_the_tag() {
    let (lat, path, _) = saved::<f64>("round-trip.ckpt");
    let (back, tag) = Lattice::<f64>::load_tagged(&path).unwrap();
    assert_bitwise_equal(&lat, &back);
    assert_eq!(tag, CheckpointTag::new("cavity", "8x6x4"));
    // A plain save has no scenario and loads with either call.
    lat.save(&path).unwrap();
    let (plain, tag) = Lattice::<f64>::load_tagged(&path).unwrap();
    assert!(tag.is_none(), "{tag}");
    assert_bitwise_equal(&lat, &plain);
    assert_bitwise_equal(&lat, &Lattice::<f64>::load(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
}

/// Only the hash can catch this edit: the header stays valid and the payload untouched.
#[test]
fn edited_steps_in_the_header_are_refused() {
    let (lat, path, bytes) = saved::<f32>("steps.ckpt");
    assert_eq!(lat.steps(), 3);
    let edited = edit_header(&bytes, "\"steps\":3", "\"steps\":3000");
    let err = load_error(&path, &edited);
    assert!(err.to_string().contains("hash"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

/// Swapping two dimensions keeps the node count and so the payload size: only the hash can
/// catch it.
#[test]
fn edited_dimensions_in_the_header_are_refused() {
    let (_, path, bytes) = saved::<f32>("dims.ckpt");
    let edited = edit_header(&bytes, "\"dims\":[8,6,4]", "\"dims\":[4,6,8]");
    let err = load_error(&path, &edited);
    assert!(err.to_string().contains("hash"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

/// The recorded scenario is covered too: a checkpoint cannot be relabelled.
#[test]
fn edited_scenario_in_the_header_is_refused() {
    let (_, path, bytes) = saved::<f32>("scenario.ckpt");
    let edited = edit_header(&bytes, "\"scenario\":\"cavity\"", "\"scenario\":\"sphere\"");
    let err = load_error(&path, &edited);
    assert!(err.to_string().contains("hash"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn payload_bit_flip_is_refused() {
    let (_, path, bytes) = saved::<f32>("flip.ckpt");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 5;
    flipped[last] ^= 0x01;
    let err = load_error(&path, &flipped);
    assert!(err.to_string().contains("hash"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn another_format_version_is_refused_naming_it() {
    let (_, path, bytes) = saved::<f32>("version.ckpt");
    let edited = edit_header(&bytes, "\"version\":2", "\"version\":1");
    let err = load_error(&path, &edited);
    let text = err.to_string();
    assert!(text.contains("version 1"), "{text}");
    assert!(text.contains("version 2"), "{text}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn scenario_mismatch_is_refused_naming_both() {
    let (_, path, _) = saved::<f32>("mismatch.ckpt");
    let (_, found) = Lattice::<f32>::load_tagged(&path).unwrap();
    found
        .expect(&CheckpointTag::new("cavity", "8x6x4"), &path)
        .unwrap();
    for run in [
        CheckpointTag::new("sphere", "8x6x4, sphere radius 1"),
        CheckpointTag::new("cavity", "16x16x16"),
    ] {
        let err = found.expect(&run, &path).unwrap_err();
        assert!(matches!(err, Error::CheckpointMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("'cavity' 8x6x4"), "{text}");
        assert!(
            text.contains(&format!("'{}' {}", run.scenario, run.geometry)),
            "{text}"
        );
    }
    std::fs::remove_file(&path).unwrap();
}

/// The tag comes from the header alone, so a restart refuses another run's file before it
/// reads the lattice: here a file whose payload is cut short, which only a load refuses.
#[test]
fn the_tag_is_read_from_the_header_alone() {
    let (_, path, bytes) = saved::<f32>("tag-only.ckpt");
    let preamble = bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(2)
        .map(|(i, _)| i + 1)
        .unwrap();
    std::fs::write(&path, &bytes[..preamble + 10]).unwrap();
    let tag = Lattice::<f32>::checkpoint_tag(&path).unwrap();
    assert_eq!(tag, CheckpointTag::new("cavity", "8x6x4"));
    let err = tag
        .expect(
            &CheckpointTag::new("sphere", "8x6x4, sphere radius 1"),
            &path,
        )
        .unwrap_err();
    assert!(matches!(err, Error::CheckpointMismatch { .. }), "{err}");
    assert!(Lattice::<f32>::load_tagged(&path).is_err());
    std::fs::remove_file(&path).unwrap();
}

/// Runs the command-line tool with `args`; fails when it is still running after `limit` (a
/// check that should refuse the run at once did not).
fn cli(args: &[&str], limit: Duration) -> (Output, Duration) {
    let (out, took, killed) = lbm_common::cli_within(args, limit);
    assert!(
        !killed,
        "stencil35d {} still ran after {limit:?}: {}",
        args.join(" "),
        stderr(&out)
    );
    (out, took)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A cavity checkpoint restarted as a sphere run, as a cavity of another size or with another
/// Reynolds number or lid speed, is refused naming both runs; the matching restart runs.
#[test]
fn cli_restart_refuses_another_scenario_or_geometry() {
    let dir = temp_path("cli-restart");
    let ckpt = dir.join("cavity.ckpt");
    let (ckpt_s, out_s) = (ckpt.to_str().unwrap(), dir.join("out"));
    let out_s = out_s.to_str().unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let limit = Duration::from_secs(120);
    let base = ["--steps", "4", "--no-vti", "--out", out_s, "--threads", "1"];
    let args = |scenario: &str, size: &str, extra: &[&str]| {
        let mut a = vec!["run", scenario, "--size", size];
        a.extend_from_slice(&base);
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let call = |a: Vec<String>| cli(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>(), limit).0;
    let first = call(args("cavity", "10", &["--checkpoint", ckpt_s]));
    assert!(first.status.success(), "{}", stderr(&first));
    // A sphere that fits its lattice: the scenario's own options are checked first.
    let sphere = call(args("sphere", "16", &["--restart", ckpt_s]));
    assert!(!sphere.status.success());
    let text = stderr(&sphere);
    assert!(
        text.contains("scenario 'cavity' 10x10x10") && text.contains("scenario 'sphere'"),
        "{text}"
    );
    let resized = call(args("cavity", "12", &["--restart", ckpt_s]));
    assert!(!resized.status.success());
    let text = stderr(&resized);
    assert!(
        text.contains("'cavity' 10x10x10") && text.contains("'cavity' 12x12x12"),
        "{text}"
    );
    for physics in [["--re", "400"], ["--lid", "0.05"]] {
        let other = call(args(
            "cavity",
            "10",
            &["--restart", ckpt_s, physics[0], physics[1]],
        ));
        assert!(!other.status.success());
        let text = stderr(&other);
        assert!(
            text.contains("'cavity' 10x10x10, Re 100, lid 0.1") && text.contains(physics[1]),
            "{text}"
        );
    }
    let same = call(args("cavity", "10", &["--restart", ckpt_s]));
    assert!(same.status.success(), "{}", stderr(&same));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Refused at once, not after a billion steps: the tool must exit within the limit.
/// SIGTERM or SIGINT while the tool writes a checkpoint every step ends it with the signal's
/// status and leaves no hidden temporary file beside the checkpoint (its handler removes the
/// writes in progress); the checkpoint left is whole, and a run restarts from it.
#[cfg(unix)]
#[test]
fn cli_a_signal_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    // A signal between two writes finds nothing to remove: four of them, each at a time the
    // writes take most of, all but rule that out.
    let signals = [libc::SIGTERM, libc::SIGINT, libc::SIGTERM, libc::SIGINT];
    for (round, signal) in signals.into_iter().enumerate() {
        let dir = temp_path(&format!("signal-{round}"));
        std::fs::create_dir_all(&dir).unwrap();
        let ckpt = dir.join("state.ckpt");
        let out = dir.join("out");
        let (ckpt_s, out_s) = (ckpt.to_str().unwrap(), out.to_str().unwrap());
        let mut child = Command::new(env!("CARGO_BIN_EXE_stencil35d"))
            .args(["run", "cavity", "--size", "48", "--steps", "1000000"])
            .args([
                "--checkpoint",
                ckpt_s,
                "--checkpoint-every",
                "1",
                "--out",
                out_s,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Checkpoints of 8 MB, synced to disk each step, take most of the run's time.
        let start = std::time::Instant::now();
        while !ckpt.exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100 + 150 * round as u64));
        // SAFETY: kill(2) with the child's pid and a signal number.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        let left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let (restarted, _) = cli(
            &[
                "run",
                "cavity",
                "--size",
                "48",
                "--restart",
                ckpt_s,
                "--steps",
                "1",
                "--out",
                out_s,
            ],
            Duration::from_secs(120),
        );
        assert!(restarted.status.success(), "{}", stderr(&restarted));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn cli_unwritable_checkpoint_is_refused_before_any_step() {
    let path = "/nonexistent-stencil35d/dir/x.ckpt";
    let (out, took) = cli(
        &[
            "run",
            "cavity",
            "--size",
            "10",
            "--steps",
            "1000000000",
            "--no-vti",
            "--threads",
            "1",
            "--checkpoint",
            path,
        ],
        Duration::from_secs(20),
    );
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains(path) && text.contains("does not exist"),
        "{text}"
    );
    assert!(
        !text.contains("restarting") && !text.contains("choice:"),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// An output directory that exists but takes no files (`/proc` refuses new files even to
/// root) is refused at once, for a flow scenario and for heat.
#[cfg(target_os = "linux")]
#[test]
fn cli_unwritable_out_dir_is_refused_before_any_step() {
    if !Path::new("/proc/self").exists() || std::fs::write("/proc/stencil35d-probe", b"").is_ok() {
        eprintln!("skipped: /proc is not a read-only procfs here");
        return;
    }
    for scenario in ["cavity", "heat"] {
        let (out, took) = cli(
            &[
                "run",
                scenario,
                "--size",
                "10",
                "--steps",
                "1000000000",
                "--threads",
                "1",
                "--out",
                "/proc",
            ],
            Duration::from_secs(20),
        );
        assert!(!out.status.success());
        let text = stderr(&out);
        assert!(
            text.contains("cannot write the output directory /proc"),
            "{scenario}: {text}"
        );
        assert!(took < Duration::from_secs(10), "{scenario}: took {took:?}");
    }
}

#[test]
fn cli_thread_counts() {
    let limit = Duration::from_secs(60);
    let (zero, _) = cli(&["plan", "--size", "16", "--threads", "0"], limit);
    assert!(!zero.status.success());
    assert!(stderr(&zero).contains("at least 1"), "{}", stderr(&zero));
    let cores = stencil35d::Machine::usable_cores();
    let many = (2 * cores).to_string();
    let (over, _) = cli(&["plan", "--size", "16", "--threads", &many], limit);
    assert!(over.status.success(), "{}", stderr(&over));
    let text = stderr(&over);
    assert!(
        text.contains("warning")
            && text.contains(&format!("--threads {many}"))
            && text.contains(&format!("{cores} logical cores")),
        "{text}"
    );
    let (fits, _) = cli(&["plan", "--size", "16", "--threads", "1"], limit);
    assert!(fits.status.success(), "{}", stderr(&fits));
    assert!(!stderr(&fits).contains("warning"), "{}", stderr(&fits));
}

/// A lattice in 16-bit storage keeps its storage and its exact codes through a checkpoint: the
/// file holds 2 bytes a population (about half an f32 file) and loads back bit for bit; an f64
/// lattice cannot take 16-bit storage, and neither can a plan without a GPU engine.
#[test]
fn sixteen_bit_storage_round_trips() {
    use stencil35d::lbm::{LbmKernel, Storage};
    use stencil35d::{Engine, PlanBuilder};
    let lat = Scenario::Cavity.lattice::<f32>([9, 7, 5], Physics::trt(0.7, 0.25), 3);
    let native = temp_path("native.lbm");
    lat.save(&native).unwrap();
    for storage in [Storage::F16s, Storage::F16c] {
        let mut l = lat.clone();
        l.set_storage(storage).unwrap();
        assert_eq!(l.storage(), storage);
        // Each stored deviation from the rest equilibrium reads back within the format's unit
        // roundoff of itself, and no deviation exceeds the largest population, to which the
        // max-norm difference is relative.
        let diff = l.max_rel_diff(&lat).unwrap();
        assert!(
            diff > 0.0 && diff <= storage.unit_roundoff(),
            "{storage}: rounding changed {diff:e}"
        );
        let path = temp_path(&format!("{storage}.lbm"));
        l.save(&path).unwrap();
        let (small, full) = (
            std::fs::metadata(&path).unwrap().len(),
            std::fs::metadata(&native).unwrap().len(),
        );
        assert!(small * 10 < full * 6, "{storage}: {small} bytes of {full}");
        let mut back = Lattice::<f32>::load(&path).unwrap();
        assert_eq!(back.storage(), storage);
        assert_bitwise_equal(&l, &back);
        // Asking again for the storage it has keeps the exact state: the same file.
        let saved = std::fs::read(&path).unwrap();
        back.set_storage(storage).unwrap();
        back.save(&path).unwrap();
        assert!(
            std::fs::read(&path).unwrap() == saved,
            "{storage}: codes changed"
        );
        std::fs::remove_file(&path).unwrap();
        let err = PlanBuilder::new(LbmKernel::of(&l), stencil35d::DType::F32, l.dims())
            .engine(Engine::Naive)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("GPU lattice engines"), "{err}");
    }
    std::fs::remove_file(&native).unwrap();
    // A host write after set_storage that leaves a value beyond the format's range (rest
    // density 7: f0 deviates from its rest value 1/3 by 2, past ±1.9995) is refused when
    // saved, and the previous checkpoint stays.
    for storage in [Storage::F16s, Storage::F16c] {
        let mut l = lat.clone();
        l.set_storage(storage).unwrap();
        let path = temp_path(&format!("{storage}-range.lbm"));
        l.save(&path).unwrap();
        let saved = std::fs::read(&path).unwrap();
        l.set_equilibrium(|_, _, _| (7.0, [0.0; 3])).unwrap();
        let err = l.save(&path).unwrap_err().to_string();
        assert!(
            err.contains("beyond what") && err.contains("population 0"),
            "{err}"
        );
        assert!(
            std::fs::read(&path).unwrap() == saved,
            "{storage}: file changed"
        );
        std::fs::remove_file(&path).unwrap();
    }
    let mut wide = Scenario::Cavity.lattice::<f64>([9, 7, 5], Physics::trt(0.7, 0.25), 3);
    let err = wide.set_storage(Storage::F16s).unwrap_err().to_string();
    assert!(err.contains("f32"), "{err}");
    assert_eq!(wide.storage(), Storage::Native);
}
