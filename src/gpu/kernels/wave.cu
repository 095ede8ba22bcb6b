// stencil35d acoustic wave kernels (src/wave): one source, specialised at run time by NVRTC.
//
// The host prepends (see src/gpu/wave_source.rs):
//   REAL            float or double
//   RADIUS          star radius R (space order 2R)
//   WX, WY, WZ      the R+1 central weights of d²/dx², d²/dy², d²/dz², each divided by h²
//   BX, BY          threads per block in x and y
//   BT, RY          (blocked kernel) steps per pass, rows per thread; BT undefined: naive only
//
// The update of one cell, with η = η_x(x) + η_y(y) + η_z(z) the layers' damping and φ their
// auxiliary field (both zero in the inner region):
//   u⁺ = ((2 + 2η − η²)u − u⁻ + (v dt)²(∇²u + φ)) / (1 + 2η)
//   φ⁺ = (φ − Σ_a g_a·(u(a+1) − u(a−1))) / (1 + α·dt + η),   g_a = (η_a(i+1) − η_a(i−1)) / (4h_a²)
// (one_leak, the kernels' last argument, is 1 + α·dt: φ's decay beyond η, see src/wave/profile.rs)
// and in the inner region the plain u⁺ = 2u − u⁻ + (v dt)²∇²u. Which form a cell takes is decided
// per block and plane (never per thread), so the threads of a warp never diverge on it: a block
// whose tile reaches into a layer in x or y, or a plane in a z layer, takes the layers' form
// for all its cells (the form is exact for the inner cells it covers, where η, g and φ are 0).
//
// Grids are dense, x fastest, rows `pitch` and planes `plane` elements apart (the host grid's
// layout). The outer R cells on every side are the fixed boundary (zero): never written by the
// update kernels (wave_mirror fills a rigid face's before each pass).
//
// Sources are added to the new u of every step at their cells (`taps`: x, y, z per tap; `amp`:
// the amplitude of every tap for every step of the batch, step-major). Receivers read the new u
// of every step at their cells (`pstart`: for column y*nx + x the first entry of its probed
// cells, CSR; `pz`: each entry's z; `pout`: the values, step-major). `meta` holds the inner box
// and the z ranges those lists touch, so a plane without any skips them as a block:
//   meta = { x0, x1, y0, y1, z0, z1 (inner box), n_taps, tap z0, tap z1, n_probes, probe z0,
//            probe z1, tile x0, tile y0 }
// The last two place the one-step kernels' tiles: the first tile's first cell, at or below R
// and within one tile of it, perhaps before the grid, and with RX 2 an even column (R minus a
// multiple of RX, so that every pair starts on an even column); the host chooses it so that
// many tiles lie inside the inner box (gpu/wave_tiles.rs). The other blocked kernel's tiles
// start at R.
//
// The non-finite flag works as in stencil.cu: a launch that stores a non-finite value writes its
// pass number, and the later launches of the batch leave every buffer alone. The blocked kernel
// computes the output planes [a0, a1) and [b0, b1) of passes.cuh (prepended by the host) in
// z-chunks of hz planes; the naive one always computes the whole interior.

#define W (2 * RADIUS + 1)

// The Laplacian of a cell whose value is c: in-plane neighbours from `at(dx, dy)`, the column's
// own values from q (centre q[RADIUS]).
template <class At>
__device__ __forceinline__ REAL laplacian(REAL c, const REAL* q, At at)
{
    constexpr REAL wx[] = WX, wy[] = WY, wz[] = WZ;
    REAL sx = c * wx[0], sy = c * wy[0], sz = c * wz[0];
#pragma unroll
    for (int d = 1; d <= RADIUS; ++d) {
        sx += wx[d] * (at(-d, 0) + at(d, 0));
        sy += wy[d] * (at(0, -d) + at(0, d));
        sz += wz[d] * (q[RADIUS - d] + q[RADIUS + d]);
    }
    return (sx + sy) + sz;
}

// The damping profiles, packed by the host: η_x, η_y, η_z, then g_x, g_y, g_z.
struct Damping {
    const REAL *ex, *ey, *ez, *gx, *gy, *gz;
};

__device__ __forceinline__ Damping damping(const REAL* damp, int nx, int ny, int nz)
{
    const int n = nx + ny + nz;
    return {damp, damp + nx, damp + nx + ny, damp + n, damp + n + nx, damp + n + nx + ny};
}

// One cell's damping: η = η_x + η_y + η_z, the gradient weights g_x, g_y, g_z and 1 + α·dt,
// the auxiliary field's decay beyond η (a kernel parameter). The kernels read the x part once
// per thread, the y part once per row and the z part once per plane.
struct CellDamping {
    REAL eta, gx, gy, gz, one_leak;
};

// One cell's update (LAYER: the layers' form, also writing φ⁺).
template <bool LAYER, class At>
__device__ __forceinline__ REAL update(REAL c, const REAL* q, At at, REAL prev, REAL coef, REAL phi,
                                       const CellDamping& d, REAL& phi_new)
{
    const REAL lap = laplacian(c, q, at);
    if (!LAYER) {
        phi_new = 0;
        return (c + c - prev) + coef * lap;
    }
    const REAL two = 2, one = 1, eta = d.eta;
    const REAL grad =
        (d.gx * (at(1, 0) - at(-1, 0)) + d.gy * (at(0, 1) - at(0, -1))) + d.gz * (q[RADIUS + 1] - q[RADIUS - 1]);
    // One division for both quotients: with a = 1 + α·dt + η (φ's denominator) and b = 1 + 2η,
    // 1/a = b·r and 1/b = a·r, r = 1/(a·b).
    const REAL a = d.one_leak + eta, b = one + two * eta, r = one / (a * b);
    phi_new = (phi - grad) * (b * r);
    return ((two + two * eta - eta * eta) * c - prev + coef * (lap + phi)) * (a * r);
}

