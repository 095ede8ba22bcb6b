//! Figures of a 2D slice laid out like a figure in a paper: the field in a colour map, a title,
//! x and y axes with tick labels (in cells or in metres) and a vertical colour bar with labelled
//! ticks in the quantity's units. Text is drawn with a subset of DejaVu Sans embedded in the
//! library, so the pictures look the same on a machine without fonts.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::png::{colour_of, write_rgb, ColorMap, Slice, MAX_PICTURE_PIXELS};
use crate::{Error, Result};

/// DejaVu Sans, cut down to ASCII and a few symbols (² ³ µ · × Γ γ κ ν – — − ≈ ≤ ≥; license:
/// assets/DejaVuSans-LICENSE.txt).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

/// Registers the embedded font as plotters' `sans-serif` (once per process).
pub(crate) fn register_font() -> Result<()> {
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

/// A plotting error as the crate's error.
pub(crate) fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

/// One axis of a picture: its label and the coordinates the slice's cells stand for.
#[derive(Clone, Debug, PartialEq)]
pub struct PictureAxis {
    /// The axis label, unit included, e.g. "x (cells)".
    pub label: String,
    /// Coordinate of the outer edge of the first cell (the left or bottom edge of the field).
    pub origin: f64,
    /// Length of one cell in the axis's unit (1 for cells, the spacing Δx for metres);
    /// negative for coordinates that decrease away from the first edge, such as time
    /// increasing downward (`origin` then holds the largest coordinate).
    pub cell_size: f64,
}

impl PictureAxis {
    /// An axis counted in cells from 0, labelled "`name` (cells)".
    pub fn cells(name: &str) -> PictureAxis {
        PictureAxis {
            label: format!("{name} (cells)"),
            origin: 0.0,
            cell_size: 1.0,
        }
    }

    /// An axis in metres from 0 with `cell_size` metres per cell, labelled "`name` (m)".
    pub fn metres(name: &str, cell_size: f64) -> PictureAxis {
        PictureAxis {
            label: format!("{name} (m)"),
            origin: 0.0,
            cell_size,
        }
    }

    /// The coordinates of the field's two edges along this axis for `cells` cells.
    fn span(&self, cells: usize) -> (f64, f64) {
        let size = if self.cell_size != 0.0 && self.cell_size.is_finite() {
            self.cell_size
        } else {
            1.0
        };
        (self.origin, self.origin + cells as f64 * size)
    }
}

/// What [`write_png_slice`] draws around a slice: title, colour-bar label, axes, colour map,
/// value range and cell size in pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct PictureOptions {
    /// Title above the field, e.g. "temperature, z = 64, step 600".
    pub title: String,
    /// Label of the colour bar: the quantity and its unit, e.g. "|u| (lattice units)".
    pub quantity: String,
    /// The horizontal axis (the slice's columns).
    pub x_axis: PictureAxis,
    /// The vertical axis (the slice's rows, first row at the top).
    pub y_axis: PictureAxis,
    /// The colour map.
    pub map: ColorMap,
    /// Values mapped onto the two ends of the colour map (default: the slice's own range).
    pub range: Option<(f64, f64)>,
    /// Pixels per cell (default: the longer side about 512 pixels, the field at least 240 pixels
    /// high where that keeps it within 1024 pixels wide).
    pub scale: Option<usize>,
}

impl PictureOptions {
    /// Options with `title` and colour-bar label `quantity`, axes x and y in cells, the inferno
    /// colour map, the slice's own range and the default scale.
    pub fn new(title: impl Into<String>, quantity: impl Into<String>) -> PictureOptions {
        PictureOptions {
            title: title.into(),
            quantity: quantity.into(),
            x_axis: PictureAxis::cells("x"),
            y_axis: PictureAxis::cells("y"),
            map: ColorMap::Inferno,
            range: None,
            scale: None,
        }
    }

    /// The same options with axes `x` and `y`.
    pub fn with_axes(mut self, x: PictureAxis, y: PictureAxis) -> PictureOptions {
        self.x_axis = x;
        self.y_axis = y;
        self
    }

    /// The same options with colour map `map`.
    pub fn with_map(mut self, map: ColorMap) -> PictureOptions {
        self.map = map;
        self
    }

