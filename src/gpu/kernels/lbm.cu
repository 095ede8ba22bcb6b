// stencil35d GPU D3Q19 lattice-Boltzmann kernels: one templated source, specialised at run time
// by NVRTC (see src/gpu/lbm_source.rs), the same scheme as the CPU engines (src/lbm/mod.rs):
// pull streaming with half-way bounce-back (plus Ladd's term next to moving walls), then BGK or
// TRT collision with Guo forcing, written as in src/lbm/collide.rs (pairs (i, i + 9) split into
// symmetric and antisymmetric parts); inlet and outlet nodes are reset to the equilibrium of the
// prescribed velocity (density) with the streamed density (velocity).
//
// The host prepends these definitions:
//   REAL                 float or double
//   FORCED               1 when a body force is set
//   PX, PY, PZ           1 for a periodic axis
//   WP, HALF_WP, HALF_WM relaxation constants (omega+, omega+/2, omega-/2)
//   WP_W  {3}            omega+ * w for weight classes rest, axis, diagonal
//   WM3_W {3}            3 omega- * w
//   HALF_FORCE, FORCE {3}, EVEN_W {3}, EVEN_C {9}, ODD_C {9}: Guo forcing constants (collide.rs)
//   EARLY_LOADS          1: the two-copy step loads the populations before testing the class
//   STORAGE              0: populations stored as REAL; 1: f16s; 2: f16c (src/lbm/storage.rs:
//                        16-bit codes of the deviation f_i - w_i, arithmetic in float)
//   ALL_BULK             1 when every node is bulk fluid (no wall, inlet or outlet anywhere: a
//                        periodic box): no class byte is read, and the node's first loads are its
//                        populations rather than a byte whose value they wait for
//
// Storage is the host lattice's own structure-of-arrays layout (one memcpy moves it): population
// i of node (x, y, z) at i * array + z * plane + y * pitch + x. Per node the kernels read a node
// word, the host's classification (src/lbm/classify.rs, as the CPU engines use it): the class
// byte (0 bulk fluid, bits for wall / near wall / near a moving wall / inlet / outlet) and, from
// bit LINK_BIT on, which of the node's links end in a wall. Nodes next to a moving wall also read
// those neighbours' flag bytes and their rows of the boundary table `bc` (BC_STRIDE values: the
// moving-wall momentum term of each direction, the inlet velocity, the outlet density), which
// inlet and outlet nodes read for themselves.
//
// Kernels:
//   lbm_step      two copies: pull from src, write dst; one thread per node, x fastest (coalesced)
//   lbm_aa_even   in place (AA pattern), from the canonical state: node x pulls f_i from
//                 (x - c_i, i) and writes f*_i to (x + c_i, opp i); next to a wall both use (x, opp i)
//   lbm_aa_odd    in place, the step after: node x reads f_i from (x, opp i) and writes f*_i to
//                 (x, i), which is the canonical state again
// Wall nodes are never read or written by any kernel (both copies hold them unchanged).

#define Q 19
#define BC_STRIDE 24
#define BC_INLET 19
#define BC_OUTLET 22

#define CLASS_WALL 1
#define CLASS_NEAR_WALL 2
#define CLASS_NEAR_MOVING 4
#define CLASS_INLET 8
#define CLASS_OUTLET 16

// A node word: the class byte in bits 0-7, bit LINK_BIT + i set when the neighbour x - c_i of a
// node next to a wall is a wall (resting or moving; CLASS_NEAR_MOVING when one of them moves).
#define LINK_BIT 8

