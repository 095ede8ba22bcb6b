#!/bin/bash
# Session 22, run 10: final code. Harness register check of two shapes; GPU tests; the model's choices for
# every star and box at 512^3 (two rounds of star7 at 1000 steps); one forced shape.
R=.device/run.sh
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
( cd .device-s/p22 && mkdir -p bin7 && F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
  nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DBT=3 -DBY=8 -DRY=3 -DRX=2 -DSKEW=0 -DSTAGES=3 -DKFILE="\"k.cu\"" -DVNAME="\"b3_8\"" -o bin7/b3_8 harness.cu &
  nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DBT=4 -DBY=12 -DRY=3 -DRX=2 -DSKEW=0 -DSTAGES=3 -DKFILE="\"k.cu\"" -DVNAME="\"b4_12\"" -o bin7/b4_12 harness.cu &
  wait; ./bin7/b3_8 512 256 240 3; ./bin7/b4_12 512 256 240 3 )
stamp "gpu_engines"
TEST_THREADS=4 $R tests gpu_engines 2>&1 | grep -E "test result|panicked|FAILED|failed" | head -20
for round in 1 2; do for dt in f32 f64; do
  stamp "round $round bench star7 $dt 1000 steps (model's choice)"
  $R bench --kernel star7 --dtype $dt --size 512 --steps 1000 --engine gpu-naive,gpu-blocked --json | grep gpu-
done; done
stamp "forced b_T 3 32x8 2x3 f32 1000 steps"
$R bench --kernel star7 --dtype f32 --size 512 --steps 1000 --engine gpu-blocked --dim-t 3 --block 32x8 --ry 3 --rx 2 --stream-block 256 | grep gpu-
for k in star:2 star:3 star:4 box27 box:2; do for dt in f32 f64; do
  stamp "bench $k $dt 240 steps (model's choice)"
  $R bench --kernel $k --dtype $dt --size 512 --steps 240 --engine gpu-naive,gpu-blocked --json | grep gpu-
done; done
stamp done
