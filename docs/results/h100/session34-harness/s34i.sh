#!/bin/bash
# Session 34 run I: a fourth boot, the final code (s-fin = 192289d) against 84d56bf (s-old) at
# the issue command, D3Q19 f32 256^3, 16 threads; median of 3 per line, ratios within one process.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype ${DT:-f32} --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin ${DT:-f32} /"; }
for r in 1 2 3 4 5 6 7; do
  echo "== f32 round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-fin --engine naive,blocked
done
echo "== f64 [t=${SECONDS}s]"
( export DT=f64; b s-old --engine naive,blocked; b s-fin --engine naive,blocked )
echo "done [t=${SECONDS}s]"
