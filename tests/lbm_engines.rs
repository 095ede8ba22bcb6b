//! The naive and blocked lattice-Boltzmann engines against the reference engine on random
//! near-equilibrium states with every kind of boundary present: walls, moving walls, inlets,
//! outlets, obstacles, body forces and periodic axes (each alone and all together); BGK and
//! TRT; f32 and f64; odd sizes and lattices down to one node per axis; every dim_t 1..=8 with
//! tiles that do not divide the lattice; 1 and 2 threads; tile groups on z cut into chunks;
//! step counts that are not multiples of dim_t; dim_t 9 and 16 (the deepest a plan accepts);
//! teams of 4 and 5 threads in uneven tile groups; the planner's own blocked plan on a
//! described machine.

mod lbm_common;

use lbm_common::{randomize, run, slow_memory_machine, small_tile, tolerance, Scenario, Setup};
use proptest::prelude::*;
use stencil35d::lbm::{Axis, Cell, Face, Lattice, Physics};
use stencil35d::{Plan, Real, Solver};

fn check<T: Real>(input: &Lattice<T>, steps: usize, setups: &[Setup], what: &str) {
    let expected = run(input, Setup::reference(), steps);
    assert!(
        expected.max_rel_diff(input).unwrap() > 1e-4,
        "{what}: the reference must change the state, or the test proves nothing"
    );
    for &setup in setups {
        let got = run(input, setup, steps);
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= tolerance::<T>(),
            "{what} {} {:?} {setup:?} steps={steps}: max rel err {err:e}",
            T::DTYPE,
            input.dims()
        );
        assert_eq!(got.steps(), steps as u64);
    }
}

fn every_dim_t(dims: [usize; 3], periodic_x: bool) -> Vec<Setup> {
    let mut setups = vec![Setup::naive(1), Setup::naive(2)];
    // One thread, and a team of 2 sharing every tile (its own schedule), at every dim_t.
    setups.extend((1..=8).flat_map(|d| {
        let tile = small_tile(dims, periodic_x, d);
        [Setup::blocked(d, tile, 1), Setup::blocked(d, tile, 2)]
    }));
    // Tile groups: 3 threads in groups of 2 and 1, 2 threads in groups of one, 3 of one; z
    // cut into 2 or 3 chunks, each with its halo.
    setups.extend((1..=8).map(|d| {
        let (threads, per_group) = [(3, 2), (2, 1), (3, 1)][d % 3];
        Setup::blocked(d, small_tile(dims, periodic_x, d), threads)
            .groups_of(per_group)
            .chunks(2 + d % 2)
    }));
    setups
}

