//! NumPy `.npy` files: arrays of any rank that `numpy.load` opens directly. Written as format
//! version 1.0 (2.0 only when the header does not fit 1.0's 16-bit length), C order,
//! little-endian `f4` or `f8`; read from versions 1.0 and 2.0 in C order, as 32- or 64-bit
//! floats or integers of either byte order.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use crate::files::write_whole;
use crate::grid::element_count;
use crate::{DType, Error, Real, Result};

/// The six bytes every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// The whole header (magic, version, length and dictionary) is padded to a multiple of this.
const ALIGN: usize = 64;

/// Writes `data`, an array of `shape` in C order (last index fastest), to `path` as a `.npy`
/// file of `T`'s precision (`<f4` or `<f8`). An empty `shape` writes a 0-d array of one value.
///
/// Errors: `data` does not hold the product of `shape` values, I/O.
pub fn write_npy<T: Real>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    let count = element_count(shape).filter(|&n| n == data.len());
    if count.is_none() {
        return Err(Error::InvalidArgument(format!(
            "an NPY array of shape {} needs as many values as the shape's product, got {}",
            shape_text(shape),
            data.len()
        )));
    }
    let descr = match T::DTYPE {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let header = header_bytes(descr, shape);
    let io = |e| Error::io(path, e);
    write_whole(path, |out| {
        out.write_all(&header).map_err(io)?;
        for x in data {
            match T::DTYPE {
                DType::F32 => out.write_all(&x.to_f32().unwrap_or(f32::NAN).to_le_bytes()),
                DType::F64 => out.write_all(&x.to_f64().unwrap_or(f64::NAN).to_le_bytes()),
            }
            .map_err(io)?;
        }
        Ok(())
    })
}

/// Reads the `.npy` file at `path`: its shape and its values as `f64`, in C order. Reads format
/// versions 1.0 and 2.0 holding `f4`, `f8`, `i4` or `i8` values, little- (`<`) or big-endian
/// (`>`); 64-bit integers beyond ±2⁵³ are rounded. The header and the file's length are checked
/// before any data is read, and no more than the shape's data is read.
///
/// Errors: I/O; not a regular file (a directory, device, pipe or socket); not an NPY file or a
/// malformed header; another version, a Fortran-order array, another dtype (each named in the
/// message); fewer or more data bytes than the shape needs (both counts named); values that
/// would take more memory than is available.
pub fn read_npy_f64(path: &Path) -> Result<(Vec<usize>, Vec<f64>)> {
    let mut npy = NpyInput::open(path)?;
    let count = npy.need / npy.size;
    // The values take 8 bytes each whatever the file's type: checked before they are taken.
    let bytes = (count as u64).saturating_mul(8);
    if let Some(free) = crate::memory::available() {
        if bytes > free {
            return Err(Error::InvalidArgument(format!(
                "{} holds {count} values, {bytes} bytes as f64, more than the {free} bytes of \
                 memory available",
                path.display()
            )));
        }
    }
    let mut values = Vec::with_capacity(count);
    // The data is decoded in blocks, so it is never held twice.
    let block_len = npy.size * count.clamp(1, 1 << 16);
    let mut block = vec![0u8; block_len];
    let mut left = npy.need;
    while left > 0 {
        let buf = &mut block[..left.min(block_len)];
        npy.input.read_exact(buf).map_err(|e| Error::io(path, e))?;
        values.extend(buf.chunks_exact(npy.size).map(npy.decode));
        left -= buf.len();
    }
    Ok((npy.header.shape, values))
}

/// The shape of the array in the `.npy` file at `path`, from its header alone (a caller can
/// check what the values will take before [`read_npy_f64`] reads them). The file is checked as
/// [`read_npy_f64`] checks it, its data bytes counted but not read.
///
/// Errors: those of [`read_npy_f64`] but errors reading the data.
pub fn read_npy_shape(path: &Path) -> Result<Vec<usize>> {
    NpyInput::open(path).map(|npy| npy.header.shape)
}

/// An opened `.npy` file whose header has been read and checked against the file's length:
/// what remains in `input` is exactly `need` data bytes of `size`-byte elements.
struct NpyInput {
    input: BufReader<File>,
    header: Header,
    size: usize,
    decode: Decode,
    need: usize,
}