// Resident 128-thread blocks per SM the two-copy step is compiled for: 8 caps it at 64
// registers (1024 threads per SM instead of the 640 its 94 registers allow), which measured
// faster on the H200 at 256^3 (f32 20,050 instead of 17,698 MLUPS, f16s 28,054 instead of
// 20,716, f16c 22,051 instead of 17,806); f64, which spills at 64, is compiled for 5 (the
// host defines it: F64_MIN_BLOCKS in src/gpu/lbm_source.rs). The in-place kernels
// (LBM_AA_MIN_BLOCKS) keep the compiler's registers in f32 and f64 (f32: up to 96, and the
// even step spills when capped at 8 blocks; capped, the 256^3 periodic box ran 14,177 MLUPS
// against 23,569). 16-bit storage is capped at 8 where the lattice has walls: f16c's steps fit
// 64 registers once their loads and stores are declared apart (AA_RESTRICT, below), and its
// 256^3 cavity ran 25,562-25,567 MLUPS capped against 24,830 uncapped; f16s's even step spills
// 32 bytes, and still its cavity ran 29,426-29,428 against 28,277-28,282 at 256^3 and 30,041-
// 30,044 against 28,900 at 512^3. Periodic boxes (ALL_BULK) are capped less or not at all: the
// f16c box at 6 blocks (78 registers, no spill) ran 30,614-30,654 against 30,048-30,055
// uncapped and 25,844 at 8 (its even step spilling 100 bytes); the f16s box, uncapped, ran
// 37,286-37,295 against 35,360-35,372 at 6 blocks and 34,497-34,522 at 7 (no spills).
#ifndef LBM_MIN_BLOCKS
#define LBM_MIN_BLOCKS 8
#endif
#ifndef LBM_AA_MIN_BLOCKS
#if STORAGE != 0 && !ALL_BULK
#define LBM_AA_MIN_BLOCKS 8
#elif STORAGE == 2
#define LBM_AA_MIN_BLOCKS 6
#else
#define LBM_AA_MIN_BLOCKS 1
#endif
#endif

__device__ constexpr int CX[Q] = {0, 1, 0, 0, 1, 1, 1, 1, 0, 0, -1, 0, 0, -1, -1, -1, -1, 0, 0};
__device__ constexpr int CY[Q] = {0, 0, 1, 0, 1, -1, 0, 0, 1, 1, 0, -1, 0, -1, 1, 0, 0, -1, -1};
__device__ constexpr int CZ[Q] = {0, 0, 0, 1, 0, 0, 1, -1, 1, -1, 0, 0, -1, 0, 0, -1, 1, -1, 1};

__device__ __forceinline__ constexpr int opp(int i) { return i == 0 ? 0 : (i < 10 ? i + 9 : i - 9); }

// ---------------------------------------------------------------------------------------------
// Population storage. Every load and store of a population goes through pop_load / pop_store
// with the population's direction i (the array it sits in, or its opposite: both have the
// same weight). In 16-bit storage a population is held as the code of its deviation from the
// rest value w_i; both conversions round to nearest, ties to even, exactly as the host's
// (storage.rs), so host and device agree on every code.
// ---------------------------------------------------------------------------------------------
#if STORAGE == 0
typedef REAL STORE;
__device__ __forceinline__ REAL pop_load(STORE s, int) { return s; }
__device__ __forceinline__ STORE pop_store(REAL v, int, bool&) { return v; }
#else
typedef unsigned short STORE;

__device__ __forceinline__ constexpr float weight(int i)
{
    return i == 0 ? (float)(1.0 / 3.0) : ((i <= 3 || (i >= 10 && i <= 12)) ? (float)(1.0 / 18.0) : (float)(1.0 / 36.0));
}

__device__ __forceinline__ unsigned bits_of(float v)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(v);
#else
    unsigned u;
    memcpy(&u, &v, 4);
    return u;
#endif
}

__device__ __forceinline__ float float_of(unsigned u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float v;
    memcpy(&v, &u, 4);
    return v;
#endif
}

#if STORAGE == 1
// f16s: IEEE binary16 of d * 2^15.
#define MAX_DEVIATION (65504.0f / 32768.0f)
__device__ __forceinline__ float decode16(unsigned short c)
{
#ifdef __CUDA_ARCH__
    float v;
    asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(c));
    return v * (1.0f / 32768.0f);
#else
    const unsigned e = (c >> 10) & 0x1f, m = c & 0x3ff;
    float a;
    if (e == 0) a = (float)m * 5.9604644775390625e-8f; // 2^-24
    else if (e == 31) a = m ? NAN : INFINITY;
    else a = float_of(((e + 112) << 23) | (m << 13));
    a *= 1.0f / 32768.0f;
    return (c & 0x8000) ? -a : a;
#endif
}
__device__ __forceinline__ unsigned short encode16(float d)
{
    const float x = d * 32768.0f;
#ifdef __CUDA_ARCH__
    unsigned short c;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(c) : "f"(x));
    return c;
