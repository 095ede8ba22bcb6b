#!/usr/bin/env bash
# Session 28 run D: the final build (new) on the host: test suites, then interleaved rounds
# against c1c2b1f (old, before the per-class lattice rings), lattice tile groups of two threads,
# and the stencil defaults (unchanged engine) for the record.
cd "$(dirname "$0")/.."
N=.device/t28/new; O=.device/t28/old
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for t in cpu_engines lbm_engines gpu_engines gpu_lbm; do echo "-- $t"; timeout 300 .device/t28/$t --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED"; done
echo "-- lib"; timeout 300 .device/t28/lib --test-threads 8 2>&1 | grep -E "test result|panicked|FAILED"
T
for round in 1 2 3; do
  for d in f32 f64; do
    echo "-- old d3q19 $d"; b $O bench --kernel d3q19 --dtype $d --size 256 --steps 12 --repeat 3 --engine naive,blocked
    echo "-- new d3q19 $d"; b $N bench --kernel d3q19 --dtype $d --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for k in "2 260x12 1" "2 260x20 2" "2 260x28 2" "3 262x24 2" "3 262x16 1"; do set -- $k
    echo "-- new f32 dim_T $1 $2 threads/tile $3"; b $N bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked --dim-t $1 --tile $2 --tile-threads $3
  done
  T
done
for round in 1 2; do
  for d in f32 f64; do
    echo "-- new star7 $d"; b $N bench --kernel star7 --dtype $d --size 512 --steps 24 --repeat 3 --engine naive,blocked
  done
  T
done
