// gpu-blocked for star stencils, x neighbours by warp shuffle: N.5D blocking as in the
// shared-memory kernel of stencil.cu (2.5D tiles streamed along z, BT time steps per pass,
// accumulators of every level in registers), with the in-plane exchange rearranged so that a
// computed cell costs fewer instructions (measured on the H100 80GB HBM3, star7 f32 512^3, 240
// steps: 816-822 G updates/s at dim_t 4 with 32x16 threads, 2x3 cells each, against 360 for the best
// shared-memory shape; the STAGES, SKEW and INNER notes below give the shapes measured).
//
// Appended to stencil.cu's definitions when the host defines RX (src/gpu/source.rs):
//   RX      cells per thread along x; one warp of 32 lanes spans a row of 32*RX cells
//   RY      cells per thread along y (at least RADIUS)
//   BY      warps per block, stacked along y: the tile is 32*RX x BY*RY cells
//   BT      as for the shared-memory kernel; REAL2 the two-element vector of REAL;
//   STAGES  planes of level 0's input held in shared memory (at least 1): plane p+STAGES-1 is
//           copied (cp.async) while plane p is computed. Measured on the H100 80GB HBM3 (star7
//           f32 512^3, dim_t 3, 32x8 threads, 2x3 cells, G updates/s): loads into registers one
//           plane ahead with an L2 prefetch 2 planes ahead 600 (long-scoreboard stalls 1.5 per
//           issued instruction: DRAM latency outlasted a plane's work), 3 stages 686 (0.3);
//           dim_t 4, 32x12: 2 stages 685, 3 705, 4 708. An L2 prefetch besides cost 2%.
//   SKEW    the level schedule, as in stencil.cu: 0, level t+1 takes level t's plane within the
//           step (BT barriers per step, each after a chain of dependent work); 1, it takes the
//           plane level t completed in the step before (LAG = R+1 planes per level), so every
//           level's rows go through shared memory behind one barrier per step and the levels'
//           arithmetic is independent. It costs registers (ptxas: 164 against 146 for dim_t 3,
//           2x3 cells, f32), so it pays on some shapes only (H100, star7 f32 512^3, G updates/s,
//           unskewed -> skewed: dim_t 3 32x12 threads 2x3 cells 463 -> 577, 32x4 2x4 409 -> 512,
//           32x8 2x3 529 -> 500; dim_t 4 32x12 2x3 493 -> 447); the planner chooses it per shape;
//   LEVELS_IN_PLACE  1: level t+1 reads its input plane from the accumulator slot where level t
//           completed it; 0: the plane is copied into registers of its own (in[t+1]) as it
//           completes. In place saves the copies (ptxas, sm_90, star7 dim_t 3 32x16 threads 1x3
//           cells skewed f64: 18 fewer moves per plane) and registers (dim_t 3 32x8 2x3 f64: 172
//           against 238). Measured on an H200 (star7 512^3, 1000 steps, G updates/s): f64 the
//           planner's 32x16 of 1x3 skewed 414 -> 422, and 32x16 of 1x4 skewed, which spilled
//           with copies, 435; f32 dim_t 4 32x16 2x3 790 -> 777. The host sets it for f64.
//   IDX     the type of element offsets: int when the grid holds fewer than 2³¹ elements, else
//           long long (the default)
//   INNER   1: tiles whose ghost zone lies inside the fixed boundary take a second copy of the
//           loop with constant coefficients and no tests per cell (shuffle_tile<false>); 0: every
//           tile takes the tested one. Measured on an H200 against INNER 0, same card, 512^3,
//           G updates/s: f64 star7 306 -> 320, star:2 145 -> 152, star:3 117 -> 125; f32 star7
//           586 -> 559, star:2 305 -> 306, star:3 216 -> 226 (shared-memory input); with the
//           staged planes (H100 80GB HBM3, star7 f32 dim_t 3 32x8 2x3) 644 -> 672, and dim_t 4
//           32x12 without it spilled (483 against 682). On by default in both precisions.
//
// - x neighbours come from the neighbouring lanes by __shfl_up/down_sync; the lanes at a warp's
//   ends get their own value back, junk that stays inside the ghost zone of width R*BT.
// - y neighbours within a thread's RY rows are its own registers; only each thread's top R and
//   bottom R rows go through shared memory (as pairs of values when RX is even) for the warps
//   above and below. The tile's first and last warps read zeros from two pad rows there (ghost
//   zone again).
// - z neighbours are the thread's own column, folded into 2R+1 accumulators per level
//   (associative partial sums) as in stencil.cu.
// - Fixed boundary cells and cells outside the grid are computed with identity weights (1 for
//   the cell itself, 0 for every neighbour), so they keep their value through every level with
//   neither a branch nor a reload (outside cells stay 0, so the identity never multiplies a
//   non-finite value); fixed planes at the z ends are reloaded from the source.
#ifndef SKEW
#define SKEW 0
#endif
#ifndef INNER
#define INNER 1
#endif
#ifndef IDX
#define IDX long long
#endif
#ifndef LEVELS_IN_PLACE
#define LEVELS_IN_PLACE 0
#endif
#define LAG (RADIUS + SKEW)
#define LANES 32
#define TXC (LANES * RX)
#define TYC (BY * RY)
// Valid output per tile, and the first output column and row of tile (bx, by); its first loaded
// cell lies R*BT before (the ghost zone).
#define VXC (TXC - 2 * RADIUS * BT)
#define VYC (TYC - 2 * RADIUS * BT)
#define OUT_X0(bx) (RADIUS + (bx) * VXC)
#define OUT_Y0(by) (RADIUS + (by) * VYC)
#define SLOT(k) ((((k) % W) + W) % W)
// Rows of each warp kept in shared memory: its top R and bottom R (all RY when fewer than 2R).
#define SROWS (RY >= 2 * RADIUS ? 2 * RADIUS : RY)
#define SLOT_OF_ROW(row) (RY >= 2 * RADIUS ? ((row) < RADIUS ? (row) : (row) - (RY - 2 * RADIUS)) : (row))
// One level's plane: BY warps' rows plus a zero pad warp above and below.
#define PLANE_ELEMS ((BY + 2) * SROWS * TXC)
// One buffer: every level's plane when skewed, else one.
#define BUF_ELEMS ((SKEW ? BT : 1) * PLANE_ELEMS)
#define FULL_MASK 0xffffffffu
static_assert(RY >= RADIUS, "a thread's rows must cover the radius");
static_assert(RX * RY <= 32, "cell masks are 32 bits");
static_assert(!IS_BOX, "the shuffle kernel computes star stencils");

