//! What the GPU test suites share: whether a GPU is there, saying which one or why not.

use stencil35d::gpu::detect_gpu;

/// True when a usable GPU is present (and prints it); otherwise prints why the calling test
/// skips.
pub fn gpu_available() -> bool {
    match detect_gpu() {
        Ok(info) => {
            println!(
                "GPU: {} ({} SMs, {:.0} GB/s measured)",
                info.name, info.sms, info.bandwidth_gbs
            );
            true
        }
        Err(e) => {
            println!("skipping GPU test: {e}");
            false
        }
    }
}
