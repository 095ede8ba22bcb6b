//! The 2D kernels' bad input gets a clear error before any work, never a panic, and the
//! user's picture is left as it was; a blow-up reports its step and keeps the last finite
//! state. The `filter` command refuses bad input before it writes anything.

use std::process::Command;

use stencil35d::output::Picture;
use stencil35d::{
    Border, DType, Engine, Error, Filter2, Grid, Grid2, Plan, PlanBuilder, Solver, Stencil,
    Stencil2,
};

#[test]
fn two_d_kernels_need_a_plane_large_enough() {
    let star = Stencil2::from_name("star2d:2").unwrap();
    let err = Plan::new(star.clone(), DType::F32, [16, 16, 4]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidPlan(_)) && err.to_string().contains("Grid2"),
        "{err}"
    );
    let err = Plan::new(star, DType::F32, [16, 4, 1]).unwrap_err();
    assert!(
        matches!(err, Error::GridTooSmall { radius: 2, .. }),
        "{err}"
    );
    // A convolution takes any picture, down to one pixel.
    let one = Grid2::<f32>::new([1, 1]).unwrap();
    Plan::for_grid2(Filter2::from_name("gaussian:15").unwrap(), &one).unwrap();
}

#[test]
fn a_convolution_takes_no_temporal_blocking() {
    let f = Filter2::from_name("mean:3").unwrap();
    for b in [
        PlanBuilder::new(f.clone(), DType::F32, [64, 64, 1]).dim_t(2),
        PlanBuilder::new(f.clone(), DType::F32, [64, 64, 1]).z_chunks(2),
    ] {
        let err = b.build().unwrap_err();
        assert!(matches!(err, Error::InvalidPlan(_)), "{err}");
    }
    // A tile is the blocked convolution's work item: [columns per span, rows per band].
    let plan = PlanBuilder::new(f, DType::F32, [64, 64, 1])
        .tile([32, 8])
        .build()
        .unwrap();
    assert_eq!((plan.engine(), plan.tile()), (Engine::Blocked, [32, 8]));
}

#[test]
fn plans_and_states_must_match() {
    let mut image = Grid2::<f32>::random([20, 10], 0.0, 1.0, 3).unwrap();
    let before = image.clone();
    let plan3 = Plan::new(Stencil::seven_point(0.4, 0.1), DType::F32, [20, 10, 5]).unwrap();
    let err = Solver::new(plan3).run(&mut image, 1).unwrap_err();
    assert!(matches!(err, Error::PlanMismatch(_)), "{err}");
    let plan2 = Plan::for_grid2(Stencil2::five_point(0.6, 0.1), &image).unwrap();
    let mut grid = Grid::<f32>::new([20, 10, 1]).unwrap();
    assert!(matches!(
        Solver::new(plan2.clone()).run(&mut grid, 1),
        Err(Error::PlanMismatch(_))
    ));
    let mut other = Grid2::<f32>::new([21, 10]).unwrap();
    assert!(matches!(
        Solver::new(plan2.clone()).run(&mut other, 1),
        Err(Error::PlanMismatch(_))
    ));
    let mut wide = Grid2::<f64>::new([20, 10]).unwrap();
    assert!(matches!(
        Solver::new(plan2.clone()).run(&mut wide, 1),
        Err(Error::PlanMismatch(_))
    ));
    assert!(matches!(
        Solver::new(plan2).run(&mut image, 0),
        Err(Error::ZeroSteps)
    ));
    assert_eq!(image, before);
}

#[test]
fn non_finite_input_is_refused_untouched() {
    let mut image = Grid2::<f64>::random([17, 9], 0.0, 1.0, 4).unwrap();
    image.set(5, 7, f64::NAN);
    let before = image.to_vec();
    let plan = Plan::for_grid2(Filter2::from_name("sobel").unwrap(), &image).unwrap();
    let err = Solver::new(plan).run(&mut image, 1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NonFiniteInput {
                cell: [5, 7, 0],
                ..
            }
        ),
        "{err}"
    );
    let same = image
        .to_vec()
        .iter()
        .zip(&before)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same);
}

#[test]
fn a_blow_up_names_its_step_and_keeps_the_last_finite_state() {
    // Every step multiplies the interior by about 1e30: f32 overflows in the second step.
    let s = Stencil2::star(1, &[1e30, 0.0]).unwrap();
    for engine in [Engine::Reference, Engine::Naive, Engine::Blocked] {
        let mut image = Grid2::<f32>::from_fn([12, 11], |_, _| 1.0).unwrap();
        let plan = PlanBuilder::new(s.clone(), DType::F32, [12, 11, 1])
            .engine(engine)
            .build()
            .unwrap();
        let err = Solver::new(plan).run(&mut image, 5).unwrap_err();
        assert!(
            matches!(err, Error::NonFinite { step: 2, .. }),
            "{engine}: {err}"
        );
        assert_eq!(image.get(5, 5), 1e30, "{engine}: the state after step 1");
        assert_eq!(image.get(0, 5), 1.0, "{engine}: the boundary layer");
    }
}

#[test]
fn borders_reach_outside_a_single_pixel() {
    // A 3x1 filter on a 1x1 picture reads the pixel itself for every border but constant.
    let f = Filter2::new([3, 1], &[1.0, 10.0, 100.0]).unwrap();
    for (border, expect) in [
        (Border::Constant(2.0), 2.0 + 10.0 * 3.0 + 200.0),
        (Border::Replicate, 333.0),
        (Border::Reflect, 333.0),
        (Border::Reflect101, 333.0),
        (Border::Wrap, 333.0),
    ] {
        let f = f.clone().with_border(border);
        for engine in [Engine::Reference, Engine::Naive, Engine::Blocked] {
            let mut one = Grid2::<f64>::from_fn([1, 1], |_, _| 3.0).unwrap();
            let plan = PlanBuilder::new(f.clone(), DType::F64, [1, 1, 1])
                .engine(engine)
                .build()
                .unwrap();
            Solver::new(plan).run(&mut one, 1).unwrap();
            assert_eq!(one.get(0, 0), expect, "{border} {engine}");
        }
    }
}

#[test]
fn the_filter_command_checks_before_it_writes() {
    let dir = std::env::temp_dir().join(format!("stencil35d-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.png");
    let grey = Grid2::from_fn([40, 30], |x, y| ((x * 7 + y * 3) % 11) as f32 / 10.0).unwrap();
    Picture {
        channels: vec![grey.clone(), grey.clone(), grey],
        alpha: None,
        bits: 8,
    }
    .write_png(&input)
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_stencil35d"))
            .arg("filter")
            .args(args)
            .output()
            .unwrap()
    };
    let out = dir.join("out.png");
    let ok = run(&[
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "--filter",
        "gaussian:5",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let result = Picture::read_png(&out).unwrap();
    assert_eq!((result.dims(), result.channels.len()), ([40, 30], 3));
    for bad in [
        vec![
            input.to_str().unwrap(),
            "/no/such/dir/out.png",
            "--filter",
            "gaussian:5",
        ],
        vec![
            "/no/such/in.png",
            out.to_str().unwrap(),
            "--filter",
            "gaussian:5",
        ],
        vec![
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--filter",
            "gaussian:4",
        ],
        vec![
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--filter",
            "mean:3",
            "--border",
            "mirror",
        ],
        vec![
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--filter",
            "mean:3",
            "--times",
            "0",
        ],
    ] {
        let o = run(&bad);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("error"),
            "{bad:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{bad:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