impl NpyInput {
    /// Opens `path` and reads its header. Errors: as [`read_npy_f64`]'s, but for the data.
    fn open(path: &Path) -> Result<NpyInput> {
        let (file, len) = super::open_regular_file(path, "the NPY array")?;
        let bad = |msg: String| Error::InvalidArgument(format!("{}: {msg}", path.display()));
        let mut input = BufReader::new(file);
        let (text, start) = read_header(&mut input, len).map_err(bad)?;
        let header = parse_header(&text).map_err(bad)?;
        if header.fortran_order {
            return Err(bad(
                "the array is in Fortran order (fortran_order: True); save it in C order \
                 (numpy.ascontiguousarray) to read it here"
                    .into(),
            ));
        }
        let (size, decode) = decoder(&header.descr).map_err(bad)?;
        let held = len - start;
        let need = element_count(&header.shape).and_then(|n| n.checked_mul(size));
        let Some(need) = need.filter(|&need| need as u64 == held) else {
            let extra = match need {
                Some(need) if (need as u64) < held => {
                    format!(" ({} bytes after the array)", held - need as u64)
                }
                _ => String::new(),
            };
            return Err(bad(format!(
                "shape {} of '{}' needs {} data bytes, the file holds {held}{extra}",
                shape_text(&header.shape),
                header.descr,
                need.map_or("more than 2⁶⁴".into(), |n| n.to_string()),
            )));
        };
        Ok(NpyInput {
            input,
            header,
            size,
            decode,
            need,
        })
    }
}

/// `shape` as a Python tuple: `()`, `(5,)`, `(2, 3)`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Magic, version, header length and the header dictionary, padded with spaces and ended with
/// a newline so that the data starts at a multiple of 64 bytes, as numpy writes it.
fn header_bytes(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_text(shape)
    );
    let padded = |preamble: usize| (preamble + dict.len() + 1).next_multiple_of(ALIGN) - preamble;
    let mut out = MAGIC.to_vec();
    let len = match u16::try_from(padded(10)) {
        Ok(len) => {
            out.extend_from_slice(&[1, 0]);
            out.extend_from_slice(&len.to_le_bytes());
            usize::from(len)
        }
        Err(_) => {
            let len = padded(12);
            out.extend_from_slice(&[2, 0]);
            out.extend_from_slice(&(len as u32).to_le_bytes());
            len
        }
    };
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + len - dict.len() - 1, b' ');
    out.push(b'\n');
    out
}

/// The longest header read: numpy writes a few hundred bytes, and refuses to read headers
/// over 10,000 bytes unless told to.
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Reads the preamble and the header text of a `.npy` file of `len` bytes from `input`;
/// returns the text and the offset of the data that follows it.
fn read_header(input: &mut impl Read, len: u64) -> std::result::Result<(String, u64), String> {
    let not_npy = || "not an NPY file (it does not start with \\x93NUMPY)".to_string();
    let mut pre = [0u8; 12];
    let io = |e: std::io::Error| format!("reading the header failed ({e})");
    let first = len.min(10) as usize;
    input.read_exact(&mut pre[..first]).map_err(io)?;
    // A file cut inside its preamble is named as such when it holds the whole magic.
    if first < MAGIC.len() || pre[..MAGIC.len()] != *MAGIC {
        return Err(not_npy());
    }
    if first < 10 {
        return Err(format!("the file ends inside its header ({len} bytes)"));
    }
    let (size, start): (usize, u64) = match (pre[6], pre[7]) {
        (1, 0) => (u16::from_le_bytes([pre[8], pre[9]]) as usize, 10),
        (2, 0) if len >= 12 => {
            input.read_exact(&mut pre[10..]).map_err(io)?;
            let size = u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]);
            (size as usize, 12)
        }
        (2, 0) => return Err("the file ends inside its header".into()),
        (major, minor) => {
            return Err(format!(
                "NPY format version {major}.{minor}; versions 1.0 and 2.0 are read"
            ))
        }
    };
    let end = start + size as u64;
    if end > len {
        return Err(format!(
            "the header claims {size} bytes, the file is shorter"
        ));
    }
    if size > MAX_HEADER_BYTES {
        return Err(format!(
            "the header claims {size} bytes; headers of at most {MAX_HEADER_BYTES} bytes are read"
        ));
    }
    let mut text = vec![0u8; size];
    input.read_exact(&mut text).map_err(io)?;
    let text = String::from_utf8(text).map_err(|_| "the header is not ASCII text".to_string())?;
    Ok((text, end))
}

