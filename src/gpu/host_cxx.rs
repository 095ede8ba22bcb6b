//! Compiling a specialised kernel source as C++ for the host, for the emulator tests that check
//! the CUDA kernels without a GPU (`lbm_emulate`, `stencil_emulate`).

use std::path::Path;
use std::process::Command;

/// Writes `source` next to `exe` and compiles it into `exe` with g++ (C++20, threads, no FMA
/// contraction so the host rounds like the reference engine); false when g++ is not installed.
/// Panics with g++'s messages when the source does not compile.
pub(crate) fn compile_for_host(source: &str, exe: &Path) -> bool {
    let cpp = exe.with_extension("cpp");
    std::fs::write(&cpp, source).unwrap();
    match Command::new("g++")
        .args(["-O1", "-std=c++20", "-pthread", "-ffp-contract=off", "-o"])
        .arg(exe)
        .arg(&cpp)
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "g++ failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        Err(_) => false,
    }
}
