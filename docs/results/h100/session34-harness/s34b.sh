#!/bin/bash
# Session 34 run B: rings of rows, batch sizes and level 1's next rows prefetched into L2
# (s-pf = s-row + S35D_PF1 knob), against 84d56bf (s-old). D3Q19 f32 256^3, 16 threads.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin B=${S35D_BATCH:-4} PF=${S35D_PF1:-0} /"; }
T="--dim-t 3 --tile 262x20 --tile-threads 1"
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-pf --engine naive,blocked
  ( export S35D_BATCH=2; b s-pf --engine blocked $T )
  ( export S35D_BATCH=8; b s-pf --engine blocked $T )
  ( export S35D_PF1=1; b s-pf --engine blocked $T )
  ( export S35D_PF1=2; b s-pf --engine blocked $T )
done
echo "done [t=${SECONDS}s]"