fn scenarios<T: Real>() {
    let dims = [23, 17, 13];
    for (k, scenario) in Scenario::ALL.into_iter().enumerate() {
        for physics in [Physics::bgk(0.57), Physics::trt(0.9, 3.0 / 16.0)] {
            let input = scenario.lattice::<T>(dims, physics, k as u64);
            let setups = every_dim_t(dims, input.periodic()[0]);
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

/// Lattices one to four nodes thick: single tiles, nodes that are their own periodic
/// neighbours, rows shorter than a SIMD vector, levels wider than the lattice.
fn tiny<T: Real>() {
    for (k, dims) in [
        [1, 1, 1],
        [2, 3, 1],
        [3, 1, 4],
        [5, 4, 3],
        [9, 2, 2],
        [17, 3, 5],
    ]
    .into_iter()
    .enumerate()
    {
        let mut lat =
            Lattice::<T>::new(dims, Physics::trt(0.7, 0.25).with_force([1e-4, 0.0, 2e-5])).unwrap();
        for a in Axis::ALL {
            lat.set_periodic(a, true);
        }
        if dims.iter().product::<usize>() > 2 {
            lat.set_cell(0, 0, 0, Cell::Wall).unwrap();
        }
        if dims[0] > 2 {
            lat.set_cell(
                1,
                0,
                0,
                Cell::MovingWall {
                    velocity: [0.0, 0.05, 0.0],
                },
            )
            .unwrap();
        }
        randomize(&mut lat, 40 + k as u64);
        check(
            &lat,
            5,
            &every_dim_t(dims, true),
            &format!("tiny periodic {dims:?}"),
        );
        // The same with closed x: walls on its faces.
        if dims[0] > 2 {
            lat.set_periodic(Axis::X, false);
            lat.set_face(
                Face::XMin,
                Cell::Inlet {
                    velocity: [0.04, 0.0, 0.0],
                },
            )
            .unwrap();
            lat.set_face(Face::XMax, Cell::Outlet { density: 1.0 })
                .unwrap();
            randomize(&mut lat, 50 + k as u64);
            check(
                &lat,
                5,
                &every_dim_t(dims, false),
                &format!("tiny closed x {dims:?}"),
            );
        }
    }
}

#[test]
fn tiny_lattices_f64() {
    tiny::<f64>();
}

#[test]
fn tiny_lattices_f32() {
    tiny::<f32>();
}

#[test]
fn planner_default_matches_reference() {
    for scenario in [
        Scenario::Cavity,
        Scenario::ForcedChannel,
        Scenario::InletOutlet,
    ] {
        let input = scenario.lattice::<f32>([70, 45, 33], Physics::trt(0.6, 0.25), 3);
        let expected = run(&input, Setup::reference(), 9);
        let plan = Plan::for_lattice(&input).unwrap();
        let mut got = input.clone();
        Solver::new(plan.clone()).run(&mut got, 9).unwrap();
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= 1e-5,
            "{scenario:?} with the planner's choice\n{plan}\nerr {err:e}"
        );
    }
}

/// Naive and blocked share the node update, so they agree bitwise whatever the tiling.
#[test]
fn naive_and_blocked_agree_bitwise() {
    let input = Scenario::InletOutlet.lattice::<f64>([29, 19, 11], Physics::bgk(0.8), 9);
    let naive = run(&input, Setup::naive(2), 7);
    for d in [2, 3, 5] {
        let blocked = run(
            &input,
            Setup::blocked(d, [2 * d + 7, 2 * d + 4], 3)
                .groups_of(d % 2 + 1)
                .chunks(d % 3 + 1),
            7,
        );
        let [nx, ny, nz] = input.dims();
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let (a, b) = (naive.populations(x, y, z), blocked.populations(x, y, z));
                    assert!(
                        a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "dim_t {d}: node ({x}, {y}, {z}) differs"
                    );
                }
            }
        }
    }
}

#[test]
fn repeated_runs_continue_where_they_stopped() {
    let input = Scenario::ForcedChannel.lattice::<f64>([21, 15, 12], Physics::trt(0.7, 0.25), 4);
    let expected = run(&input, Setup::reference(), 9);
    let plan = stencil35d::PlanBuilder::new(
        stencil35d::lbm::LbmKernel::of(&input),
        stencil35d::DType::F64,
        input.dims(),
    )
    .dim_t(3)
    .tile([27, 11])
    .threads(2)
    .build()
    .unwrap();
    let mut solver = Solver::new(plan);
    let mut lat = input.clone();
    solver.run(&mut lat, 4).unwrap();
    solver.run(&mut lat, 5).unwrap();
    assert!(lat.max_rel_diff(&expected).unwrap() <= 1e-12);
    assert_eq!(lat.steps(), 9);
}

