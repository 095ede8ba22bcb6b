#!/bin/bash
# Session 34 run A: rings of rows (s-row) against 84d56bf (s-old), D3Q19 256^3, 16 threads.
cd .device/t34
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz" | head -5
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype ${DT:-f32} --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin ${DT:-f32} B=${S35D_BATCH:-4} /"; }
./s-row plan --kernel d3q19 --dtype f32 --size 256 2>&1 | sed -n '1,30p'
./s-row plan --kernel d3q19 --dtype f64 --size 256 2>&1 | grep -A3 "^choice"
./s-old plan --kernel d3q19 --dtype f32 --size 256 2>&1 | grep -A3 "^choice"
for r in 1 2 3; do
  echo "== round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-row --engine naive,blocked
  b s-row --engine blocked --dim-t 3 --tile 262x14 --tile-threads 1
  b s-row --engine blocked --dim-t 3 --tile 262x24 --tile-threads 1
  b s-row --engine blocked --dim-t 2 --tile 260x36 --tile-threads 1
  b s-row --engine blocked --dim-t 4 --tile 264x16 --tile-threads 1
  ( export S35D_BATCH=1; b s-row --engine blocked )
  ( export S35D_BATCH=8; b s-row --engine blocked )
done
for r in 1 2; do
  echo "== f64 round $r [t=${SECONDS}s]"
  ( export DT=f64; b s-old --engine naive,blocked; b s-row --engine naive,blocked )
done
echo "done [t=${SECONDS}s]"
