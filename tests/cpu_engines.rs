//! The naive and blocked engines against the reference engine on random data: every supported
//! stencil, both precisions, odd sizes, grids one cell wider than the halo, every dim_t 1..=8
//! (the planner's range; 9 steps, so every depth runs a full pass), tiles that do not divide the
//! grid, 1-3 threads, tile groups of 1 and 2 threads, z cut into 1-3 chunks, step counts that
//! are not multiples of dim_t; dim_t 9..=16 (the deepest a plan accepts); teams of 4 and 5
//! threads in uneven tile groups; the planner's own blocked plan on a described machine.

mod common;

use common::{random_stencil, run, slow_memory_machine, tolerance, Setup};
use proptest::prelude::*;
use stencil35d::{Grid, Real, Stencil};

const STENCILS: [(&str, usize); 6] = [
    ("star", 1),
    ("star", 2),
    ("star", 3),
    ("star", 4),
    ("box", 1),
    ("box", 2),
];

fn check<T: Real>(stencil: &Stencil, input: &Grid<T>, steps: usize, setups: &[Setup]) {
    let expected = run(stencil, input, Setup::reference(), steps);
    assert_ne!(
        &expected, input,
        "the reference must change the grid, or the test proves nothing"
    );
    for &setup in setups {
        let got = run(stencil, input, setup, steps);
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= tolerance::<T>(),
            "{stencil} {} {:?} {setup:?} steps={steps}: max rel err {err:e}",
            T::DTYPE,
            input.dims()
        );
    }
}

/// Blocked settings covering dim_t 1..=8 with small tiles that do not divide the grid (many
/// tiles, clipped edge tiles): one thread, and a team of 2 sharing every tile (its own
/// schedule of one plane a step), at every dim_t, and the same dim_t with tile groups (3
/// threads in groups of 2 and 1, or of one thread each, and 2 threads in groups of one) on z
/// cut into 2 or 3 chunks, each with its halo.
fn blocked_sweep(r: usize) -> Vec<Setup> {
    (1..=8)
        .flat_map(|d| {
            let tile = [2 * r * d + 9, 2 * r * d + 5];
            let (threads, per_group) = GROUPINGS[d % GROUPINGS.len()];
            [
                Setup::blocked(d, tile, 1),
                Setup::blocked(d, tile, 2),
                Setup::blocked(d, tile, threads)
                    .groups_of(per_group)
                    .chunks(2 + d % 2),
            ]
        })
        .collect()
}

/// Steps of the sweeps above: more than the deepest dim_t, and a multiple of none but 1 and 3.
const STEPS: usize = 9;

/// (threads, threads per tile group) pairs that split the team into several groups.
const GROUPINGS: [(usize, usize); 3] = [(3, 2), (2, 1), (3, 1)];

fn odd_sizes<T: Real>() {
    for (i, (kind, r)) in STENCILS.into_iter().enumerate() {
        let stencil = random_stencil(kind, r, 10 + i as u64);
        let input = Grid::<T>::random([37, 29, 23], 0.0, 1.0, i as u64).unwrap();
        let mut setups = vec![Setup::naive(1), Setup::naive(2)];
        setups.extend(blocked_sweep(r));
        check(&stencil, &input, STEPS, &setups);
    }
}

#[test]
fn odd_sizes_f32() {
    odd_sizes::<f32>();
}

#[test]
fn odd_sizes_f64() {
    odd_sizes::<f64>();
}

fn tiny_grids<T: Real>() {
    for (i, (kind, r)) in STENCILS.into_iter().enumerate() {
        let stencil = random_stencil(kind, r, 20 + i as u64);
        let h = 2 * r + 1; // one interior cell along the axis
        for dims in [
            [h, h, h],
            [h + 1, h, h + 2],
            [h, h + 3, h + 1],
            [h + 17, h + 2, h],
        ] {
            let input = Grid::<T>::random(dims, 0.0, 1.0, 99).unwrap();
            let mut setups = vec![Setup::naive(2)];
            setups.extend((1..=8).map(|d| {
                let s = Setup::blocked(d, [2 * r * d + 1, 2 * r * d + 2], 2);
                if d % 2 == 0 {
                    s.groups_of(1).chunks(2)
                } else {
                    s
                }
            }));
            check(&stencil, &input, STEPS, &setups);
        }
    }
}

#[test]
fn tiny_grids_f32() {
    tiny_grids::<f32>();
}

#[test]
fn tiny_grids_f64() {
    tiny_grids::<f64>();
}

#[test]
fn planner_defaults_match_reference() {
    // Whatever the planner picks on this machine must be right too.
    for name in ["star7", "box27", "star:4", "box:2"] {
        let stencil = Stencil::from_name(name).unwrap();
        let input = Grid::<f32>::random([70, 45, 33], 0.0, 1.0, 5).unwrap();
        let expected = run(&stencil, &input, Setup::reference(), 9);
        let plan = stencil35d::Plan::for_grid(&stencil, &input).unwrap();
        let mut got = input.clone();
        stencil35d::Solver::new(plan.clone())
            .run(&mut got, 9)
            .unwrap();
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= 1e-5,
            "{name} with the planner's choice\n{plan}\nerr {err:e}"
        );
    }
}

