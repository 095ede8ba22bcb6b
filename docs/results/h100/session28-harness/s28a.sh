#!/usr/bin/env bash
# Session 28 run A: lattice rings with per-class slots and lag 1 for one-thread groups (new)
# against c1c2b1f (old), interleaved; then tilings the smaller rings may allow.
cd "$(dirname "$0")/.."
N=.device/t28/new; O=.device/t28/old
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
echo "-- lbm_engines"; timeout 200 .device/t28/lbm_engines --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- lib lbm::"; timeout 200 .device/t28/lib --test-threads 8 lbm:: finite grid:: 2>&1 | grep -E "test result|panicked|FAILED"
T
$N plan --kernel d3q19 --dtype f32 --size 256 2>&1 | sed -n 1,12p
for round in 1 2 3; do
  for d in f32 f64; do
    echo "-- old d3q19 $d"; b $O bench --kernel d3q19 --dtype $d --size 256 --steps 12 --repeat 3 --engine naive,blocked
    echo "-- new d3q19 $d"; b $N bench --kernel d3q19 --dtype $d --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for k in "2 260x12" "2 260x20" "2 260x28" "3 262x12" "3 262x16" "3 262x22" "4 264x16"; do set -- $k
    echo "-- new f32 dim_T $1 $2"; b $N bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked --dim-t $1 --tile $2
  done
  T
done
