//! The pictures of a [`Comparison`]: a log-log roofline chart with each kernel × engine as a
//! point, and a bar chart of speedups. Logarithmic axes are labelled at every decade with light
//! lines at 2, 3, ... 9 times each power of ten. Text is drawn with a subset of DejaVu Sans
//! embedded in the library, so the plots look the same on a machine without fonts.

use std::path::Path;

use plotters::chart::MeshStyle;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::compare::{Backend, Comparison};
use super::Roof;
use crate::output::{
    format_fixed, format_significant, log_ticks, minor_log_ticks, nice_ticks, plot_err,
    register_font, tick_decimals, TickedAxis,
};
use crate::{Engine, Error, Result};

/// Pixel size of both charts.
const SIZE: (u32, u32) = (1000, 680);

/// The drawing area of a whole chart.
type Root<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// A chart with x and y coordinates of types `X` and `Y`.
type Chart<'a, X, Y> = ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>;

/// A logarithmic axis with labelled ticks at the decades.
type LogAxis = WithKeyPoints<LogCoord<f64>>;

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
fn render(path: &Path, draw: impl FnOnce(&Root<'_>) -> Result<()>) -> Result<()> {
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

/// A logarithmic axis over `lo..hi`: labelled ticks at every decade (or at 1, 2 and 5 times the
/// powers of ten when fewer than two decades fit), light lines at the minor ticks.
fn log_axis(lo: f64, hi: f64) -> LogAxis {
    (lo..hi)
        .log_scale()
        .with_key_points(log_ticks(lo, hi))
        .with_light_points(minor_log_ticks(lo, hi))
}

/// The chart on `root` that both pictures share: `title` as caption, the margins and room for
/// tick and axis labels (`x_area` pixels below the plot).
fn chart<'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &Root<'b>,
    title: &str,
    x_area: u32,
    (x, y): (X, Y),
) -> Result<Chart<'b, X::CoordDescType, Y::CoordDescType>> {
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", 24))
        .margin(18)
        .x_label_area_size(x_area)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)
}

/// The mesh style both pictures share: fonts, light grey major lines, fainter minor lines.
fn style_mesh<X: Ranged, Y: Ranged>(mesh: &mut MeshStyle<'_, '_, X, Y, BitMapBackend<'_>>) {
    mesh.label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(210, 210, 210));
}

