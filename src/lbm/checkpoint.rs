//! Checkpoints: the whole state of a [`Lattice`] in one file, restored bit-exactly, so a long
//! run can be stopped and resumed without changing its result.
//!
//! # File format (version 1)
//!
//! ```text
//! STENCIL35D-LBM\n                       magic line (15 bytes)
//! {"version":1, ...}\n                   header: one line of JSON (fields below)
//! <payload>                              raw bytes, exactly header.payload_bytes long
//! ```
//!
//! Header fields: `version` (1), `dtype` (`"f32"`/`"f64"`), `dims` `[nx, ny, nz]`, `steps`
//! (time steps done), `physics` ([`super::Physics`] as JSON: `collision` with `kind` `bgk`
//! {`tau`} or `trt` {`tau`, `magic`}, and `force` `[fx, fy, fz]`), `periodic` `[bool; 3]`,
//! `boundaries` (the boundary-condition table: flag `2 + k` is entry `k`, a [`super::Cell`]
//! such as `{"kind":"moving-wall","velocity":[0.1,0,0]}`), `velocities` (the 19 lattice
//! velocities in storage order, so a reader can check the direction order), `payload_bytes`,
//! and `fnv1a64` (the 64-bit FNV-1a hash of the payload, as 16 hex digits).
//! Floating-point header values are written with enough digits to round-trip exactly.
//!
//! Payload: the flags, one byte per node (0 fluid, 1 wall, `2 + k` boundary entry `k`), then
//! the 19 population arrays in direction order, each `nx·ny·nz` values of `dtype`, IEEE 754
//! little-endian; every array is x-fastest (`index = x + nx·(y + ny·z)`), without padding.
//!
//! Files are written to a temporary name and renamed into place, so an interrupted save never
//! destroys an earlier checkpoint.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cell::{Cell, CellTable};
use super::lattice::Lattice;
use super::model::{Q, VELOCITIES};
use super::physics::Physics;
use crate::{DType, Error, Real, Result};

/// The first line of every checkpoint.
pub const MAGIC: &str = "STENCIL35D-LBM";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    version: u32,
    dtype: String,
    dims: [usize; 3],
    steps: u64,
    physics: Physics,
    periodic: [bool; 3],
    boundaries: Vec<Cell>,
    velocities: Vec<[i32; 3]>,
    payload_bytes: u64,
    fnv1a64: String,
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
        for i in 0..Q {
            for z in 0..nz {
                for y in 0..ny {
                    buf.clear();
                    for &v in self.pop.row(i, y, z) {
                        le_bytes(v, &mut buf);
                    }
                    visit(&buf)?;
                }
            }
        }
        Ok(())
    }

    /// Writes the whole state (flags, boundary table, populations, physics, periodicity, step
    /// count) to `path` in the format of [this module](self).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut hash = Fnv::new();
        let mut bytes = 0u64;
        self.payload_rows(|row| {
            hash.feed(row);
            bytes += row.len() as u64;
            Ok(())
        })?;
        let header = Header {
            version: VERSION,
            dtype: T::DTYPE.name().to_string(),
            dims: self.dims(),
            steps: self.steps,
            physics: self.physics,
            periodic: self.periodic,
            boundaries: self.table.entries().to_vec(),
            velocities: VELOCITIES.to_vec(),
            payload_bytes: bytes,
            fnv1a64: format!("{:016x}", hash.0),
        };
        let json = serde_json::to_string(&header)
            .map_err(|e| Error::InvalidArgument(format!("cannot encode the header: {e}")))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io = |e| Error::io(&tmp, e);
        let file = File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        writeln!(out, "{MAGIC}").map_err(io)?;
        writeln!(out, "{json}").map_err(io)?;
        self.payload_rows(|row| out.write_all(row).map_err(io))?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }

    /// Reads a lattice written by [`Lattice::save`]; it continues exactly where the saved one
    /// stopped. Errors: I/O, a file that is not a checkpoint, another format version, another
    /// precision than `T`, a truncated or corrupt payload (length or hash mismatch), invalid
    /// flags or physics.
    pub fn load(path: impl AsRef<Path>) -> Result<Lattice<T>> {
        let path = path.as_ref();
        let io = |e| Error::io(path, e);
        let bad = |what: String| {
            Error::InvalidArgument(format!(
                "{} is not a valid checkpoint: {what}",
                path.display()
            ))
        };
        let mut input = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
        let mut line = String::new();
        input.read_line(&mut line).map_err(io)?;
        if line.trim_end() != MAGIC {
            return Err(bad(format!("it does not start with {MAGIC}")));
        }
        line.clear();
        input.read_line(&mut line).map_err(io)?;
        let h: Header = serde_json::from_str(line.trim_end())
            .map_err(|e| bad(format!("unreadable header: {e}")))?;
        if h.version != VERSION {
            return Err(bad(format!(
                "format version {} (this build reads version {VERSION})",
                h.version
            )));
        }
        let dtype: DType = h
            .dtype
            .parse()
            .map_err(|_| bad(format!("unknown dtype '{}'", h.dtype)))?;
        if dtype != T::DTYPE {
            return Err(Error::InvalidArgument(format!(
                "{} holds a {dtype} lattice; load it as Lattice<{dtype}>",
                path.display(),
            )));
        }
        if h.velocities != VELOCITIES {
            return Err(bad("its velocity set or direction order differs".into()));
        }
        let mut lat = Lattice::<T>::new(h.dims, h.physics)?;
        lat.table = CellTable::from_entries(h.boundaries)?;
        lat.periodic = h.periodic;
        lat.steps = h.steps;
        let [nx, ny, nz] = h.dims;
        let size = T::DTYPE.size();
        let expected = (nx * ny * nz) as u64 * (1 + Q * size) as u64;
        if h.payload_bytes != expected {
            return Err(bad(format!(
                "payload of {} bytes, a {nx}x{ny}x{nz} {dtype} lattice needs {expected}",
                h.payload_bytes
            )));
        }
        let mut hash = Fnv::new();
        let mut row = vec![0u8; nx * size];
        let layout = *lat.layout();
        let read = |input: &mut BufReader<File>, buf: &mut [u8]| {
            input
                .read_exact(buf)
                .map_err(|e| bad(format!("payload truncated ({e})")))
        };
        let flag_count = lat.table.flag_count();
        for z in 0..nz {
            for y in 0..ny {
                read(&mut input, &mut row[..nx])?;
                hash.feed(&row[..nx]);
                if let Some(x) = row[..nx].iter().position(|&f| f as usize >= flag_count) {
                    return Err(bad(format!(
                        "node ({x}, {y}, {z}) has flag {} but the table has {} entries",
                        row[x],
                        flag_count - 2
                    )));
                }
                let o = layout.offset(0, y, z);
                lat.flags[o..o + nx].copy_from_slice(&row[..nx]);
            }
        }
        for i in 0..Q {
            for z in 0..nz {
                for y in 0..ny {
                    read(&mut input, &mut row)?;
                    hash.feed(&row);
                    for (x, b) in row.chunks_exact(size).enumerate() {
                        lat.pop.set(i, x, y, z, from_le::<T>(b));
                    }
                }
            }
        }
        if format!("{:016x}", hash.0) != h.fnv1a64 {
            return Err(bad(
                "the payload's hash does not match: the file is corrupt".into(),
            ));
        }
        let mut rest = [0u8; 1];
        if input.read(&mut rest).map_err(io)? != 0 {
            return Err(bad("trailing bytes after the payload".into()));
        }
        Ok(lat)
    }
}
