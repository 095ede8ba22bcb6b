#!/bin/bash
# Session 34 run H: a third boot, the final code (s-tap = 5ca86df) against 84d56bf (s-old) at the issue
# command, D3Q19 256^3, 16 threads; median of 3 per line, ratios within one process.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype ${DT:-f32} --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin ${DT:-f32} /"; }
for r in 1 2 3 4 5 6; do
  echo "== f32 round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-tap --engine naive,blocked
done
for r in 1 2; do
  echo "== f64 round $r [t=${SECONDS}s]"
  ( export DT=f64; b s-old --engine naive,blocked; b s-tap --engine naive,blocked )
done
echo "done [t=${SECONDS}s]"
