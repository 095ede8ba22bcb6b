// stencil35d 2D kernels: one templated source, specialised at run time by NVRTC (and compiled as
// C++ on the host by the emulator tests, src/gpu/plane_emulate.rs).
//
// A 2D stencil step and a 2D convolution are the same correlation here:
//   out(x, y) = sum_{j < KH, i < KW} w[j][i] * in(x + i - AX, y + j - AY)
// (a stencil of radius R: KW = KH = 2R+1, AX = AY = R, w[dy+R][dx+R] = weight(dx, dy)). Zero
// weights are skipped at specialisation: the weights are compile-time constants, every tap loop
// is unrolled, and a zero weight's test folds away.
//
// The host prepends (src/gpu/plane_source.rs):
//   REAL, REAL_BYTES  float (4) or double (8)
//   KW, KH, AX, AY    filter size and anchor
//   WEIGHTS           the KH*KW weights as a brace list, row-major
//   STENCIL           1: an iterated stencil of radius RADIUS: its outer RADIUS cells on every side
//                     are a fixed boundary, never written; 0: a convolution: every pixel written,
//                     the outside given by BORDER (0 constant BORDER_VALUE, 1 replicate, 2 reflect,
//                     3 reflect101, 4 wrap; OpenCV's rules, as Border::source)
//   SYSTOLIC          1 (convolutions): the systolic kernel plane_systolic, with
//                       RX   columns per lane, RY output rows per thread and chunk, LEAD the
//                            window lead (AX rounded up to a multiple of RX), BY warps per block
//   BT                (stencils): the temporally blocked kernel plane_blocked, BT steps per pass,
//                     with RX, BY, SKEW (level schedule), PF (rows of level 0 loaded ahead into
//                     registers), L2_AHEAD (rows beyond those that L2 is asked to fetch, so that
//                     the register loads wait for L2, not for device memory; 0: none)
//
// Grids are dense, x fastest, rows `pitch` elements apart (the host Grid's own padded layout,
// rows on cache lines, so RX-aligned columns allow vector accesses). Every kernel takes its pass
// number (counted from 1 since the host last read the flag) and the non-finite flag: a pass that
// writes a non-finite value stores its number there, and every later pass leaves both buffers
// alone (stencil.cu explains why).

#define FULL_MASK 0xffffffffu

// A plain load, cached in L1: every earlier pass's store is visible at this kernel's start, and a
// store of this pass (`pass` itself) changes nothing. (A volatile load here, one per thread of
// the naive kernel, all at one address, held that kernel to 92 G pixels/s on an H200 whatever
// the filter: the one L2 slice serving the flag was the bottleneck.)
__device__ __forceinline__ bool earlier_pass_failed(int pass, const int* flag)
{
    const int raised = *flag;
    return raised != 0 && raised != pass;
}

// The pixel index read for coordinate i on an axis of n pixels, -1 for the constant border
// outside the image (Border::source's rules).
__device__ __forceinline__ int border_source(int i, int n)
{
    if ((unsigned)i < (unsigned)n) return i;
    if (BORDER == 0) return -1;
    if (BORDER == 1) return i < 0 ? 0 : n - 1;
    if (BORDER == 4) {
        i %= n;
        return i < 0 ? i + n : i;
    }
    if (n == 1) return 0;
    while ((unsigned)i >= (unsigned)n) {
        if (BORDER == 2)
            i = i < 0 ? -i - 1 : 2 * n - i - 1;
        else
            i = i < 0 ? -i : 2 * n - i - 2;
    }
    return i;
}

