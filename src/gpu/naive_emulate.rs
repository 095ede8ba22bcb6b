//! A check of `stencil_naive` without a GPU: the specialised source is compiled as C++ for the
//! host and a launch's threads run one after the other (the kernel shares nothing between
//! them), over the grids of blocks the engine's own launches have (`naive_config`). One step
//! over the whole interior is compared with the CPU reference engine, and the same step
//! launched as a split run launches it (the middle planes, then the planes on both sides in
//! one launch of two block rows) with the one launch, bit for bit. Skips when no `g++` is
//! installed.

use super::host_cxx::compile_for_host;
use super::source::stencil_source;
use super::stencil::naive_config;
use super::stencil_emulate::{error_after, launch_words, pass_launches, run_emulator};
use super::stencil_emulate::{signed_stencil, DRIVER_PARTS, PRELUDE};
use crate::{Grid, Real, Stencil};

/// Header: nx, ny, nz, pitch, plane, then the step's launches as the engine makes them
/// (`pass_launches`): the whole interior, or a split run's two.
const DRIVER: &str = r#"
int main(int argc, char** argv) {
    std::vector<REAL> a;
    const std::vector<long long> h = read_input(argv[1], 5 + LAUNCH_WORDS, a);
    const int nx = h[0], ny = h[1], nz = h[2];
    const long long pitch = h[3], plane = h[4];
    std::vector<REAL> b = a;
    int non_finite = 0;
    auto run = [&](const EmuLaunch& l) {
        blockDim = {32, 8, 1};
        gridDim = {l.gx, l.gy, l.gz};
        for (unsigned bz = 0; bz < gridDim.z; ++bz)
        for (unsigned by = 0; by < gridDim.y; ++by)
        for (unsigned bx = 0; bx < gridDim.x; ++bx)
        for (unsigned ty = 0; ty < 8; ++ty)
        for (unsigned tx = 0; tx < 32; ++tx) {
            blockIdx = {bx, by, bz};
            threadIdx = {tx, ty, 0};
            stencil_naive(a.data(), b.data(), nx, ny, nz, pitch, plane, l.a0, l.a1, l.b0, l.b1,
                          0, 1, &non_finite);
        }
    };
    run_pass(run, b, nx, ny, nz, pitch, plane, launches_at(h, 5));
    write_result(argv[2], b, non_finite);
    return 0;
}
"#;

/// One emulated step of `name`'s gpu-naive kernel on a random grid of `dims` (launched as two
/// when `middle` is not empty), compared with the reference within `tol` (relative to the
/// largest value); the result, or `None` when g++ is missing.
fn step<T: Real>(
    name: &str,
    dims: [usize; 3],
    middle: std::ops::Range<usize>,
    tol: f64,
) -> Option<Vec<f64>> {
    let stencil = signed_stencil(name);
    let label = format!("{}-{}-{}", name.replace(':', ""), T::DTYPE, middle.start);
    let dir = std::env::temp_dir().join(format!(
        "stencil35d-naive-emu-{}-{label}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(&label);
    let naive = stencil_source::<T>(&stencil, None, 0);
    let source = format!("{PRELUDE}{naive}\n{DRIVER_PARTS}{}{DRIVER}", launch_words());
    if !compile_for_host(&source, &exe) {
        println!("skipping: g++ is not installed");
        return None;
    }
    let grid = Grid::<T>::random(dims, -1.0, 1.0, 5).unwrap();
    // One step: its outputs read R planes on either side.
    let r = stencil.radius();
    let launches = pass_launches(dims, (r, r), &middle, |p| naive_config(dims, p));
    let (got, flag) = run_emulator(&exe, &grid, &launches);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(flag, 0, "{label}: non-finite flag raised");
    let err = error_after(&stencil, &grid, 1, &got);
    assert!(err <= tol, "{label}: max rel err {err:.3e} > {tol:.0e}");
    Some(got)
}

/// gpu-naive's kernel over the whole interior equals the reference (f64 1e-12, f32 1e-5
/// relative, as the device tests), and launched as a split run launches it (the planes whose
/// inputs need no halo, then the bands of R planes on both sides) it gives the same bits:
/// stars of radius 1 and 4 and the 27-point box, odd sizes with partial blocks in x and y.
#[test]
fn emulated_naive_kernel_matches_the_reference_whole_and_split() {
    let cases = [
        ("star:1", [37, 29, 23]),
        ("star:4", [41, 19, 27]),
        ("box:1", [35, 11, 21]),
    ];
    for (i, (name, dims)) in cases.into_iter().enumerate() {
        let r = Stencil::from_name(name).unwrap().radius();
        let middle = 2 * r..dims[2] - 2 * r;
        let run = |m: std::ops::Range<usize>| {
            let f64s = || step::<f64>(name, dims, m.clone(), 1e-12);
            let f32s = || step::<f32>(name, dims, m.clone(), 1e-5);
            if i % 2 == 0 {
                f64s()
            } else {
                f32s()
            }
        };
        let Some(whole) = run(0..0) else {
            return;
        };
        let split = run(middle).unwrap();
        let differ = whole
            .iter()
            .zip(&split)
            .filter(|(a, b)| a.to_bits() != b.to_bits());
        assert_eq!(differ.count(), 0, "{name}: split launches differ from one");
    }
}
