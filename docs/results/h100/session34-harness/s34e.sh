#!/bin/bash
# Session 34 run E: z chunks longest first, claimed chunk by chunk (s-tap), against equal
# chunks claimed tile by tile (s-new = 95f97ed) and 84d56bf (s-old). D3Q19 256^3, 16 threads.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype ${DT:-f32} --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin ${DT:-f32} $* /"; }
for r in 1 2 3 4; do
  echo "== f32 round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-new --engine blocked
  b s-tap --engine naive,blocked
  b s-tap --engine blocked --z-chunks 8
done
for r in 1 2; do
  echo "== f64 round $r [t=${SECONDS}s]"
  ( export DT=f64; b s-new --engine naive,blocked; b s-tap --engine blocked )
done
echo "done [t=${SECONDS}s]"