// N consecutive values at p (p aligned to the vector width when N allows vectors): 16-byte (or
// 8-byte) loads through the read-only cache.
template <int N> __device__ __forceinline__ void load_run(const REAL* p, REAL* v)
{
    if (REAL_BYTES == 4 && N % 4 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 4) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(p + k));
            v[k] = q.x;
            v[k + 1] = q.y;
            v[k + 2] = q.z;
            v[k + 3] = q.w;
        }
    } else if (REAL_BYTES == 4 && N % 2 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 2) {
            const float2 q = __ldg(reinterpret_cast<const float2*>(p + k));
            v[k] = q.x;
            v[k + 1] = q.y;
        }
    } else if (REAL_BYTES == 8 && N % 2 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 2) {
            const double2 q = __ldg(reinterpret_cast<const double2*>(p + k));
            v[k] = q.x;
            v[k + 1] = q.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) v[k] = __ldg(p + k);
    }
}

// Stores N consecutive values at p, as vectors where N allows (alignment as for load_run).
template <int N> __device__ __forceinline__ void store_run(REAL* p, const REAL* v)
{
    if (REAL_BYTES == 4 && N % 4 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 4) {
            float4 q;
            q.x = v[k];
            q.y = v[k + 1];
            q.z = v[k + 2];
            q.w = v[k + 3];
            *reinterpret_cast<float4*>(p + k) = q;
        }
    } else if (REAL_BYTES == 4 && N % 2 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 2) {
            float2 q;
            q.x = v[k];
            q.y = v[k + 1];
            *reinterpret_cast<float2*>(p + k) = q;
        }
    } else if (REAL_BYTES == 8 && N % 2 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 2) {
            double2 q;
            q.x = v[k];
            q.y = v[k + 1];
            *reinterpret_cast<double2*>(p + k) = q;
        }
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) p[k] = v[k];
    }
}

// ---------------------------------------------------------------------------------------------
// gpu-naive: one thread per output pixel, every tap read through the read-only cache; one step
// per launch. A convolution's pixels whose window lies inside the image read without mapping;
// the others map every tap through the border rule. A stencil writes its interior only.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void plane_naive(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny,
                                       long long pitch, int pass, int* __restrict__ non_finite)
{
    // Read now, needed only at the store (stencil.cu's naive kernel measures why).
    const bool failed = earlier_pass_failed(pass, non_finite);
    constexpr REAL w[] = WEIGHTS;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (STENCIL ? (x < RADIUS || x >= nx - RADIUS || y < RADIUS || y >= ny - RADIUS) : (x >= nx || y >= ny))
        return;
    const int x0 = x - AX, y0 = y - AY;
    REAL acc = 0;
    if (STENCIL || (x0 >= 0 && x0 + KW <= nx && y0 >= 0 && y0 + KH <= ny)) {
        const REAL* p = src + (long long)y0 * pitch + x0;
#pragma unroll
        for (int j = 0; j < KH; ++j)
#pragma unroll
            for (int i = 0; i < KW; ++i)
                if (w[j * KW + i] != REAL(0)) acc = fma(__ldg(p + j * pitch + i), w[j * KW + i], acc);
    } else {
#pragma unroll
        for (int j = 0; j < KH; ++j) {
            const int sy = border_source(y0 + j, ny);
#pragma unroll
            for (int i = 0; i < KW; ++i)
                if (w[j * KW + i] != REAL(0)) {
                    const int sx = border_source(x0 + i, nx);
                    const REAL v = sx < 0 || sy < 0 ? REAL(BORDER_VALUE) : __ldg(src + (long long)sy * pitch + sx);
                    acc = fma(v, w[j * KW + i], acc);
                }
        }
    }
    if (!failed) dst[(long long)y * pitch + x] = acc;
    if (!isfinite(acc) && !failed) *non_finite = pass;
}

