//! The names of a split checkpoint's files: one per rank, `<prefix>.<rank>-of-<ranks>.lbm`.
//! Not tied to MPI, so that a single process can say that a prefix names a split checkpoint.

use std::path::{Path, PathBuf};

/// The file rank `rank` of `ranks` writes for checkpoint `prefix`:
/// `<prefix>.<rank>-of-<ranks>.lbm`.
pub fn rank_path(prefix: impl AsRef<Path>, rank: usize, ranks: usize) -> PathBuf {
    let mut name = prefix.as_ref().as_os_str().to_owned();
    name.push(format!(".{rank}-of-{ranks}.lbm"));
    PathBuf::from(name)
}

/// The rank counts whose first file (`<prefix>.0-of-<n>.lbm`) lies beside `prefix`, smallest
/// first: the splits a checkpoint of that prefix was written in. Empty when the directory
/// cannot be read or holds none.
pub fn written_rank_counts(prefix: &Path) -> Vec<usize> {
    let Some(stem) = prefix.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let dir = match prefix.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let head = format!("{stem}.0-of-");
    let mut counts: Vec<usize> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix(&head)?.strip_suffix(".lbm")?.parse().ok()
        })
        .filter(|&n| n > 0)
        .collect();
    counts.sort_unstable();
    counts
}

/// A clause naming the rank counts of `written_rank_counts` other than `except` (the count a
/// restart asked for, whose files it has already looked for), e.g. " (the files beside it were
/// written by 2 ranks)"; empty when there are none.
pub fn written_by_note(prefix: &Path, except: Option<usize>) -> String {
    let counts: Vec<usize> = written_rank_counts(prefix)
        .into_iter()
        .filter(|&n| Some(n) != except)
        .collect();
    let listed: Vec<String> = counts.iter().map(|n| n.to_string()).collect();
    match counts.as_slice() {
        [] => String::new(),
        [1] => " (the files beside it were written by 1 rank)".into(),
        _ => format!(
            " (the files beside it were written by {} ranks)",
            listed.join(" or ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_counts_of_a_prefix_are_read_from_its_first_files() {
        let dir = std::env::temp_dir().join(format!("s35d-rank-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("ck");
        for (rank, ranks) in [(0, 2), (1, 2), (0, 4), (3, 4)] {
            std::fs::write(rank_path(&prefix, rank, ranks), b"").unwrap();
        }
        std::fs::write(dir.join("ck.0-of-x.lbm"), b"").unwrap();
        std::fs::write(dir.join("other.0-of-3.lbm"), b"").unwrap();
        assert_eq!(written_rank_counts(&prefix), vec![2, 4]);
        assert_eq!(
            written_by_note(&prefix, None),
            " (the files beside it were written by 2 or 4 ranks)"
        );
        assert_eq!(
            written_by_note(&prefix, Some(4)),
            " (the files beside it were written by 2 ranks)"
        );
        assert_eq!(written_by_note(&dir.join("none"), None), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
