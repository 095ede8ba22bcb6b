//! Memory is checked before it is taken: a grid, a lattice, a run or `stencil35d bench` that
//! would not fit in the memory available gets [`Error::OutOfMemory`] naming the largest cube
//! that fits, before anything is allocated; one that fits runs. The figures are injected
//! (`Solver::available_memory`, the `memory_bytes` knob), so the outcome does not depend on
//! this machine's memory.

mod common;

use std::time::Duration;

use stencil35d::lbm::{Cell, Face, Lattice, LbmKernel, Physics};
use stencil35d::lbm::{LATTICE_NODE_BYTES, NODE_WORD_BYTES};
use stencil35d::memory::{self, Footprint};
use stencil35d::{DType, Engine, Error, Grid, PlanBuilder, Solver, Stencil};

const MIB: u64 = 1 << 20;

/// The footprints the library checks, in both precisions.
fn footprints() -> Vec<Footprint> {
    let mut all = Vec::new();
    for dtype in [DType::F32, DType::F64] {
        all.push(Footprint::grids(dtype, 1));
        all.push(Footprint::grids(dtype, 2).plus(3 * MIB));
        all.push(Footprint::lattice(dtype, 2, LATTICE_NODE_BYTES));
        all.push(Footprint::lattice(dtype, 1, 1));
    }
    all
}

#[test]
fn the_largest_cube_fits_and_one_more_does_not() {
    for f in footprints() {
        for budget in [16 * MIB, 1 << 30, 21_300_000_000, 1 << 40] {
            let n = f.largest_cube(budget);
            assert!(n > 0, "{f:?} within {budget}");
            assert!(f.bytes([n; 3]).unwrap() <= budget, "{f:?}: {n}³ > {budget}");
            assert!(f.bytes([n + 1; 3]).unwrap() > budget, "{f:?}: {}³", n + 1);
        }
        assert_eq!(f.largest_cube(0), 0, "nothing fits in no memory");
    }
}

/// A 1500³ f32 grid with its scratch: about 27 GB, as the byte formula of the grid gives.
#[test]
fn a_large_grid_run_needs_what_its_two_grids_take() {
    let run = Footprint::grids(DType::F32, 2);
    let bytes = run.bytes([1500; 3]).unwrap();
    assert!((27.0e9..27.2e9).contains(&(bytes as f64)), "{bytes}");
    let err = run.check([1500; 3], 0, Some(21_300_000_000)).unwrap_err();
    let Error::OutOfMemory {
        largest: largest_cube,
        plane: false,
        ..
    } = err
    else {
        panic!("{err}")
    };
    let usable = memory::usable_host(21_300_000_000);
    assert!(run.bytes([largest_cube; 3]).unwrap() <= usable);
    assert!(run.bytes([largest_cube + 1; 3]).unwrap() > usable);
    assert!(
        run.check([1500; 3], 0, None).is_ok(),
        "unknown memory is not checked"
    );
}

/// A 2D grid too large for memory is answered with the largest square that fits, not a cube.
#[test]
fn a_plane_too_large_names_the_largest_square() {
    let run = Footprint::grids(DType::F32, 3);
    let (dims, available) = ([300_000, 300_000, 1], 21_300_000_000);
    let err = run.check(dims, 0, Some(available)).unwrap_err();
    let Error::OutOfMemory {
        largest: n,
        plane: true,
        ..
    } = err
    else {
        panic!("expected a plane's OutOfMemory, got {err}")
    };
    let usable = memory::usable_host(available);
    assert!(run.bytes([n, n, 1]).unwrap() <= usable, "{err}");
    assert!(run.bytes([n + 1, n + 1, 1]).unwrap() > usable, "{err}");
    assert!(
        err.to_string()
            .contains(&format!("the largest square that fits is {n}x{n}")),
        "{err}"
    );
    assert_eq!(run.largest_square(0), 0, "nothing fits in no memory");
}

fn naive_plan(dims: [usize; 3], dtype: DType) -> stencil35d::Plan {
    PlanBuilder::new(Stencil::seven_point(0.4, 0.1), dtype, dims)
        .engine(Engine::Naive)
        .threads(1)
        .build()
        .unwrap()
}

/// The largest cube the error names must fit the same run from scratch.
fn assert_names_a_fitting_cube(err: &Error, need: &Footprint, dims: [usize; 3], held: u64) {
    let Error::OutOfMemory {
        largest: largest_cube,
        available,
        needed,
        ..
    } = err
    else {
        panic!("expected OutOfMemory, got {err}");
    };
    assert_eq!(*needed, need.bytes(dims).unwrap(), "{err}");
    let n = *largest_cube;
    assert!(n > 0 && n < dims[0], "{err}");
    let usable = memory::usable_host(*available);
    assert!(need.bytes([n; 3]).unwrap() <= usable, "{err}");
    assert!(need.bytes([n + 1; 3]).unwrap() > usable, "{err}");
    assert!(*available >= held, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("the largest cube that fits is {n}³")),
        "{msg}"
    );
}

