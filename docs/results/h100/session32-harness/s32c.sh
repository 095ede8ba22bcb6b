#!/usr/bin/env bash
# Session 32 run C: regrouped TRT collision (s-new) against the old one (s-old), with per-level
# cycle counts (S35D_PROF: rdtsc around each level's rows, the stream copy and the waits).
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d S35D_PROF=1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF"; }
$D/s-new plan --kernel d3q19 --dtype f32 --size 256 --engine blocked 2>&1 | grep -E "^(choice|  *dim_T|predict)"
T
for r in 1 2 3; do
  for v in old new; do echo "-- f32 $v"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
  T
done
for v in old new; do echo "-- f64 $v"; b $D/s-$v bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
T
for r in 1 2; do
  for cfg in "3 262x20" "3 262x14" "4 264x24" "4 264x16" "5 266x24" "6 268x28"; do set -- $cfg
    echo "-- f32 new dim_T $1 $2"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
  done
  T
done
echo "-- f32 new 1 thread"; b $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 6 --repeat 3 --engine naive,blocked --threads 1
T
