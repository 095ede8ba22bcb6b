//! Checks the `run` scenarios share: numbers as the user typed them, positive finite options,
//! and an output directory that is created for a run and removed again when the run fails
//! before writing into it, with every output file of the run checked before the first step.

use std::path::{Path, PathBuf};

use stencil35d::output::{check_output_target, check_writable_dir, check_writable_file};
use stencil35d::Error;

/// `x` as a person would type it: plain between 10⁻⁴ and 10⁹ (`0.05`, `2000`), in scientific
/// notation beyond (`1e-300`, `3.6e30`), so an error never prints hundreds of digits. A value
/// read in single precision, whose double-precision digits run to 15 or more, is written with
/// the digits single precision needs (`1e30`, not `1.0000000150474662e30`).
pub fn shown(x: f64) -> String {
    let a = x.abs();
    let plain = a == 0.0 || !a.is_finite() || (1e-4..1e9).contains(&a);
    let single = x as f32;
    let scientific = format!("{x:e}");
    let mantissa = scientific.split('e').next().unwrap_or_default();
    let digits = mantissa.chars().filter(char::is_ascii_digit).count();
    let from_single = f64::from(single) == x && digits >= 15;
    match (plain, from_single) {
        (true, true) => format!("{single}"),
        (true, false) => format!("{x}"),
        (false, true) => format!("{single:e}"),
        (false, false) => format!("{x:e}"),
    }
}

/// A computed `x` to four significant digits, rounded to nearest, for messages.
pub fn approx(x: f64) -> String {
    digits(x, f64::round)
}

/// A computed upper bound `x` to four significant digits, rounded down, so that the value a
/// message offers as the largest allowed is allowed.
pub fn at_most(x: f64) -> String {
    digits(x, f64::floor)
}

/// A computed lower bound `x` to four significant digits, rounded up, so that the value a
/// message offers as the smallest allowed is allowed.
pub fn at_least(x: f64) -> String {
    digits(x, f64::ceil)
}

/// `x` rounded by `round` to four significant digits, [`shown`].
fn digits(x: f64, round: fn(f64) -> f64) -> String {
    // Zero and non-finite values have no digits to round (and log10 of 0 is −∞).
    if x == 0.0 || !x.is_finite() {
        return shown(x);
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    let rounded = round(x * scale) / scale;
    if !rounded.is_finite() {
        return shown(x);
    }
    // The division leaves noise in the last bits (0.009937000000000001): four digits in
    // scientific notation, read back, are the number meant.
    shown(format!("{rounded:.3e}").parse().unwrap_or(rounded))
}

/// Refuses `value` of the option `option` (as typed, e.g. `--re`) unless it is positive and
/// finite; `what` says what the option is, e.g. "the Reynolds number".
pub fn positive(option: &str, value: f64, what: &str) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{option} {}: {what} must be a positive, finite number",
        shown(value)
    )))
}

/// A run's output directory, watched from before it is created: if the run fails and the
/// directory (or a parent the run created for it) is still empty, dropping the guard removes
/// it, so a refused run leaves nothing behind. [`OutputDir::keep`] ends the watch after a
/// successful run.
pub struct OutputDir {
    /// The directories that did not exist when the watch began, deepest first.
    created: Vec<PathBuf>,
    /// Whether the run succeeded (nothing is removed then).
    kept: bool,
}

impl OutputDir {
    /// Starts watching `dir`: records which of it and its parents do not exist yet. Creates
    /// nothing.
    pub fn watch(dir: &Path) -> OutputDir {
        let created = dir
            .ancestors()
            .filter(|d| !d.as_os_str().is_empty())
            .take_while(|d| !d.exists())
            .map(Path::to_path_buf)
            .collect();
        OutputDir {
            created,
            kept: false,
        }
    }

    /// Watches `dir`, creates it and checks that it takes files and that each of `files`
    /// can be written there (none is a directory, say), before the run's first step.
    /// Errors: [`Error::NotWritable`] naming the directory or the first file that cannot be
    /// written (the directory is removed again if this created it).
    pub fn prepare(
        dir: &Path,
        files: impl IntoIterator<Item = PathBuf>,
    ) -> Result<OutputDir, Error> {
        let guard = OutputDir::watch(dir);
        check_writable_dir(dir, "the output directory")?;
        check_files(files)?;
        Ok(guard)
    }

    /// Ends the watch: the directory stays whatever it holds.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for OutputDir {
    /// Removes the directories the run created, deepest first, where they are still empty
    /// (`remove_dir` refuses a directory that holds anything, which is then kept).
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        for dir in &self.created {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// Most pictures (or picture and volume pairs) a run writes at a cadence: far past any film or
/// inspection, and listing and checking more before the run would itself take long.
pub const MAX_OUTPUTS: usize = 100_000;

/// Refuses a cadence `option` (as typed, e.g. `--every`) of `every` steps that writes more than
/// [`MAX_OUTPUTS`] outputs in `steps` steps, naming the smallest cadence that does not.
pub fn check_cadence(option: &str, every: usize, steps: usize) -> Result<(), Error> {
    if every == 0 || steps / every <= MAX_OUTPUTS {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{option} {every} with {steps} steps writes {} outputs, more than the {MAX_OUTPUTS} a run \
         writes at most: use {option} {} or more",
        steps / every,
        steps.div_ceil(MAX_OUTPUTS)
    )))
}

