#!/usr/bin/env bash
# Session 26 run K: the final build (76996b3) on the host: CPU test suites, plans, planner
# defaults (three rounds), thread scaling, a few deeper star7 f32 tilings, D3Q19 both precisions.
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
for k in "star7 f32 512" "star7 f64 512" "d3q19 f32 256"; do set -- $k
  timeout 60 $N plan --kernel $1 --dtype $2 --size $3 --engine blocked 2>&1 | grep -E "^cache|dim_T|tile groups|^predict"
done
for round in 1 2 3; do
  echo "== round $round"
  for dt in f32 f64; do echo "-- star7 $dt"; b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
  T
done
echo "== thread scaling, star7 f32 512^3, planner defaults"
for th in 1 2 4 8 16; do echo "-- $th threads"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --threads $th --engine naive,blocked; done
T
echo "== deeper f32 tilings"
for cfg in "5 520x36" "6 522x44"; do set -- $cfg; echo -n "dim_T $1 $2: "; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2; done
for round in 1 2; do echo "-- d3q19 f32"; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
echo "-- d3q19 f64"; b $N bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
T