// The per-launch constants of `meta` (see above), read once into registers.
struct Meta {
    int z0, z1, taps_z0, taps_z1, probes_z0, probes_z1;
};

__device__ __forceinline__ Meta read_meta(const int* meta)
{
    return {meta[4], meta[5], meta[7], meta[8], meta[10], meta[11]};
}

// Adds step s's sources at (x, y, z) to v.
__device__ __forceinline__ REAL inject(REAL v, const int* meta, const int* taps, const REAL* amp, int s,
                                       int x, int y, int z)
{
    const int n = meta[6];
    for (int t = 0; t < n; ++t)
        if (taps[3 * t] == x && taps[3 * t + 1] == y && taps[3 * t + 2] == z) v += amp[(long long)s * n + t];
    return v;
}

// Stores v as step s's value of every probed cell at (x, y, z).
__device__ __forceinline__ void record(REAL v, const int* meta, const int* pstart, const int* pz, REAL* pout,
                                       int s, long long column, int z)
{
    const int n = meta[9];
    for (int j = pstart[column]; j < pstart[column + 1]; ++j)
        if (pz[j] == z) pout[(long long)s * n + j] = v;
}

#define WAVE_PARAMS                                                                                        \
    const REAL *__restrict__ u, const REAL *__restrict__ prev, const REAL *__restrict__ phi,              \
        const REAL *__restrict__ coef, const REAL *__restrict__ damp, const int *__restrict__ meta,       \
        const int *__restrict__ taps, const REAL *__restrict__ amp, const int *__restrict__ pstart,       \
        const int *__restrict__ pz, REAL *__restrict__ pout, REAL *__restrict__ u_out,                    \
        REAL *__restrict__ prev_out, REAL *__restrict__ phi_out, int nx, int ny, int nz, long long pitch, \
        long long plane, int a0, int a1, int b0, int b1, int hz, int s0, int pass, int *__restrict__ flag,     \
        REAL one_leak

// ---------------------------------------------------------------------------------------------
// gpu-naive: one step per launch, one thread per (x, y) column streaming along z; the column's
// own values slide through registers, in-plane neighbours come through the read-only cache.
// Writes u⁺ and φ⁺ to u_out and phi_out (prev_out, the plane ranges and hz are unused).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(BX * BY) wave_naive(WAVE_PARAMS)
{
    const bool failed = earlier_pass_failed(pass, flag);
    const int bx0 = blockIdx.x * BX, by0 = blockIdx.y * BY;
    const int x = bx0 + threadIdx.x, y = by0 + threadIdx.y;
    if (x < RADIUS || x >= nx - RADIUS || y < RADIUS || y >= ny - RADIUS) return;
    const bool layer_xy = bx0 < meta[0] || bx0 + BX > meta[1] || by0 < meta[2] || by0 + BY > meta[3];
    const Meta m = read_meta(meta);
    const Damping d = damping(damp, nx, ny, nz);
    const REAL exy = __ldg(d.ex + x) + __ldg(d.ey + y), gx = __ldg(d.gx + x), gy = __ldg(d.gy + y);
    const long long col = (long long)y * pitch + x;
    REAL q[W];
#pragma unroll
    for (int j = 0; j < W - 1; ++j) q[j] = __ldg(u + col + j * plane);
    bool bad = false;
    // Not unrolled: unrolling by 4 (as stencil_naive is) cost 8% on the H200 (order 8 f32 512³:
    // 66.5 G points/s against 72.0).
    for (int z = RADIUS; z < nz - RADIUS; ++z) {
        q[W - 1] = __ldg(u + col + (z + RADIUS) * plane);
        const long long i = col + z * plane;
        const auto at = [&](int dx, int dy) { return __ldg(u + i + dx + dy * pitch); };
        const REAL c = q[RADIUS], p = __ldg(prev + i), k = __ldg(coef + i);
        REAL v, f;
        const bool layer = layer_xy || z < m.z0 || z >= m.z1;
        if (layer) {
            const CellDamping cd = {exy + __ldg(d.ez + z), gx, gy, __ldg(d.gz + z), one_leak};
            v = update<true>(c, q, at, p, k, __ldg(phi + i), cd, f);
        } else {
            v = update<false>(c, q, at, p, k, 0, CellDamping{}, f);
        }
        if (z >= m.taps_z0 && z <= m.taps_z1) v = inject(v, meta, taps, amp, s0, x, y, z);
        if (!failed) {
            u_out[i] = v;
            if (layer) phi_out[i] = f;
            if (z >= m.probes_z0 && z <= m.probes_z1) record(v, meta, pstart, pz, pout, s0, (long long)y * nx + x, z);
        }
        bad |= !(isfinite(v) && isfinite(f));
#pragma unroll
        for (int j = 0; j < W - 1; ++j) q[j] = q[j + 1];
    }
    if (bad && !failed) *flag = pass;
}

