#!/usr/bin/env bash
# Session 26 run G: are the 16 vCPUs 16 cores? The L1-resident row kernel (compute-bound) on
# cpu 0 alone, then on cpu 0 and cpu k at once; then on all 16 at once. AVX2 (v3) against
# AVX-512 (v4) builds of the engine at 8 and 16 threads.
cd "$(dirname "$0")/.."
L=.device/t26/lib
k1() { taskset -c $1 $L --ignored --exact cpu::rows::tests::row_kernel_speed --nocapture 2>&1 | grep "F32 width 512" | sed "s/^/cpu$1 /"; }
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
k1 0
for k in $(seq 1 15); do k1 0 & k1 $k & wait; done
echo "== all 16"; for k in $(seq 0 15); do k1 $k & done; wait
T
export STENCIL35D_CACHE_DIR=/tmp/s35d
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
for round in 1 2; do
  for x in v3 v4; do for th in 8 16; do
    echo -n "$x th $th f32 4 518x24: "; b .device/stencil35d-$x bench --kernel star7 --size 512 --steps 24 --repeat 3 --threads $th --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
  done; done
done
for x in v3 v4; do echo -n "$x naive: "; b .device/stencil35d-$x bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive; done
T