/// A random lattice: random periodicity, a sprinkling of every cell kind, walls on the faces
/// of closed axes (fluid may not touch them).
fn random_lattice<T: Real>(
    dims: [usize; 3],
    periodic: [bool; 3],
    bgk: bool,
    seed: u64,
) -> Lattice<T> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let physics = if bgk {
        Physics::bgk(0.62)
    } else {
        Physics::trt(0.75, 3.0 / 16.0)
    };
    let physics = if rng.random_bool(0.5) {
        physics.with_force([3e-5, -2e-5, 1e-5])
    } else {
        physics
    };
    let mut lat = Lattice::<T>::new(dims, physics).unwrap();
    for (a, p) in Axis::ALL.into_iter().zip(periodic) {
        lat.set_periodic(a, p);
    }
    let kinds = [
        Cell::Wall,
        Cell::MovingWall {
            velocity: [0.05, -0.02, 0.01],
        },
        Cell::Inlet {
            velocity: [0.03, 0.0, -0.01],
        },
        Cell::Outlet { density: 0.98 },
    ];
    let pick = move |rng: &mut rand::rngs::StdRng| kinds[rng.random_range(0..kinds.len())];
    for face in Face::ALL {
        let a = face.axis().index();
        if !periodic[a] {
            // A moving wall on a face moves in the face's plane.
            let cell = match pick(&mut rng) {
                Cell::MovingWall { mut velocity } => {
                    velocity[a] = 0.0;
                    Cell::MovingWall { velocity }
                }
                other => other,
            };
            lat.set_face(face, cell).unwrap();
        }
    }
    let [nx, ny, nz] = dims;
    for _ in 0..(nx * ny * nz / 8).max(1) {
        let cell = pick(&mut rng);
        let (x, y, z) = (
            rng.random_range(0..nx),
            rng.random_range(0..ny),
            rng.random_range(0..nz),
        );
        lat.set_cell(x, y, z, cell).unwrap();
    }
    randomize(&mut lat, seed);
    lat
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    /// Random sizes, periodicity, cell kinds, dim_t, tiles, thread counts, tile groups, z
    /// chunks and step counts.
    #[test]
    fn random_configurations_match_reference(
        dims in (1usize..14, 1usize..14, 1usize..14),
        periodic in any::<[bool; 3]>(),
        dim_t in 1usize..=8,
        tile_extra in (1usize..20, 1usize..20),
        threads in 1usize..=3,
        per_group in 1usize..=2,
        chunks in 1usize..=4,
        steps in 1usize..=9,
        bgk in any::<bool>(),
        double in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let dims = [dims.0, dims.1, dims.2];
        let tile_x = if periodic[0] { dims[0] + 2 * dim_t } else { 2 * dim_t + tile_extra.0 };
        let tile = [tile_x, 2 * dim_t + tile_extra.1];
        let setups = [
            Setup::blocked(dim_t, tile, threads).groups_of(per_group).chunks(chunks),
            Setup::naive(threads),
        ];
        if double {
            let lat = random_lattice::<f64>(dims, periodic, bgk, seed);
            check_loose(&lat, steps, &setups);
        } else {
            let lat = random_lattice::<f32>(dims, periodic, bgk, seed);
            check_loose(&lat, steps, &setups);
        }
    }
}

/// Like `check`, without requiring the state to change (a lattice of walls may not).
fn check_loose<T: Real>(input: &Lattice<T>, steps: usize, setups: &[Setup]) {
    let expected = run(input, Setup::reference(), steps);
    for &setup in setups {
        let err = run(input, setup, steps).max_rel_diff(&expected).unwrap();
        assert!(
            err <= tolerance::<T>(),
            "{:?} {setup:?} steps={steps}: {err:e}",
            input.dims()
        );
    }
}

