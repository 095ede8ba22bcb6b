//! CPU sweep: in one process, times the naive engine once and the blocked engine over a list of
//! (dim_t, tile, threads per tile group) configurations, the planner's choice first, for the
//! 7-point stencil (f32, 512³) and the D3Q19 lattice (f32, 256³ lid-driven cavity), printing
//! the median MUPS of each and its ratio to naive, within a total time budget. It needs no
//! data files, so the release binary can be copied alone to another machine:
//!
//! ```text
//! cargo build --release --example cpu_sweep
//! target/release/examples/cpu_sweep --budget-seconds 90
//! ```
//!
//! Options: `--budget-seconds S` (default 90), `--threads T` (default: all cores), `--only
//! stencil|lbm`, `--size N` / `--lbm-size N` (default 512 / 256), `--steps S` /
//! `--lbm-steps S` (default 12 / 6), `--repeat R` (default 3), `--no-scaling`, and
//! `--config D:XxY:N` (repeatable; `auto` for the tile or N leaves it to the planner) to add
//! configurations of the stencil, `--lbm-config` likewise for the lattice.

use std::io::Write;
use std::time::Instant;

use stencil35d::lbm::{Cell, Face, Lattice, LbmKernel, Physics, MAGIC_POISEUILLE};
use stencil35d::{DType, Engine, Grid, Kernel, Plan, PlanBuilder, Solver, State, Stencil};

/// One blocked configuration; `None` leaves the choice to the planner.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    dim_t: Option<usize>,
    tile: Option<[usize; 2]>,
    tile_threads: Option<usize>,
}

impl Config {
    const PLANNER: Config = Config {
        dim_t: None,
        tile: None,
        tile_threads: None,
    };

    fn parse(s: &str) -> Result<Config, String> {
        let bad = || format!("config '{s}' is not D:XxY:N (tile and N may be 'auto')");
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let auto = |p: &str| p == "auto" || p == "-";
        let dim_t = if auto(parts[0]) {
            None
        } else {
            Some(parts[0].parse().map_err(|_| bad())?)
        };
        let tile = if auto(parts[1]) {
            None
        } else {
            let (x, y) = parts[1].split_once('x').ok_or_else(bad)?;
            Some([x.parse().map_err(|_| bad())?, y.parse().map_err(|_| bad())?])
        };
        let tile_threads = if auto(parts[2]) {
            None
        } else {
            Some(parts[2].parse().map_err(|_| bad())?)
        };
        Ok(Config {
            dim_t,
            tile,
            tile_threads,
        })
    }

    fn apply(&self, mut b: PlanBuilder) -> PlanBuilder {
        if let Some(d) = self.dim_t {
            b = b.dim_t(d);
        }
        if let Some(t) = self.tile {
            b = b.tile(t);
        }
        if let Some(n) = self.tile_threads {
            b = b.tile_threads(n);
        }
        b
    }
}

struct Options {
    budget: f64,
    threads: Option<usize>,
    stencil: bool,
    lbm: bool,
    size: usize,
    lbm_size: usize,
    steps: usize,
    lbm_steps: usize,
    repeat: usize,
    scaling: bool,
    configs: Vec<Config>,
    lbm_configs: Vec<Config>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        budget: 90.0,
        threads: None,
        stencil: true,
        lbm: true,
        size: 512,
        lbm_size: 256,
        steps: 12,
        lbm_steps: 6,
        repeat: 3,
        scaling: true,
        configs: Vec::new(),
        lbm_configs: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|_| format!("bad number '{v}'"));
        match a.as_str() {
            "--budget-seconds" => {
                o.budget = value()?.parse().map_err(|_| "bad --budget-seconds")?;
            }
            "--threads" => o.threads = Some(num(value()?)?),
            "--only" => match value()?.as_str() {
                "stencil" => o.lbm = false,
                "lbm" | "d3q19" => o.stencil = false,
                other => return Err(format!("--only stencil|lbm, not '{other}'")),
            },
            "--size" => o.size = num(value()?)?,
            "--lbm-size" => o.lbm_size = num(value()?)?,
            "--steps" => o.steps = num(value()?)?,
            "--lbm-steps" => o.lbm_steps = num(value()?)?,
            "--repeat" => o.repeat = num(value()?)?.max(1),
            "--no-scaling" => o.scaling = false,
            "--config" => o.configs.push(Config::parse(&value()?)?),
            "--lbm-config" => o.lbm_configs.push(Config::parse(&value()?)?),
            "-h" | "--help" => {
                println!("{}", HELP);
                std::process::exit(0);
            }
            other => return Err(format!("unknown option '{other}'\n{HELP}")),
        }
    }
    Ok(o)
}

const HELP: &str = "cpu_sweep [--budget-seconds S] [--threads T] [--only stencil|lbm] [--size N] \
[--lbm-size N] [--steps S] [--lbm-steps S] [--repeat R] [--no-scaling] [--config D:XxY:N]... \
[--lbm-config D:XxY:N]...";

