//! Bad input to the wave equation gets a clear error before any work, and leaves what the
//! user passed in as it was: unstable time steps (the error names the largest stable one),
//! absorbing layers wider than half the grid, sources and receivers outside the updated
//! cells, non-finite or non-zero-boundary initial fields, plans for another kernel or a GPU
//! engine, `dim_t` above 1 with a rigid face. A run that blows up reports the step, and the
//! field holds the last finite state, on every engine.

use stencil35d::wave::{Receiver, Source, WaveKernel, Wavefield, Wavelet};
use stencil35d::{DType, Engine, Error, Grid, Plan, PlanBuilder, Solver};

fn model(dims: [usize; 3]) -> Grid<f32> {
    Grid::from_fn(dims, |_, _, _| 2000.0).unwrap()
}

fn kernel() -> WaveKernel {
    WaveKernel::new(10.0, 1e-3, 2000.0).with_pml(8)
}

#[test]
fn unstable_steps_and_wide_layers_are_refused_before_allocation() {
    let e = Wavefield::new(WaveKernel::new(10.0, 5e-3, 2000.0), &model([20; 3])).unwrap_err();
    assert!(matches!(e, Error::Unstable(_)), "{e}");
    assert!(e.to_string().contains("dt <= 2.26"), "{e}");
    let e = Wavefield::new(kernel().with_pml(11), &model([20; 3])).unwrap_err();
    assert!(e.to_string().contains("wider than half"), "{e}");
    let e = Wavefield::new(kernel().with_pml(7), &model([20; 3])).unwrap_err();
    assert!(e.to_string().contains("at least 8"), "{e}");
    // An axis too short for any layer of order 8 says so, whatever the width asked for.
    for pml in [6, 8] {
        let e = Wavefield::new(kernel().with_pml(pml), &model([20, 15, 20])).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("axis y of 15 cells is too short") && m.contains("at least 16 cells"),
            "{e}"
        );
    }
    let bad = Grid::from_fn([20; 3], |x, _, _| if x == 3 { -1.0f32 } else { 2000.0 }).unwrap();
    let e = Wavefield::new(kernel(), &bad).unwrap_err();
    assert!(e.to_string().contains("(3, 0, 0)"), "{e}");
    let e = Wavefield::new(kernel().with_order(5), &model([20; 3])).unwrap_err();
    assert!(e.to_string().contains("order 5"), "{e}");
}

#[test]
fn spacings_beyond_single_precision_are_refused_and_far_wavelets_are_zero() {
    for h in [1e155, 1e20, 1e-20, 1e-160] {
        let e = Wavefield::new(WaveKernel::new(h, 1e-30, 2000.0), &model([20; 3])).unwrap_err();
        assert!(e.to_string().contains("outside the range"), "{h}: {e}");
    }
    // A model's velocities set the limit: 1e300 m/s puts it below single precision's range.
    let fast = Grid::from_fn([20; 3], |_, _, _| 1e300f64).unwrap();
    let e = Wavefield::new(WaveKernel::new(10.0, 1e-3, 1e300).with_pml(8), &fast).unwrap_err();
    assert!(e.to_string().contains("cannot hold"), "{e}");
    // Each 1/h² fits, their weighted sum (the centre weight, -205/72·3/h²) does not.
    let e = Wavefield::new(WaveKernel::new(1.2e-19, 1e-30, 2000.0), &model([20; 3])).unwrap_err();
    assert!(e.to_string().contains("centre weight"), "{e}");
    // A time step, or a velocity, whose (v·dt)² would round to zero: a silent zero field.
    let e = Wavefield::new(WaveKernel::new(10.0, 1e-23, 2000.0), &model([20; 3])).unwrap_err();
    assert!(e.to_string().contains("(v·dt)²"), "{e}");
    let slow = Grid::from_fn([20; 3], |x, _, _| if x == 9 { 1e-17f32 } else { 2000.0 }).unwrap();
    let e = Wavefield::new(kernel(), &slow).unwrap_err();
    assert!(e.to_string().contains("(v·dt)²"), "{e}");
    // A line of more receivers than memory holds: refused before any is made.
    let e = Receiver::line([0.0; 3], [1.0; 3], usize::MAX).unwrap_err();
    assert!(e.to_string().contains("receivers takes"), "{e}");
    assert_eq!(
        Receiver::line([0.0; 3], [2.0; 3], 3).unwrap()[1].position,
        [1.0; 3]
    );
    // π·f·τ overflows: the wavelet has long decayed to zero.
    let far = Wavelet::Ricker {
        freq: 10.0,
        delay: -1e160,
    };
    assert_eq!(far.at(0, 1e-3), 0.0);
    assert_eq!(Wavelet::ricker(1e200).at(3, 1e-3), 0.0);
    assert!((Wavelet::ricker(10.0).at(100, 1e-3) - 1.0).abs() < 1e-12);
}

