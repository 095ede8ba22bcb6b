//! The GPU lattice-Boltzmann engine (`gpu-naive` with two copies and in place) against the CPU
//! reference engine: random near-equilibrium states with every boundary kind present (walls,
//! moving walls, inlets, outlets, obstacles, body forces, periodic axes), BGK and TRT, f32 and
//! f64, an odd size, 50 steps (and odd step counts and split runs for the in-place scheme,
//! whose layout is shifted after odd steps); mass conservation in a closed cavity; blow-ups;
//! the errors for what the GPU does not do. Without a GPU every test prints why it skips, or fails where
//! `STENCIL35D_REQUIRE_GPU=1` is set (see `gpu_common`).

mod gpu_common;
mod lbm_common;

use gpu_common::gpu_available;
use lbm_common::{assert_bitwise_equal, closed_cavity, randomize, run, tolerance, Scenario, Setup};
use stencil35d::lbm::{Axis, Cell, Face, Lattice, LbmKernel, Physics, Storage, MAGIC_POISEUILLE};
use stencil35d::{Engine, Error, Plan, PlanBuilder, Real, Solver};

/// An odd size: not a multiple of a warp or a block in any direction.
const DIMS: [usize; 3] = [37, 29, 23];
const STEPS: usize = 50;

fn engine_plan<T: Real>(lat: &Lattice<T>, engine: Engine, in_place: bool) -> Plan {
    PlanBuilder::new(LbmKernel::of(lat), T::DTYPE, lat.dims())
        .engine(engine)
        .in_place(in_place)
        .build()
        .unwrap_or_else(|e| panic!("{engine} plan (in place: {in_place}): {e}"))
}

fn gpu_plan<T: Real>(lat: &Lattice<T>, in_place: bool) -> Plan {
    engine_plan(lat, Engine::GpuNaive, in_place)
}

/// Runs `chunks` (step counts, one `run` call each on one solver) of `engine` on a copy of
/// `input`.
fn run_engine<T: Real>(
    input: &Lattice<T>,
    engine: Engine,
    in_place: bool,
    chunks: &[usize],
) -> Lattice<T> {
    let mut lat = input.clone();
    let mut solver = Solver::new(engine_plan(input, engine, in_place));
    for &steps in chunks {
        let report = solver
            .run(&mut lat, steps)
            .unwrap_or_else(|e| panic!("{engine} (in place: {in_place}): {e}"));
        assert_eq!(report.engine, engine);
        assert!(report.transfer_seconds > 0.0);
    }
    lat
}

/// `run_engine` with gpu-naive.
fn run_gpu<T: Real>(input: &Lattice<T>, in_place: bool, chunks: &[usize]) -> Lattice<T> {
    run_engine(input, Engine::GpuNaive, in_place, chunks)
}

fn compare<T: Real>(got: &Lattice<T>, expected: &Lattice<T>, steps: u64, what: &str) {
    let err = got.max_rel_diff(expected).unwrap();
    println!("{what} {}: max rel err {err:e}", T::DTYPE);
    assert!(
        err <= tolerance::<T>(),
        "{what} {} {:?}: max rel err {err:e}",
        T::DTYPE,
        got.dims()
    );
    assert_eq!(got.steps(), steps, "{what}: step count");
}

/// The scenario with inlets and outlets moved one node inside the walls of the x faces, so the
/// in-place scheme accepts it (every other scenario it takes as is).
fn for_in_place<T: Real>(scenario: Scenario, lat: &Lattice<T>, seed: u64) -> Lattice<T> {
    let mut lat = lat.clone();
    if scenario == Scenario::InletOutlet {
        let [nx, ny, nz] = lat.dims();
        let inlet = lat.cell(0, ny / 2, nz / 2);
        let outlet = lat.cell(nx - 1, ny / 2, nz / 2);
        lat.set_face(Face::XMin, Cell::Wall).unwrap();
        lat.set_face(Face::XMax, Cell::Wall).unwrap();
        for z in 0..nz {
            for y in 1..ny - 1 {
                lat.set_cell(1, y, z, inlet).unwrap();
                lat.set_cell(nx - 2, y, z, outlet).unwrap();
            }
        }
        randomize(&mut lat, seed);
    }
    lat
}

