#!/bin/bash
# Session 22, run 3: level-0 planes through a cp.async ring in shared memory (STAGES).
cd .device-s/p22
mkdir -p bin3
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
F64='-DREAL=double -DREAL2=double2 -DRADIUS=1 -DIS_BOX=0 -include coef_f64_r1.h'
build() { local name=$1; shift
  nvcc -O3 -std=c++17 -arch=sm_90 $DTF "$@" -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin3/$name harness.cu 2>&1 | grep -E "error" | head -3; }
ex() { local defs="$*" extra=""; [[ $defs == *L2_AHEAD* ]] || extra="$extra -DL2_AHEAD=2"; [[ $defs == *-DAHEAD* ]] || extra="$extra -DAHEAD=1"; [[ $defs == *STAGES* ]] || extra="$extra -DSTAGES=0"; echo $extra; }
while read name defs; do DTF="$F32" build $name $defs $(ex $defs) & done < variants3.txt
while read name defs; do DTF="$F64" build $name $defs $(ex $defs) & done < variants3_f64.txt
wait
for r in 1 2; do
  cat variants3.txt variants3_f64.txt | while read name defs; do timeout 30 ./bin3/$name 512 128 240 3; done
done
for hz in 64 256; do echo "hz $hz"; ./bin3/st3_s1_8 512 $hz 240 3; ./bin3/st4_s1_8 512 $hz 240 3; done
timeout 120 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --launch-skip 6 --launch-count 1 -k stencil_shuffle ./bin3/st3_s1_8 512 128 3 1 2>&1 | grep -E "inst_executed|cycles_elapsed|issue_active|registers|warps_active|dram__|stalled_(barrier|long|short|wait|math|dispatch|no_inst|mio|not_sel|lg_)"
echo done
