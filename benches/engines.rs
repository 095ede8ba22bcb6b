//! `cargo bench`: every engine on small problems, so a speed regression shows up in review.
//! Stencils (star7, box27) on 64³ `f32` grids and the D3Q19 cavity on a 48³ `f32` lattice, four
//! time steps per iteration; throughput is in cell updates per second. GPU engines are skipped,
//! with the reason printed, where the library cannot run them (no GPU, no GPU engine for the
//! lattice).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use stencil35d::perf::{cavity_lattice, kernel_by_name};
use stencil35d::{DType, Engine, Grid, PlanBuilder, Solver, State};

const STEPS: usize = 4;

fn engines(c: &mut Criterion) {
    let cases: [(&str, usize); 3] = [("star7", 64), ("box27", 64), ("d3q19", 48)];
    for (name, n) in cases {
        let kernel = kernel_by_name(name).expect("a known kernel");
        let dims = [n; 3];
        let mut group = c.benchmark_group(format!("{name}-f32-{n}"));
        group
            .sample_size(10)
            .warm_up_time(std::time::Duration::from_millis(300))
            .measurement_time(std::time::Duration::from_secs(1));
        let radius = kernel.cost(DType::F32).radius;
        let interior: u64 = if name == "d3q19" {
            (n * n * n) as u64
        } else {
            ((n - 2 * radius) as u64).pow(3)
        };
        group.throughput(Throughput::Elements(interior * STEPS as u64));
        for engine in Engine::ALL {
            let plan = match PlanBuilder::new(kernel.clone(), DType::F32, dims)
                .engine(engine)
                .build()
            {
                Ok(plan) => plan,
                Err(e) => {
                    eprintln!("skipping {name} {engine}: {e}");
                    continue;
                }
            };
            if name == "d3q19" {
                let lattice = cavity_lattice::<f32>(dims, 1).expect("a valid lattice");
                bench_state(&mut group, engine, Solver::new(plan), lattice);
            } else {
                let grid = Grid::<f32>::random(dims, 0.0, 1.0, 1).expect("a valid grid");
                bench_state(&mut group, engine, Solver::new(plan), grid);
            }
        }
        group.finish();
    }
}

/// Times `solver` advancing `state` by [`STEPS`] steps per iteration (after one untimed run,
/// so a run the library rejects is reported and skipped instead of aborting the benchmarks).
fn bench_state<S: State>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    engine: Engine,
    mut solver: Solver,
    mut state: S,
) {
    if let Err(e) = solver.run(&mut state, STEPS) {
        eprintln!("skipping {engine}: {e}");
        return;
    }
    group.bench_function(BenchmarkId::from_parameter(engine.name()), |b| {
        b.iter(|| solver.run(&mut state, STEPS).expect("ran once already"))
    });
}

criterion_group!(benches, engines);
criterion_main!(benches);