#if SYSTOLIC
// ---------------------------------------------------------------------------------------------
// gpu-blocked convolution: the software systolic array (SSAM). A warp owns a strip of 32*RX
// columns (lane l holds columns l*RX .. l*RX+RX-1 of it) and a segment of `sb` output rows, which
// it streams down in chunks of RY rows. Each lane keeps RY+KH-1 input rows of its columns in
// registers (the register cache; the KH-1 rows a chunk shares with the next stay there), and
// computes a chunk's output row k as the paper's systolic sum: for each filter column i, from the
// last to the first, the lane adds its column's vertical dot product with filter column i
// (sum_j w[j][i] * in[k+j]) to the partial sums it holds, then passes them one column to the
// left: its own move RX-1 places in registers and the lowest goes to the lane below by one
// __shfl_down_sync. The chunk's RY rows go through the columns together (independent work for
// the scheduler between a shuffle and the FMAs that wait for it). After the first column the partial sum at column c holds the whole output
// of column c + AX; the strip's last KW-1 columns hold partial sums only (the overlapped-blocking
// halo the next strip recomputes).
//
// Alignment: the window starts LEAD columns before the strip's first output column, LEAD = AX
// rounded up to a multiple of RX; the EXTRA = LEAD - AX zero columns before the filter's first
// cost one shift each and make every lane's loads and stores RX-aligned vectors. Strips whose
// window lies inside the image load without tests; the others (at most two per row of strips)
// map each column and row through the border rule. Rows outside the image are mapped likewise
// in every strip (a row test per load, uniform across the warp).
// ---------------------------------------------------------------------------------------------
constexpr int EXTRA = LEAD - AX;
constexpr int KWE = KW + EXTRA;
constexpr int WIN = RY + KH - 1;

// Lane's RX columns starting at `col` of input row `row`, mapped through the border rule where
// EDGE (the strip's window leaves the image) or the row lies outside it.
template <bool EDGE>
__device__ __forceinline__ void conv_load_row(REAL* v, const REAL* __restrict__ src, int row, int col, int nx,
                                              int ny, long long pitch)
{
    if (!EDGE && (unsigned)row < (unsigned)ny) {
        load_run<RX>(src + (long long)row * pitch + col, v);
        return;
    }
    const int sy = border_source(row, ny);
#pragma unroll
    for (int m = 0; m < RX; ++m) {
        const int sx = border_source(col + m, nx);
        v[m] = sx < 0 || sy < 0 ? REAL(BORDER_VALUE) : __ldg(src + (long long)sy * pitch + sx);
    }
}

// One warp's strip (output columns x0 .. x0+vx-1) and rows y0 .. y1-1.
template <bool EDGE>
__device__ __forceinline__ void conv_strip(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny,
                                           long long pitch, int x0, int vx, int y0, int y1, REAL& chk)
{
    constexpr REAL w[] = WEIGHTS;
    const int lane = threadIdx.x;
    const int col = x0 - LEAD + lane * RX;
    // The window: d[r] holds input row (chunk's first output row) - AY + r; nxt the next chunk's
    // RY new rows, loaded one chunk ahead so that their latency hides behind a chunk's work.
    REAL d[WIN][RX], nxt[RY][RX];
#pragma unroll
    for (int r = 0; r + 1 < KH; ++r) conv_load_row<EDGE>(d[r], src, y0 - AY + r, col, nx, ny, pitch);
#pragma unroll
    for (int r = 0; r < RY; ++r) conv_load_row<EDGE>(nxt[r], src, y0 - AY + KH - 1 + r, col, nx, ny, pitch);
    for (int y = y0; y < y1; y += RY) {
#pragma unroll
        for (int r = 0; r < RY; ++r)
#pragma unroll
            for (int m = 0; m < RX; ++m) d[KH - 1 + r][m] = nxt[r][m];
        if (y + RY < y1) {
#pragma unroll
            for (int r = 0; r < RY; ++r)
                conv_load_row<EDGE>(nxt[r], src, y + RY - AY + KH - 1 + r, col, nx, ny, pitch);
        }
        // All RY rows of the chunk advance together, filter column by filter column: RY*RX
        // independent chains of FMAs and RY independent shuffles per column (rows past the
        // segment's end compute from rows that were loaded anyway, and are not stored).
        REAL s[RY][RX];
#pragma unroll
        for (int k = 0; k < RY; ++k)
#pragma unroll
            for (int m = 0; m < RX; ++m) s[k][m] = 0;
        bool started = false; // folds at compile time: no shifts of zeros before the first tap
#pragma unroll
        for (int ii = KWE - 1; ii >= 0; --ii) {
            if (started) {
#pragma unroll
                for (int k = 0; k < RY; ++k) {
                    const REAL in_from_right = __shfl_down_sync(FULL_MASK, s[k][0], 1);
#pragma unroll
                    for (int m = 0; m + 1 < RX; ++m) s[k][m] = s[k][m + 1];
                    s[k][RX - 1] = in_from_right;
                }
            }
            const int i = ii - EXTRA;
            if (i >= 0) {
#pragma unroll
                for (int j = 0; j < KH; ++j)
                    if (w[j * KW + i] != REAL(0)) {
                        started = true;
#pragma unroll
                        for (int k = 0; k < RY; ++k)
#pragma unroll
                            for (int m = 0; m < RX; ++m) s[k][m] = fma(d[k + j][m], w[j * KW + i], s[k][m]);
                    }
            }
        }
        // s[k][m] is the output at column x0 + lane*RX + m of row y + k.
#pragma unroll
        for (int k = 0; k < RY; ++k) {
            if (y + k >= y1) break; // uniform: a segment's last chunk may be short
            REAL* out = dst + (long long)(y + k) * pitch + x0 + lane * RX;
            if (!EDGE) {
                if (lane * RX < vx) {
                    store_run<RX>(out, s[k]);
#pragma unroll
                    for (int m = 0; m < RX; ++m) chk = fma(s[k][m], REAL(0), chk);
                }
            } else {
#pragma unroll
                for (int m = 0; m < RX; ++m)
                    if (lane * RX + m < vx && x0 + lane * RX + m < nx) {
                        out[m] = s[k][m];
                        chk = fma(s[k][m], REAL(0), chk);
                    }
            }
        }
#pragma unroll
        for (int r = 0; r + 1 < KH; ++r)
#pragma unroll
            for (int m = 0; m < RX; ++m) d[r][m] = d[r + RY][m];
    }
}

