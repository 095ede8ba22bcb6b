#!/usr/bin/env bash
# Session 26 run L: the final build (360c5f0) on the host: CPU test suites, defaults once more.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
timeout 200 .device/t26/cpu_engines --test-threads 8 2>&1 | grep -E "test result|panicked"
timeout 200 .device/t26/lbm_engines --test-threads 8 2>&1 | grep -E "test result|panicked"
timeout 200 .device/t26/lib --test-threads 8 cpu:: lbm:: plan:: 2>&1 | grep -E "test result|panicked"
T
for round in 1 2; do
  for dt in f32 f64; do echo "-- star7 $dt"; b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
  echo "-- d3q19 f32"; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
