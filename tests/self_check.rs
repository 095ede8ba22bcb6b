//! The solver's check of its plan against the run (`RunReport::adapted`), and the SIMD level a
//! plan names. The check's decisions depend on timings, so these tests pin what does not: a
//! plan predicted far from any real rate is always checked, a plan whose engine the user fixed
//! never is, and checking (segments, trials, a switch) never changes the values computed or
//! the step a blow-up is reported at.

use stencil35d::wave::test_shot::{random_shot, same};
use stencil35d::wave::WaveKernel;
use stencil35d::{
    DType, Engine, Error, Grid, Kernel, Level, Machine, PlanBuilder, Solver, State, Stencil,
};

/// This machine with figures that predict rates a thousand times beyond any real one.
fn absurd_machine() -> Machine {
    let mut m = Machine::detect().clone();
    m.freq_ghz *= 1000.0;
    m.bandwidth_gbs *= 1000.0;
    m.core_bandwidth_gbs *= 1000.0;
    m
}

/// Runs `runs` runs of `steps` steps; returns the notes of the runs that concluded a check.
fn run_notes<S: State>(
    solver: &mut Solver,
    state: &mut S,
    runs: usize,
    steps: usize,
) -> Vec<String> {
    (0..runs)
        .filter_map(|_| solver.run(state, steps).unwrap().adapted)
        .collect()
}

/// Runs the planner's CPU choice for `kernel` on the absurd machine on `state`, six runs of 16
/// steps, and checks that exactly one run concluded the check and named the prediction.
fn checked_run<S: State>(kernel: impl Into<Kernel>, state: &mut S, dims: [usize; 3]) {
    let plan = PlanBuilder::new(kernel, DType::F32, dims)
        .machine(absurd_machine())
        .build()
        .unwrap();
    assert!(matches!(plan.engine(), Engine::Naive | Engine::Blocked));
    let notes = run_notes(&mut Solver::new(plan), state, 6, 16);
    assert_eq!(notes.len(), 1, "one conclusion, in one run: {notes:?}");
    assert!(notes[0].contains("predicted"), "{}", notes[0]);
}

#[test]
fn a_plan_far_from_its_measurement_is_checked_and_computes_the_same_values() {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let dims = [97, 70, 45];
    let input = Grid::<f32>::random(dims, 0.0, 1.0, 3).unwrap();
    let mut grid = input.clone();
    checked_run(stencil.clone(), &mut grid, dims);

    let mut expected = input.clone();
    let reference = PlanBuilder::new(stencil, DType::F32, dims)
        .engine(Engine::Reference)
        .build()
        .unwrap();
    Solver::new(reference).run(&mut expected, 96).unwrap();
    // The fast engines fuse multiply-adds the reference rounds apart (and may sum in another
    // order): 96 steps of a contraction keep that within a few f32 ulps of values below 1.
    let err = grid.max_rel_diff(&expected).unwrap();
    assert!(err <= 2e-5, "max rel err {err:e}");
}

#[test]
fn a_plan_whose_engine_the_user_fixed_is_run_as_given() {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let dims = [64, 48, 40];
    for engine in [Engine::Naive, Engine::Blocked] {
        let plan = PlanBuilder::new(stencil.clone(), DType::F32, dims)
            .machine(absurd_machine())
            .engine(engine)
            .build()
            .unwrap();
        let (dim_t, tile) = (plan.dim_t(), plan.tile());
        let mut grid = Grid::<f32>::random(dims, 0.0, 1.0, 5).unwrap();
        let mut solver = Solver::new(plan);
        assert!(run_notes(&mut solver, &mut grid, 4, 8).is_empty());
        assert_eq!(solver.plan().engine(), engine);
        assert_eq!((solver.plan().dim_t(), solver.plan().tile()), (dim_t, tile));
    }
}

/// A wave plan is checked as a grid's is, and its engines agree bit for bit (receivers'
/// traces included), so the checked run, whatever it tried or switched to, leaves the shot
/// exactly as the naive engine does.
#[test]
fn a_wave_plan_is_checked_and_computes_what_the_naive_engine_does() {
    let kernel = WaveKernel::new(10.0, 1e-3, 2500.0).with_pml(8);
    let dims = [61, 47, 53];
    let input = random_shot::<f32>(kernel, dims, 11);
    // The shot's kernel: its largest velocity is the model's, which the layers' damping uses.
    let kernel = input.kernel().clone();
    let mut checked = input.clone();
    checked_run(kernel.clone(), &mut checked, dims);

    let naive = PlanBuilder::new(kernel, DType::F32, dims)
        .engine(Engine::Naive)
        .build()
        .unwrap();
    let mut expected = input.clone();
    Solver::new(naive).run(&mut expected, 96).unwrap();
    assert!(same(&checked, &expected), "the checked run differs");
}

