//! Bad numbers passed to the library's public API: each gets an error, an empty answer or the
//! documented panic, quickly, never an overflow, a hang or an allocation beyond the machine.

use std::time::Duration;

use stencil35d::lbm::{Lattice, Physics, MAGIC_POISEUILLE};
use stencil35d::output::{nice_ticks, write_png, write_png_slice, ColorMap, PictureOptions, Slice};
use stencil35d::{Border, DType, Engine, Grid, Machine, PlanBuilder, Stencil, Stencil2};

/// How long a call may take here. Each call answers in microseconds to milliseconds, and what
/// the tests guard against takes forever (a loop of 10¹⁸ steps, an allocation the OOM killer
/// ends), so the limit is generous: a CI machine running the other tests on both cores must
/// never reach it.
const LIMIT: Duration = Duration::from_secs(10);

/// Runs `f` on a thread of its own; it must return within `limit` (a hang or a huge
/// allocation would not: the test then fails instead of waiting for it).
fn within<R: Send + 'static>(limit: Duration, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    answer
        .recv_timeout(limit)
        .unwrap_or_else(|e| panic!("no answer within {limit:?}: {e}"))
}

/// The borders' mirror, as the definition reads: reflect until the index is inside.
fn mirrored(border: Border, mut i: isize, n: isize) -> isize {
    while !(0..n).contains(&i) {
        i = match border {
            Border::Reflect if i < 0 => -i - 1,
            Border::Reflect => 2 * n - i - 1,
            _ if i < 0 => -i,
            _ => 2 * n - i - 2,
        };
    }
    i
}

#[test]
fn borders_answer_every_index_at_once() {
    for border in [Border::Reflect, Border::Reflect101] {
        for n in 2..9isize {
            for i in -5 * n..6 * n {
                let expected = mirrored(border, i, n) as usize;
                assert_eq!(
                    border.source(i, n as usize),
                    Some(expected),
                    "{border:?} {i} of {n}"
                );
            }
        }
        // Far outside: one step, not a walk across the distance.
        let far = within(LIMIT, move || border.source(isize::MAX, 3));
        assert!(far.is_some_and(|p| p < 3));
        assert_eq!(border.source(isize::MIN, 1), Some(0));
    }
    // An empty axis has no pixel to read, whatever the border.
    for border in [
        Border::Replicate,
        Border::Wrap,
        Border::Reflect,
        Border::Constant(0.0),
    ] {
        assert_eq!(border.source(-1, 0), None, "{border:?}");
    }
}

#[test]
fn sizes_beyond_the_address_space_are_errors() {
    assert!(Grid::<f32>::new([usize::MAX, 1, 1]).is_err());
    assert!(Grid::<f64>::new([usize::MAX / 2, 3, 1]).is_err());
    assert!(Grid::<f32>::from_slice([1 << 32, 1 << 32, 1 << 32], &[]).is_err());
    assert!(Lattice::<f32>::new([usize::MAX, 2, 2], Physics::trt(0.6, MAGIC_POISEUILLE)).is_err());
    assert!(Stencil2::boxed(1 << 40, &[]).is_err());
    assert!(Stencil2::boxed(usize::MAX, &[1.0]).is_err());
}

#[test]
#[should_panic(expected = "outside a grid")]
fn a_row_outside_the_grid_panics_like_indexing() {
    let g = Grid::<f32>::new([8, 6, 4]).unwrap();
    let _ = g.row(6, 0);
}

#[test]
fn ticks_of_a_span_below_the_smallest_step_are_none() {
    let ticks = within(LIMIT, || nice_ticks(0.0, 5e-324, 5));
    assert!(ticks.is_empty(), "{ticks:?}");
    assert_eq!(
        nice_ticks(0.0, 1.0, 5),
        vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    );
    let many = within(LIMIT, || nice_ticks(0.0, 1.0, usize::MAX));
    assert!((2..=1001).contains(&many.len()), "{}", many.len());
}

