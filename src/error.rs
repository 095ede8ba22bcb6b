//! The one error type of the crate: every failure a user can cause or meet is a variant with a
//! message that says what was wrong and what to do, never a panic.

use std::path::PathBuf;

/// Share of the available host memory a grid, a lattice or a run may take (`crate::memory`
/// checks against it, [`Error::OutOfMemory`] states it): the rest is left to the system, the
/// page cache and other processes, and absorbs what the figure misses.
pub const USABLE_SHARE: f64 = 0.9;

/// `n` and `noun`, plural unless `n` is 1: "1 cell", "3 cells".
pub(crate) fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

/// Errors returned by planning, solving and I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A grid or lattice dimension is too small for the kernel's fixed boundary layer.
    #[error(
        "grid {nx}x{ny}x{nz} is too small for a radius-{radius} kernel: every side needs at least \
         {min} cells ({cells} on each side and at least one interior cell)",
        nx = dims[0], ny = dims[1], nz = dims[2], min = 2 * radius + 1,
        cells = count(*radius, "boundary cell")
    )]
    GridTooSmall {
        /// The dimensions given.
        dims: [usize; 3],
        /// The kernel radius (boundary-layer width).
        radius: usize,
    },

    /// A stencil definition the engines do not support (radius out of range, wrong number or
    /// non-finite coefficients).
    #[error("unsupported stencil: {0}")]
    UnsupportedStencil(String),

    /// A plan setting that cannot work (zero threads, a tile too small for dim_t, ...).
    #[error("invalid plan: {0}")]
    InvalidPlan(String),

    /// A plan made for another kernel, precision or size than the state it is run on.
    #[error("plan does not match the data: {0}")]
    PlanMismatch(String),

    /// Another rank of a distributed run failed (its own error is `message`); this rank
    /// stopped with it.
    #[error("rank {rank} of the distributed run failed: {message}")]
    RankFailed {
        /// The rank whose failure the ranks agreed on (see `distributed::agreed`).
        rank: usize,
        /// Its error.
        message: String,
    },

    /// `run` was asked for zero time steps.
    #[error("zero time steps requested: ask for at least one step")]
    ZeroSteps,

    /// The input already holds an infinity or NaN; nothing was computed.
    #[error("the input holds a non-finite value {value} at cell ({x}, {y}, {z}); nothing was computed", x = cell[0], y = cell[1], z = cell[2])]
    NonFiniteInput {
        /// The first non-finite cell found, as (x, y, z).
        cell: [usize; 3],
        /// Its value.
        value: f64,
    },

    /// A value became infinite or NaN during the run. The state passed to `run` holds the last
    /// finite state, `step - 1` steps after the start of this run.
    #[error(
        "a non-finite value ({value}) appeared at cell ({x}, {y}, {z}) in time step {step} of this run; \
         the data holds the last finite state, after step {last}: the scheme is probably unstable \
         for these parameters (stencil coefficients; relaxation time, velocities or force of a lattice)", x = cell[0], y = cell[1], z = cell[2], last = step - 1
    )]
    NonFinite {
        /// 1-based step of this run in which the value appeared.
        step: usize,
        /// A cell holding the value, as (x, y, z).
        cell: [usize; 3],
        /// The value (infinity or NaN).
        value: f64,
    },

    /// A population of a lattice in 16-bit storage reached the edge of the format's range
    /// during the run (it is stored saturated: finite, but wrong). The lattice holds the state
    /// `step - 1` steps after the start of this run.
    #[error(
        "in time step {step} of this run {what}; the lattice holds the state after step \
         {last}: lower the velocities or force, or store the populations in f32",
        last = step - 1
    )]
    Saturated {
        /// 1-based step of this run in which the population saturated.
        step: usize,
        /// Which population of which node reached which value, and the range the storage holds.
        what: String,
    },

    /// A lattice-Boltzmann flow diverged while its values stayed finite: a density turned
    /// non-positive or a speed passed the speed of sound ([`crate::lbm::Lattice::check_flow`]).
    #[error(
        "the flow diverged (found at step {steps} of the lattice): {what}; the lattice no longer \
         holds a flow: lower the Reynolds number, the velocities or the force, or refine the \
         lattice"
    )]
    Diverged {
        /// The lattice's step count when the check found it.
        steps: u64,
        /// Which node holds which value.
        what: String,
    },

    /// Physical parameters that make a lattice-Boltzmann run unstable or meaningless.
    #[error("unstable or invalid physics: {0}")]
    Unstable(String),

    /// No usable NVIDIA GPU: no driver, no NVRTC, or no device.
    #[error("no usable GPU: {0}")]
    NoGpu(String),

    /// The host does not have the memory a grid, a lattice or a run needs; nothing was
    /// allocated. `needed` and `available` count what the run already holds on both sides.
    #[error(
        "out of memory: {what} needs {need}, {have} are available (a run may take {share}%): \
         {fits}",
        need = format_bytes(*needed), have = format_bytes(*available),
        share = (USABLE_SHARE * 100.0).round(), fits = fits(*largest, *smallest, *plane)
    )]
    OutOfMemory {
        /// What was asked for, e.g. "a 1500³ f32 grid with its scratch".
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
        /// The side of the largest grid of the same kind and shape that fits: a cube, or a
        /// square for a 2D grid (0: none, or none of at least `smallest`).
        largest: usize,
        /// The side of the smallest grid the kernel takes (1 where any does); `largest` is 0
        /// when it is below this.
        smallest: usize,
        /// Whether the grid is 2D (one plane), and `largest` the side of a square.
        plane: bool,
    },

    /// The GPU does not have the memory a run needs; nothing was allocated there.
    #[error(
        "GPU out of memory: {what} needs {need} of device memory, {have} are free: {fits}",
        need = format_bytes(*needed as u64), have = format_bytes(*free as u64),
        fits = fits(*largest, *smallest, *plane)
    )]
    GpuOutOfMemory {
        /// What was asked for, e.g. "a 1500³ f32 grid with its scratch".
        what: String,
        /// Bytes needed.
        needed: usize,
        /// Bytes free on the device (with what the run already holds there).
        free: usize,
        /// The side of the largest grid of the same kind and shape that fits: a cube, or a
        /// square for a 2D grid (0: none, or none of at least `smallest`).
        largest: usize,
        /// The side of the smallest grid the kernel takes (1 where any does); `largest` is 0
        /// when it is below this.
        smallest: usize,
        /// Whether the grid is 2D (one plane), and `largest` the side of a square.
        plane: bool,
    },

    /// A CUDA driver or NVRTC call failed.
    #[error("GPU error: {0}")]
    Gpu(String),

    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A file or directory a run is to write cannot be written, found by
    /// [`crate::output::check_writable_dir`] or [`crate::output::check_writable_file`] (the
    /// command-line runs call them before their first step).
    #[error("cannot write {what} {path}: {reason}")]
    NotWritable {
        /// What the path is for, e.g. "the checkpoint" or "the output directory".
        what: String,
        /// The path.
        path: PathBuf,
        /// Why it cannot be written.
        reason: String,
    },

    /// A checkpoint written by another scenario or geometry than the run asked to continue it.
    #[error(
        "checkpoint {path} is from {found}, this run is {expected}: restart with the scenario \
         and the size and geometry options of the run that wrote it"
    )]
    CheckpointMismatch {
        /// The checkpoint.
        path: PathBuf,
        /// The scenario and geometry recorded in it.
        found: String,
        /// The scenario and geometry of this run.
        expected: String,
    },

    /// Drawing a chart failed.
    #[error("plotting failed: {0}")]
    Plot(String),

    /// A malformed argument (a kernel name, a size string, a file's contents).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Bytes in decimal units with one decimal: `27.0 GB`, `512.0 MB`, `12.3 kB`.