/// The three entries of an NPY header.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parses the header dictionary, e.g. `{'descr': '<f8', 'fortran_order': False, 'shape':
/// (2, 3), }`.
fn parse_header(text: &str) -> Result<Header, String> {
    let mut c = Cursor {
        s: text.as_bytes(),
        i: 0,
    };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    c.expect(b'{')?;
    while !c.eat(b'}') {
        let key = c.string()?;
        c.expect(b':')?;
        let twice = format!("the key '{key}' appears twice in the header");
        match key.as_str() {
            "descr" if c.peek() == Some(b'[') => {
                return Err("a structured dtype (descr is a list); plain arrays are read".into())
            }
            "descr" if descr.is_some() => return Err(twice),
            "fortran_order" if fortran_order.is_some() => return Err(twice),
            "shape" if shape.is_some() => return Err(twice),
            "descr" => descr = Some(c.string()?),
            "fortran_order" => fortran_order = Some(c.boolean()?),
            "shape" => shape = Some(c.tuple()?),
            other => return Err(format!("unexpected key '{other}' in the header")),
        }
        if !c.eat(b',') {
            c.expect(b'}')?;
            break;
        }
    }
    // Only the padding (spaces and the final newline) may follow the dictionary, as NumPy's
    // own reader requires.
    if let Some(b) = c.peek() {
        return Err(format!(
            "unexpected '{}' after the header's dictionary",
            char::from(b).escape_default()
        ));
    }
    let missing = |key: &str| format!("the header has no '{key}'");
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// A position in a header's text, skipping white space before each token.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    /// The next byte that is not white space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
        self.s.get(self.i).copied()
    }

    /// Consumes `b` if it comes next.
    fn eat(&mut self, b: u8) -> bool {
        let next = self.peek() == Some(b);
        self.i += usize::from(next);
        next
    }

    /// Consumes `b` or fails.
    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!(
                "malformed header: expected '{}' at byte {}",
                b as char, self.i
            ))
        }
    }

    /// A string in single or double quotes (no escapes: numpy's keys and dtypes have none).
    fn string(&mut self) -> Result<String, String> {
        let quote = self.peek().filter(|q| *q == b'\'' || *q == b'"');
        let quote =
            quote.ok_or_else(|| format!("malformed header: no string at byte {}", self.i))?;
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&b| b == quote);
        let len = len.ok_or_else(|| "malformed header: an unterminated string".to_string())?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    /// `True` or `False`.
    fn boolean(&mut self) -> Result<bool, String> {
        self.peek();
        for (word, value) in [("True", true), ("False", false)] {
            if self.s[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                return Ok(value);
            }
        }
        Err(format!(
            "malformed header: expected True or False at byte {}",
            self.i
        ))
    }

    /// A tuple of non-negative integers: `()`, `(5,)`, `(2, 3)`.
    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        while !self.eat(b')') {
            self.peek();
            let digits = self.s[self.i..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let text = std::str::from_utf8(&self.s[self.i..self.i + digits]).unwrap_or("");
            let dim = text.parse().map_err(|_| {
                format!("malformed header: expected a dimension at byte {}", self.i)
            })?;
            dims.push(dim);
            self.i += digits;
            if !self.eat(b',') {
                self.expect(b')')?;
                break;
            }
        }
        Ok(dims)
    }
}

/// Turns one element's bytes into an `f64`.
type Decode = fn(&[u8]) -> f64;

