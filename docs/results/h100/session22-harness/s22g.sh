#!/bin/bash
# Session 22, run 7: the refit model (staged shuffle kernel): its choices, autotune lists of every star.
R=.device/run.sh
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for dt in f32 f64; do
  stamp "bench star7 $dt 1000 steps (model's choice)"
  $R bench --kernel star7 --dtype $dt --size 512 --steps 1000 --engine gpu-naive,gpu-blocked | grep gpu-
done
for k in star7 star:2 star:3 star:4; do for dt in f32 f64; do
  n=20; [ $k = star7 ] && n=30
  stamp "plan $k $dt 512 --autotune $n"
  STENCIL35D_CACHE_DIR=/tmp/c7-$k-$dt $R cli plan --kernel $k --dtype $dt --size 512 --autotune $n > $OUT/plan-${k/:/}-$dt.txt 2>&1
  grep -E "^\*" $OUT/plan-${k/:/}-$dt.txt | head -1
done; done
for k in star:2 star:3 star:4 box27 box:2; do for dt in f32 f64; do
  stamp "bench $k $dt 240 steps (model's choice)"
  $R bench --kernel $k --dtype $dt --size 512 --steps 240 --engine gpu-naive,gpu-blocked | grep gpu-
done; done
stamp done