pub(crate) fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e12 {
        format!("{:.1} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// The end of an out-of-memory message: the largest cube (or, for a 2D grid, square) that fits,
/// or that not even the smallest the kernel takes does.
fn fits(largest: usize, smallest: usize, plane: bool) -> String {
    let side = |n: usize| {
        if plane {
            format!("{n}x{n}")
        } else {
            format!("{n}³")
        }
    };
    match (largest, smallest) {
        (0, 0 | 1) => format!("not even a {} one fits", side(1)),
        (0, m) => format!("not even the smallest this kernel takes, {}, fits", side(m)),
        (n, _) if plane => format!("the largest square that fits is {}", side(n)),
        (n, _) => format!("the largest cube that fits is {}", side(n)),
    }
}

/// `message`, the text of an error of a run segment that started `done` steps into the run,
/// with the steps it names counted from the run's start: "time step N of this run" and
/// "after step N:", as [`Error::NonFinite`] and [`Error::Saturated`] name them (a time step in
/// seconds, "time step 1.2e-3 s", is left alone).
fn shift_steps(message: &str, done: usize) -> String {
    let mut out = message.to_string();
    for (marker, after) in [("time step ", " of this run"), ("after step ", ":")] {
        let mut text = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(marker) {
            let start = at + marker.len();
            let digits = rest[start..].bytes().take_while(u8::is_ascii_digit).count();
            text.push_str(&rest[..start]);
            let number = &rest[start..start + digits];
            match number.parse::<usize>() {
                Ok(n) if rest[start + digits..].starts_with(after) => {
                    text.push_str(&(n + done).to_string())
                }
                _ => text.push_str(number),
            }
            rest = &rest[start + digits..];
        }
        text.push_str(rest);
        out = text;
    }
    out
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// This error of a run segment that started `done` steps into the run, as an error of the
    /// whole run: a blow-up's or a saturation's step counts from the run's start, also in the
    /// text another rank's failure comes as.
    pub fn after_steps(self, done: usize) -> Error {
        match self {
            Error::RankFailed { rank, message } => Error::RankFailed {
                rank,
                message: shift_steps(&message, done),
            },
            Error::NonFinite { step, cell, value } => Error::NonFinite {
                step: step + done,
                cell,
                value,
            },
            Error::Saturated { step, what } => Error::Saturated {
                step: step + done,
                what,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another rank's blow-up, which comes as its text, names the steps of the whole run once
    /// shifted, as the structured errors do.
    #[test]
    fn a_segments_errors_name_the_steps_of_the_whole_run() {
        let own = Error::NonFinite {
            step: 28,
            cell: [1, 2, 3],
            value: f64::INFINITY,
        };
        let other = Error::RankFailed {
            rank: 2,
            message: own.to_string(),
        };
        let shifted = own.after_steps(300).to_string();
        assert!(
            shifted.contains("in time step 328 of this run") && shifted.contains("after step 327")
        );
        let Error::RankFailed { rank, message } = other.after_steps(300) else {
            panic!("a rank's failure stays one");
        };
        assert_eq!((rank, message), (2, shifted));
        let saturated = Error::Saturated {
            step: 5,
            what: "population 3 of node (1, 1, 1) reached 2".into(),
        };
        let text = saturated.after_steps(10).to_string();
        assert!(
            text.contains("time step 15") && text.contains("after step 14"),
            "{text}"
        );
        for other in [
            "no steps, time step x",
            "time step 1.2e-3 s exceeds",
            "after step 3 ran",
        ] {
            assert_eq!(shift_steps(other, 4), other);
        }
    }
}