fn scenario<T: Real>(scenario: Scenario, seed: u64) {
    if !gpu_available() {
        return;
    }
    for physics in [Physics::bgk(0.57), Physics::trt(0.9, 3.0 / 16.0)] {
        let what = format!("{scenario:?} {physics}");
        let input = scenario.lattice::<T>(DIMS, physics, seed);
        let expected = run(&input, Setup::reference(), STEPS);
        assert!(
            expected.max_rel_diff(&input).unwrap() > 1e-4,
            "{what}: the reference must change the state"
        );
        compare(
            &run_gpu(&input, false, &[STEPS]),
            &expected,
            STEPS as u64,
            &format!("{what} two copies"),
        );
        compare(
            &run_gpu(&input, false, &[7, 1, 31, 11]),
            &expected,
            STEPS as u64,
            &format!("{what} two copies, runs of 7+1+31+11"),
        );
        let aa_input = for_in_place(scenario, &input, seed);
        let aa_expected = if scenario == Scenario::InletOutlet {
            run(&aa_input, Setup::reference(), STEPS)
        } else {
            expected
        };
        compare(
            &run_gpu(&aa_input, true, &[STEPS]),
            &aa_expected,
            STEPS as u64,
            &format!("{what} in place"),
        );
        // Odd chunks: the state is downloaded from the shifted layout and uploaded again.
        compare(
            &run_gpu(&aa_input, true, &[7, 1, 31, 11]),
            &aa_expected,
            STEPS as u64,
            &format!("{what} in place, runs of 7+1+31+11"),
        );
    }
}

macro_rules! scenario_tests {
    ($($name:ident: $scenario:expr, $seed:expr;)*) => {
        $(
            #[test]
            fn $name() {
                scenario::<f32>($scenario, $seed);
                scenario::<f64>($scenario, $seed);
            }
        )*
    };
}

scenario_tests! {
    cavity: Scenario::Cavity, 1;
    forced_channel: Scenario::ForcedChannel, 2;
    inlet_outlet: Scenario::InletOutlet, 3;
    periodic_x: Scenario::PeriodicX, 4;
    periodic_y: Scenario::PeriodicY, 5;
    periodic_z: Scenario::PeriodicZ, 6;
    periodic_all: Scenario::PeriodicAll, 7;
}

/// Odd step counts of the in-place scheme against the reference, including a single step and
/// a lattice one node thick along a periodic axis (a node that is its own neighbour).
#[test]
fn in_place_odd_steps_and_thin_lattices() {
    if !gpu_available() {
        return;
    }
    for (k, dims) in [[33, 7, 1], [1, 9, 5], [5, 4, 3]].into_iter().enumerate() {
        let mut lat =
            Lattice::<f64>::new(dims, Physics::trt(0.7, 0.25).with_force([1e-4, 0.0, 2e-5]))
                .unwrap();
        for a in Axis::ALL {
            lat.set_periodic(a, true);
        }
        lat.set_cell(0, 0, 0, Cell::Wall).unwrap();
        lat.set_cell(
            0,
            1,
            0,
            Cell::MovingWall {
                velocity: [0.03, 0.0, 0.02],
            },
        )
        .unwrap();
        randomize(&mut lat, 90 + k as u64);
        for steps in [1, 2, 5] {
            let expected = run(&lat, Setup::reference(), steps);
            for in_place in [false, true] {
                compare(
                    &run_gpu(&lat, in_place, &[steps]),
                    &expected,
                    steps as u64,
                    &format!("{dims:?} {steps} steps in place {in_place}"),
                );
            }
        }
    }
}

/// Lattices longer than a launch's 65,535 block rows along z (a pipe) and along y (rows of 128
/// nodes, one row per block) take several launches a step, each from its first block row and
/// plane, and equal the reference in both schemes.
#[test]
fn lattices_longer_than_a_launch() {
    if !gpu_available() {
        return;
    }
    for (k, dims) in [[6, 3, 70_001], [129, 65_537, 2]].into_iter().enumerate() {
        let mut lat =
            Lattice::<f32>::new(dims, Physics::trt(0.8, 0.25).with_force([1e-4, 0.0, 2e-5]))
                .unwrap();
        for a in Axis::ALL {
            lat.set_periodic(a, true);
        }
        lat.set_cell(dims[0] - 1, dims[1] - 1, dims[2] - 1, Cell::Wall)
            .unwrap();
        randomize(&mut lat, 70 + k as u64);
        let expected = run(&lat, Setup::reference(), 3);
        for in_place in [false, true] {
            compare(
                &run_gpu(&lat, in_place, &[3]),
                &expected,
                3,
                &format!("{dims:?} in place {in_place}"),
            );
        }
    }
}

