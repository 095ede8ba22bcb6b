//! A check of the lattice-Boltzmann CUDA kernels that needs no GPU: the specialised source is
//! compiled as C++ for the host (a few macros stand in for the CUDA keywords), every thread
//! of every block runs one after the other, and the result is compared with the CPU reference
//! engine. It tests the kernels' indexing, boundary rules, collision and the in-place scheme's
//! layout (serial execution cannot show races; the scheme is race-free by construction).
//! Skips when no `g++` is installed. The 16-bit conversions are also checked on the GPU, where
//! there is one, against the same host codecs.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use super::host_cxx::compile_for_host;
use super::lbm::{boundary_table, check_in_place, node_words, unshift, Geometry, Launch};
use super::lbm_source::{lattice_source, lbm_source};
use crate::lbm::{Axis, Cell, Face, Lattice, Physics, Shape, Storage, Q, WEIGHTS};
use crate::{Engine, Plan, Real, Solver};

/// The rest of CUDA for the lattice kernels (see `host_cxx`).
const PRELUDE: &str = r#"
static Dim3 blockIdx, threadIdx, blockDim, gridDim;
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
    long long h[15];
    if (fread(h, sizeof(long long), 15, f) != 15) return 2;
    int nx = h[0], ny = h[1], nz = h[2];
    long long pitch = h[3], plane = h[4], array = h[5];
    int nflags = h[6], in_place = h[7], steps = h[8];
    // The launches as the host makes them: block shape, blocks along x and y, and the most
    // block rows of one launch along y and z (a longer lattice takes several, from block row
    // y0 and plane z0).
    const unsigned bx = h[9], by = h[10], gx = h[11], gy = h[12], most_y = h[13], most_z = h[14];
    size_t len = array * Q, cells = plane * nz;
    std::vector<double> pd = read_doubles(f, len);
    std::vector<unsigned> words(cells);
    std::vector<unsigned char> flags(cells);
    if (fread(words.data(), sizeof(unsigned), cells, f) != cells) return 2;
    if (fread(flags.data(), 1, cells, f) != cells) return 2;
    std::vector<double> bd = read_doubles(f, nflags * BC_STRIDE);
    // The populations as stored: 16-bit codes of the deviations, encoded by the kernels' own
    // conversion (the host rounded them to the storage already, so nothing changes).
    std::vector<STORE> a(len);
    for (size_t k = 0; k < len; ++k) {
        bool ok = true;
        a[k] = pop_store((REAL)pd[k], (int)(k / array), ok);
    }
    std::vector<STORE> b = a;
    std::vector<REAL> bc(bd.begin(), bd.end());
    int non_finite = 0;
    fclose(f);
    blockDim = {bx, by, 1};
    auto grid = [&](unsigned planes, auto body) {
        for (unsigned y0 = 0; y0 < gy; y0 += most_y)
        for (unsigned z0 = 0; z0 < planes; z0 += most_z) {
            gridDim = {gx, std::min(most_y, gy - y0), std::min(most_z, planes - z0)};
            for (unsigned bz = 0; bz < gridDim.z; ++bz)
            for (unsigned byi = 0; byi < gridDim.y; ++byi)
            for (unsigned bxi = 0; bxi < gx; ++bxi)
            for (unsigned ty = 0; ty < blockDim.y; ++ty)
            for (unsigned tx = 0; tx < blockDim.x; ++tx) {
                blockIdx = {bxi, byi, bz};
                threadIdx = {tx, ty, 0};
                body((int)y0, (int)z0);
            }
        }
    };
    // One launch of the two-copy step over the planes [a0, a1) then [b0, b1).
    auto launch = [&](int a0, int a1, int b0, int b1) {
        grid(a1 - a0 + b1 - b0, [&](int y0, int c0) {
            lbm_step(a.data(), b.data(), words.data(), flags.data(), bc.data(), nx, ny, nz, pitch,
                     plane, array, a0, a1, b0, y0, c0, &non_finite);
        });
    };
    // Odd steps as a split run launches them: the middle planes, then the two next to the
    // halos and the outermost ones (here none is a halo: every plane is computed once).
    auto single = [&](bool split) {
        if (split && nz >= 5) {
            launch(2, nz - 2, nz - 2, nz - 2);
            launch(0, 2, nz - 2, nz);
        } else {
            launch(0, nz, nz, nz);
        }
        std::swap(a, b);
    };
    for (int s = 0; s < steps; ++s) {
        if (!in_place) { single(s % 2 == 1); continue; }
        grid(nz, [&](int y0, int z0) {
            if (s % 2 == 0)
                lbm_aa_even(a.data(), words.data(), flags.data(), bc.data(), nx, ny, nz, pitch,
                            plane, array, y0, z0, &non_finite);
            else
                lbm_aa_odd(a.data(), words.data(), flags.data(), bc.data(), nx, ny, nz, pitch,
                           plane, array, y0, z0, &non_finite);
        });
    }
    std::vector<double> out(len);
    for (size_t k = 0; k < len; ++k) out[k] = pop_load(a[k], (int)(k / array));
    write_result(argv[2], out, non_finite);
    return 0;
}
"#;

