#!/bin/bash
# Session 34 run C: one boot, rings of planes against rings of rows at the same tiles
# (s-pl = s-pf + S35D_PLANES knob: planes as in 84d56bf). D3Q19 f32 256^3, 16 threads.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin B=${S35D_BATCH:-4} planes=${S35D_PLANES:-0} /"; }
T2="--dim-t 2 --tile 260x26 --tile-threads 1"
T3="--dim-t 3 --tile 262x20 --tile-threads 1"
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  b s-old --engine naive
  ( export S35D_PLANES=1; b s-pl --engine blocked $T2; b s-pl --engine blocked --dim-t 3 --tile 262x14 --tile-threads 1 )
  b s-pl --engine blocked $T2
  ( export S35D_BATCH=8; b s-pl --engine blocked $T2 )
  b s-pl --engine blocked $T3
  ( export S35D_BATCH=8; b s-pl --engine blocked $T3 )
done
echo "done [t=${SECONDS}s]"
