#!/bin/bash
# Session 22, run 1: shuffle kernel prototypes (compile-time pitch/plane, fused FP) in the nvcc harness.
cd .device-s/p22
mkdir -p bin
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -DL2_AHEAD=2 -DAHEAD=1 -include coef_f32_r1.h'
F64='-DREAL=double -DREAL2=double2 -DRADIUS=1 -DIS_BOX=0 -DL2_AHEAD=2 -DAHEAD=1 -include coef_f64_r1.h'
build() { local name=$1; shift
  nvcc -O3 -std=c++17 -arch=sm_90 $DTF "$@" -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -Xptxas -v -o bin/$name harness.cu 2>&1 | grep -E "error|stencil_shuffle|registers" | grep -v "^ptxas info    : Compiling" | tail -2 | sed "s/^/$name: /" > bin/$name.ptxas; }
while read name defs; do DTF="$F32" build $name $defs & done < variants.txt
while read name defs; do DTF="$F64" build $name $defs & done < variants_f64.txt
wait
cat bin/*.ptxas | grep -i "spill\|error" | head -40
for v in c_s1_i1 ppf_s1_i1 ppf_s0_i1_12; do cuobjdump -sass -fun stencil_shuffle bin/$v > $OUT/$v.sass 2>&1; done
NAIVE=1 ./bin/c_s1_i0 512 128 240 3
NAIVE=1 ./bin/d_c_s0_i1 512 128 240 3
for r in 1 2; do
cat variants.txt variants_f64.txt | while read name defs; do timeout 30 ./bin/$name 512 128 240 3; done
done
for v in c_s1_i1 ppf_s1_i1; do
  timeout 120 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active,launch__registers_per_thread,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --launch-skip 6 --launch-count 1 -k stencil_shuffle ./bin/$v 512 128 3 1 2>&1 | grep -E "inst_executed|cycles_elapsed|issue_active|registers|stalled_(barrier|long|short|wait|math|dispatch|no_inst|mio|not_sel)" > $OUT/ncu_$v.txt
done
echo done
