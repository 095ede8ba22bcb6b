//! User story: "Which engine should I use on this machine, and how close to the hardware's
//! limits does it get?"
//!
//! Runs every standard kernel on every engine this machine has (the CPU ones always, the GPU
//! ones when there is a GPU), prints the table `stencil35d compare` prints, and writes the CSV,
//! JSON and the two charts. Run with `cargo run --release --example compare [N]`.

use std::path::Path;

use stencil35d::perf::{
    compare, roofline_png, speedup_png, table, write_data, CompareConfig, DEFAULT_KERNELS,
};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| format!("the grid size N must be a whole number, got '{a}'"))?,
        None => 96,
    };
    let config = CompareConfig::new([n, n, n], 10);
    let comparison = compare(&config, |row| {
        eprintln!("  done: {} {}", row.kernel, row.engine)
    })?;
    print!("{}", table(&comparison));

    // The fastest engine per kernel: the answer to "which one should I use?".
    for kernel in DEFAULT_KERNELS {
        let best = comparison
            .rows
            .iter()
            .filter(|r| r.kernel == kernel)
            .filter_map(|r| r.measured.as_ref().map(|m| (r.engine, m.mups)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((engine, mups)) = best {
            println!("{kernel}: use {engine} ({mups:.0} MUPS)");
        }
    }

    let dir = Path::new("out/example-compare");
    write_data(&comparison, dir)?;
    roofline_png(&comparison, &dir.join("roofline.png"))?;
    speedup_png(&comparison, &dir.join("speedup.png"))?;
    println!("wrote {}", dir.display());
    Ok(())
}
