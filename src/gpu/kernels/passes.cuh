// What every pass of the stencil and wave kernels shares (prepended to stencil.cu and wave.cu
// by the host, after its #defines): the output plane ranges of a launch, the flag of earlier
// passes, and the asynchronous copies that stage input planes in shared memory.
//
// A launch computes the output planes [a0, a1) and [b0, b1) (either may be empty): one launch
// over the whole interior [R, nz - R), or, in a run split over GPUs, the planes whose inputs
// need no halo while the halos travel, then the two bands next to the halos in one launch.
// The blocked kernels cut them into z-chunks of `hz` planes, a block row (blockIdx.z) each.

// What the compiler may take as true (NVRTC); nothing in the host emulator's C++.
#ifdef __CUDACC_RTC__
#define ASSUME(cond) __builtin_assume(cond)
#else
#define ASSUME(cond)
#endif

// Output planes [z0, z1) of one z-chunk of a launch (see above).
struct ZChunk {
    int z0, z1;
};

// The planes of chunk `c` of the ranges [a0, a1) and [b0, b1) cut into chunks of `hz` planes
// (each range's last chunk shorter): range a's chunks first in order, then b's from the last
// launched chunk backwards (so that no division finds where b's begin).
__device__ __forceinline__ ZChunk z_chunk(int c, int a0, int a1, int b0, int b1, int hz)
{
    const int in_a = a0 + c * hz;
    if (in_a < a1) return {in_a, min(in_a + hz, a1)};
    const int z0 = b0 + (int(gridDim.z) - 1 - c) * hz;
    return {z0, min(z0 + hz, b1)};
}

// Whether an earlier pass of the run raised the non-finite flag. The same for every thread of a
// block (a pass's own blocks can only store `pass`), so a block may return before its barriers.
__device__ __forceinline__ bool earlier_pass_failed(int pass, const int* flag)
{
    const int raised = *reinterpret_cast<const volatile int*>(flag);
    return raised != 0 && raised != pass;
}

// Asynchronous copy of N bytes (4, 8 or 16, aligned to N) from global memory at g into shared
// memory at s, zeros when !valid (cp.async: the value lands while the thread computes, and takes
// no register until it is read). The host emulator copies at once.
template <int N> __device__ __forceinline__ void stage_bytes(void* s, const void* g, bool valid)
{
#ifdef __CUDA_ARCH__
    unsigned sa;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(sa) : "l"(s));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(sa), "l"(g), "n"(N), "r"(valid ? N : 0)
                 : "memory");
#else
    for (int i = 0; i < N; ++i)
        static_cast<unsigned char*>(s)[i] = valid ? static_cast<const unsigned char*>(g)[i] : 0;
#endif
}
// Closes the thread's copies issued since the last commit into one group.
__device__ __forceinline__ void stage_commit()
{
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most `pending` of the thread's committed copy groups are still in flight.
template <int pending> __device__ __forceinline__ void stage_wait()
{
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
#endif
}
