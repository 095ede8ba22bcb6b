#!/usr/bin/env bash
# Session 27 run H: the final build (070204c): CPU test suites on the host, then the planner's
# defaults in two rounds and D3Q19 forced to dim_T 1.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for t in cpu_engines lbm_engines; do echo "-- $t"; timeout 200 .device/t27/$t --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED"; done
echo "-- lib cpu:: lbm:: plan::"; timeout 200 .device/t27/lib --test-threads 8 cpu:: lbm:: plan:: 2>&1 | grep -E "test result|panicked|FAILED"
T
for round in 1 2; do
  for k in "star7 f32 512 24" "star7 f64 512 24" "d3q19 f32 256 12" "d3q19 f64 256 12"; do set -- $k
    echo "-- $1 $2"; b $N bench --kernel $1 --dtype $2 --size $3 --steps $4 --repeat 3 --engine naive,blocked
  done
  T
done
echo "-- d3q19 f64 dim_T 1"; b $N bench --kernel d3q19 --dtype f64 --size 256 --steps 8 --repeat 3 --engine naive,blocked --dim-t 1
T
