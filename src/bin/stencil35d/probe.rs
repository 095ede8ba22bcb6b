//! `stencil35d probe`: what the planner believes about this machine — the inputs to every plan:
//! cores, clock, SIMD, caches, measured memory bandwidth and arithmetic rate, the GPU's
//! properties, and what follows for the standard kernels (γ, Γ and η, the paper's eq. 3).

use clap::Args;
use serde_json::json;
use stencil35d::advanced::{
    self as cache_probe, human_bytes, measure_fma_gops, measure_stencil_gops,
};
use stencil35d::plan::{self as model, DEFAULT_CACHE_SHARE};
use stencil35d::{gpu, perf, DType, Error, Machine};

/// Options of `probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Measure the memory bandwidth again instead of using this boot's cached figure.
    #[arg(long)]
    refresh: bool,
    /// Seconds the arithmetic-rate probe runs per precision: above 0 and at most 60.
    #[arg(long, default_value_t = 0.2, value_parser = parse_fma_seconds)]
    fma_seconds: f64,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

/// The standard kernels in both precisions: name, precision, the kernel's bytes per operation
/// γ, the machine's Γ and η = ⌈γ/Γ⌉.
type KernelRow = (String, DType, f64, f64, usize);

/// What the probe measured, printed as text or JSON.
struct Probe {
    m: Machine,
    measured: [(DType, f64); 2],
    /// `None` when the probe's grids did not fit the memory available.
    stencil_gops: Option<f64>,
    cache_curve: Vec<cache_probe::CachePoint>,
    gpu: Result<&'static gpu::GpuInfo, Error>,
    kernels: Vec<KernelRow>,
}

pub fn run(args: &ProbeArgs) -> Result<(), Error> {
    let p = measure(args);
    if args.json {
        return print_json(&p);
    }
    print_cpu(&p.m);
    print_memory(&p);
    print_compute(&p);
    match &p.gpu {
        Ok(g) => print_gpu(g),
        Err(e) => println!("gpu:        none ({e})"),
    }
    print_kernels(&p.kernels);
    Ok(())
}

/// Probes the machine and measures its rates.
fn measure(args: &ProbeArgs) -> Probe {
    let m = Machine::probe(args.refresh);
    let measured =
        [DType::F32, DType::F64].map(|d| (d, measure_fma_gops(d, m.cores, args.fma_seconds)));
    let stencil_gops = measure_stencil_gops(m.cores, m.private_cache_bytes());
    let cache_curve =
        cache_probe::measure_cache_curve(m.cores, m.llc_bytes(), m.private_cache_bytes());
    let gpu = gpu::detect_gpu();
    let kernels = kernel_rows(&m);
    Probe {
        m,
        measured,
        stencil_gops,
        cache_curve,
        gpu,
        kernels,
    }
}

/// Parses `--fma-seconds`: above 0 and at most a minute (a fraction of a second measures the
/// rate; a minute is already far more than it needs).
fn parse_fma_seconds(s: &str) -> Result<f64, String> {
    crate::args::bounded_seconds(
        s,
        60.0,
        "the arithmetic-rate probe's time per precision (0.2 s measures it well)",
    )
}

/// γ, Γ and η of the standard kernels in both precisions on `m`.
fn kernel_rows(m: &Machine) -> Vec<KernelRow> {
    perf::DEFAULT_KERNELS
        .iter()
        .filter_map(|k| perf::kernel_by_name(k).ok())
        .flat_map(|k| [DType::F32, DType::F64].map(|d| (k.clone(), d)))
        .map(|(k, d)| {
            let cost = k.cost(d);
            let gamma = cost.bytes_per_op();
            (
                k.name(),
                d,
                gamma,
                m.bytes_per_op(d, k.lbm().is_some()),
                model::eta(gamma, m.bytes_per_op(d, k.lbm().is_some())),
            )
        })
        .collect()
}

/// Prints everything as one JSON object.
fn print_json(p: &Probe) -> Result<(), Error> {
    let (m, gpu, measured) = (&p.m, &p.gpu, &p.measured);
    let v = json!({
        "machine": m,
        "blocking_cache_bytes": (m.usable_llc_bytes() as f64 * DEFAULT_CACHE_SHARE) as usize,
        "measured_fma_gops": { "f32": measured[0].1, "f64": measured[1].1 },
        "measured_stencil_gops_f32": p.stencil_gops,
        "cache_curve": p.cache_curve.iter().map(|p| json!({"bytes": p.bytes, "gbs": p.gbs})).collect::<Vec<_>>(),
        "gpu": gpu.as_ref().ok(),
        "gpu_error": gpu.as_ref().err().map(|e| e.to_string()),
        "kernels": p.kernels.iter().map(|(k, d, gamma, big_gamma, eta)| json!({
            "kernel": k, "dtype": d.name(), "gamma": gamma, "machine_gamma": big_gamma, "eta": eta
        })).collect::<Vec<_>>(),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&v).map_err(|e| Error::InvalidArgument(e.to_string()))?
    );
    Ok(())
}

