//! Helpers shared by the lattice-Boltzmann integration tests: lattices with every kind of
//! boundary, random near-equilibrium states, and runs with a chosen engine.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use stencil35d::lbm::{equilibrium, Axis, Cell, Face, Lattice, Physics, Shape, Q, WEIGHTS};
use stencil35d::{DType, Engine, PlanBuilder, Real, Solver};

/// Relative max-norm tolerance against the reference engine. An engine's populations differ
/// from the reference's by rounding alone (a different operation order, FMA use): a few ulps
/// per step, since the collision relaxes each node towards its equilibrium and streaming only
/// moves values, so a difference made in one step is carried, not amplified, by the next.
/// The suites run up to 50 steps (`gpu_lbm`; 17 in `lbm_engines`' deepest `dim_t`): 50 steps of
/// 2-3 ulps is ~150 ulps, within 1e-5 for `f32` (ulp 6e-8: 167 ulps) and far within 1e-12
/// for `f64` (ulp 1.1e-16: ~9,000 ulps).
pub fn tolerance<T: Real>() -> f64 {
    match T::DTYPE {
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
    }
}

#[path = "../setup/mod.rs"]
mod setup;
// Not every suite that shares these helpers uses the described machine.
#[allow(unused_imports)]
pub use setup::{cli_within, slow_memory_machine, Setup};

/// Runs `steps` steps of `setup` on a copy of `input`.
pub fn run<T: Real>(input: &Lattice<T>, setup: Setup, steps: usize) -> Lattice<T> {
    let mut lat = input.clone();
    let mut b = PlanBuilder::new(
        stencil35d::lbm::LbmKernel::of(input),
        T::DTYPE,
        input.dims(),
    )
    .engine(setup.engine)
    .threads(setup.threads);
    if setup.engine == Engine::Blocked {
        b = b.dim_t(setup.dim_t);
        if let Some(t) = setup.tile {
            b = b.tile(t);
        }
        if let Some(n) = setup.tile_threads {
            b = b.tile_threads(n);
        }
        if let Some(n) = setup.z_chunks {
            b = b.z_chunks(n);
        }
    }
    let plan = b
        .build()
        .unwrap_or_else(|e| panic!("{setup:?} on {:?}: {e}", input.dims()));
    Solver::new(plan)
        .run(&mut lat, steps)
        .unwrap_or_else(|e| panic!("{setup:?}: {e}"));
    lat
}

/// Sets every node to a random state near equilibrium: density 1 ± 0.05, velocity components
/// ± 0.05, plus a random non-equilibrium part of ± 2% of each weight. Walls get one too: they
/// keep their populations, and every wall holding its own values shows an engine that carries
/// them from the wrong node or array (the blocked engine copies the x-face walls straight from
/// the pass's source).
pub fn randomize<T: Real>(lat: &mut Lattice<T>, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let [nx, ny, nz] = lat.dims();
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let rho = 1.0 + rng.random_range(-0.05..0.05);
                let u = [0; 3].map(|_| rng.random_range(-0.05..0.05));
                let feq = equilibrium(rho, u);
                let f: [T; Q] = std::array::from_fn(|i| {
                    T::of(feq[i] + WEIGHTS[i] * rng.random_range(-0.02..0.02))
                });
                lat.set_populations(x, y, z, f);
            }
        }
    }
}

/// The boundary configurations the equivalence tests cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Walls on every face, a lid moving diagonally in the y = max face, a wall box inside.
    Cavity,
    /// Periodic x and z, walls on the y faces, a body force, a sphere obstacle.
    ForcedChannel,
    /// Inlet at x = 0, outlet at x = max, walls on y, periodic z, a moving-wall cylinder.
    InletOutlet,
    /// Periodic along x only (walls on the y and z faces), with a force and a sphere.
    PeriodicX,
    /// Periodic along y only.
    PeriodicY,
    /// Periodic along z only.
    PeriodicZ,
    /// Periodic along every axis with a box obstacle and a force.
    PeriodicAll,
}

impl Scenario {
    pub const ALL: [Scenario; 7] = [
        Scenario::Cavity,
        Scenario::ForcedChannel,
        Scenario::InletOutlet,
        Scenario::PeriodicX,
        Scenario::PeriodicY,
        Scenario::PeriodicZ,
        Scenario::PeriodicAll,
    ];