// ---------------------------------------------------------------------------------------------
// gpu-blocked: N.5D blocking, BT steps per pass (at BT 1 the lean loop after these helpers
// replaces the general one). A block owns a tile of TW x TY = (BX*RX) x (BY*RY) columns
// (thread (tx, ty) owns the RX columns tx*RX .. and the RY rows ty*RY ..; RX is 1 past BT 1), GHOST = R*(BT-1) wider on every
// side than its output (the ghost cells of levels 1 .. BT-1), and streams the
// planes of its z chunk (HZ planes, plus R*BT on either side). Each level k = 1 .. BT keeps in
// registers its input's column (level k-1's u at planes z-R .. z+R), and for the next level its
// own φ⁺ of the last R+1 planes; the in-plane neighbours come from level k-1's plane in shared
// memory (double-buffered, so one barrier per level and plane), whose R-wide rim around the
// tile the block loads from memory for level 1 and leaves stale for the later levels (the cells
// that read it lie in the ghost zone the next level no longer needs). Level k updates plane
// z0 - kR when level 0 has loaded z0: its u⁻ is level k-2's value at that plane, the oldest of
// level k-2's column (level 1 reads u⁻ and φ from memory). The loads of the next plane (the
// column's new value, the rim, u⁻ and (v dt)²) are issued before the current plane's work, so
// their latency hides behind it. The last level writes u⁺, φ⁺ and, when BT > 1, the new u⁻
// (level BT-1's centre; at BT 1 the host keeps u as the new u⁻). Sources are added at every
// level, receivers recorded from the block's own cells.
// ---------------------------------------------------------------------------------------------
#ifdef BT
#ifndef IDX
#define IDX long long
#endif
#ifndef RX
#define RX 1
#endif
#if RX != 1 && (BT != 1 || RADIUS % RX != 0)
#error "two cells per thread along x (RX 2) run at one step per pass (BT 1) and an even radius"
#endif
#define TW (BX * RX)
#define TY (BY * RY)
#define HALO (RADIUS * BT)
#define GHOST (RADIUS * (BT - 1))
#define VX (TW - 2 * GHOST)
#define VY (TY - 2 * GHOST)
#define SW (TW + 2 * RADIUS)
#define SH (TY + 2 * RADIUS)
#define RIM (2 * RADIUS * (SW + TY))
#define RIMS ((RIM + BX * BY - 1) / (BX * BY))
#define LEVELS_BEHIND (BT > 1 ? BT - 1 : 1)

// The loads one plane of the stream needs, issued a plane ahead.
struct Ahead {
    REAL u[RY];        // the column's value at the loaded plane
    REAL prev[RY];     // u⁻ at level 1's plane
    REAL phi[RY];      // φ at level 1's plane when it takes the layers' form
    REAL coef[BT][RY]; // (v dt)² at each level's plane
    REAL rim[RIMS];    // level 0's rim at level 1's plane
};

// Where a thread reads and writes: its rows' offsets within a plane and its rim cells' offsets
// within a shared plane (-1: none) and a grid plane. Offsets within a plane are 32-bit (the host
// checks that a plane holds fewer than 2³¹ elements); offsets within the grid are IDX, 32-bit
// too when the grid holds fewer than 2³¹ elements (the host defines it). Cells outside the grid are clamped onto its
// edge, and so are planes beyond its ends: a value loaded there is never read by an updated cell
// (those lie R or more inside the grid, and every cell they read lies inside it), so the loads
// need no guards.
struct Cells {
    int off[RY];
    bool interior[RY];
    int rim_s[RIMS], rim_g[RIMS];
};

__device__ __forceinline__ int clamp_to(int v, int n) { return min(max(v, 0), n - 1); }

// `zload`'s loads: the column values, the rim at zload - R, u⁻ and (when `layer1`) φ there,
// (v dt)² at each level's plane.
__device__ __forceinline__ void fetch(Ahead& a, const REAL* __restrict__ u, const REAL* __restrict__ prev,
                                      const REAL* __restrict__ phi, const REAL* __restrict__ coef,
                                      const Cells& cells, int zload, int nz, IDX plane, bool layer1)
{
    const IDX ol = clamp_to(zload, nz) * plane, o1 = clamp_to(zload - RADIUS, nz) * plane;
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        a.u[c] = __ldg(u + (ol + cells.off[c]));
        a.prev[c] = __ldg(prev + (o1 + cells.off[c]));
        a.phi[c] = layer1 ? __ldg(phi + (o1 + cells.off[c])) : REAL(0);
    }
#pragma unroll
    for (int k = 0; k < BT; ++k) {
        const IDX ok = clamp_to(zload - (k + 1) * RADIUS, nz) * plane;
#pragma unroll
        for (int c = 0; c < RY; ++c) a.coef[k][c] = __ldg(coef + (ok + cells.off[c]));
    }
#pragma unroll
    for (int j = 0; j < RIMS; ++j) a.rim[j] = __ldg(u + (o1 + cells.rim_g[j]));
}

// The thread's cells in the tile whose thread (0, 0) sits at (x0, y0).
__device__ __forceinline__ Cells locate(int tid, int gx, int row0, int x0, int y0, int nx, int ny, int pitch)
{
    Cells cells;
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        const int gy = row0 + c;
        cells.interior[c] = gx >= RADIUS && gx < nx - RADIUS && gy >= RADIUS && gy < ny - RADIUS;
        // A column before the grid reads its first group, one beyond it its last whole group
        // of RX cells (the group at an even column for RX 2, aligned for a vector load: rows
        // are a multiple of 16 bytes); a row before or beyond it its first or last row.
        cells.off[c] = clamp_to(gy, ny) * pitch + min(max(gx, 0), (nx - 1) & ~(RX - 1));
    }
#pragma unroll
    for (int j = 0; j < RIMS; ++j) {
        const int i = tid + j * BX * BY;
        int row, col;
        if (i < 2 * RADIUS * SW) { // the R rows above the tile and the R below, each SW wide
            row = i / SW;
            col = i % SW;
            if (row >= RADIUS) row += TY;
        } else { // the R columns left and right of the tile, TY rows
            const int k = i - 2 * RADIUS * SW;
            row = RADIUS + k / (2 * RADIUS);
            col = k % (2 * RADIUS);
            if (col >= RADIUS) col += TW;
        }
        cells.rim_s[j] = i < RIM ? row * SW + col : -1;
        cells.rim_g[j] = clamp_to(y0 - RADIUS + row, ny) * pitch + clamp_to(x0 - RADIUS + col, nx);
    }
    return cells;
}

