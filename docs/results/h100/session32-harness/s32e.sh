#!/usr/bin/env bash
# Session 32 run E: level 1's next-step input prefetched into L2 during the ring levels
# (S35D_FAR; S35D_FAR_BOTH keeps the ring rows' own prefetch too), ring rows without
# prefetch (S35D_NOPF), per-level cycles per node (S35D_PROF).
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d S35D_PROF=1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -2; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
$D/s-new $B --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"
T
for r in 1 2; do
for cfg in "3 262x14" "3 262x20" "4 264x16" "2 260x16"; do set -- $cfg
  for k in base S35D_FAR "S35D_FAR S35D_FAR_BOTH" S35D_NOPF; do echo "-- dim_T $1 $2 $k"; ( for v in $k; do export $v=1; done; b $D/s-new $B --engine blocked --dim-t $1 --tile $2 ); done
done
T
done
