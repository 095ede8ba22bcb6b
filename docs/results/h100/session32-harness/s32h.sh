#!/usr/bin/env bash
# Session 32 run H: the final code (s-share = ac67f44) against the session-31 build's collision
# (s-old, its knobs off) at the planner's defaults, interleaved rounds on a fresh boot.
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for r in 1 2 3 4; do
  for v in old share; do echo "-- f32 $v"; b $D/s-$v bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
  T
done
for r in 1 2; do
  for v in old share; do echo "-- f64 $v"; b $D/s-$v bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
  T
done