#else
    const unsigned u = bits_of(x), sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;
    unsigned m;
    if (a > 0x7f800000) m = 0x7e00;                        // NaN
    else if (a >= 0x477ff000) m = 0x7c00;                  // rounds to 65520 or more: infinity
    else if (a < 0x38800000) m = (unsigned)rintf(fabsf(x) * 16777216.0f); // subnormal: 2^-24 units
    else {
        const unsigned r = a - ((127u - 15u) << 23);       // rebias, round 23 bits to 10
        m = (r + 0xfff + ((r >> 13) & 1)) >> 13;
    }
    return (unsigned short)(sign | m);
#endif
}
#else
// f16c: 1 sign, 4 exponent, 11 mantissa bits; 2^(e-15) (1 + m/2048), subnormal 2^-25 m.
#define MAX_DEVIATION (2.0f - 1.0f / 2048.0f)
// Branch-free: the code's exponent and mantissa bits, shifted into a float's, are the value
// times 2^-112 (a subnormal float for e = 0, exactly m 2^-137), so one exact multiplication
// by 2^112 decodes every code; the sign bit is placed first and the product keeps it.
__device__ __forceinline__ float decode16(unsigned short c)
{
    // Sign-extended, shifted left by 12 and masked: the sign at bit 31, the rest at 12..26.
    const unsigned code = (unsigned)(int)(short)c << 12;
    return float_of(code & 0x87fff000u) * 5.192296858534828e33f;
}
// Rounding in the floating-point adder: |d| + 2^(k + 12), where 2^k is the binade of |d| (at
// least 2^-14), has a unit in the last place of 2^(k - 11), so the sum rounds |d| to 11
// mantissa bits, ties to even, or below 2^-14 to a multiple of 2^-25, the format's subnormal
// step; subtracting the constant again is exact. Scaled by 2^-112 (exact), the rounded value's
// float bits shifted right by 12 are its code, a carry into the next binade included. Codes
// past the largest (overflow, infinity, NaN) saturate at it. Six integer operations and four
// floating-point ones per value instead of about fifteen integer ones and a conversion: the
// two-copy step of the periodic box compiles to 800 instructions instead of 912 and ran the
// H200's 256^3 box at 35,284-35,297 MLUPS instead of 30,381-30,405 (below its bytes' limit,
// f16c runs at the rate its instructions allow).
__device__ __forceinline__ unsigned short encode16(float d)
{
    const unsigned u = bits_of(d);
    const unsigned exponent = u & 0x7f800000u, least = (127u - 14u) << 23;
    const float magic = float_of((exponent > least ? exponent : least) + (12u << 23));
    const float rounded = (fabsf(d) + magic) - magic;
    const unsigned m = bits_of(rounded * 1.925929944387236e-34f) >> 12; // 2^-112
    return (unsigned short)(((u >> 16) & 0x8000) | (m < 0x7fffu ? m : 0x7fffu));
}
#endif

__device__ __forceinline__ REAL pop_load(STORE s, int i) { return weight(i) + decode16(s); }

// The code of population value v of direction i; clears ok when its deviation does not fit.
__device__ __forceinline__ STORE pop_store(REAL v, int i, bool& ok)
{
    const float d = (float)v - weight(i);
    ok = ok && fabsf(d) <= MAX_DEVIATION;
    return encode16(d);
}
#endif

// Weight class of pair k (directions k + 1 and k + 10): axis for the first three.
__device__ __forceinline__ constexpr int pair_class(int k) { return k < 3 ? 1 : 2; }

// A node and the steps to its neighbours along each axis. off(i), the offset from idx of the
// node x - c_i, is formed from them where it is used (one or two adds after unrolling) rather
// than kept for all 19 directions: 13 registers fewer, so more threads stay resident.
struct Node {
    int idx;                      // the node's offset in one array (arrays stay below 2^31 nodes)
    int xm, xp, ym, yp, zm, zp;   // offsets of the -x, +x, ... neighbours (wrapped or clamped)
    __device__ __forceinline__ int off(int i) const
    {
        // x - c_i: c = +1 pulls from the minus side.
        return (CX[i] == 1 ? xm : CX[i] == -1 ? xp : 0) + (CY[i] == 1 ? ym : CY[i] == -1 ? yp : 0) +
               (CZ[i] == 1 ? zm : CZ[i] == -1 ? zp : 0);
    }
};

