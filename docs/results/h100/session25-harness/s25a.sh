#!/usr/bin/env bash
# Session 25 run A: two planes per step for one-thread tile groups (new) against 650d94c (old)
# on the 16-core host; fresh-boot probe and plans; CPU test suites; lattice tilings.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
O=.device/stencil35d-v4old
export STENCIL35D_CACHE_DIR=/tmp/s35c
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
lscpu | grep -E "Model name|L2 cache|L3 cache"
echo "== probe"; timeout 150 $N probe 2>&1 | tail -25; T
echo "== plan d3q19 f32 256"; $N plan --kernel d3q19 --size 256 2>&1 | head -45
echo "== plan star7 f32 512"; $N plan --kernel star7 --size 512 2>&1 | head -30
echo "== tests (new build)"
for t in cpu_engines lbm_engines; do echo "-- $t"; timeout 100 .device/t25/$t --test-threads 8 2>&1 | grep -E "test result|FAILED|panicked"; done
echo "-- lib cpu:: lbm::"; timeout 100 .device/t25/lib --test-threads 8 cpu:: lbm:: 2>&1 | grep -E "test result|FAILED|panicked"; T
b() { timeout 60 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
echo "== star7 f32 512^3, 16 threads: old / new, planner defaults and dim_T 4 518x24 one thread per tile"
for round in 1 2 3; do
  for x in O N; do eval B=\$$x; echo "-- $x"; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1; done
done; T
echo "== star7 f32 512^3 new, one-thread tilings"
for cfg in "3 516x38" "4 518x32" "5 520x34" "6 522x40" "6 522x28" "8 526x48"; do set -- $cfg; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done; T
echo "== star7 f64 512^3 old / new defaults"
for round in 1 2; do for x in O N; do eval B=\$$x; echo "-- $x"; b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine naive,blocked; done; done; T
echo "== star7 f32 512^3 new, thread scaling"
for th in 1 2 4 8; do b $N bench --kernel star7 --size 512 --steps 12 --repeat 3 --threads $th --engine naive,blocked; done; T
echo "== d3q19 f32 256^3 (code unchanged): defaults and one-thread strips"
for round in 1 2; do b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
for cfg in "2 260x12" "2 260x20" "3 262x16" "4 264x16" "6 268x28"; do set -- $cfg; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done; T
echo "== d3q19 f64 256^3 defaults"; b $N bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked; T
