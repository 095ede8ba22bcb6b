//! The files of `stencil35d run wave`: the model's section and the pressure's snapshots along
//! the shot, each written as it comes, and the finished shot's last files (the gather as
//! `.npy`, SEG-Y and PNG, the last snapshot and `summary.json`), which are written under
//! temporary names and renamed into place together, so that a write that fails leaves an
//! earlier run's gather, last snapshot and summary as they were.

use std::path::{Path, PathBuf};

use serde_json::json;
use stencil35d::output::{
    write_gather_png, write_npy, write_png_slice, write_segy, write_vti_spaced, ColorMap,
    PictureAxis, PictureOptions, SegyShot, SegyTrace, Slice, Staged, VtiArray, VtiBuffer,
    VtiValues,
};
use stencil35d::wave::{Face, Source, Wavefield};
use stencil35d::{Error, Grid, Real, Solver};

use crate::wave::{model_name, mups, snapshot_name, Layout, Outputs, WaveArgs};

/// Writes the section of `model` through the source as `velocity.png`, and records it.
pub(crate) fn write_model<T: Real>(
    args: &WaveArgs,
    model: &Grid<T>,
    o: &mut Outputs,
) -> Result<(), Error> {
    let look = Look {
        title: "velocity".into(),
        quantity: "velocity (m/s)",
        map: ColorMap::Viridis,
        range: None,
    };
    let png = args.out.join("velocity.png");
    section(model, (o.y, 1.0), args, &png, look)?;
    o.written.push(png);
    Ok(())
}

/// Writes the snapshot of `field` after its current step (a PNG section and a `.vti`
/// volume) into the output directory; returns their paths.
pub(crate) fn write_snapshot<T: Real>(
    field: &Wavefield<T>,
    o: &Outputs,
    args: &WaveArgs,
) -> Result<Vec<PathBuf>, Error> {
    let [png, vti] = ["png", "vti"].map(|ext| args.out.join(snapshot_name(field.step(), ext)));
    snapshot(field, o, args, [&png, &vti])?;
    Ok(vec![png, vti])
}

/// Writes the finished shot's last files: the gather (`.npy`, SEG-Y, PNG), the last snapshot
/// when snapshots are asked for, and `summary.json` listing every file of the run. They are
/// written under temporary names and renamed over their targets together once all are
/// written, so that a write that fails (a full disk, say) leaves each target as it was; it
/// says so on stderr, or, should a rename itself fail, which targets are new. Returns the
/// number of files the run wrote.
pub(crate) fn finish<T: Real>(
    args: &WaveArgs,
    field: &Wavefield<T>,
    mut o: Outputs,
    solver: &Solver,
    busy: f64,
) -> Result<usize, Error> {
    let mut names = ["gather.npy", "gather.segy", "gather.png"]
        .map(String::from)
        .to_vec();
    if args.snapshots > 0 {
        names.extend(["png", "vti"].map(|ext| snapshot_name(field.step(), ext)));
    }
    names.push("summary.json".into());
    let targets: Vec<PathBuf> = names.iter().map(|name| args.out.join(name)).collect();
    let last = if args.snapshots > 0 {
        "the last snapshot, "
    } else {
        ""
    };
    let kept = |_: &Error| {
        eprintln!(
            "wave: the shot's {} steps ran, but its last files could not be written: the \
             gather, {last}and summary.json in {} are as they were",
            field.step(),
            args.out.display()
        );
    };
    let staged = Staged::new(targets.clone()).inspect_err(kept)?;
    o.written
        .extend(targets[..targets.len() - 1].iter().cloned());
    stage(args, field, &o, (solver, busy), &staged)
        .map_err(|e| named(&staged, targets.len(), e))
        .inspect_err(kept)?;
    // The renames are not one atomic step: one that fails leaves those before it done.
    staged.commit().inspect_err(|_| {
        eprintln!(
            "wave: renaming the shot's last files into place failed at the file the error \
             names: of {}, those before it are this run's, it and those after it as they were",
            names.join(", ")
        );
    })?;
    Ok(o.written.len() + 1)
}

