#!/bin/bash
# Session 36 run C (another boot): the committed change (s-fin = de7a325) against 2e55ffc
# (s-base) at the issue command, D3Q19 256^3, 16 threads, alternated; f64 too.
cd "$(dirname "$0")/.."
D=.device/t36c
b() { $D/$1 bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 $2 /"; }
for r in 1 2 3 4 5 6; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then b s-base f32; b s-fin f32; else b s-fin f32; b s-base f32; fi
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2 3; do b s-base f64; b s-fin f64; done
echo "done [t=${SECONDS}s]"
