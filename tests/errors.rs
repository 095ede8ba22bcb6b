//! Bad input gets a clear error, never a panic, and the user's grid is left untouched when a run
//! fails before it starts, or at the last finite state when a run blows up.

mod common;

use common::{run, Setup};
use stencil35d::{DType, Engine, Error, Grid, Plan, PlanBuilder, Real, Solver, Stencil};

#[test]
fn grid_smaller_than_the_halo() {
    let g = Grid::<f32>::new([2, 9, 9]).unwrap();
    let err = Plan::for_grid(&Stencil::seven_point(0.4, 0.1), &g).unwrap_err();
    assert!(
        matches!(err, Error::GridTooSmall { radius: 1, .. }),
        "{err}"
    );
    let err = Plan::new(Stencil::from_name("box:2").unwrap(), DType::F64, [9, 4, 9]).unwrap_err();
    assert!(err.to_string().contains("at least 5 cells"), "{err}");
}

#[test]
fn unsupported_radius() {
    assert!(matches!(
        Stencil::star(5, &[0.1; 6]),
        Err(Error::UnsupportedStencil(_))
    ));
    assert!(matches!(
        Stencil::boxed(3, &[0.0; 343]),
        Err(Error::UnsupportedStencil(_))
    ));
    assert!(matches!(
        Stencil::from_name("star:0"),
        Err(Error::UnsupportedStencil(_))
    ));
}

#[test]
fn zero_steps_and_mismatched_plans_leave_the_grid_alone() {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let mut grid = Grid::<f32>::random([12, 10, 8], 0.0, 1.0, 1).unwrap();
    let before = grid.clone();
    let plan = Plan::for_grid(&stencil, &grid).unwrap();
    assert!(matches!(
        Solver::new(plan.clone()).run(&mut grid, 0),
        Err(Error::ZeroSteps)
    ));
    let mut doubles = Grid::<f64>::random([12, 10, 8], 0.0, 1.0, 1).unwrap();
    assert!(matches!(
        Solver::new(plan.clone()).run(&mut doubles, 3),
        Err(Error::PlanMismatch(_))
    ));
    let mut other = Grid::<f32>::random([12, 10, 9], 0.0, 1.0, 1).unwrap();
    let err = Solver::new(plan).run(&mut other, 3).unwrap_err();
    assert!(err.to_string().contains("12x10x8"), "{err}");
    assert_eq!(grid, before);
}

#[test]
fn tiles_and_threads_that_cannot_work() {
    let b = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [64, 64, 64]);
    let err = b.clone().dim_t(4).tile([8, 30]).build().unwrap_err();
    assert!(err.to_string().contains("no valid output"), "{err}");
    assert!(matches!(
        b.clone().threads(0).build(),
        Err(Error::InvalidPlan(_))
    ));
    assert!(matches!(
        b.clone().dim_t(17).build(),
        Err(Error::InvalidPlan(_))
    ));
    assert!(matches!(
        b.clone().tile([0, 10]).build(),
        Err(Error::InvalidPlan(_))
    ));
}

#[test]
fn non_finite_input_is_refused_untouched() {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let mut grid = Grid::<f64>::random([10, 10, 10], 0.0, 1.0, 2).unwrap();
    grid.set(0, 4, 5, f64::INFINITY); // even in the boundary layer
    let before = grid.clone();
    for engine in [Engine::Reference, Engine::Naive, Engine::Blocked] {
        let plan = Plan::for_grid(&stencil, &grid)
            .unwrap()
            .with_engine(engine)
            .unwrap();
        let err = Solver::new(plan).run(&mut grid, 5).unwrap_err();
        assert!(
            matches!(
                err,
                Error::NonFiniteInput {
                    cell: [0, 4, 5],
                    ..
                }
            ),
            "{engine}: {err}"
        );
        assert_eq!(grid, before, "{engine} touched the grid");
    }
}

/// A stencil whose values grow `growth`-fold a step blows up: every engine reports the
/// reference's step at an inner cell and keeps the state after the step before, within `tol`
/// of the reference's (the engines' rounding differs, a few ulps a step, and the uniform growth
/// keeps the relative difference as it is).
fn blow_up_keeps_the_last_finite_state<T: Real>(growth: f64, tol: f64) {
    let stencil = Stencil::seven_point(growth / 7.0, growth / 7.0);
    let input = Grid::<T>::random([21, 18, 15], 0.5, 1.0, 3).unwrap();
    let failing_step = |setup: Setup| {
        let mut b = PlanBuilder::new(stencil.clone(), T::DTYPE, input.dims())
            .engine(setup.engine)
            .threads(setup.threads);
        if setup.engine == Engine::Blocked {
            b = b.dim_t(setup.dim_t).tile(setup.tile.unwrap());
        }
        let mut grid = input.clone();
        match Solver::new(b.build().unwrap()).run(&mut grid, 400) {
            Err(Error::NonFinite { step, cell, value }) => {
                assert!(!value.is_finite());
                assert!(
                    cell.iter()
                        .zip(input.dims())
                        .all(|(&c, n)| c >= 1 && c < n - 1),
                    "{cell:?}"
                );
                (step, grid)
            }
            other => panic!("{setup:?}: expected NonFinite, got {other:?}"),
        }
    };
    let (step, _) = failing_step(Setup::reference());
    assert!((20..400).contains(&step), "{step}");
    let last_good = run(&stencil, &input, Setup::reference(), step - 1);
    for setup in [
        Setup::naive(2),
        Setup::blocked(4, [14, 12], 2),
        Setup::blocked(3, [40, 40], 1),
    ] {
        let (s, grid) = failing_step(setup);
        assert_eq!(s, step, "{setup:?}");
        assert!(
            grid.find_non_finite().is_none(),
            "{setup:?} left non-finite values"
        );
        let err = grid.max_rel_diff(&last_good).unwrap();
        assert!(
            err < tol,
            "{setup:?}: state is not the one after step {}: {err:e}",
            step - 1
        );
    }
}

#[test]
fn blow_up_reports_the_step_and_keeps_the_last_finite_state() {
    // Weights summing to 7: values grow ~7x per step and overflow f32 after ~45 steps; in f64
    // a growth of 700 overflows after ~110.
    blow_up_keeps_the_last_finite_state::<f32>(7.0, 1e-5);
    blow_up_keeps_the_last_finite_state::<f64>(700.0, 1e-12);
    let msg = Error::NonFinite {
        step: 7,
        cell: [1, 2, 3],
        value: f64::INFINITY,
    }
    .to_string();
    assert!(
        msg.contains("step 7") && msg.contains("after step 6"),
        "{msg}"
    );
}

#[test]
fn a_grid_too_large_to_address_is_an_error_not_an_overflow() {
    let err = Plan::new(Stencil::seven_point(0.4, 0.1), DType::F32, [1 << 22; 3]).unwrap_err();
    assert!(matches!(err, Error::InvalidPlan(_)), "{err}");
    assert!(err.to_string().contains("too large"), "{err}");
}
