#!/usr/bin/env bash
# Session 24 run C: tile groups with neighbour sync, star7 f32 512^3 and D3Q19 f32 256^3,
# 16 threads, three interleaved rounds (S35_P2P=0: the barrier, for a few lattice shapes).
cd "$(dirname "$0")/.."
B=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35c
t0=$(date +%s)
b() { $B bench --repeat 3 --json "$@" 2>&1 | grep '^{' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('%-6s %-8s dim_t %s tile %-9s tt %-4s %8.0f' % (d['kernel'], d['engine'], d['dim_t'], d['tile'], d.get('tile_threads', '-'), d['mups']))"; }
for round in 1 2 3; do
  echo "== round $round"
  S="--kernel star7 --size 512 --steps 24"
  b $S --engine naive,blocked
  for cfg in "4 518x24 1" "6 522x140 4" "4 518x136 4" "5 520x138 4" "6 522x76 2" "8 526x144 4" "6 522x268 8" "5 520x74 2"; do
    set -- $cfg; b $S --engine blocked --dim-t $1 --tile $2 --tile-threads $3
  done
  L="--kernel d3q19 --size 256 --steps 12"
  b $L --engine naive,blocked
  for cfg in "2 260x20 2" "2 260x36 4" "3 262x38 4" "3 262x70 8" "4 264x40 4" "3 262x22 2" "4 264x72 8"; do
    set -- $cfg; b $L --engine blocked --dim-t $1 --tile $2 --tile-threads $3
  done
  for cfg in "2 260x36 4" "3 262x38 4"; do
    set -- $cfg; echo -n "barrier: "; S35_P2P=0 b $L --engine blocked --dim-t $1 --tile $2 --tile-threads $3
  done
  echo "[t=$(( $(date +%s)-t0 ))s]"
done
