//! PNG pictures of a 2D slice of a field, coloured with a perceptually uniform colour map: the
//! bare field, one square of pixels per cell (see [`super::write_png_slice`] for a figure with
//! title, axes and colour bar).

use std::path::Path;

use crate::files::write_whole;
use crate::{Error, Result};

/// Colour maps (from the `colorous` crate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorMap {
    /// Black–red–yellow–white: temperatures, speeds.
    Inferno,
    /// Dark blue–green–yellow: general scalar fields.
    Viridis,
    /// Blue–white–red, for signed fields centred on zero.
    RedBlue,
}

impl ColorMap {
    /// The `colorous` gradient of this map.
    pub(super) fn gradient(self) -> colorous::Gradient {
        match self {
            ColorMap::Inferno => colorous::INFERNO,
            ColorMap::Viridis => colorous::VIRIDIS,
            ColorMap::RedBlue => colorous::RED_BLUE,
        }
    }
}

/// A 2D scalar field to draw: `width × height` values, row-major, first row at the top.
#[derive(Clone, Debug)]
pub struct Slice {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `width * height` values.
    pub values: Vec<f64>,
}

impl Slice {
    /// The plane `z` of a grid, +y pointing up in the picture.
    ///
    /// # Panics
    /// If `z` is not a plane of the grid, like indexing it.
    pub fn z_plane<T: crate::Real>(grid: &crate::Grid<T>, z: usize) -> Slice {
        let [nx, ny, _] = grid.dims();
        let values = (0..ny)
            .rev()
            .flat_map(|y| {
                grid.row(y, z)
                    .iter()
                    .map(|v| v.to_f64().unwrap_or(f64::NAN))
            })
            .collect();
        Slice {
            width: nx,
            height: ny,
            values,
        }
    }

    /// The plane `x` of a grid as seen looking along −x: +z to the right, +y up.
    ///
    /// # Panics
    /// If `x` is not a column of the grid, like indexing it.
    pub fn x_plane<T: crate::Real>(grid: &crate::Grid<T>, x: usize) -> Slice {
        let [_, ny, nz] = grid.dims();
        let values = (0..ny)
            .rev()
            .flat_map(|y| (0..nz).map(move |z| grid.get(x, y, z).to_f64().unwrap_or(f64::NAN)))
            .collect();
        Slice {
            width: nz,
            height: ny,
            values,
        }
    }

    /// An error unless the slice holds `width * height` values and has columns and rows.
    pub(crate) fn check(&self) -> Result<()> {
        if self.width == 0 || self.height == 0 {
            return Err(Error::InvalidArgument(format!(
                "a {}x{} slice has no pixels to draw",
                self.width, self.height
            )));
        }
        let cells = self.width.checked_mul(self.height);
        if cells != Some(self.values.len()) {
            return Err(Error::InvalidArgument(format!(
                "a {}x{} slice needs {} values, got {}",
                self.width,
                self.height,
                cells.map_or("more than the address space holds".to_string(), |n| n
                    .to_string()),
                self.values.len()
            )));
        }
        Ok(())
    }

    /// The smallest and largest finite value (0, 1 when there is none).
    pub fn range(&self) -> (f64, f64) {
        let finite = self.values.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if lo.is_finite() {
            (lo, hi)
        } else {
            (0.0, 1.0)
        }
    }
}

/// Writes `slice` as an RGB PNG at `path`, mapping `range` (default: the slice's own range) onto
/// the colour map, each cell drawn as a square of `scale` pixels. Non-finite values are grey.
pub fn write_png(
    path: &Path,
    slice: &Slice,
    map: ColorMap,
    range: Option<(f64, f64)>,
    scale: usize,
) -> Result<()> {
    slice.check()?;
    let scale = scale.max(1);
    let (w, h) = picture_size(slice, scale)?;
    let (lo, hi) = range.unwrap_or_else(|| slice.range());
    let gradient = map.gradient();
    let mut pixels = Vec::with_capacity(w * h * 3);
    for row in 0..slice.height {
        let mut line = Vec::with_capacity(w * 3);
        for &v in &slice.values[row * slice.width..(row + 1) * slice.width] {
            let rgb = colour_of(&gradient, v, (lo, hi));
            for _ in 0..scale {
                line.extend_from_slice(&rgb);
            }
        }
        for _ in 0..scale {
            pixels.extend_from_slice(&line);
        }
    }
    write_rgb(path, w, h, &pixels)
}

/// Most pixels a slice's picture may have: 2³⁰ (3 GiB of RGB, a 32768² picture), far past any
/// screen or print, so that a scale typed wrong is refused before its pixels are allocated.
pub const MAX_PICTURE_PIXELS: usize = 1 << 30;

/// The size in pixels of `slice` drawn at `scale`. Errors: a side beyond PNG's 2³¹ − 1 pixels
/// or more than [`MAX_PICTURE_PIXELS`] in all.
pub(super) fn picture_size(slice: &Slice, scale: usize) -> Result<(usize, usize)> {
    let side = |n: usize| n.checked_mul(scale).filter(|&p| p < 1 << 31);
    match (side(slice.width), side(slice.height)) {
        (Some(w), Some(h)) if w.saturating_mul(h) <= MAX_PICTURE_PIXELS => Ok((w, h)),
        _ => Err(Error::InvalidArgument(format!(
            "a {}x{} slice drawn {scale} pixels a cell is larger than a picture may be ({} \
             pixels at most)",
            slice.width, slice.height, MAX_PICTURE_PIXELS
        ))),
    }
}

/// Writes `w × h` RGB pixels (row-major, 3 bytes each) as a PNG at `path`.
pub(crate) fn write_rgb(path: &Path, w: usize, h: usize, pixels: &[u8]) -> Result<()> {
    write_whole(path, |out| {
        let mut encoder = png::Encoder::new(out, w as u32, h as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let io = |e: png::EncodingError| Error::io(path, std::io::Error::other(e));
        let mut writer = encoder.write_header().map_err(io)?;
        writer.write_image_data(pixels).map_err(io)?;
        writer.finish().map_err(io)
    })
}

/// The colour of value `v` when `lo..hi` spans the colour map; grey for non-finite values.
pub(super) fn colour_of(gradient: &colorous::Gradient, v: f64, (lo, hi): (f64, f64)) -> [u8; 3] {
    if !v.is_finite() {
        return [128, 128, 128];
    }
    let span = if hi > lo { hi - lo } else { 1.0 };
    let c = gradient.eval_continuous(((v - lo) / span).clamp(0.0, 1.0));
    [c.r, c.g, c.b]
}