#if BT == 1
// ---------------------------------------------------------------------------------------------
// gpu-blocked at one step per pass (BT 1): 2.5D blocking, no ghost zone. A block owns a tile of
// TW x TY columns (those among the updated cells are its output: the first tiles may start
// before them, see meta) and streams the output planes of its z chunk. Each thread keeps its
// cells' columns of u in registers (planes zk - R .. zk + R); the in-plane neighbours come from
// the plane in shared memory (a ring of WAVE_STAGES planes: one barrier per plane), whose R-wide
// rim the block copies from memory. Every plane an iteration reads lies in the grid (an output
// plane is R or more inside it), so the loads take no clamps and the addresses are one
// multiply-add; the loads of the planes ahead are in flight while the current plane is
// computed (see stage_plane). This lean loop runs 13% faster
// than the general one below at BT 1 (H200, order 8 f32 512³, 20-cell layers: 115.3 against
// 101.8 G points/s).
//
// With RX 2 a thread owns two neighbouring cells of a row and moves both with one vector load
// or store (global and shared memory alike): a row's in-plane neighbours along x are R + 1 pairs
// (the centre pair already in registers) and along y one pair per row: 3R shared loads for two
// cells instead of 8R, and the loads of u, u⁻ and (v dt)², the stores and the address
// arithmetic are issued once per two cells.
// ---------------------------------------------------------------------------------------------

// RX neighbouring cells of a row, moved as one vector when RX is 2 (the address a multiple of
// RX elements: columns and rows are, as the radius and the tiles' origin are then even).
struct Group {
    REAL v[RX];
};

#if RX == 2
template <class T> struct PairOf;
template <> struct PairOf<float> { typedef float2 type; };
template <> struct PairOf<double> { typedef double2 type; };
typedef PairOf<REAL>::type REAL_PAIR;
#endif

// Where a group is read from: global memory through the read-only cache, or shared memory.
enum class From { Global, Shared };

// The RX cells at p.
template <From F> __device__ __forceinline__ Group load_group(const REAL* p)
{
    Group a;
#if RX == 2
    const REAL_PAIR* q = reinterpret_cast<const REAL_PAIR*>(p);
    const REAL_PAIR t = F == From::Global ? __ldg(q) : *q;
    a.v[0] = t.x;
    a.v[1] = t.y;
#else
    a.v[0] = F == From::Global ? __ldg(p) : *p;
#endif
    return a;
}

// Stores the RX cells a at p.
__device__ __forceinline__ void st_group(REAL* p, const Group& a)
{
#if RX == 2
    REAL_PAIR t;
    t.x = a.v[0];
    t.y = a.v[1];
    *reinterpret_cast<REAL_PAIR*>(p) = t;
#else
    *p = a.v[0];
#endif
}

// Stores those of the RX cells a at p whose `keep` is set: one vector store when all are.
__device__ __forceinline__ void st_group_where(REAL* p, const Group& a, const bool (&keep)[RX], bool all)
{
    if (all) {
        st_group(p, a);
        return;
    }
#pragma unroll
    for (int e = 0; e < RX; ++e)
        if (keep[e]) p[e] = a.v[e];
}

// The input planes of the one-step loop pass through WAVE_STAGES slots of shared memory, copied
// WAVE_STAGES - 1 planes ahead of use (cp.async: in flight while the block computes, and no
// registers held), as in the shuffle stencil kernel. Slot k holds output plane zk's loads: the
// thread's cells of u at zk + R (the column's newest value), u⁻ and (v dt)² at zk, and in the
// layers' form φ at zk, each array a tile of TY rows of TW cells; its shared plane k (the plane
// exchanged for the in-plane neighbours) receives the R-wide rim of u at zk. A thread reads back
// only the cells it copied into a slot, so its own wait orders those; the rim, read by other
// threads, waits for the barrier that follows.
#ifndef WAVE_STAGES
#define WAVE_STAGES 3
#endif
// Planes the one-step loop computes per barrier (1 or 2): with 2, the centres of two planes
// are exchanged at once, halving the barriers, and the ring stages two planes per iteration.
#ifndef WAVE_SYNC
#define WAVE_SYNC 1
#endif
static_assert(WAVE_SYNC == 1 || WAVE_SYNC == 2, "the one-step loop computes 1 or 2 planes per barrier");
static_assert(WAVE_STAGES >= 2 * WAVE_SYNC, "the one-step loop copies an iteration's planes ahead");
// A slot index below 2 * WAVE_STAGES taken into the ring.
__device__ __forceinline__ int wrap_slot(int k) { return k >= WAVE_STAGES ? k - WAVE_STAGES : k; }
#define TILE_ELEMS (TW * TY)
enum Staged { U_AHEAD, PREV, COEF, PHI, STAGED_ARRAYS };
#define SLOT_ELEMS (STAGED_ARRAYS * TILE_ELEMS)
#define GROUP_BYTES (RX * (int)sizeof(REAL))

// Copies output plane zk's loads into `slot` and its rim into the shared plane `s` (one copy
// group, committed by the caller). `own`: the thread's first cell in a tile of the slot.
template <bool LAYER>
__device__ __forceinline__ void stage_plane(REAL* slot, REAL* s, int own, const REAL* __restrict__ u,
                                            const REAL* __restrict__ prev, const REAL* __restrict__ phi,
                                            const REAL* __restrict__ coef, const Cells& cells, int zk, IDX plane)
{
    const IDX o = zk * plane, ou = o + RADIUS * plane;
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        REAL* const t = slot + own + c * TW;
        stage_bytes<GROUP_BYTES>(t + U_AHEAD * TILE_ELEMS, u + (ou + cells.off[c]), true);
        stage_bytes<GROUP_BYTES>(t + PREV * TILE_ELEMS, prev + (o + cells.off[c]), true);
        stage_bytes<GROUP_BYTES>(t + COEF * TILE_ELEMS, coef + (o + cells.off[c]), true);
        if (LAYER) stage_bytes<GROUP_BYTES>(t + PHI * TILE_ELEMS, phi + (o + cells.off[c]), true);
    }
