#!/usr/bin/env bash
# Session 28 run E: the final code built for x86-64-v3 (AVX2, the default build) against the
# AVX-512 build (x86-64-v4) on the host, interleaved; then D3Q19 thread scaling.
cd "$(dirname "$0")/.."
V3=.device/t28/v3; V4=.device/t28/new
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2; do
  for k in "d3q19 f32 256 12" "d3q19 f64 256 12" "star7 f32 512 24"; do set -- $k
    for v in v3 v4; do
      B=$V4; [ $v = v3 ] && B=$V3
      echo "-- $v $1 $2"; b $B bench --kernel $1 --dtype $2 --size $3 --steps $4 --repeat 3 --engine naive,blocked
    done
  done
  T
done
for th in 1 4 8 16; do
  echo "-- v4 d3q19 f32 $th threads"; b $V4 bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked --threads $th
done
T