#[test]
fn boundary_layer_never_changes() {
    let stencil = random_stencil("star", 2, 3);
    let input = Grid::<f64>::random([30, 21, 17], 0.0, 1.0, 8).unwrap();
    for setup in [
        Setup::naive(2),
        Setup::blocked(3, [25, 19], 2),
        Setup::reference(),
    ] {
        let out = run(&stencil, &input, setup, 5);
        for ([x, y, z], v) in out.iter() {
            let boundary = x < 2 || y < 2 || z < 2 || x >= 28 || y >= 19 || z >= 15;
            if boundary {
                assert_eq!(
                    v,
                    input.get(x, y, z),
                    "{setup:?} changed boundary cell ({x},{y},{z})"
                );
            }
        }
    }
}

#[test]
fn repeated_runs_continue_where_they_stopped() {
    // Two runs of 4 and 5 steps on one solver equal one run of 9 (scratch reuse across runs).
    let stencil = random_stencil("box", 1, 4);
    let input = Grid::<f64>::random([33, 26, 19], 0.0, 1.0, 6).unwrap();
    let expected = run(&stencil, &input, Setup::reference(), 9);
    let plan = stencil35d::PlanBuilder::new(stencil.clone(), stencil35d::DType::F64, input.dims())
        .dim_t(3)
        .tile([17, 11])
        .threads(2)
        .build()
        .unwrap();
    for per_group in [1, 2] {
        let plan = plan.rebuild().tile_threads(per_group).build().unwrap();
        assert_eq!(plan.tile_threads(), per_group);
        let mut solver = stencil35d::Solver::new(plan);
        let mut grid = input.clone();
        solver.run(&mut grid, 4).unwrap();
        solver.run(&mut grid, 5).unwrap();
        assert!(grid.max_rel_diff(&expected).unwrap() <= 1e-12);
    }
}

/// The shape of a case the property test below once shrank a failure to (its stencil is drawn
/// afresh): a star of radius 1 on 3×3×6, `dim_t` 2 with tiles one cell beyond the halos, one
/// thread, two steps.
#[test]
fn a_shrunk_property_case_matches_reference() {
    let (kind, r) = STENCILS[0];
    let stencil = random_stencil(kind, r, 0);
    let input = Grid::<f32>::random([3, 3, 6], -1.0, 1.0, 0).unwrap();
    let setups = [
        Setup::blocked(2, [2 * r * 2 + 1, 2 * r * 2 + 1], 1),
        Setup::naive(1),
    ];
    check(&stencil, &input, 2, &setups);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    /// Random shapes, sizes, dim_t, tiles, thread counts, tile groups, z chunks and step
    /// counts.
    #[test]
    fn random_configurations_match_reference(
        which in 0usize..6,
        extra in (0usize..14, 0usize..14, 0usize..14),
        dim_t in 1usize..=8,
        tile_extra in (1usize..20, 1usize..20),
        threads in 1usize..=3,
        per_group in 1usize..=3,
        chunks in 1usize..=4,
        steps in 1usize..=9,
        double in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let (kind, r) = STENCILS[which];
        let stencil = random_stencil(kind, r, seed);
        let dims = [2 * r + 1 + extra.0, 2 * r + 1 + extra.1, 2 * r + 1 + extra.2];
        let tile = [2 * r * dim_t + tile_extra.0, 2 * r * dim_t + tile_extra.1];
        let setups = [
            Setup::blocked(dim_t, tile, threads).groups_of(per_group).chunks(chunks),
            Setup::naive(threads),
        ];
        if double {
            check(&stencil, &Grid::<f64>::random(dims, -1.0, 1.0, seed).unwrap(), steps, &setups);
        } else {
            check(&stencil, &Grid::<f32>::random(dims, -1.0, 1.0, seed).unwrap(), steps, &setups);
        }
    }
}

/// dim_t past the planner's range, up to the deepest a plan accepts (`MAX_DIM_T` = 16): star
/// radius 1 and 2 and box radius 1 on a small odd grid, tiles a few cells wider than the ghost
/// zones, in turn one thread, a team of 2 on every tile, and 2 threads in tile groups of one on
/// z cut into 2 chunks, 17
/// steps (one full pass at every depth, and a remainder). Tolerances as in `odd_sizes`: the
/// extra depth adds no rounding beyond what 17 steps of the engine's order and FMA use do.
fn deep_dim_t<T: Real>() {
    assert_eq!(stencil35d::plan::MAX_DIM_T, 16);
    for (i, (kind, r)) in [("star", 1), ("star", 2), ("box", 1)]
        .into_iter()
        .enumerate()
    {
        let stencil = random_stencil(kind, r, 60 + i as u64);
        let input = Grid::<T>::random([41, 29, 23], 0.0, 1.0, 70 + i as u64).unwrap();
        let setups: Vec<Setup> = (9..=16)
            .map(|d| {
                let tile = [2 * r * d + 9, 2 * r * d + 5];
                match d % 3 {
                    0 => Setup::blocked(d, tile, 2).groups_of(1).chunks(2),
                    1 => Setup::blocked(d, tile, 1),
                    _ => Setup::blocked(d, tile, 2),
                }
            })
            .collect();
        check(&stencil, &input, 17, &setups);
    }
}

