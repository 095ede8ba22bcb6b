//! One seismic shot through a layered model: a 12 Hz Ricker source below the surface, 100
//! receivers on a line, 1.2 s of recording with absorbing layers on every face. Prints the
//! plan and the first-arrival times against the direct wave's `r/v`, and writes the gather as
//! `out/example-seismic/gather.{npy,png}`.
//!
//! `cargo run --release --example seismic`

use stencil35d::output::{check_writable_dir, write_gather_png, write_npy};
use stencil35d::wave::{models, Receiver, Source, WaveKernel, Wavefield, Wavelet};
use stencil35d::{Plan, Solver};

fn main() -> Result<(), stencil35d::Error> {
    let out = std::path::Path::new("out/example-seismic");
    check_writable_dir(out, "the output directory")?;
    let (h, dims) = (10.0, [160, 100, 110]);
    let layers = [(0, 1800.0), (45, 2400.0), (75, 3200.0)];
    let velocity = models::layered::<f32>(dims, &layers)?;
    let mut kernel = WaveKernel::new(h, 1e-3, 3200.0);
    kernel.dt = 0.8 * kernel.max_stable_dt(3200.0);
    let mut shot = Wavefield::new(kernel, &velocity)?;
    let depth = 25.0 * h;
    let source = [80.0 * h, 50.0 * h, depth];
    shot.add_source(Source {
        position: source,
        wavelet: Wavelet::ricker(12.0),
    })?;
    let line = Receiver::line(
        [25.0 * h, 50.0 * h, depth],
        [135.0 * h, 50.0 * h, depth],
        100,
    )?;
    shot.add_receivers(&line)?;
    let plan = Plan::for_wavefield(&shot)?;
    println!("{plan}");
    let steps = (1.2 / shot.kernel().dt) as usize;
    let report = Solver::new(plan).run(&mut shot, steps)?;
    println!("{report}");

    // The direct wave travels at 1,800 m/s at the source's depth: its peak reaches receiver
    // r at r/v after the wavelet's delay.
    let dt = shot.kernel().dt;
    for (rec, trace) in line.iter().zip(shot.traces()).step_by(20) {
        let r = (rec.position[0] - source[0]).abs();
        let peak = (0..trace.len())
            .max_by(|&a, &b| trace[a].abs().total_cmp(&trace[b].abs()))
            .unwrap_or(0);
        println!(
            "receiver at x = {:5.0} m: peak at {:.3} s, direct wave at {:.3} s",
            rec.position[0],
            peak as f64 * dt - 1.0 / 12.0,
            r / 1800.0
        );
    }
    let samples = shot.traces()[0].len();
    let flat: Vec<f32> = shot.traces().iter().flatten().map(|&v| v as f32).collect();
    write_npy(&out.join("gather.npy"), &[line.len(), samples], &flat)?;
    let spacing = (line[1].position[0] - line[0].position[0]).abs();
    write_gather_png(
        &out.join("gather.png"),
        &flat,
        [line.len(), samples],
        dt,
        [line[0].position[0], spacing],
        "receiver position (m)",
        "layered model, one shot",
    )?;
    println!("wrote {}/gather.npy and gather.png", out.display());
    Ok(())
}