#[test]
fn a_grid_run_that_does_not_fit_is_refused_and_one_that_fits_runs() {
    let dims = [128; 3];
    let grid = Grid::<f32>::random(dims, 0.0, 1.0, 3).unwrap();
    let held = Footprint::grids(DType::F32, 1).bytes(dims).unwrap();
    // 8 MiB free besides the grid: its 8.4 MB scratch is more than 90% of that.
    let mut state = grid.clone();
    let err = Solver::new(naive_plan(dims, DType::F32))
        .available_memory(8 * MIB)
        .run(&mut state, 2)
        .unwrap_err();
    assert_names_a_fitting_cube(&err, &Footprint::grids(DType::F32, 2), dims, held);
    assert!(
        err.to_string().contains("128³ f32 grid with its scratch"),
        "{err}"
    );
    assert!(state == grid, "a refused run leaves the grid alone");

    let mut fits = grid.clone();
    Solver::new(naive_plan(dims, DType::F32))
        .available_memory(10 * MIB)
        .run(&mut fits, 2)
        .unwrap();
    let mut unchecked = grid.clone();
    Solver::new(naive_plan(dims, DType::F32))
        .run(&mut unchecked, 2)
        .unwrap();
    assert!(
        fits == unchecked,
        "a run that fits runs as without a figure"
    );
}

#[test]
fn a_blocked_run_counts_its_ring_buffers() {
    let dims = [96, 96, 64];
    let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F64, dims)
        .engine(Engine::Blocked)
        .threads(1)
        .build()
        .unwrap();
    let rings = (plan.chosen().working_set * plan.tile_groups()) as u64;
    let grid = Footprint::grids(DType::F64, 1).bytes(dims).unwrap();
    let mut state = Grid::<f64>::random(dims, 0.0, 1.0, 5).unwrap();
    // Room for the scratch grid but not for it and the rings.
    let room = ((grid + rings / 2) as f64 / memory::USABLE_SHARE) as u64;
    let err = Solver::new(plan.clone())
        .available_memory(room)
        .run(&mut state, 3)
        .unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("ring buffers"), "{err}");
    let room = ((grid + rings) as f64 / memory::USABLE_SHARE) as u64 + 1;
    let solver = Solver::new(plan);
    let mut solver = solver.available_memory(room);
    solver.run(&mut state, 3).unwrap();
    // The scratch grid is kept for the next run, whose rings are still checked: with less
    // memory than they take, the next run is refused before any step.
    let mut solver = solver.available_memory((rings as f64 / 2.0 / memory::USABLE_SHARE) as u64);
    let before = state.clone();
    let err = solver.run(&mut state, 3).unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { .. }) && err.to_string().contains("ring buffers"),
        "{err}"
    );
    assert_eq!(state, before);
}

fn cavity(n: usize) -> Lattice<f32> {
    let mut lat = Lattice::<f32>::new([n; 3], Physics::bgk(0.6)).unwrap();
    for face in Face::ALL {
        lat.set_face(face, Cell::Wall).unwrap();
    }
    lat
}

#[test]
fn a_lattice_run_that_does_not_fit_is_refused_and_one_that_fits_runs() {
    let dims = [32; 3];
    let lat = cavity(32);
    let plan = PlanBuilder::new(LbmKernel::of(&lat), DType::F32, dims)
        .engine(Engine::Naive)
        .threads(1)
        .build()
        .unwrap();
    // Populations and flags are held; the second copy and the node classes are not.
    let held = Footprint::lattice(DType::F32, 1, 1).bytes(dims).unwrap();
    let need = Footprint::lattice(DType::F32, 2, LATTICE_NODE_BYTES);
    let new = need.bytes(dims).unwrap() - held;
    let mut state = lat.clone();
    let err = Solver::new(plan.clone())
        .available_memory(new)
        .run(&mut state, 2)
        .unwrap_err();
    assert_names_a_fitting_cube(&err, &need, dims, held);
    assert!(
        err.to_string()
            .contains("D3Q19 lattice with its second copy"),
        "{err}"
    );
    assert_eq!(state.steps(), 0);

    let room = (new as f64 / memory::USABLE_SHARE) as u64 + 1;
    Solver::new(plan)
        .available_memory(room)
        .run(&mut state, 2)
        .unwrap();
    assert_eq!(state.steps(), 2);
}

/// Hundreds of terabytes pass the address-space check but no machine's memory: the
/// constructors refuse them up front (where the system's figure is known).
#[test]
fn constructors_refuse_what_the_machine_cannot_hold() {
    if memory::available().is_none() {
        println!("skipped: no memory figure on this system");
        return;
    }
    let err = Grid::<f32>::new([1 << 15, 1 << 15, 1 << 16]).unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { largest, .. } if largest > 0),
        "{err}"
    );
    let err = Lattice::<f64>::new([1 << 14; 3], Physics::bgk(0.6)).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("D3Q19 lattice"), "{err}");
}

