//! A check of the stencil CUDA kernels that needs no GPU: the specialised source is compiled as
//! C++ for the host (a few macros stand in for the CUDA keywords), the blocks of a launch run
//! one after the other and the threads of a block run concurrently as host threads, with a
//! barrier for `__syncthreads`, so the shared-memory exchange between the threads is exercised
//! as on the device; warp shuffles exchange values through a buffer between two barriers of
//! the warp's 32 threads. The result is compared with the CPU reference engine. Skips when no
//! `g++` is installed.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::process::Command;

use cudarc::driver::LaunchConfig;

use super::host_cxx::compile_for_host;
use super::source::{stencil_source, BlockedShape};
use super::stencil::{Launch, Layout};
use super::zplanes::{split_pass, InFlight, ZPlanes};
use crate::{Engine, Grid, PlanBuilder, Real, Solver, Stencil};

/// The rest of CUDA for this kernel (see `host_cxx`); threads of a block are host threads.
pub(super) const PRELUDE: &str = r#"
#include <algorithm>
#include <barrier>
#include <memory>
#include <thread>
#define __shared__
#define __restrict__
#define __align__(n)
static Dim3 blockIdx, blockDim, gridDim;
static thread_local Dim3 threadIdx;
static std::barrier<>* block_barrier;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
alignas(16) unsigned char smem_raw[1 << 20];
using std::max;
// Aligned as on the device, so that the alignment check (host_cxx) catches a vector access
// at an odd index.
struct alignas(8) float2 { float x, y; };
struct alignas(16) double2 { double x, y; };
// Warp shuffles: every lane posts its value, the warp meets, each lane reads its source lane's
// (its own when the source lies outside the warp, as on the device), the warp meets again.
static std::barrier<>* warp_barrier[32];
alignas(16) static unsigned char shuffle_slots[1024 * sizeof(double)];
template <class T> T shuffle_from(T v, int offset) {
    const unsigned id = threadIdx.y * blockDim.x + threadIdx.x, warp = id / 32, lane = id % 32;
    T* slot = reinterpret_cast<T*>(shuffle_slots);
    slot[id] = v;
    warp_barrier[warp]->arrive_and_wait();
    const int from = int(lane) + offset;
    const T out = from < 0 || from >= 32 ? v : slot[warp * 32 + from];
    warp_barrier[warp]->arrive_and_wait();
    return out;
}
template <class T> T __shfl_up_sync(unsigned, T v, int d) { return shuffle_from(v, -d); }
template <class T> T __shfl_down_sync(unsigned, T v, int d) { return shuffle_from(v, d); }
"#;

/// C++ the stencil and wave kernels' drivers share: `read_input` reads a stencil driver's
/// input; `run_blocks` runs a launch's blocks; `run_pass` runs one pass's launches, the stencil
/// drivers' as [`pass_launches`] made them on the engine's own terms, and with several launches
/// checks that the first writes its planes and no other (exit code 3 otherwise).
pub(super) const DRIVER_PARTS: &str = r#"
// Reads the emulator's input file: `n` header values (nx, ny, nz, pitch, plane, then the
// driver's own), then the grid as doubles, into `grid`.
std::vector<long long> read_input(const char* path, int n, std::vector<REAL>& grid) {
    FILE* f = fopen(path, "rb");
    std::vector<long long> h(n);
    if (fread(h.data(), sizeof(long long), n, f) != (size_t)n) exit(2);
    const long long len = h[4] * h[2];
    std::vector<double> in(len);
    if (fread(in.data(), sizeof(double), len, f) != (size_t)len) exit(2);
    fclose(f);
    grid.assign(in.begin(), in.end());
    return h;
}

