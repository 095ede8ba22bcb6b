#!/bin/bash
cd .device-s/p22
F32='-DREAL=float -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
for v in none store; do nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DKFILE="\"st_$v.cu\"" -o naive_$v naive_time.cu & done
wait
for r in 1 2; do for v in none store; do ./naive_$v 1000; done; done
