//! Photographs and other images in and out: a PNG (grey, grey with alpha, RGB or RGBA; 8 or 16
//! bits; palettes, transparency chunks and 1-, 2- and 4-bit grey expanded to 8-bit channels)
//! read into one [`Grid2`] per channel with values in `[0, 1]`, and written back with the same
//! channels and depth as read (ancillary chunks such as gamma and colour profiles are not
//! copied), for the 2D kernels (`stencil35d filter`).

use std::io::BufReader;
use std::path::Path;

use crate::{Error, Grid2, Result};

/// An image as channel planes: the colour channels (1 grey, 3 RGB) and the alpha plane, if
/// any, each `[width, height]` with values in `[0, 1]`.
#[derive(Clone, Debug)]
pub struct Picture {
    /// Colour channels: one for grey, three for RGB.
    pub channels: Vec<Grid2<f32>>,
    /// The alpha channel, kept apart so that filters leave transparency alone.
    pub alpha: Option<Grid2<f32>>,
    /// Bits per sample: 8 or 16.
    pub bits: u8,
}

impl Picture {
    /// `[width, height]` (of the first colour channel; `[0, 0]` without one).
    pub fn dims(&self) -> [usize; 2] {
        self.channels.first().map_or([0, 0], |c| c.dims())
    }

    /// Reads a PNG file. The size its header declares is checked against the memory
    /// available before anything of the image is decoded. Errors: [`Error::Io`] for a missing
    /// or unreadable file, [`Error::InvalidArgument`] for something that is not a regular file,
    /// not a PNG this reads, or a picture too large for the memory.
    pub fn read_png(path: &Path) -> Result<Picture> {
        let (file, _) = super::open_regular_file(path, "the picture")?;
        let bad = |e: png::DecodingError| {
            let why = plain_chunk_names(&e.to_string());
            Error::InvalidArgument(format!("{} is not a readable PNG: {why}", path.display()))
        };
        // The decoder's own buffers (chunks, text, colour profiles) stay within its default
        // limit, with room for its rows of the declared width; the image itself is checked
        // below.
        let limits = png::Limits {
            bytes: decoder_limit(path),
        };
        let mut decoder = png::Decoder::new_with_limits(BufReader::new(file), limits);
        // Neither is copied to the output; skipping them keeps the allowance for the rows.
        decoder.set_ignore_iccp_chunk(true);
        decoder.set_ignore_text_chunk(true);
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().map_err(|e| match e {
            // A picture whose rows alone outgrow the memory: say so, as for a tall one.
            png::DecodingError::LimitsExceeded => too_large(path).unwrap_or_else(|| bad(e)),
            e => bad(e),
        })?;
        let size = reader.output_buffer_size().ok_or_else(|| {
            Error::InvalidArgument(format!("{} is too large to read", path.display()))
        })?;
        let (w, h) = reader.info().size();
        let planes = match reader.output_color_type().0 {
            png::ColorType::Grayscale => 1,
            png::ColorType::GrayscaleAlpha => 2,
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba | png::ColorType::Indexed => 4,
        };
        check_memory(path, [w as usize, h as usize], planes, size)?;
        let mut buf = vec![0u8; size];
        let info = reader.next_frame(&mut buf).map_err(bad)?;
        let (w, h) = (info.width as usize, info.height as usize);
        let bits: u8 = match info.bit_depth {
            png::BitDepth::Sixteen => 16,
            _ => 8,
        };
        let (colours, alpha) = match info.color_type {
            png::ColorType::Grayscale => (1, false),
            png::ColorType::GrayscaleAlpha => (1, true),
            png::ColorType::Rgb => (3, false),
            png::ColorType::Rgba => (3, true),
            png::ColorType::Indexed => {
                return Err(Error::InvalidArgument(format!(
                    "{}: palette images are expanded on reading; this one was not",
                    path.display()
                )))
            }
        };
        let samples = colours + usize::from(alpha);
        let line = info.line_size;
        let sample = |x: usize, y: usize, c: usize| -> f32 {
            let i = y * line + (x * samples + c) * usize::from(bits / 8);
            if bits == 16 {
                f32::from(u16::from_be_bytes([buf[i], buf[i + 1]])) / 65535.0
            } else {
                f32::from(buf[i]) / 255.0
            }
        };
        let plane = |c: usize| Grid2::from_fn([w, h], |x, y| sample(x, y, c));
        let channels = (0..colours).map(plane).collect::<Result<Vec<_>>>()?;
        let alpha = if alpha { Some(plane(colours)?) } else { None };
        Ok(Picture {
            channels,
            alpha,
            bits,
        })
    }

