#!/usr/bin/env bash
# Session 31 run A: s-old (5b74e84) against s-new (partial edge lines streamed + per-core spill
# charge), AVX-512 builds, one shared probe cache; zz_lbm: cavity against periodic lattice.
cd "$(dirname "$0")/.."
D=.device/t31
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
lscpu | grep -E "Model name|Thread|Core|Socket|MHz"
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked 2>&1 | head -12
$D/s-new plan --kernel star7 --dtype f32 --size 512 --engine blocked --json > $OUT/plan-star7-f32.json 2>/dev/null
echo "-- old plan"; $D/s-old plan --kernel star7 --dtype f32 --size 512 --engine blocked 2>&1 | grep -A1 choice
for dt in f32 f64; do
  $D/s-new plan --kernel d3q19 --dtype $dt --size 256 --engine blocked --json > $OUT/plan-d3q19-$dt.json 2>/dev/null
done
T
for round in 1 2 3; do
  echo "-- star7 f32 old"; b $D/s-old bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- star7 f32 new"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- d3q19 f32 new"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
for round in 1 2; do
  echo "-- star7 f64 old"; b $D/s-old bench --kernel star7 --dtype f64 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- star7 f64 new"; b $D/s-new bench --kernel star7 --dtype f64 --size 512 --steps 20 --repeat 3 --engine naive,blocked
  echo "-- d3q19 f64 new"; b $D/s-new bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  T
done
for t in 1 2 4 8; do
  echo "-- star7 f32 new threads $t"; b $D/s-new bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive,blocked --threads $t
done
T
echo "-- zz_lbm 256 16"; timeout 120 $D/zz_lbm 256 16
T
echo "-- zz_lbm 256 1"; timeout 100 $D/zz_lbm 256 1
T
