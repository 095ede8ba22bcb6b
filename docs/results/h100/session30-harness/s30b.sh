#!/usr/bin/env bash
# Session 30 run B: the new lattice prefetch (4 vectors ahead; naive also prefetches its output
# rows) against the old code (s-exp without its knobs = 30fadaa), planner defaults, AVX-512 builds.
cd "$(dirname "$0")/.."
D=.device/t30
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
old="env STENCIL35D_CACHE_DIR=/tmp/s35d-old $D/s-exp"
new="env STENCIL35D_CACHE_DIR=/tmp/s35d-new $D/s-new"
lscpu | grep -E "Model name"
for v in old new; do
  for dt in f32 f64; do
    echo "-- $v plan d3q19 $dt"; ${!v} plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(balance|streams|predict|\*)"
  done
done
T
for round in 1 2 3; do
  for v in old new; do
    echo "-- $v d3q19 f32 defaults"; b ${!v} bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for v in old new; do
    echo "-- $v d3q19 f64 defaults"; b ${!v} bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  echo "-- new star7 f32 512 defaults"; b $new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  T
done