// The neighbour offsets of node (x, y, z): wrapped on a periodic axis, clamped on a closed one
// (classify.rs `neighbour`).
__device__ __forceinline__ void neighbours(Node& n, int x, int y, int z, int nx, int ny, int nz,
                                          int pitch, int plane)
{
    n.xm = x > 0 ? -1 : (PX ? nx - 1 : 0);
    n.xp = x < nx - 1 ? 1 : (PX ? -(nx - 1) : 0);
    n.ym = y > 0 ? -pitch : (PY ? (ny - 1) * pitch : 0);
    n.yp = y < ny - 1 ? pitch : (PY ? -(ny - 1) * pitch : 0);
    n.zm = z > 0 ? -plane : (PZ ? (nz - 1) * plane : 0);
    n.zp = z < nz - 1 ? plane : (PZ ? -(nz - 1) * plane : 0);
    n.idx = z * plane + y * pitch + x;
}

// Whether link i of a node with word `word` ends in a wall.
__device__ __forceinline__ bool solid(unsigned word, int i) { return (word >> (LINK_BIT + i)) & 1u; }

// The momentum term of link i, which ends in a wall, of node n next to a moving wall (resting
// walls' rows of the table hold zero).
__device__ __forceinline__ REAL wall_term(const Node& n, int i, const unsigned char* __restrict__ flags,
                                          const REAL* __restrict__ bc)
{
    return bc[flags[n.idx + n.off(i)] * BC_STRIDE + i];
}

// The collision of one node whose streamed populations are f; writes the post-collision values
// back into f. BOUNDARY: an inlet or outlet node (equilibrium of the prescribed density or
// velocity: omega+ = omega- = 1, no force). Returns false when an output is not finite (in
// 16-bit storage always true: pop_store tests every output).
template <bool BOUNDARY>
__device__ __forceinline__ bool collide(REAL (&f)[Q], unsigned char cls, unsigned char own_flag,
                                        const REAL* __restrict__ bc)
{
    constexpr bool forced = FORCED && !BOUNDARY;
    REAL s[9], d[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) {
        s[k] = f[k + 1] + f[k + 10];
        d[k] = f[k + 1] - f[k + 10];
    }
    const REAL axis = (s[0] + s[1]) + s[2];
    const REAL xy = s[3] + s[4], xy_p = d[3] + d[4], xy_m = d[3] - d[4];
    const REAL xz = s[5] + s[6], xz_p = d[5] + d[6], xz_m = d[5] - d[6];
    const REAL yz = s[7] + s[8], yz_p = d[7] + d[8], yz_m = d[7] - d[8];
    REAL rho = f[0] + ((axis + xy) + (xz + yz));
    REAL j[3] = {d[0] + (xy_p + xz_p), d[1] + (xy_m + yz_p), d[2] + (xz_m + yz_m)};
    constexpr REAL half_force[3] = HALF_FORCE;
    if (forced) {
#pragma unroll
        for (int a = 0; a < 3; ++a) j[a] = j[a] + half_force[a];
    }
    const REAL inv = (REAL)1 / rho;
    REAL ux = j[0] * inv, uy = j[1] * inv, uz = j[2] * inv;
    if (BOUNDARY) {
        const REAL* row = bc + own_flag * BC_STRIDE;
        if (cls & CLASS_INLET) {
            ux = row[BC_INLET];
            uy = row[BC_INLET + 1];
            uz = row[BC_INLET + 2];
        } else {
            rho = row[BC_OUTLET];
        }
    }
    // Relaxation constants: the fluid's, or omega = 1 for inlet and outlet nodes.
    constexpr REAL fluid_wp_w[3] = WP_W, fluid_wm3_w[3] = WM3_W;
    constexpr REAL bnd_wp_w[3] = {(REAL)(1.0 / 3.0), (REAL)(1.0 / 18.0), (REAL)(1.0 / 36.0)};
    constexpr REAL bnd_wm3_w[3] = {(REAL)(3.0 * (1.0 / 3.0)), (REAL)(3.0 * (1.0 / 18.0)),
                                    (REAL)(3.0 * (1.0 / 36.0))};
    const REAL wp = BOUNDARY ? (REAL)1 : (REAL)WP;
    const REAL half_wp = BOUNDARY ? (REAL)0.5 : (REAL)HALF_WP;
    const REAL half_wm = BOUNDARY ? (REAL)0.5 : (REAL)HALF_WM;
    const REAL one = 1;
    const REAL usq = fma(uz, uz, fma(uy, uy, ux * ux));
    const REAL base = fma(usq, (REAL)-1.5, one);
    REAL a[3], b[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        a[k] = (BOUNDARY ? bnd_wp_w[k] : fluid_wp_w[k]) * rho;
        b[k] = (BOUNDARY ? bnd_wm3_w[k] : fluid_wm3_w[k]) * rho;
    }
    REAL even[3] = {one, one, one};
    const REAL f0 = f[0];
    REAL rest = fma(f0, wp, -(a[0] * base));
    if (forced) {
        constexpr REAL force[3] = FORCE;
        constexpr REAL even_w[3] = EVEN_W;
        const REAL uf = fma(uz, force[2], fma(uy, force[1], ux * force[0]));
#pragma unroll
        for (int k = 0; k < 3; ++k) even[k] = even_w[k] * uf;
        rest = rest + even[0];
    }
    f[0] = f0 - rest;
    // Native storage sums the outputs to test them; 16-bit storage needs no sum, as pop_store's
    // range test fails on a non-finite value too (19 additions fewer per node).
#if STORAGE == 0
    REAL total = f[0];
#endif
    const REAL cu[9] = {ux, uy, uz, ux + uy, ux - uy, ux + uz, ux - uz, uy + uz, uy - uz};
    constexpr REAL even_c[9] = EVEN_C;
    constexpr REAL odd_c[9] = ODD_C;
#pragma unroll
    for (int k = 0; k < 9; ++k) {
        const int c = pair_class(k);
        const REAL fi = f[k + 1], fo = f[k + 10];
        const REAL bk = fma(cu[k] * cu[k], (REAL)4.5, base);
        REAL dp = fma(fi + fo, half_wp, -(a[c] * bk));
        REAL dm = fma(fi - fo, half_wm, -(b[c] * cu[k]));
        if (forced) {
            dp = dp - fma(cu[k], even_c[k], -even[c]);
            dm = dm - odd_c[k];
        }
        const REAL oi = fi - dp - dm, oo = fo - dp + dm;
        f[k + 1] = oi;
        f[k + 10] = oo;
#if STORAGE == 0
        total = total + (oi + oo);
#endif
    }
#if STORAGE == 0
    return isfinite(total);
#else
    return true;
#endif
}

