//! A check of the lattice-Boltzmann CUDA kernels that needs no GPU: the specialised source is
//! compiled as C++ for the host (a few macros stand in for the CUDA keywords), every thread
//! of every block runs one after the other, and the result is compared with the CPU reference
//! engine. It tests the kernels' indexing, boundary rules, collision and the in-place scheme's
//! layout (serial execution cannot show races; the scheme is race-free by construction).
//! Skips when no `g++` is installed.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use super::lbm::{boundary_tables, check_in_place, unshift, Geometry};
use super::lbm_source::lbm_source;
use crate::lbm::{Axis, Cell, Face, Lattice, Physics, Shape, Q, WEIGHTS};
use crate::{Engine, Plan, Real, Solver};

/// CUDA keywords for the host compiler.
const PRELUDE: &str = r#"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
struct Dim3 { unsigned x, y, z; };
static Dim3 blockIdx, threadIdx, blockDim;
template <class T> T __ldg(const T* p) { return *p; }
using std::fma;
using std::isfinite;
"#;

/// Reads the lattice, runs the kernels serially, writes the populations.
const DRIVER: &str = r#"
static std::vector<double> read_doubles(FILE* f, size_t n) {
    std::vector<double> v(n);
    if (fread(v.data(), sizeof(double), n, f) != n) { fprintf(stderr, "short read\n"); exit(2); }
    return v;
}
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    long long h[10];
    if (fread(h, sizeof(long long), 10, f) != 10) return 2;
    int nx = h[0], ny = h[1], nz = h[2];
    long long pitch = h[3], plane = h[4], array = h[5];
    int nflags = h[6], in_place = h[7], steps = h[8], bx = h[9];
    size_t len = array * Q, cells = plane * nz;
    std::vector<double> pd = read_doubles(f, len);
    std::vector<unsigned char> classes(cells), flags(cells), kinds(nflags);
    if (fread(classes.data(), 1, cells, f) != cells) return 2;
    if (fread(flags.data(), 1, cells, f) != cells) return 2;
    if (fread(kinds.data(), 1, nflags, f) != (size_t)nflags) return 2;
    std::vector<double> bd = read_doubles(f, nflags * BC_STRIDE);
    fclose(f);
    std::vector<REAL> a(pd.begin(), pd.end()), b = a, bc(bd.begin(), bd.end());
    int non_finite = 0;
    blockDim = {(unsigned)bx, (unsigned)(128 / bx), 1};
    for (int s = 0; s < steps; ++s) {
        for (unsigned gz = 0; gz < (unsigned)nz; ++gz)
        for (unsigned gy = 0; gy < (ny + blockDim.y - 1) / blockDim.y; ++gy)
        for (unsigned gx = 0; gx < (nx + blockDim.x - 1) / blockDim.x; ++gx)
        for (unsigned ty = 0; ty < blockDim.y; ++ty)
        for (unsigned tx = 0; tx < blockDim.x; ++tx) {
            blockIdx = {gx, gy, gz};
            threadIdx = {tx, ty, 0};
            if (!in_place)
                lbm_step(a.data(), b.data(), classes.data(), flags.data(), kinds.data(), bc.data(),
                         nx, ny, nz, pitch, plane, array, &non_finite);
            else if (s % 2 == 0)
                lbm_aa_even(a.data(), classes.data(), flags.data(), kinds.data(), bc.data(),
                            nx, ny, nz, pitch, plane, array, &non_finite);
            else
                lbm_aa_odd(a.data(), classes.data(), flags.data(), kinds.data(), bc.data(),
                           nx, ny, nz, pitch, plane, array, &non_finite);
        }
        if (!in_place) std::swap(a, b);
    }
    std::vector<double> out(a.begin(), a.end());
    f = fopen(argv[2], "wb");
    fwrite(out.data(), sizeof(double), len, f);
    fwrite(&non_finite, sizeof(int), 1, f);
    fclose(f);
    return 0;
}
"#;

