#!/bin/bash
# Session 23, run I: the final CPU planner (cache-resident grids stream at the cache's rate, times
# overlap) on the 16-core CPU: choices and timings at 256^3 and 512^3; `compare` for the README.
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
NEW=.device/v4b/stencil35d
j() { python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print('   ', d['kernel'], d['dtype'], d['nx'], d['engine'], 'dim_t', d['dim_t'], d.get('tile'), 'mups %.0f'%d['mups'], 'pred %.0f'%d.get('predicted_mups',0))
"; }
for dt in f32 f64; do $NEW plan --kernel star7 --dtype $dt --size 256 --engine blocked | grep -E "cache|choice|dim_T [0-9]|predict|^  naive|^\* "; done
for round in 1 2 3; do
  stamp "round $round"
  $NEW bench --kernel star7 --dtype f32 --size 256 --steps 20 --engine naive,blocked --json | j
  $NEW bench --kernel star7 --dtype f64 --size 256 --steps 20 --engine naive,blocked --json | j
done
stamp "512"
for round in 1 2; do $NEW bench --kernel star7 --dtype f32 --size 512 --steps 12 --engine naive,blocked --json | j; done
stamp compare
.device/run.sh compare --size 256 --steps 20 --out $OUT/compare 2>&1 | tail -22
stamp done
