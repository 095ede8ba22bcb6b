#!/bin/bash
# Session 23, run C: how the kernels read the pass flag (volatile, plain, __ldg, no check): gpu-naive
# back to back and the shuffle kernel (b_T 4, 32x16, 2x3) in the harness.
cd .device-s/p22
F32='-DREAL=float -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DOLD -DKFILE='"old"' -o naive_old naive_time.cu &
for v in volatile plain ldg none; do
  nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DKFILE="\"st_$v.cu\"" -o naive_$v naive_time.cu &
  nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DREAL2=float2 -DBT=4 -DBY=16 -DRY=3 -DRX=2 -DSKEW=0 -DSTAGES=3 -DKFILE="\"k_$v.cu\"" -DVNAME="\"b4_16x3_$v\"" -o h_$v harness.cu &
done
wait
for r in 1 2; do
  for v in old volatile plain ldg none; do ./naive_$v 1000 | head -1; done
  for v in volatile plain ldg none; do ./h_$v 512 256 240 3; done
done