/// Compiles the emulator for `lat`'s source into `dir` (launches within CUDA's limits; the
/// one for several launches a step is compiled when first needed, so an older one is removed);
/// false when g++ is missing.
fn compile<T: Real>(lat: &Lattice<T>, dir: &Path) -> bool {
    let _ = std::fs::remove_file(binary(dir, true));
    compile_launches(lat, dir, false)
}

/// The emulator's binary in `dir` for one launch a step (`long` false) or several.
fn binary(dir: &Path, long: bool) -> std::path::PathBuf {
    dir.join(if long { "emu-long" } else { "emu" })
}

/// Compiles the emulator for `lat`'s source with kernels for one launch a step or several;
/// false when g++ is missing.
fn compile_launches<T: Real>(lat: &Lattice<T>, dir: &Path, long: bool) -> bool {
    let mut lat = lat.clone();
    lat.prepare();
    let src = format!("{PRELUDE}{}{DRIVER}", lattice_source::<T>(&lat, long));
    compile_for_host(&src, &binary(dir, long))
}

/// Which kernels the emulator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    TwoCopies = 0,
    InPlace = 1,
}

/// The block rows a launch takes at most along y and z: CUDA's limits.
const FULL: [usize; 2] = Launch::CUDA_MOST;
/// Few block rows a launch, so that small lattices take several launches a step, as lattices
/// longer than CUDA's limits do.
const CHUNKED: [usize; 2] = [2, 3];

/// Runs `steps` emulated steps on a copy of `lat` with launches of at most `most` block rows
/// along y and z (from the emulator compiled in `dir`, and, for several launches a step, one
/// compiled for them); the kernels must not raise their flag.
fn emulate<T: Real>(
    lat: &Lattice<T>,
    dir: &Path,
    (mode, most): (Mode, [usize; 2]),
    steps: usize,
) -> Lattice<T> {
    let (out, flag) = emulate_flagged(lat, dir, (mode, most), steps);
    assert_eq!(flag, 0, "the kernel raised the non-finite flag");
    out
}

