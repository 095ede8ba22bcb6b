//! Checkpoints: the whole state of a [`Lattice`] in one file, restored bit-exactly, so a long
//! run can be stopped and resumed without changing its result.
//!
//! # File format (version 2)
//!
//! ```text
//! STENCIL35D-LBM\n                       magic line (15 bytes)
//! {"version":2, ...}\n                   header: one line of JSON (fields below)
//! fnv1a64 0123456789abcdef\n             hash line: 16 hex digits
//! <payload>                              raw bytes, exactly header.payload_bytes long
//! ```
//!
//! Header fields: `version` (2), `scenario` and `geometry` (the [`CheckpointTag`]: which run
//! wrote the file; both empty for a plain [`Lattice::save`]), `dtype` (`"f32"`/`"f64"`), `dims`
//! `[nx, ny, nz]`, `steps` (time steps done), `physics` ([`super::Physics`] as JSON:
//! `collision` with `kind` `bgk` {`tau`} or `trt` {`tau`, `magic`}, and `force`
//! `[fx, fy, fz]`), `periodic` `[bool; 3]`, `boundaries` (the boundary-condition table: flag
//! `2 + k` is entry `k`, a [`super::Cell`] such as
//! `{"kind":"moving-wall","velocity":[0.1,0,0]}`), `velocities` (the 19 lattice velocities in
//! storage order, so a reader can check the direction order), `storage` (`"native"`, `"f16s"`
//! or `"f16c"`, see [`super::Storage`]; absent means native) and `payload_bytes`.
//! Floating-point header values are written with enough digits to round-trip exactly.
//!
//! The hash line holds the 64-bit FNV-1a hash of the bytes of the magic line, the header line
//! (both with their newlines) and the payload, in that order: an edited header is refused like
//! a corrupt payload. Files of another version are refused with an error naming it.
//!
//! Payload: the flags, one byte per node (0 fluid, 1 wall, `2 + k` boundary entry `k`), then
//! the 19 population arrays in direction order, each `nx·ny·nz` values of `dtype`, IEEE 754
//! little-endian — in 16-bit storage the 16-bit codes (little-endian) of the deviations from
//! rest the GPU holds, so a restarted run continues from exactly those; every array is
//! x-fastest (`index = x + nx·(y + ny·z)`), without padding.
//!
//! Files are written to a temporary name and renamed into place, so an interrupted save never
//! destroys an earlier checkpoint.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cell::{Cell, CellTable};
use super::lattice::Lattice;
use super::model::{Q, VELOCITIES};
use super::physics::Physics;
use super::storage::Storage;
use crate::{DType, Error, Real, Result};

/// The first line of every checkpoint.
pub const MAGIC: &str = "STENCIL35D-LBM";
/// The format version this build writes and reads.
pub const VERSION: u32 = 2;
/// The start of the hash line.
const HASH_PREFIX: &str = "fnv1a64 ";
/// The longest header line read (the boundary table has at most 254 entries, far below this).
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// Which run wrote a checkpoint: a scenario's name and what identifies its geometry. A run that
/// continues from a checkpoint compares the file's tag with its own and refuses another
/// scenario or geometry ([`CheckpointTag::expect`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointTag {
    /// The scenario's name, e.g. `"cavity"`; empty for a plain library checkpoint.
    pub scenario: String,
    /// What identifies the scenario's lattice, e.g. `"64x64x64"` or
    /// `"128x48x48, sphere radius 6"`; empty for a plain library checkpoint.
    pub geometry: String,
}

impl CheckpointTag {
    /// The tag of `scenario` with `geometry`.
    pub fn new(scenario: impl Into<String>, geometry: impl Into<String>) -> Self {
        CheckpointTag {
            scenario: scenario.into(),
            geometry: geometry.into(),
        }
    }

    /// Whether this is the empty tag of a plain [`Lattice::save`].
    pub fn is_none(&self) -> bool {
        self.scenario.is_empty() && self.geometry.is_empty()
    }

    /// Checks that a checkpoint read from `path` with this tag belongs to the run tagged
    /// `run`. Errors: [`Error::CheckpointMismatch`] naming both tags when they differ.
    pub fn expect(&self, run: &CheckpointTag, path: impl AsRef<Path>) -> Result<()> {
        if self == run {
            return Ok(());
        }
        Err(Error::CheckpointMismatch {
            path: path.as_ref().to_path_buf(),
            found: self.to_string(),
            expected: run.to_string(),
        })
    }
}