/// Checks that each of `files` can be written (not a directory nor a read-only file, nor a
/// link to one, and its directory exists and takes files) and that no two name one file.
/// Each directory is probed with a file once, by its first file, so a run with a picture
/// every step does not create and remove a probe per picture. Errors: [`Error::NotWritable`]
/// naming the first that cannot be written.
pub fn check_files(files: impl IntoIterator<Item = PathBuf>) -> Result<(), Error> {
    check_named_files(files.into_iter().map(|f| (f, None)))
}

/// [`check_files`] for files some of which an option names: each comes with what to call it
/// in an error and its option (`("the checkpoint", "--checkpoint")`), or `None` for the files
/// the run names itself. A named file that is one of the others (a checkpoint given the name
/// of a picture the run writes, however spelt) is refused, saying which option to change.
pub fn check_named_files(
    files: impl IntoIterator<Item = (PathBuf, Option<(&'static str, &'static str)>)>,
) -> Result<(), Error> {
    let mut probed = std::collections::HashSet::new();
    let mut seen: std::collections::HashMap<PathBuf, PathBuf> = std::collections::HashMap::new();
    files.into_iter().try_for_each(|(f, named)| {
        let what = named.map_or("an output file", |(what, _)| what);
        let file = check_output_target(&f, what)?;
        if let Some(first) = seen.get(&file) {
            let reason = match named {
                Some((_, option)) => format!(
                    "it names the same file as {}, which the run writes: give {option} another \
                     name",
                    first.display()
                ),
                None => format!(
                    "it names the same file as {}, which the run also writes",
                    first.display()
                ),
            };
            return Err(Error::NotWritable {
                what: what.into(),
                path: f,
                reason,
            });
        }
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let fresh = probed.insert(dir);
        seen.insert(file, f.clone());
        if fresh {
            check_writable_file(&f, what)
        } else {
            Ok(())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shown_short() {
        assert_eq!(shown(0.05), "0.05");
        assert_eq!(shown(2000.0), "2000");
        assert_eq!(shown(0.0), "0");
        assert_eq!(shown(-1.0), "-1");
        assert_eq!(shown(1e-300), "1e-300");
        assert_eq!(shown(3.6e30), "3.6e30");
        assert_eq!(shown(f64::NAN), "NaN");
        // Values read in single precision keep single precision's digits.
        assert_eq!(shown(f64::from(1e30f32)), "1e30");
        assert_eq!(shown(f64::from(0.001f32)), "0.001");
        assert_eq!(shown(0.001), "0.001");
        // Values single precision holds exactly and that need few digits keep them all.
        assert_eq!(shown(134217744.0), "134217744");
        assert_eq!(shown(2f64.powi(40)), "1.099511627776e12");
        assert_eq!(approx(1.0063456073742667e-13), "1.006e-13");
        assert_eq!(at_least(0.009936944054529901), "0.009937");
        assert_eq!(at_most(74.99995), "74.99");
        assert_eq!(at_most(75.0), "75");
        assert_eq!(at_most(12.0), "12");
        assert_eq!(approx(0.0), "0");
    }

    #[test]
    fn positive_names_the_option() {
        assert!(positive("--re", 40.0, "the Reynolds number").is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = positive("--re", bad, "the Reynolds number").unwrap_err();
            assert!(err.to_string().contains("--re"), "{err}");
        }
    }

    /// A guard dropped without `keep` removes the empty directories it saw created, and
    /// leaves a directory that existed before, or that holds a file.
    #[test]
    fn a_failed_run_removes_only_the_empty_directories_it_created() {
        let base = std::env::temp_dir().join(format!("stencil35d-outdir-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let dir = base.join("a/b");
        drop(OutputDir::prepare(&dir, []).unwrap());
        assert!(base.exists() && !base.join("a").exists());
        let guard = OutputDir::prepare(&dir, []).unwrap();
        std::fs::write(dir.join("x"), b"x").unwrap();
        drop(guard);
        assert!(dir.join("x").exists());
        std::fs::remove_file(dir.join("x")).unwrap();
        OutputDir::prepare(&dir, []).unwrap().keep();
        assert!(dir.exists());
        std::fs::create_dir_all(dir.join("f.png")).unwrap();
        let err = OutputDir::prepare(&dir, [dir.join("f.png")]).err().unwrap();
        assert!(err.to_string().contains("is a directory"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
