#!/bin/bash
# Session 35 run E: face-wall variants in one knob build (s-knob / m-knob = 9cbafb2 + S35D_FW):
# 0 = every level copies its face walls from the level below, no prefetch (ef48da7's work);
# 1 = 9cbafb2 (ring levels skip them, the last level copies from the source, lines prefetched);
# 2 = as 1 without the prefetch; 3 = as 0 with the prefetch. D3Q19 f32, alternated.
cd "$(dirname "$0")/.."
D=.device/t35
b() { env S35D_FW=$1 $D/s-knob bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/fw=$1 /"; }
m() { echo -n "fw=$1 "; S35D_FW=$1 GHZ=2.1 WORK=100000000 taskset -c 5 $D/m-knob 256x256x64 1 blocked walls 3 262x20 2>&1 | tail -1; }
for r in 1 2 3 4 5; do
  echo "== round $r [t=${SECONDS}s]"
  for k in 0 1 2 3; do b $k; done
  for k in 0 1 2 3; do m $k; done
done
echo "done [t=${SECONDS}s]"
