#!/bin/bash
# Session 34 run D: the committed rings of rows (s-new = 95f97ed) against 84d56bf (s-old) at
# the issue command, D3Q19 256^3, 16 threads; then 95f97ed's lattice tests on the host.
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype ${DT:-f32} --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin ${DT:-f32} /"; }
./s-new plan --kernel d3q19 --dtype f32 --size 256 --engine blocked 2>&1 | sed -n '2,25p'
./s-new plan --kernel d3q19 --dtype f64 --size 256 --engine blocked 2>&1 | grep -A2 "^choice"
for r in 1 2 3 4; do
  echo "== f32 round $r [t=${SECONDS}s]"
  b s-old --engine naive,blocked
  b s-new --engine naive,blocked
done
for r in 1 2; do
  echo "== f64 round $r [t=${SECONDS}s]"
  ( export DT=f64; b s-old --engine naive,blocked; b s-new --engine naive,blocked )
done
echo "== tests [t=${SECONDS}s]"
./libtests lbm:: 2>&1 | tail -3
./lbm_engines 2>&1 | tail -3
echo "done [t=${SECONDS}s]"