/// The processor: model, cores, clock, SIMD and caches.
fn print_cpu(m: &Machine) {
    println!("cpu:        {}", m.cpu_model);
    println!("cores:      {} (usable by this process)", m.cores);
    println!("clock:      {:.2} GHz", m.freq_ghz);
    println!(
        "simd:       {} in this build: {} f32 / {} f64 lanes, {} vector ops/cycle",
        m.isa,
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
}

/// The memory side: blocking budget, bandwidth, contention, cache use and spill speeds.
fn print_memory(p: &Probe) {
    let m = &p.m;
    println!(
        "blocking:   {} of cache budgeted for 3.5D stencil tiles ({:.0}% of the usable last level; lattices get all of it)",
        human_bytes((m.usable_llc_bytes() as f64 * DEFAULT_CACHE_SHARE) as usize),
        DEFAULT_CACHE_SHARE * 100.0
    );
    println!(
        "bandwidth:  {:.1} GB/s read+write ({}); one core alone {:.1} GB/s ({})",
        m.bandwidth_gbs, m.bandwidth_source, m.core_bandwidth_gbs, m.core_bandwidth_source
    );
    println!(
        "contention: probe threads waited for a CPU up to {:.1}% of their run (figures from \
         runs above {:.0}% are not cached)",
        stencil35d::advanced::probe_wait_share() * 100.0,
        stencil35d::advanced::PROBE_MAX_WAIT_SHARE * 100.0
    );
    println!(
        "cache use:  {} usable by all cores ({}; streams >= {}x as fast as memory); now:",
        human_bytes(m.usable_llc_bytes()),
        m.cache_source,
        cache_probe::CACHE_SPEEDUP
    );
    for c in &p.cache_curve {
        println!(
            "            {:>10} {:8.1} GB/s",
            human_bytes(c.bytes),
            c.gbs
        );
    }
    println!(
        "spill:      rings that overflow the private caches run at {:.0}% speed for stencils, \
         {:.0}% for lattices (private caches {:.1} GB/s, usable cache {:.1} GB/s, {:.1} GB/s \
         per core)",
        100.0 * m.spill_speed(),
        100.0 * m.llc_core_speed(),
        m.private_cache_gbs,
        m.cache_gbs,
        m.cache_gbs / m.cores.max(1) as f64
    );
}

/// The arithmetic side: peaks, the measured FMA loop, the stencil and lattice kernels.
fn print_compute(p: &Probe) {
    let m = &p.m;
    for (dtype, gops) in p.measured {
        println!(
            "peak {}:   {:.1} Gops (clock x lanes x ops/cycle x cores), {:.1} sustained (the \
             planner's share) -> Γ = {:.3} bytes/op; measured FMA loop: {:.1} Gops = {:.1} GFLOP/s",
            dtype,
            m.peak_gops(dtype, m.cores),
            m.sustained_gops(dtype, m.cores, false),
            m.bytes_per_op(dtype, false),
            gops,
            2.0 * gops
        );
    }
    let measured = p.stencil_gops.map_or_else(
        || "not measured (its grids do not fit the memory available)".to_string(),
        |g| format!("{g:.1} Gops"),
    );
    println!(
        "stencil:    measured 7-point f32 row kernel, data in the last-level cache: {measured} on {} threads; \
         the planner counts on {:.0}% of the peak ({})",
        m.cores,
        100.0 * m.compute_efficiency,
        m.compute_source
    );
    println!(
        "lattice:    D3Q19 f32 kernel, data in the last-level cache: the planner counts on {:.0}% of the peak ({})",
        100.0 * m.efficiency(true),
        if m.lattice_efficiency > 0.0 {
            m.lattice_source.as_str()
        } else {
            "not measured: the stencil's share"
        }
    );
    println!(
        "lattice streams: a naive D3Q19 f32 sweep from memory moves {:.0}% of the measured bandwidth ({})",
        100.0 * m.lattice_stream_share,
        m.lattice_stream_source
    );
}

/// The GPU's properties.
fn print_gpu(g: &gpu::GpuInfo) {
    println!(
        "gpu:        {} (compute capability {}.{})",
        g.name, g.compute_capability.0, g.compute_capability.1
    );
    println!(
        "gpu SMs:    {} at {:.2} GHz; {} threads, {} registers, {} shared memory per SM; {} shared per block",
        g.sms,
        g.clock_ghz,
        g.max_threads_per_sm,
        g.registers_per_sm,
        human_bytes(g.shared_per_sm),
        human_bytes(g.shared_per_block)
    );
    println!(
        "gpu memory: {}, L2 {}; bandwidth {:.0} GB/s peak, {:.0} GB/s measured (device copy)",
        human_bytes(g.memory_bytes),
        human_bytes(g.l2_bytes),
        g.peak_bandwidth_gbs,
        g.bandwidth_gbs
    );
    println!(
        "gpu peak:   {:.0} GFLOP/s f32, {:.0} GFLOP/s f64 ({} / {} lanes per SM); shared memory {:.0} GB/s",
        g.peak_gflops(DType::F32),
        g.peak_gflops(DType::F64),
        g.fp32_lanes_per_sm,
        g.fp64_lanes_per_sm,
        g.shared_bandwidth_gbs()
    );
}

/// γ, Γ and η of the standard kernels.
fn print_kernels(kernels: &[KernelRow]) {
    println!("kernels (γ: bytes/op the kernel needs; η = ⌈γ/Γ⌉: steps per pass to leave the memory roof):");
    for (k, d, gamma, big_gamma, eta) in kernels {
        println!("  {k:<7} {d}: γ = {gamma:.3}, Γ = {big_gamma:.3}, η = {eta}");
    }
}
