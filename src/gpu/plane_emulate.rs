//! A check of the 2D CUDA kernels (`kernels/plane.cu`) that needs no GPU: specialised sources are
//! compiled as C++ for the host, several cases per compile (each in its own namespace), and run
//! with the launch geometry the engine computes (`plane_source::geometry`). `plane_naive`'s
//! threads run one after the other; the warps of the blocked kernels run one at a time as 32
//! cooperative lanes whose shuffles exchange values through a buffer between two meetings of the
//! warp. Before every
//! pass the cells the pass must write are poisoned with NaN, so a cell left unwritten fails the
//! comparison with the scalar reference (`cpu::plane::reference`). Skips when no `g++` is
//! installed.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use super::host_cxx::compile_for_host;
use super::plane_source::{geometry, plane_source, PlaneSpec, Variant};
use crate::cpu::plane::reference;
use crate::plane::{Border, Filter2, Stencil2};
use crate::{Grid, Real};

/// The rest of CUDA for these kernels (see `host_cxx`): the launch indices, vector types
/// aligned as on the device, and warps. A warp's 32 lanes run as cooperative contexts of one host
/// thread (ucontext): `warp_sync` passes control to the next lane, so when the last lane reaches
/// it the first resumes, as at a barrier of the warp; a shuffle posts the lane's value, meets the
/// warp, reads its source lane's (its own when the source lies outside the warp, as on the
/// device) and meets it again.
const PRELUDE: &str = r#"
#include <functional>
#include <ucontext.h>
#define __restrict__
using std::max;
static Dim3 blockDim, gridDim, blockIdx;
static Dim3 lane_idx[32];
static int current_lane;
#define threadIdx (lane_idx[current_lane])
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) double2 { double x, y; };
static ucontext_t lane_ctx[32], main_ctx;
static std::function<void()> lane_body;
static void lane_entry() { lane_body(); }
static void warp_sync() {
    const int me = current_lane;
    current_lane = (me + 1) % 32;
    swapcontext(&lane_ctx[me], &lane_ctx[current_lane]);
}
// Runs `body` as the 32 lanes of warp (block `b`, row `ty` of warps).
static void run_warp(Dim3 b, unsigned ty, std::function<void()> body) {
    static std::vector<char> stacks(32 << 18);
    blockIdx = b;
    lane_body = std::move(body);
    for (int lane = 0; lane < 32; ++lane) {
        lane_idx[lane] = {(unsigned)lane, ty, 0};
        getcontext(&lane_ctx[lane]);
        lane_ctx[lane].uc_stack.ss_sp = stacks.data() + ((size_t)lane << 18);
        lane_ctx[lane].uc_stack.ss_size = 1 << 18;
        lane_ctx[lane].uc_link = &main_ctx;
        makecontext(&lane_ctx[lane], lane_entry, 0);
    }
    // Lane 0 starts the warp; a lane that returns comes back here and the next one finishes.
    for (int lane = 0; lane < 32; ++lane) {
        current_lane = lane;
        swapcontext(&main_ctx, &lane_ctx[lane]);
    }
}
alignas(16) static unsigned char shuffle_slots[32 * sizeof(double)];
template <class T> T shuffle_from(T v, int offset) {
    const int lane = threadIdx.x;
    T* slot = reinterpret_cast<T*>(shuffle_slots);
    slot[lane] = v;
    warp_sync();
    const int from = lane + offset;
    const T out = from < 0 || from >= 32 ? v : slot[from];
    warp_sync();
    return out;
}
template <class T> T __shfl_up_sync(unsigned, T v, int d) { return shuffle_from(v, -d); }
template <class T> T __shfl_down_sync(unsigned, T v, int d) { return shuffle_from(v, d); }
"#;

