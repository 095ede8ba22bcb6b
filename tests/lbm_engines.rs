//! The naive and blocked lattice-Boltzmann engines against the reference engine on random
//! near-equilibrium states with every kind of boundary present.

mod lbm_common;

use lbm_common::{run, small_tile, tolerance, Scenario, Setup};
use stencil35d::lbm::{Lattice, Physics};
use stencil35d::Real;

fn check<T: Real>(input: &Lattice<T>, steps: usize, setups: &[Setup], what: &str) {
    let expected = run(input, Setup::reference(), steps);
    assert!(
        expected.max_rel_diff(input).unwrap() > 1e-3,
        "{what}: the reference must change the state, or the test proves nothing"
    );
    for &setup in setups {
        let got = run(input, setup, steps);
        let err = got.max_rel_diff(&expected).unwrap();
        if std::env::var_os("SHOW").is_some() {
            eprintln!("{what} {:?} {setup:?}: {err:e}", T::DTYPE);
        }
        assert!(
            err <= tolerance::<T>(),
            "{what} {} {:?} {setup:?} steps={steps}: max rel err {err:e}",
            T::DTYPE,
            input.dims()
        );
        assert_eq!(got.steps(), steps as u64);
    }
}

fn scenarios<T: Real>() {
    let dims = [23, 17, 13];
    for (k, scenario) in Scenario::ALL.into_iter().enumerate() {
        for physics in [Physics::bgk(0.57), Physics::trt(0.9, 3.0 / 16.0)] {
            let input = scenario.lattice::<T>(dims, physics, k as u64);
            let px = input.periodic()[0];
            let mut setups = vec![Setup::naive(1), Setup::naive(2)];
            setups.extend((1..=8).map(|d| Setup::blocked(d, small_tile(dims, px, d), 1 + d % 2)));
            check(&input, 11, &setups, &format!("{scenario:?} {physics}"));
        }
    }
}

#[test]
fn scenarios_f64() {
    scenarios::<f64>();
}

#[test]
fn scenarios_f32() {
    scenarios::<f32>();
}
