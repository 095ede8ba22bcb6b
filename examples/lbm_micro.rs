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

/// A size like `64x32x8` (or a tile like `260x12`) with `n` numbers.
fn numbers(s: &str, n: usize) -> Result<Vec<usize>, String> {
    let v: Vec<usize> = s
        .split('x')
        .map(|v| {
            v.parse()
                .map_err(|_| format!("'{s}' is not a size like 64x32x8"))
        })
        .collect::<Result<_, _>>()?;
    if v.len() != n {
        return Err(format!("'{s}' has {} numbers, {n} wanted", v.len()));
    }
    Ok(v)
}

/// `s` parsed as a `T`, or a message naming `what` was expected.
fn parsed<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("'{s}' is not {what}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: lbm_micro NXxNYxNZ THREADS ENGINE periodic|walls [DIM_T TILE_XxY]");
        std::process::exit(2);
    }
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let d = numbers(&args[1], 3)?;
    let dims = [d[0], d[1], d[2]];
    let threads: usize = parsed(&args[2], "a thread count")?;
    let engine: Engine = args[3].parse()?;
    let walls = match args[4].as_str() {
        "walls" => true,
        "periodic" => false,
        other => return Err(format!("'{other}' is neither periodic nor walls").into()),
    };
    let mut lat = Lattice::<f32>::new(dims, Physics::bgk(0.6))?;
    for face in Face::ALL.into_iter().filter(|_| walls) {
        lat.set_face(face, Cell::Wall)?;
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
        let t = numbers(tile, 2)?;
        builder = builder
            .dim_t(parsed(dim_t, "a dim_t")?)
            .tile([t[0], t[1]])
            .tile_threads(1);
    }
    let plan = builder.build()?;
    let mut solver = Solver::new(plan);
    solver.run(&mut lat, 2)?;
    let cells: usize = dims.iter().product();
    let work: usize = match std::env::var("WORK") {
        Ok(v) => parsed(&v, "WORK: a count of node updates")?,
        Err(_) => 400_000_000,
    };
    let steps = (work / cells).clamp(12, 100_000) / 12 * 12;
    let mut best = 0.0f64;
    for _ in 0..3 {
        best = best.max(solver.run(&mut lat, steps)?.mups);
    }
    let ghz: f64 = match std::env::var("GHZ") {
        Ok(v) => parsed(&v, "GHZ: a clock in GHz")?,
        Err(_) => 2.45,
    };
    println!(
        "{} {} {engine} threads {threads}: {best:.1} MLUPS ({:.1} cycles/node/thread at {ghz} GHz)",
        args[1],
        args[4],
        ghz * 1e3 * threads as f64 / best,
    );
    Ok(())
}
