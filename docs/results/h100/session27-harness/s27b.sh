#!/usr/bin/env bash
# Session 27 run B: 64-byte non-temporal copies (stencil35d-v4x, S35_RPF=0) against the
# 16-byte ones (stencil35d-v4old, 227da92), interleaved; S35_RPF=1 (ring rows prefetched a
# row ahead into L1, an experiment switch).
cd "$(dirname "$0")/.."
O=.device/stencil35d-v4old
N=.device/stencil35d-v4x
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
$N plan --kernel star7 --size 512 --engine blocked 2>&1 | grep -E "dim_T|tile groups"
$N plan --kernel d3q19 --size 256 --engine blocked 2>&1 | grep -E "dim_T|tile groups"
for round in 1 2 3; do
  echo "== round $round"
  for dt in f32 f64; do
    echo "-- star7 $dt old / new / new rpf1"
    b $O bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
    S35_RPF=0 b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
    S35_RPF=1 b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine blocked
  done
  T
done
for round in 1 2; do
  echo "-- d3q19 f32 old / new"
  b $O bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
