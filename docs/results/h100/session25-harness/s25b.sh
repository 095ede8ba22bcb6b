#!/usr/bin/env bash
# Session 25 run B: probe variance on one boot (fresh cache directories), more old/new rounds
# for star7 f32 and f64 512^3 (planner defaults), f64 one-thread tilings with the new schedule.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
O=.device/stencil35d-v4old
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 60 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
echo "== probe variance: three fresh probes, the lattice plan of each"
for i in 1 2 3; do
  export STENCIL35D_CACHE_DIR=/tmp/p$i
  $N probe 2>&1 | grep -E "^(bandwidth|spill|stencil|lattice)"
  $N plan --kernel d3q19 --size 256 2>&1 | grep -E "^\s+blocked" | head -8
done; T
export STENCIL35D_CACHE_DIR=/tmp/p1
echo "== star7 f32 and f64 512^3, 16 threads, old / new defaults"
for round in 1 2 3; do
  for x in O N; do eval B=\$$x; echo "-- $x"; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked; b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked; done
done; T
echo "== star7 f64 512^3 new, one-thread tilings"
for cfg in "3 516x17" "4 518x20" "4 518x30" "5 520x24" "6 522x28" "6 522x44" "8 526x40"; do set -- $cfg; b $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done; T
echo "== star7 f64 512^3 old, the same tilings"
for cfg in "3 516x17" "4 518x20" "6 522x28"; do set -- $cfg; b $O bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done; T
