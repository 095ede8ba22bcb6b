#!/usr/bin/env bash
# Session 24 run A: where the blocked CPU engine's per-core time goes on the 16-core host.
cd "$(dirname "$0")/.."
B=.device/stencil35d-v4
L=.device/v4b/lib-v4
export STENCIL35D_CACHE_DIR=/tmp/s35c
t0=$(date +%s)
lscpu | grep -E "Model name|MHz|L1d|L2|L3"
echo "== probes"
$L row_kernel_speed --ignored --nocapture 2>&1 | grep -E "width"
for th in 1 16; do PROBE_THREADS=$th $L plane_sweep_speed --ignored --nocapture 2>&1 | grep -E "^f32"; done
echo "[t=$(( $(date +%s)-t0 ))s]"
b() { $B bench --kernel star7 --size 512 --steps 24 --repeat 3 "$@" 2>&1 | tail -n +2 | grep -v "^engine"; }
echo "== star7 f32 512^3, 16 threads: SHIFT / RSHIFT / PF knobs"
for round in 1 2; do
  for cfg in "0 0 -" "2048 2048 -" "1024 1024 -" "0 0 1" "2048 2048 1"; do
    set -- $cfg
    if [ "$3" = 1 ]; then export S35_PF=1; else unset S35_PF; fi
    echo "-- round $round shift $1 rshift $2 pf $3"
    S35_SHIFT=$1 S35_RSHIFT=$2 b --engine naive,blocked --dim-t 4 --tile 518x24 --tile-threads 1
  done
done
unset S35_PF
echo "[t=$(( $(date +%s)-t0 ))s]"
echo "== one thread"
for cfg in "0 0" "2048 2048"; do set -- $cfg; echo "-- shift $1"; S35_SHIFT=$1 S35_RSHIFT=$2 b --engine naive,blocked --threads 1 --dim-t 4 --tile 518x24 --tile-threads 1; done
echo "== planner defaults, shift 0 / 2048"
for sh in 0 2048 0 2048; do echo "-- shift $sh"; S35_SHIFT=$sh S35_RSHIFT=$sh b --engine naive,blocked; done
echo "[t=$(( $(date +%s)-t0 ))s]"
echo "== d3q19 f32 256^3 shift 0 / 2048"
for sh in 0 2048 0 2048; do echo "-- shift $sh"; S35_SHIFT=$sh $B bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | tail -2; done
echo "[t=$(( $(date +%s)-t0 ))s]"
