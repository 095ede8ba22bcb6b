#!/usr/bin/env bash
# Session 31 run B: s-new (c8da0e2 + 2533921, AVX-512 build) on a fresh boot: more rounds of the
# issues' commands at the planner's defaults, and a D3Q19 tile sweep at 16 threads.
cd "$(dirname "$0")/.."
D=.device/t31
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked 2>&1 | sed -n 2,8p
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked --json > $OUT/plan-star7-f32.json 2>/dev/null
$D/s-new plan --kernel d3q19 --dtype f32 --size 256 --engine blocked --json > $OUT/plan-d3q19-f32.json 2>/dev/null
T
for round in 1 2 3 4 5; do
  echo "-- star7 f32 defaults"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- d3q19 f32 defaults"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
for round in 1 2; do
  echo "-- star7 f64 defaults"; b $D/s-new bench --kernel star7 --dtype f64 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- d3q19 f64 defaults"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- box27 f32 defaults"; b $D/s-new bench --kernel box27 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  T
done
for round in 1 2; do
  for c in "2 260x15" "2 260x30" "3 262x12" "3 262x16" "3 262x20" "3 262x24" "4 264x16" "4 264x20"; do
    set -- $c
    echo "-- d3q19 f32 dim_T $1 $2"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
  done
  T
done