/// Runs `steps` emulated steps on a copy of `lat`; returns it and the kernels' flag (non-zero
/// when an output was not finite or, in 16-bit storage, did not fit).
fn emulate_flagged<T: Real>(
    lat: &Lattice<T>,
    dir: &Path,
    (mode, most): (Mode, [usize; 2]),
    steps: usize,
) -> (Lattice<T>, i32) {
    let in_place = mode == Mode::InPlace;
    let mut lat = lat.clone();
    lat.prepare();
    if in_place {
        check_in_place(&lat).unwrap();
    }
    let layout = *lat.layout();
    let bc = boundary_table(&lat);
    let mut bytes = Vec::new();
    let launch = Launch::new(layout.dims, most);
    let long = launch.is_long(layout.dims[2]);
    if long && !binary(dir, true).exists() {
        assert!(compile_launches(&lat, dir, true));
    }
    for h in [
        layout.dims[0],
        layout.dims[1],
        layout.dims[2],
        layout.pitch,
        layout.plane,
        layout.array,
        lat.table.flag_count(),
        mode as usize,
        steps,
        launch.block[0],
        launch.block[1],
        launch.blocks[0],
        launch.blocks[1],
        most[0],
        most[1],
    ] {
        bytes.extend_from_slice(&(h as i64).to_ne_bytes());
    }
    let doubles = |v: &[T], bytes: &mut Vec<u8>| {
        for x in v {
            bytes.extend_from_slice(&x.to_f64().unwrap().to_ne_bytes());
        }
    };
    doubles(lat.pop.storage(), &mut bytes);
    for w in node_words(lat.classes()) {
        bytes.extend_from_slice(&w.to_ne_bytes());
    }
    bytes.extend_from_slice(&lat.flags);
    doubles(&bc, &mut bytes);
    let (input, output) = (dir.join("in.bin"), dir.join("out.bin"));
    std::fs::File::create(&input)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let status = Command::new(binary(dir, long))
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
    let mut out = vec![T::zero(); len];
    if in_place && steps % 2 == 1 {
        unshift(&values, &Geometry::of(&lat), &mut out);
    } else {
        out = values;
    }
    lat.pop.storage_mut().copy_from_slice(&out);
    (lat, flag)
}

