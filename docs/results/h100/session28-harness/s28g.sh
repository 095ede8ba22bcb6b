#!/usr/bin/env bash
# Session 28 run G: units claimed chunk-major (S35_CMAJ set: the concurrent groups work on the
# same z chunk of neighbouring tiles, so ghost rows one tile reads from memory are the rows its
# neighbours read at about the same time) against tile-major (as committed); experiment build
# of 9f452b1, interleaved, three rounds.
cd "$(dirname "$0")/.."
X=.device/t28/cmaj
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)" | awk '{printf "%s %s %s %s | ", $1, $4, $5, $7} END {print ""}'; }
for round in 1 2 3; do
  for k in "d3q19 f32 256 12" "star7 f32 512 24"; do set -- $k
    echo -n "tile-major  $1 $2: "; b $X bench --kernel $1 --dtype $2 --size $3 --steps $4 --repeat 3 --engine naive,blocked
    echo -n "chunk-major $1 $2: "; S35_CMAJ=1 b $X bench --kernel $1 --dtype $2 --size $3 --steps $4 --repeat 3 --engine naive,blocked
  done
  T
done
