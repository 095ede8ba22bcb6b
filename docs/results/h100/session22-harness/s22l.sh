#!/bin/bash
# Session 22, run 13: the register estimate refit (shapes up to an eighth over the limit admitted):
# autotune lists, forced shapes at 1000 steps.
R=.device/run.sh
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
b() { $R bench --kernel star7 --size 512 --steps 1000 --engine gpu-blocked --json "$@" | python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print(d['dtype'], d['engine'], d['dim_t'], d.get('gpu_block'), d.get('gpu_rx'), d.get('gpu_ry'), d.get('gpu_skew'), d.get('gpu_stream_block'), 'regs', d['registers'], 'spill', d['spill_bytes'], 'mups %.0f'%d['mups'])
"; }
for round in 1 2; do
  stamp "round $round forced shapes, 1000 steps"
  b --dtype f32 --dim-t 4 --block 32x16 --ry 3 --rx 2 --stream-block 256
  b --dtype f32 --dim-t 4 --block 32x16 --ry 3 --rx 2 --stream-block 128
  b --dtype f32 --dim-t 4 --block 32x12 --ry 4 --rx 2 --stream-block 256
  b --dtype f32 --dim-t 4 --block 32x12 --ry 3 --rx 2 --stream-block 256
  b --dtype f64 --dim-t 4 --block 32x16 --ry 3 --rx 1 --stream-block 128
  b --dtype f64 --dim-t 3 --block 32x12 --ry 2 --rx 2 --stream-block 256
done
for k in star7 star:2 star:3 star:4; do for dt in f32 f64; do
  n=12; [ $k = star7 ] && n=30
  f=$OUT/plan-${k/:/}-$dt.txt
  stamp "plan $k $dt 512 --autotune $n"
  STENCIL35D_CACHE_DIR=/tmp/c13-${k/:/}-$dt $R cli plan --kernel $k --dtype $dt --size 512 --autotune $n > $f 2>&1
  grep -E "^\*" $f | head -1
done; done
stamp done