#[test]
fn layers_no_face_uses_may_be_of_any_width() {
    let mut k = kernel().with_pml(usize::MAX).with_free_surface();
    for (axis, side) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1)] {
        k = k.with_face(axis, side, stencil35d::wave::Face::Rigid);
    }
    let mut f = Wavefield::new(k, &model([20; 3])).unwrap();
    let plan = Plan::for_wavefield(&f).unwrap();
    Solver::new(plan).run(&mut f, 2).unwrap();
}

#[test]
fn points_outside_the_updated_cells_are_refused_and_nothing_is_added() {
    let mut f = Wavefield::new(kernel(), &model([20; 3])).unwrap();
    let e = f
        .add_source(Source {
            position: [30.0, 100.0, 100.0],
            wavelet: Wavelet::ricker(10.0),
        })
        .unwrap_err();
    assert!(e.to_string().contains("source 0"), "{e}");
    assert!(f.sources().is_empty());
    let good = Receiver::at([100.0; 3]);
    let e = f
        .add_receivers(&[good, Receiver::at([100.0, 100.0, 190.0])])
        .unwrap_err();
    assert!(e.to_string().contains("receiver 1"), "{e}");
    assert!(f.receivers().is_empty() && f.traces().is_empty());
    f.add_receivers(&[good]).unwrap();
    let plan = Plan::for_wavefield(&f).unwrap();
    Solver::new(plan).run(&mut f, 2).unwrap();
    let e = f.add_receivers(&[good]).unwrap_err();
    assert!(e.to_string().contains("before the first step"), "{e}");
}

#[test]
fn initial_fields_must_be_finite_with_a_zero_boundary_layer() {
    let mut f = Wavefield::new(kernel(), &model([20; 3])).unwrap();
    let mut u = Grid::<f32>::new([20; 3]).unwrap();
    u.set(1, 10, 10, 1.0);
    let e = f.set_state(&u, &u).unwrap_err();
    assert!(e.to_string().contains("boundary layer"), "{e}");
    u.set(1, 10, 10, 0.0);
    u.set(10, 10, 10, f32::NAN);
    assert!(matches!(
        f.set_state(&u, &u),
        Err(Error::NonFiniteInput { .. })
    ));
    assert!(f.pressure().iter().all(|(_, v)| v == 0.0));
}

#[test]
fn plans_for_another_kernel_are_refused_and_gpu_plans_need_a_gpu() {
    let mut f = Wavefield::new(kernel(), &model([20; 3])).unwrap();
    let other = Wavefield::new(kernel().with_order(4), &model([20; 3])).unwrap();
    let plan = Plan::for_wavefield(&other).unwrap();
    let e = Solver::new(plan).run(&mut f, 1).unwrap_err();
    assert!(matches!(e, Error::PlanMismatch(_)), "{e}");
    // Without a GPU the planner says so; with one, the GPU engines run the wave equation.
    let gpu = PlanBuilder::new(f.kernel().clone(), stencil35d::DType::F32, [20; 3])
        .engine(Engine::GpuNaive)
        .build();
    if let Err(e) = gpu {
        assert!(e.to_string().contains("GPU"), "{e}");
    }
}

#[test]
fn a_blow_up_reports_its_step_and_keeps_the_last_finite_state() {
    // A source sample far beyond f32's range makes the field infinite in step 4.
    let mut wavelet = vec![1e3; 3];
    wavelet.push(1e300);
    let make = || {
        let mut f = Wavefield::new(kernel(), &model([21, 20, 19])).unwrap();
        f.add_source(Source {
            position: [100.0, 95.0, 90.0],
            wavelet: Wavelet::Samples(wavelet.clone()),
        })
        .unwrap();
        f.add_receivers(&[Receiver::at([80.0; 3])]).unwrap();
        f
    };
    let plan = |engine, dim_t| {
        let f = make();
        let mut b =
            PlanBuilder::new(f.kernel().clone(), stencil35d::DType::F32, f.dims()).engine(engine);
        if engine == Engine::Blocked {
            b = b.dim_t(dim_t).tile([5, 4]);
        }
        b.build().unwrap()
    };
    let mut good = make();
    Solver::new(plan(Engine::Naive, 1))
        .run(&mut good, 3)
        .unwrap();
    // dim_t 3 meets the bad sample at the first level of a pass, dim_t 4 at the last.
    for (engine, dim_t) in [
        (Engine::Reference, 1),
        (Engine::Naive, 1),
        (Engine::Blocked, 3),
        (Engine::Blocked, 4),
    ] {
        let mut f = make();
        let e = Solver::new(plan(engine, dim_t)).run(&mut f, 8).unwrap_err();
        assert!(
            matches!(e, Error::NonFinite { step: 4, .. }),
            "{engine}: {e}"
        );
        assert_eq!(f.step(), 3, "{engine}");
        assert_eq!(f.traces()[0].len(), 4, "{engine}");
        let d = f.pressure().max_rel_diff(good.pressure()).unwrap();
        assert!(d < 1e-5, "{engine}: {d}");
        assert!(f.pressure().iter().all(|(_, v)| v.is_finite()));
    }
}

