#!/usr/bin/env bash
# Session 29 run D: 1f468e8 (aligned lattice rows, lattice working set in the planner) with the
# planner's defaults, against 9586b63 (old) on the same boot; star7; scaling; host tests.
cd "$(dirname "$0")/.."
D=.device/t29
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for dt in f32 f64; do
  $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked --json > $OUT/plan-$dt.json 2>/dev/null
  echo "-- new plan d3q19 $dt (blocked)"; $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(machine|balance|cache|predict|\*|         dim_T|         tile)"
done
echo "-- new plan star7 f32"; $D/s-new plan --kernel star7 --dtype f32 --size 512 2>&1 | grep -E "^(cache|\*)"
T
for round in 1 2 3 4; do
  echo "-- new d3q19 f32 defaults"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- new d3q19 f32 dim_T 3 262x16"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t 3 --tile 262x16
  if [ $round -le 2 ]; then
    echo "-- new d3q19 f32 dim_T 2 260x30"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t 2 --tile 260x30
    echo "-- old d3q19 f32 defaults"; b $D/s-old bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  fi
  T
done
for round in 1 2; do
  echo "-- new d3q19 f64 defaults"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  echo "-- old d3q19 f64 defaults"; b $D/s-old bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
for round in 1 2; do
  echo "-- new star7 f32 defaults"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 24 --repeat 3 --engine naive,blocked
done
echo "-- new star7 f64 defaults"; b $D/s-new bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine naive,blocked
T
for t in 1 4 8; do
  echo "-- new d3q19 f32 threads $t"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 6 --repeat 3 --engine naive,blocked --threads $t
done
T
echo "-- lbm_engines"; timeout 120 $D/lbm_engines 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- lib plan:: cpu:: lbm::"; timeout 150 $D/lib --test-threads 8 plan:: cpu:: lbm:: 2>&1 | grep -E "test result|panicked|FAILED"
T
