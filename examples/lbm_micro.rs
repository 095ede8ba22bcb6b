//! Lattice-Boltzmann kernel micro-benchmark: the best of three timed runs of one engine on a
//! D3Q19 `f32` lattice, in MLUPS and cycles per node per thread (at a clock given in GHz).
//! Lattices of a few rows in cache show the fixed cost of a row; long rows the cost per node.
//!
//! ```sh
//! cargo run --release --example lbm_micro -- 32x64x8 1 naive periodic
//! cargo run --release --example lbm_micro -- 256x64x64 1 blocked walls 2 260x12
//! ```
//! Arguments: size NXxNYxNZ, threads, engine, `periodic` (every axis) or `walls` (every face),
//! then for the blocked engine `dim_t` and a tile XxY (one thread per tile). The clock for the
//! cycle figure is `GHZ` from the environment (default 2.45); `WORK` sets the node updates of
//! each timed run (default 4·10⁸).

use stencil35d::lbm::{Axis, Cell, Face, Lattice, Physics};
use stencil35d::{Engine, PlanBuilder, Solver};

fn numbers(s: &str) -> Vec<usize> {
    s.split('x')
        .map(|v| v.parse().expect("a size like 64x32x8"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: lbm_micro NXxNYxNZ THREADS ENGINE periodic|walls [DIM_T TILE_XxY]");
        std::process::exit(2);
    }
    let d = numbers(&args[1]);
    let dims = [d[0], d[1], d[2]];
    let threads: usize = args[2].parse().expect("a thread count");
    let engine: Engine = args[3].parse().expect("an engine name");
    let walls = args[4] == "walls";
    let mut lat = Lattice::<f32>::new(dims, Physics::bgk(0.6)).expect("a valid lattice");
    for face in Face::ALL.into_iter().filter(|_| walls) {
        lat.set_face(face, Cell::Wall)
            .expect("a face of the lattice");
    }
    for axis in Axis::ALL.into_iter().filter(|_| !walls) {
        lat.set_periodic(axis, true);
    }
    let mut builder = PlanBuilder::new(
        stencil35d::lbm::LbmKernel::of(&lat),
        stencil35d::DType::F32,
        dims,
    )
    .engine(engine)
    .threads(threads);
    if let (Some(dim_t), Some(tile)) = (args.get(5), args.get(6)) {
        let t = numbers(tile);
        builder = builder
            .dim_t(dim_t.parse().expect("a dim_t"))
            .tile([t[0], t[1]])
            .tile_threads(1);
    }
    let plan = builder.build().expect("a plan");
    let mut solver = Solver::new(plan);
    solver.run(&mut lat, 2).expect("a warm-up run");
    let cells: usize = dims.iter().product();
    let work: usize =
        std::env::var("WORK").map_or(400_000_000, |v| v.parse().expect("WORK: updates"));
    let steps = (work / cells).clamp(12, 100_000) / 12 * 12;
    let best = (0..3)
        .map(|_| solver.run(&mut lat, steps).expect("a timed run").mups)
        .fold(0.0, f64::max);
    let ghz: f64 = std::env::var("GHZ").map_or(2.45, |v| v.parse().expect("GHZ in GHz"));
    println!(
        "{} {} {engine} threads {threads}: {best:.1} MLUPS ({:.1} cycles/node/thread at {ghz} GHz)",
        args[1],
        args[4],
        ghz * 1e3 * threads as f64 / best,
    );
}
