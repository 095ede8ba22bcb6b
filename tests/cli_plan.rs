//! The planner's options on the command line: a thread count, step count or tile beyond what
//! can run is refused at once with a message in the options' words (no Rust `None`, no
//! repeated prefixes); an option that needs a GPU says there is none rather than being
//! silently ignored.

mod common;

use std::time::Duration;

/// Runs the tool with `args`; its exit success, stdout and stderr. Fails the test when the
/// tool had to be killed: each of these runs must end (or be refused) at once.
fn cli(args: &[&str]) -> (bool, String, String) {
    let (out, took, killed) = common::cli_within(args, Duration::from_secs(60));
    assert!(!killed, "{args:?} ran for {took:?} without being refused");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Far more threads than the machine's cores would crawl through the barriers for ever: the
/// command line refuses them at once, and so does the planner (for a library caller), naming
/// the limit.
#[test]
fn a_thread_count_that_could_not_finish_is_refused() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let too_many = (64 * cores + 1).to_string();
    let (ok, _, err) = cli(&[
        "bench",
        "--size",
        "16",
        "--steps",
        "1",
        "--threads",
        &too_many,
    ]);
    assert!(!ok && err.contains("64 for each of"), "{err}");
    let (ok, out, err) = cli(&[
        "plan",
        "--size",
        "16",
        "--threads",
        &(64 * cores).to_string(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("set by user"), "{out}");
    let mut machine = stencil35d::Machine::detect().clone();
    machine.cores = 2;
    let plan = |threads| {
        let heat = stencil35d::Stencil::seven_point(0.4, 0.1);
        stencil35d::PlanBuilder::new(heat, stencil35d::DType::F32, [16, 16, 16])
            .machine(machine.clone())
            .threads(threads)
            .build()
    };
    let err = plan(129).expect_err("129 threads on 2 cores").to_string();
    assert!(err.contains("64 for each of 2 logical cores"), "{err}");
    assert!(plan(128).is_ok());
}

/// A step count whose cell updates overflow 64 bits, or that the plan predicts to take
/// longer than a year, is refused before the run starts.
#[test]
fn a_step_count_beyond_any_run_is_refused() {
    let max = usize::MAX.to_string();
    let (ok, _, err) = cli(&["bench", "--size", "16", "--steps", &max, "--repeat", "1"]);
    assert!(!ok && err.contains("64-bit count"), "{err}");
    let years = (u64::MAX / 4096 / 2).to_string();
    let (ok, _, err) = cli(&["bench", "--size", "16", "--steps", &years, "--repeat", "1"]);
    assert!(!ok && err.contains("years"), "{err}");
}

/// A tile far larger than the grid is the grid's tile: the plan's working set stays the
/// grid's, not an overflowed sum, in 3D and 2D, and where the blocked engine runs it the plan
/// warns that the tile set was narrowed.
#[test]
fn a_tile_beyond_the_grid_covers_it_once() {
    let huge = format!("{}x{}", usize::MAX, usize::MAX);
    for kernel in ["star7", "box27", "star2d:1", "conv2d:3x3"] {
        let (ok, out, err) = cli(&["plan", "--kernel", kernel, "--size", "32", "--tile", &huge]);
        assert!(ok, "{kernel}: {err}");
        let (warnings, report): (Vec<&str>, Vec<&str>) =
            out.lines().partition(|l| l.starts_with("warning:"));
        let report = report.join("\n");
        assert!(!report.contains(&usize::MAX.to_string()), "{kernel}: {out}");
        assert!(!report.contains("GiB"), "{kernel}: {out}");
        if report.contains("engine blocked") {
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains(&format!("the tile {huge} set is larger"))),
                "{kernel}: {out}"
            );
        }
    }
}

/// Options that need a GPU say so on a machine without one (and are refused or ignored by
/// name on one with a GPU), never print Rust's `None`.
#[test]
fn gpu_options_explain_themselves() {
    let (_, out, err) = cli(&["plan", "--size", "32", "--block", "33x4"]);
    assert!(!err.contains("None") && !out.contains("None"), "{err}");
    let (ok, out, err) = cli(&["plan", "--size", "32", "--autotune"]);
    assert!(ok, "{err}");
    if stencil35d::gpu::detect_gpu().is_err() {
        assert!(out.contains("no GPU is available"), "{out}");
        assert!(out.contains("nothing was timed"), "{out}");
    }
}