// Runs every block of the launch `gridDim`, one after the other, the `blockDim` threads of a
// block as host threads calling `kernel`, with fresh block and warp barriers. Shared memory is
// filled with NaN before every block: stale values from another block must never reach a
// stored cell.
template <class Kernel>
void run_blocks(Kernel kernel) {
    const unsigned nt = blockDim.x * blockDim.y;
    for (unsigned bz = 0; bz < gridDim.z; ++bz)
    for (unsigned by = 0; by < gridDim.y; ++by)
    for (unsigned bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = {bx, by, bz};
        for (size_t i = 0; i < sizeof smem_raw / sizeof(REAL); ++i)
            reinterpret_cast<REAL*>(smem_raw)[i] = NAN;
        std::barrier<> bar(nt);
        block_barrier = &bar;
        std::vector<std::unique_ptr<std::barrier<>>> warps;
        for (unsigned w = 0; w < (nt + 31) / 32; ++w) {
            warps.push_back(std::make_unique<std::barrier<>>(32));
            warp_barrier[w] = warps.back().get();
        }
        std::vector<std::thread> threads;
        for (unsigned ty = 0; ty < blockDim.y; ++ty)
        for (unsigned tx = 0; tx < blockDim.x; ++tx)
            threads.emplace_back([&, tx, ty] {
                threadIdx = {tx, ty, 0};
                kernel();
            });
        for (auto& t : threads) t.join();
    }
}

// One launch of a pass: its output planes [a0, a1) then [b0, b1), and its grid of blocks as
// the engine works it out.
struct EmuLaunch {
    int a0, a1, b0, b1;
    unsigned gx, gy, gz;
};

// The launches in header `h` from `at`: their count, then seven values each.
std::vector<EmuLaunch> launches_at(const std::vector<long long>& h, int at) {
    std::vector<EmuLaunch> out;
    for (long long i = 0; i < h[at]; ++i) {
        const long long* v = &h[at + 1 + 7 * i];
        out.push_back({(int)v[0], (int)v[1], (int)v[2], (int)v[3], (unsigned)v[4],
                       (unsigned)v[5], (unsigned)v[6]});
    }
    return out;
}

// Runs one pass's launches in order. With more than one, every interior cell of the output
// first holds a value no launch computes, so that the first launch is seen to write its
// planes and no other (exit code 3 otherwise).
template <class Run>
void run_pass(Run run, std::vector<REAL>& out, int nx, int ny, int nz, long long pitch,
              long long plane, const std::vector<EmuLaunch>& launches) {
    auto each_interior = [&](auto f) {
        for (int z = RADIUS; z < nz - RADIUS; ++z)
            for (int y = RADIUS; y < ny - RADIUS; ++y)
                for (int x = RADIUS; x < nx - RADIUS; ++x) f(z, out[z * plane + y * pitch + x]);
    };
    const REAL unset = REAL(-12345);
    if (launches.size() > 1) each_interior([&](int, REAL& v) { v = unset; });
    run(launches[0]);
    if (launches.size() > 1) {
        const EmuLaunch& f = launches[0];
        each_interior([&](int z, REAL& v) {
            const bool mine = (z >= f.a0 && z < f.a1) || (z >= f.b0 && z < f.b1);
            if ((v == unset) == mine) {
                fprintf(stderr, "plane %d: the first launch got it wrong\n", z);
                exit(3);
            }
        });
    }
    for (size_t i = 1; i < launches.size(); ++i) run(launches[i]);
}
"#;

/// Reads the grid, runs `passes` launches of the blocked kernel, writes the grid back.
const DRIVER: &str = r#"
#ifdef RX
#define EMU_KERNEL stencil_shuffle
#define EMU_BX 32
#else
#define EMU_KERNEL stencil_blocked
#define EMU_BX BX
#endif
// Header: nx, ny, nz, pitch, plane, hz, passes, then one pass's launches as the engine makes
// them (`pass_launches`): the whole interior, or a split run's two.
int main(int argc, char** argv) {
    std::vector<REAL> a;
    const std::vector<long long> h = read_input(argv[1], 7 + LAUNCH_WORDS, a);
    const int nx = h[0], ny = h[1], nz = h[2], hz = h[5], passes = h[6];
    const long long pitch = h[3], plane = h[4];
    const std::vector<EmuLaunch> launches = launches_at(h, 7);
    std::vector<REAL> b = a;
    int non_finite = 0;
    blockDim = {EMU_BX, BY, 1};
    for (int pass = 0; pass < passes; ++pass) {
        auto run = [&](const EmuLaunch& l) {
            gridDim = {l.gx, l.gy, l.gz};
            run_blocks([&] {
                EMU_KERNEL(a.data(), b.data(), nx, ny, nz, pitch, plane, l.a0, l.a1, l.b0, l.b1,
                           hz, pass + 1, &non_finite);
            });
        };
        run_pass(run, b, nx, ny, nz, pitch, plane, launches);
        std::swap(a, b);
    }
    write_result(argv[2], a, non_finite);
    return 0;
}
"#;

