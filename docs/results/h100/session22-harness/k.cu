#define W_DUMMY
#include "../../src/gpu/kernels/stencil.cu"
#include "../../src/gpu/kernels/stencil_shuffle.cu"
#define KNAME stencil_shuffle
#define TILE_X (32 * RX)
#define TILE_Y (BY * RY)
#define BLOCK_X 32
#define BLOCK_Y BY
#define SMEM_BYTES ((2 * BUF_ELEMS + STAGES * STAGE_ELEMS) * sizeof(REAL))
#define HAS_NAIVE 1
