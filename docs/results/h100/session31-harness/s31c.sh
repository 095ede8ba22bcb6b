#!/usr/bin/env bash
# Session 31 run C: D3Q19 f32 256³ tile sweep at 16 threads (s-new), three rounds, with the
# naive sweep and the planner's default in every round.
cd "$(dirname "$0")/.."
D=.device/t31
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
$D/s-new plan --kernel d3q19 --dtype f32 --size 256 --engine blocked --json > $OUT/plan-d3q19-f32.json 2>/dev/null
T
for round in 1 2 3; do
  echo "-- d3q19 f32 defaults"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  for c in "2 260x12" "2 260x15" "2 260x20" "3 262x10" "3 262x12" "3 262x14" "3 262x16" "4 264x12" "4 264x14"; do
    set -- $c
    echo "-- d3q19 f32 dim_T $1 $2"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
  done
  T
done
