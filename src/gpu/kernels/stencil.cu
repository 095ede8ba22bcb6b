// stencil35d GPU stencil kernels: one templated source, specialised at run time by NVRTC.
//
// The host prepends these definitions (see src/gpu/source.rs):
//   REAL            float or double
//   RADIUS          stencil radius R
//   IS_BOX          1 for a full (2R+1)^3 cube, 0 for a star
//   COEF            the coefficients as a brace list: star: R+1 values (centre, then one per
//                   distance); box: (2R+1)^3 values, index ((dz+R)(2R+1) + dy+R)(2R+1) + dx+R
//   BT              time steps per pass (blocked kernel)
//   BX, BY, RY      threads per block in x and y, cells per thread in y (blocked kernel)
//   L2_AHEAD        planes ahead of the current one that the blocked kernel asks L2 to fetch
//                   (0 or 1: none)
//   SKEW            level schedule of the blocked kernel (below)
//   MIN_BLOCKS      blocks per SM the register allocation must allow (default 1)
//
// Grids are dense, x fastest, rows `pitch` elements apart and planes `plane` apart (the host
// Grid's own padded layout, so one memcpy moves a whole grid). The outer R cells on every side
// are the fixed boundary: kernels never write them.
//
// Every kernel takes its pass number `pass` (counted from 1 since the host last read the flag)
// and the flag: a pass that writes a non-finite value stores its number there, and every later
// pass leaves both buffers alone. The host reads the flag once per many passes instead of after
// every launch (a wait and a copy per launch cost gpu-naive star7 f32 3% on the H100 80GB HBM3,
// gpu-blocked 2%) and still finds the input of the pass that went bad.
//
// The kernels compute the output planes [a0, a1) and [b0, b1) of passes.cuh (prepended by the
// host); gpu-naive takes a range per block row.

#define W (2 * RADIUS + 1)

__device__ __forceinline__ bool finite_value(REAL v) { return isfinite(v); }

// ---------------------------------------------------------------------------------------------
// gpu-naive: one thread per (x, y) column, streaming along z, one time step per launch; a star's
// column values slide through registers, every other neighbour is read through the read-only
// data cache, and the z loop is unrolled so several planes' loads are in flight. The honest
// bandwidth-bound baseline.
// ---------------------------------------------------------------------------------------------
// One column of gpu-naive: the output planes [z0, z1), as a loop from plane R with the
// column's origin moved to R planes before z0. `WHOLE` (the launch covers the whole interior)
// takes the bounds as R and nz - R, which the compiler makes a leaner loop of than of bounds
// from the ranges: star7 f32 338 against 325 G updates/s on an H200. Returns whether a value
// was not finite.
template <bool WHOLE>
__device__ __forceinline__ bool naive_column(const REAL* __restrict__ src, REAL* __restrict__ dst,
                                             int nz, long long pitch, long long plane, int x,
                                             int y, int z0, int z1, bool failed)
{
    constexpr REAL c[] = COEF;
    const long long origin = (long long)((WHOLE ? RADIUS : z0) - RADIUS) * plane + y * pitch + x;
    const int end = WHOLE ? nz - RADIUS : z1 - z0 + RADIUS;
    const REAL* col = src + origin;
    REAL* out = dst + origin;
    bool bad = false;
#if IS_BOX
#pragma unroll 2
    for (int z = RADIUS; z < end; ++z) {
        const REAL* p = col + z * plane;
        REAL acc = 0;
#pragma unroll
        for (int dz = -RADIUS; dz <= RADIUS; ++dz)
#pragma unroll
            for (int dy = -RADIUS; dy <= RADIUS; ++dy)
#pragma unroll
                for (int dx = -RADIUS; dx <= RADIUS; ++dx)
                    acc = fma(__ldg(p + dz * plane + dy * pitch + dx),
                              c[((dz + RADIUS) * W + dy + RADIUS) * W + dx + RADIUS], acc);
        if (!failed) out[z * plane] = acc;
        bad |= !finite_value(acc);
    }
#else
    // The column's own values z-R .. z+R slide through registers; in-plane neighbours come
    // through the read-only cache.
    REAL w[W];
#pragma unroll
    for (int j = 0; j < W - 1; ++j) w[j] = __ldg(col + j * plane);
#pragma unroll 4
    for (int z = RADIUS; z < end; ++z) {
        w[W - 1] = __ldg(col + (z + RADIUS) * plane);
        const REAL* p = col + z * plane;
        REAL acc = w[RADIUS] * c[0];
#pragma unroll
        for (int d = 1; d <= RADIUS; ++d) {
            REAL s = (__ldg(p - d) + __ldg(p + d)) + (__ldg(p - d * pitch) + __ldg(p + d * pitch));
            s += w[RADIUS - d] + w[RADIUS + d];
            acc = fma(s, c[d], acc);
        }
        if (!failed) out[z * plane] = acc;
        bad |= !finite_value(acc);
#pragma unroll
        for (int j = 0; j < W - 1; ++j) w[j] = w[j + 1];
    }
#endif
    return bad;
}

