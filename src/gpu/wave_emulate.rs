//! A check of the wave CUDA kernels (`kernels/wave.cu`) that needs no GPU: the specialised source
//! is compiled as C++ for the host; the blocks of a launch run one after the other and the
//! threads of a block concurrently as host threads, with a barrier for `__syncthreads` (the
//! naive kernel, which has none, runs its threads one after the other). The driver rotates the
//! time levels among four `u` buffers and two `φ` buffers as the engine does, poisons with NaN
//! every cell a launch must write, and fills shared memory with NaN before every block, so an
//! unwritten cell or a stale neighbour that reaches an output fails the comparison with the CPU
//! reference engine on the library's random test shot. The host-side lists (taps, amplitudes, probe map, `meta`, profiles) come from
//! the engine's own functions. Skips when no `g++` is installed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::host_cxx::compile_for_host;
use super::source::WIDE_INDEX;
use super::stencil_emulate::{DRIVER_PARTS, PRELUDE};
use super::wave::{amplitudes, meta, profiles, tap_cells, ProbeMap};
use super::wave_launches::{BlockedTerms, Form, PassLaunch, PassTerms};
use super::wave_source::{wave_source, WaveShape, NAIVE_BLOCK};
use super::wave_tiles::tile_origin;
use super::zplanes::InFlight;
use crate::wave::rigid::settle_rigid_faces;
use crate::wave::test_shot::{diff, random_shot};
use crate::wave::{Face, WaveKernel, Wavefield};
use crate::{Engine, PlanBuilder, Real, Solver};

