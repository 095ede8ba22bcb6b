//! Test support: what a test that needs a GPU (or NVRTC) does where there is none. With
//! `STENCIL35D_REQUIRE_GPU=1` (set by `scripts/device-run.sh` on the GPU machine) a missing
//! GPU fails the test with its reason, so a run in which every GPU test skipped cannot show
//! green; otherwise the test prints `skipping <test>: <reason>` to stderr and passes.

use std::fmt::Display;

/// The environment variable that turns a missing GPU from a skip into a test failure.
pub const REQUIRE_GPU_VAR: &str = "STENCIL35D_REQUIRE_GPU";

/// True when [`REQUIRE_GPU_VAR`] is `1`.
pub fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU_VAR).is_ok_and(|v| v.trim() == "1")
}

/// The calling test's name: the test harness names each test's thread after it.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("a GPU test")
        .to_string()
}

/// What `test` does with `found`, the GPU (or other piece) it needs or why there is none: the
/// piece when found; when missing, a panic naming the reason where `require` is set, else a
/// `skipping <test>: <reason>` line on stderr and `None` (the test returns and passes). Pure
/// but for that line, so both inputs can be tested without a GPU or the variable.
pub fn gpu_or_skip<T, E: Display>(require: bool, test: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(v) => Some(v),
        Err(e) if require => panic!("{test} needs a GPU ({REQUIRE_GPU_VAR}=1 is set): {e}"),
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            None
        }
    }
}

/// The GPU for the calling test, or `None` after saying why it skips (see [`gpu_or_skip`];
/// panics without one when [`gpu_required`]).
pub fn gpu_for_test() -> Option<&'static super::GpuInfo> {
    gpu_or_skip(gpu_required(), &current_test(), super::detect_gpu())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_gpu_skips_unless_required() {
        assert_eq!(gpu_or_skip(false, "t", Ok::<u32, &str>(7)), Some(7));
        assert_eq!(gpu_or_skip(true, "t", Ok::<u32, &str>(7)), Some(7));
        assert_eq!(gpu_or_skip::<u32, _>(false, "t", Err("no driver")), None);
        let required =
            std::panic::catch_unwind(|| gpu_or_skip::<u32, _>(true, "t", Err("no driver")));
        let message = required.expect_err("a required GPU that is missing must panic");
        let text = message
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            text.contains("t needs a GPU") && text.contains("no driver"),
            "{text}"
        );
    }
}
