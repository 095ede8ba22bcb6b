//! Checks that the places a run writes to can be written, so that a long run fails at its start
//! rather than after its last step. Each check probes the directory by creating and removing a
//! small file: permissions alone do not tell (read-only mounts, ACLs, a running user that
//! ignores them).

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Creates `dir` (with its parents) when missing and checks that files can be created in it.
/// `what` names the directory in the error, e.g. "the output directory". Errors:
/// [`Error::NotWritable`] naming `dir`.
pub fn check_writable_dir(dir: impl AsRef<Path>, what: &str) -> Result<()> {
    let dir = dir.as_ref();
    let refuse = |reason: String| Error::NotWritable {
        what: what.to_string(),
        path: dir.to_path_buf(),
        reason,
    };
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("it cannot be created ({e})")))?;
    probe(dir).map_err(refuse)
}

/// Checks that a file can be written at `path` by writing a temporary file next to it and
/// renaming it into place (as checkpoints are written): [`check_output_target`], and the
/// directory the file is replaced in takes new files. Creates nothing that stays; the
/// directory is not created. `what` names the file in the error, e.g. "the checkpoint".
/// Errors: [`Error::NotWritable`] naming `path`.
pub fn check_writable_file(path: impl AsRef<Path>, what: &str) -> Result<()> {
    let path = path.as_ref();
    let file = check_output_target(path, what)?;
    probe(&super::whole::parent_dir(&file)).map_err(|reason| Error::NotWritable {
        what: what.to_string(),
        path: path.to_path_buf(),
        reason,
    })
}

/// The checks of [`check_writable_file`] that create nothing: `path` is not empty, not a
/// directory nor a read-only file (nor a link to one), and the directory its file is replaced
/// in exists. Returns the file that a write to `path` replaces (a link followed), its
/// directory's path resolved, so that two names of one file return the same path. Errors:
/// [`Error::NotWritable`] naming `path`.
pub fn check_output_target(path: impl AsRef<Path>, what: &str) -> Result<PathBuf> {
    let path = path.as_ref();
    let refuse = |reason: String| Error::NotWritable {
        what: what.to_string(),
        path: path.to_path_buf(),
        reason,
    };
    if path.as_os_str().is_empty() {
        return Err(refuse("the path is empty".into()));
    }
    if path.is_dir() {
        return Err(refuse("it is a directory".into()));
    }
    // `new.png/` names a directory, which a file cannot be written as.
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(refuse("it ends in '/', which names a directory".into()));
    }
    let file = super::whole::writable_target(path).map_err(refuse)?;
    let dir = super::whole::parent_dir(&file);
    if !dir.is_dir() {
        return Err(refuse(format!(
            "its directory {} does not exist (or is not a directory)",
            dir.display()
        )));
    }
    Ok(super::whole::resolved(&file))
}

/// Creates and removes a probe file in `dir`; the reason it failed otherwise.
fn probe(dir: &Path) -> std::result::Result<(), String> {
    let file = dir.join(format!(".stencil35d-probe-{}", std::process::id()));
    let created = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&file);
    match created {
        Ok(_) => std::fs::remove_file(&file).map_err(|e| {
            format!(
                "a probe file {} was created but cannot be removed ({e})",
                file.display()
            )
        }),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Err(format!(
            "no permission to create files in {}",
            dir.display()
        )),
        Err(e) => Err(format!("cannot create files in {} ({e})", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("stencil35d-writable-{}-{name}", std::process::id()))
    }

    #[test]
    fn missing_directory_of_a_file_is_refused() {
        let err = check_writable_file("/nonexistent-stencil35d/dir/x.ckpt", "the checkpoint")
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent-stencil35d/dir/x.ckpt"),
            "{text}"
        );
        assert!(text.contains("does not exist"), "{text}");
    }

    #[test]
    fn a_directory_is_not_a_file() {
        let err = check_writable_file(std::env::temp_dir(), "the checkpoint").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn writable_places_pass_and_leave_nothing() {
        let dir = temp("out/nested");
        check_writable_dir(&dir, "the output directory").unwrap();
        assert!(dir.is_dir());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        check_writable_file(dir.join("x.ckpt"), "the checkpoint").unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(temp("out")).unwrap();
    }

    /// A device (or a link to one) would be replaced by a regular file by the rename that
    /// ends a write, and a name ending in '/' is a directory's.
    #[test]
    fn devices_and_directory_names_are_not_files() {
        let err = check_writable_file("/dev/null", "the picture").unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let link = temp("null-link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let err = check_writable_file(&link, "the picture").unwrap_err();
        assert!(
            err.to_string().contains("/dev/null, is not a regular file"),
            "{err}"
        );
        std::fs::remove_file(&link).unwrap();
        let err = check_writable_file(temp("new.png/"), "the picture").unwrap_err();
        assert!(err.to_string().contains("ends in '/'"), "{err}");
    }

    #[test]
    fn a_directory_under_a_file_is_refused() {
        let file = temp("plain-file");
        std::fs::write(&file, b"x").unwrap();
        let err = check_writable_dir(file.join("out"), "the output directory").unwrap_err();
        assert!(err.to_string().contains("cannot be created"), "{err}");
        std::fs::remove_file(&file).unwrap();
    }
}