/// Compiles the emulator of `stencil`'s blocked kernel with `shape` and the level schedule
/// `skew` into `dir/name`; false when g++ is missing.
fn compile<T: Real>(
    stencil: &Stencil,
    shape: BlockedShape,
    skew: bool,
    dir: &Path,
    name: &str,
) -> bool {
    let skew = format!("#define SKEW {}", skew as u8);
    // The shuffle kernel's ring of staged planes: 1, 2 or 3 by dim_t, so that a ring with no
    // copy in flight, one and two are all tested.
    let stages = format!("#define STAGES {}", 1 + shape.dim_t % 3);
    // The L2 prefetch is inline PTX; the host has no L2 to ask.
    // f32 indexes with 32-bit offsets, f64 with 64-bit ones as on grids of 2³¹ elements or more.
    let elements = match T::DTYPE {
        crate::DType::F32 => 0,
        crate::DType::F64 => super::source::WIDE_INDEX,
    };
    let source = stencil_source::<T>(stencil, Some(shape), elements)
        .lines()
        .map(|l| {
            if l.starts_with("#define STAGES") {
                &stages
            } else if l.starts_with("#define L2_AHEAD") {
                "#define L2_AHEAD 0"
            } else if l.starts_with("#define SKEW") {
                &skew
            } else if l.starts_with("#define INNER") {
                // The inner-tile path in both precisions (the tested path serves every tile
                // without it).
                "#define INNER 1"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    compile_for_host(
        &format!(
            "{PRELUDE}{source}\n{DRIVER_PARTS}{}{DRIVER}",
            launch_words()
        ),
        &dir.join(name),
    )
}

/// Header words the stencil drivers read after their own: one pass's launches, as their count
/// and seven values each (`a0, a1, b0, b1` and the grid of blocks), room for two.
const LAUNCH_WORDS: usize = 1 + 2 * 7;

/// [`LAUNCH_WORDS`] for the drivers' C++.
pub(super) fn launch_words() -> String {
    format!("#define LAUNCH_WORDS {LAUNCH_WORDS}\n")
}

/// One pass's launches over a grid of `dims` as the engine makes them, as the drivers' header
/// words: over the whole interior, or, with `middle` not empty, as a split run's pass while
/// halos of `r` planes travel (`split_pass`, outputs reading `depth` planes on either side):
/// the planes that need no halo, which must be `middle`, then the bands beside them. `config`
/// is the engine's launch over some planes, whose grid of blocks the emulator runs.
pub(super) fn pass_launches(
    dims: [usize; 3],
    (r, depth): (usize, usize),
    middle: &Range<usize>,
    config: impl Fn(&ZPlanes) -> crate::Result<LaunchConfig>,
) -> Vec<usize> {
    let in_flight = match middle.is_empty() {
        true => InFlight::NONE,
        false => InFlight { lo: r, hi: r },
    };
    let (early, late) = split_pass(dims[2], r, depth, in_flight);
    if !middle.is_empty() {
        assert_eq!(
            early,
            ZPlanes::one(middle.clone()),
            "the planes needing no halo"
        );
    }
    let launches: Vec<ZPlanes> = [early, late]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    let mut words = vec![launches.len()];
    for p in &launches {
        let (gx, gy, gz) = config(p).expect("the emulated grids fit a launch").grid_dim;
        words.extend([p.a.start, p.a.end, p.b.start, p.b.end]);
        words.extend([gx, gy, gz].map(|g| g as usize));
    }
    words.resize(LAUNCH_WORDS, 0);
    words
}

/// Runs the emulated kernel of `shape` (radius `r`) on `grid` for `passes` passes in z-chunks
/// of `hz` planes, launched as the engine launches them ([`Launch::config`]), and returns the
/// result and the kernel's non-finite flag (0, or the number of the pass that raised it).
/// With `middle` not empty, each pass launches those output planes first, then the rest.
fn emulate<T: Real>(
    exe: &Path,
    grid: &Grid<T>,
    (r, shape): (usize, BlockedShape),
    (hz, passes): (usize, usize),
    middle: Range<usize>,
) -> (Vec<f64>, i32) {
    let dims = grid.dims();
    let at = Launch {
        r,
        shape,
        stream_block: hz,
        layout: Layout {
            dims,
            pitch: grid.pitch(),
            plane: grid.plane_stride(),
        },
    };
    let depth = r * shape.dim_t;
    let launches = pass_launches(dims, (r, depth), &middle, |p| at.config(p, 0));
    let header: Vec<usize> = [hz, passes].into_iter().chain(launches).collect();
    run_emulator(exe, grid, &header)
}

/// Runs the emulator `exe` on `grid`, its header the grid's dims, pitch and plane stride and
/// then `extra`; returns the result and the kernel's non-finite flag.
pub(super) fn run_emulator<T: Real>(
    exe: &Path,
    grid: &Grid<T>,
    extra: &[usize],
) -> (Vec<f64>, i32) {
    let [nx, ny, nz] = grid.dims();
    let (pitch, plane) = (grid.pitch(), grid.plane_stride());
    let input = exe.with_extension("in");
    let output = exe.with_extension("out");
    let mut f = std::fs::File::create(&input).unwrap();
    for &v in [nx, ny, nz, pitch, plane].iter().chain(extra) {
        f.write_all(&(v as i64).to_le_bytes()).unwrap();
    }
    for &v in grid.storage() {
        f.write_all(&v.to_f64().unwrap().to_le_bytes()).unwrap();
    }
    drop(f);
    let run = Command::new(exe).arg(&input).arg(&output).output().unwrap();
    assert!(
        run.status.success(),
        "emulator failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bytes = std::fs::read(&output).unwrap();
    let (data, flag) = bytes.split_at(bytes.len() - 4);
    let values = data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (values, i32::from_le_bytes(flag.try_into().unwrap()))
}

/// `name`'s benchmark stencil with every other coefficient negated: the magnitudes, which
/// sum to one, are unchanged, so random data stays bounded, and the generated kernels then
/// carry negative constants, as a user's stencils do.
pub(super) fn signed_stencil(name: &str) -> Stencil {
    let s = Stencil::from_name(name).unwrap();
    let c: Vec<f64> = s
        .coeffs()
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 1 { -v } else { v })
        .collect();
    if s.is_box() {
        Stencil::boxed(s.radius(), &c)
    } else {
        Stencil::star(s.radius(), &c)
    }
    .unwrap()
}

/// The largest difference between `got` and `steps` reference steps of `stencil` from
/// `grid`, relative to the reference's largest value.
pub(super) fn error_after<T: Real>(
    stencil: &Stencil,
    grid: &Grid<T>,
    steps: usize,
    got: &[f64],
) -> f64 {
    let mut want = grid.clone();
    let plan = PlanBuilder::new(stencil.clone(), T::DTYPE, want.dims())
        .engine(Engine::Reference)
        .build()
        .unwrap();
    Solver::new(plan).run(&mut want, steps).unwrap();
    let scale = want
        .storage()
        .iter()
        .fold(0.0f64, |m, v| m.max(v.to_f64().unwrap().abs()));
    // A NaN the kernel wrote anywhere (outside the cells its flag watches too) stays NaN
    // and fails the caller's bound.
    want.storage().iter().zip(got).fold(0.0f64, |m, (w, g)| {
        crate::rel_diff::nan_max(m, (w.to_f64().unwrap() - g).abs() / scale)
    })
}

/// A shape of the shared-memory kernel: `dim_t`, 32 x `by` threads, `ry` cells per thread.
fn smem_shape(dim_t: usize, by: usize, ry: usize) -> BlockedShape {
    BlockedShape {
        dim_t,
        bx: 32,
        by,
        ry,
        rx: 0,
        skew: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `passes` emulated passes of `name`'s blocked kernel and asserts they equal as many
    /// reference steps within `tol` (relative to the largest value); false when g++ is missing.
    fn check<T: Real>(
        name: &str,
        shape: BlockedShape,
        skew: bool,
        hz: usize,
        passes: usize,
        tol: f64,
    ) -> bool {
        check_on::<T>([37, 29, 23], (name, shape, skew), (hz, passes), tol)
    }

    /// The emulated kernel's result and flag after `passes` passes of `name`'s kernel with
    /// `shape` and schedule `skew`, z-chunks of `hz` planes, on a random grid of `dims`, each
    /// pass launched over `middle` first where it is not empty; `None` when g++ is missing.
    fn emulated<T: Real>(
        (name, shape, skew): (&str, BlockedShape, bool),
        dims: [usize; 3],
        (hz, passes, middle): (usize, usize, std::ops::Range<usize>),
    ) -> Option<(Grid<T>, Vec<f64>, i32)> {
        let stencil = signed_stencil(name);
        let exe_name = format!(
            "{}-{}-{skew}-{}-{}x{}-{}x{}-{}",
            name.replace(':', ""),
            T::DTYPE,
            shape.dim_t,
            shape.bx,
            shape.by,
            shape.rx,
            shape.ry,
            middle.start
        );
        // A directory per check: tests run in parallel threads of one process, and two may
        // check the same kernel.
        static CHECKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let check = CHECKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "stencil35d-stencil-emu-{}-{check}-{exe_name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if !compile::<T>(&stencil, shape, skew, &dir, &exe_name) {
            println!("skipping: g++ is not installed");
            return None;
        }
        let grid = Grid::<T>::random(dims, -1.0, 1.0, 7).unwrap();
        let at = (stencil.radius(), shape);
        let (got, flag) = emulate(&dir.join(&exe_name), &grid, at, (hz, passes), middle);
        std::fs::remove_dir_all(&dir).ok();
        Some((grid, got, flag))
    }

    /// [`check`] on a random grid of `dims`.
    fn check_on<T: Real>(
        dims: [usize; 3],
        (name, shape, skew): (&str, BlockedShape, bool),
        (hz, passes): (usize, usize),
        tol: f64,
    ) -> bool {
        // The shuffle kernel's schedule is part of its shape (the shared-memory kernel's is a
        // per-precision default, which `compile` overrides).
        let shape = BlockedShape {
            skew: skew && shape.rx > 0,
            ..shape
        };
        let Some((grid, got, flag)) = emulated::<T>((name, shape, skew), dims, (hz, passes, 0..0))
        else {
            return false;
        };
        let stencil = signed_stencil(name);
        assert_eq!(flag, 0, "{name} {shape:?}: non-finite flag raised");
        let err = error_after(&stencil, &grid, shape.dim_t * passes, &got);
        assert!(
            err <= tol,
            "{name} {} {shape:?} skew {skew} hz {hz}: max rel err {err:.3e} > {tol:.0e}",
            T::DTYPE
        );
        true
    }

    /// The blocked kernel, run as host threads, equals the reference for star and box
    /// stencils, dim_t 1..4, several tile shapes and stream-block lengths, with both level
    /// schedules, on an odd-sized grid (tolerances as for the device tests: f64 1e-12, f32 1e-5
    /// relative).
    #[test]
    fn emulated_blocked_kernel_matches_the_reference() {
        let shape = smem_shape;
        let cases: [(&str, BlockedShape, usize, usize); 7] = [
            ("star:1", shape(1, 4, 2), 8, 3),
            ("star:1", shape(3, 4, 3), 5, 2),
            ("star:1", shape(4, 6, 2), 64, 1),
            ("star:2", shape(2, 5, 2), 7, 2),
            ("star:4", shape(1, 3, 4), 6, 2),
            ("box:1", shape(2, 4, 3), 9, 2),
            ("box:2", shape(2, 3, 4), 6, 1),
        ];
        for skew in [false, true] {
            for (name, s, hz, passes) in cases {
                if !check::<f64>(name, s, skew, hz, passes, 1e-12) {
                    return;
                }
            }
            check::<f32>("star:1", shape(3, 4, 3), skew, 5, 2, 1e-5);
            check::<f32>("box:1", shape(2, 4, 3), skew, 9, 2, 1e-5);
        }
    }

    /// Both kernels at the deeper `dim_t` the planner searches (5 to 8, where the ghost
    /// zones of R·dim_t cells take most of a tile) and a user may force, on a small odd-sized
    /// grid of several tiles each way, in both precisions and schedules.
    #[test]
    fn emulated_kernels_at_deep_dim_t_match_the_reference() {
        let dims = [21, 13, 11];
        let cases = [
            ("star:1", smem_shape(8, 5, 4), false, 6),
            ("box:1", smem_shape(5, 3, 4), true, 7),
            ("star:1", BlockedShape::shuffle(6, 4, 4, 1, false), true, 9),
            ("star:1", BlockedShape::shuffle(8, 5, 4, 1, false), false, 5),
        ];
        for (i, (name, shape, skew, hz)) in cases.into_iter().enumerate() {
            let case = (name, shape, skew);
            let ran = if i % 2 == 0 {
                check_on::<f64>(dims, case, (hz, 1), 1e-12)
            } else {
                check_on::<f32>(dims, case, (hz, 1), 1e-5)
            };
            if !ran {
                return;
            }
        }
    }

    /// The shuffle kernel (stars), run as host threads with emulated warp shuffles, equals the
    /// reference: one, two and three cells per lane in x (odd counts exchange rows value by
    /// value; a misaligned pair access stops the emulated kernel where g++ has UBSan), several
    /// tiles in x, inner tiles (constant coefficients) and edge tiles, as many rows per thread
    /// as the radius and
    /// more (a warp's rows through shared memory overlap when fewer than 2R), dim_t 1..4,
    /// stream blocks that do not divide the grid, both level schedules; both precisions (f64
    /// 1e-12, f32 1e-5).
    #[test]
    fn emulated_shuffle_kernel_matches_the_reference() {
        let shape = |dim_t, by, ry, rx| BlockedShape::shuffle(dim_t, by, ry, rx, false);
        let cases: [(&str, BlockedShape, usize, usize); 7] = [
            ("star:1", shape(3, 10, 1, 2), 5, 1),
            ("star:1", shape(2, 4, 2, 3), 6, 1),
            ("star:1", shape(4, 3, 4, 1), 64, 1),
            ("star:2", shape(2, 5, 2, 2), 7, 1),
            ("star:2", shape(1, 3, 3, 1), 9, 2),
            ("star:3", shape(2, 4, 4, 2), 6, 1),
            ("star:4", shape(1, 3, 4, 1), 8, 1),
        ];
        for skew in [false, true] {
            for (name, s, hz, passes) in cases {
                if !check::<f64>(name, s, skew, hz, passes, 1e-12) {
                    return;
                }
            }
            check::<f32>("star:1", shape(3, 10, 1, 2), skew, 12, 1, 1e-5);
            check::<f32>("star:2", shape(2, 5, 2, 1), skew, 6, 1, 1e-5);
        }
        // Tiles whose ghost zones lie inside the fixed boundary (the kernel's inner path:
        // constant coefficients, no tests per cell) next to edge tiles, both schedules; the
        // first with ghost zones deeper than the valid part of a tile (R*dim_t 6 rows against 2),
        // where the second row of tiles still reaches the fixed boundary and beyond the grid.
        let inner = [
            ([70, 40, 9], "star:2", shape(3, 7, 2, 1), false, 5, 1),
            ([140, 50, 11], "star:1", shape(2, 8, 2, 2), false, 6, 1),
            ([140, 50, 11], "star:1", shape(2, 8, 2, 2), true, 6, 1),
            ([140, 50, 11], "star:2", shape(1, 6, 3, 2), false, 4, 2),
            ([140, 50, 11], "star:1", shape(3, 8, 3, 2), false, 5, 1),
            ([140, 50, 11], "star:1", shape(3, 8, 3, 2), true, 5, 1),
        ];
        for (i, (dims, name, s, skew, hz, passes)) in inner.into_iter().enumerate() {
            // The last two in f32.
            if i < 4 {
                check_on::<f64>(dims, (name, s, skew), (hz, passes), 1e-12);
            } else {
                check_on::<f32>(dims, (name, s, skew), (hz, passes), 1e-5);
            }
        }
        // Several tiles in x with two cells per lane (tile seams between warps' rows), and
        // more rows per thread than 2R.
        let wide = ("star:2", shape(2, 4, 5, 2), false);
        check_on::<f64>([140, 29, 17], wide, (8, 1), 1e-12);
    }

    /// A pass launched as a split run launches it (the planes whose inputs need no halo, then
    /// the bands on both sides in one launch, z-chunks numbered across both ranges) gives the
    /// one launch's result bit for bit: both blocked kernels, both precisions, chunks that do
    /// not divide the ranges, bands of R·dim_t planes.
    #[test]
    fn emulated_kernels_split_into_two_launches_equal_one_launch() {
        let blocked = smem_shape;
        let cases = [
            (
                "star:1",
                BlockedShape::shuffle(2, 4, 2, 2, true),
                5,
                [37, 29, 23],
            ),
            (
                "star:2",
                BlockedShape::shuffle(2, 5, 2, 1, false),
                4,
                [37, 29, 31],
            ),
            ("star:1", blocked(2, 4, 2), 6, [37, 29, 23]),
            ("box:1", blocked(3, 4, 3), 7, [33, 21, 25]),
        ];
        for (i, (name, shape, hz, dims)) in cases.into_iter().enumerate() {
            let r = Stencil::from_name(name).unwrap().radius();
            let depth = r * shape.dim_t;
            let middle = r + depth..dims[2] - r - depth;
            let skew = shape.skew;
            let run = |middle| {
                if i % 2 == 0 {
                    emulated::<f64>((name, shape, skew), dims, (hz, 2, middle))
                        .map(|(_, v, f)| (v, f))
                } else {
                    emulated::<f32>((name, shape, skew), dims, (hz, 2, middle))
                        .map(|(_, v, f)| (v, f))
                }
            };
            let Some((one, flag)) = run(0..0) else {
                return;
            };
            let (split, split_flag) = run(middle).unwrap();
            assert_eq!((flag, split_flag), (0, 0), "{name} {shape:?}");
            let differ = one
                .iter()
                .zip(&split)
                .filter(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ.count(), 0, "{name} {shape:?}: split launches differ");
        }
    }

    /// An infinity inside the grid makes the first pass store its number in the non-finite
    /// flag (which the host turns into `Error::NonFinite`), the later passes leave both buffers
    /// alone, and a finite grid raises nothing.
    #[test]
    fn emulated_blocked_kernel_flags_non_finite_values() {
        let stencil = Stencil::from_name("star:1").unwrap();
        let dir =
            std::env::temp_dir().join(format!("stencil35d-stencil-nan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The shared-memory kernel and the shuffle kernel (rx 2).
        for rx in [0, 2] {
            let shape = BlockedShape {
                dim_t: 2,
                bx: 32,
                by: 4,
                ry: 2,
                rx,
                skew: false,
            };
            let name = format!("nan{rx}");
            if !compile::<f32>(&stencil, shape, false, &dir, &name) {
                println!("skipping: g++ is not installed");
                return;
            }
            let mut grid = Grid::<f32>::random([37, 29, 23], -1.0, 1.0, 3).unwrap();
            let at = (stencil.radius(), shape);
            let (_, flag) = emulate(&dir.join(&name), &grid, at, (8, 2), 0..0);
            assert_eq!(flag, 0, "rx {rx}: flag raised on a finite grid");
            grid.set(20, 11, 13, f32::INFINITY);
            // Two passes swap the buffers twice: the result is pass 1's input, which pass 2
            // must not have overwritten.
            let (got, flag) = emulate(&dir.join(&name), &grid, at, (8, 2), 0..0);
            assert_eq!(flag, 1, "rx {rx}: an infinity did not raise pass 1's flag");
            let input: Vec<f64> = grid.storage().iter().map(|&v| v as f64).collect();
            assert!(
                got.iter()
                    .zip(&input)
                    .all(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
                "rx {rx}: a pass after the failing one wrote its buffer"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The `copy_shell` kernel, run block by block on the host, copies exactly the outer `r`
    /// cells on every side of a grid (padding and interior left alone), for radius 1 to 4 on
    /// odd sizes down to the smallest grid each radius allows.
    #[test]
    fn emulated_shell_copy_touches_exactly_the_boundary_layer() {
        const SHELL_DRIVER: &str = r#"
int main(int argc, char** argv) {
    const int nx = atoi(argv[1]), ny = atoi(argv[2]), nz = atoi(argv[3]), rows = atoi(argv[6]);
    const long long pitch = atoll(argv[4]), plane = atoll(argv[5]), len = plane * nz;
    const unsigned blocks = atoi(argv[7]), threads = atoi(argv[8]);
    std::vector<REAL> src(len), dst(len, REAL(-1));
    for (long long i = 0; i < len; ++i) src[i] = REAL(i + 1);
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
    for (unsigned b = 0; b < blocks; ++b)
        for (unsigned t = 0; t < threads; ++t) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            copy_shell(src.data(), dst.data(), nx, ny, nz, pitch, plane, rows);
        }
    write_result(argv[9], dst, 0);
    return 0;
}
"#;
        use crate::gpu::stencil::{shell_blocks, SHELL_THREADS};
        for (r, dims) in [
            (1, [5, 3, 4]),
            (1, [37, 29, 23]),
            (2, [5, 5, 6]),
            (3, [19, 8, 7]),
            (4, [9, 11, 9]),
        ] {
            let stencil = Stencil::from_name(&format!("star:{r}")).unwrap();
            let dir = std::env::temp_dir()
                .join(format!("stencil35d-shell-emu-{}-{r}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let exe = dir.join("shell");
            let source = stencil_source::<f64>(&stencil, None, 0);
            if !compile_for_host(&format!("{PRELUDE}{source}\n{SHELL_DRIVER}"), &exe) {
                println!("skipping: g++ is not installed");
                return;
            }
            let grid = Grid::<f64>::new(dims).unwrap();
            let (pitch, plane) = (grid.pitch(), grid.plane_stride());
            let (rows, blocks) = shell_blocks(dims, r);
            let out = exe.with_extension("out");
            let args = [dims[0], dims[1], dims[2], pitch, plane, rows, blocks];
            let run = Command::new(&exe)
                .args(args.iter().map(|v| v.to_string()))
                .arg(SHELL_THREADS.to_string())
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
            let bytes = std::fs::read(&out).unwrap();
            std::fs::remove_dir_all(&dir).ok();
            let got: Vec<f64> = bytes[..bytes.len() - 4]
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let [nx, ny, nz] = dims;
            for (i, &v) in got.iter().enumerate() {
                let (z, y, x) = (i / plane, i % plane / pitch, i % pitch);
                let inside = x < nx && y < ny && z < nz;
                let edge = |c: usize, n: usize| c < r || c + r >= n;
                let shell = inside && (edge(x, nx) || edge(y, ny) || edge(z, nz));
                let want = if shell { (i + 1) as f64 } else { -1.0 };
                assert_eq!(v, want, "r {r} {dims:?}: cell ({x}, {y}, {z})");
            }
        }
    }
}
