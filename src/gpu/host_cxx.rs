//! Compiling a specialised kernel source as C++ for the host, for the emulator tests that check
//! the CUDA kernels without a GPU (`lbm_emulate`, `stencil_emulate`).

use std::path::Path;
use std::process::Command;

/// What every emulated kernel needs from the host compiler, prepended by [`compile_for_host`]:
/// the CUDA keywords as macros, the launch indices, the read-only load, and `write_result`,
/// which writes the final grid (as `f64`) and the kernel's non-finite flag for the test to read.
const CUDA_ON_HOST: &str = r#"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct Dim3 { unsigned x, y, z; };
template <class T> T __ldg(const T* p) { return *p; }
using std::fma;
using std::isfinite;
using std::min;
template <class T> void write_result(const char* path, const std::vector<T>& grid, int non_finite) {
    std::vector<double> out(grid.begin(), grid.end());
    FILE* f = fopen(path, "wb");
    fwrite(out.data(), sizeof(double), out.size(), f);
    fwrite(&non_finite, sizeof(int), 1, f);
    fclose(f);
}
"#;

/// Writes `source`, after the CUDA-on-host prelude, next to `exe` and compiles it into `exe` with g++ (C++20, threads, no FMA
/// contraction so the host rounds like the reference engine, and the alignment check of
/// [`alignment_check_flags`]); false when g++ is not installed, unless
/// [`REQUIRE_HOST_CXX_VAR`] is `1` (CI sets it, so the emulated kernels cannot skip there).
/// Panics with g++'s messages when the source does not compile.
pub(crate) fn compile_for_host(source: &str, exe: &Path) -> bool {
    let cpp = exe.with_extension("cpp");
    std::fs::write(&cpp, format!("{CUDA_ON_HOST}{source}")).unwrap();
    match Command::new("g++")
        .args(["-O1", "-std=c++20", "-pthread", "-ffp-contract=off"])
        .args(alignment_check_flags())
        .arg("-o")
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
        Err(e) if std::env::var(REQUIRE_HOST_CXX_VAR).is_ok_and(|v| v.trim() == "1") => {
            panic!("the host emulator needs g++ ({REQUIRE_HOST_CXX_VAR}=1 is set): {e}")
        }
        Err(_) => false,
    }
}

/// The environment variable that turns a missing g++ from a skipped emulator test into a
/// failure.
pub(crate) const REQUIRE_HOST_CXX_VAR: &str = "STENCIL35D_REQUIRE_HOST_CXX";

/// g++ flags that make a misaligned access (one the device would fault on, the host would not)
/// stop the emulated kernel: UBSan's alignment check, where this g++ can link it (probed once);
/// none where it cannot, and the emulator then checks the arithmetic only.
fn alignment_check_flags() -> &'static [&'static str] {
    static FLAGS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    FLAGS.get_or_init(|| {
        const CHECK: &[&str] = &["-fsanitize=alignment", "-fno-sanitize-recover=alignment"];
        let dir = std::env::temp_dir().join(format!("stencil35d-ubsan-{}", std::process::id()));
        let ok = std::fs::create_dir_all(&dir).is_ok()
            && std::fs::write(dir.join("probe.cpp"), "int main() { return 0; }\n").is_ok()
            && Command::new("g++")
                .args(CHECK)
                .arg("-o")
                .arg(dir.join("probe"))
                .arg(dir.join("probe.cpp"))
                .output()
                .is_ok_and(|o| o.status.success());
        std::fs::remove_dir_all(&dir).ok();
        if ok {
            CHECK
        } else {
            &[]
        }
    })
}
