#!/bin/bash
# Session 35 run D (another boot): face walls (s-fw = 9cbafb2) against ef48da7 (s-epf with
# S35D_EDGEPF=0) at the issue command, alternated; one pinned thread (lbm_micro m-old / m-fw,
# 256x256x64 walls, blocked dim_T 3 262x20), six alternations.
cd "$(dirname "$0")/.."
D=.device/t35
b() { env S35D_EDGEPF=0 $D/$1 bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 $2 /"; }
for r in 1 2 3 4 5 6; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then b s-epf f32; b s-fw f32; else b s-fw f32; b s-epf f32; fi
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2; do b s-fw f64; b s-epf f64; done
echo "== one pinned thread [t=${SECONDS}s]"
for r in 1 2 3 4 5 6; do
  for m in m-old m-fw; do
    echo -n "$m "; GHZ=2.1 WORK=100000000 taskset -c 5 $D/$m 256x256x64 1 blocked walls 3 262x20 2>&1 | tail -1
  done
done
echo "done [t=${SECONDS}s]"