// Block (strip, group of BY segments); warp threadIdx.y takes segment blockIdx.y*BY + threadIdx.y
// of `sb` rows. Strip s's output columns are s*vx .. s*vx+vx-1.
extern "C" __global__ void __launch_bounds__(32 * BY)
    plane_systolic(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny, long long pitch, int vx,
                   int sb, int pass, int* __restrict__ non_finite)
{
    if (earlier_pass_failed(pass, non_finite)) return;
    const int y0 = (blockIdx.y * BY + threadIdx.y) * sb;
    if (y0 >= ny) return; // a whole warp: no shuffle loses its partner
    const int y1 = min(y0 + sb, ny);
    const int x0 = blockIdx.x * vx;
    const int s0 = x0 - LEAD;
    // fma(v, 0, chk) turns NaN for an infinite or NaN v: one instruction per stored value.
    REAL chk = 0;
    if (s0 >= 0 && s0 + 32 * RX <= nx)
        conv_strip<false>(src, dst, nx, ny, pitch, x0, vx, y0, y1, chk);
    else
        conv_strip<true>(src, dst, nx, ny, pitch, x0, vx, y0, y1, chk);
    if (chk != chk) *non_finite = pass;
}
#endif

#ifdef BT
// ---------------------------------------------------------------------------------------------
// gpu-blocked iterated stencil: BT steps per launch, registers as the cache. A warp owns a strip
// of 32*RX columns (lane l holds columns l*RX .. l*RX+RX-1) and streams down a segment of rows
// with its ghost rows. Level 0 takes the input rows as they are loaded (PF rows ahead); level t
// takes the rows level t-1 completes. Each arriving row is extended by R columns on each side
// from the neighbouring lanes (__shfl_up/down_sync) and added, tap row by tap row, to the 2R+1
// accumulator rows of the outputs it touches (associative partial sums; a ring of registers
// indexed by row mod 2R+1, the row loop unrolled 2R+1 times so every index is a compile-time
// constant). The accumulator of the row R above is then complete: the next level's input. The
// lanes at a warp's ends get their own values back from the shuffles: junk that spreads R
// columns per level, inside the ghost zone of width R*BT on each side that the next strip
// recomputes; the ghost rows above and below a segment likewise.
//
// Fixed boundary cells keep their value at every level: a completed row inside the fixed layer
// (top or bottom R rows) is reloaded from the source, and so are the fixed columns of the edge
// strips (at most two per row of strips: their window reaches the fixed layer or beyond the grid);
// cells outside the grid are zeros. Other strips load and store RX-aligned vectors untested. SKEW 1: level t takes the row level t-1 completed in the step before (each
// level R+1 rows behind the one below), so the levels' work within a step is independent; SKEW 0:
// within the step (R rows behind), a chain of dependent work.
// ---------------------------------------------------------------------------------------------
constexpr int W = 2 * RADIUS + 1;
constexpr int LAG = RADIUS + SKEW;
// Rows the last level's output trails level 0's input by.
constexpr int TRAIL = (BT - 1) * LAG + RADIUS;
constexpr int SPAN = 32 * RX;

