//! Opening the files a user names as input: only regular files are read (a device such as
//! `/dev/zero`, a pipe or a directory would be read for ever or fail obscurely), and a text
//! file is read only up to a size limit, so a wrong path is refused with a clear error instead
//! of filling the memory.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// Opens `path` for reading after checking that it is a regular file, before opening it
/// (opening a pipe waits for a writer, and a device such as `/dev/zero` never ends); returns
/// the file and its length in bytes, so a reader can check the length its header implies
/// before reading the rest. `what` names the file in errors, e.g. "the picture". Errors:
/// [`Error::Io`] for a missing or unreadable file, [`Error::InvalidArgument`] for something
/// that is not a regular file.
pub fn open_regular_file(path: &Path, what: &str) -> Result<(File, u64)> {
    let refuse = |meta: &std::fs::Metadata| {
        let kind = if meta.is_dir() {
            "a directory, not a regular file"
        } else {
            "not a regular file (a device, pipe or socket)"
        };
        Error::InvalidArgument(format!(
            "{what} {} is {kind}: give a regular file",
            path.display()
        ))
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(refuse(&meta));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // Checked again on the open file: the path may have been replaced in between.
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(refuse(&meta));
    }
    Ok((file, meta.len()))
}

/// Reads the regular file `path` as UTF-8 text, refusing one larger than `limit` bytes.
/// `what` names the file in errors, e.g. "the comparison JSON". Errors: those of
/// [`open_regular_file`], and [`Error::InvalidArgument`] for a file above the limit (checked
/// on its stated length and again while reading, should it grow) or not UTF-8.
pub fn read_text_file(path: &Path, limit: u64, what: &str) -> Result<String> {
    let (file, len) = open_regular_file(path, what)?;
    let too_large = |len: String| {
        Error::InvalidArgument(format!(
            "{what} {} holds {len} bytes, more than the {limit} this reads: is it the right file?",
            path.display()
        ))
    };
    if len > limit {
        return Err(too_large(len.to_string()));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large("more than that".into()));
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::InvalidArgument(format!("{what} {} is not UTF-8 text", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = std::env::temp_dir().join(format!("stencil35d-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("small.txt");
        std::fs::write(&file, "1 2 3\n").unwrap();
        assert_eq!(read_text_file(&file, 6, "the file").unwrap(), "1 2 3\n");
        let big = read_text_file(&file, 5, "the file")
            .unwrap_err()
            .to_string();
        assert!(big.contains("holds 6 bytes, more than the 5"), "{big}");
        let folder = read_text_file(&dir, 100, "the file")
            .unwrap_err()
            .to_string();
        assert!(folder.contains("is a directory"), "{folder}");
        if Path::new("/dev/zero").exists() {
            let device = read_text_file(Path::new("/dev/zero"), 100, "the file")
                .unwrap_err()
                .to_string();
            assert!(device.contains("not a regular file"), "{device}");
        }
        assert!(matches!(
            read_text_file(&dir.join("missing"), 100, "the file"),
            Err(Error::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
