#!/usr/bin/env bash
# Session 30 run F: thread scaling of the final code (39fef29, AVX-512 build), planner defaults
# per thread count: star7 f32 512^3 (12 steps) and D3Q19 f32 256^3 (6 steps), naive / blocked.
cd "$(dirname "$0")/.."
D=.device/t30
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for t in 1 2 4 8 16; do
  echo "-- star7 f32 threads $t"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 12 --repeat 2 --engine naive,blocked --threads $t
  T
done
for t in 1 4 16; do
  echo "-- d3q19 f32 threads $t"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 6 --repeat 2 --engine naive,blocked --threads $t
  T
done
