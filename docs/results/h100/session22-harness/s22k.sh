#!/bin/bash
# Session 22, run 12: more warps per SM for star7 f32 (16-20 warps per block under the 128/102-register cap).
cd .device-s/p22
mkdir -p bin8
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
while read name defs; do nvcc -O3 -std=c++17 -arch=sm_90 $F32 $defs -DSTAGES=3 -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin8/$name harness.cu 2>&1 | grep error & done < variants8.txt
wait
for r in 1 2; do while read name defs; do timeout 30 ./bin8/$name 512 256 240 3; done < variants8.txt; done
echo done
