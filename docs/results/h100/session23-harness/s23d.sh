#!/bin/bash
# Session 23, run D: where gpu-naive reads the pass flag (top, after the bounds test, as the loop
# bound) and the SASS of each.
cd .device-s/p22
F32='-DREAL=float -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
for v in none volatile after bound; do
  nvcc -O3 -std=c++17 -arch=sm_90 $F32 -DKFILE="\"st_$v.cu\"" -o naive_$v naive_time.cu &
done
wait
for v in none volatile after bound; do cuobjdump -sass -fun stencil_naive naive_$v > sass_naive_$v.txt; echo "$v: $(grep -c '^ */\*[0-9a-f]*\*/' sass_naive_$v.txt) instructions"; done
for r in 1 2; do for v in none volatile after bound; do ./naive_$v 1000 | head -1; done; done
mkdir -p $OUT/sass && cp sass_naive_*.txt $OUT/sass/