/// A closed cavity with a moving lid and an obstacle loses no mass on the GPU either, in both
/// storage schemes: relative drift ≤ 2e-12 over 1000 steps in f64, the CPU engines' bound
/// (rounding alone, 1.4e-13 observed on the CPU; FMA and another summation order change the
/// rounding, not its size), which a leak of 1e-9 of the mass fails.
#[test]
fn closed_cavity_conserves_mass() {
    if !gpu_available() {
        return;
    }
    let lat = closed_cavity();
    let m0 = lat.mass();
    for in_place in [false, true] {
        let l = run_gpu(&lat, in_place, &[333, 333, 334]);
        let drift = (l.mass() - m0).abs() / m0;
        println!("in place {in_place}: relative mass drift over 1000 steps {drift:.2e}");
        assert!(
            drift <= 2e-12,
            "in place {in_place}: relative mass drift {drift:e}"
        );
        let [ux, _, _] = l.velocity().unwrap();
        assert!(ux.get(11, 17, 8) > 0.01, "no flow under the lid");
    }
}

/// A blow-up is reported with its step, and the lattice keeps the last finite state, as on the
/// CPU.
#[test]
fn blow_up_keeps_the_last_finite_state() {
    if !gpu_available() {
        return;
    }
    let mut lat = Lattice::<f32>::new([20, 12, 9], Physics::bgk(0.5001)).unwrap();
    for a in Axis::ALL {
        lat.set_periodic(a, true);
    }
    lat.set_equilibrium(|x, y, z| {
        let s = ((x * 7 + y * 3 + z) % 11) as f64 / 11.0;
        (1.0 + 0.5 * s, [0.19 * (s - 0.5), 0.1 * s, 0.0])
    })
    .unwrap();
    let cpu = {
        let mut l = lat.clone();
        let plan = Plan::for_lattice(&l)
            .unwrap()
            .with_engine(Engine::Naive)
            .unwrap();
        Solver::new(plan).run(&mut l, 3000).err()
    };
    // The CPU engine is deterministic: this flow blows up there, and the GPU must too.
    let Some(Error::NonFinite { step, .. }) = cpu else {
        panic!("the CPU naive engine did not blow up in 3000 steps: {cpu:?}");
    };
    for (engine, in_place) in [(Engine::GpuNaive, false), (Engine::GpuNaive, true)] {
        let mut l = lat.clone();
        let err = Solver::new(engine_plan(&l, engine, in_place))
            .run(&mut l, 3000)
            .unwrap_err();
        let Error::NonFinite { step: gpu_step, .. } = err else {
            panic!("in place {in_place}: expected a blow-up, got {err}");
        };
        // τ = 0.5001 is chaotic near the blow-up: engines that round differently fail at
        // steps no test can predict, so the step is shown, not compared with the CPU's.
        println!("in place {in_place}: blow-up at step {gpu_step} (CPU naive: {step})");
        assert_eq!(l.steps(), gpu_step as u64 - 1);
        assert!(l.mass().is_finite());
        // The state kept is exactly the one an uninterrupted run reaches after that step.
        let mut again = lat.clone();
        Solver::new(engine_plan(&again, engine, in_place))
            .run(&mut again, gpu_step - 1)
            .unwrap();
        assert_bitwise_equal(&l, &again);
    }
    // In 16-bit storage the replay fetches the failing step and the one before into one set of
    // codes: the lattice must hold exactly the state an uninterrupted run reaches there.
    for in_place in [false, true] {
        let mut input = lat.clone();
        input.set_storage(Storage::F16s).unwrap();
        let mut l = input.clone();
        let plan = engine_plan(&l, Engine::GpuNaive, in_place);
        // The f32 flow blows up well inside 3000 steps; rounding its populations to 16 bits
        // does not calm it.
        let Err(err) = Solver::new(plan.clone()).run(&mut l, 3000) else {
            panic!("f16s, in place {in_place}: no blow-up in 3000 steps");
        };
        let kept = l.steps();
        println!("f16s, in place {in_place}: {err}; kept the state after step {kept}");
        match err {
            Error::NonFinite { step, .. } => assert_eq!(kept, step as u64 - 1),
            Error::Saturated { step, .. } => assert_eq!(kept, step as u64 - 1),
            other => panic!("f16s, in place {in_place}: expected a blow-up, got {other}"),
        }
        // The flow starts smooth: it cannot fail in its first step.
        assert!(kept > 0 && l.mass().is_finite() && l.storage() == Storage::F16s);
        let mut again = input.clone();
        Solver::new(plan).run(&mut again, kept as usize).unwrap();
        assert_bitwise_equal(&l, &again);
    }
}

