// Session 23: gpu-naive star7 f32 512^3 back to back against a wait after every step, with the
// kernel before (OLD) and after the pass check.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifdef OLD
#include "old_stencil.cu"
#define LAUNCH(a, b) stencil_naive<<<grid, block>>>(a, b, n, n, n, pitch, plane, flag)
#else
#include KFILE
#define LAUNCH(a, b) stencil_naive<<<grid, block>>>(a, b, n, n, n, pitch, plane, 1, flag)
#endif
int main(int argc, char** argv) {
    const int n = 512, steps = argc > 1 ? atoi(argv[1]) : 1000;
    const long long pitch = 512, plane = 512LL * 512;
    const size_t len = plane * n;
    REAL *a, *b; int* flag;
    cudaMalloc(&a, len * sizeof(REAL)); cudaMalloc(&b, len * sizeof(REAL)); cudaMalloc(&flag, 4);
    std::vector<REAL> h(len); for (size_t i = 0; i < len; ++i) h[i] = REAL((i * 7919) % 1000) / 1000;
    cudaMemcpy(a, h.data(), len * sizeof(REAL), cudaMemcpyHostToDevice);
    cudaMemcpy(b, h.data(), len * sizeof(REAL), cudaMemcpyHostToDevice);
    cudaMemset(flag, 0, 4);
    dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
    const double cells = double(n - 2) * (n - 2) * (n - 2);
    for (int mode = 0; mode < 3; ++mode) {
        std::vector<double> r;
        for (int rep = 0; rep < 3; ++rep) {
            cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
            cudaDeviceSynchronize();
            cudaEventRecord(t0);
            for (int s = 0; s < steps; ++s) {
                LAUNCH(a, b); std::swap(a, b);
                if (mode == 1) cudaStreamSynchronize(0);
                if (mode == 2) { int f; cudaMemcpy(&f, flag, 4, cudaMemcpyDeviceToHost); }
            }
            cudaEventRecord(t1); cudaEventSynchronize(t1);
            float ms; cudaEventElapsedTime(&ms, t0, t1);
            r.push_back(cells * steps / (ms * 1e-3) / 1e9);
        }
        std::sort(r.begin(), r.end());
        printf("%s %s: G/s %.1f %.1f %.1f\n",
#ifdef OLD
               "old kernel",
#else
               KFILE,
#endif
               mode == 0 ? "back to back" : mode == 1 ? "sync each step" : "flag copy each step", r[0], r[1], r[2]);
    }
    return 0;
}