// Collides node n (class cls) in place in f.
__device__ __forceinline__ bool collide_node(REAL (&f)[Q], unsigned char cls, const Node& n,
                                             const unsigned char* __restrict__ flags,
                                             const REAL* __restrict__ bc)
{
    if (cls & (CLASS_INLET | CLASS_OUTLET)) return collide<true>(f, cls, flags[n.idx], bc);
    return collide<false>(f, cls, 0, bc);
}

// A launch holds at most 65,535 block rows along y and z (CUDA's limit). LONG_LAUNCH 1: the
// lattice is longer than that, and a step takes several launches, each from block row y0 and
// plane (or plane index) z0 / c0 of the kernels' arguments; 0 (every lattice within the limit):
// one launch, the offsets unused, so that the kernels keep the registers they were tuned with
// (ptxas, sm_90: the offsets read in cost the f16s and f16c in-place even step 8-12 bytes of
// spills).
#ifndef LONG_LAUNCH
#define LONG_LAUNCH 0
#endif
#define FROM(offset) (LONG_LAUNCH ? (offset) : 0)

// The node this thread updates and its word, or false outside the lattice / on a wall node.
__device__ __forceinline__ bool locate(Node& n, unsigned& word, const unsigned* __restrict__ words,
                                       int nx, int ny, int nz, int pitch, int plane, int y0, int z)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = (blockIdx.y + FROM(y0)) * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return false;
    neighbours(n, x, y, z, nx, ny, nz, pitch, plane);
    word = ALL_BULK ? 0 : words[n.idx];
    return !(word & CLASS_WALL);
}

// ---------------------------------------------------------------------------------------------
// Two copies: one fused stream-collide step from src into dst.
// ---------------------------------------------------------------------------------------------
// A load of a population through the read-only data cache.
__device__ __forceinline__ REAL load(const STORE* p, int i) { return pop_load(__ldg(p), i); }

// Population i of node n (word `word`) as streamed from `p`, its source: a link that ends in a
// moving wall adds the wall's momentum term, which only nodes next to a moving wall read their
// neighbours' flags for.
__device__ __forceinline__ REAL streamed(REAL v, unsigned word, int i, const Node& n,
                                         const unsigned char* __restrict__ flags,
                                         const REAL* __restrict__ bc)
{
    return (word & CLASS_NEAR_MOVING) && solid(word, i) ? v + wall_term(n, i, flags, bc) : v;
}