/// What the GPU does not do is an error, not a panic: gpu-blocked for a lattice (there is
/// none), in-place storage on the CPU or for stencils, and in place with an inlet on a closed
/// face.
#[test]
fn unsupported_requests_are_errors() {
    let lat = Scenario::InletOutlet.lattice::<f32>([12, 10, 8], Physics::bgk(0.7), 1);
    let kernel = LbmKernel::of(&lat);
    let cpu_in_place = PlanBuilder::new(kernel, stencil35d::DType::F32, lat.dims())
        .engine(Engine::Naive)
        .in_place(true)
        .build();
    assert!(matches!(cpu_in_place, Err(Error::InvalidPlan(_))));
    let stencil = PlanBuilder::new(
        stencil35d::Stencil::seven_point(0.4, 0.1),
        stencil35d::DType::F32,
        [16, 16, 16],
    )
    .in_place(true)
    .build();
    assert!(matches!(stencil, Err(Error::InvalidPlan(_))));
    let blocked_in_place = PlanBuilder::new(kernel, stencil35d::DType::F32, lat.dims())
        .engine(Engine::GpuBlocked)
        .in_place(true)
        .build();
    assert!(matches!(blocked_in_place, Err(Error::InvalidPlan(_))));
    match PlanBuilder::new(kernel, stencil35d::DType::F32, lat.dims())
        .engine(Engine::GpuBlocked)
        .build()
    {
        Err(Error::InvalidPlan(e)) => assert!(e.contains("use gpu-naive"), "{e}"),
        other => panic!("gpu-blocked for a lattice must be refused, got {other:?}"),
    }
    if !gpu_available() {
        return;
    }
    let mut l = lat.clone();
    let err = Solver::new(gpu_plan(&l, true)).run(&mut l, 4).unwrap_err();
    assert!(matches!(err, Error::InvalidPlan(_)), "{err}");
    assert_eq!(l.steps(), 0);
    assert_eq!(l.max_rel_diff(&lat).unwrap(), 0.0, "untouched on error");
    let plan = gpu_plan(&lat, true);
    assert!(plan.in_place());
    assert!(plan.to_string().contains("in place"), "{plan}");
}

/// 16-bit storage on every GPU engine stays within its rounding of the f32 reference: each
/// step stores every population once, rounded by at most `u·|d|` (`u` the format's unit
/// roundoff, `d` the deviation from rest), so after `n` steps the error relative to the largest
/// population is below `n·u·max|d|/max|f|` (times 2 for the propagation through the collision).
/// Runs split across calls continue from the exact codes (bit for bit), and in place equals two
/// copies bit for bit.
#[test]
fn sixteen_bit_storage_tracks_the_reference() {
    if !gpu_available() {
        return;
    }
    for storage in [Storage::F16s, Storage::F16c] {
        for (k, scenario) in [Scenario::Cavity, Scenario::ForcedChannel]
            .into_iter()
            .enumerate()
        {
            let input = scenario.lattice::<f32>(DIMS, Physics::trt(0.9, 3.0 / 16.0), 11 + k as u64);
            let expected = run(&input, Setup::reference(), STEPS);
            let mut lat = input.clone();
            lat.set_storage(storage).unwrap();
            let tol = 2.0
                * STEPS as f64
                * storage.unit_roundoff()
                * 3.0
                * stencil35d::lbm::test_flows::max_deviation(&input);
            for (engine, in_place) in [(Engine::GpuNaive, false), (Engine::GpuNaive, true)] {
                let got = run_engine(&lat, engine, in_place, &[STEPS]);
                let err = got.max_rel_diff(&expected).unwrap();
                println!("{storage} {scenario:?} {engine} in place {in_place}: {err:.2e} (bound {tol:.2e})");
                assert!(
                    err <= tol,
                    "{storage} {scenario:?} {engine} in place {in_place}: {err:e}"
                );
                assert_eq!(got.storage(), storage);
            }
            let whole = run_engine(&lat, Engine::GpuNaive, false, &[21]);
            assert_bitwise_equal(&whole, &run_engine(&lat, Engine::GpuNaive, false, &[8, 13]));
            assert_bitwise_equal(&whole, &run_engine(&lat, Engine::GpuNaive, true, &[21]));
            assert_bitwise_equal(&whole, &run_engine(&lat, Engine::GpuNaive, true, &[5, 16]));
        }
    }
}