/// One case's driver, appended inside its namespace after the kernels: reads the launch and the
/// grid, runs the passes (poisoning what each must write when asked), writes the grid and the
/// flag.
const DRIVER: &str = r#"
int emulate(const char* in_path, const char* out_path) {
    FILE* f = fopen(in_path, "rb");
    long long h[14];
    if (fread(h, sizeof(long long), 14, f) != 14) return 2;
    const int kernel = h[0], nx = h[1], ny = h[2], passes = h[4], poison = h[9];
    const long long pitch = h[3];
    gridDim = {(unsigned)h[5], (unsigned)h[6], 1};
    blockDim = {(unsigned)h[7], (unsigned)h[8], 1};
    const int args[4] = {(int)h[10], (int)h[11], (int)h[12], (int)h[13]};
    (void)args;
    std::vector<double> in(pitch * ny);
    if (fread(in.data(), sizeof(double), in.size(), f) != in.size()) return 2;
    fclose(f);
    std::vector<REAL> a(in.begin(), in.end()), b = a;
    int flag = 0;
    for (int pass = 1; pass <= passes; ++pass) {
        for (int y = STENCIL ? RADIUS : 0; poison && y < ny - (STENCIL ? RADIUS : 0); ++y)
            for (int x = STENCIL ? RADIUS : 0; x < nx - (STENCIL ? RADIUS : 0); ++x) b[y * pitch + x] = NAN;
        for (unsigned by = 0; by < gridDim.y; ++by)
            for (unsigned bx = 0; bx < gridDim.x; ++bx)
                for (unsigned ty = 0; ty < blockDim.y; ++ty) {
                    if (kernel == 0) {
                        blockIdx = {bx, by, 0};
                        current_lane = 0;
                        for (unsigned tx = 0; tx < blockDim.x; ++tx) {
                            lane_idx[0] = {tx, ty, 0};
                            plane_naive(a.data(), b.data(), nx, ny, pitch, pass, &flag);
                        }
                        continue;
                    }
                    run_warp({bx, by, 0}, ty, [&] {
#if SYSTOLIC
                        plane_systolic(a.data(), b.data(), nx, ny, pitch, args[0], args[1], pass, &flag);
#elif defined(BT)
                        plane_blocked(a.data(), b.data(), nx, ny, pitch, args[0], args[1], args[2], args[3], pass,
                                      &flag);
#endif
                    });
                }
        std::swap(a, b);
    }
    write_result(out_path, a, flag);
    return 0;
}
"#;

/// The host-provided macros, undefined between cases.
const CASE_MACROS: [&str; 21] = [
    "REAL",
    "REAL_BYTES",
    "KW",
    "KH",
    "AX",
    "AY",
    "WEIGHTS",
    "STENCIL",
    "RADIUS",
    "BORDER",
    "BORDER_VALUE",
    "SYSTOLIC",
    "RX",
    "RY",
    "BY",
    "LEAD",
    "BT",
    "SKEW",
    "PF",
    "L2_AHEAD",
    "FULL_MASK",
];

/// A 2D kernel under test.
#[derive(Clone, Debug)]
enum Kernel2 {
    Stencil(Stencil2),
    Filter(Filter2),
}

/// One specialisation: the kernel, the variant of its pass kernel, the precision, and the rows
/// per warp the blocked kernels run with.
#[derive(Clone, Debug)]
struct Case {
    kernel: Kernel2,
    variant: Variant,
    f64: bool,
    sb: usize,
}

impl Case {
    fn spec(&self) -> PlaneSpec {
        match &self.kernel {
            Kernel2::Stencil(s) => PlaneSpec::stencil(s),
            Kernel2::Filter(f) => PlaneSpec::filter(f),
        }
    }

    /// Steps a pass of the pass kernel advances.
    fn dim_t(&self) -> usize {
        match self.variant {
            Variant::Blocked { dim_t, .. } => dim_t,
            _ => 1,
        }
    }

