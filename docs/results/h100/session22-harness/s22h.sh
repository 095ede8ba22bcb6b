#!/bin/bash
# Session 22, run 8: autotune lists of the wider stars under the refit model; GPU tests.
R=.device/run.sh
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for k in star:2 star:3 star:4; do for dt in f32 f64; do
  f=$OUT/plan-${k/:/}-$dt.txt
  stamp "plan $k $dt 512 --autotune 24"
  STENCIL35D_CACHE_DIR=/tmp/c8-${k/:/}-$dt $R cli plan --kernel $k --dtype $dt --size 512 --autotune 24 > $f 2>&1
  grep -E "^\*" $f | head -1
done; done
stamp "gpu_engines"
TEST_THREADS=4 $R tests gpu_engines 2>&1 | grep -E "test result|panicked|FAILED|failed" | head -20
stamp done
