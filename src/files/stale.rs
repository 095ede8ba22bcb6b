//! Temporary files that killed writes left behind. A write in progress (`whole`) holds a lock
//! on its temporary file, which the system releases when the process ends however it ends;
//! SIGKILL or the out-of-memory killer, which no handler sees, leave the file itself. The
//! next write into the same directory removes such files: for a large lattice's checkpoint
//! one holds gigabytes.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// What a temporary name carries between its target's name and its writer's process id.
const TAG: &str = ".stencil35d-";

/// How long a temporary file must have gone unmodified to count as left behind, and how
/// often a process looks again in a directory it writes to. A write in progress modifies its
/// file at every MiB it writes, and holds its lock meanwhile; the age guards a writer on
/// another machine sharing the directory, whose process this machine cannot see, where the
/// file system keeps no locks across machines.
const STALE_AFTER: Duration = Duration::from_secs(120);

/// The directories this process has looked in, and when it last did.
static LOOKED: Mutex<Vec<(PathBuf, Instant)>> = Mutex::new(Vec::new());

/// The temporary name of a write of `name` by process `pid`: `.<name>.stencil35d-<pid>.tmp`,
/// hidden from directory listings and distinct for each process writing there.
pub(super) fn temporary_name(name: &OsStr, pid: u32) -> OsString {
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!("{TAG}{pid}.tmp"));
    tmp
}

/// The writer's process id, where `name` is a temporary name of this library's.
fn writer(name: &OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (target, pid) = rest.rsplit_once(TAG)?;
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (!target.is_empty() && digits).then(|| pid.parse().ok())?
}

/// Removes the temporary files in `dir` (its path resolved, so that two spellings of one
/// directory meet) that killed writes left (see [`remove_left_in`]), looking at most once per
/// [`STALE_AFTER`] in each directory, so that a run writing many files into one directory does
/// not list it for each. Only where this machine's processes can be seen (`/proc`); best
/// effort: what cannot be examined or removed stays.
pub(super) fn remove_left_behind(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    {
        let mut looked = LOOKED.lock().unwrap_or_else(PoisonError::into_inner);
        match looked.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, at)) if at.elapsed() < STALE_AFTER => return,
            Some((_, at)) => *at = Instant::now(),
            None => looked.push((dir.to_path_buf(), Instant::now())),
        }
    }
    remove_left_in(dir);
}

/// Removes every temporary file in `dir` whose writer is no live process on this machine
/// (nor this one), that has gone unmodified for [`STALE_AFTER`], and whose lock no process
/// holds.
fn remove_left_in(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = writer(&entry.file_name()) else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if !alive && left_behind(&entry.path()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether the temporary file `path` is a regular file unmodified for [`STALE_AFTER`] that
/// no process holds locked.
fn left_behind(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age >= STALE_AFTER);
    meta.is_file() && old && File::open(path).is_ok_and(|f| f.try_lock().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn temporary_names_name_their_writer() {
        let name = temporary_name(OsStr::new("state.ckpt"), 4321);
        assert_eq!(name, ".state.ckpt.stencil35d-4321.tmp");
        assert_eq!(writer(&name), Some(4321));
        for other in [
            ".state.ckpt.4321.tmp",
            ".stencil35d-4321.tmp",
            ".a.stencil35d-.tmp",
            ".a.stencil35d-+5.tmp",
            "a.stencil35d-5.tmp",
            ".a.stencil35d-5",
        ] {
            assert_eq!(writer(OsStr::new(other)), None, "{other}");
        }
    }

    /// Of the temporary files in a directory, only one whose writer is gone, old enough and
    /// unlocked is removed; a write into the directory removes it, as a run's next
    /// checkpoint does after one killed mid-write.
    #[cfg(target_os = "linux")]
    #[test]
    fn only_files_of_killed_writes_are_removed() {
        let d = std::env::temp_dir().join(format!("stencil35d-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let long_ago = SystemTime::now() - 2 * STALE_AFTER;
        let make = |name: OsString, modified: SystemTime| {
            let path = d.join(name);
            let f = File::create(&path).unwrap();
            f.set_modified(modified).unwrap();
            (path, f)
        };
        // No process has the largest id (Linux's pid_max is at most 2^22).
        let gone = u32::MAX;
        let (left, _) = make(temporary_name(OsStr::new("a.ckpt"), gone), long_ago);
        let (fresh, _) = make(
            temporary_name(OsStr::new("b.ckpt"), gone),
            SystemTime::now(),
        );
        let (locked, held) = make(temporary_name(OsStr::new("c.ckpt"), gone), long_ago);
        held.lock().unwrap();
        let mine = temporary_name(OsStr::new("d.ckpt"), std::process::id());
        let (mine, _) = make(mine, long_ago);
        let (foreign, _) = make(OsString::from(".e.ckpt.77.tmp"), long_ago);
        remove_left_in(&d);
        assert!(!left.exists());
        for kept in [&fresh, &locked, &mine, &foreign] {
            assert!(kept.exists(), "{}", kept.display());
        }
        drop(held);
        remove_left_in(&d);
        assert!(!locked.exists());
        // Through a write: the first into a directory looks in it.
        let (again, _) = make(temporary_name(OsStr::new("a.ckpt"), gone), long_ago);
        crate::files::write_whole(&d.join("a.ckpt"), |_| Ok(())).unwrap();
        assert!(!again.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