/// The step of a blow-up counts from the start of the run, across the check's segments (values
/// grow 1.5-fold per step and overflow `f32` after about 200 steps, long after the check's
/// segments of a few passes each).
#[test]
fn a_blow_up_during_the_check_names_the_step_of_the_run() {
    let stencil = Stencil::seven_point(0.9, 0.1);
    let dims = [40, 36, 30];
    let input = Grid::<f32>::random(dims, 0.5, 1.0, 1).unwrap();
    let blow_up = |builder: PlanBuilder| {
        let mut grid = input.clone();
        match Solver::new(builder.build().unwrap()).run(&mut grid, 1000) {
            Err(Error::NonFinite { step, .. }) => (step, grid),
            other => panic!("expected a blow-up, got {other:?}"),
        }
    };
    let builder = PlanBuilder::new(stencil, DType::F32, dims);
    let (fixed, fixed_grid) = blow_up(builder.clone().engine(Engine::Naive));
    let (checked, checked_grid) = blow_up(builder.machine(absurd_machine()));
    assert!(
        fixed > 100,
        "a blow-up after the check's segments: step {fixed}"
    );
    assert_eq!(checked, fixed);
    assert_eq!(checked_grid.max_rel_diff(&fixed_grid).unwrap(), 0.0);
}

/// A plan capped at each level below the CPU's names that level and computes what the
/// reference does; the base level on x86-64 rounds multiply-adds apart, so its results differ
/// from a fused level's in the last bits.
#[test]
fn every_level_the_cpu_has_is_named_and_runs() {
    let stencil = Stencil::twenty_seven_point(0.3, 0.05, 0.02, 0.01);
    let dims = [53, 31, 22];
    let input = Grid::<f64>::random(dims, 0.0, 1.0, 9).unwrap();
    let mut expected = input.clone();
    let reference = PlanBuilder::new(stencil.clone(), DType::F64, dims)
        .engine(Engine::Reference)
        .build()
        .unwrap();
    Solver::new(reference).run(&mut expected, 6).unwrap();
    for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
        for engine in [Engine::Naive, Engine::Blocked] {
            let plan = PlanBuilder::new(stencil.clone(), DType::F64, dims)
                .engine(engine)
                .isa(level)
                .build()
                .unwrap();
            assert_eq!(plan.machine().isa, level);
            assert!(plan.to_string().contains(level.name()), "{plan}");
            let mut grid = input.clone();
            Solver::new(plan).run(&mut grid, 6).unwrap();
            let err = grid.max_rel_diff(&expected).unwrap();
            assert!(err <= 1e-13, "{level} {engine:?}: max rel err {err:e}");
        }
    }
}

/// A tile and `dim_t` the model rates far below its own choice are warned about; the
/// planner's own choice, fixed by hand, is not (the 3.5D paper's recorded Core i7, so the
/// ratings do not depend on this machine).
#[test]
fn a_shape_override_far_below_the_best_is_warned_about() {
    let request = || {
        PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [256, 256, 256])
            .machine(Machine::paper_core_i7())
            .engine(Engine::Blocked)
    };
    let own = request().build().unwrap();
    assert!(own.warnings().is_empty(), "{:?}", own.warnings());
    let same = request()
        .dim_t(own.dim_t())
        .tile(own.tile())
        .build()
        .unwrap();
    assert!(same.warnings().is_empty(), "{:?}", same.warnings());
    let poor = request().dim_t(16).tile([40, 40]).build().unwrap();
    assert_eq!(poor.warnings().len(), 1);
    assert!(
        poor.warnings()[0].contains("less than half"),
        "{:?}",
        poor.warnings()
    );
    assert!(poor
        .to_string()
        .contains("warning: the model rates dim_t 16 tile 40x40"));
}

/// `bench --engine auto` runs the planner's choice and says what it was.
#[test]
fn bench_auto_reports_the_chosen_engine() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stencil35d"))
        .args(["bench", "--kernel", "star7", "--size", "40", "--steps", "4"])
        .args(["--engine", "auto,naive", "--repeat", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let auto = &lines[0];
    assert_eq!(auto["engine"], "auto");
    assert!(
        ["naive", "blocked"].contains(&auto["chosen_engine"].as_str().unwrap()),
        "{auto}"
    );
    assert!(auto["chosen_dim_t"].as_u64().unwrap() >= 1);
    assert!(auto.get("adapted").is_some(), "{auto}");
    assert_eq!(lines[1]["engine"], "naive");
    assert!(lines[1].get("chosen_engine").is_none());
}