    /// The same options with `lo..hi` mapped onto the colour map.
    pub fn with_range(mut self, lo: f64, hi: f64) -> PictureOptions {
        self.range = Some((lo, hi));
        self
    }

    /// The same options with `scale` pixels per cell.
    pub fn with_scale(mut self, scale: usize) -> PictureOptions {
        self.scale = Some(scale);
        self
    }
}

/// A rectangle of pixels in a picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// Where the parts of a picture written by [`write_png_slice`] lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PictureLayout {
    /// Width of the whole picture in pixels.
    pub width: usize,
    /// Height of the whole picture in pixels.
    pub height: usize,
    /// The field: each cell a square of `scale` pixels.
    pub field: PixelRect,
    /// The colour bar: the top row has the colour of the range's top, the bottom row that of
    /// its bottom.
    pub colour_bar: PixelRect,
}

/// Height of the strip above the field that holds the title.
const TOP: usize = 48;
/// Height of the strip below the field for the x tick labels and the x axis label.
const X_AREA: usize = 56;
/// Width of the strip left of the field for the y tick labels and the y axis label.
const Y_AREA: usize = 64;
/// Blank border around the figure.
const BORDER: usize = 12;
/// Space between the field and the colour bar.
const BAR_GAP: usize = 22;
/// Width of the colour bar.
const BAR_WIDTH: usize = 22;
/// Length of a colour-bar tick mark.
const TICK: usize = 6;
/// Font sizes of the title, tick labels and axis labels.
const TITLE_FONT: f64 = 20.0;
const LABEL_FONT: f64 = 15.0;
const DESC_FONT: f64 = 16.0;

/// Writes `slice` as an RGB PNG at `path` with a title, axes with tick labels and a colour bar,
/// as `options` says; returns where the field and the colour bar lie in the picture.
/// Non-finite values are grey.
pub fn write_png_slice(
    path: &Path,
    slice: &Slice,
    options: &PictureOptions,
) -> Result<PictureLayout> {
    slice.check()?;
    let range = options.range.unwrap_or_else(|| slice.range());
    let (layout, ticks, (lo, hi)) = layout_for(slice, options, range)?;
    let mut pixels = vec![255u8; layout.width * layout.height * 3];
    {
        let size = (layout.width as u32, layout.height as u32);
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        draw_title(&root, &options.title, &layout)?;
        draw_axes(&root, slice, options, &layout)?;
        draw_colour_bar_labels(&root, &options.quantity, &ticks, (lo, hi), &layout)?;
        root.present().map_err(plot_err)?;
    }
    paint_field(&mut pixels, &layout, slice, options.map, (lo, hi));
    paint_colour_bar(&mut pixels, &layout, options.map);
    write_rgb(path, layout.width, layout.height, &pixels)?;
    Ok(layout)
}

/// Pixels per cell when the options leave it open: the longer side about 512 pixels, but the
/// field at least 240 pixels high (room for the colour bar's labels) unless that would make it
/// wider than 1024.
fn default_scale(slice: &Slice) -> usize {
    let long = slice.width.max(slice.height).max(1);
    let fit = 512 / long;
    let tall = 240usize.div_ceil(slice.height.max(1));
    fit.max(tall).min(1024 / long).max(1)
}

/// The pixel size of `text` at `size` points in the embedded font.
fn text_size(text: &str, size: f64) -> Result<(usize, usize)> {
    let (w, h) = ("sans-serif", size)
        .into_font()
        .box_size(text)
        .map_err(plot_err)?;
    Ok((w as usize, h as usize))
}

