// Harness: verify a blocked kernel against a plain GPU reference, then time it at a large size.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#include KFILE

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1);} } while (0)

__global__ void harness_ref(const REAL* src, REAL* dst, int nx, int ny, int nz, long long pitch, long long plane)
{
    constexpr REAL c[] = COEF;
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    const long long o = z * plane + y * pitch + x;
    if (x < RADIUS || x >= nx - RADIUS || y < RADIUS || y >= ny - RADIUS || z < RADIUS || z >= nz - RADIUS) { dst[o] = src[o]; return; }
    REAL acc = src[o] * c[0];
    for (int d = 1; d <= RADIUS; ++d) {
        REAL s = src[o - d] + src[o + d] + src[o - d * pitch] + src[o + d * pitch] + src[o - d * plane] + src[o + d * plane];
        acc += s * c[d];
    }
    dst[o] = acc;
}

struct Dev { REAL* a; REAL* b; int* flag; int nx, ny, nz; long long pitch, plane; };

static Dev make(int nx, int ny, int nz, unsigned seed) {
    Dev d; d.nx = nx; d.ny = ny; d.nz = nz; d.pitch = (nx + 31) / 32 * 32; d.plane = d.pitch * ny;
#ifdef PITCH_C
    d.pitch = PITCH_C; d.plane = d.pitch * ny;
#endif
#ifdef PLANE_C
    d.plane = PLANE_C;
#endif
    size_t n = d.plane * nz;
    std::vector<REAL> h(n);
    srand(seed);
    for (auto& v : h) v = REAL(2.0 * rand() / RAND_MAX - 1.0);
    CK(cudaMalloc(&d.a, n * sizeof(REAL))); CK(cudaMalloc(&d.b, n * sizeof(REAL))); CK(cudaMalloc(&d.flag, 4));
    CK(cudaMemcpy(d.a, h.data(), n * sizeof(REAL), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.b, h.data(), n * sizeof(REAL), cudaMemcpyHostToDevice));
    CK(cudaMemset(d.flag, 0, 4));
    return d;
}

static void blocked_pass(Dev& d, int hz) {
    const int vx = TILE_X - 2 * RADIUS * BT, vy = TILE_Y - 2 * RADIUS * BT;
    dim3 grid((d.nx - 2 * RADIUS + vx - 1) / vx, (d.ny - 2 * RADIUS + vy - 1) / vy, (d.nz - 2 * RADIUS + hz - 1) / hz);
    dim3 block(BLOCK_X, BLOCK_Y);
    KNAME<<<grid, block, SMEM_BYTES>>>(d.a, d.b, d.nx, d.ny, d.nz, d.pitch, d.plane, hz, d.flag);
    std::swap(d.a, d.b);
}

static void ref_step(Dev& d) {
    dim3 block(32, 8), grid((d.nx + 31) / 32, (d.ny + 7) / 8, d.nz);
    harness_ref<<<grid, block>>>(d.a, d.b, d.nx, d.ny, d.nz, d.pitch, d.plane);
    std::swap(d.a, d.b);
}

static double verify(int nx, int ny, int nz, int hz, int passes) {
    Dev x = make(nx, ny, nz, 11), r = make(nx, ny, nz, 11);
    for (int p = 0; p < passes; ++p) blocked_pass(x, hz);
    for (int s = 0; s < passes * BT; ++s) ref_step(r);
    CK(cudaDeviceSynchronize());
    size_t n = x.plane * nz;
    std::vector<REAL> hx(n), hr(n);
    CK(cudaMemcpy(hx.data(), x.a, n * sizeof(REAL), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hr.data(), r.a, n * sizeof(REAL), cudaMemcpyDeviceToHost));
    double scale = 0, err = 0;
    for (size_t i = 0; i < n; ++i) scale = std::max(scale, (double)std::fabs(hr[i]));
    for (int z = 0; z < nz; ++z) for (int y = 0; y < ny; ++y) for (int xx = 0; xx < nx; ++xx) {
        size_t i = z * x.plane + y * x.pitch + xx;
        double e = std::fabs((double)hx[i] - (double)hr[i]) / scale;
        if (!(e <= err)) err = std::isnan(e) ? 1e30 : std::max(err, e);
    }
    int flag; CK(cudaMemcpy(&flag, x.flag, 4, cudaMemcpyDeviceToHost));
    if (flag) printf("  (non-finite flag raised)\n");
    cudaFree(x.a); cudaFree(x.b); cudaFree(r.a); cudaFree(r.b);
    return err;
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 512;
    const int hz = argc > 2 ? atoi(argv[2]) : 128;
    const int steps0 = argc > 3 ? atoi(argv[3]) : 240;
    const int reps = argc > 4 ? atoi(argv[4]) : 3;
    CK(cudaFuncSetAttribute(KNAME, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, KNAME));
    int blocks_per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, KNAME, BLOCK_X * BLOCK_Y, SMEM_BYTES));
    const double e1 = verify(67, 45, 53, 64, 3), e2 = verify(131, 77, 41, 9, 2);
    const int passes = (steps0 + BT - 1) / BT;
    Dev d = make(n, n, n, 5);
    blocked_pass(d, hz);
    CK(cudaDeviceSynchronize());
    std::vector<double> rates;
    cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
    const double cells = double(n - 2 * RADIUS) * (n - 2 * RADIUS) * (n - 2 * RADIUS);
    for (int r = 0; r < reps; ++r) {
        cudaEventRecord(t0);
        for (int p = 0; p < passes; ++p) blocked_pass(d, hz);
        cudaEventRecord(t1); CK(cudaEventSynchronize(t1));
        float ms; cudaEventElapsedTime(&ms, t0, t1);
        rates.push_back(cells * passes * BT / (ms * 1e-3) / 1e9);
    }
    std::sort(rates.begin(), rates.end());
    printf("%-28s regs %3d spill %3zu blk/SM %d smem %6zu | err %.1e %.1e | G/s med %7.1f (min %7.1f max %7.1f)\n",
           VNAME, fa.numRegs, fa.localSizeBytes, blocks_per_sm, (size_t)SMEM_BYTES, e1, e2,
           rates[rates.size() / 2], rates.front(), rates.back());
#ifdef HAS_NAIVE
    if (getenv("NAIVE")) {
        std::vector<double> nr;
        dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
        for (int r = 0; r < reps; ++r) {
            cudaEventRecord(t0);
            for (int s = 0; s < passes * BT; ++s) { stencil_naive<<<grid, block>>>(d.a, d.b, n, n, n, d.pitch, d.plane, d.flag); std::swap(d.a, d.b); }
            cudaEventRecord(t1); CK(cudaEventSynchronize(t1));
            float ms; cudaEventElapsedTime(&ms, t0, t1);
            nr.push_back(cells * passes * BT / (ms * 1e-3) / 1e9);
        }
        std::sort(nr.begin(), nr.end());
        printf("%-28s naive G/s med %7.1f\n", VNAME, nr[nr.size() / 2]);
    }
#endif
    CK(cudaGetLastError());
    return 0;
}
