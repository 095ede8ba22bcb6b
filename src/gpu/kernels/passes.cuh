// What every pass of the stencil and wave kernels shares (prepended to stencil.cu and wave.cu
// by the host, after its #defines): the output plane ranges of a launch and the flag of earlier
// passes.
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
