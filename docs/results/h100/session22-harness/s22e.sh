#!/bin/bash
# Session 22, run 5: shapes around the staged kernel's best (b_T 4, 32x12, 2x3), 4 cells per lane in x, SASS.
cd .device-s/p22
mkdir -p bin5
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
F64='-DREAL=double -DREAL2=double2 -DRADIUS=1 -DIS_BOX=0 -include coef_f64_r1.h'
build() { local name=$1; shift
  nvcc -O3 -std=c++17 -arch=sm_90 $DTF "$@" -DAHEAD=1 -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin5/$name harness.cu 2>&1 | grep -E "error" | head -3; }
while read name defs; do DTF="$F32" build $name $defs & done < variants5.txt
while read name defs; do DTF="$F64" build $name $defs & done < variants5_f64.txt
wait
cuobjdump -sass -fun stencil_shuffle bin5/b4_12 > $OUT/b4_12.sass 2>&1
cuobjdump -sass -fun stencil_shuffle bin5/b3_12 > $OUT/b3_12.sass 2>&1
for r in 1 2; do
  cat variants5.txt variants5_f64.txt | while read name defs; do timeout 30 ./bin5/$name 512 128 240 3; done
done
for hz in 64 256; do echo "hz $hz"; ./bin5/b4_12 512 $hz 240 3; done
echo done