extern "C" __global__ void stencil_naive(const REAL* __restrict__ src, REAL* __restrict__ dst,
                                         int nx, int ny, int nz, long long pitch, long long plane,
                                         int a0, int a1, int b0, int b1, int hz, int pass,
                                         int* __restrict__ non_finite)
{
    // Read now, needed only at the first store: waiting for the flag before streaming cost 7%
    // (H100 80GB HBM3, star7 f32 512^3, back to back: 255 G updates/s against 275 without a
    // check and 276 with the stores tested). A pass after a failed one still reads its input.
    const bool failed = earlier_pass_failed(pass, non_finite);
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < RADIUS || x >= nx - RADIUS || y < RADIUS || y >= ny - RADIUS) return;
    // Block row 0 takes range a, row 1 range b (`hz` unused).
    const int z0 = blockIdx.z ? b0 : a0, z1 = blockIdx.z ? b1 : a1;
    const bool whole = z0 == RADIUS && z1 == nz - RADIUS;
    const bool bad = whole ? naive_column<true>(src, dst, nz, pitch, plane, x, y, z0, z1, failed)
                           : naive_column<false>(src, dst, nz, pitch, plane, x, y, z0, z1, failed);
    if (bad && !failed) *non_finite = pass;
}

// ---------------------------------------------------------------------------------------------
// copy_shell: copies the fixed boundary layer (the outer R cells on every side) of `src` into
// `dst`, so that the second buffer of a run carries the state's boundary without a copy of the
// whole grid (a full copy of a 512^3 f32 grid costs as much as a third of a gpu-blocked pass,
// and a split grid's halo exchange changes that layer before every pass). Blocks below
// `rows` copy one boundary row each (the rows of the first and last R planes, then the first
// and last R rows of every other plane); the blocks after them copy the first and last R cells
// of the remaining rows, one cell per thread.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void copy_shell(const REAL* __restrict__ src, REAL* __restrict__ dst,
                                      int nx, int ny, int nz, long long pitch, long long plane,
                                      int rows)
{
    const int b = blockIdx.x;
    if (b < rows) {
        const int edge_planes = 2 * RADIUS * ny;
        int y, z;
        if (b < edge_planes) {
            const int p = b / ny;
            z = p < RADIUS ? p : nz - 2 * RADIUS + p;
            y = b % ny;
        } else {
            const int k = b - edge_planes, r = k % (2 * RADIUS);
            z = RADIUS + k / (2 * RADIUS);
            y = r < RADIUS ? r : ny - 2 * RADIUS + r;
        }
        const long long row = z * plane + y * pitch;
        for (int x = threadIdx.x; x < nx; x += blockDim.x) dst[row + x] = src[row + x];
        return;
    }
    // The first and last R cells of the rows of planes R .. nz-R-1, rows R .. ny-R-1.
    const long long i = (long long)(b - rows) * blockDim.x + threadIdx.x;
    const long long inner_rows = (long long)(ny - 2 * RADIUS) * (nz - 2 * RADIUS);
    if (i >= inner_rows * 2 * RADIUS) return;
    const int c = i % (2 * RADIUS);
    const long long k = i / (2 * RADIUS);
    const int y = RADIUS + k % (ny - 2 * RADIUS), z = RADIUS + k / (ny - 2 * RADIUS);
    const int x = c < RADIUS ? c : nx - 2 * RADIUS + c;
    const long long at = z * plane + y * pitch + x;
    dst[at] = src[at];
}