impl fmt::Display for CheckpointTag {
    /// `scenario 'cavity' 64x64x64`, or `no scenario (a plain library checkpoint)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return write!(f, "no scenario (a plain library checkpoint)");
        }
        write!(f, "scenario '{}' {}", self.scenario, self.geometry)
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    version: u32,
    #[serde(flatten)]
    tag: CheckpointTag,
    dtype: String,
    dims: [usize; 3],
    steps: u64,
    physics: Physics,
    periodic: [bool; 3],
    boundaries: Vec<Cell>,
    velocities: Vec<[i32; 3]>,
    #[serde(default)]
    storage: Storage,
    payload_bytes: u64,
}

/// The one header field read before the rest: files of another version may differ in all
/// others.
#[derive(Deserialize)]
struct VersionOnly {
    version: u32,
}

/// The 64-bit FNV-1a hash, fed in pieces.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

fn le_bytes<T: Real>(v: T, out: &mut Vec<u8>) {
    match T::DTYPE {
        DType::F32 => out.extend_from_slice(&v.to_f32().unwrap_or(f32::NAN).to_le_bytes()),
        DType::F64 => out.extend_from_slice(&v.to_f64().unwrap_or(f64::NAN).to_le_bytes()),
    }
}

fn from_le<T: Real>(b: &[u8]) -> T {
    let v = match T::DTYPE {
        DType::F32 => T::from_f32(f32::from_le_bytes(b.try_into().expect("4 bytes"))),
        DType::F64 => T::from_f64(f64::from_le_bytes(b.try_into().expect("8 bytes"))),
    };
    v.expect("a float converts to its own type")
}

/// Payload bytes of a `dims` lattice of `dtype` in `storage`: one flag byte and `Q` values per
/// node; `None` when that overflows (only an edited or corrupt header asks for such a lattice).
fn payload_bytes(dims: [usize; 3], dtype: DType, storage: Storage) -> Option<u64> {
    dims.iter()
        .try_fold((1 + Q * storage.bytes(dtype.size())) as u64, |n, &d| {
            n.checked_mul(d as u64)
        })
}

/// Reads one line (with its newline) of at most [`MAX_HEADER_BYTES`] bytes into `line`.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<()> {
    line.clear();
    input.take(MAX_HEADER_BYTES).read_until(b'\n', line)?;
    Ok(())
}

/// "`path` is not a valid checkpoint: `what`".
fn invalid(path: &Path, what: impl fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "{} is not a valid checkpoint: {what}",
        path.display()
    ))
}

/// What the lines before a checkpoint's payload hold.
struct Preamble {
    /// The header.
    header: Header,
    /// The hash fed with the magic and header lines.
    hash: Fnv,
    /// The hash the file states, in lower-case hex digits.
    stated: String,
    /// The length of the three lines, newlines included: where the payload starts.
    bytes: u64,
}

/// Opens the checkpoint at `path` (a regular file: a pipe or a device is refused before it is
/// opened) and reads its preamble. Returns the reader at the payload's start, the preamble and
/// the file's length.
fn open_checkpoint(path: &Path) -> Result<(BufReader<File>, Preamble, u64)> {
    let (file, length) = crate::files::open_regular_file(path, "a checkpoint")?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let preamble = read_preamble(&mut input, path)?;
    Ok((input, preamble, length))
}

/// Reads the magic, header and hash lines, checking the magic and the version.
fn read_preamble(input: &mut impl BufRead, path: &Path) -> Result<Preamble> {
    let io = |e| Error::io(path, e);
    let mut hash = Fnv::new();
    let mut line = Vec::new();
    read_line(input, &mut line).map_err(io)?;
    let mut bytes = line.len() as u64;
    if line != format!("{MAGIC}\n").as_bytes() {
        return Err(invalid(
            path,
            format_args!("it does not start with {MAGIC}"),
        ));
    }
    hash.feed(&line);
    read_line(input, &mut line).map_err(io)?;
    bytes += line.len() as u64;
    hash.feed(&line);
    let text = std::str::from_utf8(&line)
        .map_err(|_| invalid(path, "the header is not UTF-8 text"))?
        .trim_end();
    let version: VersionOnly = serde_json::from_str(text)
        .map_err(|e| invalid(path, format_args!("unreadable header: {e}")))?;
    if version.version != VERSION {
        return Err(Error::InvalidArgument(format!(
            "{} is a checkpoint of format version {}; this build reads format version {VERSION} \
             only: continue it with a build that reads version {}, or start the run again",
            path.display(),
            version.version,
            version.version
        )));
    }
    let header: Header = serde_json::from_str(text)
        .map_err(|e| invalid(path, format_args!("unreadable header: {e}")))?;
    read_line(input, &mut line).map_err(io)?;
    bytes += line.len() as u64;
    let stated = std::str::from_utf8(&line)
        .ok()
        .and_then(|l| l.strip_suffix('\n')?.strip_prefix(HASH_PREFIX))
        .filter(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| {
            invalid(
                path,
                "the line after the header is not 'fnv1a64 <16 hex digits>'",
            )
        })?
        .to_ascii_lowercase();
    Ok(Preamble {
        header,
        hash,
        stated,
        bytes,
    })
}

