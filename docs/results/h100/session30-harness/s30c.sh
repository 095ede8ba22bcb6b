#!/usr/bin/env bash
# Session 30 run C: the committed code (47956c7, AVX-512 build) on a fresh boot, planner
# defaults; star7 f32 also at session 29's plan (dim_T 4 518x30); plan JSONs saved.
cd "$(dirname "$0")/.."
D=.device/t30
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
lscpu | grep -E "Model name"
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked 2>&1 | head -40
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked --json > $OUT/plan-star7-f32.json 2>/dev/null
for dt in f32 f64; do
  $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked --json > $OUT/plan-d3q19-$dt.json 2>/dev/null
  echo "-- plan d3q19 $dt"; $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(balance|streams|predict|\*)"
done
T
for round in 1 2 3; do
  echo "-- d3q19 f32 defaults"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- star7 f32 defaults"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- star7 f32 dim_T 4 518x30"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine blocked --dim-t 4 --tile 518x30
  T
done
for round in 1 2; do
  echo "-- d3q19 f64 defaults"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- star7 f64 defaults"; b $D/s-new bench --kernel star7 --dtype f64 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  T
done
