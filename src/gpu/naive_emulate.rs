//! A check of `stencil_naive` without a GPU: the specialised source is compiled as C++ for the
//! host and a launch's threads run one after the other (the kernel shares nothing between
//! them). One step over the whole interior is compared with the CPU reference engine, and the
//! same step launched as a split run launches it (the middle planes, then the planes on both
//! sides in one launch of two block rows) with the one launch, bit for bit. Skips when no
//! `g++` is installed.

use super::host_cxx::compile_for_host;
use super::source::stencil_source;
use super::stencil_emulate::{run_emulator, PRELUDE};
use crate::{Engine, Grid, PlanBuilder, Real, Solver, Stencil};

/// Header: nx, ny, nz, pitch, plane, then the middle planes [m0, m1): when they are not
/// empty, the step is two launches, the middle planes then the planes on both sides, and every
/// interior cell of the output first holds a value no launch computes, so that the middle
/// launch is seen to write its planes and no other.
const DRIVER: &str = r#"
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    long long h[7];
    if (fread(h, sizeof(long long), 7, f) != 7) return 2;
    const int nx = h[0], ny = h[1], nz = h[2], m0 = h[5], m1 = h[6];
    const long long pitch = h[3], plane = h[4], len = plane * nz;
    std::vector<double> in(len);
    if (fread(in.data(), sizeof(double), len, f) != (size_t)len) return 2;
    fclose(f);
    std::vector<REAL> a(in.begin(), in.end()), b = a;
    int non_finite = 0;
    auto run = [&](int a0, int a1, int b0, int b1) {
        blockDim = {32, 8, 1};
        gridDim = {(unsigned)((nx + 31) / 32), (unsigned)((ny + 7) / 8), b0 < b1 ? 2u : 1u};
        for (unsigned bz = 0; bz < gridDim.z; ++bz)
        for (unsigned by = 0; by < gridDim.y; ++by)
        for (unsigned bx = 0; bx < gridDim.x; ++bx)
        for (unsigned ty = 0; ty < 8; ++ty)
        for (unsigned tx = 0; tx < 32; ++tx) {
            blockIdx = {bx, by, bz};
            threadIdx = {tx, ty, 0};
            stencil_naive(a.data(), b.data(), nx, ny, nz, pitch, plane, a0, a1, b0, b1, 0, 1,
                          &non_finite);
        }
    };
    auto each_interior = [&](auto g) {
        for (int z = RADIUS; z < nz - RADIUS; ++z)
            for (int y = RADIUS; y < ny - RADIUS; ++y)
                for (int x = RADIUS; x < nx - RADIUS; ++x) g(z, b[z * plane + y * pitch + x]);
    };
    const REAL unset = REAL(-12345);
    if (m0 < m1) {
        each_interior([&](int, REAL& v) { v = unset; });
        run(m0, m1, m1, m1);
        each_interior([&](int z, REAL& v) {
            if ((v == unset) == (z >= m0 && z < m1)) {
                fprintf(stderr, "plane %d: the middle launch got it wrong\n", z);
                exit(3);
            }
        });
        run(RADIUS, m0, m1, nz - RADIUS);
    } else {
        run(RADIUS, nz - RADIUS, nz - RADIUS, nz - RADIUS);
    }
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
    let stencil = Stencil::from_name(name).unwrap();
    let label = format!("{}-{}-{}", name.replace(':', ""), T::DTYPE, middle.start);
    let dir = std::env::temp_dir().join(format!(
        "stencil35d-naive-emu-{}-{label}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(&label);
    let source = format!("{PRELUDE}{}\n{DRIVER}", stencil_source::<T>(&stencil, None));
    if !compile_for_host(&source, &exe) {
        println!("skipping: g++ is not installed");
        return None;
    }
    let grid = Grid::<T>::random(dims, -1.0, 1.0, 5).unwrap();
    let (got, flag) = run_emulator(&exe, &grid, &[middle.start, middle.end]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(flag, 0, "{label}: non-finite flag raised");
    let mut want = grid.clone();
    let plan = PlanBuilder::new(stencil, T::DTYPE, dims)
        .engine(Engine::Reference)
        .build()
        .unwrap();
    Solver::new(plan).run(&mut want, 1).unwrap();
    let scale = want
        .storage()
        .iter()
        .fold(0.0f64, |m, v| m.max(v.to_f64().unwrap().abs()));
    let err = want.storage().iter().zip(&got).fold(0.0f64, |m, (w, g)| {
        m.max((w.to_f64().unwrap() - g).abs() / scale)
    });
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
