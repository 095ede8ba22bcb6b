//! The pictures of a [`Comparison`]: a log-log roofline chart with each kernel × engine as a
//! point, and a bar chart of speedups. Text is drawn with a subset of DejaVu Sans embedded in
//! the library, so the plots look the same on a machine without fonts.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use super::compare::{Backend, Comparison};
use crate::{Engine, Error, Result};

/// DejaVu Sans, cut down to ASCII and a few symbols (license: assets/DejaVuSans-LICENSE.txt).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

/// Pixel size of both charts.
const SIZE: (u32, u32) = (1000, 680);

/// Registers the embedded font as plotters' `sans-serif` (once per process).
fn register_font() -> Result<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Plot("the embedded font does not load".into()))
    }
}

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

/// The colour of an engine's points and bars.
fn engine_color(engine: Engine) -> RGBColor {
    match engine {
        Engine::Reference => RGBColor(120, 120, 120),
        Engine::Naive => RGBColor(66, 133, 244),
        Engine::Blocked => RGBColor(13, 47, 140),
        Engine::GpuNaive => RGBColor(251, 140, 0),
        Engine::GpuBlocked => RGBColor(200, 30, 30),
    }
}

/// Draws into an RGB buffer with `draw` and writes it to `path` as a PNG.
fn render(
    path: &Path,
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<()>,
) -> Result<()> {
    register_font()?;
    let (w, h) = SIZE;
    let mut pixels = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    crate::output::write_rgb(path, w as usize, h as usize, &pixels)
}

/// Writes the roofline chart: x the operations per byte of memory traffic (a blocked engine's
/// traffic counted once per `dim_T` steps), y the achieved rate, both logarithmic; each
/// backend's roof (bandwidth slope, then peak) as a line, each measured kernel × engine as a
/// point labelled with its kernel (and `dim_T` when above 1). CPU work is counted in the paper's operations, GPU work in
/// flops (see [`super::Roof`]), so a point's height over its roof is its roofline fraction.
pub fn roofline_png(comparison: &Comparison, path: &Path) -> Result<()> {
    let points: Vec<(f64, f64, Engine, String)> = comparison
        .rows
        .iter()
        .filter_map(|r| {
            let m = r.measured.as_ref()?;
            let label = if m.dim_t > 1 {
                format!("{} (dim_T {})", r.kernel, m.dim_t)
            } else {
                r.kernel.clone()
            };
            Some((m.intensity, m.achieved_gops, r.engine, label))
        })
        .collect();
    let roofs: Vec<(Backend, &super::Roof)> = [Backend::Cpu, Backend::Gpu]
        .into_iter()
        .filter_map(|b| comparison.roof(b).map(|r| (b, r)))
        .collect();
    let xs = points
        .iter()
        .map(|p| p.0)
        .chain(roofs.iter().map(|(_, r)| r.peak_gops / r.bandwidth_gbs));
    let (x_lo, x_hi) = bounds(xs);
    let ys = points
        .iter()
        .map(|p| p.1)
        .chain(roofs.iter().map(|(_, r)| r.peak_gops));
    let (y_lo, y_hi) = bounds(ys);
    let (x_lo, x_hi) = (x_lo / 3.0, x_hi * 3.0);
    let (y_lo, y_hi) = (y_lo / 3.0, y_hi * 3.0);
    let [nx, ny, nz] = comparison.dims;
    let title = format!(
        "Roofline: {nx}x{ny}x{nz} {}, {} steps",
        comparison.dtype.name(),
        comparison.steps
    );
    render(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 24))
            .margin(18)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("operations per byte of memory traffic (blocked: per dim_T steps)")
            .y_desc("G operations / s (CPU: flops+loads+stores; GPU: flops)")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .x_labels(12)
            .y_labels(12)
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(plot_err)?;
        for (backend, roof) in &roofs {
            let ridge = roof.peak_gops / roof.bandwidth_gbs;
            let line = vec![
                (x_lo, roof.attainable_gops(x_lo)),
                (
                    ridge.clamp(x_lo, x_hi),
                    roof.attainable_gops(ridge.clamp(x_lo, x_hi)),
                ),
                (x_hi, roof.attainable_gops(x_hi)),
            ];
            let color = match backend {
                Backend::Cpu => RGBColor(13, 47, 140),
                Backend::Gpu => RGBColor(200, 30, 30),
            };
            let name = format!(
                "{} roof: {:.0} GB/s, {:.0} Gop/s",
                backend.name().to_uppercase(),
                roof.bandwidth_gbs,
                roof.peak_gops
            );
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        let mut engines: Vec<Engine> = Vec::new();
        for p in &points {
            if !engines.contains(&p.2) {
                engines.push(p.2);
            }
        }
        for engine in engines {
            let color = engine_color(engine);
            let mine: Vec<&(f64, f64, Engine, String)> =
                points.iter().filter(|p| p.2 == engine).collect();
            // CPU engines are circles, GPU engines triangles; blocked engines' labels go below.
            let dy = if engine.is_blocked() { 4 } else { -16 };
            let gpu = engine.is_gpu();
            let series = chart
                .draw_series(mine.iter().map(|(x, y, _, kernel)| {
                    let marker: DynElement<_, _> = if gpu {
                        TriangleMarker::new((0, 0), 8, color.filled()).into_dyn()
                    } else {
                        Circle::new((0, 0), 6, color.filled()).into_dyn()
                    };
                    EmptyElement::at((*x, *y))
                        + marker
                        + Text::new(kernel.clone(), (9, dy), ("sans-serif", 13))
                }))
                .map_err(plot_err)?
                .label(engine.name());
            if gpu {
                series.legend(move |(x, y)| TriangleMarker::new((x + 10, y), 8, color.filled()));
            } else {
                series.legend(move |(x, y)| Circle::new((x + 10, y), 6, color.filled()));
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)
    })
}

