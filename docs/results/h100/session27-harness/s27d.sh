#!/usr/bin/env bash
# Session 27 run D: blocked only, five interleaved rounds: wide copies (stencil35d-v4x) against
# the halved last round of units (stencil35d-v4t), the latter also with 3 and 6 z chunks.
cd "$(dirname "$0")/.."
X=.device/stencil35d-v4x
N=.device/stencil35d-v4t
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
m() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)" | awk '{print $7}' | tr '\n' ' '; }
S="bench --kernel star7 --size 512 --steps 24 --repeat 5"
echo "naive f32: $(m $N $S --engine naive)"
for round in 1 2 3 4 5; do
  echo "f32 x $(m $X $S --engine blocked) t $(m $N $S --engine blocked) t-zc3 $(m $N $S --engine blocked --z-chunks 3) t-zc6 $(m $N $S --engine blocked --z-chunks 6)"
  echo "f64 x $(m $X $S --dtype f64 --engine blocked) t $(m $N $S --dtype f64 --engine blocked)"
  T
done
echo "naive f32: $(m $N $S --engine naive)"