    /// A lattice of `dims` in this configuration with a random near-equilibrium state. The
    /// body force is large enough that dropping its source term changes the populations by
    /// about 1e-3 over ten steps, far beyond the f32 tolerance (1e-5), and small enough to
    /// keep the flow at low Mach number over the tests' few tens of steps.
    pub fn lattice<T: Real>(self, dims: [usize; 3], physics: Physics, seed: u64) -> Lattice<T> {
        let force = [1e-3, -5e-4, 7.5e-4];
        let physics = match self {
            Scenario::ForcedChannel | Scenario::PeriodicX | Scenario::PeriodicAll => {
                physics.with_force(force)
            }
            _ => physics,
        };
        let mut lat = Lattice::<T>::new(dims, physics).unwrap();
        let periodic = match self {
            Scenario::Cavity => [false; 3],
            Scenario::ForcedChannel => [true, false, true],
            Scenario::InletOutlet => [false, false, true],
            Scenario::PeriodicX => [true, false, false],
            Scenario::PeriodicY => [false, true, false],
            Scenario::PeriodicZ => [false, false, true],
            Scenario::PeriodicAll => [true; 3],
        };
        for (a, p) in Axis::ALL.into_iter().zip(periodic) {
            lat.set_periodic(a, p);
        }
        for face in Face::ALL {
            if !periodic[face.axis().index()] {
                lat.set_face(face, Cell::Wall).unwrap();
            }
        }
        let c = dims.map(|n| n as f64 / 2.0);
        let small = dims.iter().copied().min().unwrap() as f64;
        match self {
            Scenario::Cavity => {
                lat.set_face(
                    Face::YMax,
                    Cell::MovingWall {
                        velocity: [0.08, 0.0, 0.03],
                    },
                )
                .unwrap();
                lat.fill_shape(
                    &Shape::Box {
                        min: [c[0] - 2.0, 2.0, c[2]],
                        max: [c[0] + 1.0, 4.0, c[2] + 1.0],
                    },
                    Cell::Wall,
                )
                .unwrap();
            }
            Scenario::InletOutlet => {
                lat.set_face(
                    Face::XMin,
                    Cell::Inlet {
                        velocity: [0.05, 0.01, 0.0],
                    },
                )
                .unwrap();
                lat.set_face(Face::XMax, Cell::Outlet { density: 1.01 })
                    .unwrap();
                // The walls keep the corners of the x faces.
                lat.set_face(Face::YMin, Cell::Wall).unwrap();
                lat.set_face(Face::YMax, Cell::Wall).unwrap();
                lat.fill_shape(
                    &Shape::Cylinder {
                        axis: Axis::Z,
                        centre: [c[0], c[1], 0.0],
                        radius: small / 6.0,
                    },
                    Cell::MovingWall {
                        velocity: [0.0, 0.02, 0.01],
                    },
                )
                .unwrap();
            }
            Scenario::PeriodicAll => {
                lat.fill_shape(
                    &Shape::Box {
                        min: [0.0, 1.0, 2.0],
                        max: [2.0, 3.0, 4.0],
                    },
                    Cell::Wall,
                )
                .unwrap();
            }
            _ => {
                lat.fill_shape(
                    &Shape::Sphere {
                        centre: c,
                        radius: small / 5.0,
                    },
                    Cell::Wall,
                )
                .unwrap();
            }
        }
        randomize(&mut lat, seed);
        lat
    }
}

/// A tile for `dim_t` that cuts the lattice into several pieces (full width when x is periodic).
pub fn small_tile(dims: [usize; 3], periodic_x: bool, dim_t: usize) -> [usize; 2] {
    let x = if periodic_x {
        dims[0] + 2 * dim_t
    } else {
        2 * dim_t + 5
    };
    [x, 2 * dim_t + 3]
}

/// A closed cavity in `f64`: walls on five faces, a lid moving in x and z on the sixth, a
/// resting sphere inside, and a slightly uneven density at rest (the mass-conservation case).
pub fn closed_cavity() -> Lattice<f64> {
    let mut lat = Lattice::<f64>::new([22, 19, 17], Physics::bgk(0.6)).unwrap();
    for face in Face::ALL {
        lat.set_face(face, Cell::Wall).unwrap();
    }
    lat.set_face(
        Face::YMax,
        Cell::MovingWall {
            velocity: [0.1, 0.0, 0.05],
        },
    )
    .unwrap();
    lat.fill_shape(
        &Shape::Sphere {
            centre: [11.0, 8.0, 8.0],
            radius: 3.5,
        },
        Cell::Wall,
    )
    .unwrap();
    lat.set_equilibrium(|x, y, _| (1.0 + 0.01 * ((x + 2 * y) % 5) as f64, [0.0; 3]))
        .unwrap();
    lat
}

/// Asserts that two lattices hold the same steps, physics, periodicity, cells and bitwise the
/// same populations.
pub fn assert_bitwise_equal<T: Real>(a: &Lattice<T>, b: &Lattice<T>) {
    assert_eq!(a.dims(), b.dims());
    assert_eq!(a.steps(), b.steps());
    assert_eq!(a.physics(), b.physics());
    assert_eq!(a.periodic(), b.periodic());
    let [nx, ny, nz] = a.dims();
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                assert_eq!(a.cell(x, y, z), b.cell(x, y, z));
                let bits = |l: &Lattice<T>| {
                    l.populations(x, y, z)
                        .iter()
                        .map(|v| v.to_f64().unwrap().to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(a), bits(b), "node ({x}, {y}, {z}) differs");
            }
        }
    }
}
