#!/usr/bin/env bash
# Session 26 run H: the candidate build (z chunks, aligned row loop) on the host: CPU test
# suites, the planner's plans, and old (7123ecf, session 25) / new defaults, interleaved.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
O=.device/stencil35d-v4old
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
timeout 200 .device/t26/cpu_engines --test-threads 8 2>&1 | grep -E "test result|panicked"
timeout 200 .device/t26/lbm_engines --test-threads 8 2>&1 | grep -E "test result|panicked"
timeout 200 .device/t26/lib --test-threads 8 cpu:: lbm:: plan:: 2>&1 | grep -E "test result|panicked"
T
for k in "star7 f32 512" "star7 f64 512" "d3q19 f32 256"; do set -- $k
  timeout 60 $N plan --kernel $1 --dtype $2 --size $3 --engine blocked 2>&1 | grep -E "^machine|^cache|dim_T|tile groups|^predict"
done
T
for round in 1 2 3; do
  echo "== round $round"
  for x in O N; do eval B=\$$x
    for dt in f32 f64; do echo "-- $x star7 $dt"; b $B bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
  done
  T
done
for round in 1 2; do
  for x in O N; do eval B=\$$x
    echo "-- $x d3q19 f32"; b $B bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
done
echo "-- N d3q19 f64"; b $N bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
T
