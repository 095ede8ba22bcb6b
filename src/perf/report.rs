//! A [`Comparison`] as text: the table `compare` prints, CSV and JSON (both read back).

use std::fmt::Write as _;
use std::path::Path;

use super::compare::{Backend, CompareRow, Comparison, Measured};
use crate::plan::Bound;
use crate::{Engine, Error, Result};

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 26] = [
    "kernel",
    "engine",
    "backend",
    "threads",
    "dim_t",
    "tile_x",
    "tile_y",
    "runs",
    "seconds",
    "transfer_seconds",
    "updates",
    "mups",
    "gflops",
    "effective_gbs",
    "predicted_mups",
    "intensity",
    "achieved_gops",
    "roofline_mups",
    "bound",
    "roofline_fraction",
    "speedup_vs_naive",
    "gpu_speedup",
    "gpu_speedup_with_transfer",
    "size",
    "dtype",
    "note",
];

/// The rows as CSV, one line per row under a header of [`CSV_COLUMNS`]; a missing value is an
/// empty field. Numbers are written so that [`from_csv`] reads back exactly the same values.
///
/// ```
/// use stencil35d::perf::{compare, from_csv, to_csv, CompareConfig};
/// use stencil35d::Engine;
/// let mut config = CompareConfig::new([12, 12, 12], 1);
/// config.engines = vec![Engine::Naive];
/// let comparison = compare(&config, |_| {}).unwrap();
/// assert_eq!(from_csv(&to_csv(&comparison)).unwrap(), comparison.rows);
/// ```
pub fn to_csv(comparison: &Comparison) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for row in &comparison.rows {
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let mut fields = vec![
            row.kernel.clone(),
            row.engine.name().to_string(),
            row.backend.name().to_string(),
        ];
        match &row.measured {
            Some(m) => fields.extend([
                m.threads.to_string(),
                m.dim_t.to_string(),
                m.tile[0].to_string(),
                m.tile[1].to_string(),
                m.runs.to_string(),
                m.seconds.to_string(),
                m.transfer_seconds.to_string(),
                m.updates.to_string(),
                m.mups.to_string(),
                m.gflops.to_string(),
                m.effective_gbs.to_string(),
                m.predicted_mups.to_string(),
                m.intensity.to_string(),
                m.achieved_gops.to_string(),
                m.roofline_mups.to_string(),
                m.bound.to_string(),
                m.roofline_fraction.to_string(),
                opt(m.speedup_vs_naive),
                opt(m.gpu_speedup),
                opt(m.gpu_speedup_with_transfer),
            ]),
            None => fields.extend(std::iter::repeat_n(String::new(), 20)),
        }
        let [nx, ny, nz] = comparison.dims;
        fields.push(if row.kernel.contains("2d") {
            let [px, py] = comparison.plane_dims;
            format!("{px}x{py}")
        } else {
            format!("{nx}x{ny}x{nz}")
        });
        fields.push(comparison.dtype.name().to_string());
        fields.push(row.note.clone());
        let quoted: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&quoted.join(","));
        out.push('\n');
    }
    out
}

/// Quotes a CSV field when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Splits one CSV record (RFC 4180 quoting; no line breaks inside fields).
fn csv_record(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut().expect("never empty");
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => field.push(c),
        }
    }
    fields
}