#[test]
fn deep_dim_t_f32() {
    deep_dim_t::<f32>();
}

#[test]
fn deep_dim_t_f64() {
    deep_dim_t::<f64>();
}

/// Teams of 4 and 5 threads (more than this CI machine's cores, which only slows them):
/// naive sweeps, the whole team on every tile, and uneven tile groups (5 threads in groups of
/// at most 3: 3 + 2; of 2: 2 + 2 + 1; 4 threads in groups of at most 3: 2 + 2), with and without z
/// chunks.
fn many_threads<T: Real>() {
    for (i, (kind, r)) in [("star", 1), ("star", 3), ("box", 1)]
        .into_iter()
        .enumerate()
    {
        let stencil = random_stencil(kind, r, 80 + i as u64);
        let input = Grid::<T>::random([45, 38, 27], 0.0, 1.0, 90 + i as u64).unwrap();
        let d = 3;
        let tile = [2 * r * d + 7, 2 * r * d + 6];
        let setups = [
            Setup::naive(4),
            Setup::naive(5),
            Setup::blocked(d, tile, 4),
            Setup::blocked(d, tile, 5),
            Setup::blocked(d, tile, 5).groups_of(3),
            Setup::blocked(d, tile, 5).groups_of(3).chunks(3),
            Setup::blocked(d, tile, 5).groups_of(2).chunks(2),
            Setup::blocked(d, tile, 4).groups_of(3).chunks(4),
            Setup::blocked(d + 2, [2 * r * (d + 2) + 8, 2 * r * (d + 2) + 4], 5).groups_of(1),
        ];
        check(&stencil, &input, STEPS, &setups);
    }
}

#[test]
fn many_threads_f32() {
    many_threads::<f32>();
}

#[test]
fn many_threads_f64() {
    many_threads::<f64>();
}

/// The planner's own blocked plan (no engine, dim_t or tile fixed) on a machine where blocking
/// clearly wins, against the reference: star7 and star radius 2 in f32 (tolerance 1e-5) and
/// f64 (1e-12). The plan runs as the planner made it, and with its configuration fixed, so the
/// blocked engine computes the result even if the solver's check of the plan would switch.
#[test]
fn planner_chosen_blocked_plans_match_reference() {
    let machine = slow_memory_machine();
    for (i, name) in ["star7", "star:2"].into_iter().enumerate() {
        let stencil = Stencil::from_name(name).unwrap();
        for double in [false, true] {
            let dims = [96, 67, 41];
            let dtype = if double {
                stencil35d::DType::F64
            } else {
                stencil35d::DType::F32
            };
            let plan = stencil35d::PlanBuilder::new(stencil.clone(), dtype, dims)
                .machine(machine.clone())
                .threads(2)
                .build()
                .unwrap();
            assert_eq!(plan.engine(), stencil35d::Engine::Blocked, "{plan}");
            assert!(plan.dim_t() >= 2, "{plan}");
            let fixed = plan
                .rebuild()
                .engine(stencil35d::Engine::Blocked)
                .dim_t(plan.dim_t())
                .tile(plan.tile())
                .tile_threads(plan.tile_threads())
                .z_chunks(plan.z_chunks())
                .build()
                .unwrap();
            if double {
                planned_matches::<f64>(&stencil, dims, &[&plan, &fixed], 20 + i as u64);
            } else {
                planned_matches::<f32>(&stencil, dims, &[&plan, &fixed], 20 + i as u64);
            }
        }
    }
}

/// Runs each of `plans` for 11 steps from one random grid and compares with the reference.
fn planned_matches<T: Real>(
    stencil: &Stencil,
    dims: [usize; 3],
    plans: &[&stencil35d::Plan],
    seed: u64,
) {
    let input = Grid::<T>::random(dims, 0.0, 1.0, seed).unwrap();
    let expected = run(stencil, &input, Setup::reference(), 11);
    for plan in plans {
        let mut got = input.clone();
        let report = stencil35d::Solver::new((*plan).clone())
            .run(&mut got, 11)
            .unwrap();
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= tolerance::<T>(),
            "{stencil} {} ran on {}\n{plan}\nmax rel err {err:e}",
            T::DTYPE,
            report.engine
        );
    }
}
