//! The progress bar every simulation shows.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `steps` time steps, drawn when `shown` (the one process, or rank 0 of a split
/// run) and hidden otherwise.
pub fn progress_bar(shown: bool, steps: usize) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40.cyan/blue} {pos}/{len} steps [{elapsed_precise} < {eta}] {msg}",
        )
        .expect("valid template"),
    );
    bar
}