__device__ __forceinline__ int ring_slot(int k) { return ((k % W) + W) % W; }

// Asks L2 for the lane's RX columns of row `row` (none for edge strips or outside the grid).
__device__ __forceinline__ void prefetch_l2(const REAL* src, int row, int col, int ny, long long pitch, bool edge)
{
#ifdef __CUDA_ARCH__
    if (!edge && row < ny && L2_AHEAD > 0)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(src + (long long)row * pitch + col));
#endif
}

// Lane's RX columns from `col` of row `row`: zeros outside the grid. `edge`: the strip's window
// reaches the fixed boundary or beyond the grid (uniform across the warp: one copy of the code
// serves both kinds of strip, which halves the NVRTC time of these heavily unrolled kernels).
__device__ __forceinline__ void stencil_load_row(REAL* v, const REAL* __restrict__ src, int row, int col, int nx,
                                                 int ny, long long pitch, bool edge)
{
    if ((unsigned)row >= (unsigned)ny) {
#pragma unroll
        for (int m = 0; m < RX; ++m) v[m] = 0;
    } else if (!edge) {
        load_run<RX>(src + (long long)row * pitch + col, v);
    } else {
#pragma unroll
        for (int m = 0; m < RX; ++m)
            v[m] = (unsigned)(col + m) < (unsigned)nx ? __ldg(src + (long long)row * pitch + col + m) : REAL(0);
    }
}

