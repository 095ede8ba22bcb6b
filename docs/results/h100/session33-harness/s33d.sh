#!/usr/bin/env bash
# Session 33 run D: groups of threads on a tile (s-huge) against one thread per tile; more
# interleaved rounds of s-knob (committed code) against s-huge (huge pages), f32 and f64.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -3; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for r in 1 2; do
  echo "== groups round $r"
  b $D/s-huge $B --engine naive,blocked
  for cfg in "2 3 262x28" "2 2 260x52" "4 3 262x56" "2 4 264x28" "4 4 264x48"; do set -- $cfg
    echo "-- tt $1 dim_T $2 $3"; b $D/s-huge $B --engine blocked --tile-threads $1 --dim-t $2 --tile $3
  done
  T
done
for r in 1 2 3; do
  echo "== round $r"
  for v in s-knob s-huge; do echo "-- $v"; b $D/$v $B --engine naive,blocked; done
  T
done
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
for v in s-knob s-huge; do echo "-- f64 $v"; b $D/$v $B64 --engine naive,blocked; done
T