/// Plane Poiseuille flow on the GPU in each 16-bit storage (`lbm::test_flows`, as the emulated
/// test): within 1% (relative L2) of the parabola in a 14-cell channel at τ = 1.5.
#[test]
fn sixteen_bit_poiseuille_profile() {
    use stencil35d::lbm::test_flows;
    if !gpu_available() {
        return;
    }
    for storage in [Storage::F16s, Storage::F16c] {
        let lat = run_gpu(
            &test_flows::channel(32, 8, storage),
            true,
            &[test_flows::STEPS],
        );
        let rel = test_flows::profile_error(&lat, 7, 3);
        println!("Poiseuille in {storage} on the GPU: relative L2 error {rel:.2e}");
        assert!(rel <= 0.01, "{storage}: relative L2 error {rel:e}");
    }
}

/// A lid-driven cavity (64³, Re 100 at lid speed 0.1) in 16-bit storage: after 6000 steps the
/// velocities along the vertical and horizontal centre lines are within 1% of the lid speed of
/// the f32 run; the relative mass drift of the closed box is stated (f32 storage: rounding
/// level) and bounded by 1e-3.
#[test]
fn sixteen_bit_cavity_matches_f32() {
    if !gpu_available() {
        return;
    }
    let n = 64;
    let lid = 0.1;
    let tau = 0.5 + 3.0 * lid * (n - 2) as f64 / 100.0;
    let mut lat = Lattice::<f32>::new([n; 3], Physics::trt(tau, MAGIC_POISEUILLE)).unwrap();
    for face in Face::ALL {
        lat.set_face(face, Cell::Wall).unwrap();
    }
    lat.set_face(
        Face::YMax,
        Cell::MovingWall {
            velocity: [lid, 0.0, 0.0],
        },
    )
    .unwrap();
    let m0 = lat.mass();
    let lines = |l: &Lattice<f32>| {
        let [ux, uy, _] = l.velocity().unwrap();
        let c = n / 2;
        let mut v: Vec<f64> = (1..n - 1).map(|y| ux.get(c, y, c) as f64).collect();
        v.extend((1..n - 1).map(|x| uy.get(x, c, c) as f64));
        v
    };
    let steps = 6000;
    let f32_run = run_gpu(&lat, true, &[steps]);
    let drift = (f32_run.mass() - m0).abs() / m0;
    println!("cavity f32: relative mass drift {drift:.2e}");
    let reference = lines(&f32_run);
    for storage in [Storage::F16s, Storage::F16c] {
        let mut l = lat.clone();
        l.set_storage(storage).unwrap();
        let got = run_gpu(&l, true, &[steps]);
        let worst = lines(&got)
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let drift = (got.mass() - m0).abs() / m0;
        println!(
            "cavity {storage}: centre lines within {:.3}% of the lid speed, mass drift {drift:.2e}",
            100.0 * worst / lid
        );
        assert!(worst <= 0.01 * lid, "{storage}: {worst:e}");
        assert!(drift <= 1e-3, "{storage}: mass drift {drift:e}");
    }
}

/// The planner's scheme on the GPU: in place for walled lattices, two copies for periodic ones,
/// and two copies after all for a lattice with an inlet on a closed face, which the AA kernels
/// cannot run: each run matches the reference.
#[test]
fn the_planners_scheme_runs_every_lattice() {
    if !gpu_available() {
        return;
    }
    let physics = Physics::bgk(0.6);
    for (scenario, in_place) in [
        (Scenario::Cavity, true),
        (Scenario::PeriodicAll, false),
        (Scenario::InletOutlet, true),
    ] {
        let input = scenario.lattice::<f32>(DIMS, physics, 11);
        let plan = PlanBuilder::new(LbmKernel::of(&input), f32::DTYPE, input.dims())
            .engine(Engine::GpuNaive)
            .build()
            .unwrap();
        assert_eq!(plan.in_place(), in_place, "{scenario:?}: {plan}");
        assert!(!plan.overrides().in_place);
        assert!(plan.to_string().contains("storage: "), "{plan}");
        let mut got = input.clone();
        Solver::new(plan).run(&mut got, STEPS).unwrap();
        let expected = run(&input, Setup::reference(), STEPS);
        compare(
            &got,
            &expected,
            STEPS as u64,
            &format!("{scenario:?}, planner's scheme"),
        );
    }
}
