#!/usr/bin/env bash
# Session 32 run K: level 1's lattice rows also prefetched into L2 (PREFETCHT1) S35D_L2PF vectors
# ahead, on top of the L1 prefetch four vectors ahead; s-l2pf = 7c7957f plus the knob.
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for r in 1 2 3 4; do
  echo "-- 0"; b $D/s-l2pf $B --engine naive,blocked
  for k in 12 32; do echo "-- $k"; ( export S35D_L2PF=$k; b $D/s-l2pf $B --engine blocked ); done
  T
done
for k in 0 12 32; do echo "-- f64 $k"; ( export S35D_L2PF=$k; b $D/s-l2pf bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine blocked ); done
T
