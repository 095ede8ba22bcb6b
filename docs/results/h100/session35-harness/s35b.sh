#!/bin/bash
# Session 35 run B: face walls (s-fw: ring levels leave the x-face wall nodes out, the last
# level copies them from the pass's source, their lines prefetched at the row start) against
# ef48da7 (s-epf with S35D_EDGEPF=0). D3Q19 256^3, 16 threads, alternated in one boot.
cd "$(dirname "$0")/.."
D=.device/t35
b() { env S35D_EDGEPF=0 $D/$1 bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 $2 /"; }
for r in 1 2 3 4 5; do
  echo "== round $r [t=${SECONDS}s]"
  b s-epf f32; b s-fw f32
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2; do b s-epf f64; b s-fw f64; done
echo "done [t=${SECONDS}s]"
