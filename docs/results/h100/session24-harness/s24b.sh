#!/usr/bin/env bash
# Session 24 run B: point-to-point (neighbour) sync instead of a barrier per step, on the
# 16-core host; S35_P2P=0 selects the barrier in the same binary.
cd "$(dirname "$0")/.."
B=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35c
t0=$(date +%s)
b() { $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --json "$@" 2>&1 | grep '^{' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('%-8s dim_t %s tile %-9s tt %-4s %8.0f MUPS' % (d['engine'], d['dim_t'], d['tile'], d.get('tile_threads', '-'), d['mups']))"; }
for round in 1 2; do
  echo "== round $round"
  b --engine naive
  for cfg in "4 518x24 1" "3 516x516 16" "4 518x518 16" "6 522x522 16" "8 526x526 16" "4 518x264 8" "6 522x268 8" "4 518x136 4" "6 522x140 4" "8 526x144 4"; do
    set -- $cfg
    for p in 1 0; do echo -n "p2p $p: "; S35_P2P=$p b --engine blocked --dim-t $1 --tile $2 --tile-threads $3; done
  done
  echo "[t=$(( $(date +%s)-t0 ))s]"
done