// ---------------------------------------------------------------------------------------------
// gpu-blocked: N.5D blocking (AN5D): 2.5D tiles streamed along z, BT time steps per pass.
//
// A block owns a tile of TX x TY cells (TX = BX, TY = BY*RY); thread (tx, ty) owns column x = tx
// and the RY rows ty*RY .. ty*RY+RY-1 (register tiling in y). The block streams the planes of
// its z-chunk. When a level's new plane arrives (level 0: a load from memory), the block
// exchanges it through double-buffered shared memory and each thread adds the plane's
// contributions to 2R+1 register accumulators, one per output plane q = p-R .. p+R
// (associative partial sums; a star's off-plane terms need only the thread's own value). The
// accumulator of plane p-R is then complete: it is the next level's new plane. Accumulators sit
// in a fixed ring of registers indexed by (plane mod 2R+1); the step loop is unrolled 2R+1
// times so every index is a compile-time constant. Tile edges read stale shared memory: those
// cells lie in the ghost zone of width R*BT that the pass discards. Fixed boundary cells are
// reloaded from the source instead of computed.
//
// SKEW chooses how the levels of one step meet. With SKEW 0 level t+1 takes level t's plane within
// the same step (LAG = R): BT barriers per step, each after a chain of dependent work. With SKEW 1
// level t+1 takes the plane that level t completed in the step before, so each level works LAG =
// R+1 planes behind the one below; all BT levels then exchange their planes through shared memory
// together, behind one barrier per step, and their arithmetic is independent, at the cost of
// registers and shared memory. Measured on the H100 80GB HBM3 (star7 512^3, G updates/s, SKEW 0 ->
// 1): f32 dim_t 4, 32x16 blocks, 2 cells per thread 350 -> 302 (the best f32 shape), 32x8x4 321 ->
// 220, dim_t 2 32x16x2 272 -> 292, dim_t 6 233 -> 261; f64 dim_t 4 32x16x2 209 -> 237 (the best f64
// shape), 32x8x2 172 -> 185, dim_t 5 190 -> 190. The host skews f64 only (src/gpu/source.rs).
// ---------------------------------------------------------------------------------------------
#if defined(BT) && !defined(RX) // RX selects stencil_shuffle.cu instead
#define TX BX
#define TY (BY * RY)
#define SW (TX + 2 * RADIUS)
#define SH (TY + 2 * RADIUS)
#define SLOT(k) ((((k) % W) + W) % W)
#ifndef SKEW
#define SKEW 0
#endif
#define LAG (RADIUS + SKEW)
// Planes each shared-memory buffer holds: one per level when skewed, else one.
#define SPLANES (SKEW ? BT : 1)