impl<T: Real> Lattice<T> {
    /// Visits the payload row by row: flag rows, then the rows of each population array.
    fn payload_rows(&self, mut visit: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let [nx, ny, nz] = self.dims();
        let layout = *self.layout();
        for z in 0..nz {
            for y in 0..ny {
                let o = layout.offset(0, y, z);
                visit(&self.flags[o..o + nx])?;
            }
        }
        let mut buf = Vec::with_capacity(nx * T::DTYPE.size());
        let codes = match (&self.codes, self.storage.is_16_bit()) {
            (_, false) => None,
            (Some(codes), true) => Some(std::borrow::Cow::Borrowed(codes)),
            (None, true) => {
                // A host write replaced the codes: its values must fit the format.
                self.pop.check_storage(self.storage)?;
                Some(std::borrow::Cow::Owned(self.pop.encode(self.storage)))
            }
        };
        for i in 0..Q {
            for z in 0..nz {
                for y in 0..ny {
                    buf.clear();
                    if let Some(codes) = &codes {
                        let o = i * layout.array + layout.offset(0, y, z);
                        for c in &codes[o..o + nx] {
                            buf.extend_from_slice(&c.to_le_bytes());
                        }
                    } else {
                        for &v in self.pop.row(i, y, z) {
                            le_bytes(v, &mut buf);
                        }
                    }
                    visit(&buf)?;
                }
            }
        }
        Ok(())
    }

    /// The magic and header lines of this lattice's checkpoint with `tag`.
    fn preamble(&self, tag: &CheckpointTag) -> Result<String> {
        let header = Header {
            version: VERSION,
            tag: tag.clone(),
            dtype: T::DTYPE.name().to_string(),
            dims: self.dims(),
            steps: self.steps,
            physics: self.physics,
            periodic: self.periodic,
            boundaries: self.table.entries().to_vec(),
            velocities: VELOCITIES.to_vec(),
            storage: self.storage,
            payload_bytes: payload_bytes(self.dims(), T::DTYPE, self.storage).unwrap_or(u64::MAX),
        };
        let json = serde_json::to_string(&header)
            .map_err(|e| Error::InvalidArgument(format!("cannot encode the header: {e}")))?;
        // The reader takes header lines of at most MAX_HEADER_BYTES: a longer one (a tag with
        // a very long geometry) would be written and then never read.
        if json.len() as u64 >= MAX_HEADER_BYTES {
            return Err(Error::InvalidArgument(format!(
                "the checkpoint's header would take {} bytes, more than the {MAX_HEADER_BYTES} \
                 a checkpoint's header may hold: shorten the tag (its geometry is {} bytes)",
                json.len() + 1,
                tag.geometry.len()
            )));
        }
        Ok(format!("{MAGIC}\n{json}\n"))
    }

