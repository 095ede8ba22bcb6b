#!/usr/bin/env bash
# Session 24 run D: the committed neighbour sync on the 16-core host: the CPU test suites, then
# blocked runs verified against the reference with groups of 2-16 threads, then planner defaults.
cd "$(dirname "$0")/.."
B=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35c
t0=$(date +%s)
for t in cpu_engines lbm_engines; do echo "== $t"; timeout 100 .device/t24/$t --test-threads 8 2>&1 | grep -E "test result|FAILED|panicked"; done
echo "== lib (cpu and lbm units)"; timeout 100 .device/t24/lib --test-threads 8 cpu:: lbm:: 2>&1 | grep -E "test result|FAILED|panicked"
echo "[t=$(( $(date +%s)-t0 ))s]"
v() { timeout 20 $B bench --repeat 1 --verify --json "$@" 2>&1 | grep '^{' | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l); print('%-6s %-4s %-8s dim_t %s tile %-9s tt %-3s %8.0f  max_rel_err %.2e' % (d['kernel'], d['dtype'], d['engine'], d['dim_t'], d['tile'], d.get('tile_threads', '-'), d['mups'], d['max_rel_err']))"; }
echo "== verified against the reference, 16 threads"
for dt in f32 f64; do
  for cfg in "4 206x48 4" "3 204x70 8" "5 210x210 16" "2 202x28 2" "6 212x40 2"; do set -- $cfg
    v --kernel star7 --dtype $dt --size 199x200x61 --steps 13 --engine blocked --dim-t $1 --tile $2 --tile-threads $3; done
  v --kernel star:3 --dtype $dt --size 150x131x40 --steps 7 --engine blocked --dim-t 3 --tile 170x60 --tile-threads 4
  v --kernel box27 --dtype $dt --size 150x131x40 --steps 7 --engine blocked --dim-t 3 --tile 156x131 --tile-threads 16
  for cfg in "2 68x20 4" "3 70x70 8" "3 70x30 2"; do set -- $cfg
    v --kernel d3q19 --dtype $dt --size 64x66x40 --steps 7 --engine blocked --dim-t $1 --tile $2 --tile-threads $3; done
done
echo "[t=$(( $(date +%s)-t0 ))s]"
echo "== planner defaults, three rounds"
for round in 1 2; do
  $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked 2>&1 | tail -2
  $B bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | tail -2
done
echo "[t=$(( $(date +%s)-t0 ))s]"
