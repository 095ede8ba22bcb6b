#!/usr/bin/env bash
# Session 32 run D: cycles per node of each level (S35D_PROF) against the strip's ring size, and
# non-temporal prefetch of level 1's lattice rows (S35D_NTA).
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d S35D_PROF=1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -2; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
$D/s-new $B --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"
T
for cfg in "3 262x20" "3 262x14" "3 262x10" "2 260x30" "2 260x16" "2 260x10" "4 264x16" "4 264x12"; do set -- $cfg
  for k in base S35D_NTA; do echo "-- new dim_T $1 $2 $k"; ( export $k=1; b $D/s-new $B --engine blocked --dim-t $1 --tile $2 ); done
done
T
for cfg in "3 262x20" "2 260x16"; do set -- $cfg
  echo "-- old dim_T $1 $2"; b $D/s-old $B --engine blocked --dim-t $1 --tile $2
done
$D/s-new $B --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"
S35D_NTA=1 $D/s-new $B --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"
T