/// Reads the rows of [`to_csv`]'s output back.
///
/// Errors: [`Error::InvalidArgument`] naming the line and column that does not parse.
pub fn from_csv(text: &str) -> Result<Vec<CompareRow>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if csv_record(header) != CSV_COLUMNS {
        return Err(Error::InvalidArgument(
            "the CSV header is not compare's".into(),
        ));
    }
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = csv_record(line);
        let bad = |col: usize| {
            Error::InvalidArgument(format!(
                "CSV line {}: bad or missing '{}'",
                i + 2,
                CSV_COLUMNS.get(col).unwrap_or(&"?")
            ))
        };
        if f.len() != CSV_COLUMNS.len() {
            return Err(Error::InvalidArgument(format!(
                "CSV line {}: {} fields, expected {}",
                i + 2,
                f.len(),
                CSV_COLUMNS.len()
            )));
        }
        let num = |col: usize| f[col].parse::<f64>().map_err(|_| bad(col));
        let int = |col: usize| f[col].parse::<usize>().map_err(|_| bad(col));
        let opt = |col: usize| {
            if f[col].is_empty() {
                Ok(None)
            } else {
                num(col).map(Some)
            }
        };
        let engine: Engine = f[1].parse().map_err(|_| bad(1))?;
        let backend = match f[2].as_str() {
            "cpu" => Backend::Cpu,
            "gpu" => Backend::Gpu,
            _ => return Err(bad(2)),
        };
        let measured = if f[3].is_empty() {
            None
        } else {
            Some(Measured {
                threads: int(3)?,
                dim_t: int(4)?,
                tile: [int(5)?, int(6)?],
                runs: int(7)?,
                seconds: num(8)?,
                transfer_seconds: num(9)?,
                updates: f[10].parse().map_err(|_| bad(10))?,
                mups: num(11)?,
                gflops: num(12)?,
                effective_gbs: num(13)?,
                predicted_mups: num(14)?,
                intensity: num(15)?,
                achieved_gops: num(16)?,
                roofline_mups: num(17)?,
                bound: match f[18].as_str() {
                    "memory" => Bound::Memory,
                    "compute" => Bound::Compute,
                    "shared" => Bound::SharedMemory,
                    _ => return Err(bad(18)),
                },
                roofline_fraction: num(19)?,
                speedup_vs_naive: opt(20)?,
                gpu_speedup: opt(21)?,
                gpu_speedup_with_transfer: opt(22)?,
            })
        };
        rows.push(CompareRow {
            kernel: f[0].clone(),
            engine,
            backend,
            measured,
            note: f[25].clone(),
        });
    }
    Ok(rows)
}

/// The whole comparison as pretty-printed JSON (read back with [`from_json`]).
pub fn to_json(comparison: &Comparison) -> String {
    serde_json::to_string_pretty(comparison).expect("a comparison always serialises")
}

/// Reads [`to_json`]'s output back, checking every value a comparison can hold (see
/// [`check_comparison`]).
///
/// Errors: [`Error::InvalidArgument`] with the parser's message, or naming the record and
/// field that is out of range.
pub fn from_json(text: &str) -> Result<Comparison> {
    let comparison: Comparison = serde_json::from_str(text)
        .map_err(|e| Error::InvalidArgument(format!("compare JSON: {e}")))?;
    check_comparison(&comparison)
        .map_err(|why| Error::InvalidArgument(format!("compare JSON: {why}")))?;
    Ok(comparison)
}

/// Checks what [`compare`](super::compare) could have measured: positive sizes, steps and
/// repeats, a finite budget, positive finite roofs, and for each row a kernel name `compare`
/// knows, the engine's own backend and a measurement of positive counts and finite,
/// non-negative figures (a rate above zero). The error names the offending field, and the
/// row (counted from 1, with its kernel and engine) it is in.
fn check_comparison(c: &Comparison) -> std::result::Result<(), String> {
    let count = |name: &str, v: usize| {
        if v == 0 {
            Err(format!("{name} is 0, must be at least 1"))
        } else {
            Ok(())
        }
    };
    for (axis, &n) in ["x", "y", "z"].iter().zip(&c.dims) {
        count(&format!("dims ({axis})"), n)?;
    }
    // No grid has more cells than an address space holds.
    if c.dims
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .is_none()
    {
        return Err(format!(
            "dims {:?} hold more cells than an address space",
            c.dims
        ));
    }
    let planes_given = c.plane_dims != [0, 0];
    if planes_given || c.rows.iter().any(|r| r.kernel.contains("2d")) {
        for (axis, &n) in ["x", "y"].iter().zip(&c.plane_dims) {
            count(&format!("plane_dims ({axis})"), n)?;
        }
    }
    count("steps", c.steps)?;
    count("repeat", c.repeat)?;
    finite_at_least("budget_seconds", c.budget_seconds, 0.0)?;
    finite_at_least("wall_seconds", c.wall_seconds, 0.0)?;
    for (name, roof) in std::iter::once(("cpu", &c.cpu)).chain(c.gpu.as_ref().map(|g| ("gpu", g))) {
        positive(&format!("{name}.peak_gops"), roof.peak_gops)?;
        positive(&format!("{name}.bandwidth_gbs"), roof.bandwidth_gbs)?;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, row) in c.rows.iter().enumerate() {
        if !seen.insert((row.kernel.as_str(), row.engine)) {
            return Err(format!(
                "row {} repeats {} on {}: each kernel runs once on each engine",
                i + 1,
                row.kernel,
                row.engine.name()
            ));
        }
        check_row(row).map_err(|why| {
            format!(
                "row {} ({} {}): {why}",
                i + 1,
                row.kernel,
                row.engine.name()
            )
        })?;
    }
    Ok(())
}

