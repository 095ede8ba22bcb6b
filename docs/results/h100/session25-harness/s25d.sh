#!/usr/bin/env bash
# Session 25 run D: old (650d94c) / new schedule on fixed one-thread tilings, interleaved rounds,
# 16 threads and 1 thread; the planner's defaults with the new build.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
O=.device/stencil35d-v4old
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 60 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2 3; do
  echo "== round $round"
  for x in O N; do eval B=\$$x
    echo "-- $x f32 dim_T 4 518x24 / f64 dim_T 3 516x17 / f64 dim_T 6 522x44, 16 threads"
    b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
    b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 3 --tile 516x17 --tile-threads 1
    b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 6 --tile 522x44 --tile-threads 1
  done
  T
done
echo "== one thread, f32 dim_T 4 518x24, two rounds"
for round in 1 2; do for x in O N; do eval B=\$$x; echo -n "$x "; b $B bench --kernel star7 --size 512x512x128 --steps 8 --repeat 3 --threads 1 --engine blocked --dim-t 4 --tile 518x24; done; done; T
echo "== new build, planner defaults (naive, blocked)"
for dt in f32 f64; do b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked; T