#[test]
fn a_field_constant_but_for_rounding_draws_its_colour_bar() {
    // Two floating-point steps apart: no round step resolves the span, so no inner ticks.
    assert!(nice_ticks(2.0, 2.000000000000001, 5).is_empty());
    assert!(nice_ticks(1e5, 1e5 + 3e-11, 5).is_empty());
    let slice = Slice {
        width: 2,
        height: 1,
        values: vec![2.0, 2.000000000000001],
    };
    let path = std::env::temp_dir().join(format!("stencil35d-flat-{}.png", std::process::id()));
    let layout = write_png_slice(&path, &slice, &PictureOptions::new("flat", "value"));
    let _ = std::fs::remove_file(&path);
    assert!(layout.is_ok(), "{:?}", layout.err());
    // No rows: refused as such, not as the encoder's I/O error.
    let empty = Slice {
        width: 3,
        height: 0,
        values: Vec::new(),
    };
    let e = write_png(&path, &empty, ColorMap::Viridis, None, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("no pixels"), "{e}");
    assert!(!path.exists());
}

#[test]
fn a_picture_larger_than_a_picture_may_be_is_refused_before_its_pixels() {
    let slice = Slice {
        width: 4,
        height: 3,
        values: vec![0.0; 12],
    };
    let path = std::env::temp_dir().join(format!("stencil35d-api-{}.png", std::process::id()));
    let target = path.clone();
    let err = within(LIMIT, move || {
        write_png(&target, &slice, ColorMap::Viridis, None, 1 << 40)
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("larger than a picture may be"),
        "{err}"
    );
    assert!(!path.exists());
}

/// A small tile on a large grid has more tiles than are worth listing: planning it counts
/// them without listing them. The machine is given, so that the time is the planning's and
/// not that of probing this host's bandwidth and caches.
#[test]
fn planning_tiny_tiles_on_a_large_grid_is_quick() {
    let plan = within(LIMIT, || {
        PlanBuilder::new(
            Stencil::seven_point(0.4, 0.1),
            DType::F32,
            [40_000, 40_000, 3],
        )
        .machine(Machine::paper_core_i7())
        .engine(Engine::Blocked)
        .threads(1)
        .tile([3, 3])
        .build()
    })
    .unwrap();
    assert_eq!(plan.tile(), [3, 3]);
    assert!(plan.chosen().kappa >= 1.0, "{plan}");
}

/// The blocked 2D stencil's threads each keep a ring of `(dim_t − 1)(2R + 1) + 1` rows of the
/// image's width: with many threads and deep passes they outgrow the image, and a run whose
/// rows do not fit is refused before anything is allocated, the image untouched.
#[test]
fn a_2d_run_whose_thread_rows_do_not_fit_is_refused() {
    use stencil35d::{Error, Grid2, Solver};
    const MIB: u64 = 1 << 20;
    let s = Stencil2::star(4, &[0.5, 0.1, 0.05, 0.02, 0.01]).unwrap();
    let dims = [4096, 40];
    let mut image = Grid2::<f32>::random(dims, 0.0, 1.0, 7).unwrap();
    let before = image.clone();
    let plan = PlanBuilder::new(s, DType::F32, [dims[0], dims[1], 1])
        .engine(Engine::Blocked)
        .threads(64)
        .dim_t(4)
        .tile([4096, 8])
        .build()
        .unwrap();
    // Two images are 1.3 MB; 64 rings of 28 rows of 4096 + 32 + 16 values are 29 MB.
    let err = Solver::new(plan.clone())
        .available_memory(16 * MIB)
        .run(&mut image, 4)
        .unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("rows"), "{err}");
    assert!(image == before, "the image changed");
    Solver::new(plan)
        .available_memory(64 * MIB)
        .run(&mut image, 4)
        .unwrap();
}

