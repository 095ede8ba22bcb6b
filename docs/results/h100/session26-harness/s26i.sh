#!/usr/bin/env bash
# Session 26 run I: star7 f32 512^3 around the default (z chunks 4-8, tiles 518x24/30/40) and
# the lattice's chunk count, naive in each round.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -1; }
for round in 1 2; do
  echo "== round $round"
  b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive
  for cfg in "4 518x30 auto" "4 518x30 8" "4 518x24 6" "4 518x40 6" "3 516x38 6" "5 520x36 6"; do set -- $cfg
    zc=""; [ $3 != auto ] && zc="--z-chunks $3"
    echo -n "dim_T $1 $2 z $3: "; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 $zc
  done
  T
done
b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive
for zc in 3 6 10; do echo -n "d3q19 z $zc: "; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine blocked --z-chunks $zc; done
for cfg in "3 262x16" "2 260x20"; do set -- $cfg; echo -n "d3q19 dim_T $1 $2 z 6: "; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2 --z-chunks 6; done
T