/// The element size and decoder of the dtype `descr`.
fn decoder(descr: &str) -> Result<(usize, Decode), String> {
    fn bytes<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0; N];
        a.copy_from_slice(b);
        a
    }
    let decode: (usize, Decode) = match descr {
        "<f4" => (4, |b| f32::from_le_bytes(bytes(b)) as f64),
        ">f4" => (4, |b| f32::from_be_bytes(bytes(b)) as f64),
        "<f8" => (8, |b| f64::from_le_bytes(bytes(b))),
        ">f8" => (8, |b| f64::from_be_bytes(bytes(b))),
        "<i4" => (4, |b| i32::from_le_bytes(bytes(b)) as f64),
        ">i4" => (4, |b| i32::from_be_bytes(bytes(b)) as f64),
        "<i8" => (8, |b| i64::from_le_bytes(bytes(b)) as f64),
        ">i8" => (8, |b| i64::from_be_bytes(bytes(b)) as f64),
        other => {
            return Err(format!(
                "dtype '{other}' is not read; the dtypes read are <f4 <f8 <i4 <i8 and their \
                 big-endian forms >f4 >f8 >i4 >i8"
            ))
        }
    };
    Ok(decode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("stencil35d-npy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A file made of a version-`major` preamble, `dict` padded to 64 bytes, and `data`.
    fn hand_built(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
        let preamble = if major == 1 { 10 } else { 12 };
        let len = (preamble + dict.len() + 1).next_multiple_of(64) - preamble;
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[major, 0]);
        if major == 1 {
            out.extend_from_slice(&(len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(preamble + len - 1, b' ');
        out.push(b'\n');
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn round_trip_3d_f32_and_f64() {
        let dir = scratch("round-trip");
        let shape = [3, 4, 5];
        let f64s: Vec<f64> = (0..60).map(|i| (i as f64 - 17.0) * 0.37 + 1e-9).collect();
        let f32s: Vec<f32> = f64s.iter().map(|&v| v as f32).collect();
        write_npy(&dir.join("a.npy"), &shape, &f64s).unwrap();
        write_npy(&dir.join("b.npy"), &shape, &f32s).unwrap();
        let (s64, v64) = read_npy_f64(&dir.join("a.npy")).unwrap();
        let (s32, v32) = read_npy_f64(&dir.join("b.npy")).unwrap();
        assert_eq!((s64.as_slice(), s32.as_slice()), (&shape[..], &shape[..]));
        assert_eq!(v64, f64s);
        assert!(v32.iter().zip(&f32s).all(|(a, &b)| *a == b as f64));
        for (name, descr, size) in [("a.npy", "<f8", 8), ("b.npy", "<f4", 4)] {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
            assert_eq!((10 + len) % 64, 0);
            assert_eq!(bytes[10 + len - 1], b'\n');
            assert_eq!(bytes.len(), 10 + len + 60 * size);
            let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
            assert_eq!(
                header.trim_end(),
                format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (3, 4, 5), }}")
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn one_and_zero_dimensional_shapes() {
        let dir = scratch("shapes");
        let path = dir.join("v.npy");
        write_npy(&path, &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(text.contains("'shape': (4,), }"), "{text}");
        assert_eq!(
            read_npy_f64(&path).unwrap(),
            (vec![4], vec![1.0, 2.0, 3.0, 4.0])
        );
        write_npy(&path, &[], &[2.5f64]).unwrap();
        assert_eq!(read_npy_f64(&path).unwrap(), (vec![], vec![2.5]));
        assert!(write_npy(&path, &[2, 3], &[0.0f64; 5]).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn hand_built_files_of_every_dtype_and_both_versions() {
        let dir = scratch("hand-built");
        let path = dir.join("h.npy");
        let cases: [(u8, &str, Vec<u8>); 5] = [
            (
                1,
                "<i4",
                [-7i32, 300].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                2,
                ">i4",
                [-7i32, 300].iter().flat_map(|v| v.to_be_bytes()).collect(),
            ),
            (
                1,
                ">i8",
                [-7i64, 300].iter().flat_map(|v| v.to_be_bytes()).collect(),
            ),
            (
                2,
                ">f8",
                [-7.0f64, 300.0]
                    .iter()
                    .flat_map(|v| v.to_be_bytes())
                    .collect(),
            ),
            (
                1,
                ">f4",
                [-7.0f32, 300.0]
                    .iter()
                    .flat_map(|v| v.to_be_bytes())
                    .collect(),
            ),
        ];
        for (major, descr, data) in cases {
            let dict = format!("{{\"shape\":(1,2),\"fortran_order\":False,\"descr\":\"{descr}\"}}");
            std::fs::write(&path, hand_built(major, &dict, &data)).unwrap();
            let read = read_npy_f64(&path).unwrap_or_else(|e| panic!("{descr} v{major}: {e}"));
            assert_eq!(read, (vec![1, 2], vec![-7.0, 300.0]), "{descr} v{major}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn refusals_name_what_was_found() {
        let dir = scratch("refusals");
        let path = dir.join("r.npy");
        let refused = |bytes: Vec<u8>| {
            std::fs::write(&path, bytes).unwrap();
            read_npy_f64(&path).unwrap_err().to_string()
        };
        let dict = |descr: &str, fortran: &str| {
            format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': (2,), }}")
        };
        let err = refused(hand_built(1, &dict("<f8", "True"), &[0; 16]));
        assert!(err.contains("Fortran order"), "{err}");
        for descr in ["<c16", "|u1", "<f2", "<u4", "=f8"] {
            let err = refused(hand_built(1, &dict(descr, "False"), &[0; 32]));
            assert!(err.contains(&format!("dtype '{descr}'")), "{err}");
        }
        let err = refused(hand_built(1, &dict("<f8", "False"), &[0; 15]));
        assert!(
            err.contains("needs 16 data bytes, the file holds 15"),
            "{err}"
        );
        let err = refused(hand_built(3, &dict("<f8", "False"), &[0; 16]));
        assert!(err.contains("version 3.0"), "{err}");
        let err = refused(b"P6\n2 2\n255\n".to_vec());
        assert!(err.contains("not an NPY file"), "{err}");
        let structured = "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }";
        let err = refused(hand_built(1, structured, &[0; 16]));
        assert!(err.contains("structured dtype"), "{err}");
        let err = refused(hand_built(1, "{'descr': '<f8', 'shape': (2,), }", &[0; 16]));
        assert!(err.contains("no 'fortran_order'"), "{err}");
        let err = refused(hand_built(
            1,
            "{'descr': '<f8', 'shape': (2, x), }",
            &[0; 16],
        ));
        assert!(err.contains("expected a dimension"), "{err}");
        let err = refused(hand_built(1, &dict("<f8", "False"), &[0; 17]));
        assert!(
            err.contains("needs 16 data bytes, the file holds 17 (1 bytes after the array)"),
            "{err}"
        );
        let missing = dir.join("missing.npy");
        assert!(matches!(read_npy_f64(&missing), Err(Error::Io { .. })));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A directory or a device is refused from its metadata, before it is opened: reading
    /// `/dev/zero` would never end, and opening a pipe waits for a writer.
    #[test]
    fn what_is_not_a_regular_file_is_refused_before_it_is_read() {
        let dir = scratch("not-regular");
        let err = read_npy_f64(&dir).unwrap_err().to_string();
        assert!(
            err.contains("regular file") && err.contains("a directory"),
            "{err}"
        );
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            for err in [
                read_npy_f64(zero).unwrap_err(),
                read_npy_shape(zero).unwrap_err(),
            ] {
                let err = err.to_string();
                assert!(err.contains("a device, pipe or socket"), "{err}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A header is one dictionary of the three keys, each once, and its padding: text after
    /// the dictionary (which NumPy's reader refuses) and a repeated key (which it would take,
    /// keeping the last) are refused.
    #[test]
    fn a_header_with_more_than_its_dictionary_is_refused() {
        let good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n";
        assert_eq!(parse_header(good).unwrap().shape, [2, 3]);
        let trailing = good.replace("}  ", "} garbage");
        let err = parse_header(&trailing).unwrap_err();
        assert!(
            err.contains("unexpected 'g' after the header's dictionary"),
            "{err}"
        );
        let twice = good.replace("'shape'", "'shape': (4,), 'shape'");
        let err = parse_header(&twice).unwrap_err();
        assert!(err.contains("the key 'shape' appears twice"), "{err}");
        // Cut inside the preamble: after the magic, the header's end is missing; before it,
        // the file is no NPY file at all.
        let whole = b"\x93NUMPY\x01\x00\x46\x00";
        for (cut, text) in [
            (8, "ends inside its header (8 bytes)"),
            (4, "not an NPY file"),
        ] {
            let err = read_header(&mut &whole[..cut], cut as u64).unwrap_err();
            assert!(err.contains(text), "{cut}: {err}");
        }
    }

    /// The shape comes from the header alone; the data's length is checked against it.
    #[test]
    fn the_shape_is_read_from_the_header() {
        let dir = scratch("shape-only");
        let path = dir.join("s.npy");
        write_npy(&path, &[2, 3, 4], &[1.0f32; 24]).unwrap();
        assert_eq!(read_npy_shape(&path).unwrap(), [2, 3, 4]);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 4);
        std::fs::write(&path, &bytes).unwrap();
        let err = read_npy_shape(&path).unwrap_err().to_string();
        assert!(
            err.contains("needs 96 data bytes, the file holds 92"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn numpy_reads_and_writes_what_this_module_reads_and_writes() {
        let python = std::process::Command::new("python3")
            .args(["-c", "import numpy"])
            .output();
        if !python.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: python3 with numpy is not available");
            return;
        }
        let dir = scratch("numpy");
        let ours = dir.join("ours.npy");
        let theirs = dir.join("theirs.npy");
        let values: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        write_npy(&ours, &[2, 3, 4], &values).unwrap();
        let script = format!(
            "import numpy as np\n\
             a = np.load({ours:?})\n\
             assert a.dtype == np.float32 and a.shape == (2, 3, 4), (a.dtype, a.shape)\n\
             assert (a == np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3).all()\n\
             np.save({theirs:?}, (a.astype('>f8') * 2)[:, 1:, :].astype('>f8'))\n"
        );
        let run = std::process::Command::new("python3")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let (shape, back) = read_npy_f64(&theirs).unwrap();
        assert_eq!(shape, [2, 2, 4]);
        let expected: Vec<f64> = (0..24)
            .filter(|i| (i / 4) % 3 != 0)
            .map(|i| 2.0 * (i as f64 * 0.5 - 3.0))
            .collect();
        assert_eq!(back, expected);
        std::fs::remove_dir_all(&dir).ok();
    }
}
