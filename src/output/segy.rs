//! SEG-Y revision 1 files of one shot record, which seismic processing packages (Seismic Unix,
//! Madagascar, segyio, OpendTect) open directly: a 3200-byte EBCDIC textual header, a 400-byte
//! big-endian binary header and, per receiver, a 240-byte trace header followed by the samples
//! as big-endian IEEE 32-bit floats (format code 5). Coordinates are in metres with `z` the
//! depth below the datum (positive downward); byte positions in this module are the
//! standard's, counted from 1.

use std::io::Write;
use std::path::Path;

use crate::files::write_whole;
use crate::{Error, Result};

/// One receiver's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct SegyTrace {
    /// The receiver's position `[x, y, z]` in metres, `z` the depth below the datum.
    pub receiver: [f64; 3],
    /// The samples, the first at time 0, spaced by the shot's sample interval.
    pub data: Vec<f32>,
}

/// A shot record: one source and the traces its receivers recorded, all of the same length.
#[derive(Clone, Debug, PartialEq)]
pub struct SegyShot {
    /// The source's position `[x, y, z]` in metres, `z` the depth below the datum.
    pub source: [f64; 3],
    /// Time between samples in seconds; SEG-Y stores it as a whole number of microseconds
    /// (1 to [`SEGY_MAX_16`]).
    pub sample_interval_s: f64,
    /// The traces, in the order they are written (trace numbers 1, 2, ...).
    pub traces: Vec<SegyTrace>,
    /// Free text for the textual header, after the lines that describe the shot: split into
    /// lines of 76 characters, non-ASCII characters written as `?`, cut after line 38.
    pub text: String,
}

/// The largest count or interval a SEG-Y revision 1 header holds in its 2-byte fields (traces
/// per ensemble, samples per trace, the sample interval in microseconds): the standard defines
/// every header integer as two's complement, so readers take 32768 and above as negative.
pub const SEGY_MAX_16: usize = 32_767;

/// Bytes of the textual header, the binary header and a trace header.
const TEXT_BYTES: usize = 3200;
const BINARY_BYTES: usize = 400;
const TRACE_HEADER_BYTES: usize = 240;

/// Coordinate and elevation scalars from the finest to the coarsest (negative: the stored
/// integer is divided by its magnitude; positive: multiplied by it).
const SCALARS: [i16; 8] = [-1000, -100, -10, 1, 10, 100, 1000, 10000];

/// What the headers need from a checked shot.
struct Layout {
    traces: u16,
    samples: u16,
    interval_us: u16,
    coordinate_scalar: i16,
    elevation_scalar: i16,
}

/// Writes `shot` to `path` as a SEG-Y revision 1 file: one ensemble (field record 1), trace
/// identification code 1 (seismic data), offsets as horizontal source–receiver distances in
/// whole metres (negative for receivers at smaller x), coordinates and depths to the finest of
/// millimetres, centimetres, ... that fits the 32-bit fields.
///
/// Errors: no traces or more than [`SEGY_MAX_16`], traces of different lengths, no samples or
/// more than [`SEGY_MAX_16`], a sample interval that is not a whole number of microseconds
/// from 1 to [`SEGY_MAX_16`], non-finite coordinates or coordinates too large for the fields,
/// I/O.
pub fn write_segy(path: &Path, shot: &SegyShot) -> Result<()> {
    let layout = check(shot)?;
    let io = |e| Error::io(path, e);
    write_whole(path, |out| {
        out.write_all(&textual_header(shot, &layout)).map_err(io)?;
        out.write_all(&binary_header(&layout)).map_err(io)?;
        for (i, trace) in shot.traces.iter().enumerate() {
            let header = trace_header(shot.source, trace.receiver, i, &layout);
            out.write_all(&header).map_err(io)?;
            for s in &trace.data {
                out.write_all(&s.to_be_bytes()).map_err(io)?;
            }
        }
        Ok(())
    })
}

/// An invalid-argument error about a SEG-Y shot.
fn refuse(msg: String) -> Error {
    Error::InvalidArgument(format!("SEG-Y shot record: {msg}"))
}