/// 16-bit lattice storage on a machine without a GPU says there is none, whatever engine runs;
/// on one with a GPU a CPU engine is refused by name.
#[test]
fn sixteen_bit_storage_says_what_it_needs() {
    let mut args = vec![
        "bench",
        "--kernel",
        "d3q19",
        "--size",
        "24",
        "--storage",
        "f16c",
        "--steps",
        "1",
    ];
    if stencil35d::gpu::detect_gpu().is_err() {
        let (ok, _, err) = cli(&args);
        assert!(!ok && err.contains("no GPU is available"), "{err}");
        assert!(!err.contains("choose gpu-naive"), "{err}");
    } else {
        args.extend(["--engine", "naive"]);
        let (ok, _, err) = cli(&args);
        assert!(
            !ok && err.contains("'naive' keeps the lattice's own precision"),
            "{err}"
        );
    }
}

/// A malformed environment variable is refused by name, unless `--tune` sets its knob, as the
/// help says `--tune` overrides it.
#[test]
fn tune_overrides_a_malformed_environment_variable() {
    let plan = |tune: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_stencil35d"))
            .args(["plan", "--size", "32"])
            .args(tune)
            .env("STENCIL35D_BANDWIDTH_GBS", "abc")
            .output()
            .unwrap()
    };
    let refused = plan(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("STENCIL35D_BANDWIDTH_GBS=abc"),
        "{err}"
    );
    let ran = plan(&["--tune", "bandwidth_gbs=10"]);
    let out = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success() && out.contains("10.0 GB/s"), "{out}");
}

/// `plan` refuses the cavity without fluid that `bench` refuses; a periodic box of the same
/// size is a lattice of fluid and is planned.
#[test]
fn plan_refuses_a_cavity_without_fluid_as_bench_does() {
    for command in ["plan", "bench"] {
        let (ok, _, err) = cli(&[command, "--kernel", "d3q19", "--size", "2x8x8"]);
        assert!(!ok && err.contains("holds no fluid"), "{command}: {err}");
    }
    let (ok, _, err) = cli(&["plan", "--kernel", "d3q19:periodic", "--size", "2x8x8"]);
    assert!(ok, "{err}");
}

/// An edge filter grows the benchmark's values at each application: past what f32 holds,
/// `bench` says so and what to lower; within it, the filter is timed.
#[test]
fn a_convolution_that_outgrows_f32_names_its_applications() {
    let args = |steps| {
        [
            "bench", "--kernel", "conv2d", "--filter", "sobel", "--size", "24", "--steps", steps,
            "--engine", "naive",
        ]
    };
    let (ok, _, err) = cli(&args("43"));
    assert!(
        !ok && err.contains("within the 130 applications bench makes"),
        "{err}"
    );
    assert!(err.contains("time fewer --steps or --repeat"), "{err}");
    let (ok, _, err) = cli(&args("14"));
    assert!(ok, "{err}");
}

/// A GPU launch shape for a wave kernel on a machine without a GPU says there is none; a
/// convolution's size error names the kernel as written; the reference engine's row counts
/// the one thread it runs on.
#[test]
fn wave_shapes_convolutions_and_the_reference_say_what_they_are() {
    if stencil35d::gpu::detect_gpu().is_err() {
        let (ok, _, err) = cli(&[
            "plan", "--kernel", "wave:8", "--size", "48", "--pml", "10", "--block", "32x4",
        ]);
        assert!(!ok && err.contains("no GPU is available"), "{err}");
    }
    let (ok, _, err) = cli(&["plan", "--kernel", "conv2d:0x3"]);
    assert!(
        !ok && err.contains("kernel 'conv2d:0x3'") && !err.contains("dense"),
        "{err}"
    );
    let (ok, out, err) = cli(&[
        "bench",
        "--size",
        "16",
        "--steps",
        "1",
        "--repeat",
        "1",
        "--engine",
        "reference",
        "--threads",
        "2",
        "--json",
    ]);
    assert!(ok, "{err}");
    let row: serde_json::Value = serde_json::from_str(out.lines().next().unwrap_or("")).unwrap();
    assert_eq!(row["threads"], 1, "{out}");
}

/// A bad tuning value is reported once, naming the knob and the values it takes.
#[test]
fn a_bad_tuning_value_is_named_once() {
    let (ok, _, err) = cli(&["--tune", "isa=bogus", "plan", "--size", "16"]);
    assert!(!ok, "{err}");
    assert_eq!(err.matches("invalid argument").count(), 1, "{err}");
    assert!(err.contains("isa=bogus") && err.contains("avx512"), "{err}");
}
