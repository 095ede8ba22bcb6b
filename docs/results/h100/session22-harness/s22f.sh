#!/bin/bash
# Session 22, run 6: the library with the staged shuffle kernel: GPU tests, the model's
# choices, forced best shapes, autotune lists of star7 (for the model's refit).
R=.device/run.sh
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
stamp "gpu_engines"
TEST_THREADS=4 $R tests gpu_engines 2>&1 | grep -E "test result|panicked|FAILED|failed" | head -20
for dt in f32 f64; do
  stamp "bench star7 $dt 1000 steps (model's choice)"
  $R bench --kernel star7 --dtype $dt --size 512 --steps 1000 --engine gpu-naive,gpu-blocked | grep gpu-
done
b() { $R bench --kernel star7 --size 512 --steps 1000 --engine gpu-blocked "$@" | grep gpu-; }
stamp "forced shapes, 1000 steps"
b --dtype f32 --dim-t 4 --block 32x12 --ry 3 --rx 2 --stream-block 128
b --dtype f32 --dim-t 4 --block 32x12 --ry 3 --rx 2 --stream-block 256
b --dtype f32 --dim-t 3 --block 32x8 --ry 3 --rx 2 --stream-block 128
b --dtype f64 --dim-t 3 --block 32x8 --ry 3 --rx 2 --stream-block 128
for dt in f32 f64; do
  n=50; [ $dt = f64 ] && n=36
  stamp "plan star7 $dt 512 --autotune $n"
  STENCIL35D_CACHE_DIR=/tmp/c6-$dt $R cli plan --kernel star7 --dtype $dt --size 512 --autotune $n > $OUT/plan-star7-$dt.txt 2>&1
  grep -E "^\*|choice" $OUT/plan-star7-$dt.txt | head -3
done
stamp done