/// Checks that `shot` fits SEG-Y's fields and chooses the scalars.
fn check(shot: &SegyShot) -> Result<Layout> {
    let n = shot.traces.len();
    let traces = signed_16(n).ok_or_else(|| {
        refuse(format!(
            "{n} traces; one file holds 1 to {SEGY_MAX_16} (write a larger shot as several files)"
        ))
    })?;
    let len = shot.traces[0].data.len();
    if let Some((i, t)) = shot
        .traces
        .iter()
        .enumerate()
        .find(|(_, t)| t.data.len() != len)
    {
        return Err(refuse(format!(
            "trace {} has {} samples, trace 1 has {len}; all traces need the same length",
            i + 1,
            t.data.len()
        )));
    }
    let samples = signed_16(len).ok_or_else(|| {
        refuse(format!(
            "{len} samples per trace; SEG-Y holds 1 to {SEGY_MAX_16} (resample or cut the traces)"
        ))
    })?;
    let interval_us = interval_us(shot.sample_interval_s)?;
    let receivers: Vec<[f64; 3]> = shot.traces.iter().map(|t| t.receiver).collect();
    let (coordinate_scalar, elevation_scalar) = position_scalars(shot.source, &receivers)?;
    Ok(Layout {
        traces,
        samples,
        interval_us,
        coordinate_scalar,
        elevation_scalar,
    })
}

/// Checks that a shot from `source` to `receivers` (metres) fits SEG-Y's position fields:
/// finite coordinates, offsets in whole metres and coordinates and depths at some scalar
/// within 32 bits. [`write_segy`] makes the same check; a program calls this one before
/// recording, so that a shot it cannot store is refused before it is computed.
pub fn check_segy_positions(source: [f64; 3], receivers: &[[f64; 3]]) -> Result<()> {
    position_scalars(source, receivers).map(drop)
}

/// The coordinate and elevation scalars of a shot's positions (see [`check_segy_positions`]).
fn position_scalars(source: [f64; 3], receivers: &[[f64; 3]]) -> Result<(i16, i16)> {
    let points = || std::iter::once(source).chain(receivers.iter().copied());
    if let Some(p) = points().find(|p| p.iter().any(|c| !c.is_finite())) {
        return Err(refuse(format!("a non-finite position {p:?}")));
    }
    let horizontal: Vec<f64> = points().flat_map(|p| [p[0], p[1]]).collect();
    let depths: Vec<f64> = points().map(|p| p[2]).collect();
    if let Some(r) = receivers.iter().find(|&&r| !fits(offset(source, r), 1)) {
        return Err(refuse(format!(
            "the offset of the receiver at {r:?} does not fit 32 bits in metres"
        )));
    }
    Ok((
        scalar_for(&horizontal, "x and y coordinates")?,
        scalar_for(&depths, "depths")?,
    ))
}

/// `n` as a 2-byte header count, if it is from 1 to [`SEGY_MAX_16`].
fn signed_16(n: usize) -> Option<u16> {
    (1..=SEGY_MAX_16).contains(&n).then_some(n as u16)
}

/// The sample interval `dt` seconds in microseconds, if a whole number from 1 to
/// [`SEGY_MAX_16`].
fn interval_us(dt: f64) -> Result<u16> {
    let us = dt * 1e6;
    let whole = us.round();
    if !(1.0..=SEGY_MAX_16 as f64).contains(&whole) {
        return Err(refuse(format!(
            "sample interval {dt} s is {us} µs; SEG-Y holds 1 to {SEGY_MAX_16} whole \
             microseconds"
        )));
    }
    if (us - whole).abs() > 1e-6 * whole {
        return Err(refuse(format!(
            "sample interval {dt} s is {us} µs, not a whole number of microseconds as SEG-Y \
             stores it; resample the traces to a whole number of microseconds"
        )));
    }
    Ok(whole as u16)
}

