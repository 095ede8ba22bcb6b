#!/usr/bin/env bash
# Session 28 run C: the lattice bulk loop's software prefetch distance, separately for rows read
# from the lattice in memory (S35_PF_MEM bytes) and from ring buffers (S35_PF_RING; 0 = none);
# experiment build, planner defaults, 16 threads, interleaved rounds.
cd "$(dirname "$0")/.."
X=.device/t28/pf2
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)" | awk '{printf "%s %s %s | ", $1, $4, $7} END {print ""}'; }
for round in 1 2 3; do
  for c in "128 128" "256 0" "512 0" "256 128" "512 128" "1024 0" "256 256"; do set -- $c
    echo -n "f32 mem $1 ring $2: "; S35_PF_MEM=$1 S35_PF_RING=$2 b $X bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for round in 1 2; do
  for c in "128 128" "256 0" "512 0" "512 128"; do set -- $c
    echo -n "f64 mem $1 ring $2: "; S35_PF_MEM=$1 S35_PF_RING=$2 b $X bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