/// Places the field, the colour bar and the margins around them; the figure is widened (evenly
/// on both sides) when the title is wider than the rest.
fn lay_out(
    slice: &Slice,
    scale: usize,
    options: &PictureOptions,
    ticks: &[(f64, String)],
) -> Result<PictureLayout> {
    let (fw, fh) = super::png::picture_size(slice, scale)?;
    let mut label_w = 0;
    for (_, label) in ticks {
        label_w = label_w.max(text_size(label, LABEL_FONT)?.0);
    }
    let quantity_h = text_size(&options.quantity, DESC_FONT)?
        .1
        .max(DESC_FONT as usize);
    let right = BAR_GAP + BAR_WIDTH + TICK + 4 + label_w + 12 + quantity_h + BORDER;
    let mut left = BORDER + Y_AREA;
    let mut width = left + fw + right;
    let title_w = text_size(&options.title, TITLE_FONT)?.0 + 2 * BORDER;
    if title_w > width {
        left += (title_w - width) / 2;
        width = title_w;
    }
    let field = PixelRect {
        x: left,
        y: TOP,
        width: fw,
        height: fh,
    };
    let colour_bar = PixelRect {
        x: left + fw + BAR_GAP,
        y: TOP,
        width: BAR_WIDTH,
        height: fh,
    };
    let height = TOP + fh + X_AREA + BORDER / 2;
    // The cap holds for the whole figure, margins included, not only the field.
    if width.saturating_mul(height) > MAX_PICTURE_PIXELS || width.max(height) >= 1 << 31 {
        return Err(Error::InvalidArgument(format!(
            "a {}x{} slice drawn {scale} pixels a cell, with its title, axes and colour bar, \
             is a {width}x{height} picture, larger than a picture may be ({MAX_PICTURE_PIXELS} \
             pixels at most)",
            slice.width, slice.height
        )));
    }
    Ok(PictureLayout {
        width,
        height,
        field,
        colour_bar,
    })
}

/// Checks, before there is anything to draw, that a `width × height` slice drawn with
/// `options` (its range or else 0 to 1) makes a picture within the size limit; returns the
/// layout [`write_png_slice`] would choose, up to the width of the colour bar's labels.
pub fn check_png_slice(
    width: usize,
    height: usize,
    options: &PictureOptions,
) -> Result<PictureLayout> {
    let shape = Slice {
        width,
        height,
        values: Vec::new(),
    };
    let range = options.range.unwrap_or((0.0, 1.0));
    layout_for(&shape, options, range).map(|(layout, _, _)| layout)
}

/// The colour bar's ticks: values and their labels.
type Ticks = Vec<(f64, String)>;

/// The layout of `slice` drawn with `options` over the value range `(lo, hi)` (widened to 1
/// when empty), with the colour bar's ticks and the range used.
fn layout_for(
    slice: &Slice,
    options: &PictureOptions,
    (lo, hi): (f64, f64),
) -> Result<(PictureLayout, Ticks, (f64, f64))> {
    register_font()?;
    let scale = options.scale.unwrap_or_else(|| default_scale(slice)).max(1);
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let ticks = colour_bar_ticks(lo, hi);
    let layout = lay_out(slice, scale, options, &ticks)?;
    Ok((layout, ticks, (lo, hi)))
}

type Root<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// The title, centred over the figure.
fn draw_title(root: &Root<'_>, title: &str, layout: &PictureLayout) -> Result<()> {
    let style = ("sans-serif", TITLE_FONT)
        .into_text_style(root)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw_text(title, &style, ((layout.width / 2) as i32, (TOP / 2) as i32))
        .map_err(plot_err)
}

/// The frame around the field, the x and y axes' ticks, tick labels and axis labels.
fn draw_axes(
    root: &Root<'_>,
    slice: &Slice,
    options: &PictureOptions,
    layout: &PictureLayout,
) -> Result<()> {
    let f = layout.field;
    frame(root, f)?;
    let area = root.clone().shrink(
        ((f.x - Y_AREA) as u32, f.y as u32),
        ((f.width + Y_AREA) as u32, (f.height + X_AREA) as u32),
    );
    let (x0, x1) = options.x_axis.span(slice.width);
    let (y0, y1) = options.y_axis.span(slice.height);
    let x_ticks = nice_ticks(x0.min(x1), x0.max(x1), (f.width / 70).clamp(2, 10));
    let y_ticks = nice_ticks(y0.min(y1), y0.max(y1), (f.height / 50).clamp(2, 10));
    let x_digits = tick_decimals(&x_ticks);
    let y_digits = tick_decimals(&y_ticks);
    let mut chart = ChartBuilder::on(&area)
        .x_label_area_size(X_AREA as u32)
        .y_label_area_size(Y_AREA as u32)
        .build_cartesian_2d(
            TickedAxis::new(x0..x1, x_ticks),
            TickedAxis::new(y0..y1, y_ticks),
        )
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(options.x_axis.label.as_str())
        .y_desc(options.y_axis.label.as_str())
        .x_label_formatter(&|v| format_fixed(*v, x_digits))
        .y_label_formatter(&|v| format_fixed(*v, y_digits))
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", DESC_FONT))
        .draw()
        .map_err(plot_err)
}