/// A described machine with a zero count or rate is refused before the model divides by it,
/// and a plan made for a machine with far more cores than this host is refused when run.
#[test]
fn described_machines_are_checked_before_planning_and_running() {
    let stencil = || Stencil::seven_point(0.4, 0.1);
    type Spoil = fn(&mut Machine);
    let cases: [(&str, Spoil); 11] = [
        ("core count", |m| m.cores = 0),
        ("core count", |m| m.cores = usize::MAX),
        ("f32 lane count", |m| m.f32_lanes = 0),
        ("clock", |m| m.freq_ghz = f64::NAN),
        ("memory bandwidth", |m| m.bandwidth_gbs = 0.0),
        ("cache list", |m| m.caches.clear()),
        ("row overhead", |m| m.row_overhead_cells = f64::NAN),
        ("lattice efficiency", |m| m.lattice_efficiency = -1.0),
        ("lattice stream share", |m| m.lattice_stream_share = 0.0),
        ("cache bandwidth", |m| m.cache_gbs = f64::INFINITY),
        ("private cache bandwidth", |m| {
            m.private_cache_gbs = f64::NAN
        }),
    ];
    for (what, spoil) in cases {
        let mut m = Machine::paper_core_i7();
        spoil(&mut m);
        for engine in [None, Some(Engine::Blocked)] {
            let mut b = PlanBuilder::new(stencil(), DType::F32, [64; 3]).machine(m.clone());
            if let Some(e) = engine {
                b = b.engine(e).dim_t(2);
            }
            let e = within(LIMIT, move || b.build()).unwrap_err().to_string();
            assert!(e.contains(what), "{what}: {e}");
        }
    }
    // One thread more than this host takes.
    let n = stencil35d::plan::MAX_THREADS_PER_CORE * Machine::usable_cores() + 1;
    let many = Machine {
        cores: n,
        ..Machine::paper_core_i7()
    };
    let plan = PlanBuilder::new(stencil(), DType::F32, [16; 3])
        .machine(many)
        .engine(Engine::Naive)
        .threads(n)
        .build()
        .unwrap();
    let mut grid = Grid::<f32>::random([16; 3], 0.0, 1.0, 1).unwrap();
    let before = grid.clone();
    let e = stencil35d::Solver::new(plan)
        .run(&mut grid, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("{n} threads")), "{e}");
    assert!(grid.max_rel_diff(&before).unwrap() == 0.0);
}

/// A GPU launch shape belongs to the gpu-blocked engine: with another engine fixed it is
/// refused when built (so no plan holds a shape its engine does not use); a CPU plan is
/// rebuilt for another engine.
#[test]
fn a_gpu_launch_shape_with_a_cpu_engine_is_refused() {
    use stencil35d::plan::GpuShape;
    let shape = GpuShape {
        block: [32, 8],
        ry: 2,
        rx: 0,
        skew: false,
        stream_block: 32,
    };
    for engine in [Engine::Naive, Engine::Blocked, Engine::GpuNaive] {
        let e = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [64; 3])
            .engine(engine)
            .gpu_shape(shape)
            .build()
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu-blocked"), "{engine}: {e}");
    }
    let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), DType::F32, [64; 3])
        .engine(Engine::Naive)
        .build()
        .unwrap();
    let rebuilt = plan
        .with_threads(1)
        .unwrap()
        .with_engine(Engine::Blocked)
        .unwrap();
    assert_eq!(rebuilt.engine(), Engine::Blocked);
}