/// Writes the speedup bar chart: per kernel, one bar per measured engine giving its speed over
/// the CPU's naive engine on that kernel, and for GPU engines a lighter bar counting the
/// host-device transfers; logarithmic when the speedups span more than a factor of 20.
pub fn speedup_png(comparison: &Comparison, path: &Path) -> Result<()> {
    let mut kernels: Vec<&str> = Vec::new();
    for r in &comparison.rows {
        if !kernels.contains(&r.kernel.as_str()) {
            kernels.push(&r.kernel);
        }
    }
    // (kernel index, series name, colour, speedup)
    let mut bars: Vec<(usize, String, RGBColor, f64)> = Vec::new();
    for (k, kernel) in kernels.iter().enumerate() {
        let rows: Vec<_> = comparison
            .rows
            .iter()
            .filter(|r| r.kernel == *kernel)
            .collect();
        let Some(base) = rows
            .iter()
            .find(|r| r.engine == Engine::Naive)
            .and_then(|r| r.measured.as_ref())
        else {
            continue;
        };
        for r in &rows {
            let Some(m) = &r.measured else { continue };
            let color = engine_color(r.engine);
            bars.push((k, r.engine.name().to_string(), color, m.mups / base.mups));
            if r.engine.is_gpu() {
                let with = base.seconds * (m.updates as f64 / base.updates as f64)
                    / (m.seconds + m.transfer_seconds);
                bars.push((
                    k,
                    format!("{} incl. transfers", r.engine.name()),
                    lighten(color),
                    with,
                ));
            }
        }
    }
    // A zero or unbounded ratio has no place on the (possibly logarithmic) axis.
    bars.retain(|b| b.3.is_finite() && b.3 > 0.0);
    if bars.is_empty() {
        return Err(Error::InvalidArgument(
            "no kernel has a measured CPU naive engine to compare with".into(),
        ));
    }
    let mut series: Vec<(String, RGBColor)> = Vec::new();
    for (_, name, color, _) in &bars {
        if !series.iter().any(|(n, _)| n == name) {
            series.push((name.clone(), *color));
        }
    }
    let hi = bars.iter().map(|b| b.3).fold(1.0, f64::max);
    let lo = bars.iter().map(|b| b.3).fold(1.0, f64::min);
    let log = hi / lo > 20.0;
    let [nx, ny, nz] = comparison.dims;
    let title = format!(
        "Speedup over the CPU naive engine: {nx}x{ny}x{nz} {}",
        comparison.dtype.name()
    );
    let n = kernels.len() as f64;
    let width = 0.8 / series.len() as f64;
    let slot = |k: usize, name: &str| {
        let i = series.iter().position(|(s, _)| s == name).unwrap_or(0);
        k as f64 - 0.4 + i as f64 * width
    };
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < kernels.len() {
            kernels[i as usize].to_string()
        } else {
            String::new()
        }
    };
    render(path, |root| {
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(title, ("sans-serif", 24))
            .margin(18)
            .x_label_area_size(40)
            .y_label_area_size(70);
        let x_range = -0.5..n - 0.5;
        if log {
            let y_lo = (lo / 2.0).min(0.5);
            let mut chart = builder
                .build_cartesian_2d(x_range, (y_lo..hi * (hi / y_lo).powf(0.5)).log_scale())
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .light_line_style(TRANSPARENT)
                .bold_line_style(RGBColor(215, 215, 215))
                .x_labels(kernels.len() + 1)
                .x_label_formatter(&label)
                .y_label_formatter(&|v| short_number(*v))
                .y_desc("speedup (log scale)")
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 16))
                .draw()
                .map_err(plot_err)?;
            draw_bars(&mut chart, &bars, &series, width, y_lo, &slot)?;
            legend(&mut chart)
        } else {
            let mut chart = builder
                .build_cartesian_2d(x_range, 0.0..hi * 1.45)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .light_line_style(TRANSPARENT)
                .bold_line_style(RGBColor(215, 215, 215))
                .x_labels(kernels.len() + 1)
                .x_label_formatter(&label)
                .y_label_formatter(&|v| short_number(*v))
                .y_desc("speedup")
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 16))
                .draw()
                .map_err(plot_err)?;
            draw_bars(&mut chart, &bars, &series, width, 0.0, &slot)?;
            legend(&mut chart)
        }
    })
}