/// A linear axis over `range` (its start may be the larger end, for a reversed axis) with
/// labelled ticks at `ticks` and no minor lines (plotters' `f64` axes choose their own ticks,
/// and one with chosen ticks cannot take a label formatter).
pub(crate) struct TickedAxis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl TickedAxis {
    /// The axis over `range` with labelled ticks at `ticks`.
    pub(crate) fn new(range: Range<f64>, ticks: Vec<f64>) -> TickedAxis {
        TickedAxis { range, ticks }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let Range { start, end } = self.range;
        let t = if end != start {
            (v - start) / (end - start)
        } else {
            0.5
        };
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A one-pixel black line just outside `r`.
fn frame(root: &Root<'_>, r: PixelRect) -> Result<()> {
    let (x0, y0) = (r.x as i32 - 1, r.y as i32 - 1);
    let (x1, y1) = ((r.x + r.width) as i32, (r.y + r.height) as i32);
    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.stroke_width(1)))
        .map_err(plot_err)
}

/// The colour bar's frame, tick marks, tick labels and, rotated along its right side, the
/// quantity's label.
fn draw_colour_bar_labels(
    root: &Root<'_>,
    quantity: &str,
    ticks: &[(f64, String)],
    (lo, hi): (f64, f64),
    layout: &PictureLayout,
) -> Result<()> {
    let bar = layout.colour_bar;
    frame(root, bar)?;
    let right = (bar.x + bar.width) as i32;
    let style = ("sans-serif", LABEL_FONT)
        .into_text_style(root)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut label_w = 0;
    for (v, label) in ticks {
        let y = bar.y as i32 + ((hi - v) / (hi - lo) * (bar.height - 1) as f64).round() as i32;
        root.draw(&PathElement::new(
            vec![(right, y), (right + TICK as i32, y)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        root.draw_text(label, &style, (right + TICK as i32 + 4, y))
            .map_err(plot_err)?;
        label_w = label_w.max(text_size(label, LABEL_FONT)?.0);
    }
    let x = right + (TICK + 4 + label_w + 12) as i32;
    let desc = ("sans-serif", DESC_FONT)
        .into_font()
        .transform(FontTransform::Rotate270)
        .into_text_style(root)
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw_text(quantity, &desc, (x, (bar.y + bar.height / 2) as i32))
        .map_err(plot_err)
}

/// Sets the pixel at (`x`, `y`) of a picture `width` pixels wide.
fn put(pixels: &mut [u8], width: usize, x: usize, y: usize, rgb: [u8; 3]) {
    let i = (y * width + x) * 3;
    pixels[i..i + 3].copy_from_slice(&rgb);
}

/// Paints the cells of `slice` into the field's rectangle.
fn paint_field(
    pixels: &mut [u8],
    layout: &PictureLayout,
    slice: &Slice,
    map: ColorMap,
    range: (f64, f64),
) {
    let f = layout.field;
    let gradient = map.gradient();
    for py in 0..f.height {
        let row = py * slice.height / f.height;
        for px in 0..f.width {
            let col = px * slice.width / f.width;
            let rgb = colour_of(&gradient, slice.values[row * slice.width + col], range);
            put(pixels, layout.width, f.x + px, f.y + py, rgb);
        }
    }
}

/// Paints the colour map into the colour bar's rectangle, its top end at the top.
fn paint_colour_bar(pixels: &mut [u8], layout: &PictureLayout, map: ColorMap) {
    let bar = layout.colour_bar;
    let gradient = map.gradient();
    for py in 0..bar.height {
        let t = 1.0 - py as f64 / (bar.height.max(2) - 1) as f64;
        let rgb = colour_of(&gradient, t, (0.0, 1.0));
        for px in 0..bar.width {
            put(pixels, layout.width, bar.x + px, bar.y + py, rgb);
        }
    }
}

/// The colour bar's ticks: both ends of `lo..hi`, labelled with up to three significant digits,
/// and round values between them (those too close to an end to have room for their label are
/// left out).
fn colour_bar_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let inner = nice_ticks(lo, hi, 5);
    let digits = tick_decimals(&inner);
    let room = 0.08 * (hi - lo);
    let mut ticks = vec![(lo, format_significant(lo))];
    ticks.extend(
        inner
            .into_iter()
            .filter(|v| v - lo > room && hi - v > room)
            .map(|v| (v, format_fixed(v, digits))),
    );
    ticks.push((hi, format_significant(hi)));
    ticks
}

/// Most ticks [`nice_ticks`] places, whatever it is asked for: more would not be read.
pub const MAX_TICKS: usize = 1000;

/// Round values (1, 2 or 5 times a power of ten apart) in `lo..=hi`, at most about `max` of
/// them (and of [`MAX_TICKS`]): the ticks of a linear axis. Empty when the range is empty, not
/// finite, or narrower than any step a `f64` resolves.
pub fn nice_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return Vec::new();
    }
    let max = max.clamp(1, MAX_TICKS);
    let raw = (hi - lo) / max as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| (hi - lo) / s <= max as f64 + 1e-9)
        .unwrap_or(10.0 * magnitude);
    // A span below the smallest normal numbers has no step that divides it, and a step within
    // a few units in the last place of the ends gives ticks that round onto each other.
    let resolution = 8.0 * f64::EPSILON * lo.abs().max(hi.abs());
    if !(step.is_finite() && step > 0.0 && step > resolution) {
        return Vec::new();
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    // The step keeps the ticks within `max` (plus one for rounding): more is a span the
    // floating-point step does not resolve.
    if (last as i128 - first as i128) > 2 * max as i128 + 2 {
        return Vec::new();
    }
    // Adding 0 turns a −0 into 0.
    (first..=last).map(|k| k as f64 * step + 0.0).collect()
}

