#!/bin/bash
# Session 34 run J: how many z chunks with tapered chunks (s-fin = 192289d), one boot,
# alternated; D3Q19 f32 256^3, 16 threads, the planner's dim_T 3 262x20 (5 chunks).
cd .device/t34
b() { ./s-fin bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/s-fin $* /"; }
for r in 1 2 3 4 5 6; do
  echo "== round $r [t=${SECONDS}s]"
  b --engine naive,blocked
  b --engine blocked --z-chunks 4
  b --engine blocked --z-chunks 3
  b --engine blocked --z-chunks 7
done
echo "done [t=${SECONDS}s]"
