//! What the GPU test suites share: whether a GPU is there, saying which one or why not.

use stencil35d::gpu::test_gate::gpu_for_test;

/// True when a usable GPU is present (and prints it). Without one the calling test prints
/// `skipping <test>: <reason>` to stderr and should return, or, with
/// `STENCIL35D_REQUIRE_GPU=1` set (the GPU machine's runs), this panics with the reason, so a
/// run that skipped its GPU tests fails instead of showing green.
pub fn gpu_available() -> bool {
    match gpu_for_test() {
        Some(info) => {
            println!(
                "GPU: {} ({} SMs, {:.0} GB/s measured)",
                info.name, info.sms, info.bandwidth_gbs
            );
            true
        }
        None => false,
    }
}