// `streamed` for all of node n's populations, once they are loaded (the in-place steps, whose
// even step keeps the neighbour offsets for its stores anyway: fewer registers than inline).
__device__ __forceinline__ void add_wall_terms(REAL (&f)[Q], unsigned word, const Node& n,
                                               const unsigned char* __restrict__ flags,
                                               const REAL* __restrict__ bc)
{
    if (!(word & CLASS_NEAR_MOVING)) return;
#pragma unroll
    for (int i = 1; i < Q; ++i) f[i] = streamed(f[i], word, i, n, flags, bc);
}

__device__ __forceinline__ void pull_node(
    const STORE* __restrict__ src, STORE* __restrict__ dst, const unsigned* __restrict__ words,
    const unsigned char* __restrict__ flags, const REAL* __restrict__ bc, int nx, int ny, int nz,
    int pitch, int plane, long long array, int x, int y, int z, int* __restrict__ non_finite)
{
    Node n;
    neighbours(n, x, y, z, nx, ny, nz, pitch, plane);
    const unsigned word = ALL_BULK ? 0 : words[n.idx];
    const unsigned char cls = word & 0xff;
    REAL f[Q];
    // Every node pulls all its populations from its neighbours (clamped or wrapped: inside the
    // lattice), bulk nodes testing no link: selecting each address by the word's bits cost the
    // H200's 256^3 cavity 7.5-9% in every storage. A node next to a wall then replaces the
    // links that end in one by its own opposite populations (bounce-back), so a warp that
    // holds both kinds of node runs the pull once and the few replacements, not two pulls (a
    // quarter of the warps of a cavity 256 wide hold a node next to an x wall): the H200's
    // 256^3 cavity ran 29,853-29,870 MLUPS instead of 28,514-28,516 in f16s, 27,308-27,316
    // instead of 26,238-26,248 in f16c, 20,698-21,108 instead of 20,008-20,023 in f32.
    // EARLY_LOADS issues the pull with the node word's load rather than after it (one memory
    // latency instead of two) and drops it on wall nodes; it costs registers, so it is an
    // option to measure, not the default.
    if (!EARLY_LOADS && (cls & CLASS_WALL)) return;
#pragma unroll
    for (int i = 0; i < Q; ++i) f[i] = load(src + i * array + (n.idx + n.off(i)), i);
    if (EARLY_LOADS && (cls & CLASS_WALL)) return;
    if (cls & CLASS_NEAR_WALL) {
#pragma unroll
        for (int i = 1; i < Q; ++i)
            if (solid(word, i)) f[i] = streamed(load(src + opp(i) * array + n.idx, i), word, i, n, flags, bc);
    }
    bool ok = collide_node(f, cls, n, flags, bc);
    // Plain stores: streaming (evict-first) stores measured slower on the H100 80GB HBM3 (256^3:
    // f32 14,565 instead of 15,221 MLUPS, f64 8,475 instead of 8,662).
#pragma unroll
    for (int i = 0; i < Q; ++i) dst[i * array + n.idx] = pop_store(f[i], i, ok);
    if (!ok) *non_finite = 1;
}

extern "C" __global__ void __launch_bounds__(128, LBM_MIN_BLOCKS) lbm_step(
    const STORE* __restrict__ src, STORE* __restrict__ dst, const unsigned* __restrict__ words,
    const unsigned char* __restrict__ flags, const REAL* __restrict__ bc, int nx, int ny, int nz,
    long long pitch, long long plane, long long array, int a0, int a1, int b0, int y0, int c0,
    int* __restrict__ non_finite)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = (blockIdx.y + FROM(y0)) * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    // Block row c computes plane a0 + c of [a0, a1), then the planes from b0 on: the whole
    // lattice in one launch, or in a run split over GPUs the planes that read no halo while
    // the halos travel, then the two next to them (from plane index c0 and block row y0 in a
    // long lattice's launches).
    const int c = blockIdx.z + FROM(c0), na = a1 - a0;
    const int z = c < na ? a0 + c : b0 + (c - na);
    pull_node(src, dst, words, flags, bc, nx, ny, nz, pitch, plane, array, x, y, z, non_finite);
}

