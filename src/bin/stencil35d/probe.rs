//! `stencil35d probe`: what the planner believes about this machine — the inputs to every plan.

use clap::Args;
use stencil35d::plan::human_bytes;
use stencil35d::{DType, Error, Machine};

/// Options of `probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Measure the memory bandwidth again instead of using this boot's cached figure.
    #[arg(long)]
    refresh: bool,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &ProbeArgs) -> Result<(), Error> {
    let m = Machine::probe(args.refresh);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&m).map_err(|e| Error::InvalidArgument(e.to_string()))?
        );
        return Ok(());
    }
    println!("cpu:        {}", m.cpu_model);
    println!("cores:      {} (usable by this process)", m.cores);
    println!("clock:      {:.2} GHz", m.freq_ghz);
    println!(
        "simd:       {} in this build: {} f32 / {} f64 lanes, {} vector ops/cycle",
        m.simd_isa,
        m.lanes(DType::F32),
        m.lanes(DType::F64),
        m.fp_ops_per_cycle
    );
    for c in &m.caches {
        println!(
            "cache L{}:   {} (shared by {} cpus)",
            c.level,
            human_bytes(c.bytes),
            c.shared_by
        );
    }
    println!(
        "bandwidth:  {:.1} GB/s read+write ({})",
        m.bandwidth_gbs, m.bandwidth_source
    );
    for dtype in [DType::F32, DType::F64] {
        println!(
            "peak {}:   {:.1} Gops -> Γ = {:.3} bytes/op",
            dtype,
            m.peak_gops(dtype, m.cores),
            m.bytes_per_op(dtype)
        );
    }
    Ok(())
}
