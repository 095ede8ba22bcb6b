#!/usr/bin/env bash
# Session 33 run F: the final code (s-base = 3fab005) at the issue command, f32 and f64, and
# level 1's far L2 prefetch (S35D_L2PF, s-knob2 = 3fab005 plus knobs33.patch) in more rounds.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for r in 1 2 3 4; do
  echo "== f32 round $r"
  echo "-- s-base"; b $D/s-base $B --engine naive,blocked
  for k in 16 32; do echo "-- P$k"; ( export S35D_L2PF=$k; b $D/s-knob2 $B --engine blocked ); done
  T
done
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
for r in 1 2; do
  echo "== f64 round $r"
  echo "-- s-base"; b $D/s-base $B64 --engine naive,blocked
  for k in 16 32 64; do echo "-- P$k"; ( export S35D_L2PF=$k; b $D/s-knob2 $B64 --engine blocked ); done
  T
done