/// The deepest dim_t a plan accepts (`MAX_DIM_T` = 16) and dim_t 9, past the planner's range:
/// a closed cavity and a channel periodic in x (full-width tiles), BGK and TRT, 17 steps (one
/// full pass and a remainder), one thread and two in groups of one on z cut into 2 chunks.
/// Tolerances as in `scenarios`: the depth adds no rounding beyond 17 steps of the engine's.
fn deepest_dim_t<T: Real>() {
    let dims = [21, 15, 13];
    let deepest = stencil35d::plan::MAX_DIM_T;
    for (k, scenario) in [Scenario::Cavity, Scenario::ForcedChannel]
        .into_iter()
        .enumerate()
    {
        for physics in [Physics::bgk(0.6), Physics::trt(0.8, 0.25)] {
            let input = scenario.lattice::<T>(dims, physics, 30 + k as u64);
            let periodic_x = input.periodic()[0];
            let setups: Vec<Setup> = [9, deepest]
                .into_iter()
                .flat_map(|d| {
                    let tile = small_tile(dims, periodic_x, d);
                    [
                        Setup::blocked(d, tile, 1),
                        Setup::blocked(d, tile, 2),
                        Setup::blocked(d, tile, 2).groups_of(1).chunks(2),
                    ]
                })
                .collect();
            check(&input, 17, &setups, &format!("{scenario:?} {physics}"));
        }
    }
}

#[test]
fn deepest_dim_t_f32() {
    deepest_dim_t::<f32>();
}

#[test]
fn deepest_dim_t_f64() {
    deepest_dim_t::<f64>();
}

/// Teams of 4 and 5 threads (more than this CI machine's cores, which only slows them): naive
/// sweeps, the whole team on every tile, and uneven tile groups (5 threads in groups of at
/// most 3: 3 + 2; of 2: 2 + 2 + 1; 4 in groups of at most 3: 2 + 2), with and without z chunks.
fn many_threads<T: Real>() {
    let dims = [27, 19, 17];
    for (k, scenario) in [Scenario::InletOutlet, Scenario::PeriodicAll]
        .into_iter()
        .enumerate()
    {
        let input = scenario.lattice::<T>(dims, Physics::trt(0.7, 3.0 / 16.0), 60 + k as u64);
        let tile = small_tile(dims, input.periodic()[0], 3);
        let setups = [
            Setup::naive(4),
            Setup::naive(5),
            Setup::blocked(3, tile, 4),
            Setup::blocked(3, tile, 5),
            Setup::blocked(3, tile, 5).groups_of(3),
            Setup::blocked(3, tile, 5).groups_of(3).chunks(3),
            Setup::blocked(3, tile, 5).groups_of(2).chunks(2),
            Setup::blocked(3, tile, 4).groups_of(3).chunks(4),
        ];
        check(&input, 9, &setups, &format!("{scenario:?}"));
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

/// The planner's own blocked plan for a lattice (no engine, dim_t or tile fixed) on a machine
/// where blocking clearly wins, against the reference (f32 1e-5, f64 1e-12 as in
/// `scenarios`). The plan runs as the planner made it, and with its configuration fixed, so
/// the blocked engine computes the result even if the solver's check of the plan would switch.
#[test]
fn planner_chosen_blocked_lattice_plans_match_reference() {
    fn one<T: Real>(scenario: Scenario, machine: &stencil35d::Machine) {
        let input = scenario.lattice::<T>([44, 31, 26], Physics::trt(0.65, 0.25), 12);
        let plan = stencil35d::PlanBuilder::new(
            stencil35d::lbm::LbmKernel::of(&input),
            T::DTYPE,
            input.dims(),
        )
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
        let expected = run(&input, Setup::reference(), 9);
        for plan in [plan, fixed] {
            let mut got = input.clone();
            let report = Solver::new(plan.clone()).run(&mut got, 9).unwrap();
            let err = got.max_rel_diff(&expected).unwrap();
            assert!(
                err <= tolerance::<T>(),
                "{scenario:?} {} ran on {}\n{plan}\nmax rel err {err:e}",
                T::DTYPE,
                report.engine
            );
        }
    }
    let machine = slow_memory_machine();
    for scenario in [Scenario::Cavity, Scenario::ForcedChannel] {
        one::<f32>(scenario, &machine);
        one::<f64>(scenario, &machine);
    }
}
