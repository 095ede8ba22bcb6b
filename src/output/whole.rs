//! Writes a file whole or not at all: the bytes go to a temporary file beside the target,
//! which replaces it only once every byte is written. A full disk, a failed encoder or a
//! killed run never leaves a truncated picture, volume or trace file where a reader (ParaView,
//! a SEG-Y tool, the next run) would take it for a result.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Writes the file at `path` with `fill`, whole or not at all. `fill` writes into a temporary
/// file in `path`'s directory (so the rename that ends the write stays on one file system and
/// is atomic); once it succeeded and the bytes are flushed, the temporary file is renamed over
/// `path`. On any error the temporary file is removed and whatever `path` held before is
/// left untouched. Errors: `fill`'s own, or [`Error::Io`] naming `path`.
pub fn write_whole(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let tmp = temporary_beside(path)?;
    let written = File::create(&tmp)
        .map_err(|e| Error::io(path, e))
        .and_then(|file| {
            let mut out = BufWriter::with_capacity(1 << 20, file);
            fill(&mut out)?;
            out.flush().map_err(|e| Error::io(path, e))
        })
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e)));
    if written.is_err() {
        // Best effort: the error that stopped the write is the one to report.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A temporary name in `path`'s directory: `.<name>.<pid>.tmp`, hidden from directory
/// listings and distinct for each process writing there.
fn temporary_beside(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test.
    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("stencil35d-whole-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_complete_write_replaces_the_file_and_leaves_nothing_else() {
        let d = dir("complete");
        let path = d.join("out.bin");
        std::fs::write(&path, b"old").unwrap();
        write_whole(&path, |out| {
            out.write_all(b"new contents")
                .map_err(|e| Error::io("x", e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A write that fails half-way (as on a full disk) keeps the old file and removes the
    /// temporary one; with no old file, none appears.
    #[test]
    fn a_failed_write_leaves_the_old_file_or_none() {
        let d = dir("failed");
        let path = d.join("out.bin");
        let half_way = |out: &mut BufWriter<File>| {
            out.write_all(&[7u8; 3 << 20])
                .map_err(|e| Error::io("x", e))?;
            Err(Error::InvalidArgument("the encoder failed".into()))
        };
        let err = write_whole(&path, half_way).unwrap_err();
        assert!(err.to_string().contains("the encoder failed"), "{err}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        std::fs::write(&path, b"old").unwrap();
        write_whole(&path, half_way).unwrap_err();
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A directory where the file should go is an error, and nothing is left beside it.
    #[test]
    fn a_directory_in_the_way_is_an_error() {
        let d = dir("in-the-way");
        let path = d.join("out.bin");
        std::fs::create_dir(&path).unwrap();
        let err = write_whole(&path, |out| {
            out.write_all(b"x").map_err(|e| Error::io("x", e))
        })
        .unwrap_err();
        assert!(err.to_string().contains("out.bin"), "{err}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