/// One row of [`check_comparison`].
fn check_row(row: &CompareRow) -> std::result::Result<(), String> {
    super::kernel_by_name(&row.kernel)
        .map_err(|e| format!("kernel '{}' is not one compare runs ({e})", row.kernel))?;
    if row.backend != Backend::of(row.engine) {
        return Err(format!(
            "backend '{}' is not the {} engine's ({})",
            row.backend.name(),
            row.engine.name(),
            Backend::of(row.engine).name()
        ));
    }
    let Some(m) = &row.measured else {
        return Ok(());
    };
    for (name, v) in [
        ("threads", m.threads),
        ("dim_t", m.dim_t),
        ("tile[0]", m.tile[0]),
        ("tile[1]", m.tile[1]),
        ("runs", m.runs),
    ] {
        if v == 0 {
            return Err(format!("{name} is 0, must be at least 1"));
        }
    }
    for (name, v) in [
        ("mups", m.mups),
        ("roofline_mups", m.roofline_mups),
        ("intensity", m.intensity),
    ] {
        positive(name, v)?;
    }
    for (name, v) in [
        ("seconds", m.seconds),
        ("transfer_seconds", m.transfer_seconds),
        ("gflops", m.gflops),
        ("effective_gbs", m.effective_gbs),
        ("predicted_mups", m.predicted_mups),
        ("achieved_gops", m.achieved_gops),
        ("roofline_fraction", m.roofline_fraction),
    ] {
        finite_at_least(name, v, 0.0)?;
    }
    for (name, v) in [
        ("speedup_vs_naive", m.speedup_vs_naive),
        ("gpu_speedup", m.gpu_speedup),
        ("gpu_speedup_with_transfer", m.gpu_speedup_with_transfer),
    ] {
        v.map_or(Ok(()), |v| positive(name, v))?;
    }
    Ok(())
}

/// `Ok` when `v` is finite and at least `lo`; else a message naming `name`.
fn finite_at_least(name: &str, v: f64, lo: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v >= lo {
        Ok(())
    } else {
        Err(format!(
            "{name} is {v}, must be a finite number of at least {lo}"
        ))
    }
}

/// `Ok` when `v` is finite and above 0; else a message naming `name`.
fn positive(name: &str, v: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} is {v}, must be a finite number above 0"))
    }
}

/// Writes `compare.csv` and `compare.json` into `dir` (created if missing), each whole or not
/// at all ([`crate::output::write_whole`]).
///
/// Errors: [`Error::Io`] with the path that failed.
pub fn write_data(comparison: &Comparison, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for (name, text) in [
        ("compare.csv", to_csv(comparison)),
        ("compare.json", to_json(comparison)),
    ] {
        let path = dir.join(name);
        crate::output::write_whole(&path, |out| {
            std::io::Write::write_all(out, text.as_bytes()).map_err(|e| Error::io(&path, e))
        })?;
    }
    Ok(())
}

/// The files [`write_all`] writes, in order.
pub const OUTPUT_FILES: [&str; 4] = ["compare.csv", "compare.json", "roofline.png", "speedup.png"];

/// Writes `compare.csv`, `compare.json`, `roofline.png` and `speedup.png` into `dir` (created
/// if missing): each is first written under a temporary name in `dir` and the four are renamed
/// into place only once all were written, so a failure to write any of them (a full disk, a
/// chart that cannot be drawn) leaves none of the new files and the earlier results as they
/// were (the temporary files are removed). The four renames are not one atomic step: should a
/// rename itself fail, the files renamed before it are new and the rest old.
///
/// Errors: [`Error::NotWritable`] for a destination that cannot be written (checked before
/// anything is written), [`Error::Io`] with the path that failed.
pub fn write_all(comparison: &Comparison, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // A destination that cannot take a file (a directory of that name) is found before any
    // file is written or renamed.
    for name in OUTPUT_FILES {
        crate::output::check_writable_file(dir.join(name), "an output of compare")?;
    }
    let staged = crate::output::Staged::new(OUTPUT_FILES.map(|name| dir.join(name)))?;
    stage(comparison, &staged)?;
    staged.commit()
}