// The RX values of one row of a thread to or from shared memory: as pairs when RX is even (a
// thread's row then starts at an even index, aligned for REAL2), else one by one.
__device__ __forceinline__ void store_row(REAL* p, const REAL* v)
{
    if (RX % 2 == 0) {
#pragma unroll
        for (int k = 0; k + 1 < RX; k += 2) {
            REAL2 q;
            q.x = v[k];
            q.y = v[k + 1];
            *reinterpret_cast<REAL2*>(p + k) = q;
        }
    } else {
#pragma unroll
        for (int k = 0; k < RX; ++k) p[k] = v[k];
    }
}

__device__ __forceinline__ void load_row(const REAL* p, REAL* v)
{
    if (RX % 2 == 0) {
#pragma unroll
        for (int k = 0; k + 1 < RX; k += 2) {
            const REAL2 q = *reinterpret_cast<const REAL2*>(p + k);
            v[k] = q.x;
            v[k + 1] = q.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < RX; ++k) v[k] = p[k];
    }
}

#ifndef STAGES
#define STAGES 3
#endif
static_assert(STAGES >= 1, "level 0's input needs a slot");
// One staged plane: the tile's TYC rows of TXC cells, a thread's rows BY rows apart.
#define STAGE_ELEMS (TYC * TXC)
// Whether the tile of block (bx, by) and its ghost zone lie inside the fixed boundary: then every
// cell a thread holds is in the grid and computed with the stencil's own coefficients.
__device__ __forceinline__ bool shuffle_tile_inside(int bx, int by, int nx, int ny)
{
    const int x0 = OUT_X0(bx) - RADIUS * BT, y0 = OUT_Y0(by) - RADIUS * BT;
    return x0 >= RADIUS && x0 + TXC <= nx - RADIUS && y0 >= RADIUS && y0 + TYC <= ny - RADIUS;
}