/// Draws one series of bars per engine (so each gets a legend entry), each bar labelled with
/// its value.
fn draw_bars<'a, Y>(
    chart: &mut ChartContext<
        'a,
        BitMapBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    bars: &[(usize, String, RGBColor, f64)],
    series: &[(String, RGBColor)],
    width: f64,
    base: f64,
    slot: &dyn Fn(usize, &str) -> f64,
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    for (name, color) in series {
        let color = *color;
        let mine: Vec<_> = bars.iter().filter(|b| &b.1 == name).collect();
        chart
            .draw_series(mine.iter().map(|(k, name, _, v)| {
                let x0 = slot(*k, name);
                Rectangle::new([(x0, base), (x0 + width * 0.92, *v)], color.filled())
            }))
            .map_err(plot_err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        chart
            .draw_series(mine.iter().map(|(k, name, _, v)| {
                let x = slot(*k, name) + width * 0.46;
                EmptyElement::at((x, *v))
                    + Text::new(
                        if *v >= 100.0 {
                            format!("{v:.0}")
                        } else if *v >= 1.0 {
                            format!("{v:.1}")
                        } else {
                            format!("{v:.2}")
                        },
                        (-10, -16),
                        ("sans-serif", 12).into_font(),
                    )
            }))
            .map_err(plot_err)?;
    }
    Ok(())
}

fn legend<'a, Y>(
    chart: &mut ChartContext<
        'a,
        BitMapBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// An axis label: at most three significant digits, no trailing zeros.
fn short_number(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `c` mixed half-way with white.
fn lighten(c: RGBColor) -> RGBColor {
    let mix = |v: u8| v + (255 - v) / 2;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// The smallest and largest positive finite value (1..10 when there is none).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi > 0.0 {
        (lo, hi)
    } else {
        (1.0, 10.0)
    }
}