/// Writes the four outputs of [`write_all`] to the temporary paths of `staged`.
fn stage(comparison: &Comparison, staged: &crate::output::Staged) -> Result<()> {
    for (i, text) in [to_csv(comparison), to_json(comparison)]
        .into_iter()
        .enumerate()
    {
        std::fs::write(staged.temporary(i), text).map_err(|e| Error::io(staged.target(i), e))?;
    }
    // The chart writers name the path they are given, here a temporary one: an error names
    // the file the user asked for instead.
    let named = |i: usize| {
        move |e: Error| match e {
            Error::Io { path, source } if path == staged.temporary(i) => {
                Error::io(staged.target(i), source)
            }
            e => e,
        }
    };
    super::roofline_png(comparison, staged.temporary(2)).map_err(named(2))?;
    super::speedup_png(comparison, staged.temporary(3)).map_err(named(3))
}

/// The table `stencil35d compare` prints: a header with both rooflines, then one line per
/// kernel and engine.
pub fn table(c: &Comparison) -> String {
    let mut s = String::new();
    let [nx, ny, nz] = c.dims;
    let [px, py] = c.plane_dims;
    let _ = writeln!(
        s,
        "{nx}x{ny}x{nz} ({px}x{py} for 2D kernels) {}, {} steps, median of up to {} runs (fewer past {} s) after a warm-up; {:.1} s in all",
        c.dtype.name(),
        c.steps,
        c.repeat,
        c.budget_seconds,
        c.wall_seconds
    );
    let _ = writeln!(
        s,
        "CPU {}: {:.1} GB/s measured, {:.1} Gops peak (paper ops: flops, loads, stores)",
        c.cpu.device, c.cpu.bandwidth_gbs, c.cpu.peak_gops
    );
    match &c.gpu {
        Some(g) => {
            let _ = writeln!(
                s,
                "GPU {}: {:.1} GB/s measured, {:.1} GFLOP/s peak",
                g.device, g.bandwidth_gbs, g.peak_gops
            );
        }
        None => {
            let _ = writeln!(s, "GPU: none");
        }
    }
    let _ = writeln!(
        s,
        "{:<10} {:<11} {:>5} {:>9} {:>8} {:>8} {:>6} {:>8} {:>7} {:>7} {:>8}",
        "kernel",
        "engine",
        "dim_t",
        "MUPS",
        "GFLOP/s",
        "eff GB/s",
        "roof%",
        "bound",
        "vs naive",
        "GPU/CPU",
        "w/ xfer"
    );
    let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}x"));
    for row in &c.rows {
        match &row.measured {
            Some(m) => {
                let _ = writeln!(
                    s,
                    "{:<10} {:<11} {:>5} {:>9.1} {:>8.1} {:>8.1} {:>5.0}% {:>8} {:>8} {:>7} {:>8}",
                    row.kernel,
                    row.engine.name(),
                    m.dim_t,
                    m.mups,
                    m.gflops,
                    m.effective_gbs,
                    100.0 * m.roofline_fraction,
                    m.bound.to_string(),
                    x(m.speedup_vs_naive),
                    x(m.gpu_speedup),
                    x(m.gpu_speedup_with_transfer)
                );
            }
            None => {
                let short = row.note.split(':').next().unwrap_or_default();
                let _ = writeln!(s, "{:<10} {:<11} {short}", row.kernel, row.engine.name());
            }
        }
    }
    for line in &c.fitted {
        let _ = writeln!(s, "fitted: {line}");
    }
    let notes: Vec<&CompareRow> = c.rows.iter().filter(|r| r.measured.is_none()).collect();
    if !notes.is_empty() {
        let _ = writeln!(s, "why not:");
        let mut seen = Vec::new();
        for r in notes {
            let line = format!("  {} {}: {}", r.kernel, r.engine.name(), r.note);
            if !seen.contains(&r.note) {
                seen.push(r.note.clone());
                let _ = writeln!(s, "{line}");
            }
        }
    }
    let _ = writeln!(
        s,
        "MUPS: million cell updates/s (MLUPS for d3q19); eff GB/s: traffic of an unblocked sweep; \
         roof%: of min(peak compute, dim_t x memory bandwidth); vs naive: over the same \
         backend's naive engine; GPU/CPU: over the fastest CPU engine, computation only and with \
         host-device transfers"
    );
    s
}