/// The chart's legend at `position`.
fn legend<X: Ranged, Y: Ranged>(
    chart: &mut Chart<'_, X, Y>,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// A measured kernel × engine on the roofline chart.
struct Point {
    /// Operations per byte of memory traffic.
    intensity: f64,
    /// Achieved G operations per second.
    gops: f64,
    engine: Engine,
    /// The kernel (and `dim_t` when above 1).
    label: String,
}

/// The measured rows of `comparison` as roofline points.
fn roofline_points(comparison: &Comparison) -> Vec<Point> {
    comparison
        .rows
        .iter()
        .filter_map(|r| {
            let m = r.measured.as_ref()?;
            let label = if m.dim_t > 1 {
                format!("{} (dim_t {})", r.kernel, m.dim_t)
            } else {
                r.kernel.clone()
            };
            Some(Point {
                intensity: m.intensity,
                gops: m.achieved_gops,
                engine: r.engine,
                label,
            })
        })
        .collect()
}

/// The x and y ranges that hold every point and both ends of every roof's ridge, with a factor
/// of 3 of room on each side.
fn roofline_ranges(points: &[Point], roofs: &[(Backend, &Roof)]) -> ((f64, f64), (f64, f64)) {
    let xs = points
        .iter()
        .map(|p| p.intensity)
        .chain(roofs.iter().map(|(_, r)| r.peak_gops / r.bandwidth_gbs));
    let ys = points
        .iter()
        .map(|p| p.gops)
        .chain(roofs.iter().map(|(_, r)| r.peak_gops));
    let ((x_lo, x_hi), (y_lo, y_hi)) = (bounds(xs), bounds(ys));
    ((x_lo / 3.0, x_hi * 3.0), (y_lo / 3.0, y_hi * 3.0))
}

/// Writes the roofline chart: x the operations per byte of memory traffic (a blocked engine's
/// traffic counted once per `dim_t` steps), y the achieved rate, both logarithmic and labelled
/// at every decade; each backend's roof (bandwidth slope, then peak) as a line, each measured
/// kernel × engine as a point labelled with its kernel (and `dim_t` when above 1). CPU work is
/// counted in the paper's operations, GPU work in flops (see [`super::Roof`]), so a point's
/// height over its roof is its roofline fraction.
pub fn roofline_png(comparison: &Comparison, path: &Path) -> Result<()> {
    let points = roofline_points(comparison);
    let roofs: Vec<(Backend, &Roof)> = [Backend::Cpu, Backend::Gpu]
        .into_iter()
        .filter_map(|b| comparison.roof(b).map(|r| (b, r)))
        .collect();
    let ((x_lo, x_hi), (y_lo, y_hi)) = roofline_ranges(&points, &roofs);
    let [nx, ny, nz] = comparison.dims;
    let title = format!(
        "Roofline: {nx}x{ny}x{nz} {}, {} steps",
        comparison.dtype.name(),
        comparison.steps
    );
    render(path, |root| {
        let axes = (log_axis(x_lo, x_hi), log_axis(y_lo, y_hi));
        let mut chart = chart(root, &title, 50, axes)?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh);
        mesh.x_desc("operations per byte of memory traffic (blocked: per dim_t steps)")
            .y_desc("G operations / s (CPU: flops+loads+stores; GPU: flops)")
            .x_label_formatter(&|v| format_significant(*v))
            .y_label_formatter(&|v| format_significant(*v))
            .draw()
            .map_err(plot_err)?;
        draw_roofs(&mut chart, &roofs, (x_lo, x_hi))?;
        draw_points(&mut chart, &points)?;
        // Above the roofs' bandwidth slopes, where no point can be.
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// Draws each backend's roof from `x_lo` to `x_hi` (through its ridge point) with a legend
/// entry giving its bandwidth and peak.
fn draw_roofs(
    chart: &mut Chart<'_, LogAxis, LogAxis>,
    roofs: &[(Backend, &Roof)],
    (x_lo, x_hi): (f64, f64),
) -> Result<()> {
    for (backend, roof) in roofs {
        let ridge = (roof.peak_gops / roof.bandwidth_gbs).clamp(x_lo, x_hi);
        let line = [x_lo, ridge, x_hi].map(|x| (x, roof.attainable_gops(x)));
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
    Ok(())
}

/// Draws the measured points, one series (and legend entry) per engine: CPU engines as
/// circles, GPU engines as triangles, each labelled with its kernel (blocked engines' labels
/// below the point, the others' above).
fn draw_points(chart: &mut Chart<'_, LogAxis, LogAxis>, points: &[Point]) -> Result<()> {
    let mut engines: Vec<Engine> = Vec::new();
    for p in points {
        if !engines.contains(&p.engine) {
            engines.push(p.engine);
        }
    }
    for engine in engines {
        let color = engine_color(engine);
        let dy = if engine.is_blocked() { 4 } else { -16 };
        let gpu = engine.is_gpu();
        let mine = points.iter().filter(|p| p.engine == engine);
        let series = chart
            .draw_series(mine.map(|p| {
                let marker: DynElement<_, _> = if gpu {
                    TriangleMarker::new((0, 0), 8, color.filled()).into_dyn()
                } else {
                    Circle::new((0, 0), 6, color.filled()).into_dyn()
                };
                EmptyElement::at((p.intensity, p.gops))
                    + marker
                    + Text::new(p.label.clone(), (9, dy), ("sans-serif", 13))
            }))
            .map_err(plot_err)?
            .label(engine.name());
        if gpu {
            series.legend(move |(x, y)| TriangleMarker::new((x + 10, y), 8, color.filled()));
        } else {
            series.legend(move |(x, y)| Circle::new((x + 10, y), 6, color.filled()));
        }
    }
    Ok(())
}

/// One bar of the speedup chart: kernel index, series name, colour and speedup.
type Bar = (usize, String, RGBColor, f64);

/// The kernels of `comparison` in order and, for each kernel with a measured CPU naive engine,
/// a bar per measured engine (and one counting the transfers per GPU engine); bars with a
/// zero or unbounded speedup are left out.
fn speedup_bars(comparison: &Comparison) -> (Vec<&str>, Vec<Bar>) {
    let mut kernels: Vec<&str> = Vec::new();
    for r in &comparison.rows {
        if !kernels.contains(&r.kernel.as_str()) {
            kernels.push(&r.kernel);
        }
    }
    let mut bars: Vec<Bar> = Vec::new();
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
                let name = format!("{} incl. transfers", r.engine.name());
                bars.push((k, name, lighten(color), with));
            }
        }
    }
    // A zero or unbounded ratio has no place on the (possibly logarithmic) axis.
    bars.retain(|b| b.3.is_finite() && b.3 > 0.0);
    (kernels, bars)
}

/// Writes the speedup bar chart: per kernel, one bar per measured engine giving its speed over
/// the CPU's naive engine on that kernel, and for GPU engines a lighter bar counting the
/// host-device transfers; logarithmic (labelled at every decade) when the speedups span more
/// than a factor of 20.
pub fn speedup_png(comparison: &Comparison, path: &Path) -> Result<()> {
    let (kernels, bars) = speedup_bars(comparison);
    if bars.is_empty() {
        return Err(Error::InvalidArgument(
            "no kernel has a measured CPU naive engine to compare with".into(),
        ));
    }
    let hi = bars.iter().map(|b| b.3).fold(1.0, f64::max);
    let lo = bars.iter().map(|b| b.3).fold(1.0, f64::min);
    let [nx, ny, nz] = comparison.dims;
    let title = format!(
        "Speedup over the CPU naive engine: {nx}x{ny}x{nz} {}",
        comparison.dtype.name()
    );
    let bars = BarChart {
        title: &title,
        kernels: &kernels,
        series: bar_series(&bars),
        bars: &bars,
    };
    render(path, |root| {
        if hi / lo > 20.0 {
            let y_lo = (lo / 2.0).min(0.5);
            let y_hi = hi * (hi / y_lo).powf(0.5);
            let format = |v: &f64| format_significant(*v);
            let axis = log_axis(y_lo, y_hi);
            bars.draw(root, axis, (y_lo, "speedup (log scale)"), &format)
        } else {
            let ticks = nice_ticks(0.0, hi * 1.45, 8);
            let digits = tick_decimals(&ticks);
            let format = move |v: &f64| format_fixed(*v, digits);
            let axis = TickedAxis::new(0.0..hi * 1.45, ticks);
            bars.draw(root, axis, (0.0, "speedup"), &format)
        }
    })
}

/// The series of `bars` in order of appearance, each with its colour.
fn bar_series(bars: &[Bar]) -> Vec<(String, RGBColor)> {
    let mut series: Vec<(String, RGBColor)> = Vec::new();
    for (_, name, color, _) in bars {
        if !series.iter().any(|(n, _)| n == name) {
            series.push((name.clone(), *color));
        }
    }
    series
}

/// What the speedup chart shows.
struct BarChart<'c> {
    title: &'c str,
    kernels: &'c [&'c str],
    series: Vec<(String, RGBColor)>,
    bars: &'c [Bar],
}