// ---------------------------------------------------------------------------------------------
// One copy, AA pattern. Every location a thread reads it later writes, and no other thread
// touches it, so the update is race-free in place. Nodes that are not walls must not lie on the
// face of a closed axis (the host checks): clamped reads would share locations.
// ---------------------------------------------------------------------------------------------
// In f16c the populations are read through one restricted pointer (and the read-only cache) and
// written through another, although both address the same array: every location is read and
// then written by one thread only, and every value a thread stores depends on all 19 it loaded,
// so no load can move after a store to its location. Declared apart, the loads and stores are
// scheduled as in the two-copy step and fit its 64 registers (see LBM_AA_MIN_BLOCKS). The other
// storages keep one pointer: restricted, the AA pair ran the 256^3 periodic box no faster in
// f32 (23,533-23,538 MLUPS against 23,550) and slower in f16s (35,841-35,918 against
// 37,828-37,946 in a stand-alone program), and, before the node words, the f32 cavity at 18,422
// against 19,190-19,351 in earlier calls.
#if STORAGE == 2
#define AA_RESTRICT __restrict__
__device__ __forceinline__ REAL aa_load(const STORE* p, int i) { return load(p, i); }
#else
#define AA_RESTRICT
__device__ __forceinline__ REAL aa_load(const STORE* p, int i) { return pop_load(*p, i); }
#endif

template <bool ODD>
__device__ __forceinline__ void aa_node(const STORE* AA_RESTRICT src, STORE* AA_RESTRICT dst,
                                        const Node& n, unsigned word,
                                        const unsigned char* __restrict__ flags,
                                        const REAL* __restrict__ bc, long long array,
                                        int* __restrict__ non_finite)
{
    // Population i is read from (x - c_i, i), or from (x, opp i) when x - c_i is a wall and on
    // odd steps; the even step writes the opposite output to the same place.
    REAL f[Q];
#pragma unroll
    for (int i = 0; i < Q; ++i) {
        const STORE* p = (ODD || solid(word, i)) ? src + opp(i) * array + n.idx
                                                 : src + i * array + (n.idx + n.off(i));
        f[i] = aa_load(p, i);
    }
    add_wall_terms(f, word, n, flags, bc);
    bool ok = collide_node(f, word & 0xff, n, flags, bc);
#pragma unroll
    for (int i = 0; i < Q; ++i) {
        if (ODD) {
            dst[i * array + n.idx] = pop_store(f[i], i, ok);
        } else {
            STORE* p = solid(word, i) ? dst + opp(i) * array + n.idx
                                      : dst + i * array + (n.idx + n.off(i));
            *p = pop_store(f[opp(i)], i, ok);
        }
    }
    if (!ok) *non_finite = 1;
}

// One in-place step of the node this thread updates.
template <bool ODD>
__device__ __forceinline__ void aa_step(STORE* f_all, const unsigned* __restrict__ words,
                                        const unsigned char* __restrict__ flags,
                                        const REAL* __restrict__ bc, int nx, int ny, int nz,
                                        long long pitch, long long plane, long long array, int y0,
                                        int z0, int* __restrict__ non_finite)
{
    Node n;
    unsigned word;
    if (!locate(n, word, words, nx, ny, nz, pitch, plane, y0, blockIdx.z + FROM(z0))) return;
    aa_node<ODD>(f_all, f_all, n, word, flags, bc, array, non_finite);
}

extern "C" __global__ void __launch_bounds__(128, LBM_AA_MIN_BLOCKS) lbm_aa_even(
    STORE* f, const unsigned* __restrict__ words, const unsigned char* __restrict__ flags,
    const REAL* __restrict__ bc, int nx, int ny, int nz, long long pitch, long long plane,
    long long array, int y0, int z0, int* __restrict__ non_finite)
{
    aa_step<false>(f, words, flags, bc, nx, ny, nz, pitch, plane, array, y0, z0, non_finite);
}

extern "C" __global__ void __launch_bounds__(128, LBM_AA_MIN_BLOCKS) lbm_aa_odd(
    STORE* f, const unsigned* __restrict__ words, const unsigned char* __restrict__ flags,
    const REAL* __restrict__ bc, int nx, int ny, int nz, long long pitch, long long plane,
    long long array, int y0, int z0, int* __restrict__ non_finite)
{
    aa_step<true>(f, words, flags, bc, nx, ny, nz, pitch, plane, array, y0, z0, non_finite);
}
