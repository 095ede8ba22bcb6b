#!/usr/bin/env bash
# Session 27 run G: one-level passes (dim_T 1) that claim blocks of a tile's planes
# (stencil35d-v4b) against equal shares fixed in advance (stencil35d-v4, 55bfffb): D3Q19 256^3
# both precisions and box27 512^3, naive in the same process; also the per-plane claims (stencil35d-v4s) for box27.
cd "$(dirname "$0")/.."
O=.device/stencil35d-v4
N=.device/stencil35d-v4b
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2; do
  for dt in f64 f32; do
    echo "-- d3q19 $dt dim_T 1: shares / claims"
    b $O bench --kernel d3q19 --dtype $dt --size 256 --steps 8 --repeat 3 --engine naive,blocked --dim-t 1
    b $N bench --kernel d3q19 --dtype $dt --size 256 --steps 8 --repeat 3 --engine naive,blocked --dim-t 1
  done
  echo "-- box27 f32 dim_T 1: shares / claims"
  b $O bench --kernel box27 --size 512 --steps 12 --repeat 3 --engine naive,blocked --dim-t 1
  b $N bench --kernel box27 --size 512 --steps 12 --repeat 3 --engine naive,blocked --dim-t 1
  b .device/stencil35d-v4s bench --kernel box27 --size 512 --steps 12 --repeat 3 --engine blocked --dim-t 1
  T
done