#pragma unroll
    for (int j = 0; j < RIMS; ++j)
        if (cells.rim_s[j] >= 0) stage_bytes<sizeof(REAL)>(s + cells.rim_s[j], u + (o + cells.rim_g[j]), true);
}

// Output plane zk's loads at the cells, read back from its slot: u⁻, (v dt)², and in the
// layers' form φ, η_z and g_z.
struct PlaneLoads {
    Group prev[RY], coef[RY], phi[RY];
    REAL ez, gz;
};

template <bool LAYER>
__device__ __forceinline__ PlaneLoads read_plane(const REAL* slot, int own, const Damping& d, int zk)
{
    PlaneLoads a;
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        const REAL* const t = slot + own + c * TW;
        a.prev[c] = load_group<From::Shared>(t + PREV * TILE_ELEMS);
        a.coef[c] = load_group<From::Shared>(t + COEF * TILE_ELEMS);
        a.phi[c] = LAYER ? load_group<From::Shared>(t + PHI * TILE_ELEMS) : Group{};
    }
    a.ez = LAYER ? __ldg(d.ez + zk) : REAL(0);
    a.gz = LAYER ? __ldg(d.gz + zk) : REAL(0);
    return a;
}

// The in-plane neighbours of a thread's RX cells in one row of the shared plane (`row` at its
// first cell): along x the columns -R .. R + RX - 1 around it (`x[R + e + dx]` for cell e), the
// centre group taken from the registers; along y the RX cells of rows -R .. R (`y[R + dy]`).
struct Neighbours {
    REAL x[2 * RADIUS + RX];
    Group y[2 * RADIUS + 1];
};

__device__ __forceinline__ Neighbours neighbours(const REAL* row, const Group& centre)
{
    Neighbours n;
#pragma unroll
    for (int k = 0; k <= 2 * RADIUS / RX; ++k) {
        const Group g = k * RX == RADIUS ? centre : load_group<From::Shared>(row - RADIUS + k * RX);
#pragma unroll
        for (int e = 0; e < RX; ++e) n.x[k * RX + e] = g.v[e];
    }
#pragma unroll
    for (int dy = -RADIUS; dy <= RADIUS; ++dy)
        n.y[RADIUS + dy] = dy == 0 ? centre : load_group<From::Shared>(row + dy * SW);
    return n;
}

// One row's output cells of a thread, and their φ⁺ in the layers' form.
struct RowOut {
    Group v, f;
};

// The update of the thread's cells of row c of the plane (in the layers' form when LAYER) from
// the column q, the shared plane s and the plane's loads `now`; sources and receivers are left
// to the caller.
template <bool LAYER>
__device__ __forceinline__ RowOut update_row(int c, const Group (&q)[RY][W], const REAL* s, const PlaneLoads& now,
                                             int ty, int tx, const REAL (&ex)[RX], const REAL (&gxw)[RX],
                                             const REAL (&ey)[RY], const REAL (&gy)[RY], REAL one_leak)
{
    RowOut o;
    const Neighbours n = neighbours(s + (ty * RY + c + RADIUS) * SW + tx * RX + RADIUS, q[c][RADIUS]);
#pragma unroll
    for (int e = 0; e < RX; ++e) {
        REAL col[W];
#pragma unroll
        for (int j = 0; j < W; ++j) col[j] = q[c][j].v[e];
        const auto at = [&](int dx, int dy) { return dy == 0 ? n.x[RADIUS + e + dx] : n.y[RADIUS + dy].v[e]; };
        const CellDamping cd = {(ex[e] + ey[c]) + now.ez, gxw[e], gy[c], now.gz, one_leak};
        o.v.v[e] =
            update<LAYER>(col[RADIUS], col, at, now.prev[c].v[e], now.coef[c].v[e], now.phi[c].v[e], cd, o.f.v[e]);
    }
    return o;
}

// Planes [z0, z1) of a one-step pass's block at (x0, y0), in one form. INNER: the plain form
// on a tile inside the inner box, every cell an updated one, so the loop holds no test per
// cell; otherwise the layers' form (exact for the inner cells it covers). Sources and receivers
// are tested for once per plane, after the update. Returns whether a stored value was not finite.
template <bool INNER>
__device__ __forceinline__ bool one_step_planes(WAVE_PARAMS, const Meta& m, int x0, int y0, int z0, int z1)
{
    constexpr bool LAYER = !INNER;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL* smem = reinterpret_cast<REAL*>(smem_raw); // planes and slots, see stage_plane
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
    const Damping d = damping(damp, nx, ny, nz);
    const int gx = x0 + tx * RX, row0 = y0 + ty * RY;
    const Cells cells = locate(tid, gx, row0, x0, y0, nx, ny, (int)pitch);
    // Which of the thread's columns are updated cells (gx itself is tested with the row, in
    // cells.interior), and their damping in x.
    bool xin[RX];
    bool all_x = true;
    REAL ex[RX], gxw[RX];
#pragma unroll
    for (int e = 0; e < RX; ++e) {
        xin[e] = INNER || e == 0 || gx + e < nx - RADIUS; // gx: tested with the row (cells.interior)
        all_x = all_x && xin[e];
        const bool on_grid = gx + e >= 0 && gx + e < nx; // a tile may start before the grid
        ex[e] = on_grid ? __ldg(d.ex + gx + e) : REAL(0);
        gxw[e] = on_grid ? __ldg(d.gx + gx + e) : REAL(0);
    }
    REAL ey[RY], gy[RY];
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        const int y = row0 + c;
        ey[c] = y >= 0 && y < ny ? __ldg(d.ey + y) : REAL(0);
        gy[c] = y >= 0 && y < ny ? __ldg(d.gy + y) : REAL(0);
    }
    const IDX pl = (IDX)plane;
    // The cells' u along the column: at the top of an iteration at plane zk, q[c][0 .. W - 2]
    // hold planes zk - R .. zk + R - 1; an iteration of np planes loads the next np.
    Group q[RY][W + WAVE_SYNC - 1];
