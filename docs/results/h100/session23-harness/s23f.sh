#!/bin/bash
# Session 23, run F: the final code (lazy non-finite check, naive stores tested, refit model, compile-time
# buffer parity): model defaults, autotune, every stencil; GPU tests; the 16-core CPU standing.
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(cd .device-s/p22 && nvcc -O3 -std=c++17 -arch=sm_90 -DREAL=float -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h \
  -DKFILE='"../../src/gpu/kernels/stencil.cu"' -o naive_final naive_time.cu && ./naive_final 1000 && ./naive_final 1000)
R=.device/run.sh
j() { python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); print(d['kernel'], d['dtype'], d['steps'], d['engine'], d['dim_t'], d.get('gpu_block'), d.get('gpu_rx'), d.get('gpu_ry'), d.get('gpu_skew'), d.get('gpu_stream_block'), 'regs', d.get('registers'), 'spill', d.get('spill_bytes'), 'mups %.0f'%d['mups'], 'pred %.0f'%d.get('predicted_mups',0), 'gflops %.0f'%d['gflops'])
"; }
for round in 1 2; do for dt in f32 f64; do
  stamp "round $round star7 $dt 1000 steps (model's choice)"
  $R bench --kernel star7 --dtype $dt --size 512 --steps 1000 --engine gpu-naive,gpu-blocked --json | j
done; done
for dt in f32 f64; do
  stamp "star7 $dt 1000 steps --autotune (5 shapes)"
  STENCIL35D_CACHE_DIR=/tmp/c23-$dt $R bench --kernel star7 --dtype $dt --size 512 --steps 1000 --engine gpu-blocked --autotune --json | j
done
for k in star:2 star:3 star:4 box27 box:2; do for dt in f32 f64; do
  stamp "$k $dt 240 steps (model's choice)"
  $R bench --kernel $k --dtype $dt --size 512 --steps 240 --engine gpu-naive,gpu-blocked --json | j
done; done
stamp "gpu_engines"
TEST_THREADS=4 $R tests gpu_engines 2>&1 | grep -E "test result|panicked|FAILED|failed" | head
stamp "CPU, 16 threads"
for round in 1 2; do
  $R bench --kernel star7 --dtype f32 --size 512 --steps 12 --engine naive,blocked --json | j
  $R bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --engine naive,blocked --json | j
done
stamp done

