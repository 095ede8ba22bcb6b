#!/usr/bin/env bash
# Session 27 run E: the final build (55bfffb): CPU and GPU test suites on the host, plans,
# defaults against 227da92 (stencil35d-v4old) in three interleaved rounds, D3Q19 both
# precisions, thread scaling.
cd "$(dirname "$0")/.."
O=.device/stencil35d-v4old
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for t in cpu_engines lbm_engines; do echo "-- $t"; timeout 200 .device/t27/$t --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED"; done
echo "-- lib cpu:: lbm:: plan::"; timeout 200 .device/t27/lib --test-threads 8 cpu:: lbm:: plan:: 2>&1 | grep -E "test result|panicked|FAILED"
for t in gpu_engines gpu_lbm; do echo "-- $t"; timeout 240 .device/t27/$t --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|skip" | head -5; done
T
for k in "star7 f32 512" "star7 f64 512" "d3q19 f32 256" "d3q19 f64 256"; do set -- $k
  timeout 60 $N plan --kernel $1 --dtype $2 --size $3 --engine blocked 2>&1 | grep -E "dim_T [0-9]|tile groups"
done
for round in 1 2 3; do
  echo "== round $round"
  for dt in f32 f64; do
    echo "-- star7 $dt 227da92 / 55bfffb"
    b $O bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
    b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do for dt in f32 f64; do echo "-- d3q19 $dt"; b $N bench --kernel d3q19 --dtype $dt --size 256 --steps 12 --repeat 3 --engine naive,blocked; done; done
T
echo "== thread scaling, star7 f32 512^3"
for th in 1 2 4 8 16; do echo "-- $th threads"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --threads $th --engine naive,blocked; done
T