// A second __launch_bounds__ argument, even 1, changes ptxas's scheduling (measured on the H100
// 80GB HBM3, star7 f32 512^3, dim_t 4, 32x16 threads, 2 cells per thread: 353 G updates/s without it,
// 266 with 1), so it is given only when MIN_BLOCKS asks for more than one block per SM.
#if defined(MIN_BLOCKS) && MIN_BLOCKS > 1
#define BLOCKED_BOUNDS __launch_bounds__(BX * BY, MIN_BLOCKS)
#else
#define BLOCKED_BOUNDS __launch_bounds__(BX * BY)
#endif
extern "C" __global__ void BLOCKED_BOUNDS
stencil_blocked(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny, int nz,
                long long pitch, long long plane, int a0, int a1, int b0, int b1, int hz, int pass,
                int* __restrict__ non_finite)
{
    if (earlier_pass_failed(pass, non_finite)) return;
    constexpr REAL c[] = COEF;
    extern __shared__ unsigned char smem_raw[];
    REAL* smem = reinterpret_cast<REAL*>(smem_raw);

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int vx = TX - 2 * RADIUS * BT, vy = TY - 2 * RADIUS * BT; // valid output per tile
    const int ox0 = RADIUS + blockIdx.x * vx, oy0 = RADIUS + blockIdx.y * vy;
    const int ox1 = min(ox0 + vx, nx - RADIUS), oy1 = min(oy0 + vy, ny - RADIUS);
    const int gx = ox0 - RADIUS * BT + tx;
    const int gy0 = oy0 - RADIUS * BT + ty * RY;
    const ZChunk zc = z_chunk(blockIdx.z, a0, a1, b0, b1, hz);
    const int z0 = zc.z0, z1 = zc.z1;
    ASSUME(z0 >= RADIUS && z1 <= nz - RADIUS && z0 < z1);
    const int zl = max(0, z0 - RADIUS * BT), zh = min(nz, z1 + RADIUS * BT);
    // The last level's plane trails level 0's by (BT-1)*LAG + R.
    const int steps = (z1 - zl) + (BT - 1) * LAG + RADIUS;

    // Zero both buffers once so the halo that no thread writes holds finite junk.
    for (int i = ty * BX + tx; i < 2 * SPLANES * SW * SH; i += BX * BY) smem[i] = 0;

    // Block-uniform: does the tile reach the fixed boundary or beyond the grid? Interior
    // tiles (most of them) skip the per-cell boundary handling entirely.
    const int tx0 = ox0 - RADIUS * BT, ty0 = oy0 - RADIUS * BT;
    const bool edge_tile =
        tx0 < RADIUS || tx0 + TX > nx - RADIUS || ty0 < RADIUS || ty0 + TY > ny - RADIUS;

    bool in_grid[RY], interior[RY], store[RY];
    long long offset[RY];
#pragma unroll
    for (int i = 0; i < RY; ++i) {
        const int gy = gy0 + i;
        in_grid[i] = gx >= 0 && gx < nx && gy >= 0 && gy < ny;
        interior[i] = gx >= RADIUS && gx < nx - RADIUS && gy >= RADIUS && gy < ny - RADIUS;
        store[i] = gx >= ox0 && gx < ox1 && gy >= oy0 && gy < oy1;
        offset[i] = in_grid[i] ? (long long)gy * pitch + gx : 0;
    }

    REAL acc[BT][W][RY];
#pragma unroll
    for (int t = 0; t < BT; ++t)
#pragma unroll
        for (int a = 0; a < W; ++a)
#pragma unroll
            for (int i = 0; i < RY; ++i) acc[t][a][i] = 0;
    bool bad = false;
    int buffer = 0;
    // The next plane is loaded one step ahead, so its memory latency hides behind the BT
    // levels of arithmetic on the current one.
    REAL next[RY];
    // in[t]: level t's plane for the current step (level 0's comes from memory).
    REAL in[BT][RY];
#pragma unroll
    for (int t = 0; t < BT; ++t)
#pragma unroll
        for (int i = 0; i < RY; ++i) in[t][i] = 0;
#pragma unroll
    for (int i = 0; i < RY; ++i)
        next[i] = (zl < zh && in_grid[i]) ? __ldg(src + zl * plane + offset[i]) : REAL(0);
    __syncthreads();

    for (int k0 = 0; k0 < steps; k0 += W) {
#pragma unroll
        for (int ph = 0; ph < W; ++ph) {
            const int k = k0 + ph;
            if (k < steps) { // block-uniform: every thread takes the same path to the barriers
            const int p = zl + k;
#pragma unroll
            for (int i = 0; i < RY; ++i) {
                in[0][i] = next[i];
                next[i] = (p + 1 < zh && in_grid[i]) ? __ldg(src + (p + 1) * plane + offset[i])
                                                     : REAL(0);
                // Ask L2 for a plane further ahead, so the register prefetch above finds it
                // there: DRAM latency under a full load is longer than a plane's arithmetic.
#if L2_AHEAD > 1
                if (p + L2_AHEAD < zh && in_grid[i])
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(src + (p + L2_AHEAD) * plane + offset[i]));
#endif
            }
#if SKEW
            // Every level's plane goes to shared memory behind one barrier.
            REAL* const sbuf = smem + buffer * (BT * SW * SH);
            buffer ^= 1;
#pragma unroll
            for (int t = 0; t < BT; ++t)
#pragma unroll
                for (int i = 0; i < RY; ++i)
                    sbuf[t * SW * SH + (ty * RY + i + RADIUS) * SW + tx + RADIUS] = in[t][i];
            __syncthreads();
#endif
            REAL out[RY], last[RY];

#pragma unroll
            for (int level = 0; level < BT; ++level) {
                // Skewed levels run last to first, so level t+1 reads its input of this step
                // before level t overwrites it with the input of the next.
                const int t = SKEW ? BT - 1 - level : level;
                // v holds level t's plane pt = p - t*LAG.
                REAL v[RY];
#pragma unroll
                for (int i = 0; i < RY; ++i) v[i] = in[t][i];
#if SKEW
                const REAL* s = sbuf + t * SW * SH;
#else
                REAL* s = smem + buffer * (SW * SH);
                buffer ^= 1;
#pragma unroll
                for (int i = 0; i < RY; ++i) s[(ty * RY + i + RADIUS) * SW + tx + RADIUS] = v[i];
                __syncthreads();
#endif
                const REAL* row0 = s + (ty * RY + RADIUS) * SW + tx + RADIUS; // own first cell
#if IS_BOX
                // Each shared row r (relative to the thread's first row) is read once, 2R+1
                // values, and contributes to every own cell i within R rows of it, for every
                // output plane offset dz: the plane is at z-offset dz from output q = pt - dz.
#pragma unroll
                for (int r = -RADIUS; r < RY + RADIUS; ++r) {
                    REAL row[W];
#pragma unroll
                    for (int dx = -RADIUS; dx <= RADIUS; ++dx)
                        row[dx + RADIUS] = (dx == 0 && r >= 0 && r < RY) ? v[r] : row0[r * SW + dx];
#pragma unroll
                    for (int i = 0; i < RY; ++i) {
                        const int dy = r - i;
                        if (dy < -RADIUS || dy > RADIUS) continue;
#pragma unroll
                        for (int dz = -RADIUS; dz <= RADIUS; ++dz) {
                            const int a = SLOT(ph - t * LAG - dz);
#pragma unroll
                            for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
                                const REAL w = c[((dz + RADIUS) * W + dy + RADIUS) * W + dx + RADIUS];
                                const bool first = (dz == -RADIUS) && (r == i - RADIUS) && (dx == -RADIUS);
                                acc[t][a][i] = first ? row[dx + RADIUS] * w
                                                     : fma(row[dx + RADIUS], w, acc[t][a][i]);
                            }
                        }
                    }
                }
#else
#pragma unroll
                for (int i = 0; i < RY; ++i) {
                    // In-plane part of output q = pt (dz = 0).
                    REAL in_plane = v[i] * c[0];
#pragma unroll
                    for (int d = 1; d <= RADIUS; ++d) {
                        const REAL up = (i - d >= 0) ? v[i - d] : row0[(i - d) * SW];
                        const REAL down = (i + d < RY) ? v[i + d] : row0[(i + d) * SW];
                        const REAL sum = (row0[i * SW - d] + row0[i * SW + d]) + (up + down);
                        in_plane = fma(sum, c[d], in_plane);
                    }
                    // Output q = pt + R starts with this plane's term; the others add to it.
                    const int first = SLOT(ph - t * LAG + RADIUS);
                    acc[t][first][i] = v[i] * c[RADIUS];
#pragma unroll
                    for (int dz = -RADIUS + 1; dz <= RADIUS; ++dz) {
                        const int a = SLOT(ph - t * LAG - dz);
                        acc[t][a][i] = (dz == 0) ? acc[t][a][i] + in_plane
                                                 : fma(v[i], c[dz < 0 ? -dz : dz], acc[t][a][i]);
                    }
                }
#endif
                // Plane q = pt - R of level t+1 is complete.
                const int q = p - t * LAG - RADIUS;
                const bool fixed_plane = q < RADIUS || q >= nz - RADIUS;
                const int done = SLOT(ph - t * LAG - RADIUS);
                if (fixed_plane || edge_tile) {
#pragma unroll
                    for (int i = 0; i < RY; ++i) {
                        REAL o = acc[t][done][i];
                        if (fixed_plane || !interior[i])
                            o = (q >= 0 && q < nz && in_grid[i]) ? __ldg(src + q * plane + offset[i])
                                                                   : REAL(0);
                        out[i] = o;
                    }
                } else {
#pragma unroll
                    for (int i = 0; i < RY; ++i) out[i] = acc[t][done][i];
                }
#pragma unroll
                for (int i = 0; i < RY; ++i) {
                    if (t + 1 < BT)
                        in[t + 1][i] = out[i];
                    else
                        last[i] = out[i];
                }
            }

            // last holds the pass's last level at plane q = p - (BT-1)*LAG - R: write the valid
            // part.
            const int q = p - (BT - 1) * LAG - RADIUS;
            if (q >= z0 && q < z1) {
#pragma unroll
                for (int i = 0; i < RY; ++i)
                    if (store[i]) {
                        dst[q * plane + offset[i]] = last[i];
                        bad |= !finite_value(last[i]);
                    }
            }
            }
        }
    }
    if (bad) *non_finite = pass;
}
#endif