// Level t's work for its input row pt (values `in`) at phase ph of the unrolled row loop: adds the
// row's terms to the accumulators of rows pt-R .. pt+R and returns in `out` the completed row
// pt-R (the fixed boundary and the outside restored). Called from fully unrolled loops only, so
// t and ph, and with them every ring index, are compile-time constants. CHECK 0: the caller knows
// the completed row is no fixed row and the strip no edge strip (the steps in the bulk of a
// segment), so the test is left out.
template <bool CHECK>
__device__ __forceinline__ void stencil_level(const REAL* in, REAL (&acc)[W][RX], REAL* out, const REAL* __restrict__ src,
                                              int t, int ph, int pt, int col, int nx, int ny, long long pitch,
                                              bool edge)
{
    constexpr REAL w[] = WEIGHTS;
    // The row extended by R cells each side from the neighbouring lanes: cell offset o lies in
    // lane lane + floor(o / RX), at index o mod RX.
    REAL ext[RX + 2 * RADIUS];
#pragma unroll
    for (int m = 0; m < RX; ++m) ext[RADIUS + m] = in[m];
#pragma unroll
    for (int o = -RADIUS; o < 0; ++o) {
        const int lanes = (RX - 1 - o) / RX;
        ext[RADIUS + o] = __shfl_up_sync(FULL_MASK, in[o + lanes * RX], lanes);
    }
#pragma unroll
    for (int o = RX; o < RX + RADIUS; ++o) {
        const int lanes = o / RX;
        ext[RADIUS + o] = __shfl_down_sync(FULL_MASK, in[o - lanes * RX], lanes);
    }
    // Tap row dy adds to output row pt - dy; dy = R completes row pt - R, dy = -R opens pt + R.
#pragma unroll
    for (int dy = RADIUS; dy >= -RADIUS; --dy) {
        const int a = ring_slot(ph - t * LAG - dy);
#pragma unroll
        for (int m = 0; m < RX; ++m) {
            REAL s = dy == -RADIUS ? REAL(0) : acc[a][m];
#pragma unroll
            for (int dx = -RADIUS; dx <= RADIUS; ++dx)
                if (w[(dy + RADIUS) * W + dx + RADIUS] != REAL(0))
                    s = fma(ext[RADIUS + m + dx], w[(dy + RADIUS) * W + dx + RADIUS], s);
            acc[a][m] = s;
        }
        if (dy == RADIUS) {
            // Row q is complete. A fixed row, a row outside the grid, and the fixed columns and
            // the outside of an edge strip take the source's values (zeros outside): one uniform
            // test per level and row, the addressing only where it holds.
            const int q = pt - RADIUS;
            const bool fixed_row = CHECK && (unsigned)(q - RADIUS) >= (unsigned)(ny - 2 * RADIUS);
#pragma unroll
            for (int m = 0; m < RX; ++m) out[m] = acc[a][m];
            if (CHECK && (fixed_row || edge)) {
                const REAL* row = src + (long long)q * pitch + col;
#pragma unroll
                for (int m = 0; m < RX; ++m)
                    if (fixed_row || (unsigned)(col + m - RADIUS) >= (unsigned)(nx - 2 * RADIUS))
                        out[m] = (unsigned)q < (unsigned)ny && (unsigned)(col + m) < (unsigned)nx ? __ldg(row + m)
                                                                                                : REAL(0);
            }
        }
    }
}

// One step of the row loop at phase ph: level 0's row p arrives (loaded PF rows ahead into the
// ring), every level advances one row, and the last level's completed row p - TRAIL is stored
// where it lies in the segment's outputs (CHECK as for stencil_level).
template <bool CHECK>
__device__ __forceinline__ void stencil_row(REAL (&ring)[W][RX], REAL (&acc)[BT][W][RX], REAL (&hold)[BT][RX],
                                            const REAL* __restrict__ src, REAL* __restrict__ dst, int ph, int p,
                                            int p_last, int col, int nx, int ny, long long pitch, int y0, int y1,
                                            int x_lo, int x_hi, bool edge, REAL& chk)
{
    REAL cur[RX];
#pragma unroll
    for (int m = 0; m < RX; ++m) cur[m] = ring[ph][m];
    if (p + PF <= p_last) stencil_load_row(ring[(ph + PF) % W], src, p + PF, col, nx, ny, pitch, edge);
    prefetch_l2(src, p + PF + L2_AHEAD, col, ny, pitch, edge);
    REAL fin[RX];
#pragma unroll
    for (int level = 0; level < BT; ++level) {
        // Skewed levels run last to first, so that level t+1 reads the row held for it before
        // level t replaces it with this step's.
        const int t = SKEW ? BT - 1 - level : level;
        REAL out[RX];
        stencil_level<CHECK>(SKEW && t > 0 ? hold[t] : cur, acc[t], out, src, t, ph, p - t * LAG, col, nx, ny, pitch, edge);
#pragma unroll
        for (int m = 0; m < RX; ++m) {
            if (t + 1 == BT)
                fin[m] = out[m];
            else if (SKEW)
                hold[t + 1 < BT ? t + 1 : 0][m] = out[m];
            else
                cur[m] = out[m];
        }
    }
    const int q = p - TRAIL;
    if (q >= y0 && q < y1) {
        REAL* row = dst + (long long)q * pitch + col;
        if (!edge) {
            if (col >= x_lo && col < x_hi) {
                store_run<RX>(row, fin);
#pragma unroll
                for (int m = 0; m < RX; ++m) chk = fma(fin[m], REAL(0), chk);
            }
        } else {
#pragma unroll
            for (int m = 0; m < RX; ++m)
                if (col + m >= x_lo && col + m < x_hi) {
                    row[m] = fin[m];
                    chk = fma(fin[m], REAL(0), chk);
                }
        }
    }
}

