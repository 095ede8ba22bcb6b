//! Measuring the engines: shared timing ([`time_runs`]), the benchmark problems
//! ([`cavity_lattice`]), and [`compare`] — every kernel on every engine of both backends,
//! placed against the rooflines, written as a table, CSV, JSON and PNG charts.
//!
//! ```no_run
//! use stencil35d::perf::{compare, roofline_png, speedup_png, table, write_data, CompareConfig};
//! let comparison = compare(&CompareConfig::new([256, 256, 256], 20), |_| {}).unwrap();
//! print!("{}", table(&comparison));
//! let dir = std::path::Path::new("out/compare");
//! write_data(&comparison, dir).unwrap(); // compare.csv, compare.json
//! roofline_png(&comparison, &dir.join("roofline.png")).unwrap();
//! speedup_png(&comparison, &dir.join("speedup.png")).unwrap();
//! ```

mod compare;
mod plot;
mod report;
mod timing;
mod workload;

pub use compare::{
    compare, conv2d_filter, kernel_by_name, Backend, CompareConfig, CompareRow, Comparison,
    Measured, Roof, DEFAULT_BUDGET_SECONDS, DEFAULT_ENGINES, DEFAULT_KERNELS, DEFAULT_REPEAT,
};
pub use plot::{roofline_png, speedup_png};
pub use report::{
    from_csv, from_json, table, to_csv, to_json, write_all, write_data, CSV_COLUMNS, OUTPUT_FILES,
};
pub use timing::{time_runs, time_runs_within, Timed, MAX_REPEAT};
pub use workload::{
    bench_wave_kernel, cavity_lattice, check_cavity_dims, periodic_lattice, wave_shot,
    BENCH_WAVE_V_MAX,
};
