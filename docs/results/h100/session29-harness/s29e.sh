#!/usr/bin/env bash
# Session 29 run E: the final code (2eece0a) on a fresh boot: host tests, planner defaults.
cd "$(dirname "$0")/.."
D=.device/t29
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
echo "-- lbm_engines"; timeout 120 $D/lbm_engines 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- cpu_engines"; timeout 120 $D/cpu_engines 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- lib plan:: cpu:: lbm:: finite grid::"; timeout 150 $D/lib --test-threads 8 plan:: cpu:: lbm:: finite grid:: 2>&1 | grep -E "test result|panicked|FAILED"
T
for dt in f32 f64; do
  echo "-- plan d3q19 $dt (blocked)"; $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(machine|balance|cache|\*)"
done
for round in 1 2 3; do
  echo "-- d3q19 f32 defaults"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- d3q19 f64 defaults"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- star7 f32 defaults"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 24 --repeat 3 --engine naive,blocked
  T
done