impl BarChart<'_> {
    /// Draws the chart on `root` with y axis `y` (bars rise from `base`) labelled `y_desc`, its
    /// tick labels written by `format`.
    fn draw<Y>(
        &self,
        root: &Root<'_>,
        y: Y,
        (base, y_desc): (f64, &str),
        format: &dyn Fn(&f64) -> String,
    ) -> Result<()>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let n = self.kernels.len();
        let label = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                self.kernels[i as usize].to_string()
            } else {
                String::new()
            }
        };
        let x = -0.5..n as f64 - 0.5;
        let mut chart = chart(root, self.title, 40, (x, y))?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh);
        mesh.disable_x_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&label)
            .y_label_formatter(format)
            .y_desc(y_desc)
            .draw()
            .map_err(plot_err)?;
        draw_bars(&mut chart, self.bars, &self.series, base)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// Draws one series of bars per engine (so each gets a legend entry), each bar labelled with
/// its value; the bars of a kernel share the width 0.8 around its position.
fn draw_bars<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, RangedCoordf64, Y>,
    bars: &[Bar],
    series: &[(String, RGBColor)],
    base: f64,
) -> Result<()> {
    let width = 0.8 / series.len() as f64;
    let slot = |k: usize, name: &str| {
        let i = series.iter().position(|(s, _)| s == name).unwrap_or(0);
        k as f64 - 0.4 + i as f64 * width
    };
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
                    + Text::new(bar_value(*v), (-10, -16), ("sans-serif", 12).into_font())
            }))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// A bar's value as printed above it.
fn bar_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
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