/// Reads the state, the lists and a pass's launches, runs `passes` passes rotating the levels,
/// writes `u`, `u⁻`, `φ`, the probe values and the flag.
const DRIVER: &str = r#"
#ifdef BT
#define EMU_BT BT
#else
#define EMU_BT 1
#endif
static FILE* in;
static std::vector<REAL> reals(size_t n) {
    std::vector<double> v(n);
    if (fread(v.data(), sizeof(double), n, in) != n) exit(2);
    return std::vector<REAL>(v.begin(), v.end());
}
static std::vector<int> ints(size_t n) {
    std::vector<int> v(n);
    if (fread(v.data(), sizeof(int), n, in) != n) exit(2);
    return v;
}
static void put(FILE* f, const std::vector<REAL>& v) {
    std::vector<double> out(v.begin(), v.end());
    fwrite(out.data(), sizeof(double), out.size(), f);
}
// One launch of a pass as the engine queues it (`PassTerms::launches`): its form (0 the pass's
// kernel, 1 the inner kernel, 2 a mirror), its output planes [a0, a1) and [b0, b1) (a mirror's
// axis and side in a0, a1), its grid and block, its z-chunk length.
struct WaveLaunch {
    int form, a0, a1, b0, b1;
    unsigned gx, gy, gz, bx, by;
    int hz;
};
// Runs the threads of every block of the launch one after the other (kernels without barriers).
template <class Kernel>
void run_serial(Kernel kernel) {
    for (unsigned by = 0; by < gridDim.y; ++by)
        for (unsigned bx = 0; bx < gridDim.x; ++bx) {
            blockIdx = {bx, by, 0};
            for (unsigned ty = 0; ty < blockDim.y; ++ty)
                for (unsigned tx = 0; tx < blockDim.x; ++tx) {
                    threadIdx = {tx, ty, 0};
                    kernel();
                }
        }
}
// Header: nx, ny, nz, pitch, plane, passes, taps, probed cells, launches a pass, launches before
// the halos arrive; then 11 words a launch (WaveLaunch); then the state and lists.
int main(int argc, char** argv) {
    in = fopen(argv[1], "rb");
    long long h[10];
    if (fread(h, sizeof(long long), 10, in) != 10) return 2;
    const int nx = h[0], ny = h[1], nz = h[2], passes = h[5], ntaps = h[6], np = h[7];
    const int nl = h[8], early = h[9];
    const long long pitch = h[3], plane = h[4], len = plane * nz;
    std::vector<long long> lw(11 * (size_t)nl);
    if (fread(lw.data(), sizeof(long long), lw.size(), in) != lw.size()) return 2;
    std::vector<WaveLaunch> launches;
    for (int i = 0; i < nl; ++i) {
        const long long* v = &lw[11 * i];
        launches.push_back({(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (unsigned)v[5],
                            (unsigned)v[6], (unsigned)v[7], (unsigned)v[8], (unsigned)v[9], (int)v[10]});
    }
    std::vector<REAL> U[4], PHI[2];
    U[0] = reals(len);
    U[1] = reals(len);
    PHI[0] = reals(len);
    const auto coef = reals(len);
    const auto damp = reals(2 * (nx + ny + nz));
    const REAL one_leak = reals(1)[0];
    const auto amp = reals(std::max(1LL, (long long)passes * EMU_BT * ntaps));
    const auto meta = ints(14);
    const auto taps = ints(std::max(1, 3 * ntaps));
    const auto pstart = ints((size_t)nx * ny + 1);
    const auto pz = ints(std::max(1, np));
    fclose(in);
    U[2] = U[0];
    U[3] = U[1];
    PHI[1] = PHI[0];
    std::vector<REAL> pout(std::max(1LL, (long long)passes * EMU_BT * np), NAN);
    int flag = 0, cu = 0, cp = 1, cf = 0;
    for (int pass = 1; pass <= passes; ++pass) {
        int fr[2], k = 0;
        for (int i = 0; i < 4; ++i)
            if (i != cu && i != cp) fr[k++] = i;
        const int of = 1 - cf;
        for (int z = RADIUS; z < nz - RADIUS; ++z)
            for (int y = RADIUS; y < ny - RADIUS; ++y)
                for (int x = RADIUS; x < nx - RADIUS; ++x) {
                    const long long i = z * plane + y * pitch + x;
                    U[fr[0]][i] = NAN;
                    if (EMU_BT > 1) U[fr[1]][i] = NAN;
                    const bool inner = x >= meta[0] && x < meta[1] && y >= meta[2] && y < meta[3] &&
                                       z >= meta[4] && z < meta[5];
                    if (!inner) PHI[of][i] = NAN;
                }
        const int s0 = (pass - 1) * EMU_BT;
        auto step = [&](auto kernel, const WaveLaunch& l) {
            return [&, kernel] {
                kernel(U[cu].data(), U[cp].data(), PHI[cf].data(), coef.data(), damp.data(), meta.data(), taps.data(),
                       amp.data(), pstart.data(), pz.data(), pout.data(), U[fr[0]].data(), U[fr[1]].data(),
                       PHI[of].data(), nx, ny, nz, pitch, plane, l.a0, l.a1, l.b0, l.b1, l.hz, s0, pass, &flag,
                       one_leak);
            };
        };
        auto run = [&](const WaveLaunch& l) {
            gridDim = {l.gx, l.gy, l.gz};
            blockDim = {l.bx, l.by, 1};
            if (l.form == 2) {
                // The mirror of a rigid face on the current u.
                run_serial([&] { wave_mirror(U[cu].data(), nx, ny, nz, pitch, plane, l.a0, l.a1); });
                return;
            }
#ifdef BT
#if BT == 1
            if (l.form == 1) {
                run_blocks(step(wave_blocked_inner, l));
                return;
            }
#endif
            if (l.form == 0) {
                run_blocks(step(wave_blocked, l));
                return;
            }
#else
            if (l.form == 0) {
                run_serial(step(wave_naive, l));
                return;
            }
#endif
            fprintf(stderr, "no kernel of form %d here\n", l.form);
            exit(4);
        };
        // The launches before the halos arrive must write the new u in their planes and in no
        // other (exit code 3 otherwise): a split run's bands are computed after them.
        auto check_early = [&] {
            std::vector<char> mine(nz, 0);
            for (int i = 0; i < early; ++i) {
                const WaveLaunch& l = launches[i];
                if (l.form == 2) continue;
                for (int z = l.a0; z < l.a1; ++z) mine[z] = 1;
                for (int z = l.b0; z < l.b1; ++z) mine[z] = 1;
            }
            for (int z = RADIUS; z < nz - RADIUS; ++z)
                for (int y = RADIUS; y < ny - RADIUS; ++y)
                    for (int x = RADIUS; x < nx - RADIUS; ++x)
                        if (std::isnan(U[fr[0]][z * plane + y * pitch + x]) == (mine[z] != 0)) {
                            fprintf(stderr, "plane %d: the launches before the halos got it wrong\n", z);
                            exit(3);
                        }
        };
        for (int i = 0; i < nl; ++i) {
            if (i == early) check_early();
            run(launches[i]);
        }
        // The blocked kernel at more than one step writes the new u⁻; the others leave it to
        // the host: the old u.
        cp = EMU_BT > 1 ? fr[1] : cu;
        cu = fr[0];
        cf = of;
    }
    FILE* out = fopen(argv[2], "wb");
    put(out, U[cu]);
    put(out, U[cp]);
    put(out, PHI[cf]);
    put(out, pout);
    fwrite(&flag, sizeof(int), 1, out);
    fclose(out);
    return 0;
}
"#;

/// Compiles the kernels of `kernel` in `T` (the blocked one with `shape`, indexing a grid of
/// `elements` elements) into `dir/name`; false when g++ is missing.
fn compile<T: Real>(
    kernel: &WaveKernel,
    shape: Option<WaveShape>,
    elements: usize,
    dir: &Path,
    name: &str,
) -> bool {
    let source = format!(
        "{PRELUDE}{}\n{DRIVER_PARTS}{DRIVER}",
        wave_source::<T>(kernel, shape, elements)
    );
    compile_for_host(&source, &dir.join(name))
}

/// Runs `passes` passes of the compiled emulator `exe` on `field`, each pass the launches of
/// `pass` ([`PassTerms::launches`]: the list and how many go before the halos arrive), the
/// one-step tiles starting at `origin`, moving the field on as the engine does.
fn emulate<T: Real>(
    exe: &Path,
    field: &mut Wavefield<T>,
    (steps_per_pass, passes): (usize, usize),
    pass: &(Vec<PassLaunch>, usize),
    origin: [i64; 2],
) {
    let dims = field.dims();
    let (pitch, plane) = (field.u.pitch(), field.u.plane_stride());
    let probes = ProbeMap::new(field);
    let steps = steps_per_pass * passes;
    let (launches, before_halos) = pass;
    let header = [
        dims[0],
        dims[1],
        dims[2],
        pitch,
        plane,
        passes,
        field.injections.len(),
        probes.z.len(),
        launches.len(),
        *before_halos,
    ];
    let header = header
        .into_iter()
        .chain(launches.iter().flat_map(launch_words));
    let mut bytes = Vec::new();
    for v in header {
        bytes.extend_from_slice(&(v as i64).to_le_bytes());
    }
    let reals = |bytes: &mut Vec<u8>, v: &[T]| {
        for x in v {
            bytes.extend_from_slice(&x.to_f64().unwrap().to_le_bytes());
        }
    };
    for g in [&field.u, &field.prev, &field.phi, &field.coef] {
        reals(&mut bytes, g.storage());
    }
    reals(&mut bytes, &profiles(field));
    reals(&mut bytes, &[T::one() + field.damping.leak]);
    let mut amp = amplitudes(field, steps);
    amp.resize(amp.len().max(1), T::zero());
    reals(&mut bytes, &amp);
    let one = |mut v: Vec<i32>| {
        v.resize(v.len().max(1), 0);
        v
    };
    for list in [
        meta(field, &probes, origin).to_vec(),
        one(tap_cells(field)),
        probes.start.clone(),
        one(probes.z.clone()),
    ] {
        for i in list {
            bytes.extend_from_slice(&i.to_le_bytes());
        }
    }
    let input = exe.with_extension("in");
    let output = exe.with_extension("out");
    std::fs::File::create(&input)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let status = Command::new(exe).arg(&input).arg(&output).status().unwrap();
    assert!(status.success(), "{} failed", exe.display());
    let out = std::fs::read(&output).unwrap();
    let mut values = out[..out.len() - 4]
        .chunks_exact(8)
        .map(|c| T::of(f64::from_le_bytes(c.try_into().unwrap())));
    for g in [&mut field.u, &mut field.prev, &mut field.phi] {
        for v in g.storage_mut() {
            *v = values.next().unwrap();
        }
    }
    let pout: Vec<T> = values.collect();
    let flag = i32::from_le_bytes(out[out.len() - 4..].try_into().unwrap());
    assert_eq!(flag, 0, "the emulated kernel raised the non-finite flag");
    probes.append(&pout, steps, &mut field.traces);
    field.step += steps;
    settle_rigid_faces(field);
}

/// The driver's 11 words of a launch (`WaveLaunch`).
fn launch_words(l: &PassLaunch) -> [usize; 11] {
    let (form, planes) = match l.form {
        Form::Step => (0, l.planes.args().map(|z| z as usize)),
        Form::Inner => (1, l.planes.args().map(|z| z as usize)),
        Form::Mirror { axis, side } => (2, [axis, side, 0, 0]),
    };
    let (g, b) = (l.cfg.grid_dim, l.cfg.block_dim);
    let [a0, a1, b0, b1] = planes;
    [
        form,
        a0,
        a1,
        b0,
        b1,
        g.0 as usize,
        g.1 as usize,
        g.2 as usize,
        b.0 as usize,
        b.1 as usize,
        l.hz,
    ]
}

/// The reference engine's run of `steps` steps.
fn reference<T: Real>(input: &Wavefield<T>, steps: usize) -> Wavefield<T> {
    let plan = PlanBuilder::new(input.kernel().clone(), T::DTYPE, input.dims())
        .engine(Engine::Reference)
        .threads(1)
        .build()
        .unwrap();
    let mut f = input.clone();
    Solver::new(plan).run(&mut f, steps).unwrap();
    f
}

/// A scratch directory for one test's executables.
fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("{name}-{n}");
    let dir =
        std::env::temp_dir().join(format!("stencil35d-wave-emu-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One case: the naive kernel, or the blocked one at `dim_t` with a run that ends with a shorter
/// pass (`tail` steps, its own kernel), against the reference within `tol`; `wide`: the blocked
/// kernel indexes with 64-bit offsets as on grids of 2³¹ elements or more; `split`: each
/// blocked pass is two launches, planes in the middle of z then the rest. The one-step tiles
/// start where the engine starts them.
fn check<T: Real>(
    kernel: WaveKernel,
    dims: [usize; 3],
    shape: Option<WaveShape>,
    (tail, tol): (usize, f64),
    (wide, split): (bool, bool),
) {
    check_at::<T>(kernel, dims, shape, (tail, tol), (wide, split), None);
}

/// [`check`] with the one-step tiles starting at `origin` when given.
fn check_at<T: Real>(
    kernel: WaveKernel,
    dims: [usize; 3],
    shape: Option<WaveShape>,
    (tail, tol): (usize, f64),
    (wide, split): (bool, bool),
    origin: Option<[i64; 2]>,
) {
    let dir = scratch(&format!("{}-{}", T::DTYPE.name(), kernel.radius()));
    let input = random_shot::<T>(kernel.clone(), dims, 11);
    let case = format!("{kernel} {dims:?} {shape:?} tail {tail} split {split}");
    let elements = if wide {
        WIDE_INDEX
    } else {
        input.u.storage().len()
    };
    if !compile::<T>(&kernel, shape, elements, &dir, "full") {
        eprintln!("skipped: g++ is not installed");
        return;
    }
    let r = kernel.radius();
    let mut f = input.clone();
    let dim_t = shape.map_or(1, |s| s.dim_t);
    let place = |s: Option<WaveShape>| match (s, origin) {
        (Some(s), Some(o)) if s.dim_t == 1 => o,
        (Some(s), _) => tile_origin(&s, r, dims, input.damping.inner),
        (None, _) => [r as i64; 2],
    };
    let at = place(shape);
    let pass = pass_launches(&f, shape, at, split);
    emulate(&dir.join("full"), &mut f, (dim_t, 2), &pass, at);
    if tail > 0 {
        let short = shape.map(|s| WaveShape { dim_t: tail, ..s });
        assert!(compile::<T>(&kernel, short, elements, &dir, "short"));
        let at = place(short);
        let pass = pass_launches(&f, short, at, split);
        emulate(&dir.join("short"), &mut f, (tail, 1), &pass, at);
    }
    let steps = 2 * dim_t + tail;
    let want = reference(&input, steps);
    let d = diff(&f, &want);
    assert!(d <= tol, "{case}: relative difference {d:e} > {tol:e}");
    assert_eq!(f.step(), want.step(), "{case}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A pass's launches as the engine queues them for `shape` (`None`: the naive step) on
/// `field`, the one-step tiles starting at `origin`; with `split`, as a split run's pass while
/// halos of `R` planes travel on one side or both, which must leave launches both before and
/// after the halos arrive.
fn pass_launches<T: Real>(
    field: &Wavefield<T>,
    shape: Option<WaveShape>,
    origin: [i64; 2],
    split: bool,
) -> (Vec<PassLaunch>, usize) {
    let kernel = field.kernel();
    let r = kernel.radius();
    let m = meta(field, &ProbeMap::new(field), origin);
    let inner_z = m[4] as usize..m[5] as usize;
    let terms = PassTerms {
        kernel,
        dims: field.dims(),
        origin,
        inner_z: &inner_z,
        blocked: shape.map(|s| BlockedTerms::of(s, r, T::DTYPE)),
    };
    assert!(
        !split || terms.overlaps(),
        "this pass never overlaps a halo exchange"
    );
    // The sides with halos in flight vary with the grid's depth, so that the tests cover a
    // rank between two others and one at either end of a split axis (a launch whose first
    // range is empty).
    let in_flight = match (split, field.dims()[2] % 3) {
        (false, _) => InFlight::NONE,
        (true, 0) => InFlight { lo: r, hi: r },
        (true, 1) => InFlight { lo: 0, hi: r },
        (true, _) => InFlight { lo: r, hi: 0 },
    };
    let (launches, before_halos) = terms.launches(in_flight).expect("the grids fit a launch");
    if split {
        let early = &launches[..before_halos];
        assert!(early.iter().any(|l| !matches!(l.form, Form::Mirror { .. })));
        assert!(
            before_halos < launches.len(),
            "no band is left for after the halos"
        );
    }
    (launches, before_halos)
}

/// The f32 and f64 tolerances: the reference is FMA-free scalar code, the kernels contract and
/// order their sums differently, a few ulps per step as in the CPU engines' tests.
const TOL_F32: f64 = 1e-5;
const TOL_F64: f64 = 1e-12;

#[test]
fn the_naive_wave_kernel_matches_the_reference() {
    for order in [2, 8] {
        let k = WaveKernel::new(10.0, 1e-3, 2500.0)
            .with_order(order)
            .with_pml(order / 2 + 4);
        check::<f32>(
            k.clone(),
            [2 * (order / 2 + 4) + 5, 21, 2 * (order / 2 + 4) + 3],
            None,
            (1, TOL_F32),
            (false, false),
        );
        check::<f64>(
            k,
            [41, 2 * (order / 2 + 4) + 2, 2 * (order / 2 + 4) + 4],
            None,
            (0, TOL_F64),
            (false, false),
        );
    }
    assert_eq!(NAIVE_BLOCK, [32, 8]);
}

#[test]
fn the_blocked_wave_kernel_matches_the_reference_at_every_dim_t() {
    // Tiles with a few output columns each, so that the grid has edge, layer and inner tiles;
    // z chunks that cut the axis unevenly. One cell per thread at dim_t 1 takes two planes per
    // barrier (`WaveShape::sync_planes`), so odd chunks end with a single plane.
    for (order, dim_t, bx, ry, hz) in [
        (2, 1, 8, 3, 5),
        (6, 1, 8, 1, 5),
        (4, 2, 16, 5, 7),
        (8, 1, 12, 4, 9),
        (8, 2, 16, 8, 6),
        (2, 4, 12, 5, 4),
        (6, 3, 24, 11, 11),
    ] {
        let r = order / 2;
        let k = WaveKernel::new(10.0, 1e-3, 2500.0)
            .with_order(order)
            .with_pml(r + 4);
        let shape = WaveShape {
            dim_t,
            bx,
            by: 2,
            ry,
            rx: 1,
            hz,
        };
        let n = 2 * (r + 4) + 3;
        // Deep enough in z that a split pass has planes to compute before the halos arrive.
        let nz = (n + 1).max(2 * r * (dim_t + 1) + 2);
        check::<f32>(
            k.clone(),
            [n + 4, n, nz],
            Some(shape),
            ((dim_t > 1) as usize, TOL_F32),
            (false, true),
        );
        // f64 with 64-bit offsets, the index type of grids of 2³¹ elements or more.
        let free = k.clone().with_free_surface();
        check::<f64>(
            free,
            [n, n + 3, n + 2],
            Some(shape),
            (dim_t - 1, TOL_F64),
            (true, false),
        );
    }
}

#[test]
fn the_wave_kernels_run_without_layers() {
    let mut k = WaveKernel::new(10.0, 1e-3, 2500.0).with_order(4);
    k.faces = [[Face::Free; 2]; 3];
    check::<f64>(k.clone(), [19, 17, 15], None, (0, TOL_F64), (false, false));
    let shape = WaveShape {
        dim_t: 2,
        bx: 20,
        by: 2,
        ry: 9,
        rx: 1,
        hz: 4,
    };
    check::<f64>(k, [19, 17, 15], Some(shape), (1, TOL_F64), (false, true));
}

#[test]
fn the_wave_kernels_mirror_rigid_faces() {
    let k = WaveKernel::new(10.0, 1e-3, 2500.0)
        .with_order(8)
        .with_pml(8)
        .with_face(0, 0, Face::Rigid)
        .with_face(1, 1, Face::Rigid)
        .with_face(2, 0, Face::Rigid);
    check::<f32>(k.clone(), [23, 21, 20], None, (0, TOL_F32), (false, false));
    let shape = WaveShape {
        dim_t: 1,
        bx: 16,
        by: 2,
        ry: 5,
        rx: 1,
        hz: 7,
    };
    check::<f32>(
        k.clone(),
        [23, 21, 20],
        Some(shape),
        (0, TOL_F32),
        (false, false),
    );
    let pairs = WaveShape { rx: 2, ..shape };
    check::<f32>(k, [23, 21, 20], Some(pairs), (0, TOL_F32), (false, false));
}

#[test]
fn the_one_step_wave_kernel_moves_two_cells_per_thread() {
    // Two cells per thread along x (vector loads and stores) at order 4 and 8: tiles of odd
    // and even output widths, grids whose last pair of columns holds one updated cell (odd
    // inner widths) or none beyond the grid, layers and a free surface, split launches, both
    // precisions with 32- and 64-bit offsets.
    for (order, bx, ry, hz, nx) in [(8, 6, 3, 5, 27), (4, 4, 2, 7, 24), (8, 8, 1, 9, 30)] {
        let r = order / 2;
        let k = WaveKernel::new(10.0, 1e-3, 2500.0)
            .with_order(order)
            .with_pml(r + 4);
        let shape = WaveShape {
            dim_t: 1,
            bx,
            by: 2,
            ry,
            rx: 2,
            hz,
        };
        let n = 2 * (r + 4) + 3;
        check::<f32>(
            k.clone(),
            [nx, n, n + 1],
            Some(shape),
            (0, TOL_F32),
            (false, true),
        );
        check::<f64>(
            k.with_free_surface(),
            [nx + 1, n + 2, n],
            Some(shape),
            (0, TOL_F64),
            (true, false),
        );
    }
}

#[test]
fn the_one_step_wave_kernel_runs_the_planners_tall_tile() {
    // The shape the planner gives order 8 `f32` on cards that copy few bytes per SM cycle (an
    // H100): 32×16 threads of two rows of two cells, a 64×32 tile, in 32-plane chunks, on a
    // grid with inner and layers' tiles, tiles wider and taller than the inner box and a last
    // row of tiles reaching beyond the grid.
    let k = WaveKernel::new(10.0, 1e-3, 2500.0)
        .with_order(8)
        .with_pml(8);
    let shape = WaveShape {
        dim_t: 1,
        bx: 32,
        by: 16,
        ry: 2,
        rx: 2,
        hz: 32,
    };
    check::<f32>(k, [141, 77, 45], Some(shape), (0, TOL_F32), (false, true));
}

#[test]
fn the_one_step_wave_kernel_splits_inner_and_layer_tiles() {
    // The thinnest layers on a grid large enough that whole tiles lie inside the inner box, with
    // the source and a receiver among them: the inner kernel computes those tiles' planes of the
    // inner box and the layers' kernel every other cell (an inner tile's plane that neither
    // writes stays NaN and fails the comparison). One cell per thread (two planes per barrier)
    // and two rows of two, whole and split passes, both precisions.
    for (order, rx) in [(8, 2), (6, 1), (4, 2)] {
        let k = WaveKernel::new(10.0, 1e-3, 2500.0)
            .with_order(order)
            .with_pml(order / 2 + 4);
        let shape = WaveShape {
            dim_t: 1,
            bx: 8 / rx,
            by: 2,
            ry: rx,
            rx,
            hz: 5,
        };
        let dims = [37, 33, 30];
        check::<f32>(k.clone(), dims, Some(shape), (0, TOL_F32), (false, true));
        check::<f64>(k, dims, Some(shape), (0, TOL_F64), (true, false));
    }
}

#[test]
fn the_one_step_wave_kernels_take_tiles_from_any_origin() {
    // The engine starts the one-step tiles where the fewest cells take the layers' form
    // (gpu/wave_tiles.rs), at or below the radius and perhaps before the grid: the kernels
    // must give the same field from every such origin, storing none of the first tiles'
    // columns and rows outside the updated cells. (Reads before the grid are clamped in the
    // kernels; this emulation would not see one that was not.)
    let k = WaveKernel::new(10.0, 1e-3, 2500.0)
        .with_order(8)
        .with_pml(8);
    let shape = WaveShape {
        dim_t: 1,
        bx: 8,
        by: 2,
        ry: 2,
        rx: 2,
        hz: 6,
    };
    let dims = [45, 35, 31];
    for origin in [[4, 4], [2, 1], [-6, -3], [-10, 1]] {
        check_at::<f32>(
            k.clone(),
            dims,
            Some(shape),
            (0, TOL_F32),
            (false, true),
            Some(origin),
        );
    }
    let odd = WaveShape {
        bx: 8,
        ry: 1,
        rx: 1,
        ..shape
    };
    check_at::<f64>(
        k,
        dims,
        Some(odd),
        (0, TOL_F64),
        (true, false),
        Some([-3, -1]),
    );
}