/// `v` metres as stored with `scalar`, before rounding.
fn stored(v: f64, scalar: i16) -> f64 {
    let factor = f64::from(scalar);
    if scalar < 0 {
        -v * factor
    } else {
        v / factor
    }
}

/// `v` metres as the integer stored with `scalar` (saturating; see [`fits`]).
fn scaled(v: f64, scalar: i16) -> i32 {
    stored(v, scalar).round() as i32
}

/// Whether `v` metres, stored with `scalar`, fits a 32-bit field.
fn fits(v: f64, scalar: i16) -> bool {
    stored(v, scalar).round().abs() <= f64::from(i32::MAX)
}

/// The finest scalar with which all `values` fit 32-bit fields.
fn scalar_for(values: &[f64], what: &str) -> Result<i16> {
    SCALARS
        .into_iter()
        .find(|&s| values.iter().all(|&v| fits(v, s)))
        .ok_or_else(|| {
            let largest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            refuse(format!(
                "{what} up to {largest} m do not fit 32-bit fields even at scalar 10000"
            ))
        })
}

/// The horizontal distance from `source` to `receiver`, negative for a receiver at smaller x
/// (at equal x, smaller y): the line is taken as shot towards +x.
fn offset(source: [f64; 3], receiver: [f64; 3]) -> f64 {
    let (dx, dy) = (receiver[0] - source[0], receiver[1] - source[1]);
    let distance = dx.hypot(dy);
    if dx < 0.0 || (dx == 0.0 && dy < 0.0) {
        -distance
    } else {
        distance
    }
}

/// Writes `v` big-endian at the standard's 1-based byte `position` of `block`.
fn put(block: &mut [u8], position: usize, v: &[u8]) {
    block[position - 1..position - 1 + v.len()].copy_from_slice(v);
}

/// The textual header: lines describing the shot, the free text, "C39 SEG Y REV1" and
/// "C40 END TEXTUAL HEADER", each 80 characters in EBCDIC.
fn textual_header(shot: &SegyShot, layout: &Layout) -> Vec<u8> {
    let [x, y, z] = shot.source;
    let mut lines = vec![
        "SEG-Y REV1 SHOT RECORD WRITTEN BY STENCIL35D".to_string(),
        format!("SOURCE X Y Z {x:.3} {y:.3} {z:.3} M, Z = DEPTH BELOW DATUM"),
        format!(
            "{} TRACES, {} SAMPLES PER TRACE, SAMPLE INTERVAL {} US",
            layout.traces, layout.samples, layout.interval_us
        ),
        "SAMPLES 4-BYTE IEEE FLOAT BIG-ENDIAN (FORMAT CODE 5), TIME 0 AT SHOT".into(),
        format!(
            "COORDINATES IN METRES, SCALAR {}; ELEVATIONS/DEPTHS SCALAR {}",
            layout.coordinate_scalar, layout.elevation_scalar
        ),
        "OFFSET (BYTES 37-40) HORIZONTAL, WHOLE METRES, NEGATIVE TOWARDS -X".into(),
    ];
    for line in shot.text.lines() {
        let chars: Vec<char> = line.chars().collect();
        lines.extend(chars.chunks(76).map(|c| c.iter().collect::<String>()));
        if chars.is_empty() {
            lines.push(String::new());
        }
    }
    lines.resize(38, String::new());
    lines.push("SEG Y REV1".into());
    lines.push("END TEXTUAL HEADER".into());
    let mut out = Vec::with_capacity(TEXT_BYTES);
    for (k, line) in lines.iter().enumerate() {
        let card = format!("C{:>2} {line:<76}", k + 1);
        out.extend(card.chars().take(80).map(ebcdic));
    }
    out
}

