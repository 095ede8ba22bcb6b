#!/usr/bin/env bash
# Session 29 run B: tile shapes for the aligned lattice rows (new build), with naive alongside;
# the host's machine figures (plan JSON) for the planner's model.
cd "$(dirname "$0")/.."
D=.device/t29
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for dt in f32 f64; do
  $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked --json > $OUT/plan-$dt.json 2>/dev/null
  echo "-- plan d3q19 $dt (blocked)"; $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | tail -25
done
T
for round in 1 2; do
  echo "-- naive f32"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive
  for cfg in "2 260x12" "2 260x28" "3 262x14" "3 262x16" "3 262x18" "3 262x24" "4 264x16" "4 264x20" "4 264x24" "5 266x24"; do set -- $cfg
    echo "-- f32 dim_T $1 $2"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
  done
  T
done
for round in 1 2; do
  echo "-- naive f64"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive
  for cfg in "2 260x12" "3 262x12" "3 262x16" "3 262x20" "4 264x16" "4 264x20"; do set -- $cfg
    echo "-- f64 dim_T $1 $2"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
  done
  T
done
