#!/usr/bin/env bash
# Session 31 run D: an uncommitted build (s-exp = 1aabe73 plus a knob): the lattice's software
# prefetch distance on ring levels (levels 2..dim_T), S35D_RINGPF vectors ahead (4 = the
# committed code, 0 = none); level 1 keeps 4. D3Q19 256^3 at 16 threads, planner defaults.
cd "$(dirname "$0")/.."
D=.device/t31
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 150 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2 3 4; do
  echo "-- d3q19 f32 ringpf 4 (committed)"; export S35D_RINGPF=4; b $D/s-exp bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  for pf in 0 2 8; do
    echo "-- d3q19 f32 ringpf $pf"; export S35D_RINGPF=$pf; b $D/s-exp bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked
  done
  T
done
for round in 1 2; do
  for pf in 4 0; do
    echo "-- d3q19 f64 ringpf $pf"; export S35D_RINGPF=$pf; b $D/s-exp bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine blocked
  done
  T
done