/// The binary file header.
fn binary_header(layout: &Layout) -> [u8; BINARY_BYTES] {
    let mut b = [0u8; BINARY_BYTES];
    let mut at = |position: usize, v: &[u8]| put(&mut b, position - TEXT_BYTES, v);
    at(3201, &1i32.to_be_bytes()); // job identification number
    at(3205, &1i32.to_be_bytes()); // line number
    at(3209, &1i32.to_be_bytes()); // reel number
    at(3213, &layout.traces.to_be_bytes()); // data traces per ensemble
    at(3217, &layout.interval_us.to_be_bytes()); // sample interval (µs)
    at(3219, &layout.interval_us.to_be_bytes()); // original sample interval
    at(3221, &layout.samples.to_be_bytes()); // samples per trace
    at(3223, &layout.samples.to_be_bytes()); // original samples per trace
    at(3225, &5i16.to_be_bytes()); // format code: 4-byte IEEE float
    at(3227, &layout.traces.to_be_bytes()); // ensemble fold
    at(3229, &1i16.to_be_bytes()); // trace sorting: as recorded
    at(3255, &1i16.to_be_bytes()); // measurement system: metres
    at(3501, &0x0100u16.to_be_bytes()); // SEG-Y revision 1.0
    at(3503, &1i16.to_be_bytes()); // fixed-length traces
    at(3505, &0i16.to_be_bytes()); // no extended textual headers
    b
}

/// The header of trace `i` (0-based) of a receiver at `receiver`.
fn trace_header(
    source: [f64; 3],
    receiver: [f64; 3],
    i: usize,
    layout: &Layout,
) -> [u8; TRACE_HEADER_BYTES] {
    let mut h = [0u8; TRACE_HEADER_BYTES];
    let number = (i + 1) as i32;
    let (xy, z) = (layout.coordinate_scalar, layout.elevation_scalar);
    let mut at = |position: usize, v: &[u8]| put(&mut h, position, v);
    at(1, &number.to_be_bytes()); // trace sequence number within line
    at(5, &number.to_be_bytes()); // trace sequence number within file
    at(9, &1i32.to_be_bytes()); // original field record number
    at(13, &number.to_be_bytes()); // trace number within the field record
    at(17, &1i32.to_be_bytes()); // energy source point number
    at(21, &1i32.to_be_bytes()); // ensemble number
    at(25, &number.to_be_bytes()); // trace number within the ensemble
    at(29, &1i16.to_be_bytes()); // trace identification code: seismic data
    at(31, &1i16.to_be_bytes()); // vertically summed traces
    at(33, &1i16.to_be_bytes()); // horizontally stacked traces
    at(35, &1i16.to_be_bytes()); // data use: production
    at(37, &scaled(offset(source, receiver), 1).to_be_bytes());
    at(41, &scaled(-receiver[2], z).to_be_bytes()); // receiver group elevation
    at(49, &scaled(source[2], z).to_be_bytes()); // source depth below surface
    at(69, &z.to_be_bytes()); // scalar of bytes 41-68
    at(71, &xy.to_be_bytes()); // scalar of bytes 73-88
    at(73, &scaled(source[0], xy).to_be_bytes());
    at(77, &scaled(source[1], xy).to_be_bytes());
    at(81, &scaled(receiver[0], xy).to_be_bytes());
    at(85, &scaled(receiver[1], xy).to_be_bytes());
    at(89, &1i16.to_be_bytes()); // coordinate units: length
    at(115, &layout.samples.to_be_bytes());
    at(117, &layout.interval_us.to_be_bytes());
    h
}

/// Printable ASCII (0x20 to 0x7E) in EBCDIC, code page 037.
const EBCDIC_037: [u8; 95] = [
    0x40, 0x5A, 0x7F, 0x7B, 0x5B, 0x6C, 0x50, 0x7D, 0x4D, 0x5D, 0x5C, 0x4E, 0x6B, 0x60, 0x4B, 0x61,
    0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, 0x7A, 0x5E, 0x4C, 0x7E, 0x6E, 0x6F,
    0x7C, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6,
    0xD7, 0xD8, 0xD9, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xBA, 0xE0, 0xBB, 0xB0, 0x6D,
    0x79, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96,
    0x97, 0x98, 0x99, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xC0, 0x4F, 0xD0, 0xA1,
];

