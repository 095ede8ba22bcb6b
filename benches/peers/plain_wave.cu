// The plain CUDA kernel the wave engines are measured against (docs/wave.md): the order-8
// acoustic update u⁺ = 2u − u⁻ + (v dt)²∇²u without absorbing layers, one thread per (x, y)
// column looping over z, the column in registers, the in-plane neighbours through the read-only
// cache. Prints G points/s (the whole grid per step) for three block shapes, three runs each,
// timed by CUDA events. On a GPU machine: nvcc -O3 -arch=sm_90 plain_wave.cu && ./a.out 1000 200
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define R 4
__constant__ float W[R + 1] = {-205.f / 72, 8.f / 5, -1.f / 5, 8.f / 315, -1.f / 560};
__global__ void __launch_bounds__(256) step(const float* __restrict__ u, const float* __restrict__ prev,
                                            const float* __restrict__ coef, float* __restrict__ out, int nx, int ny,
                                            int nz)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < R || x >= nx - R || y < R || y >= ny - R) return;
    const long long plane = (long long)nx * ny, col = (long long)y * nx + x;
    float q[2 * R + 1];
#pragma unroll
    for (int j = 0; j < 2 * R; ++j) q[j] = __ldg(u + col + j * plane);
    for (int z = R; z < nz - R; ++z) {
        q[2 * R] = __ldg(u + col + (z + R) * plane);
        const long long i = col + z * plane;
        float lap = 3.f * W[0] * q[R];
#pragma unroll
        for (int d = 1; d <= R; ++d)
            lap += W[d] * ((__ldg(u + i - d) + __ldg(u + i + d)) + (__ldg(u + i - d * nx) + __ldg(u + i + d * nx)) +
                           (q[R - d] + q[R + d]));
        out[i] = 2.f * q[R] - __ldg(prev + i) + __ldg(coef + i) * lap;
#pragma unroll
        for (int j = 0; j < 2 * R; ++j) q[j] = q[j + 1];
    }
}
int main(int argc, char** argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 1000, steps = argc > 2 ? atoi(argv[2]) : 200;
    const size_t cells = (size_t)n * n * n;
    float *a, *b, *c;
    cudaMalloc(&a, cells * 4); cudaMalloc(&b, cells * 4); cudaMalloc(&c, cells * 4);
    cudaMemset(a, 0, cells * 4); cudaMemset(b, 0, cells * 4); cudaMemset(c, 0, cells * 4);
    const int shapes[3][2] = {{32, 4}, {32, 8}, {64, 4}};
    for (const auto& shape : shapes) {
        const int bx = shape[0], by = shape[1];
        const dim3 block(bx, by), grid((n + bx - 1) / bx, (n + by - 1) / by);
        for (int w = 0; w < 5; ++w) step<<<grid, block>>>(a, b, c, b, n, n, n);
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        for (int rep = 0; rep < 3; ++rep) {
            cudaEventRecord(e0);
            float *u = a, *p = b;
            for (int s = 0; s < steps; ++s) { step<<<grid, block>>>(u, p, c, p, n, n, n); float* t = u; u = p; p = t; }
            cudaEventRecord(e1); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1);
            printf("plain %dx%d n=%d steps=%d: %.1f G points/s (%s)\n", bx, by, n, steps, cells * (double)steps / ms / 1e6,
                   cudaGetErrorString(cudaGetLastError()));
        }
    }
    return 0;
}