/// Compiles the emulator for `lat`'s source into `dir`; false when g++ is missing.
fn compile<T: Real>(lat: &Lattice<T>, dir: &Path) -> bool {
    let src = format!(
        "{PRELUDE}{}{DRIVER}",
        lbm_source::<T>(lat.physics(), lat.periodic())
    );
    let cpp = dir.join("emu.cpp");
    std::fs::write(&cpp, src).unwrap();
    match Command::new("g++")
        .args(["-O1", "-std=c++17", "-ffp-contract=off", "-o"])
        .arg(dir.join("emu"))
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

/// Runs `steps` emulated steps on a copy of `lat`.
fn emulate<T: Real>(lat: &Lattice<T>, dir: &Path, in_place: bool, steps: usize) -> Lattice<T> {
    let mut lat = lat.clone();
    lat.prepare();
    if in_place {
        check_in_place(&lat).unwrap();
    }
    let layout = *lat.layout();
    let (kinds, bc) = boundary_tables(&lat);
    let mut bytes = Vec::new();
    let bx = layout.dims[0].div_ceil(32).clamp(1, 4) * 32;
    for h in [
        layout.dims[0],
        layout.dims[1],
        layout.dims[2],
        layout.pitch,
        layout.plane,
        layout.array,
        kinds.len(),
        in_place as usize,
        steps,
        bx,
    ] {
        bytes.extend_from_slice(&(h as i64).to_ne_bytes());
    }
    let doubles = |v: &[T], bytes: &mut Vec<u8>| {
        for x in v {
            bytes.extend_from_slice(&x.to_f64().unwrap().to_ne_bytes());
        }
    };
    doubles(lat.pop.storage(), &mut bytes);
    bytes.extend_from_slice(&lat.classes().class);
    bytes.extend_from_slice(&lat.flags);
    bytes.extend_from_slice(&kinds);
    doubles(&bc, &mut bytes);
    let (input, output) = (dir.join("in.bin"), dir.join("out.bin"));
    std::fs::File::create(&input)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let status = Command::new(dir.join("emu"))
        .arg(&input)
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    let raw = std::fs::read(&output).unwrap();
    let len = lat.pop.storage().len();
    let values: Vec<T> = raw[..8 * len]
        .chunks_exact(8)
        .map(|c| T::of(f64::from_ne_bytes(c.try_into().unwrap())))
        .collect();
    let flag = i32::from_ne_bytes(raw[8 * len..8 * len + 4].try_into().unwrap());
    assert_eq!(flag, 0, "the kernel raised the non-finite flag");
    let mut out = vec![T::zero(); len];
    if in_place && steps % 2 == 1 {
        unshift(&values, &Geometry::of(&lat), &mut out);
    } else {
        out = values;
    }
    lat.pop.storage_mut().copy_from_slice(&out);
    lat
}

fn reference<T: Real>(lat: &Lattice<T>, steps: usize) -> Lattice<T> {
    let mut l = lat.clone();
    let plan = Plan::for_lattice(&l)
        .unwrap()
        .with_engine(Engine::Reference)
        .unwrap();
    Solver::new(plan).run(&mut l, steps).unwrap();
    l
}

/// Sets every non-wall node near a random equilibrium (a simple deterministic generator).
fn scramble<T: Real>(lat: &mut Lattice<T>, seed: u64) {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let [nx, ny, nz] = lat.dims();
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                if lat.cell(x, y, z).is_wall() {
                    continue;
                }
                let rho = 1.0 + 0.05 * next();
                let u = [0.05 * next(), 0.05 * next(), 0.05 * next()];
                let feq = crate::lbm::equilibrium(rho, u);
                let f: [T; Q] = std::array::from_fn(|i| T::of(feq[i] + WEIGHTS[i] * 0.02 * next()));
                lat.set_populations(x, y, z, f);
            }
        }
    }
}