/// Runs the CLI with `args`, killed after `limit`: its exit status, stderr and wall time.
fn cli(args: &[&str], limit: Duration) -> (Option<i32>, String, Duration) {
    let (out, took, _) = common::cli_within(args, limit);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, took)
}

/// Runs `bench` with `args` on a pretend machine with 1 GiB to spare and checks that it fails
/// at once, naming `what` and the largest cube that fits, `fits`.
fn refused_in_bench(args: &[&str], what: &str, fits: usize) {
    let mut all = vec!["--tune", "memory_bytes=1073741824", "bench"];
    all.extend_from_slice(args);
    let (code, stderr, took) = cli(&all, Duration::from_secs(10));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(took < Duration::from_secs(3), "took {took:?}: {stderr}");
    assert!(
        stderr.contains(what) && stderr.contains(&format!("the largest cube that fits is {fits}³")),
        "{stderr}"
    );
}

/// The `memory_bytes` knob is a budget for all a run holds: unlike the system's figure it does
/// not shrink as the state is allocated, so the state counts against it. `run heat` checks its
/// grid and scratch before filling the grid; a lattice run's second copy is refused beside
/// the lattice it holds (were it checked against the whole budget, a run could take twice
/// the budget).
#[test]
fn the_memory_knob_is_a_budget_for_the_state_and_its_scratch() {
    let room = memory::usable_host(1 << 30);
    let dir = std::env::temp_dir().join(format!("stencil35d-knob-{}", std::process::id()));
    let out = dir.to_str().unwrap();
    let cases = [
        (
            "heat",
            Footprint::grids(DType::F32, 2),
            "f32 grid in run heat",
        ),
        (
            "cavity",
            Footprint::lattice(DType::F32, 2, LATTICE_NODE_BYTES),
            "f32 D3Q19 lattice with its second copy",
        ),
    ];
    for (scenario, footprint, what) in cases {
        let fits = footprint.largest_cube(room);
        let size = (fits + 1).to_string();
        let args = [
            "--tune",
            "memory_bytes=1073741824",
            "run",
            scenario,
            "--engine",
            "naive",
            "--size",
            &size,
            "--steps",
            "1",
            "--out",
            out,
        ];
        let (code, stderr, _) = cli(&args, Duration::from_secs(60));
        assert_eq!(code, Some(1), "{scenario}: {stderr}");
        assert!(
            stderr.contains(what)
                && stderr.contains(&format!("the largest cube that fits is {fits}³")),
            "{scenario}: {stderr}"
        );
        assert!(
            !dir.exists(),
            "{scenario}: a refused run leaves no output directory"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench --size 1500` on a machine with 1 GiB to spare fails at once, naming the size that
/// fits its input, working copy and scratch, instead of being killed a minute into the run.
#[test]
fn bench_refuses_a_grid_that_does_not_fit_at_once() {
    let room = memory::usable_host(1 << 30);
    let n = Footprint::grids(DType::F32, 3).largest_cube(room);
    refused_in_bench(&["--size", "1500"], "1500³ f32 grid in bench", n);

    let n = Footprint::lattice(DType::F32, 3, 2 * LATTICE_NODE_BYTES).largest_cube(room);
    refused_in_bench(
        &["--kernel", "d3q19", "--size", "600"],
        "600³ f32 D3Q19 lattice in bench",
        n,
    );

    // One engine without --verify is timed on the input itself: the lattice, the node words a
    // GPU run of a walled lattice (the cavity) builds and, for a run that may update in place,
    // the copy it downloads into. In 16-bit storage the lattice also keeps its codes (2 bytes a
    // population): the largest native cube does not fit, and the error names the smaller one
    // that does.
    let alone = |copies, codes| {
        let node = LATTICE_NODE_BYTES + NODE_WORD_BYTES + codes;
        Footprint::lattice(DType::F32, copies, node).largest_cube(room)
    };
    let (native, m) = (alone(2, 0), alone(2, 2 * 19));
    assert!(m < native, "codes take room: {m} < {native}");
    assert!(native > n, "one state takes less than two: {native} > {n}");
    let f16s = [
        "--kernel",
        "d3q19",
        "--storage",
        "f16s",
        "--engine",
        "gpu-naive",
    ];
    let size = native.to_string();
    refused_in_bench(
        &[&f16s[..], &["--size", &size]].concat(),
        &format!("{native}³ f32 D3Q19 lattice in bench (input, scratch)"),
        m,
    );
    // Two copies download into the lattice itself: no second copy on the host.
    let k = alone(1, 2 * 19);
    assert!(k > m, "two copies hold less on the host: {k} > {m}");
    let size = (k + 1).to_string();
    refused_in_bench(
        &[&f16s[..], &["--two-copies", "--size", &size]].concat(),
        &format!("{}³ f32 D3Q19 lattice in bench (input)", k + 1),
        k,
    );
}