/// Values that are finite in `f64` but not in `f32`, sizes of no grid and hand-made output
/// records: each is refused with an error and leaves what the caller passed as it was.
#[test]
fn values_beyond_f32_and_malformed_records_are_errors() {
    use stencil35d::lbm::Cell;
    use stencil35d::output::{
        interleave, write_pvti, write_vti_piece, Picture, VtiArray, VtiValues,
    };
    assert!(Grid::<f32>::random([4; 3], 0.0, 1e40, 1).is_err());
    assert!(Grid::<f64>::random([4; 3], 0.0, 1e40, 1).is_ok());
    for (lo, hi) in [(f64::NAN, 1.0), (1.0, 0.0), (-f64::MAX, f64::MAX)] {
        assert!(
            Grid::<f64>::random([4; 3], lo, hi, 1).is_err(),
            "[{lo}, {hi})"
        );
    }
    let mut lat = Lattice::<f32>::new([6, 5, 4], Physics::bgk(0.8)).unwrap();
    let before = lat.populations(2, 2, 2);
    assert!(lat.set_equilibrium(|_, _, _| (1e40, [0.0; 3])).is_err());
    assert!(lat
        .set_cell(2, 2, 2, Cell::Outlet { density: 1e40 })
        .is_err());
    assert_eq!(lat.populations(2, 2, 2), before);
    assert_eq!(lat.cell(2, 2, 2), Cell::Fluid);
    // A 2D size for a 3D size whose cell count overflows: no overflow, a comparison that
    // then refuses the size when it runs.
    let config = stencil35d::perf::CompareConfig::new([3_000_000; 3], 1);
    assert!(config.plane_dims[0] > 0);
    let dir = std::env::temp_dir().join(format!("stencil35d-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("p.png");
    let empty = Picture {
        channels: Vec::new(),
        alpha: None,
        bits: 8,
    };
    assert_eq!(empty.dims(), [0, 0]);
    assert!(empty.write_png(&png).is_err());
    let plane = |n| stencil35d::Grid2::<f32>::new([n, 4]).unwrap();
    let uneven = Picture {
        channels: vec![plane(4)],
        alpha: Some(plane(5)),
        bits: 8,
    };
    assert!(uneven.write_png(&png).is_err());
    let deep = Picture {
        channels: vec![plane(4)],
        alpha: None,
        bits: 12,
    };
    assert!(deep.write_png(&png).is_err());
    assert!(!png.exists());
    let values = [0.0f32; 8];
    let arrays = [VtiArray {
        name: "u",
        components: 1,
        values: VtiValues::F32(&values),
    }];
    let vti = dir.join("p.vti");
    assert!(write_vti_piece(&vti, [usize::MAX, 0, 0], [2; 3], &arrays).is_err());
    let pieces = [([0; 3], [2; 3], "p.vti".to_string())];
    assert!(write_pvti(&dir.join("w.pvti"), [0, 2, 2], &pieces, &arrays).is_err());
    // Pieces outside the image, file names and array names that are not XML text, arrays
    // without components: refused, nothing written.
    let pvti = dir.join("w.pvti");
    let piece = |origin, name: &str| [(origin, [2; 3], name.to_string())];
    assert!(write_pvti(&pvti, [2; 3], &piece([0; 3], "p.vti"), &arrays).is_ok());
    std::fs::remove_file(&pvti).unwrap();
    assert!(write_pvti(&pvti, [2; 3], &piece([1, 0, 0], "p.vti"), &arrays).is_err());
    for name in ["a&b.vti", "a\"b.vti", "<.vti", ""] {
        assert!(write_pvti(&pvti, [2; 3], &piece([0; 3], name), &arrays).is_err());
    }
    for (name, components) in [("a\"b", 1), ("", 1), ("u", 0)] {
        let bad = [VtiArray {
            name,
            components,
            values: VtiValues::F32(&values),
        }];
        assert!(write_pvti(&pvti, [2; 3], &piece([0; 3], "p.vti"), &bad).is_err());
    }
    assert!(!pvti.exists());
    let [a, b] = [
        Grid::<f32>::new([4; 3]).unwrap(),
        Grid::<f32>::new([3; 3]).unwrap(),
    ];
    assert!(interleave(&[&a, &b]).is_err());
    assert_eq!(interleave(&[&a, &a]).unwrap().len(), 2 * 64);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A timed run refuses a step count it cannot run before its warm-up moves the state.
#[test]
fn timing_refuses_zero_steps_before_its_warm_up() {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let mut grid = Grid::<f32>::random([12, 10, 8], 0.0, 1.0, 3).unwrap();
    let before = grid.clone();
    let mut solver = stencil35d::Solver::new(stencil35d::Plan::for_grid(&stencil, &grid).unwrap());
    let e = stencil35d::perf::time_runs(&mut solver, &mut grid, 0, 3).unwrap_err();
    assert!(matches!(e, stencil35d::Error::ZeroSteps), "{e}");
    assert!(grid.max_rel_diff(&before).unwrap() == 0.0);
}

/// A coefficient beyond `f32`'s range is refused when an `f32` run is planned, where it would
/// otherwise turn infinite in the engines and be reported as a blow-up at the first step; in
/// `f64` it plans.
#[test]
fn coefficients_beyond_f32_are_refused_for_f32_runs() {
    let huge = Stencil::seven_point(1e300, 0.0);
    let err = PlanBuilder::new(huge.clone(), DType::F32, [10, 10, 10])
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("1e300 is beyond the range of f32"), "{err}");
    assert!(PlanBuilder::new(huge, DType::F64, [10, 10, 10])
        .build()
        .is_ok());
    let plane = Stencil2::star(1, &[1.0, -1e39]).unwrap();
    assert!(PlanBuilder::new(plane, DType::F32, [10, 10, 1])
        .build()
        .is_err());
    let filter = stencil35d::Filter2::new([1, 1], &[1.0])
        .unwrap()
        .with_border(Border::Constant(4e38));
    let err = PlanBuilder::new(filter, DType::F32, [10, 10, 1])
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("4e38"), "{err}");
}
