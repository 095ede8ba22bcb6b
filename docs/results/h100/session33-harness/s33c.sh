#!/usr/bin/env bash
# Session 33 run C: is the ring levels' cost per node per-core or shared? In-cache lattice rows,
# one process alone against 16 pinned at once; per-level cycles against the thread count.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d GHZ=2.1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -3; }
echo "== lbm_micro 256x8x8 1 naive periodic, alone"
for i in 1 2; do taskset -c 3 $D/lbm_micro 256x8x8 1 naive periodic 2>&1 | tail -1; done
echo "== 16 at once, one per core"
for c in $(seq 0 15); do taskset -c $c $D/lbm_micro 256x8x8 1 naive periodic > /tmp/m$c.txt 2>&1 & done; wait
for c in $(seq 0 15); do tail -1 /tmp/m$c.txt; done
echo "== 8 at once (cores 0-7)"
for c in $(seq 0 7); do taskset -c $c $D/lbm_micro 256x8x8 1 naive periodic > /tmp/m$c.txt 2>&1 & done; wait
for c in $(seq 0 7); do tail -1 /tmp/m$c.txt; done
T
echo "== profile against threads, s-huge, dim_T 3 262x14"
B="bench --kernel d3q19 --dtype f32 --size 256"
export S35D_PROF=1
b $D/s-huge $B --steps 6 --repeat 1 --engine blocked --dim-t 3 --tile 262x14 --threads 1
b $D/s-huge $B --steps 6 --repeat 1 --engine blocked --dim-t 3 --tile 262x14 --threads 2
b $D/s-huge $B --steps 12 --repeat 1 --engine blocked --dim-t 3 --tile 262x14 --threads 4
b $D/s-huge $B --steps 12 --repeat 2 --engine blocked --dim-t 3 --tile 262x14 --threads 8
b $D/s-huge $B --steps 12 --repeat 2 --engine blocked --dim-t 3 --tile 262x14 --threads 16
T
