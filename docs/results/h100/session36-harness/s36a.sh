#!/bin/bash
# Session 36 run A: general (near-wall) vectors. s-base = 2e55ffc; s-gen = the knob build:
# KNOB=0 new general (populations in registers, SIMD link masks), 1 + end vectors deferred,
# 5 + their links and bounce rows prefetched at the row start, 3 = 5 without the last level's
# face-wall copy (wrong results: an upper bound); s-bulk = 2e55ffc with every vector on the
# bulk path (wrong results: an upper bound). D3Q19 f32 256^3, 16 threads, issue command.
cd "$(dirname "$0")/.."
D=.device/t36a
b() { env KNOB=$2 $D/$1 bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 k$2 f32 /"; }
nproc; grep -m1 "model name" /proc/cpuinfo
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then
    b s-base 0; b s-gen 0; b s-gen 1; b s-gen 5; b s-gen 3; b s-bulk 0
  else
    b s-bulk 0; b s-gen 3; b s-gen 5; b s-gen 1; b s-gen 0; b s-base 0
  fi
done
echo "== f64 [t=${SECONDS}s]"
for v in "s-base 0" "s-gen 5" "s-base 0" "s-gen 5"; do set -- $v; env KNOB=$2 $D/$1 bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 k$2 f64 /"; done
echo "done [t=${SECONDS}s]"
