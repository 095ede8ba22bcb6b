#!/usr/bin/env bash
# Session 32 run J: the last level's bulk vectors stored to the staging row and also streamed
# straight to the lattice (non-temporal), the row's copy then only its first and last two lines
# per array (S35D_DUAL; a timing experiment: rows whose vectors all take the general path are
# left incomplete, so its output is wrong next to walls). s-dual = c4ee14a plus the knob.
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for r in 1 2 3 4; do
  for k in base S35D_DUAL; do echo "-- $k"; ( export $k=1; b $D/s-dual $B --engine naive,blocked ); done
  for k in base S35D_DUAL; do echo "-- 262x14 $k"; ( export $k=1; b $D/s-dual $B --engine blocked --dim-t 3 --tile 262x14 ); done
  T
done
for k in base S35D_DUAL; do echo "-- f64 $k"; ( export $k=1; b $D/s-dual bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked ); done
T