#pragma unroll
    for (int j = 0; j < W - 1; ++j)
#pragma unroll
        for (int c = 0; c < RY; ++c) q[c][j] = load_group<From::Global>(u + ((z0 - RADIUS + j) * pl + cells.off[c]));
    REAL* const planes = smem;                        // WAVE_STAGES planes of SW x SH
    REAL* const slots = smem + WAVE_STAGES * SW * SH; // WAVE_STAGES slots
    const int own = ty * RY * TW + tx * RX;
    constexpr int AHEAD = WAVE_STAGES - WAVE_SYNC; // planes staged before an iteration's own are used
#pragma unroll
    for (int a = 0; a < AHEAD; ++a) {
        if (z0 + a < z1)
            stage_plane<LAYER>(slots + a * SLOT_ELEMS, planes + a * SW * SH, own, u, prev, phi, coef, cells, z0 + a, pl);
        stage_commit();
    }
    REAL check = 0; // the stored values times 0, summed: NaN once one of them is not finite
    // Row c's sources and receivers, the non-finite check and the stores of plane zk.
    const auto finish = [&](int zk, int c, RowOut& o) {
        const int y = row0 + c;
        const bool sources = zk >= m.taps_z0 && zk <= m.taps_z1;
        const bool probes = zk >= m.probes_z0 && zk <= m.probes_z1;
        if (sources || probes) {
#pragma unroll
            for (int e = 0; e < RX; ++e) {
                if (sources) o.v.v[e] = inject(o.v.v[e], meta, taps, amp, s0, gx + e, y, zk);
                if (probes && xin[e]) record(o.v.v[e], meta, pstart, pz, pout, s0, (long long)y * nx + gx + e, zk);
            }
        }
        const IDX i = zk * pl + cells.off[c];
#pragma unroll
        for (int e = 0; e < RX; ++e)
            if (xin[e]) check += o.v.v[e] * REAL(0) + (LAYER ? o.f.v[e] * REAL(0) : REAL(0));
        if (LAYER) st_group_where(phi_out + i, o.f, xin, all_x);
        st_group_where(u_out + i, o.v, xin, all_x);
    };
    // Planes zk .. zk + NP - 1, whose copies sit in slots rd .. rd + NP - 1 (mod WAVE_STAGES):
    // their centres go to their shared planes, one barrier, then the next NP planes are staged
    // into the slots of the iteration before (every thread is past them) and the NP planes
    // computed.
    // NP is WAVE_SYNC or 1, a constant at both calls (inlined), so the loops unroll and the
    // tests on it fold away.
    const auto planes_at = [&](int zk, int rd, int NP) {
        if (NP == WAVE_SYNC) stage_wait<AHEAD - WAVE_SYNC>(); // planes zk .. zk + NP - 1 have landed
        else stage_wait<AHEAD - 1>();
#pragma unroll
        for (int p = 0; p < WAVE_SYNC; ++p) {
            if (p >= NP) break;
            const int k = wrap_slot(rd + p);
            REAL* const s = planes + k * SW * SH;
#pragma unroll
            for (int c = 0; c < RY; ++c) {
                q[c][W - 1 + p] = load_group<From::Shared>(slots + k * SLOT_ELEMS + own + c * TW + U_AHEAD * TILE_ELEMS);
                st_group(s + (ty * RY + c + RADIUS) * SW + tx * RX + RADIUS, q[c][RADIUS + p]);
            }
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < WAVE_SYNC; ++p) {
            if (p >= NP) break;
            const int k = wrap_slot(rd + AHEAD + p);
            if (zk + AHEAD + p < z1)
                stage_plane<LAYER>(slots + k * SLOT_ELEMS, planes + k * SW * SH, own, u, prev, phi, coef, cells,
                                   zk + AHEAD + p, pl);
            stage_commit();
        }
#pragma unroll
        for (int p = 0; p < WAVE_SYNC; ++p) {
            if (p >= NP) break;
            const int k = wrap_slot(rd + p);
            const REAL* const s = planes + k * SW * SH;
            const PlaneLoads now = read_plane<LAYER>(slots + k * SLOT_ELEMS, own, d, zk + p);
            Group w[RY][W]; // plane zk + p's column
#pragma unroll
            for (int c = 0; c < RY; ++c)
#pragma unroll
                for (int j = 0; j < W; ++j) w[c][j] = q[c][j + p];
            if (INNER) { // every row computed before the first is finished
                RowOut o[RY];
#pragma unroll
                for (int c = 0; c < RY; ++c) o[c] = update_row<false>(c, w, s, now, ty, tx, ex, gxw, ey, gy, one_leak);
#pragma unroll
                for (int c = 0; c < RY; ++c) finish(zk + p, c, o[c]);
            } else { // each row finished before the next is computed: fewer registers
#pragma unroll
                for (int c = 0; c < RY; ++c) {
                    if (!cells.interior[c]) continue;
                    RowOut o = update_row<true>(c, w, s, now, ty, tx, ex, gxw, ey, gy, one_leak);
                    finish(zk + p, c, o);
                }
            }
        }
#pragma unroll
        for (int c = 0; c < RY; ++c)
#pragma unroll
            for (int j = 0; j < W - 1; ++j) q[c][j] = NP == WAVE_SYNC ? q[c][j + WAVE_SYNC] : q[c][j + 1];
    };
    int zk = z0, rd = 0;
    for (; zk + WAVE_SYNC <= z1; zk += WAVE_SYNC) {
        planes_at(zk, rd, WAVE_SYNC);
        rd = wrap_slot(rd + WAVE_SYNC);
    }
    if (WAVE_SYNC > 1 && zk < z1) planes_at(zk, rd, 1); // WAVE_SYNC is 1 or 2: one plane is left
    return check != check;
}

