#!/usr/bin/env bash
# Session 27 run C: the last round of units halved (stencil35d-v4t) against the wide
# non-temporal copies alone (stencil35d-v4x, S35_RPF unset) and 227da92 (stencil35d-v4old),
# interleaved, planner defaults.
cd "$(dirname "$0")/.."
O=.device/stencil35d-v4old
X=.device/stencil35d-v4x
N=.device/stencil35d-v4t
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
$N plan --kernel star7 --size 512 --engine blocked 2>&1 | grep -E "dim_T|tile groups"
for round in 1 2 3; do
  echo "== round $round"
  for dt in f32 f64; do
    echo "-- star7 $dt old / wide copies / halved tail"
    b $O bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
    b $X bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine blocked
    b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  echo "-- d3q19 f32 old / halved tail"
  b $O bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
