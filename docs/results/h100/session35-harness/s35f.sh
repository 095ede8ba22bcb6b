#!/bin/bash
# Session 35 run F (another boot): the final code (s-fw2 / m-fw2 = 2830384: ring levels skip
# the x-face walls, the last level copies them from the pass's source, no prefetch) against
# ef48da7 (s-epf with S35D_EDGEPF=0, m-old), alternated: the issue command in both precisions,
# then one pinned thread.
cd "$(dirname "$0")/.."
D=.device/t35
b() { env S35D_EDGEPF=0 $D/$1 bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 $2 /"; }
for r in 1 2 3 4 5 6 7; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then b s-epf f32; b s-fw2 f32; else b s-fw2 f32; b s-epf f32; fi
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2 3; do b s-fw2 f64; b s-epf f64; done
echo "== one pinned thread [t=${SECONDS}s]"
for r in 1 2 3 4; do
  for m in m-old m-fw2; do
    echo -n "$m "; GHZ=2.1 WORK=100000000 taskset -c 5 $D/$m 256x256x64 1 blocked walls 3 262x20 2>&1 | tail -1
  done
done
echo "done [t=${SECONDS}s]"