/// Writes [`finish`]'s files to the temporary paths of `staged`, in its order.
fn stage<T: Real>(
    args: &WaveArgs,
    field: &Wavefield<T>,
    o: &Outputs,
    (solver, busy): (&Solver, f64),
    staged: &Staged,
) -> Result<(), Error> {
    let at = |i: usize| staged.temporary(i);
    gather(field, &o.source, args, [at(0), at(1), at(2)])?;
    let mut next = 3;
    if args.snapshots > 0 {
        snapshot(field, o, args, [at(3), at(4)])?;
        next = 5;
    }
    let text = summary(args, field, o, solver, busy);
    std::fs::write(at(next), text).map_err(|e| Error::io(at(next), e))
}

/// `e`, naming the target where it names the temporary file of one of `staged`'s first `n`
/// targets, so that a message names the file the user knows.
fn named(staged: &Staged, n: usize, e: Error) -> Error {
    let target = match &e {
        Error::Io { path, .. } => (0..n).find(|&i| staged.temporary(i) == path.as_path()),
        _ => None,
    };
    match (target, e) {
        (Some(i), Error::Io { source, .. }) => Error::io(staged.target(i), source),
        (_, e) => e,
    }
}

/// `summary.json` of the finished shot `field`, listing the files in `o`.
fn summary<T: Real>(
    args: &WaveArgs,
    field: &Wavefield<T>,
    o: &Outputs,
    solver: &Solver,
    busy: f64,
) -> String {
    let steps = field.step();
    let plan = solver.plan();
    // The layers' width where a face absorbs; with every face free or rigid there are none.
    let k = field.kernel();
    let absorbs = k.faces.iter().flatten().any(|&f| f == Face::Absorbing);
    let summary = json!({
        "model": model_name(args),
        "dims": field.dims(), "spacing_m": args.spacing, "order": k.order,
        "pml": if absorbs { k.pml } else { 0 }, "free_surface": args.free_surface,
        "faces": field.kernel().faces,
        "dt_s": field.kernel().dt, "steps": steps, "freq_hz": args.freq,
        "source_m": o.source.position, "receivers": o.receivers,
        "engine": plan.engine().name(), "dim_t": plan.dim_t(),
        "threads": plan.threads_computing(), "seconds": busy, "mups": mups(solver, steps, busy),
        "files": o.written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&summary).unwrap_or_default()
}

/// How a section is drawn: the start of its title (the section's y follows), the quantity,
/// the colour map and the range of values (`None`: the data's).
struct Look<'a> {
    title: String,
    quantity: &'a str,
    map: ColorMap,
    range: Option<(f64, f64)>,
}

/// Writes the section of `grid` at `y` (x across, depth down), values times `scale`, to
/// `path`.
fn section<T: Real>(
    grid: &Grid<T>,
    (y, scale): (usize, f64),
    args: &WaveArgs,
    path: &Path,
    look: Look,
) -> Result<(), Error> {
    let [nx, _, nz] = grid.dims();
    let values = (0..nz)
        .flat_map(|z| {
            grid.row(y, z)
                .iter()
                .map(|v| scale * v.to_f64().unwrap_or(f64::NAN))
        })
        .collect();
    let slice = Slice {
        width: nx,
        height: nz,
        values,
    };
    // Node i sits at i·h (as in the volumes, sources and receivers): cells are centred on
    // their nodes, so the edges lie half a cell beyond them.
    let h = args.spacing;
    let depth = PictureAxis {
        label: "depth (m)".into(),
        origin: (nz as f64 - 0.5) * h,
        cell_size: -h,
    };
    let x = PictureAxis {
        origin: -0.5 * h,
        ..PictureAxis::metres("x", h)
    };
    let title = format!("{}, y = {:.0} m", look.title, y as f64 * h);
    let mut options = PictureOptions::new(title, look.quantity)
        .with_axes(x, depth)
        .with_map(look.map);
    if let Some((lo, hi)) = look.range {
        options = options.with_range(lo, hi);
    }
    write_png_slice(path, &slice, &options).map(drop)
}