// Whether the one-step tile whose first cell is (x0, y0) reaches into a layer in x or y.
__device__ __forceinline__ bool reaches_layer(const int* meta, int x0, int y0)
{
    return x0 < meta[0] || x0 + TW > meta[1] || y0 < meta[2] || y0 + TY > meta[3];
}

// The one-step pass is two kernels on the same tiles and z chunks, so that each form is a loop
// of its own with registers of its own: wave_blocked_inner streams the inner box's planes of the
// tiles that lie inside it in x and y (the host launches it on those planes only), wave_blocked
// every other plane of every tile, in the layers' form (a chunk of an inner tile inside the
// inner box's z range is the inner kernel's: such a block returns).
extern "C" __global__ void __launch_bounds__(BX * BY) wave_blocked(WAVE_PARAMS)
{
    if (earlier_pass_failed(pass, flag)) return;
    const ZChunk zc = z_chunk(blockIdx.z, a0, a1, b0, b1, hz);
    if (zc.z0 >= zc.z1) return;
    const int x0 = meta[12] + (int)blockIdx.x * TW, y0 = meta[13] + (int)blockIdx.y * TY; // see meta above
    const Meta m = read_meta(meta);
    if (!reaches_layer(meta, x0, y0) && m.z0 < m.z1 && zc.z0 < m.z1 && zc.z1 > m.z0) return;
    if (one_step_planes<false>(u, prev, phi, coef, damp, meta, taps, amp, pstart, pz, pout, u_out, prev_out, phi_out,
                               nx, ny, nz, pitch, plane, a0, a1, b0, b1, hz, s0, pass, flag, one_leak, m, x0, y0, zc.z0, zc.z1))
        *flag = pass;
}

