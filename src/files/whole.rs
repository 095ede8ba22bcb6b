//! Writes a file whole or not at all: the bytes go to a temporary file beside the target,
//! which replaces it only once every byte is written. A full disk, a failed encoder or a
//! killed run never leaves a truncated picture, volume or trace file where a reader (ParaView,
//! a SEG-Y tool, the next run) would take it for a result.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::stale;
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
    write_staged(path, false, fill)
}

/// [`write_whole`], and the bytes reach the disk before the rename, which is then synced with
/// the directory (where the file system allows): a crash of the machine leaves the old file or
/// the new one whole under the name, never an empty or partial one. For files a run restarts
/// from (checkpoints), where losing the last one costs the run.
pub fn write_whole_durable(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    write_staged(path, true, fill)
}

/// [`write_whole`], syncing the file to disk before the rename when `durable`.
fn write_staged(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let staged = stage(path, durable, fill)?;
    if durable {
        commit_durable(staged)
    } else {
        staged.commit()
    }
}

/// The first half of [`write_whole_durable`]: `fill` writes `path`'s bytes into a temporary
/// file beside it, synced to disk, which [`commit_durable`] then renames over `path`. Dropped
/// uncommitted, the returned set removes the file and `path` stays as it was: a write that
/// must succeed in several places at once (one file per rank) stages each and commits none
/// until all are written.
pub(crate) fn stage_durable(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<Staged> {
    stage(path, true, fill)
}

/// `fill`'s bytes in a temporary file beside `path`, synced to disk when `durable`.
fn stage(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<Staged> {
    let mut staged = Staged::new([path.to_path_buf()])?;
    let io = |e| Error::io(path, e);
    let file = File::create(staged.temporary(0)).map_err(io)?;
    // Held until the file is renamed or removed: a file no process holds locked is one a
    // killed write left (`stale`). Best effort, as some file systems keep no locks.
    let _ = file.try_lock();
    let mut out = BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    if durable {
        file.sync_all().map_err(io)?;
    }
    staged.locks.push(file);
    Ok(staged)
}

/// Renames the files [`stage_durable`] wrote over their targets and syncs the directories
/// the renames took place in (where the file system allows), so that the new names survive a
/// crash of the machine.
pub(crate) fn commit_durable(staged: Staged) -> Result<()> {
    let dirs: Vec<PathBuf> = staged.files.iter().map(|f| parent_dir(&f.1)).collect();
    staged.commit()?;
    // Best effort: some file systems cannot sync a directory, and the files themselves are
    // already on disk.
    for dir in dirs {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// The directory `path` lies in (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The temporary files of this process's writes in progress (staged, neither renamed nor
/// removed yet), for [`remove_unfinished`].
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    UNFINISHED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `temporary` off the list of writes in progress.
fn finished(temporary: &Path) {
    let mut list = unfinished();
    if let Some(i) = list.iter().position(|p| p == temporary) {
        list.swap_remove(i);
    }
}

/// Removes the temporary files of this process's writes in progress, for a handler of a
/// signal that ends the process (the command-line tool's, on SIGINT, SIGTERM and SIGHUP): a
/// run stopped mid-write then leaves no hidden `.<name>.stencil35d-<pid>.tmp` file beside its target, and
/// every target keeps what it held. A write whose temporary file is removed fails when it
/// renames it, so the process must end right after.
pub fn remove_unfinished() {
    remove_unfinished_where(|_| true);
}

/// [`remove_unfinished`] for the temporary files `which` selects.
fn remove_unfinished_where(which: impl Fn(&Path) -> bool) {
    unfinished().retain(|temporary| {
        if !which(temporary) {
            return true;
        }
        let _ = std::fs::remove_file(temporary);
        false
    });
}

/// Files written under temporary names beside their targets (see [`write_whole`]) and renamed
/// over them together by [`Staged::commit`]. Dropped before the commit, or after a failed
/// one, it removes the temporary files left, so a failed write leaves every target as it was.
/// The renames are not one atomic step: should one of them fail, the targets renamed before it
/// are new and the rest old.
#[must_use = "a Staged set writes nothing until it is committed"]
pub struct Staged {
    /// (temporary path, the file replaced, the target as given) in the order of the commit.
    files: Vec<(PathBuf, PathBuf, PathBuf)>,
    /// The temporary files this library wrote, open and locked until the set is committed or
    /// dropped.
    locks: Vec<File>,
}

impl Staged {
    /// Temporary names for `targets`, each in its target's directory. Nothing is created.
    /// Errors: [`Error::Io`] for a target that names no file (`/`, say).
    /// A target that is a symbolic link is written through it (the file it names is
    /// replaced, the link kept); one that is a directory or a read-only file, or names the
    /// same file as another target, is refused.
    pub fn new(targets: impl IntoIterator<Item = PathBuf>) -> Result<Staged> {
        let mut files: Vec<(PathBuf, PathBuf, PathBuf)> = Vec::new();
        // Each file's place (its directory resolved), found once: two names of one file meet.
        let mut places: Vec<PathBuf> = Vec::new();
        for target in targets {
            let refuse = |reason: String| {
                let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, reason);
                Error::io(&target, e)
            };
            let file = writable_target(&target).map_err(refuse)?;
            let place = resolved(&file);
            if let Some(i) = places.iter().position(|p| *p == place) {
                return Err(refuse(format!(
                    "it names the same file as {}",
                    files[i].2.display()
                )));
            }
            places.push(place);
            files.push((temporary_beside(&file)?, file, target));
        }
        for place in &places {
            stale::remove_left_behind(&parent_dir(place));
        }
        unfinished().extend(files.iter().map(|f| f.0.clone()));
        Ok(Staged {
            files,
            locks: Vec::new(),
        })
    }

    /// Where the `i`-th target's bytes are to be written.
    ///
    /// # Panics
    /// If there is no `i`-th target.
    pub fn temporary(&self, i: usize) -> &Path {
        &self.files[i].0
    }

    /// The `i`-th target, for messages about its temporary file.
    ///
    /// # Panics
    /// If there is no `i`-th target.
    pub fn target(&self, i: usize) -> &Path {
        &self.files[i].2
    }

    /// Renames every temporary file over its target, in order. Errors: [`Error::Io`] naming
    /// the target whose rename failed (a temporary file never written, say).
    pub fn commit(mut self) -> Result<()> {
        while !self.files.is_empty() {
            let (temporary, file, target) = &self.files[0];
            // A file replaced keeps its permissions.
            if let Ok(old) = std::fs::metadata(file) {
                let _ = std::fs::set_permissions(temporary, old.permissions());
            }
            std::fs::rename(temporary, file).map_err(|e| Error::io(target, e))?;
            finished(temporary);
            self.files.remove(0);
        }
        Ok(())
    }
}

impl Drop for Staged {
    /// Removes the temporary files not renamed (best effort: one never written is not there
    /// to remove, and the error that stopped the write is the one to report).
    fn drop(&mut self) {
        for (temporary, ..) in &self.files {
            let _ = std::fs::remove_file(temporary);
            finished(temporary);
        }
    }
}

/// The file a write to `path` replaces: `path` itself, or the file it names when it is a
/// symbolic link (one whose file does not exist yet names it in an existing directory).
/// Errors, as the reason: a link into no directory, a directory, a file that exists
/// read-only (the rename that ends a write would replace it all the same), or one that is no
/// regular file (a FIFO or a device, which the rename would replace by a regular file).
pub(crate) fn writable_target(path: &Path) -> std::result::Result<PathBuf, String> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        std::fs::canonicalize(path).or_else(|e| link_to_new_file(path).ok_or(e.to_string()))?
    } else {
        path.to_path_buf()
    };
    // The reason names the file only where it is not `path` itself (a link's).
    let what = if is_link {
        format!("the file it links to, {},", target.display())
    } else {
        "it".to_string()
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(format!("{what} is a directory")),
        Ok(m) if !m.is_file() => Err(format!(
            "{what} is not a regular file (a FIFO, socket or device), which a write would \
             replace"
        )),
        Ok(m) if m.permissions().readonly() => Err(format!("{what} is read-only")),
        _ => Ok(target),
    }
}

/// `file` with its directory's path resolved (links, `.` and `..`), so that two names of one
/// file compare equal; `file` as it is when its directory cannot be resolved.
pub(crate) fn resolved(file: &Path) -> PathBuf {
    match (std::fs::canonicalize(parent_dir(file)), file.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => file.to_path_buf(),
    }
}

/// Where the symbolic link `path` points when that is a name in an existing directory (a
/// file the write will create).
fn link_to_new_file(path: &Path) -> Option<PathBuf> {
    let to = std::fs::read_link(path).ok()?;
    let to = match path.parent() {
        Some(dir) if to.is_relative() => dir.join(to),
        _ => to,
    };
    parent_dir(&to).is_dir().then_some(to)
}

/// A temporary name in `path`'s directory: `.<name>.stencil35d-<pid>.tmp`, hidden from
/// directory listings and distinct for each process writing there.
fn temporary_beside(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    Ok(path.with_file_name(stale::temporary_name(name, std::process::id())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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

    /// A write in progress is listed until its rename or removal; removing the unfinished
    /// writes (as a signal handler does) deletes its temporary file, keeps the target's old
    /// bytes, and makes the write's commit fail; finished writes leave nothing listed.
    #[test]
    fn unfinished_writes_are_removed_on_request() {
        let d = dir("unfinished");
        let here = |p: &Path| p.starts_with(&d);
        let listed = || unfinished().iter().filter(|p| here(p)).count();
        let path = d.join("out.bin");
        std::fs::write(&path, b"old").unwrap();
        let staged = Staged::new([path.clone()]).unwrap();
        std::fs::write(staged.temporary(0), b"half").unwrap();
        assert_eq!(listed(), 1);
        remove_unfinished_where(here);
        assert_eq!(listed(), 0);
        assert!(!staged.temporary(0).exists());
        assert!(staged.commit().is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        write_whole(&path, |out| {
            out.write_all(b"new").map_err(|e| Error::io("x", e))
        })
        .unwrap();
        let dropped = Staged::new([d.join("other.bin")]).unwrap();
        assert_eq!(listed(), 1);
        drop(dropped);
        assert_eq!(listed(), 0);
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

    /// A write through a symbolic link replaces the file it names and keeps the link; a
    /// read-only file is refused and left as it was; a replaced file keeps its mode.
    #[cfg(unix)]
    #[test]
    fn links_are_written_through_and_read_only_files_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("links");
        std::fs::create_dir(d.join("sub")).unwrap();
        let (real, link) = (d.join("sub/real.png"), d.join("link.png"));
        std::fs::write(&real, b"old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let new = |out: &mut BufWriter<File>| out.write_all(b"new").map_err(|e| Error::io("x", e));
        write_whole(&link, new).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_whole(&real, new).unwrap();
        assert_eq!(mode(&real), 0o640);
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e = write_whole(&link, |_| unreachable!()).unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A link to a file not written yet creates it; a link into no directory, a link to a
        // directory and two targets naming one file are refused.
        let ahead = d.join("ahead.png");
        std::os::unix::fs::symlink("sub/new.png", &ahead).unwrap();
        write_whole(&ahead, new).unwrap();
        assert_eq!(std::fs::read(d.join("sub/new.png")).unwrap(), b"new");
        let nowhere = d.join("nowhere.png");
        std::os::unix::fs::symlink(d.join("no/dir.png"), &nowhere).unwrap();
        assert!(write_whole(&nowhere, |_| unreachable!()).is_err());
        let to_dir = d.join("to_dir.png");
        std::os::unix::fs::symlink(d.join("sub"), &to_dir).unwrap();
        let e = write_whole(&to_dir, |_| unreachable!()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let twice = Staged::new([d.join("sub/new.png"), ahead.clone()])
            .err()
            .unwrap();
        assert!(twice.to_string().contains("names the same file"), "{twice}");
        // Two spellings of one file are one target too.
        let spelt = Staged::new([d.join("sub/new.png"), d.join("sub/../sub/./new.png")])
            .err()
            .unwrap();
        assert!(spelt.to_string().contains("names the same file"), "{spelt}");
        // Only the written files and the links are left: no temporary file anywhere.
        let mut left: Vec<_> = std::fs::read_dir(d.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["new.png", "real.png"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Staged files reach their targets together on commit; dropped uncommitted, none does
    /// and no temporary file stays.
    #[test]
    fn staged_files_are_renamed_together_or_not_at_all() {
        let d = dir("staged");
        let targets = [d.join("a.csv"), d.join("b.png")];
        std::fs::write(&targets[0], b"old a").unwrap();
        let staged = Staged::new(targets.clone()).unwrap();
        std::fs::write(staged.temporary(0), b"new a").unwrap();
        drop(staged);
        assert_eq!(std::fs::read(&targets[0]).unwrap(), b"old a");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let staged = Staged::new(targets.clone()).unwrap();
        std::fs::write(staged.temporary(0), b"new a").unwrap();
        std::fs::write(staged.temporary(1), b"new b").unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&targets[0]).unwrap(), b"new a");
        assert_eq!(std::fs::read(&targets[1]).unwrap(), b"new b");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A durable write lands like any other.
    #[test]
    fn a_durable_write_replaces_the_file() {
        let d = dir("durable");
        let path = d.join("ck.lbm");
        std::fs::write(&path, b"old").unwrap();
        write_whole_durable(&path, |out| {
            out.write_all(b"synced").map_err(|e| Error::io("x", e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"synced");
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
