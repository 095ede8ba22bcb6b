#!/bin/bash
# Session 23, run H: the 16-core CPU with grids that fit its last-level cache (256^3 f32): the
# planner before (old) and after (new) charging such sweeps the cache's rate; then `compare`.
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
OLD=.device/v4/stencil35d; NEW=.device/stencil35d-v4
j() { python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print('   ', d['kernel'], d['dtype'], d['nx'], d['engine'], 'dim_t', d['dim_t'], d.get('tile'), 'mups %.0f'%d['mups'])
"; }
for b in OLD NEW; do echo "== $b plan"; ${!b} plan --kernel star7 --dtype f32 --size 256 | grep -E "choice|dim_T [0-9]|predict|memory|^\*"; ${!b} plan --kernel star7 --dtype f64 --size 256 | grep -E "choice|dim_T [0-9]|predict"; done
for round in 1 2 3; do
  for b in OLD NEW; do
    stamp "round $round $b"
    ${!b} bench --kernel star7 --dtype f32 --size 256 --steps 20 --engine naive,blocked --json | j
    ${!b} bench --kernel star7 --dtype f64 --size 256 --steps 20 --engine blocked --json | j
  done
  $NEW bench --kernel star7 --dtype f32 --size 256 --steps 20 --engine blocked --dim-t 8 --json | j
  $NEW bench --kernel star7 --dtype f64 --size 256 --steps 20 --engine naive --json | j
done
stamp "512 check"
for b in OLD NEW; do ${!b} bench --kernel star7 --dtype f32 --size 512 --steps 12 --engine naive,blocked --json | j; done
stamp compare
.device/run.sh compare --size 256 --steps 20 --out $OUT/compare 2>&1 | tail -22
stamp done