// The inner tiles' planes of the inner box, in the plain form (see above).
extern "C" __global__ void __launch_bounds__(BX * BY) wave_blocked_inner(WAVE_PARAMS)
{
    if (earlier_pass_failed(pass, flag)) return;
    const ZChunk zc = z_chunk(blockIdx.z, a0, a1, b0, b1, hz);
    if (zc.z0 >= zc.z1) return;
    const int x0 = meta[12] + (int)blockIdx.x * TW, y0 = meta[13] + (int)blockIdx.y * TY; // see meta above
    if (reaches_layer(meta, x0, y0)) return;
    const Meta m = read_meta(meta);
    if (one_step_planes<true>(u, prev, phi, coef, damp, meta, taps, amp, pstart, pz, pout, u_out, prev_out, phi_out,
                              nx, ny, nz, pitch, plane, a0, a1, b0, b1, hz, s0, pass, flag, one_leak, m, x0, y0, zc.z0, zc.z1))
        *flag = pass;
}
#else
extern "C" __global__ void __launch_bounds__(BX * BY) wave_blocked(WAVE_PARAMS)
{
    if (earlier_pass_failed(pass, flag)) return;
    extern __shared__ unsigned char smem_raw[];
    REAL* smem = reinterpret_cast<REAL*>(smem_raw); // 2 x BT planes of SW x SH
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
    const int ox0 = RADIUS + blockIdx.x * VX, oy0 = RADIUS + blockIdx.y * VY;
    const int ox1 = min(ox0 + VX, nx - RADIUS), oy1 = min(oy0 + VY, ny - RADIUS);
    const int x0 = ox0 - GHOST, y0 = oy0 - GHOST;
    const ZChunk zc = z_chunk(blockIdx.z, a0, a1, b0, b1, hz);
    const int z0 = zc.z0, z1 = zc.z1;
    const int zl = max(0, z0 - HALO);
    for (int i = tid; i < 2 * BT * SW * SH; i += BX * BY) smem[i] = 0;
    const bool layer_xy = x0 < meta[0] || x0 + TW > meta[1] || y0 < meta[2] || y0 + TY > meta[3];
    const Meta m = read_meta(meta);
    const Damping d = damping(damp, nx, ny, nz);

    const int gx = x0 + tx, row0 = y0 + ty * RY;
    const Cells cells = locate(tid, gx, row0, x0, y0, nx, ny, (int)pitch);
    bool owned[RY];
    REAL ey[RY], gy[RY]; // the rows' damping in y
    const REAL ex = gx >= 0 && gx < nx ? __ldg(d.ex + gx) : REAL(0), gxw = gx >= 0 && gx < nx ? __ldg(d.gx + gx) : REAL(0);
#pragma unroll
    for (int c = 0; c < RY; ++c) {
        const int y = row0 + c;
        owned[c] = gx >= ox0 && gx < ox1 && y >= oy0 && y < oy1;
        ey[c] = y >= 0 && y < ny ? __ldg(d.ey + y) : REAL(0);
        gy[c] = y >= 0 && y < ny ? __ldg(d.gy + y) : REAL(0);
    }
    REAL q[BT][RY][W] = {};                        // level k's u along the column, k = 0 .. BT-1
    REAL dphi[LEVELS_BEHIND][RY][RADIUS + 1] = {}; // φ⁺ of levels 1 .. BT-1, the last R+1 planes
    Ahead next;
    const IDX pl = (IDX)plane;
    // Whether level 1's plane when zload is loaded takes the layers' form.
    const auto layer1 = [&](int zload) { return layer_xy || zload - RADIUS < m.z0 || zload - RADIUS >= m.z1; };
    fetch(next, u, prev, phi, coef, cells, zl, nz, pl, layer1(zl));
    __syncthreads();
    bool bad = false;
    const int iterations = z1 - zl + HALO;
    for (int it = 0; it < iterations; ++it) {
        const int zload = zl + it;
        const Ahead now = next;
        if (it + 1 < iterations) fetch(next, u, prev, phi, coef, cells, zload + 1, nz, pl, layer1(zload + 1));
#pragma unroll
        for (int c = 0; c < RY; ++c) {
#pragma unroll
            for (int j = 0; j < W - 1; ++j) q[0][c][j] = q[0][c][j + 1];
            q[0][c][W - 1] = now.u[c];
        }
#pragma unroll
        for (int k = 1; k <= BT; ++k) {
            const int zk = zload - k * RADIUS;
            REAL* s = smem + ((it & 1) * BT + (k - 1)) * SW * SH;
#pragma unroll
            for (int c = 0; c < RY; ++c) s[(ty * RY + c + RADIUS) * SW + tx + RADIUS] = q[k - 1][c][RADIUS];
            if (k == 1) {
#pragma unroll
                for (int j = 0; j < RIMS; ++j)
                    if (cells.rim_s[j] >= 0) s[cells.rim_s[j]] = now.rim[j];
            }
            __syncthreads();
            // Level k's plane is needed when a later level's stencil reaches it.
            const int reach = (BT - k) * RADIUS;
            const bool plane_ok = zk >= RADIUS && zk < nz - RADIUS && zk >= z0 - reach && zk < z1 + reach;
            const bool layer = layer_xy || zk < m.z0 || zk >= m.z1;
            const bool sources = zk >= m.taps_z0 && zk <= m.taps_z1;
            const bool probes = zk >= m.probes_z0 && zk <= m.probes_z1 && zk >= z0 && zk < z1;
            const int step = s0 + k - 1;
            const IDX zo = zk * pl;
            REAL ez = 0, gz = 0;
            if (layer && plane_ok) {
                ez = __ldg(d.ez + zk);
                gz = __ldg(d.gz + zk);
            }
#pragma unroll
            for (int c = 0; c < RY; ++c) {
                REAL v = 0, f = 0;
                if (plane_ok && cells.interior[c]) {
                    const REAL* row = s + (ty * RY + c + RADIUS) * SW + tx + RADIUS;
                    const auto at = [&](int dx, int dy) { return row[dy * SW + dx]; };
                    const REAL p = k == 1 ? now.prev[c] : q[k >= 2 ? k - 2 : 0][c][0];
                    const REAL kc = now.coef[k - 1][c];
                    if (layer) {
                        const REAL ph = k == 1 ? now.phi[c] : dphi[k >= 2 ? k - 2 : 0][c][0];
                        const CellDamping cd = {(ex + ey[c]) + ez, gxw, gy[c], gz, one_leak};
                        v = update<true>(q[k - 1][c][RADIUS], q[k - 1][c], at, p, kc, ph, cd, f);
                    } else {
                        v = update<false>(q[k - 1][c][RADIUS], q[k - 1][c], at, p, kc, 0, CellDamping{}, f);
                    }
                    const int y = row0 + c;
                    if (sources) v = inject(v, meta, taps, amp, step, gx, y, zk);
                    if (probes && owned[c]) record(v, meta, pstart, pz, pout, step, (long long)y * nx + gx, zk);
                }
                if (k < BT) {
#pragma unroll
                    for (int j = 0; j < W - 1; ++j) q[k][c][j] = q[k][c][j + 1];
                    q[k][c][W - 1] = v;
#pragma unroll
                    for (int j = 0; j < RADIUS; ++j) dphi[k - 1][c][j] = dphi[k - 1][c][j + 1];
                    dphi[k - 1][c][RADIUS] = f;
                } else if (owned[c] && zk >= z0 && zk < z1) {
                    const IDX i = zo + cells.off[c];
                    u_out[i] = v;
                    if (BT > 1) prev_out[i] = q[BT - 1][c][RADIUS];
                    if (layer) phi_out[i] = f;
                    bad |= !(isfinite(v) && isfinite(f));
                }
            }
        }
    }
    if (bad) *flag = pass;
}
#endif
#endif

// ---------------------------------------------------------------------------------------------
// wave_mirror: a rigid face (src/wave/rigid.rs) of `axis` on `side` (0 low, 1 high): the R
// layers of its boundary take the mirror image of the R layers inside it, u[R-1-k] = u[R+k]
// (low) or u[n-R+k] = u[n-R-1-k] (high), over the face's whole extent. One thread per cell of
// the face, (a, b) its coordinates along the other two axes (x fastest).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void wave_mirror(REAL* __restrict__ u, int nx, int ny, int nz,
                                       long long pitch, long long plane, int axis, int side)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    const int b = blockIdx.y * blockDim.y + threadIdx.y;
    const int n = axis == 0 ? nx : (axis == 1 ? ny : nz);
    const int na = axis == 0 ? ny : nx, nb = axis == 2 ? ny : nz;
    if (a >= na || b >= nb) return;
    const long long stride = axis == 0 ? 1 : (axis == 1 ? pitch : plane);
    const long long base = axis == 0   ? b * plane + a * pitch
                           : axis == 1 ? b * plane + a
                                       : b * pitch + a;
    for (int k = 0; k < RADIUS; ++k) {
        const int from = side == 0 ? RADIUS + k : n - RADIUS - 1 - k;
        const int to = side == 0 ? RADIUS - 1 - k : n - RADIUS + k;
        u[base + to * stride] = u[base + from * stride];
    }
}