/// The reference engine's result; in 16-bit storage, rounded to the storage after every step
/// as the kernels store it.
fn reference<T: Real>(lat: &Lattice<T>, steps: usize) -> Lattice<T> {
    let mut l = lat.clone();
    let storage = l.storage();
    l.storage = Storage::Native;
    l.codes = None;
    let plan = Plan::for_lattice(&l)
        .unwrap()
        .with_engine(Engine::Reference)
        .unwrap();
    let mut solver = Solver::new(plan);
    if storage.is_16_bit() {
        for _ in 0..steps {
            solver.run(&mut l, 1).unwrap();
            l.pop.round_to(storage);
        }
    } else {
        solver.run(&mut l, steps).unwrap();
    }
    l.storage = storage;
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

/// A 9×7×5 `f32` lattice periodic on every axis, TRT with a body force.
fn forced_periodic() -> Lattice<f32> {
    let mut c = Lattice::<f32>::new(
        [9, 7, 5],
        Physics::trt(0.9, 3.0 / 16.0).with_force([1e-4, 0.0, 2e-5]),
    )
    .unwrap();
    for axis in Axis::ALL {
        c.set_periodic(axis, true);
    }
    c
}

fn check<T: Real>(lat: &Lattice<T>, cases: &[(Mode, usize)], tol: f64, what: &str) {
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
    for &(mode, steps) in cases {
        let expected = reference(lat, steps);
        assert!(expected.max_rel_diff(lat).unwrap() > 1e-4);
        // One launch a step, and several (as a lattice longer than CUDA's limits runs).
        for most in [FULL, CHUNKED] {
            let got = emulate(lat, &dir, (mode, most), steps);
            let err = got.max_rel_diff(&expected).unwrap();
            println!("{what} {mode:?} {steps} steps, at most {most:?} rows: max rel err {err:e}");
            assert!(
                err <= tol,
                "{what} {mode:?} {steps} steps {most:?}: {err:e}"
            );
        }
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
    check(
        &a,
        &[(Mode::TwoCopies, 7), (Mode::TwoCopies, 1)],
        1e-12,
        "f64 trt forced faces",
    );
    // Inlet and outlet inside: both schemes, odd and even step counts.
    let mut b = channel::<f64>(dims, Physics::bgk(0.57), true);
    scramble(&mut b, 2);
    check(
        &b,
        &[
            (Mode::TwoCopies, 6),
            (Mode::InPlace, 1),
            (Mode::InPlace, 6),
            (Mode::InPlace, 7),
        ],
        1e-12,
        "f64 bgk inside",
    );
    // A closed cavity (z not periodic) with a lid on z max.
    let mut d = Lattice::<f64>::new([10, 9, 8], Physics::trt(0.8, 0.25)).unwrap();
    for face in Face::ALL {
        d.set_face(face, Cell::Wall).unwrap();
    }
    d.set_face(
        Face::ZMax,
        Cell::MovingWall {
            velocity: [0.05, -0.02, 0.0],
        },
    )
    .unwrap();
    scramble(&mut d, 4);
    check(
        &d,
        &[(Mode::TwoCopies, 6), (Mode::InPlace, 3)],
        1e-12,
        "f64 closed cavity",
    );
    // f32, periodic everywhere, forced, all fluid: the kernels read no class bytes (ALL_BULK).
    let mut e = forced_periodic();
    scramble(&mut e, 7);
    check(
        &e,
        &[(Mode::TwoCopies, 5), (Mode::InPlace, 4)],
        1e-5,
        "f32 periodic all fluid",
    );
    // f32, periodic everywhere, forced, with obstacles (nodes whose neighbours wrap).
    let mut c = forced_periodic();
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
        &[(Mode::TwoCopies, 5), (Mode::InPlace, 5), (Mode::InPlace, 4)],
        1e-5,
        "f32 periodic",
    );
}

/// In 16-bit storage the kernels equal the reference rounded to the storage after every step.
/// They differ only where the kernel's f32 arithmetic and the reference's round a value to
/// different sides of a midpoint between two codes: at most one code, `2u·|d|`, per value and
/// step (`u` the format's unit roundoff, `d` the deviation from rest), so after `n` steps the
/// error relative to the largest population is below `n · 2u · max|d| / max|f|`. In-place and
/// two-copy runs store the same codes: they agree bit for bit.
#[test]
fn emulated_16_bit_storage_matches_the_rounded_reference() {
    let periodic = || {
        let mut c = forced_periodic();
        c.set_cell(4, 3, 2, Cell::Wall).unwrap();
        scramble(&mut c, 5);
        c
    };
    let inside = || {
        let mut b = channel::<f32>([17, 11, 6], Physics::bgk(0.57), true);
        scramble(&mut b, 6);
        b
    };
    let all_fluid = || {
        let mut c = forced_periodic();
        scramble(&mut c, 8);
        c
    };
    for storage in [Storage::F16s, Storage::F16c] {
        let lattices = [
            ("periodic", periodic()),
            ("all_fluid", all_fluid()),
            ("channel", inside()),
        ];
        for (name, mut lat) in lattices {
            lat.set_storage(storage).unwrap();
            let steps = 5;
            let tol = steps as f64
                * 2.0
                * storage.unit_roundoff()
                * 1.5
                * crate::lbm::test_flows::max_deviation(&lat)
                / (1.0 / 3.0);
            let what = format!("{storage} {name}");
            check(
                &lat,
                &[
                    (Mode::TwoCopies, steps),
                    (Mode::InPlace, steps),
                    (Mode::InPlace, steps - 1),
                ],
                tol,
                &what,
            );
            let dir = std::env::temp_dir().join(format!(
                "stencil35d-emu-{}-{storage}-{name}-bits",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            if compile(&lat, &dir) {
                let two = emulate(&lat, &dir, (Mode::TwoCopies, FULL), steps);
                let one = emulate(&lat, &dir, (Mode::InPlace, CHUNKED), steps);
                let diff = two.max_rel_diff(&one).unwrap();
                assert_eq!(diff, 0.0, "{what}: in place and two copies differ");
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// In 16-bit storage a deviation that does not fit raises the kernels' flag (the test that
/// replaces native storage's sum of the outputs), on the all-fluid and the general path, in
/// both schemes (lattices that fit run unflagged in every other emulated test).
#[test]
fn emulated_16_bit_overflow_raises_the_flag() {
    for storage in [Storage::F16s, Storage::F16c] {
        for wall in [false, true] {
            let mut lat = forced_periodic();
            if wall {
                lat.set_cell(0, 0, 0, Cell::Wall).unwrap();
            }
            // A 3x3x3 block of nodes 1.9 above rest in every direction: each fits, but the
            // centre's density is then about 37 and its collision leaves deviations near 15.
            for z in 1..4 {
                for y in 2..5 {
                    for x in 3..6 {
                        let f: [f32; Q] = std::array::from_fn(|i| (WEIGHTS[i] + 1.9) as f32);
                        lat.set_populations(x, y, z, f);
                    }
                }
            }
            lat.set_storage(storage).unwrap();
            let what = format!("{storage} overflow wall {wall}");
            let dir = std::env::temp_dir().join(format!(
                "stencil35d-emu-{}-{}",
                std::process::id(),
                what.replace(' ', "_")
            ));
            std::fs::create_dir_all(&dir).unwrap();
            if !compile(&lat, &dir) {
                println!("skipping: g++ is not installed");
                return;
            }
            for mode in [Mode::TwoCopies, Mode::InPlace] {
                assert_ne!(
                    emulate_flagged(&lat, &dir, (mode, FULL), 1).1,
                    0,
                    "{what} {mode:?}"
                );
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Plane Poiseuille flow (`lbm::test_flows`, as `tests/lbm_physics.rs` but 14 cells wide at
/// τ = 1.5) run by the emulated kernel in each 16-bit storage: the converged profile is within
/// 1% (relative L2) of the analytic parabola. Where the force a step adds is fewer codes of a
/// deviation the error grows like `0.1/R` in f16s and half that in f16c (see `test_flows`):
/// 4.3% and 2.1% for H = 18 at τ = 0.8 (R = 1.9), 0.75% and 0.49% here.
#[test]
fn emulated_16_bit_poiseuille_profile() {
    use crate::lbm::test_flows;
    for storage in [Storage::F16s, Storage::F16c] {
        let lat = test_flows::channel(4, 3, storage);
        let dir = std::env::temp_dir().join(format!(
            "stencil35d-emu-{}-poiseuille-{storage}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if !compile(&lat, &dir) {
            println!("skipping: g++ is not installed");
            return;
        }
        let lat = emulate(&lat, &dir, (Mode::InPlace, FULL), test_flows::STEPS);
        let rel = test_flows::profile_error(&lat, 2, 1);
        println!("Poiseuille in {storage}: relative L2 error {rel:.2e}");
        assert!(rel <= 0.01, "{storage}: relative L2 error {rel:e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The kernels' 16-bit conversions (the host build of the same code the device runs for f16c,
/// and the software twin of the device's `cvt` instructions for f16s) agree with the host's
/// (`lbm::Storage`) on every code, on values around every code and on the midpoint between
/// neighbouring codes (a tie, which rounds to the even code).
#[test]
fn kernel_conversions_equal_the_host_codecs() {
    const MAIN: &str = r#"
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "wb");
    for (unsigned c = 0; c < 65536; ++c) {
        const float v = decode16((unsigned short)c);
        fwrite(&v, 4, 1, f);
    }
    for (unsigned c = 0; c < 65536; ++c) {
        const float v = decode16((unsigned short)c);
        for (float s : {0.99997f, 1.0f, 1.00003f}) {
            const unsigned short e = encode16(v * s);
            fwrite(&e, 2, 1, f);
        }
        // The midpoint to the next code, a tie that rounds to the even one.
        const unsigned short e = encode16((v + decode16((unsigned short)(c + 1))) * 0.5f);
        fwrite(&e, 2, 1, f);
    }
    fclose(f);
    return 0;
}
"#;
    let lat = Lattice::<f32>::new([2, 2, 2], Physics::bgk(0.8)).unwrap();
    for storage in [Storage::F16s, Storage::F16c] {
        let dir =
            std::env::temp_dir().join(format!("stencil35d-codec-{}-{storage}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = format!(
            "{PRELUDE}{}{MAIN}",
            lbm_source::<f32>(lat.physics(), [false; 3], storage, false)
        );
        if !compile_for_host(&src, &dir.join("codec")) {
            println!("skipping: g++ is not installed");
            return;
        }
        let out = dir.join("out.bin");
        assert!(Command::new(dir.join("codec"))
            .arg(&out)
            .status()
            .unwrap()
            .success());
        let raw = std::fs::read(&out).unwrap();
        let (decoded, encoded) = raw.split_at(4 * 65536);
        let decoded: Vec<f32> = decoded
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        let encoded: Vec<u16> = encoded
            .chunks_exact(2)
            .map(|b| u16::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        check_codecs(storage, &decoded, &encoded);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Compares a kernel's conversions with the host's: `decoded[c]` is code `c` decoded,
/// `encoded[4c + k]` the code of its `k`-th probe (the value times 0.99997, 1 and 1.00003, then
/// the midpoint to the next code).
fn check_codecs(storage: Storage, decoded: &[f32], encoded: &[u16]) {
    assert_eq!((decoded.len(), encoded.len()), (65536, 4 * 65536));
    let mut checked = 0;
    for c in 0..65536usize {
        let (device, host) = (decoded[c], storage.decode(c as u16));
        assert!(
            device.to_bits() == host.to_bits() || (device.is_nan() && host.is_nan()),
            "{storage}: code {c:#06x} decodes to {device} in the kernel, {host} on the host"
        );
        let next = storage.decode((c as u16).wrapping_add(1));
        let probes = [host * 0.99997, host, host * 1.00003, (host + next) * 0.5];
        for (k, v) in probes.into_iter().enumerate() {
            if v.is_nan() {
                continue;
            }
            let code = encoded[4 * c + k];
            assert_eq!(
                code,
                storage.encode(v),
                "{storage}: {v} encodes differently"
            );
            checked += 1;
        }
    }
    assert!(checked > 200_000, "{checked} probes compared");
}

/// The conversions as the GPU runs them (f16s through the `cvt` instructions the host build
/// replaces with a software twin) agree with the host's on every code and probe of
/// `check_codecs`. Skips without a GPU.
#[test]
fn device_conversions_equal_the_host_codecs() {
    const KERNEL: &str = r#"
extern "C" __global__ void codec_check(float* decoded, unsigned short* encoded)
{
    const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 65536) return;
    const float v = decode16((unsigned short)c);
    decoded[c] = v;
    encoded[4 * c] = encode16(v * 0.99997f);
    encoded[4 * c + 1] = encode16(v);
    encoded[4 * c + 2] = encode16(v * 1.00003f);
    encoded[4 * c + 3] = encode16((v + decode16((unsigned short)(c + 1))) * 0.5f);
}
"#;
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    if super::test_gate::gpu_for_test().is_none() {
        return;
    }
    let gpu = super::device::gpu().unwrap();
    for storage in [Storage::F16s, Storage::F16c] {
        let src = format!(
            "{}{KERNEL}",
            lbm_source::<f32>(&Physics::bgk(0.8), [false; 3], storage, false)
        );
        let kernel = gpu.kernel(&src, "codec_check", 0).unwrap();
        let mut decoded = gpu.stream.alloc_zeros::<f32>(65536).unwrap();
        let mut encoded = gpu.stream.alloc_zeros::<u16>(4 * 65536).unwrap();
        let mut args = gpu.stream.launch_builder(&kernel.function);
        args.arg(&mut decoded).arg(&mut encoded);
        // SAFETY: codec_check takes a float array of 65536 values and an unsigned short array
        // of 4 * 65536, which these are; threads past 65535 return at once.
        unsafe { args.launch(LaunchConfig::for_num_elems(65536)) }.unwrap();
        let decoded = gpu.stream.clone_dtoh(&decoded).unwrap();
        let encoded = gpu.stream.clone_dtoh(&encoded).unwrap();
        check_codecs(storage, &decoded, &encoded);
        println!("{storage}: every code and probe agrees on the GPU");
    }
}