/// The powers of ten in `lo..=hi`: the labelled ticks of a logarithmic axis (3..20000 gives 10,
/// 100, 1000 and 10000). Empty unless 0 < `lo` < `hi`.
pub fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let first = (lo.log10() - 1e-9).ceil() as i32;
    let last = (hi.log10() + 1e-9).floor() as i32;
    (first..=last).map(|k| 10f64.powi(k)).collect()
}

/// The labelled ticks of a logarithmic axis over `lo..=hi`: every decade, and 2 and 5 times
/// each power of ten too when fewer than two decades fall in the range.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = decade_ticks(lo, hi);
    if decades.len() >= 2 {
        return decades;
    }
    log_multiples(lo, hi, &[1.0, 2.0, 5.0])
}

/// The minor ticks of a logarithmic axis over `lo..=hi`: 2, 3, ... 9 times each power of ten.
pub fn minor_log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    log_multiples(lo, hi, &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
}

/// `m × 10^k` for each `m` in `multiples` and every `k`, within `lo..=hi`, ascending.
fn log_multiples(lo: f64, hi: f64, multiples: &[f64]) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let tolerance = 1e-9 * hi;
    (first..=last)
        .flat_map(|k| multiples.iter().map(move |m| m * 10f64.powi(k)))
        .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi + tolerance)
        .collect()
}

/// Decimals that tell the values of evenly spaced `ticks` apart (0 for whole steps), at most
/// the 17 that any `f64` needs.
pub(crate) fn tick_decimals(ticks: &[f64]) -> usize {
    match ticks {
        [a, b, ..] if (b - a).abs() > 0.0 && (b - a).is_finite() => {
            (-(b - a).abs().log10() - 1e-9).ceil().clamp(0.0, 17.0) as usize
        }
        _ => 0,
    }
}

/// `v` with `digits` decimals, a typographic minus sign for negative values.
pub(crate) fn format_fixed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    let s = if s
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        s.trim_start_matches('-').to_string()
    } else {
        s
    };
    s.replacen('-', "−", 1)
}

/// `v` with at most three significant digits and no trailing zeros ("0.075", "1", "12300").
pub(crate) fn format_significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let digits = (2.0 - v.abs().log10().floor()).max(0.0) as usize;
    let s = format_fixed(v, digits);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
