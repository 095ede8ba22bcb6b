use stencil35d::lbm::{Axis, Lattice, Physics};
use stencil35d::{Engine, PlanBuilder, Solver};
fn main() {
    let n: usize = std::env::args().nth(1).map_or(96, |s| s.parse().unwrap());
    let threads: usize = std::env::args().nth(2).map_or(1, |s| s.parse().unwrap());
    let engine: Engine = std::env::args()
        .nth(3)
        .map_or(Engine::Naive, |s| s.parse().unwrap());
    let dim_t: usize = std::env::args().nth(4).map_or(1, |s| s.parse().unwrap());
    let dims = if n > 200 { [n, 8, 8] } else { [n, n, n] };
    let mut lat = Lattice::<f32>::new(dims, Physics::bgk(0.6)).unwrap();
    for a in Axis::ALL {
        lat.set_periodic(a, true);
    }
    let mut b = PlanBuilder::new(
        stencil35d::lbm::LbmKernel::of(&lat),
        stencil35d::DType::F32,
        dims,
    )
    .engine(engine)
    .threads(threads);
    if engine == Engine::Blocked {
        b = b.dim_t(dim_t);
    }
    let plan = b.build().unwrap();
    let mut s = Solver::new(plan);
    s.run(&mut lat, 2).unwrap();
    let steps = (200_000_000 / (dims[0] * dims[1] * dims[2])).max(4);
    let mut best = 0.0f64;
    for _ in 0..3 {
        let r = s.run(&mut lat, steps).unwrap();
        best = best.max(r.mups);
    }
    println!("{n}^3 periodic {engine} threads {threads} dim_t {dim_t}: {best:.1} MLUPS ({:.1} cycles/node/thread at 2.45 GHz)", 2.45e3 * threads as f64 / best);
}