#[test]
fn thin_absorbing_layers_stay_stable_over_long_runs() {
    // The narrowest layers allowed (four damped cells) at the largest stable time step, where
    // three layers meet in the corners.
    for order in [2, 8] {
        let mut k = WaveKernel::new(10.0, 1e-3, 3500.0).with_order(order);
        k.dt = 0.99 * k.max_stable_dt(3500.0);
        let pml = k.radius() + 4;
        let k = k.with_pml(pml);
        let mut f = Wavefield::new(
            k,
            &Grid::from_fn([24, 22, 20], |_, _, _| 3500.0f32).unwrap(),
        )
        .unwrap();
        let r = f.kernel().radius();
        let u = Grid::from_fn([24, 22, 20], |x, y, z| {
            let inside = [x, y, z]
                .iter()
                .zip([24, 22, 20])
                .all(|(&c, n)| c >= r && c < n - r);
            if inside {
                ((x * 7 + y * 3 + z) % 5) as f32 - 2.0
            } else {
                0.0
            }
        })
        .unwrap();
        f.set_state(&u, &u).unwrap();
        let plan = Plan::for_wavefield(&f).unwrap();
        Solver::new(plan)
            .run(&mut f, 600)
            .unwrap_or_else(|e| panic!("order {order}: {e}"));
        let peak = f.pressure().iter().fold(0.0f32, |m, (_, v)| m.max(v.abs()));
        // The initial field peaks at 2. After 600 steps its waves have left through the
        // layers and what stays is below 1e-3 (order 2) and 1e-5 (order 8); a growing mode
        // would not fall below 1% of the start.
        assert!(peak < 0.02, "order {order}: the field is still {peak}");
    }
}

/// A shot in a box of absorbing layers dies away once its waves have left, however long the
/// run: 3 s (about 1,300 to 1,660 steps) after a 10 Hz source on 10 m cells at 2,000 m/s, for orders
/// 2 and 8, the narrowest layers allowed and 12-cell ones. Without the auxiliary field's
/// frequency shift (`wave/profile.rs`) a pair of facing layers holds a slowly growing mode: order
/// 8 with 8-cell layers grew from 1e-11 of the peak a second after the shot to the peak itself
/// at 3 s, and 12-cell layers tenfold a second.
#[test]
fn absorbing_layers_do_not_grow_over_long_runs() {
    for (order, pml) in [(2, 5), (2, 12), (8, 8), (8, 12)] {
        let mut k = WaveKernel::new(10.0, 1e-3, 2000.0).with_order(order);
        k.dt = 0.8 * k.max_stable_dt(2000.0);
        let k = k.with_pml(pml);
        let n = 2 * pml + 16;
        let mut f = Wavefield::new(k, &model([n; 3])).unwrap();
        let c = 10.0 * (n / 2) as f64;
        f.add_source(Source {
            position: [c, c, c],
            wavelet: Wavelet::ricker(10.0),
        })
        .unwrap();
        f.add_receivers(&[Receiver::at([c + 40.0, c, c])]).unwrap();
        let steps = (3.0 / f.kernel().dt) as usize;
        let plan = Plan::for_wavefield(&f).unwrap();
        Solver::new(plan).run(&mut f, steps).unwrap();
        let trace = &f.traces()[0];
        let window = |a: f64, b: f64| {
            let (a, b) = ((a * steps as f64) as usize, (b * steps as f64) as usize);
            trace[a..b].iter().fold(0.0f64, |m, v| m.max(v.abs()))
        };
        let (peak, middle, last) = (window(0.0, 1.0), window(0.4, 0.6), window(0.8, 1.0));
        assert!(
            last < 1e-4 * peak && last <= middle,
            "order {order}, {pml}-cell layers: peak {peak:e}, 1.2-1.8 s {middle:e}, 2.4-3 s {last:e}"
        );
    }
}

#[test]
fn a_rigid_face_takes_one_step_per_pass() {
    let k = kernel().with_face(2, 0, stencil35d::wave::Face::Rigid);
    let f = Wavefield::new(k.clone(), &model([24; 3])).unwrap();
    let plan = Plan::for_wavefield(&f).unwrap();
    assert_eq!(plan.dim_t(), 1, "{plan}");
    assert!(plan.to_string().contains("rigid faces"), "{plan}");
    let e = PlanBuilder::new(k, DType::F32, [24; 3])
        .engine(Engine::Blocked)
        .dim_t(2)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("one step per pass"), "{e}");
}

/// Wave plans take z chunks as a choice of the blocked engine (clamped to the updated planes,
/// as for the stencils) and refuse tile groups of several threads, which the wave engines do
/// not have.
#[test]
fn wave_plans_take_z_chunks_and_refuse_tile_groups() {
    let e = PlanBuilder::new(kernel(), DType::F32, [40; 3])
        .tile_threads(2)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("tile group"), "{e}");
    let p = PlanBuilder::new(kernel(), DType::F32, [40; 3])
        .z_chunks(1_000_000)
        .build()
        .unwrap();
    assert_eq!(p.engine(), Engine::Blocked, "{p}");
    assert_eq!(p.z_chunks(), 40 - 2 * 4, "{p}");
}
