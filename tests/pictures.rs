//! Pictures people would rather look at: the figures of slices have the expected size, the
//! colour bar holds the colour map's ends at its ends, the margins hold the title, tick labels
//! and axis labels; the CLI's pictures are such figures; the roofline chart is written; the tick
//! generators give the expected values.

use std::path::{Path, PathBuf};
use std::process::Command;

use stencil35d::output::{
    decade_ticks, log_ticks, minor_log_ticks, nice_ticks, write_png_slice, ColorMap, PictureAxis,
    PictureLayout, PictureOptions, PixelRect, Slice,
};
use stencil35d::perf::{compare, roofline_png, speedup_png, CompareConfig};
use stencil35d::Engine;

/// A fresh directory for this test's files in the system's temporary directory.
fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stencil35d-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A decoded RGB picture.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn read(path: &Path) -> Image {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        rgb.truncate(info.buffer_size());
        Image {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Pixels in `r` that are not white (the background): text, ticks, lines.
    fn inked(&self, r: PixelRect) -> usize {
        (r.y..r.y + r.height)
            .flat_map(|y| (r.x..r.x + r.width).map(move |x| (x, y)))
            .filter(|&(x, y)| self.at(x, y) != [255, 255, 255])
            .count()
    }
}

fn rgb(c: colorous::Color) -> [u8; 3] {
    [c.r, c.g, c.b]
}

/// A `w × h` slice rising from 0 at the left to 1 at the right.
fn ramp(w: usize, h: usize) -> Slice {
    Slice {
        width: w,
        height: h,
        values: (0..w * h)
            .map(|i| (i % w) as f64 / (w - 1) as f64)
            .collect(),
    }
}

/// The four margins around the field and colour bar: above (title), left (y ticks and label),
/// below (x ticks and label) and right of the colour bar (its ticks and label).
fn margins(l: &PictureLayout) -> [(&'static str, PixelRect); 4] {
    let f = l.field;
    let bar_right = l.colour_bar.x + l.colour_bar.width + 2;
    [
        (
            "title",
            PixelRect {
                x: 0,
                y: 0,
                width: l.width,
                height: f.y - 2,
            },
        ),
        (
            "y axis",
            PixelRect {
                x: 0,
                y: f.y,
                width: f.x - 2,
                height: f.height,
            },
        ),
        (
            "x axis",
            PixelRect {
                x: f.x,
                y: f.y + f.height + 2,
                width: f.width,
                height: l.height - f.y - f.height - 2,
            },
        ),
        (
            "colour bar labels",
            PixelRect {
                x: bar_right,
                y: f.y,
                width: l.width - bar_right,
                height: f.height,
            },
        ),
    ]
}

#[test]
fn a_figure_has_its_size_colour_bar_and_labelled_margins() {
    let dir = out_dir("pictures-figure");
    let path = dir.join("ramp.png");
    let slice = ramp(40, 30);
    let options = PictureOptions::new("ramp, z = 3, step 12", "value (units)")
        .with_map(ColorMap::Viridis)
        .with_range(0.0, 1.0)
        .with_scale(6);
    let layout = write_png_slice(&path, &slice, &options).unwrap();
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (layout.width, layout.height));
    assert_eq!((layout.field.width, layout.field.height), (240, 180));
    assert!(
        layout.width > 240 + 100 && layout.height > 180 + 60,
        "{layout:?}"
    );

    // The field: each cell a 6-pixel square in the colour map.
    let f = layout.field;
    let g = colorous::VIRIDIS;
    assert_eq!(img.at(f.x, f.y), rgb(g.eval_continuous(0.0)));
    assert_eq!(
        img.at(f.x + f.width - 1, f.y + f.height - 1),
        rgb(g.eval_continuous(1.0))
    );
    assert_eq!(
        img.at(f.x + 6 * 20 + 3, f.y + 50),
        rgb(g.eval_continuous(20.0 / 39.0))
    );

    // The colour bar: the map's top end at its top row, its bottom end at its bottom row.
    let bar = layout.colour_bar;
    assert!(
        bar.x >= f.x + f.width && bar.height == f.height,
        "{layout:?}"
    );
    let mid = bar.x + bar.width / 2;
    assert_eq!(img.at(mid, bar.y), rgb(g.eval_continuous(1.0)));
    assert_eq!(
        img.at(mid, bar.y + bar.height - 1),
        rgb(g.eval_continuous(0.0))
    );
    assert_eq!(
        img.at(mid, bar.y + bar.height / 2),
        rgb(g.eval_continuous(1.0 - (bar.height / 2) as f64 / (bar.height - 1) as f64))
    );

    for (name, r) in margins(&layout) {
        let ink = img.inked(r);
        assert!(ink > 40, "the {name} margin {r:?} has {ink} inked pixels");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_figure_in_metres_and_a_wide_title_fit() {
    let dir = out_dir("pictures-metres");
    let path = dir.join("small.png");
    let title = "a long title that is wider than the field it stands above, step 1000000";
    let options = PictureOptions::new(title, "T (K)")
        .with_axes(
            PictureAxis::metres("x", 0.0025),
            PictureAxis::metres("y", 0.0025),
        )
        .with_scale(16);
    let layout = write_png_slice(&path, &ramp(8, 8), &options).unwrap();
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (layout.width, layout.height));
    assert_eq!(layout.field.width, 128);
    // The picture is widened for the title, whose ends are not cut: the outermost columns stay
    // blank.
    assert!(layout.width > 128 + 400, "{layout:?}");
    for x in [0, layout.width - 3] {
        let edge = PixelRect {
            x,
            y: 0,
            width: 3,
            height: layout.field.y,
        };
        assert_eq!(img.inked(edge), 0, "the title touches an edge");
    }
    for (name, r) in margins(&layout) {
        assert!(img.inked(r) > 40, "the {name} margin is empty");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_default_scale_keeps_a_flat_field_tall_enough_for_the_colour_bar() {
    let dir = out_dir("pictures-flat");
    let options = PictureOptions::new("flat", "value");
    let layout = write_png_slice(&dir.join("flat.png"), &ramp(64, 16), &options).unwrap();
    assert_eq!(
        (layout.field.width, layout.field.height),
        (64 * 15, 16 * 15)
    );
    let layout = write_png_slice(&dir.join("square.png"), &ramp(64, 64), &options).unwrap();
    assert_eq!((layout.field.width, layout.field.height), (512, 512));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_slice_is_an_error() {
    let dir = out_dir("pictures-bad");
    let slice = Slice {
        width: 3,
        height: 3,
        values: vec![0.0; 8],
    };
    let options = PictureOptions::new("bad", "value");
    assert!(write_png_slice(&dir.join("bad.png"), &slice, &options).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

/// A column in the right quarter of `img` whose topmost pixel of the colour map's top colour
/// lies well above a pixel of its bottom colour: the colour bar.
fn has_colour_bar(img: &Image, gradient: colorous::Gradient) -> bool {
    let (top, bottom) = (
        rgb(gradient.eval_continuous(1.0)),
        rgb(gradient.eval_continuous(0.0)),
    );
    (img.width * 3 / 4..img.width).any(|x| {
        let first = (0..img.height).find(|&y| img.at(x, y) == top);
        let last = (0..img.height).rev().find(|&y| img.at(x, y) == bottom);
        matches!((first, last), (Some(a), Some(b)) if b > a + img.height / 3)
    })
}

/// Runs the command-line program with `args`.
fn cli(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_stencil35d"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_cli_pictures_are_figures() {
    let dir = out_dir("pictures-cli");
    let heat = dir.join("heat");
    let cavity = dir.join("cavity");
    cli(&[
        "run",
        "heat",
        "--size",
        "24",
        "--steps",
        "4",
        "--out",
        heat.to_str().unwrap(),
    ]);
    cli(&[
        "run",
        "cavity",
        "--size",
        "12",
        "--steps",
        "4",
        "--no-vti",
        "--out",
        cavity.to_str().unwrap(),
    ]);
    for path in [heat.join("heat.png"), cavity.join("cavity.png")] {
        let img = Image::read(&path);
        // A bare field would be 24 × 21 = 504 (12 × 42 = 504) pixels square.
        assert!(
            img.width > 504 + 150 && img.height > 504 + 80,
            "{}: {}x{}",
            path.display(),
            img.width,
            img.height
        );
        assert!(
            has_colour_bar(&img, colorous::INFERNO),
            "{}",
            path.display()
        );
        let corner = PixelRect {
            x: 0,
            y: 0,
            width: img.width,
            height: 40,
        };
        assert!(img.inked(corner) > 100, "{}: no title", path.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_roofline_and_speedup_charts_are_written() {
    let mut config = CompareConfig::new([14, 13, 12], 2);
    config.repeat = 1;
    config.engines = vec![Engine::Naive, Engine::Blocked];
    let c = compare(&config, |_| {}).unwrap();
    let dir = out_dir("pictures-roofline");
    roofline_png(&c, &dir.join("roofline.png")).unwrap();
    speedup_png(&c, &dir.join("speedup.png")).unwrap();
    for name in ["roofline.png", "speedup.png"] {
        let img = Image::read(&dir.join(name));
        assert_eq!((img.width, img.height), (1000, 680), "{name}");
        // Tick labels left of the plot and below it.
        let left = PixelRect {
            x: 0,
            y: 60,
            width: 80,
            height: 540,
        };
        let below = PixelRect {
            x: 100,
            y: 620,
            width: 880,
            height: 60,
        };
        assert!(img.inked(left) > 200, "{name}: no y labels");
        assert!(img.inked(below) > 200, "{name}: no x labels");
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} != {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-9 * w.abs().max(1e-12),
            "{got:?} != {want:?}"
        );
    }
}

#[test]
fn decade_ticks_are_the_powers_of_ten_in_range() {
    assert_close(&decade_ticks(3.0, 20000.0), &[10.0, 100.0, 1000.0, 10000.0]);
    assert_close(&decade_ticks(0.05, 2.0), &[0.1, 1.0]);
    assert_close(&decade_ticks(1.0, 100.0), &[1.0, 10.0, 100.0]);
    assert_close(&decade_ticks(2.0, 8.0), &[]);
    assert_close(&decade_ticks(0.0, 8.0), &[]);
    assert_close(&decade_ticks(8.0, 2.0), &[]);
    // Fewer than two decades: 1, 2 and 5 times the powers of ten.
    assert_close(&log_ticks(3.0, 20000.0), &[10.0, 100.0, 1000.0, 10000.0]);
    assert_close(&log_ticks(1.5, 30.0), &[2.0, 5.0, 10.0, 20.0]);
    assert_close(&log_ticks(2.0, 8.0), &[2.0, 5.0]);
    assert_close(
        &minor_log_ticks(3.0, 25.0),
        &[3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 20.0],
    );
}

#[test]
fn nice_ticks_are_round_and_within_range() {
    assert_close(
        &nice_ticks(0.0, 64.0, 7),
        &[0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
    );
    assert_close(&nice_ticks(0.0, 0.075, 5), &[0.0, 0.02, 0.04, 0.06]);
    assert_close(&nice_ticks(-1.0, 1.0, 4), &[-1.0, -0.5, 0.0, 0.5, 1.0]);
    assert_close(&nice_ticks(0.0, 0.32, 5), &[0.0, 0.1, 0.2, 0.3]);
    assert_close(&nice_ticks(1.0, 1.0, 5), &[]);
}