/// Writes the pressure's section at the current step to `png` and its volume, with the
/// model's, to `vti`.
fn snapshot<T: Real>(
    field: &Wavefield<T>,
    o: &Outputs,
    args: &WaveArgs,
    [png, vti]: [&Path; 2],
) -> Result<(), Error> {
    let u = field.pressure();
    let peak = u
        .iter()
        .fold(0.0f64, |m, (_, v)| m.max(v.to_f64().unwrap_or(0.0).abs()));
    let scale = if peak > 0.0 { 1.0 / peak } else { 1.0 };
    let look = Look {
        title: format!("pressure t = {:.3} s", field.time()),
        quantity: "pressure / its peak (clipped at -0.3 and 0.3)",
        map: ColorMap::RedBlue,
        range: Some((-0.3, 0.3)),
    };
    section(u, (o.y, scale), args, png, look)?;
    // The pressure in the field's precision.
    let pressure = VtiBuffer::of(u.iter().map(|(_, x)| x));
    write_vti_spaced(
        vti,
        field.dims(),
        field.kernel().spacing,
        &[
            VtiArray {
                name: "pressure",
                components: 1,
                values: pressure.values(),
            },
            VtiArray {
                name: "velocity",
                components: 1,
                values: VtiValues::F32(&o.model),
            },
        ],
    )
}

/// Writes the shot gather as `.npy` (receivers × samples) to `npy`, SEG-Y to `segy` and PNG
/// to `png`.
fn gather<T: Real>(
    field: &Wavefield<T>,
    source: &Source,
    args: &WaveArgs,
    [npy, segy, png]: [&Path; 3],
) -> Result<(), Error> {
    let traces = field.traces();
    let samples = traces.first().map_or(0, Vec::len);
    // In the run's precision (SEG-Y's IEEE traces are single precision whatever it is).
    let flat: Vec<T> = traces.iter().flatten().map(|&v| T::of(v)).collect();
    write_npy(npy, &[traces.len(), samples], &flat)?;
    let shot = SegyShot {
        source: source.position,
        sample_interval_s: field.kernel().dt,
        traces: field
            .receivers()
            .iter()
            .zip(traces)
            .map(|(r, t)| SegyTrace {
                receiver: r.position,
                data: t.iter().map(|&v| v as f32).collect(),
            })
            .collect(),
        text: format!(
            "stencil35d acoustic wave equation, order {}, model {}, Ricker {} Hz",
            field.kernel().order,
            model_name(args),
            args.freq
        ),
    };
    write_segy(segy, &shot)?;
    // The picture shows the amplitudes with a t² gain (the usual correction of spherical
    // spreading and absorption for display), so later, weaker reflections show beside the
    // direct wave; the files hold the amplitudes as computed.
    let dt = field.kernel().dt;
    let gained: Vec<f32> = traces
        .iter()
        .flat_map(|t| {
            t.iter()
                .enumerate()
                .map(move |(i, &v)| (v * (i as f64 * dt).powi(2)) as f32)
        })
        .collect();
    // A line is drawn at its x positions; a grid's traces (x fastest, then y) by number.
    let (first, spacing, x_label) = match args.receivers {
        Layout::Line => (
            field.receivers().first().map_or(0.0, |r| r.position[0]),
            args.receiver_spacing as f64 * args.spacing,
            "receiver position (m)",
        ),
        Layout::Grid => (1.0, 1.0, "trace number (x fastest, then y)"),
    };
    let peak = gained.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let relative: Vec<f32> = gained
        .iter()
        .map(|v| if peak > 0.0 { v / peak } else { 0.0 })
        .collect();
    write_gather_png(
        png,
        &relative,
        [traces.len(), samples],
        dt,
        [first, spacing],
        x_label,
        "shot gather (gain t², relative amplitude)",
    )
    .map(drop)
}