    /// Writes the picture as a PNG of its colour type and depth, each value clamped to
    /// `[0, 1]` and rounded.
    ///
    /// Errors, before the file is touched: other than 1 or 3 colour channels, planes of
    /// different sizes, a depth other than 8 or 16 bits ([`Error::InvalidArgument`]).
    pub fn write_png(&self, path: &Path) -> Result<()> {
        let [w, h] = self.dims();
        if self.bits != 8 && self.bits != 16 {
            return Err(Error::InvalidArgument(format!(
                "a picture has 8 or 16 bits per sample, not {}",
                self.bits
            )));
        }
        let planes = self.channels.iter().chain(self.alpha.as_ref());
        if let Some(p) = planes.into_iter().find(|p| p.dims() != [w, h]) {
            return Err(Error::InvalidArgument(format!(
                "a picture's planes have one size: {}x{} and {}x{}",
                w,
                h,
                p.dims()[0],
                p.dims()[1]
            )));
        }
        let color = match (self.channels.len(), self.alpha.is_some()) {
            (1, false) => png::ColorType::Grayscale,
            (1, true) => png::ColorType::GrayscaleAlpha,
            (3, false) => png::ColorType::Rgb,
            (3, true) => png::ColorType::Rgba,
            (n, _) => {
                return Err(Error::InvalidArgument(format!(
                    "a picture has 1 or 3 colour channels, not {n}"
                )))
            }
        };
        let planes: Vec<&Grid2<f32>> = self.channels.iter().chain(self.alpha.as_ref()).collect();
        let max = if self.bits == 16 { 65535.0 } else { 255.0 };
        // Reserved fallibly: a picture that fits in memory as f32 planes may still leave no
        // room for its bytes, and that is an error to report, not an abort.
        let size = w * h * planes.len() * usize::from(self.bits / 8);
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| {
            let reason = format!(
                "the picture's {} of pixel bytes cannot be allocated beside its planes",
                crate::error::format_bytes(size as u64)
            );
            Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::OutOfMemory, reason),
            )
        })?;
        for y in 0..h {
            for x in 0..w {
                for p in &planes {
                    let v = (p.get(x, y).clamp(0.0, 1.0) * max).round() as u16;
                    if self.bits == 16 {
                        bytes.extend_from_slice(&v.to_be_bytes());
                    } else {
                        bytes.push(v as u8);
                    }
                }
            }
        }
        super::write_whole(path, |out| {
            let mut encoder = png::Encoder::new(out, w as u32, h as u32);
            encoder.set_color(color);
            encoder.set_depth(if self.bits == 16 {
                png::BitDepth::Sixteen
            } else {
                png::BitDepth::Eight
            });
            let fail = |e: png::EncodingError| Error::io(path, std::io::Error::other(e));
            let mut writer = encoder.write_header().map_err(fail)?;
            writer.write_image_data(&bytes).map_err(fail)?;
            writer.finish().map_err(fail)
        })
    }
}

/// Bytes the PNG decoder may allocate for `path`: its default allowance, and for a picture
/// whose rows outgrow it, room for four rows of the declared width in the decoded pixel size
/// (its channels, an alpha channel a transparency chunk may add, and its depth), when the
/// whole picture and those rows fit in memory; otherwise the default alone, and the decoder
/// refuses a picture too wide for it. The colour-profile and text chunks, the only ones the
/// decoder inflates before the image data, are skipped (see [`Picture::read_png`]), so the
/// allowance serves the rows alone. A file too short for a header gets the default (the
/// decoder then says what is wrong with it).
fn decoder_limit(path: &Path) -> usize {
    let default = png::Limits::default().bytes;
    let Some(Declared {
        width,
        height,
        pixel,
        ..
    }) = declared(path)
    else {
        return default;
    };
    let row = width.saturating_mul(pixel).saturating_add(1);
    let rows = row.saturating_mul(4);
    let whole = row.saturating_mul(height);
    let usable = crate::memory::available().map_or(u64::MAX, crate::memory::usable_host);
    match usize::try_from(rows) {
        Ok(r) if r > default && whole.saturating_add(rows) <= usable => default.saturating_add(r),
        _ => default,
    }
}

/// What a PNG file's header declares, read from its first bytes.
struct Declared {
    width: u64,
    height: u64,
    /// Channels after expansion (grey 1, RGB 3, palette RGB, grey + alpha 2, RGBA 4), with
    /// one more for a transparency chunk.
    channels: u64,
    /// Bytes of a decoded pixel: the channels times a 16-bit or smaller sample's bytes.
    pixel: u64,
}

