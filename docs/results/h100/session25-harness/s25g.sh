#!/usr/bin/env bash
# Session 25 run G: the final build (421ab92 + the cache probe's second curve): CPU test suites
# on the host, eight fresh probes with the plans they give, planner defaults.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
export STENCIL35D_CACHE_DIR=/tmp/g0
echo "== tests"
for t in cpu_engines lbm_engines; do echo "-- $t"; timeout 100 .device/t25/$t --test-threads 8 2>&1 | grep -E "test result|FAILED|panicked"; done
echo "-- lib cpu:: lbm:: plan::"; timeout 150 .device/t25/lib --test-threads 8 cpu:: lbm:: plan:: 2>&1 | grep -E "test result|FAILED|panicked"; T
for i in $(seq 1 8); do
  export STENCIL35D_CACHE_DIR=/tmp/g$i
  echo "-- probe $i"; $N probe 2>&1 | grep -E "^(cache use|spill|stencil|lattice:)"
  for k in "star7 --dtype f32 --size 512" "star7 --dtype f64 --size 512" "d3q19 --dtype f32 --size 256"; do
    echo "   plan $k: $($N plan --kernel $k --engine blocked 2>&1 | grep -E '^\s+dim_T' | head -1)"
  done
done; T
export STENCIL35D_CACHE_DIR=/tmp/g1
b() { timeout 60 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for r in 1 2; do
  b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked
  b $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine naive,blocked
  b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
done; T