/// Group sizes worth timing on `threads` threads: the team, halves of it down to one thread.
fn group_sizes(threads: usize) -> Vec<usize> {
    let mut v = vec![threads];
    let mut n = threads;
    while n > 1 {
        n = n.div_ceil(2);
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}

/// The configurations to time, most informative first.
fn sweep(threads: usize, dim_ts: &[usize], extra: &[Config], hand: &[Config]) -> Vec<Config> {
    let mut v = vec![Config::PLANNER];
    v.extend_from_slice(extra);
    for &d in dim_ts {
        for n in group_sizes(threads) {
            v.push(Config {
                dim_t: Some(d),
                tile: None,
                tile_threads: Some(n),
            });
        }
    }
    v.extend_from_slice(hand);
    let mut unique = Vec::new();
    for c in v {
        if !unique.contains(&c) {
            unique.push(c);
        }
    }
    unique
}

/// Times `plan` on a copy of `input`: a warm-up pass, then the median of `repeat` runs of
/// `steps` steps. Returns (median MUPS, the plan actually run).
fn time<S: State + Clone>(
    plan: Plan,
    input: &S,
    steps: usize,
    repeat: usize,
) -> Result<f64, String> {
    let mut solver = Solver::new(plan);
    let mut state = input.clone();
    solver
        .run(&mut state, solver.plan().dim_t().min(steps).max(1))
        .map_err(|e| e.to_string())?;
    let mut mups = Vec::new();
    for _ in 0..repeat {
        mups.push(
            solver
                .run(&mut state, steps)
                .map_err(|e| e.to_string())?
                .mups,
        );
    }
    mups.sort_by(f64::total_cmp);
    Ok(mups[mups.len() / 2])
}

fn describe(plan: &Plan) -> String {
    format!(
        "dim_t {:>2}  tile {:>9}  thr/tile {:>2} ({:>2} groups)  κ {:.3}  model {:>6.0}",
        plan.dim_t(),
        format!("{}x{}", plan.tile()[0], plan.tile()[1]),
        plan.tile_threads(),
        plan.tile_groups(),
        plan.chosen().kappa,
        plan.predicted_mups()
    )
}

/// Runs naive once and the blocked configurations on `input` until `deadline`.
#[allow(clippy::too_many_arguments)]
fn run_kernel<S: State + Clone>(
    out: &mut impl Write,
    name: &str,
    kernel: &Kernel,
    dims: [usize; 3],
    input: &S,
    o: &Options,
    configs: &[Config],
    deadline: Instant,
) -> Result<(), String> {
    let threads = o
        .threads
        .unwrap_or_else(|| stencil35d::Machine::detect().cores);
    let base = || PlanBuilder::new(kernel.clone(), DType::F32, dims).threads(threads);
    let started = Instant::now();
    let naive_plan = base()
        .engine(Engine::Naive)
        .build()
        .map_err(|e| e.to_string())?;
    let naive = time(naive_plan, input, o.steps_for(name), o.repeat)?;
    let _ = writeln!(
        out,
        "{name}: naive, {threads} threads: {naive:.0} MUPS ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    let mut best: Option<(f64, String)> = None;
    let mut last = started.elapsed().as_secs_f64();
    for (i, c) in configs.iter().enumerate() {
        if Instant::now() + std::time::Duration::from_secs_f64(last) > deadline {
            let _ = writeln!(
                out,
                "{name}: budget reached, {} configurations left out",
                configs.len() - i
            );
            break;
        }
        let plan = match c.apply(base().engine(Engine::Blocked)).build() {
            Ok(p) => p,
            Err(e) => {
                let _ = writeln!(out, "{name}: {c:?}: {e}");
                continue;
            }
        };
        if i == 0 {
            let _ = writeln!(out, "{name}: the planner's choice:\n{plan}");
        }
        let what = describe(&plan);
        let t0 = Instant::now();
        match time(plan, input, o.steps_for(name), o.repeat) {
            Ok(mups) => {
                let _ = writeln!(
                    out,
                    "{name}: {} {what}  {mups:>7.0} MUPS  {:.2}x naive",
                    if i == 0 { "planner" } else { "blocked" },
                    mups / naive
                );
                if best.as_ref().is_none_or(|b| mups > b.0) {
                    best = Some((mups, what));
                }
            }
            Err(e) => {
                let _ = writeln!(out, "{name}: {what}: {e}");
            }
        }
        let _ = out.flush();
        last = t0.elapsed().as_secs_f64();
    }
    if let Some((mups, what)) = best {
        let _ = writeln!(
            out,
            "{name}: best blocked: {what}  {mups:.0} MUPS  {:.2}x naive",
            mups / naive
        );
    }
    if o.scaling {
        for t in group_sizes(threads)
            .into_iter()
            .rev()
            .filter(|&t| t < threads)
        {
            if Instant::now()
                + std::time::Duration::from_secs_f64(last * 2.0 * threads as f64 / t as f64)
                > deadline
            {
                break;
            }
            let t0 = Instant::now();
            let one = |engine| {
                PlanBuilder::new(kernel.clone(), DType::F32, dims)
                    .threads(t)
                    .engine(engine)
                    .build()
                    .map_err(|e| e.to_string())
            };
            let n = time(one(Engine::Naive)?, input, o.steps_for(name), 1)?;
            let plan = one(Engine::Blocked)?;
            let what = describe(&plan);
            let b = time(plan, input, o.steps_for(name), 1)?;
            let _ = writeln!(
                out,
                "{name}: scaling, {t:>2} threads: naive {n:>7.0} MUPS, blocked (planner: {what}) {b:>7.0} MUPS, {:.2}x",
                b / n
            );
            let _ = out.flush();
            last = t0.elapsed().as_secs_f64() / 2.0;
        }
    }
    Ok(())
}

impl Options {
    fn steps_for(&self, name: &str) -> usize {
        if name.starts_with("d3q19") {
            self.lbm_steps
        } else {
            self.steps
        }
    }
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cpu_sweep: {e}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let m = stencil35d::Machine::detect();
    let _ = writeln!(
        out,
        "cpu_sweep: {} | {} cores | {} | caches {:?} | memory {:.1} GB/s | budget {:.0} s",
        m.cpu_model,
        m.cores,
        m.isa,
        m.caches
            .iter()
            .map(|c| format!("L{} {} KiB x{}", c.level, c.bytes >> 10, c.shared_by))
            .collect::<Vec<_>>(),
        m.bandwidth_gbs,
        o.budget
    );
    let threads = o.threads.unwrap_or(m.cores);
    let budget = std::time::Duration::from_secs_f64(o.budget);
    let result = (|| -> Result<(), String> {
        if o.stencil {
            let n = o.size;
            let deadline = start + budget.mul_f64(if o.lbm { 0.55 } else { 1.0 });
            let stencil = Stencil::seven_point(0.4, 0.1);
            let grid = Grid::<f32>::random([n; 3], 0.0, 1.0, 1).map_err(|e| e.to_string())?;
            // Hand-picked shapes: the best one found by hand with every thread on every tile,
            // then squares and strips for small groups.
            let c = |d: usize, t: [usize; 2], g: usize| Config {
                dim_t: Some(d),
                tile: Some([t[0].min(n + 2 * d), t[1].min(n + 2 * d)]),
                tile_threads: Some(g.min(threads)),
            };
            let hand = [
                c(3, [n + 6, 130], threads),
                c(3, [134, 134], 1),
                c(3, [262, 134], 1),
                c(3, [n + 6, 70], 1),
                c(4, [136, 136], 1),
                c(3, [262, 262], 2),
                c(3, [262, 262], 4),
                c(2, [n + 4, 132], 4),
            ];
            let configs = sweep(threads, &[3, 2, 4], &o.configs, &hand);
            run_kernel(
                &mut out,
                &format!("star7 f32 {n}^3"),
                &Kernel::from(stencil),
                [n; 3],
                &grid,
                &o,
                &configs,
                deadline,
            )?;
        }
        if o.lbm {
            let n = o.lbm_size;
            let deadline = start + budget;
            let mut lat = Lattice::<f32>::new([n; 3], Physics::trt(0.6, MAGIC_POISEUILLE))
                .map_err(|e| e.to_string())?;
            for face in Face::ALL {
                lat.set_face(face, Cell::Wall).map_err(|e| e.to_string())?;
            }
            lat.set_face(
                Face::YMax,
                Cell::MovingWall {
                    velocity: [0.05, 0.0, 0.0],
                },
            )
            .map_err(|e| e.to_string())?;
            let c = |d: usize, t: [usize; 2], g: usize| Config {
                dim_t: Some(d),
                tile: Some([t[0].min(n + 2 * d), t[1].min(n + 2 * d)]),
                tile_threads: Some(g.min(threads)),
            };
            let hand = [
                c(3, [64, 64], 4),
                c(3, [n + 6, 40], 4),
                c(3, [n + 6, 70], threads),
                c(2, [n + 4, 36], 2),
            ];
            let configs = sweep(threads, &[3, 2], &o.lbm_configs, &hand);
            run_kernel(
                &mut out,
                &format!("d3q19 f32 {n}^3"),
                &Kernel::from(LbmKernel::of(&lat)),
                [n; 3],
                &lat,
                &o,
                &configs,
                deadline,
            )?;
        }
        Ok(())
    })();
    let _ = writeln!(
        out,
        "cpu_sweep: done in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        eprintln!("cpu_sweep: {e}");
        std::process::exit(1);
    }
}