    /// `steps` steps of the reference on `grid`.
    fn reference<T: Real>(&self, grid: &Grid<T>, steps: usize) -> Grid<T> {
        let (mut cur, mut next) = (grid.clone(), grid.clone());
        for _ in 0..steps {
            match &self.kernel {
                Kernel2::Stencil(s) => reference::stencil_step(s, &cur, &mut next),
                Kernel2::Filter(f) => reference::filter_step(f, &cur, &mut next),
            }
            std::mem::swap(&mut cur, &mut next);
        }
        cur
    }
}
/// The compiled cases of one group.
struct Emulator {
    dir: PathBuf,
    exe: PathBuf,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// Compiles `cases` into one program named after `group`; `None` when g++ is missing.
fn build(group: &str, cases: &[Case]) -> Option<Emulator> {
    let dir = std::env::temp_dir().join(format!(
        "stencil35d-plane-emu-{}-{group}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = PRELUDE.to_string();
    for (i, c) in cases.iter().enumerate() {
        let source = if c.f64 {
            plane_source::<f64>(&c.spec(), c.variant)
        } else {
            plane_source::<f32>(&c.spec(), c.variant)
        };
        text += &format!(
            "namespace case{i} {{\n{}\n{DRIVER}\n}}\n",
            source.replace("extern \"C\" ", "")
        );
        for m in CASE_MACROS {
            text += &format!("#undef {m}\n");
        }
    }
    text += "int main(int argc, char** argv) {\n    if (argc != 4) return 3;\n    switch (atoi(argv[1])) {\n";
    for i in 0..cases.len() {
        text += &format!("    case {i}: return case{i}::emulate(argv[2], argv[3]);\n");
    }
    text += "    }\n    return 3;\n}\n";
    let exe = dir.join(group);
    let emulator = Emulator { dir, exe };
    compile_for_host(&text, &emulator.exe).then_some(emulator)
}

/// How a run of the emulator goes: which kernel, how many passes, whether poisoned.
#[derive(Clone, Copy, Debug)]
struct Run {
    naive: bool,
    passes: usize,
    poison: bool,
}

impl Emulator {
    /// Runs case `index`'s kernel as `run` says on `grid`: the result and the kernel's flag.
    fn run<T: Real>(&self, index: usize, case: &Case, run: Run, grid: &Grid<T>) -> (Grid<T>, i32) {
        let [nx, ny, _] = grid.dims();
        let variant = if run.naive {
            Variant::Naive
        } else {
            case.variant
        };
        let g = geometry(&case.spec(), variant, [nx, ny], case.sb).unwrap();
        let input = self.dir.join(format!("{index}.in"));
        let output = self.dir.join(format!("{index}.out"));
        let mut f = std::fs::File::create(&input).unwrap();
        let mut args = g.args.clone();
        args.resize(4, 0);
        let header = [
            !run.naive as i64,
            nx as i64,
            ny as i64,
            grid.pitch() as i64,
            run.passes as i64,
            g.grid[0] as i64,
            g.grid[1] as i64,
            g.block[0] as i64,
            g.block[1] as i64,
            run.poison as i64,
        ];
        for v in header.into_iter().chain(args.iter().map(|&a| a as i64)) {
            f.write_all(&v.to_le_bytes()).unwrap();
        }
        for &v in grid.storage() {
            f.write_all(&v.to_f64().unwrap().to_le_bytes()).unwrap();
        }
        drop(f);
        let out = Command::new(&self.exe)
            .arg(index.to_string())
            .arg(&input)
            .arg(&output)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "emulator failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(&output).unwrap();
        let (data, flag) = bytes.split_at(bytes.len() - 4);
        let mut got = grid.clone();
        for (g, c) in got.storage_mut().iter_mut().zip(data.chunks_exact(8)) {
            *g = T::of(f64::from_le_bytes(c.try_into().unwrap()));
        }
        (got, i32::from_le_bytes(flag.try_into().unwrap()))
    }
}

/// Runs both kernels of every case (naive, and the pass kernel) on random grids of each of
/// `dims` that have an interior for `passes` passes, against the reference within `tol`; false
/// when g++ is missing.
fn check_group<T: Real>(
    group: &str,
    cases: &[Case],
    dims: &[[usize; 2]],
    passes: usize,
    tol: f64,
) -> bool {
    let Some(emu) = build(group, cases) else {
        println!("skipping: g++ is not installed");
        return false;
    };
    for (i, case) in cases.iter().enumerate() {
        let r = case.spec().radius();
        for (d, &[nx, ny]) in dims.iter().enumerate() {
            if nx <= 2 * r || ny <= 2 * r {
                continue; // no interior: the engine launches nothing
            }
            let grid = Grid::<T>::random([nx, ny, 1], -1.0, 1.0, 40 + d as u64).unwrap();
            let want = case.reference(&grid, passes * case.dim_t());
            for naive in [true, false] {
                let run = Run {
                    naive,
                    passes: if naive { passes * case.dim_t() } else { passes },
                    poison: true,
                };
                let (got, flag) = emu.run(i, case, run, &grid);
                let err = got.max_rel_diff(&want).unwrap();
                let label = format!(
                    "{group} case {i} ({:?} {:?}, sb {}) on {nx}x{ny}, naive {naive}",
                    case.kernel, case.variant, case.sb
                );
                assert_eq!(flag, 0, "{label}: non-finite flag raised");
                assert!(err <= tol, "{label}: max rel err {err:.3e} > {tol:.0e}");
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grids for the filters: odd sizes, strips inside the image for four columns per lane
    /// (300 wide), and tiny images down to one pixel.
    const FILTER_DIMS: [[usize; 2]; 7] =
        [[67, 45], [300, 37], [1, 1], [3, 2], [5, 1], [1, 6], [33, 4]];

    /// `n` pseudo-random values in [-1, 1) from `seed`.
    fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// A `kw × kh` filter of pseudo-random weights from `seed`, every third one zero when
    /// `sparse`, with `anchor` (the centre when `None`) and `border`.
    fn filter(
        size: [usize; 2],
        anchor: Option<[usize; 2]>,
        border: Border,
        sparse: bool,
        seed: u64,
    ) -> Filter2 {
        let mut weights = pseudo_random(size[0] * size[1], seed);
        if sparse {
            weights.iter_mut().skip(1).step_by(3).for_each(|w| *w = 0.0);
        }
        let f = Filter2::new(size, &weights).unwrap().with_border(border);
        match anchor {
            Some(a) => f.with_anchor(a).unwrap(),
            None => f,
        }
    }

    fn systolic(rx: usize, ry: usize, by: usize) -> Variant {
        Variant::Systolic { rx, ry, by }
    }

    fn filter_case(f: Filter2, variant: Variant, sb: usize, f64: bool) -> Case {
        Case {
            kernel: Kernel2::Filter(f),
            variant,
            f64,
            sb,
        }
    }

    /// The naive and the systolic convolution equal the reference in f64 (1e-12) for filter sides
    /// 1 to 15, odd and even, square and not, dense and sparse, centred and off-centre anchors,
    /// every border mode, with four, three, two and one columns per lane, one to eight rows per
    /// chunk and segments that end mid-chunk.
    #[test]
    fn emulated_convolutions_match_the_reference_f64() {
        use Border::*;
        let cases = [
            (
                filter([1, 1], None, Reflect101, false, 1),
                systolic(4, 8, 2),
                16,
            ),
            (
                filter([3, 3], None, Constant(0.5), false, 2),
                systolic(4, 8, 2),
                8,
            ),
            (
                Filter2::from_name("sobel").unwrap().with_border(Replicate),
                systolic(4, 3, 1),
                5,
            ),
            (
                filter([2, 2], Some([0, 0]), Reflect, false, 3),
                systolic(2, 4, 3),
                9,
            ),
            (filter([5, 5], None, Wrap, false, 4), systolic(1, 1, 4), 3),
            (
                filter([4, 7], Some([3, 1]), Reflect101, false, 5),
                systolic(3, 2, 2),
                7,
            ),
            (
                filter([7, 7], None, Reflect, true, 6),
                systolic(4, 8, 1),
                40,
            ),
            (
                filter([8, 3], Some([0, 2]), Constant(-1.0), false, 7),
                systolic(2, 4, 2),
                6,
            ),
            (
                filter([1, 9], None, Replicate, false, 8),
                systolic(4, 2, 2),
                10,
            ),
            (filter([9, 1], None, Wrap, false, 9), systolic(4, 4, 1), 4),
            (
                filter([11, 11], None, Reflect101, true, 10),
                systolic(4, 8, 2),
                16,
            ),
            (
                filter([6, 10], Some([5, 9]), Replicate, false, 11),
                systolic(2, 3, 1),
                6,
            ),
            (
                filter([13, 13], None, Constant(0.0), true, 12),
                systolic(1, 2, 2),
                5,
            ),
            (
                filter([14, 15], Some([2, 11]), Reflect, false, 13),
                systolic(4, 8, 2),
                8,
            ),
            (
                filter([15, 15], None, Wrap, false, 14),
                systolic(2, 8, 1),
                12,
            ),
            (
                filter([12, 12], None, Reflect101, false, 15),
                systolic(4, 5, 2),
                7,
            ),
        ]
        .map(|(f, v, sb)| filter_case(f, v, sb, true));
        check_group::<f64>("conv-f64", &cases, &FILTER_DIMS, 1, 1e-12);
    }

    /// As the f64 test in f32 (1e-5), on the shapes the planner picks and a few others.
    #[test]
    fn emulated_convolutions_match_the_reference_f32() {
        use Border::*;
        let cases = [
            (
                filter([3, 3], None, Reflect101, false, 21),
                systolic(4, 8, 4),
                64,
            ),
            (
                filter([5, 5], None, Replicate, false, 22),
                systolic(4, 8, 4),
                16,
            ),
            (
                filter([7, 7], None, Constant(0.25), true, 23),
                systolic(4, 8, 2),
                16,
            ),
            (
                filter([11, 11], Some([1, 9]), Wrap, false, 24),
                systolic(4, 8, 2),
                8,
            ),
            (
                filter([15, 15], None, Reflect, false, 25),
                systolic(4, 4, 2),
                12,
            ),
            (
                filter([2, 5], None, Reflect101, false, 26),
                systolic(2, 2, 1),
                3,
            ),
        ]
        .map(|(f, v, sb)| filter_case(f, v, sb, false));
        check_group::<f32>("conv-f32", &cases, &FILTER_DIMS, 1, 1e-5);
    }

    /// A stencil of `kind` ("star" or "box") and radius `r` with pseudo-random coefficients from
    /// `seed` whose magnitudes sum to one (values stay bounded over many steps); `zero` sets one
    /// off-centre coefficient to zero (a skipped tap).
    fn stencil(kind: &str, r: usize, seed: u64, zero: bool) -> Stencil2 {
        let n = if kind == "star" {
            r + 1
        } else {
            (2 * r + 1).pow(2)
        };
        let mut c = pseudo_random(n, seed);
        if zero {
            c[1] = 0.0;
        }
        let total: f64 = if kind == "star" {
            c[0].abs() + 4.0 * c[1..].iter().map(|v| v.abs()).sum::<f64>()
        } else {
            c.iter().map(|v| v.abs()).sum()
        };
        let c: Vec<f64> = c.iter().map(|v| v / total).collect();
        if kind == "star" {
            Stencil2::star(r, &c).unwrap()
        } else {
            Stencil2::boxed(r, &c).unwrap()
        }
    }

    fn blocked(dim_t: usize, rx: usize, by: usize, skew: bool) -> Variant {
        Variant::Blocked {
            dim_t,
            rx,
            by,
            skew,
        }
    }

    fn stencil_case(s: Stencil2, variant: Variant, sb: usize, f64: bool) -> Case {
        Case {
            kernel: Kernel2::Stencil(s),
            variant,
            f64,
            sb,
        }
    }

    /// Grids for the stencils: the smallest with an interior at radius 1, odd sizes, strips
    /// inside the fixed boundary for four columns per lane (300 wide), a narrow tall one.
    const STENCIL_DIMS: [[usize; 2]; 4] = [[3, 3], [67, 45], [300, 29], [11, 40]];

    /// The naive and the temporally blocked star kernels equal the reference in f64 (1e-12) for
    /// radius 1 to 4, dim_t 1 to 8, four, two and one columns per lane, both level schedules,
    /// segments that do not divide the interior, a skipped zero tap; two passes each.
    #[test]
    fn emulated_stars_match_the_reference_f64() {
        let cases = [
            (stencil("star", 1, 1, false), blocked(1, 4, 2, false), 16),
            (stencil("star", 1, 2, false), blocked(2, 1, 1, true), 7),
            (stencil("star", 1, 3, false), blocked(8, 4, 2, false), 9),
            (stencil("star", 1, 4, false), blocked(5, 2, 3, true), 5),
            (stencil("star", 2, 5, false), blocked(3, 4, 1, true), 11),
            (stencil("star", 2, 6, true), blocked(4, 2, 2, false), 6),
            (stencil("star", 3, 7, false), blocked(2, 4, 2, false), 8),
            (stencil("star", 3, 8, false), blocked(6, 4, 1, true), 13),
            (stencil("star", 4, 9, false), blocked(1, 2, 2, false), 4),
            (stencil("star", 4, 10, false), blocked(7, 4, 1, false), 10),
        ]
        .map(|(s, v, sb)| stencil_case(s, v, sb, true));
        check_group::<f64>("star-f64", &cases, &STENCIL_DIMS, 2, 1e-12);
    }

    /// As for the stars, boxes of radius 1 to 3.
    #[test]
    fn emulated_boxes_match_the_reference_f64() {
        let cases = [
            (stencil("box", 1, 11, false), blocked(3, 4, 2, false), 12),
            (stencil("box", 1, 12, true), blocked(4, 1, 2, true), 6),
            (stencil("box", 2, 13, false), blocked(2, 2, 1, true), 9),
            (stencil("box", 2, 14, false), blocked(5, 4, 2, false), 7),
            (stencil("box", 3, 15, false), blocked(1, 4, 1, true), 5),
            (stencil("box", 3, 16, true), blocked(3, 2, 2, false), 8),
            (stencil("box", 3, 17, false), blocked(8, 4, 1, false), 20),
        ]
        .map(|(s, v, sb)| stencil_case(s, v, sb, true));
        check_group::<f64>("box-f64", &cases, &STENCIL_DIMS, 2, 1e-12);
    }

    /// As the f64 test in f32 (1e-5), on the shapes the planner picks and a few others.
    #[test]
    fn emulated_stencils_match_the_reference_f32() {
        let cases = [
            (stencil("star", 1, 21, false), blocked(4, 4, 4, false), 32),
            (stencil("star", 1, 22, false), blocked(8, 4, 2, true), 16),
            (stencil("box", 2, 23, false), blocked(2, 4, 2, false), 9),
            (stencil("star", 3, 24, false), blocked(3, 2, 1, true), 6),
        ]
        .map(|(s, v, sb)| stencil_case(s, v, sb, false));
        check_group::<f32>("stencil-f32", &cases, &STENCIL_DIMS, 2, 1e-5);
    }

    /// An infinity in the input makes every kernel's first pass store its number in the flag,
    /// the second pass leaves both buffers alone, and a finite grid raises nothing.
    #[test]
    fn emulated_kernels_flag_non_finite_values() {
        let cases = [
            filter_case(
                filter([3, 3], None, Border::Replicate, false, 31),
                systolic(4, 8, 2),
                8,
                false,
            ),
            stencil_case(
                stencil("star", 1, 32, false),
                blocked(3, 4, 2, true),
                8,
                false,
            ),
        ];
        let Some(emu) = build("nan", &cases) else {
            println!("skipping: g++ is not installed");
            return;
        };
        for (i, case) in cases.iter().enumerate() {
            for naive in [true, false] {
                let run = Run {
                    naive,
                    passes: 2,
                    poison: false,
                };
                let mut grid = Grid::<f32>::random([150, 23, 1], -1.0, 1.0, 3).unwrap();
                let (_, flag) = emu.run(i, case, run, &grid);
                assert_eq!(
                    flag, 0,
                    "case {i} naive {naive}: flag raised on a finite grid"
                );
                grid.set(70, 11, 0, f32::INFINITY);
                // Two passes swap the buffers twice: the result is pass 1's input, which pass 2
                // must not have overwritten.
                let (got, flag) = emu.run(i, case, run, &grid);
                assert_eq!(
                    flag, 1,
                    "case {i} naive {naive}: an infinity did not raise pass 1's flag"
                );
                assert!(
                    got.storage()
                        .iter()
                        .zip(grid.storage())
                        .all(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
                    "case {i} naive {naive}: a pass after the failing one wrote its buffer"
                );
            }
        }
    }
}
