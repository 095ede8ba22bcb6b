#!/bin/bash
# Session 22, run 2: occupancy, prefetch distance and shape variants of the pitch/plane/fuse prototype.
cd .device-s/p22
mkdir -p bin2
F32='-DREAL=float -DREAL2=float2 -DRADIUS=1 -DIS_BOX=0 -include coef_f32_r1.h'
build() { local name=$1; shift
  nvcc -O3 -std=c++17 -arch=sm_90 $DTF "$@" -DKFILE="\"k.cu\"" -DVNAME="\"$name\"" -o bin2/$name harness.cu 2>&1 | grep -E "error" | head -3; }
# defaults unless a variant sets them
while read name defs; do
  extra=""; [[ $defs == *L2_AHEAD* ]] || extra="$extra -DL2_AHEAD=2"; [[ $defs == *-DAHEAD* ]] || extra="$extra -DAHEAD=1"
  DTF="$F32" build $name $defs $extra &
done < variants2.txt
wait
for r in 1 2; do
  while read name defs; do timeout 30 ./bin2/$name 512 128 240 3; done < variants2.txt
  for hz in 64 256; do echo "hz $hz"; ./bin2/ppf_s0_8 512 $hz 240 3; ./bin2/ppf_s1_8 512 $hz 240 3; done
done
timeout 120 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.per_cycle_active,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --launch-skip 6 --launch-count 1 -k stencil_shuffle ./bin2/ppf_s0_8 512 128 3 1 2>&1 | grep -E "inst_executed|cycles_elapsed|issue_active|registers|warps_active|stalled_(barrier|long|short|wait|math|dispatch|no_inst|mio|not_sel)"
echo done