/// `c` in EBCDIC: white space as a blank, other characters outside printable ASCII as `?`.
fn ebcdic(c: char) -> u8 {
    let c = if c.is_whitespace() { ' ' } else { c };
    let index = (c as u32).wrapping_sub(0x20) as usize;
    EBCDIC_037.get(index).copied().unwrap_or(0x6F)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("stencil35d-segy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A shot at x = 100 m, 10 m deep, with `n` receivers 12.5 m apart at 2 m depth recording
    /// `ns` samples 2 ms apart (trace r, sample s holds r + s/8).
    fn shot(n: usize, ns: usize) -> SegyShot {
        SegyShot {
            source: [100.0, 0.0, 10.0],
            sample_interval_s: 0.002,
            traces: (0..n)
                .map(|r| SegyTrace {
                    receiver: [12.5 * r as f64, 0.0, 2.0],
                    data: (0..ns).map(|s| r as f32 + s as f32 / 8.0).collect(),
                })
                .collect(),
            text: "MODEL: TWO-LAYER TEST\nVP 1500/2500 M/S".into(),
        }
    }

    fn be_i16(b: &[u8], position: usize) -> i16 {
        i16::from_be_bytes([b[position - 1], b[position]])
    }

    fn be_i32(b: &[u8], position: usize) -> i32 {
        i32::from_be_bytes(b[position - 1..position + 3].try_into().unwrap())
    }

    /// The textual header's 40 cards decoded from EBCDIC.
    fn cards(b: &[u8]) -> Vec<String> {
        let decode = |e: &u8| {
            let i = EBCDIC_037.iter().position(|x| x == e).unwrap();
            char::from(0x20 + i as u8)
        };
        b[..3200]
            .chunks(80)
            .map(|c| c.iter().map(decode).collect())
            .collect()
    }

    #[test]
    fn shot_record_reads_back_at_the_standard_byte_positions() {
        let dir = scratch("layout");
        let path = dir.join("shot.sgy");
        let (n, ns) = (4, 6);
        write_segy(&path, &shot(n, ns)).unwrap();
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len(), 3600 + n * (240 + 4 * ns));
        assert_eq!(b[0], 0xC3);
        let cards = cards(&b);
        assert_eq!(cards.len(), 40);
        assert!(
            cards[0].starts_with("C 1 SEG-Y REV1 SHOT RECORD"),
            "{}",
            cards[0]
        );
        assert!(
            cards[1].contains("SOURCE X Y Z 100.000 0.000 10.000 M"),
            "{}",
            cards[1]
        );
        assert!(cards[2].contains("4 TRACES, 6 SAMPLES PER TRACE, SAMPLE INTERVAL 2000 US"));
        assert!(cards.iter().any(|c| c.trim_end() == "C 8 VP 1500/2500 M/S"));
        assert_eq!(cards[38].trim_end(), "C39 SEG Y REV1");
        assert_eq!(cards[39].trim_end(), "C40 END TEXTUAL HEADER");
        assert_eq!(
            [3201, 3205, 3209].map(|p| be_i32(&b, p)),
            [1, 1, 1],
            "job, line and reel numbers"
        );
        let binary = [3213, 3217, 3221, 3225, 3227, 3255, 3501, 3503, 3505].map(|p| be_i16(&b, p));
        assert_eq!(binary, [4, 2000, 6, 5, 4, 1, 0x0100, 1, 0]);
        for r in 0..n {
            let t = &b[3600 + r * (240 + 4 * ns)..];
            let number = r as i32 + 1;
            assert_eq!(
                [1, 5, 9, 13].map(|p| be_i32(t, p)),
                [number, number, 1, number]
            );
            assert_eq!(be_i16(t, 29), 1);
            assert_eq!(
                be_i32(t, 37),
                (12.5 * r as f64 - 100.0).round() as i32,
                "offset"
            );
            assert_eq!(
                (be_i32(t, 41), be_i32(t, 49)),
                (-2000, 10000),
                "elevation, depth"
            );
            assert_eq!((be_i16(t, 69), be_i16(t, 71)), (-1000, -1000), "scalars");
            assert_eq!(
                [73, 77, 81, 85].map(|p| be_i32(t, p)),
                [100_000, 0, 12_500 * r as i32, 0]
            );
            assert_eq!(be_i16(t, 89), 1);
            assert_eq!((be_i16(t, 115), be_i16(t, 117)), (6, 2000));
            for s in 0..ns {
                let bytes = t[240 + 4 * s..244 + 4 * s].try_into().unwrap();
                assert_eq!(f32::from_be_bytes(bytes), r as f32 + s as f32 / 8.0);
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn ebcdic_is_code_page_037() {
        let pairs = [
            (' ', 0x40),
            ('C', 0xC3),
            ('0', 0xF0),
            ('9', 0xF9),
            ('a', 0x81),
            ('Z', 0xE9),
        ];
        for (c, e) in pairs {
            assert_eq!(ebcdic(c), e, "{c}");
        }
        assert_eq!((ebcdic('.'), ebcdic('-'), ebcdic('/')), (0x4B, 0x60, 0x61));
        assert_eq!(
            (ebcdic('é'), ebcdic('\t'), ebcdic('\u{7f}')),
            (0x6F, 0x40, 0x6F)
        );
        let mut sorted = EBCDIC_037.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 95, "one code per character");
    }

    #[test]
    fn scalars_coarsen_for_coordinates_that_need_it() {
        let dir = scratch("scalars");
        let path = dir.join("far.sgy");
        let mut far = shot(2, 3);
        far.source = [5.0e6, 3.0e8, 0.0];
        far.traces[1].receiver[2] = 2.5e7;
        write_segy(&path, &far).unwrap();
        let b = std::fs::read(&path).unwrap();
        let t = &b[3600 + 240 + 12..];
        assert_eq!((be_i16(t, 69), be_i16(t, 71)), (-10, 1), "scalars");
        assert_eq!((be_i32(t, 73), be_i32(t, 77)), (5_000_000, 300_000_000));
        assert_eq!(
            be_i32(t, 41),
            -250_000_000,
            "receiver elevation at scalar -10"
        );
        assert_eq!(scalar_for(&[2.0e13], "x").unwrap(), 10000);
        assert!(scalar_for(&[3.0e13], "x").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn refuses_what_segy_cannot_hold() {
        let dir = scratch("refusals");
        let path = dir.join("bad.sgy");
        let refused = |s: SegyShot| write_segy(&path, &s).unwrap_err().to_string();
        // Rev 1's 2-byte fields are signed: 32768 samples, traces or microseconds would read
        // back negative.
        let err = refused(shot(1, 32_768));
        assert!(err.contains("32768 samples per trace"), "{err}");
        let err = refused(shot(32_768, 1));
        assert!(err.contains("32768 traces"), "{err}");
        write_segy(&dir.join("longest.sgy"), &shot(1, 32_767)).unwrap();
        assert!(refused(shot(1, 0)).contains("0 samples per trace"));
        assert!(refused(shot(0, 4)).contains("0 traces"));
        for dt in [0.1, 0.032768, 0.0, -0.002, 1.0e-7, f64::NAN] {
            let err = refused(SegyShot {
                sample_interval_s: dt,
                ..shot(2, 4)
            });
            assert!(err.contains("1 to 32767 whole microseconds"), "{dt}: {err}");
        }
        let err = refused(SegyShot {
            sample_interval_s: 0.0012345,
            ..shot(2, 4)
        });
        assert!(err.contains("not a whole number of microseconds"), "{err}");
        let mut ragged = shot(3, 4);
        ragged.traces[2].data.pop();
        let err = refused(ragged);
        assert!(
            err.contains("trace 3 has 3 samples, trace 1 has 4"),
            "{err}"
        );
        let mut lost = shot(2, 4);
        lost.traces[1].receiver[0] = f64::INFINITY;
        assert!(refused(lost).contains("non-finite position"));
        assert!(write_segy(&dir.join("no-such-dir/x.sgy"), &shot(1, 1)).is_err());
        assert!(!path.exists(), "nothing written for a refused shot");
        std::fs::remove_dir_all(&dir).ok();
    }
}
