#!/usr/bin/env bash
# Session 29 run C: the final build (aligned lattice rows, lattice working set in the planner)
# against 9586b63 (old) with the planner's defaults; star7 for issue 2; scaling; host tests.
cd "$(dirname "$0")/.."
D=.device/t29
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for dt in f32 f64; do
  $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked --json > $OUT/plan-$dt.json 2>/dev/null
  echo "-- new plan d3q19 $dt (blocked)"; $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(machine|balance|predict|\*|         dim_T|         tile)"
  echo "-- old plan d3q19 $dt (blocked)"; $D/s-old plan --kernel d3q19 --dtype $dt --size 256 --engine blocked 2>&1 | grep -E "^(\*)"
done
T
for round in 1 2 3; do
  for v in old new; do
    echo "-- $v d3q19 f32 defaults"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for v in old new; do
    echo "-- $v d3q19 f64 defaults"; b $D/s-$v bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  echo "-- new f64 dim_T 3 262x12"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t 3 --tile 262x12
  T
done
for round in 1 2; do
  echo "-- new star7 f32 defaults"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 24 --repeat 3 --engine naive,blocked
  T
done
for t in 1 4 8; do
  echo "-- new d3q19 f32 threads $t"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 6 --repeat 3 --engine naive,blocked --threads $t
done
T
echo "-- lbm_engines"; timeout 120 $D/lbm_engines 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- cpu_engines"; timeout 120 $D/cpu_engines 2>&1 | grep -E "test result|panicked|FAILED"
echo "-- lib plan:: cpu:: lbm::"; timeout 150 $D/lib --test-threads 8 plan:: cpu:: lbm:: 2>&1 | grep -E "test result|panicked|FAILED"
T
