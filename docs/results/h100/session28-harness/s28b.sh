#!/usr/bin/env bash
# Session 28 run B: what limits the blocked lattice engine on the host. Prefetch distance of
# the bulk loop (S35_PF bytes, 0 = none; experiment build), 1 and 16 threads, and a profile.
cd "$(dirname "$0")/.."
X=.device/t28/pf
export STENCIL35D_CACHE_DIR=/tmp/s35d
P() { .device/perf/ld-linux-x86-64.so.2 --library-path .device/perf .device/perf/perf "$@"; }
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
S="--kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for round in 1 2; do
  for pf in 128 0 256 512; do
    echo "-- 16 thr pf $pf default"; S35_PF=$pf b $X bench $S --engine naive,blocked
    echo "-- 16 thr pf $pf dim_T 3 262x12"; S35_PF=$pf b $X bench $S --engine blocked --dim-t 3 --tile 262x12
  done
  T
done
S1="--kernel d3q19 --dtype f32 --size 256x256x48 --steps 6 --repeat 3 --threads 1"
for pf in 128 0 512; do
  echo "-- 1 thr pf $pf"; S35_PF=$pf b $X bench $S1 --engine naive,blocked
  echo "-- 1 thr pf $pf dim_T 3 262x12"; S35_PF=$pf b $X bench $S1 --engine blocked --dim-t 3 --tile 262x12
done
T
echo "== perf record 16 threads dim_T 3 262x12"
P record -q -F 1999 -o $OUT/rec16.data -- $X bench $S --engine blocked --dim-t 3 --tile 262x12 2>&1 | grep -E "^blocked"
P report -i $OUT/rec16.data --stdio --sort sym 2>/dev/null | grep -vE "^#|^$" | head -16
P annotate -i $OUT/rec16.data --stdio 2>/dev/null > $OUT/annotate16.txt
ls -la $OUT
T