// One warp's strip (window from column s0, outputs x_lo .. x_hi-1) and segment (rows y0 .. y1-1).
__device__ __forceinline__ void stencil_strip(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny,
                                              long long pitch, int s0, int x_lo, int x_hi, int y0, int y1, bool edge,
                                              REAL& chk)
{
    const int col = s0 + threadIdx.x * RX;
    const int p_first = y0 - RADIUS * BT, p_last = y1 - 1 + TRAIL;
    REAL ring[W][RX], acc[BT][W][RX], hold[BT][RX];
#pragma unroll
    for (int m = 0; m < RX; ++m) {
#pragma unroll
        for (int t = 0; t < BT; ++t) {
            hold[t][m] = 0;
#pragma unroll
            for (int a = 0; a < W; ++a) acc[t][a][m] = 0;
        }
#pragma unroll
        for (int a = 0; a < W; ++a) ring[a][m] = 0;
    }
#pragma unroll
    for (int a = 0; a < PF; ++a) stencil_load_row(ring[a], src, p_first + a, col, nx, ny, pitch, edge);
    // Steps p in [plain_lo, ny) complete no fixed row at any level: in inner strips they take a
    // copy of the row loop without the tests, for radii up to 2 (a third copy of the larger
    // rings' loops costs more NVRTC time than the tests cost them: 14 s against 2 s for
    // star2d:4 at dim_t 2).
    constexpr bool SPLIT = RADIUS <= 2;
    const int plain_lo = 2 * RADIUS + (BT - 1) * LAG;
    for (int p0 = p_first; p0 <= p_last; p0 += W) {
        if (SPLIT && !edge && p0 >= plain_lo && p0 + W <= ny && p0 + W - 1 <= p_last) { // uniform
#pragma unroll
            for (int ph = 0; ph < W; ++ph)
                stencil_row<false>(ring, acc, hold, src, dst, ph, p0 + ph, p_last, col, nx, ny, pitch, y0, y1, x_lo,
                                   x_hi, edge, chk);
        } else {
#pragma unroll
            for (int ph = 0; ph < W; ++ph)
                if (p0 + ph <= p_last) // uniform
                    stencil_row<true>(ring, acc, hold, src, dst, ph, p0 + ph, p_last, col, nx, ny, pitch, y0, y1,
                                      x_lo, x_hi, edge, chk);
        }
    }
}

// Block (strip, group of BY segments): strip s's window starts at column x_first + s*vx and its
// outputs are the vx columns from gl on (clipped to the interior); warp threadIdx.y takes the
// interior rows R + g*sb .. of segment g = blockIdx.y*BY + threadIdx.y.
extern "C" __global__ void __launch_bounds__(32 * BY)
    plane_blocked(const REAL* __restrict__ src, REAL* __restrict__ dst, int nx, int ny, long long pitch,
                  int x_first, int gl, int vx, int sb, int pass, int* __restrict__ non_finite)
{
    if (earlier_pass_failed(pass, non_finite)) return;
    const int y0 = RADIUS + (blockIdx.y * BY + threadIdx.y) * sb;
    if (y0 >= ny - RADIUS) return; // a whole warp
    const int y1 = min(y0 + sb, ny - RADIUS);
    const int s0 = x_first + blockIdx.x * vx;
    const int x_lo = max(s0 + gl, RADIUS), x_hi = min(s0 + gl + vx, nx - RADIUS);
    REAL chk = 0;
    const bool edge = s0 < RADIUS || s0 + SPAN > nx - RADIUS;
    stencil_strip(src, dst, nx, ny, pitch, s0, x_lo, x_hi, y0, y1, edge, chk);
    if (chk != chk) *non_finite = pass;
}
#endif
