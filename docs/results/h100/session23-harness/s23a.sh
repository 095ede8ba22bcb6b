#!/bin/bash
# Session 23, run A: the lazy non-finite check (old vs new binary), harness variants (compile-time
# buffer parity, 32-bit offsets), hz 512, GPU tests.
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cd .device-s/p22
mkdir -p bin9
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
while read name defs; do nvcc -O3 -std=c++17 -arch=sm_90 $F32 $defs -DSTAGES=3 -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin9/$name harness.cu 2>&1 | grep error & done < variants9.txt
wait
cd ../..
stamp "harness built"
for r in 1 2; do while read name defs; do timeout 30 .device-s/p22/bin9/$name 512 256 240 3; done < .device-s/p22/variants9.txt; done
for r in 1 2; do for v in b4_16x3 b4_16x3_pi; do timeout 30 .device-s/p22/bin9/$v 512 512 240 3 | sed 's/^/hz512 /'; done; done
stamp "harness done"
j() { python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print(d['kernel'], d['dtype'], d['steps'], d['engine'], d['dim_t'], d.get('gpu_block'), d.get('gpu_rx'), d.get('gpu_ry'), d.get('gpu_skew'), d.get('gpu_stream_block'), 'regs', d['registers'], 'mups %.0f'%d['mups'], 'pred %.0f'%d['predicted_mups'])
"; }
B="--kernel star7 --dtype f32 --size 512 --steps 1000"
F="--engine gpu-blocked --dim-t 4 --block 32x16 --ry 3 --rx 2"
for round in 1 2; do
  for bin in old new; do
    if [ $bin = old ]; then X=.device/old/stencil35d; else X=.device/stencil35d; fi
    stamp "round $round $bin"
    $X bench $B --engine gpu-naive --json | j
    $X bench $B $F --stream-block 256 --json | j
  done
  stamp "new, hz 512 and 510"
  .device/stencil35d bench $B $F --stream-block 512 --json | j
  .device/stencil35d bench --kernel star7 --dtype f64 --size 512 --steps 1000 --engine gpu-naive,gpu-blocked --json | j
done
stamp "gpu_engines"
TEST_THREADS=4 .device/run.sh tests gpu_engines 2>&1 | grep -E "test result|panicked|FAILED|failed" | head
stamp done