/// Walls on y, periodic z, a moving lid on y max, a moving-wall cylinder, a resting box;
/// inlet and outlet on the x faces (`inside`: one node inside walls on the x faces).
fn channel<T: Real>(dims: [usize; 3], physics: Physics, inside: bool) -> Lattice<T> {
    let [nx, ny, nz] = dims;
    let mut lat = Lattice::<T>::new(dims, physics).unwrap();
    lat.set_periodic(Axis::Z, true);
    let inlet = Cell::Inlet {
        velocity: [0.05, 0.01, -0.01],
    };
    let outlet = Cell::Outlet { density: 1.01 };
    if inside {
        lat.set_face(Face::XMin, Cell::Wall).unwrap();
        lat.set_face(Face::XMax, Cell::Wall).unwrap();
        for z in 0..nz {
            for y in 0..ny {
                lat.set_cell(1, y, z, inlet).unwrap();
                lat.set_cell(nx - 2, y, z, outlet).unwrap();
            }
        }
    } else {
        lat.set_face(Face::XMin, inlet).unwrap();
        lat.set_face(Face::XMax, outlet).unwrap();
    }
    lat.set_face(Face::YMin, Cell::Wall).unwrap();
    lat.set_face(
        Face::YMax,
        Cell::MovingWall {
            velocity: [0.06, 0.0, 0.02],
        },
    )
    .unwrap();
    lat.fill_shape(
        &Shape::Cylinder {
            axis: Axis::Z,
            centre: [nx as f64 / 2.0, ny as f64 / 2.0, 0.0],
            radius: 2.0,
        },
        Cell::MovingWall {
            velocity: [0.0, 0.02, 0.01],
        },
    )
    .unwrap();
    lat.fill_shape(
        &Shape::Box {
            min: [3.0, 2.0, 1.0],
            max: [5.0, 3.0, 3.0],
        },
        Cell::Wall,
    )
    .unwrap();
    lat
}

fn check<T: Real>(lat: &Lattice<T>, cases: &[(bool, usize)], tol: f64, what: &str) {
    let dir = std::env::temp_dir().join(format!(
        "stencil35d-emu-{}-{}",
        std::process::id(),
        what.replace(' ', "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    if !compile(lat, &dir) {
        println!("skipping: g++ is not installed");
        return;
    }
    for &(in_place, steps) in cases {
        let expected = reference(lat, steps);
        assert!(expected.max_rel_diff(lat).unwrap() > 1e-4);
        let got = emulate(lat, &dir, in_place, steps);
        let err = got.max_rel_diff(&expected).unwrap();
        println!("{what} in place {in_place} {steps} steps: max rel err {err:e}");
        assert!(
            err <= tol,
            "{what} in place {in_place} {steps} steps: {err:e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emulated_kernels_match_the_reference() {
    let dims = [17, 11, 6];
    // Inlet and outlet on the closed x faces (zero-gradient reads): two copies only.
    let mut a = channel::<f64>(
        dims,
        Physics::trt(0.7, 0.25).with_force([2e-5, -1e-5, 1e-5]),
        false,
    );
    scramble(&mut a, 1);
    check(&a, &[(false, 7)], 1e-12, "f64 trt forced faces");
    // Inlet and outlet inside: both schemes, odd and even step counts.
    let mut b = channel::<f64>(dims, Physics::bgk(0.57), true);
    scramble(&mut b, 2);
    check(
        &b,
        &[(false, 6), (true, 1), (true, 6), (true, 7)],
        1e-12,
        "f64 bgk inside",
    );
    // f32, periodic everywhere, forced, with obstacles (nodes whose neighbours wrap).
    let mut c = Lattice::<f32>::new(
        [9, 7, 5],
        Physics::trt(0.9, 3.0 / 16.0).with_force([1e-4, 0.0, 2e-5]),
    )
    .unwrap();
    for axis in Axis::ALL {
        c.set_periodic(axis, true);
    }
    c.set_cell(0, 0, 0, Cell::Wall).unwrap();
    c.set_cell(
        8,
        6,
        4,
        Cell::MovingWall {
            velocity: [0.02, 0.03, 0.0],
        },
    )
    .unwrap();
    c.set_cell(4, 3, 2, Cell::Wall).unwrap();
    scramble(&mut c, 3);
    check(
        &c,
        &[(false, 5), (true, 5), (true, 4)],
        1e-5,
        "f32 periodic",
    );
}
