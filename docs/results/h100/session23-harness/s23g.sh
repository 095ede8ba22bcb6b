#!/bin/bash
# Session 23, run G: the 16-core CPU (AVX-512 build): a sweep of blocked configurations against
# naive for star7 f32 512^3 and D3Q19 f32 256^3, then the planner's defaults in both precisions.
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nproc; lscpu | grep -E "Model name|L2|L3|Thread|Flags" | cut -c1-200
C=""
for c in 4:518x24:1 3:516x38:1 6:140x44:1 4:136x40:1 6:104x76:1 4:128x64:1 5:520x32:1 8:524x24:1 4:136x72:1 3:132x132:1; do C="$C --config $c"; done
L=""
for c in 2:260x12:1 2:260x8:1 3:262x12:1; do L="$L --lbm-config $c"; done
stamp sweep
.device/v4/cpu_sweep --budget-seconds 330 $C $L --no-scaling 2>&1
stamp defaults
j() { python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print(d['kernel'], d['dtype'], d['engine'], d['dim_t'], d.get('tile'), d.get('threads'), 'mups %.0f'%d['mups'])
"; }
for round in 1 2; do
  for dt in f32 f64; do
    .device/v4/stencil35d bench --kernel star7 --dtype $dt --size 512 --steps 12 --engine naive,blocked --json | j
    .device/v4/stencil35d bench --kernel d3q19 --dtype $dt --size 256 --steps 12 --engine naive,blocked --json | j
  done
done
stamp done