    /// Writes the whole state (flags, boundary table, populations, physics, periodicity, step
    /// count) to `path` in the format of [this module](self), without a scenario (an empty
    /// [`CheckpointTag`]).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        self.save_tagged(path, &CheckpointTag::default())
    }

    /// Like [`Lattice::save`], recording `tag` (the scenario and geometry of the run) in the
    /// header, for [`Lattice::load_tagged`] and [`CheckpointTag::expect`] to check on restart.
    pub fn save_tagged(&self, path: impl AsRef<Path>, tag: &CheckpointTag) -> Result<()> {
        let path = path.as_ref();
        let staged = self.stage_tagged(path, tag)?;
        crate::files::commit_durable(staged)
    }

    /// The file [`Lattice::save_tagged`] writes, in a temporary file beside `path` synced to
    /// disk, which replaces `path` when the returned set is committed
    /// ([`crate::files::commit_durable`]) and is removed when it is dropped: a crash leaves
    /// the last checkpoint or this one whole.
    pub(crate) fn stage_tagged(
        &self,
        path: &Path,
        tag: &CheckpointTag,
    ) -> Result<crate::files::Staged> {
        let preamble = self.preamble(tag)?;
        let mut hash = Fnv::new();
        hash.feed(preamble.as_bytes());
        self.payload_rows(|row| {
            hash.feed(row);
            Ok(())
        })?;
        crate::files::stage_durable(path, |out| {
            let io = |e| Error::io(path, e);
            out.write_all(preamble.as_bytes()).map_err(io)?;
            writeln!(out, "{HASH_PREFIX}{}", hash.hex()).map_err(io)?;
            self.payload_rows(|row| out.write_all(row).map_err(io))
        })
    }

    /// Reads a lattice written by [`Lattice::save`] or [`Lattice::save_tagged`] (whatever its
    /// tag); it continues exactly where the saved one stopped. Errors: I/O, a file that is not
    /// a checkpoint, another format version, another precision than `T`, a truncated or
    /// corrupt file (length or hash mismatch, which covers an edited header), invalid flags or
    /// physics.
    pub fn load(path: impl AsRef<Path>) -> Result<Lattice<T>> {
        Self::load_tagged(path).map(|(lat, _)| lat)
    }

    /// The storage of the populations in the checkpoint at `path`, read from its header
    /// alone (a restart that keeps it learns it before reading the whole file). Errors: I/O,
    /// a file that is not a checkpoint or has another format version.
    pub fn checkpoint_storage(path: impl AsRef<Path>) -> Result<Storage> {
        open_checkpoint(path.as_ref()).map(|(_, p, _)| p.header.storage)
    }

    /// The [`CheckpointTag`] of the checkpoint at `path`, read from its header alone: a
    /// restart checks that the file is its run's before reading the whole lattice. The tag is
    /// checked again, with the hash, when the file is loaded. Errors: I/O, a file that is not
    /// a checkpoint or has another format version.
    pub fn checkpoint_tag(path: impl AsRef<Path>) -> Result<CheckpointTag> {
        open_checkpoint(path.as_ref()).map(|(_, p, _)| p.header.tag)
    }

    /// The precision of the populations in the checkpoint at `path`, read from its header
    /// alone (a program can say which precision to load it in before reading the whole file).
    /// Errors: I/O, a file that is not a checkpoint, has another format version or names an
    /// unknown dtype.
    pub fn checkpoint_dtype(path: impl AsRef<Path>) -> Result<DType> {
        let path = path.as_ref();
        let (_, p, _) = open_checkpoint(path)?;
        p.header
            .dtype
            .parse()
            .map_err(|_| invalid(path, format_args!("unknown dtype '{}'", p.header.dtype)))
    }

    /// Like [`Lattice::load`], also returning the file's [`CheckpointTag`].
    pub fn load_tagged(path: impl AsRef<Path>) -> Result<(Lattice<T>, CheckpointTag)> {
        let path = path.as_ref();
        let io = |e| Error::io(path, e);
        let (mut input, preamble, length) = open_checkpoint(path)?;
        let (h, mut hash, stated) = (preamble.header, preamble.hash, preamble.stated);
        let dtype: DType = h
            .dtype
            .parse()
            .map_err(|_| invalid(path, format_args!("unknown dtype '{}'", h.dtype)))?;
        if dtype != T::DTYPE {
            return Err(Error::InvalidArgument(format!(
                "{} holds a {dtype} lattice; load it as Lattice<{dtype}>",
                path.display(),
            )));
        }
        if h.velocities != VELOCITIES {
            return Err(invalid(path, "its velocity set or direction order differs"));
        }
        if h.storage.is_16_bit() && dtype != DType::F32 {
            return Err(invalid(
                path,
                format_args!("{} storage of a {dtype} lattice", h.storage),
            ));
        }
        let [nx, ny, nz] = h.dims;
        let expected = payload_bytes(h.dims, dtype, h.storage);
        if expected != Some(h.payload_bytes) {
            return Err(invalid(
                path,
                format_args!(
                    "payload of {} bytes does not fit a {nx}x{ny}x{nz} {dtype} lattice",
                    h.payload_bytes
                ),
            ));
        }
        // The file's length is checked before the payload is read: a longer file is refused
        // as a shorter one is, without reading it.
        let whole = preamble.bytes.saturating_add(h.payload_bytes);
        if whole != length {
            let what = if whole > length {
                "payload truncated"
            } else {
                "trailing bytes after the payload"
            };
            return Err(invalid(
                path,
                format_args!(
                    "{what}: a {nx}x{ny}x{nz} {dtype} lattice's checkpoint holds {whole} bytes \
                     ({} of header, {} of payload), the file has {length}",
                    preamble.bytes, h.payload_bytes
                ),
            ));
        }
        // A 16-bit file is read into codes kept beside the populations: the whole footprint
        // is checked before anything is allocated.
        crate::memory::Footprint::lattice(
            T::DTYPE,
            1,
            super::lattice::FLAG_BYTES + h.storage.code_bytes_per_node(),
        )
        .check_allocation(h.dims)?;
        let mut lat = Lattice::<T>::new(h.dims, h.physics)?;
        lat.table = CellTable::from_entries(h.boundaries)?;
        lat.periodic = h.periodic;
        lat.steps = h.steps;
        lat.storage = h.storage;
        lat.read_payload(&mut input, &mut hash, path)?;
        if hash.hex() != stated {
            return Err(invalid(
                path,
                "the hash of its header and payload does not match: the file is corrupt or \
                 was edited",
            ));
        }
        let mut rest = [0u8; 1];
        if input.read(&mut rest).map_err(io)? != 0 {
            return Err(invalid(path, "trailing bytes after the payload"));
        }
        Ok((lat, h.tag))
    }

    /// Fills the flags and populations from the payload in `input`, feeding `hash`.
    fn read_payload(&mut self, input: &mut impl Read, hash: &mut Fnv, path: &Path) -> Result<()> {
        let [nx, ny, nz] = self.dims();
        let size = self.storage.bytes(T::DTYPE.size());
        let mut row = vec![0u8; nx * size];
        let layout = *self.layout();
        let mut read = |buf: &mut [u8]| {
            input
                .read_exact(buf)
                .map_err(|e| invalid(path, format_args!("payload truncated ({e})")))?;
            hash.feed(buf);
            Ok::<_, Error>(())
        };
        let flag_count = self.table.flag_count();
        for z in 0..nz {
            for y in 0..ny {
                read(&mut row[..nx])?;
                if let Some(x) = row[..nx].iter().position(|&f| f as usize >= flag_count) {
                    return Err(invalid(
                        path,
                        format_args!(
                            "node ({x}, {y}, {z}) has flag {} but the table has {} entries",
                            row[x],
                            flag_count - 2
                        ),
                    ));
                }
                let o = layout.offset(0, y, z);
                self.flags[o..o + nx].copy_from_slice(&row[..nx]);
            }
        }
        let mut codes = vec![0u16; if size == 2 { layout.array * Q } else { 0 }];
        for i in 0..Q {
            for z in 0..nz {
                for y in 0..ny {
                    read(&mut row)?;
                    if size == 2 {
                        let o = i * layout.array + layout.offset(0, y, z);
                        for (x, b) in row.chunks_exact(2).enumerate() {
                            codes[o + x] = u16::from_le_bytes([b[0], b[1]]);
                        }
                        continue;
                    }
                    for (x, b) in row.chunks_exact(size).enumerate() {
                        self.pop.set(i, x, y, z, from_le::<T>(b));
                    }
                }
            }
        }
        if size == 2 {
            self.pop.decode(self.storage, &codes);
            self.codes = Some(codes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_scenario_and_geometry() {
        let cavity = CheckpointTag::new("cavity", "64x64x64");
        assert_eq!(cavity.to_string(), "scenario 'cavity' 64x64x64");
        assert!(CheckpointTag::default().is_none());
        assert!(CheckpointTag::default().to_string().contains("no scenario"));
        cavity.expect(&cavity.clone(), "c.ckpt").unwrap();
        let sphere = CheckpointTag::new("sphere", "128x48x48, sphere radius 6");
        let text = cavity.expect(&sphere, "c.ckpt").unwrap_err().to_string();
        assert!(text.contains("c.ckpt"), "{text}");
        assert!(text.contains("from scenario 'cavity' 64x64x64"), "{text}");
        assert!(
            text.contains("this run is scenario 'sphere' 128x48x48, sphere radius 6"),
            "{text}"
        );
    }

    /// A tag too long for the reader's header limit is refused before anything is written; the
    /// longest one it takes round-trips.
    #[test]
    fn a_tag_too_long_to_read_back_is_refused() {
        let dir = std::env::temp_dir().join(format!("stencil35d-ckpt-tag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lat = Lattice::<f32>::new([5, 4, 3], Physics::bgk(0.8)).unwrap();
        let path = dir.join("ck.lbm");
        let long = CheckpointTag::new("cavity", "x".repeat(MAX_HEADER_BYTES as usize));
        let text = lat.save_tagged(&path, &long).unwrap_err().to_string();
        assert!(text.contains("shorten the tag"), "{text}");
        assert!(!path.exists());
        // The header line without a geometry, and the most geometry that fits beside it.
        let bare = lat.preamble(&CheckpointTag::new("cavity", "")).unwrap();
        let room = MAX_HEADER_BYTES as usize - 1 - (bare.len() - MAGIC.len() - 2);
        let over = CheckpointTag::new("cavity", "x".repeat(room + 1));
        assert!(lat.save_tagged(&path, &over).is_err());
        let fits = CheckpointTag::new("cavity", "x".repeat(room));
        lat.save_tagged(&path, &fits).unwrap();
        assert_eq!(Lattice::<f32>::load_tagged(&path).unwrap().1, fits);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_storage_is_read_from_the_header_alone() {
        let dir = std::env::temp_dir().join(format!("stencil35d-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for storage in [Storage::Native, Storage::F16s, Storage::F16c] {
            let mut lat = Lattice::<f32>::new([5, 4, 3], Physics::bgk(0.8)).unwrap();
            lat.set_storage(storage).unwrap();
            let path = dir.join(format!("{storage}.lbm"));
            lat.save(&path).unwrap();
            assert_eq!(Lattice::<f32>::checkpoint_storage(&path).unwrap(), storage);
            // A file cut after its header still names its storage; the load refuses it.
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
            assert_eq!(Lattice::<f32>::checkpoint_storage(&path).unwrap(), storage);
            assert!(Lattice::<f32>::load(&path).is_err());
        }
        std::fs::write(dir.join("not.lbm"), "not a checkpoint\n").unwrap();
        assert!(Lattice::<f32>::checkpoint_storage(dir.join("not.lbm")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A save that fails after its temporary file was created (here the rename onto a
    /// directory) leaves no temporary file behind.
    #[test]
    fn a_failed_save_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("stencil35d-ckpt-tmp-{}", std::process::id()));
        let target = dir.join("ck.bin");
        std::fs::create_dir_all(&target).unwrap();
        let lat = Lattice::<f32>::new([5, 4, 3], Physics::bgk(0.8)).unwrap();
        assert!(lat.save(&target).is_err());
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["ck.bin"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A file longer than its header says is refused before its payload is read, naming both
    /// lengths; a device is refused before it is opened; the dtype is read from the header.
    #[test]
    fn lengths_and_file_kinds_are_checked_before_the_payload_is_read() {
        let dir = std::env::temp_dir().join(format!("stencil35d-ckpt-len-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.lbm");
        let lat = Lattice::<f64>::new([5, 4, 3], Physics::bgk(0.8)).unwrap();
        lat.save(&path).unwrap();
        assert_eq!(Lattice::<f32>::checkpoint_dtype(&path).unwrap(), DType::F64);
        let mut bytes = std::fs::read(&path).unwrap();
        let whole = bytes.len();
        bytes.extend_from_slice(&[0; 3]);
        std::fs::write(&path, &bytes).unwrap();
        let err = Lattice::<f64>::load(&path).unwrap_err().to_string();
        let expected = format!("holds {whole} bytes");
        assert!(
            err.contains("trailing bytes") && err.contains(&expected),
            "{err}"
        );
        assert!(
            err.contains(&format!("the file has {}", whole + 3)),
            "{err}"
        );
        if Path::new("/dev/zero").exists() {
            let err = Lattice::<f32>::load("/dev/zero").unwrap_err().to_string();
            assert!(err.contains("regular file"), "{err}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn payload_size_overflow_is_caught() {
        assert_eq!(
            payload_bytes([2, 3, 4], DType::F32, Storage::Native),
            Some(24 * 77)
        );
        assert_eq!(
            payload_bytes([2, 3, 4], DType::F32, Storage::F16c),
            Some(24 * 39)
        );
        assert_eq!(
            payload_bytes([usize::MAX, 2, 2], DType::F64, Storage::Native),
            None
        );
    }
}
