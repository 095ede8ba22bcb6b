#!/usr/bin/env bash
# Session 32 run I: output-row prefetch in the blocked engine's rows (S35D_OUTPF: the 19 output
# rows four vectors ahead, as the naive sweep does) and PREFETCHW instead of PREFETCHT0 for output
# rows (S35D_PFW, which the naive sweep's output prefetch takes too); s-knob2 = the final code
# (0f399f1) plus these knobs. Interleaved rounds at the planner's defaults and at dim_T 3 262x14.
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
cat /sys/kernel/mm/transparent_hugepage/enabled
for r in 1 2 3; do
  for k in base S35D_OUTPF "S35D_OUTPF S35D_PFW"; do echo "-- $k"; ( for v in $k; do export $v=1; done; b $D/s-knob2 $B --engine naive,blocked ); done
  for k in base S35D_OUTPF; do echo "-- 262x14 $k"; ( for v in $k; do export $v=1; done; b $D/s-knob2 $B --engine blocked --dim-t 3 --tile 262x14 ); done
  T
done
for k in base S35D_OUTPF; do echo "-- f64 $k"; ( for v in $k; do export $v=1; done; b $D/s-knob2 bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked ); done
T