/// The header of the PNG file `path`; `None` for a file too short for one or not a PNG.
fn declared(path: &Path) -> Option<Declared> {
    use std::io::Read;
    let mut head = [0u8; 26];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    if read.is_err() || &head[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let channels: u64 = match head[25] {
        0 => 2,
        2 | 3 => 4,
        4 => 2,
        _ => 4,
    };
    Some(Declared {
        width: u64::from(be(16)),
        height: u64::from(be(20)),
        channels,
        pixel: channels * if head[24] == 16 { 2 } else { 1 },
    })
}

/// The memory error for the PNG file `path` whose declared picture does not fit (see
/// [`check_memory`]); `None` when it fits or its header cannot be read.
fn too_large(path: &Path) -> Option<Error> {
    let d = declared(path)?;
    let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    let decoded = d.width.saturating_mul(d.pixel).saturating_mul(d.height);
    let dims = [size(d.width), size(d.height)];
    check_memory(path, dims, d.channels, size(decoded)).err()
}

/// Checks that a `w × h` picture with `planes` channel planes (alpha included) fits in the
/// memory available: one `f32` plane per channel besides the `decoded` bytes of the decoder's
/// output, so a header claiming 100000×100000 pixels is refused before anything is decoded.
fn check_memory(path: &Path, [w, h]: [usize; 2], planes: u64, decoded: usize) -> Result<()> {
    let need = crate::memory::Footprint::grids(crate::DType::F32, planes)
        .plus(decoded as u64)
        .bytes([w, h, 1]);
    let available = crate::memory::available();
    let usable = available.map_or(u64::MAX, crate::memory::usable_host);
    if need.is_some_and(|need| need <= usable) {
        return Ok(());
    }
    let need = need.map_or("more than 2⁶⁴ bytes".into(), crate::error::format_bytes);
    let have = available.map_or("the memory available is unknown".into(), |a| {
        format!("{} are available", crate::error::format_bytes(a))
    });
    Err(Error::InvalidArgument(format!(
        "{}: the picture is {w}x{h} pixels; reading it takes {planes} f32 plane(s) and the \
         decoded rows, {need} of memory, and {have} (a run may take {:.0}%): too large to read \
         here",
        path.display(),
        crate::memory::USABLE_SHARE * 100.0
    )))
}

/// The PNG decoder's message with each chunk type it spells out in full (`ChunkType { type:
/// IHDR, critical: true, .. }`) written as its name (`IHDR`).
fn plain_chunk_names(text: &str) -> String {
    const OPEN: &str = "ChunkType {";
    let (mut out, mut rest) = (String::new(), text);
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + OPEN.len()..];
        let Some(end) = tail.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let inner = &tail[..end];
        let first = inner.split(',').next().unwrap_or(inner).trim();
        out.push_str(first.strip_prefix("type:").map_or(first, str::trim));
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_colour_type_round_trips() {
        let dir = std::env::temp_dir().join(format!("stencil35d-picture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (colours, alpha, bits) in [(1, false, 8), (1, true, 16), (3, false, 8), (3, true, 16)] {
            let plane = |c: usize| {
                Grid2::from_fn([5, 3], |x, y| ((x + 2 * y + c) % 7) as f32 / 6.0).unwrap()
            };
            let pic = Picture {
                channels: (0..colours).map(plane).collect(),
                alpha: alpha.then(|| plane(9)),
                bits,
            };
            let path = dir.join(format!("p{colours}{alpha}{bits}.png"));
            pic.write_png(&path).unwrap();
            let back = Picture::read_png(&path).unwrap();
            assert_eq!(
                (back.channels.len(), back.alpha.is_some(), back.bits),
                (colours, alpha, bits)
            );
            let quantum = if bits == 16 {
                1.0 / 65535.0
            } else {
                1.0 / 255.0
            };
            for (a, b) in back
                .channels
                .iter()
                .chain(&back.alpha)
                .zip(pic.channels.iter().chain(&pic.alpha))
            {
                let worst = a
                    .to_vec()
                    .iter()
                    .zip(b.to_vec())
                    .map(|(p, q)| (p - q).abs())
                    .fold(0.0, f32::max);
                assert!(worst <= quantum, "{worst}");
            }
        }
        assert!(Picture::read_png(&dir.join("missing.png")).is_err());
        std::fs::write(dir.join("junk.png"), b"not a png").unwrap();
        assert!(Picture::read_png(&dir.join("junk.png")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A row longer than the decoder's default allowance (64 MiB) reads when the memory
    /// holds it: 70,000,000 grey pixels, one row.
    #[test]
    fn a_picture_wider_than_the_decoders_default_reads() {
        let dir = std::env::temp_dir().join(format!("stencil35d-wide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let w = 70_000_000;
        assert!(w > png::Limits::default().bytes);
        let pic = Picture {
            channels: vec![Grid2::from_fn([w, 1], |x, _| (x % 2) as f32).unwrap()],
            alpha: None,
            bits: 8,
        };
        let path = dir.join("wide.png");
        pic.write_png(&path).unwrap();
        drop(pic);
        let back = Picture::read_png(&path).unwrap();
        assert_eq!(back.dims(), [w, 1]);
        let row = back.channels[0].to_vec();
        assert_eq!((row[0], row[1], row[w - 1]), (0.0, 1.0, 1.0));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_decoders_chunk_types_are_named_plainly() {
        let text = "CRC error: expected 0x1 have 0x2 while decoding ChunkType { type: IHDR, \
                    critical: true, private: false, reserved: false, safecopy: false } chunk.";
        assert_eq!(
            plain_chunk_names(text),
            "CRC error: expected 0x1 have 0x2 while decoding IHDR chunk."
        );
        assert_eq!(plain_chunk_names("no chunk here"), "no chunk here");
        assert_eq!(
            plain_chunk_names("cut ChunkType { type"),
            "cut ChunkType { type"
        );
    }
}
