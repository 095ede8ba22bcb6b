#!/usr/bin/env bash
# Session 33 run A: CLDEMOTE of level 1's consumed lattice lines (S35D_DEMOTE=k vectors behind),
# the far L2 prefetch of level 1 (S35D_L2PF=32), both; planner's plan and dim_T 3 262x14.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -3; }
grep -o -w -E "cldemote|movdiri|serialize|amx_tile" /proc/cpuinfo | sort | uniq -c
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
for r in 1 2 3; do
  echo "== round $r"
  echo "-- base"; b $D/s-knob $B --engine naive,blocked
  echo "-- D2"; ( export S35D_DEMOTE=2; b $D/s-knob $B --engine blocked )
  echo "-- P32"; ( export S35D_L2PF=32; b $D/s-knob $B --engine blocked )
  echo "-- D2P32"; ( export S35D_DEMOTE=2 S35D_L2PF=32; b $D/s-knob $B --engine blocked )
  echo "-- 3x14"; b $D/s-knob $B --engine blocked --dim-t 3 --tile 262x14
  echo "-- 3x14 D2"; ( export S35D_DEMOTE=2; b $D/s-knob $B --engine blocked --dim-t 3 --tile 262x14 )
  echo "-- 3x14 D2P32"; ( export S35D_DEMOTE=2 S35D_L2PF=32; b $D/s-knob $B --engine blocked --dim-t 3 --tile 262x14 )
  T
done
echo "== profile"
for k in 0 2; do
  echo "-- prof D$k 260x26"; ( export S35D_PROF=1 S35D_DEMOTE=$k; b $D/s-knob $B --engine blocked )
  echo "-- prof D$k 3 262x14"; ( export S35D_PROF=1 S35D_DEMOTE=$k; b $D/s-knob $B --engine blocked --dim-t 3 --tile 262x14 )
done
T
echo "== f64"
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
echo "-- base"; b $D/s-knob $B64 --engine naive,blocked
echo "-- D2"; ( export S35D_DEMOTE=2; b $D/s-knob $B64 --engine blocked )
echo "-- P32"; ( export S35D_L2PF=32; b $D/s-knob $B64 --engine blocked )
echo "-- D2P32"; ( export S35D_DEMOTE=2 S35D_L2PF=32; b $D/s-knob $B64 --engine blocked )
echo "-- base"; b $D/s-knob $B64 --engine naive,blocked
T
