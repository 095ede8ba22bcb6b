#!/bin/bash
# Session 22, run 9: the library's staged kernel in the nvcc harness: ring slots fixed at compile time
# (STATIC_SLOT) and 8/16-byte pair copies (PAIR_COPY); SASS and ncu of the best shape.
cd .device-s/p22
mkdir -p bin6
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
F64='-DREAL=double -DREAL2=double2 -DRADIUS=1 -DIS_BOX=0 -include coef_f64_r1.h'
build() { local name=$1; shift
  nvcc -O3 -std=c++17 -arch=sm_90 $DTF "$@" -DSTAGES=3 -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin6/$name harness.cu 2>&1 | grep -E "error" | head -3; }
while read name defs; do DTF="$F32" build $name $defs & done < variants6.txt
while read name defs; do DTF="$F64" build $name $defs & done < variants6_f64.txt
wait
cuobjdump -sass -fun stencil_shuffle bin6/b4_12_sl > $OUT/b4_12_sl.sass 2>&1
for r in 1 2; do
  cat variants6.txt variants6_f64.txt | while read name defs; do timeout 30 ./bin6/$name 512 256 240 3; done
done
for v in b4_12_sl b3_8_slpr; do
timeout 120 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --launch-skip 6 --launch-count 1 -k stencil_shuffle ./bin6/$v 512 256 4 1 2>&1 | grep -E "inst_executed|cycles_elapsed|issue_active|registers|warps_active|dram__|stalled_(barrier|long|short|wait|math|dispatch|no_inst|mio|not_sel|lg_)" > $OUT/ncu_$v.txt
done
echo done