// One tile's pass. EDGE: the tile reaches the fixed boundary or beyond the grid, so cells are
// tested against the grid and fixed cells computed with identity weights; inner tiles (most
// of them) take the stencil's coefficients as constants and load without tests (measured on an
// H100, star7 f32 dim_t 3: per-cell weights were rebuilt with compares and selects at every
// use, a quarter of the loop's instructions).
template <bool EDGE>
__device__ __forceinline__ void shuffle_tile(const REAL* __restrict__ src, REAL* __restrict__ dst,
                                             int nx, int ny, int nz, long long pitch, long long plane,
                                             ZChunk zc, int pass, int* __restrict__ non_finite,
                                             REAL* smem)
{
    constexpr REAL c[] = COEF;
    const int lane = threadIdx.x, ty = threadIdx.y;
    const int ox0 = OUT_X0(blockIdx.x), oy0 = OUT_Y0(blockIdx.y);
    const int ox1 = min(ox0 + VXC, nx - RADIUS), oy1 = min(oy0 + VYC, ny - RADIUS);
    const int gx0 = ox0 - RADIUS * BT + lane * RX, gy0 = oy0 - RADIUS * BT + ty * RY;
    const int z0 = zc.z0, z1 = zc.z1;
    ASSUME(z0 >= RADIUS && z1 <= nz - RADIUS && z0 < z1);
    const int zl = max(0, z0 - RADIUS * BT), zh = min(nz, z1 + RADIUS * BT);
    // The last level's output plane trails level 0's input by (BT-1)*LAG + R.
    const int steps = (z1 - zl) + (BT - 1) * LAG + RADIUS;

    for (int i = ty * LANES + lane; i < 2 * BUF_ELEMS; i += LANES * BY) smem[i] = 0;

    // Per own cell (bit i*RX + j): inside the grid, inside the fixed boundary, stored.
    unsigned in_grid = 0, interior = 0, store = 0;
#pragma unroll
    for (int i = 0; i < RY; ++i)
#pragma unroll
        for (int j = 0; j < RX; ++j) {
            const int gx = gx0 + j, gy = gy0 + i, bit = i * RX + j;
            in_grid |= unsigned(gx >= 0 && gx < nx && gy >= 0 && gy < ny) << bit;
            interior |= unsigned(gx >= RADIUS && gx < nx - RADIUS && gy >= RADIUS && gy < ny - RADIUS)
                        << bit;
            store |= unsigned(gx >= ox0 && gx < ox1 && gy >= oy0 && gy < oy1) << bit;
        }
#define HAS(mask, i, j) (((mask) >> ((i) * RX + (j))) & 1u)
// Cell (i, j) inside the grid, and its weight for distance d.
#define IN_GRID(i, j) (!EDGE || HAS(in_grid, i, j))
#define WT(i, j, d) (EDGE ? wt[i][j][d] : c[d])
    // Offset of the thread's first cell; only cells inside the grid are ever addressed. IDX
    // (the host's choice): int on grids of fewer than 2³¹ elements, where one instruction forms
    // an address instead of four (ptxas, sm_90: 13% fewer instructions a plane in f64, 11% in
    // f32), else long long.
    const IDX pt = (IDX)pitch, pl = (IDX)plane;
    const IDX base = (IDX)gy0 * pt + gx0;
    REAL wt[RY][RX][RADIUS + 1];
#pragma unroll
    for (int i = 0; i < RY; ++i)
#pragma unroll
        for (int j = 0; j < RX; ++j)
#pragma unroll
            for (int d = 0; d <= RADIUS; ++d) wt[i][j][d] = HAS(interior, i, j) ? c[d] : REAL(d == 0);

    // acc[t]: level t's partial sums of its output planes; in[t]: level t's input plane (in
    // place: only level 0's, the others are read from acc).
    REAL acc[BT][W][RY][RX];
    REAL in[LEVELS_IN_PLACE ? 1 : BT][RY][RX];
#pragma unroll
    for (int i = 0; i < RY; ++i)
#pragma unroll
        for (int j = 0; j < RX; ++j) {
#pragma unroll
            for (int t = 0; t < (LEVELS_IN_PLACE ? 1 : BT); ++t) in[t][i][j] = 0;
#pragma unroll
            for (int t = 0; t < BT; ++t)
#pragma unroll
                for (int a = 0; a < W; ++a) acc[t][a][i][j] = 0;
        }
// Level t's input plane at phase ph. In place: level 0's staged plane, else the slot level t-1
// completed this phase (in step) or the phase before (skewed), both slot ph - t*LAG.
#if LEVELS_IN_PLACE
#define LEVEL_IN(t, ph) (*((t) == 0 ? &in[0] : &acc[(t) > 0 ? (t) - 1 : 0][SLOT((ph) - (t) * LAG)]))
#else
#define LEVEL_IN(t, ph) in[t]
#endif
    // Level 0's input planes pass through a ring of STAGES planes in shared memory, copied
    // STAGES-1 planes ahead of use (cp.async: in flight while the levels compute, and no
    // registers held). A thread copies and reads back only its own cells, so its own wait on
    // its copies is all the ordering needed: no barrier guards the ring.
    REAL* const stage = smem + 2 * BUF_ELEMS + ty * TXC + lane * RX;
    int stage_rd = 0;
#pragma unroll
    for (int a = 0; a + 1 < STAGES; ++a) {
#pragma unroll
        for (int i = 0; i < RY; ++i)
#pragma unroll
            for (int j = 0; j < RX; ++j)
                stage_bytes<sizeof(REAL)>(stage + a * STAGE_ELEMS + i * BY * TXC + j,
                                          src + ((zl + a) * pl + base + i * pt + j), zl + a < zh && IN_GRID(i, j));
        stage_commit();
    }
    // fma(v, 0, chk) turns NaN for an infinite or NaN v and stays 0 otherwise: one instruction
    // per stored cell for the non-finite check.
    REAL chk = 0;
    int buffer = 0;
    __syncthreads();

    for (int k0 = 0; k0 < steps; k0 += W) {
#pragma unroll
        for (int ph = 0; ph < W; ++ph) {
            const int k = k0 + ph;
            if (k < steps) { // block-uniform: every thread takes the same path to the barriers
                const int p = zl + k;
                // Plane p+STAGES-1 goes into the slot plane p-1 left; plane p, copied
                // STAGES-1 steps ago, is level 0's input.
                {
                    const bool more = p + STAGES - 1 < zh;
                    // Recomputed each step: running offsets cost registers (dim_t 3, 32x8 threads,
                    // 2x3 cells, H100 80GB HBM3: 150 against 128, one block per SM instead of
                    // two, 578 G updates/s against 686).
                    const IDX ahead = (p + STAGES - 1) * pl + base;
                    REAL* const wr = stage + (stage_rd == 0 ? STAGES - 1 : stage_rd - 1) * STAGE_ELEMS;
#pragma unroll
                    for (int i = 0; i < RY; ++i)
#pragma unroll
                        for (int j = 0; j < RX; ++j)
                            stage_bytes<sizeof(REAL)>(wr + i * BY * TXC + j, src + (ahead + i * pt + j),
                                                      more && IN_GRID(i, j));
                    stage_commit();
                    stage_wait<STAGES - 1>();
                    const REAL* const rd = stage + stage_rd * STAGE_ELEMS;
#pragma unroll
                    for (int i = 0; i < RY; ++i) load_row(rd + i * BY * TXC, in[0][i]);
                    stage_rd = stage_rd + 1 == STAGES ? 0 : stage_rd + 1;
                }
#if !LEVELS_IN_PLACE
                REAL last[RY][RX];
#endif
#if SKEW
                // Every level publishes the rows other warps need behind one barrier.
                REAL* const sbuf = smem + buffer * BUF_ELEMS;
                buffer ^= 1;
#pragma unroll
                for (int t = 0; t < BT; ++t)
#pragma unroll
                    for (int row = 0; row < RY; ++row)
                        if (row < RADIUS || row >= RY - RADIUS)
                            store_row(sbuf + t * PLANE_ELEMS + ((ty + 1) * SROWS + SLOT_OF_ROW(row)) * TXC + lane * RX,
                                      LEVEL_IN(t, ph)[row]);
                __syncthreads();
#endif
#pragma unroll
                for (int level = 0; level < BT; ++level) {
                    // Skewed levels run last to first, so level t+1 reads its input of this
                    // step before level t overwrites it with the input of the next.
                    const int t = SKEW ? BT - 1 - level : level;
                    // Level t's plane is pt = p - t*LAG.
#if SKEW
                    const REAL* const s = sbuf + t * PLANE_ELEMS;
#else
                    // Publish the rows other warps need, alternating between the two buffers
                    // level by level; with BT even the buffer is known at compile time (H100,
                    // star7 f32 512^3, dim_t 4, 32x16 threads 2x3 cells: 811 / 814 G updates/s
                    // with a run-time index, 819 / 815 without).
                    REAL* const s = smem + (BT % 2 == 0 ? t % 2 : buffer) * BUF_ELEMS;
                    if (BT % 2 != 0) buffer ^= 1;
#pragma unroll
                    for (int row = 0; row < RY; ++row)
                        if (row < RADIUS || row >= RY - RADIUS)
                            store_row(s + ((ty + 1) * SROWS + SLOT_OF_ROW(row)) * TXC + lane * RX, LEVEL_IN(t, ph)[row]);
                    __syncthreads();
#endif
                    REAL(&cur)[RY][RX] = LEVEL_IN(t, ph);
                    REAL above[RADIUS][RX], below[RADIUS][RX];
#pragma unroll
                    for (int r = 0; r < RADIUS; ++r) {
                        load_row(s + (ty * SROWS + SLOT_OF_ROW(RY - RADIUS + r)) * TXC + lane * RX, above[r]);
                        load_row(s + ((ty + 2) * SROWS + SLOT_OF_ROW(r)) * TXC + lane * RX, below[r]);
                    }
#pragma unroll
                    for (int i = 0; i < RY; ++i) {
                        // Row i extended by R cells each side from the neighbouring lanes: cell
                        // offset o lies in lane lane + floor(o / RX), at index o mod RX.
                        REAL ext[RX + 2 * RADIUS];
#pragma unroll
                        for (int j = 0; j < RX; ++j) ext[RADIUS + j] = cur[i][j];
#pragma unroll
                        for (int o = -RADIUS; o < 0; ++o) {
                            const int lanes = (RX - 1 - o) / RX;
                            ext[RADIUS + o] = __shfl_up_sync(FULL_MASK, cur[i][o + lanes * RX], lanes);
                        }
#pragma unroll
                        for (int o = RX; o < RX + RADIUS; ++o) {
                            const int lanes = o / RX;
                            ext[RADIUS + o] = __shfl_down_sync(FULL_MASK, cur[i][o - lanes * RX], lanes);
                        }
#pragma unroll
                        for (int j = 0; j < RX; ++j) {
                            const REAL v = cur[i][j];
                            // In-plane part of output q = pt (dz = 0), added to its accumulator.
                            REAL in_plane = fma(v, WT(i, j, 0), acc[t][SLOT(ph - t * LAG)][i][j]);
#pragma unroll
                            for (int d = 1; d <= RADIUS; ++d) {
                                // Clamped indices only keep untaken branches in bounds.
                                const int iu = i - d >= 0 ? i - d : 0, id = i + d < RY ? i + d : 0;
                                const int ru = i - d + RADIUS >= 0 ? i - d + RADIUS : 0;
                                const int rd = i + d - RY >= 0 && i + d - RY < RADIUS ? i + d - RY : 0;
                                const REAL up = i - d >= 0 ? cur[iu][j] : above[ru][j];
                                const REAL down = i + d < RY ? cur[id][j] : below[rd][j];
                                const REAL sum = (ext[RADIUS + j - d] + ext[RADIUS + j + d]) + (up + down);
                                in_plane = fma(sum, WT(i, j, d), in_plane);
                            }
                            // Output q = pt + R starts with this plane's term; the others add to it.
                            acc[t][SLOT(ph - t * LAG + RADIUS)][i][j] = v * WT(i, j, RADIUS);
#pragma unroll
                            for (int dz = -RADIUS + 1; dz <= RADIUS; ++dz) {
                                const int a = SLOT(ph - t * LAG - dz);
                                acc[t][a][i][j] = dz == 0 ? in_plane
                                                          : fma(v, WT(i, j, dz < 0 ? -dz : dz), acc[t][a][i][j]);
                            }
                        }
                    }
                    // Plane q = pt - R of level t+1 is complete; fixed planes keep the source's.
                    const int q = p - t * LAG - RADIUS;
                    const int done = SLOT(ph - t * LAG - RADIUS);
#if LEVELS_IN_PLACE
                    REAL(&out)[RY][RX] = acc[t][done]; // completed in place
#else
                    REAL out[RY][RX];
#pragma unroll
                    for (int i = 0; i < RY; ++i)
#pragma unroll
                        for (int j = 0; j < RX; ++j) out[i][j] = acc[t][done][i][j];
#endif
                    if (q < RADIUS || q >= nz - RADIUS) {
                        const IDX fixed = q * pl + base;
                        const bool inside = q >= 0 && q < nz;
#pragma unroll
                        for (int i = 0; i < RY; ++i)
#pragma unroll
                            for (int j = 0; j < RX; ++j)
                                out[i][j] = inside && IN_GRID(i, j) ? __ldg(src + (fixed + i * pt + j)) : REAL(0);
                    }
#if !LEVELS_IN_PLACE
#pragma unroll
                    for (int i = 0; i < RY; ++i)
#pragma unroll
                        for (int j = 0; j < RX; ++j) {
                            if (t + 1 < BT)
                                in[t + 1 < BT ? t + 1 : 0][i][j] = out[i][j];
                            else
                                last[i][j] = out[i][j];
                        }
#endif
                }
                // The last level's output, plane q = p - (BT-1)*LAG - R (in place: still in its
                // slot): write the valid part.
                const int q = p - (BT - 1) * LAG - RADIUS;
#if LEVELS_IN_PLACE
                const REAL(&last)[RY][RX] = acc[BT - 1][SLOT(ph - (BT - 1) * LAG - RADIUS)];
#endif
                if (q >= z0 && q < z1) {
                    const IDX row = q * pl + base;
#pragma unroll
                    for (int i = 0; i < RY; ++i)
#pragma unroll
                        for (int j = 0; j < RX; ++j)
                            if (HAS(store, i, j)) {
                                dst[row + i * pt + j] = last[i][j];
                                chk = fma(last[i][j], REAL(0), chk);
                            }
                }
            }
        }
    }
    if (chk != chk) *non_finite = pass;
#undef HAS
#undef IN_GRID
#undef WT
#undef LEVEL_IN
}

extern "C" __global__ void __launch_bounds__(LANES * BY)
stencil_shuffle(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny, int nz,
                long long pitch, long long plane, int a0, int a1, int b0, int b1, int hz, int pass,
                int* __restrict__ non_finite)
{
    if (earlier_pass_failed(pass, non_finite)) return;
    const ZChunk zc = z_chunk(blockIdx.z, a0, a1, b0, b1, hz);
    extern __shared__ __align__(16) unsigned char smem_raw[];
    REAL* smem = reinterpret_cast<REAL*>(smem_raw);
    // Block-uniform, so every thread of the block takes the same path to the barriers.
    if (INNER && shuffle_tile_inside(blockIdx.x, blockIdx.y, nx, ny))
        shuffle_tile<false>(src, dst, nx, ny, nz, pitch, plane, zc, pass, non_finite, smem);
    else
        shuffle_tile<true>(src, dst, nx, ny, nz, pitch, plane, zc, pass, non_finite, smem);
}
