#!/bin/bash
# Session 34 run F: the taper of the z chunks (S35D_TAPER knob on 5ca86df, s-knob) and their
# count. D3Q19 f32 256^3, 16 threads, dim_T 3 262x20 (the planner's plan).
cd .device/t34
b() { local bin=$1; shift; ./$bin bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 "$@" 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$bin taper=${S35D_TAPER:-3} $* /"; }
./s-knob plan --kernel d3q19 --dtype f32 --size 256 --engine blocked 2>&1 | grep -A2 "^choice"
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  b s-knob --engine naive
  ( export S35D_TAPER=1; b s-knob --engine blocked )
  b s-knob --engine blocked
  ( export S35D_TAPER=5; b s-knob --engine blocked )
  b s-knob --engine blocked --z-chunks 4
  b s-knob --engine blocked --z-chunks 6
  ( export S35D_TAPER=5; b s-knob --engine blocked --z-chunks 6 )
done
echo "done [t=${SECONDS}s]"
