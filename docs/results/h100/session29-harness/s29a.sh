#!/usr/bin/env bash
# Session 29 run A: aligned lattice row loop (new) against 9586b63 (old), AVX-512 builds.
cd "$(dirname "$0")/.."
D=.device/t29
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
lscpu | grep -E "Model name|MHz"
echo "-- plan d3q19 f32"; $D/s-new plan --kernel d3q19 --dtype f32 --size 256 2>&1 | grep -E "^(balance|choice|  *dim_T)"
T
for round in 1 2 3; do
  for v in old new; do
    echo "-- $v d3q19 f32 defaults"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for cfg in "2 260x12" "2 260x20" "3 262x12" "3 262x16" "3 262x20"; do set -- $cfg
    for v in old new; do
      echo "-- $v d3q19 f32 dim_T $1 $2"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
    done
  done
  T
done
for round in 1 2; do
  for v in old new; do
    echo "-- $v d3q19 f64 defaults"; b $D/s-$v bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for t in 1 16; do
  for v in old new; do
    echo "-- $v d3q19 f32 threads $t"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 6 --repeat 3 --engine naive,blocked --threads $t
  done
done
T
