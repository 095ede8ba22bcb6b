#!/bin/bash
# Session 35 run H (another boot): the final code (s-fin = 6c5d7fb) against ef48da7 (s-epf
# with S35D_EDGEPF=0) at the issue command, D3Q19 f32 256^3, 16 threads, alternated.
cd "$(dirname "$0")/.."
D=.device/t35h
b() { env S35D_EDGEPF=0 $D/$1 bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 f32 /"; }
for r in 1 2 3 4 5; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then b s-epf; b s-fin; else b s-fin; b s-epf; fi
done
echo "done [t=${SECONDS}s]"
