#!/usr/bin/env bash
# Session 30 run D: knobs of an uncommitted build (47956c7 + knobs): the stencil engine's
# plane-ahead prefetch hint (S35D_SPF_HINT 0 T0, 1 T1, 2 T2, 3 NTA) and extra planes ahead
# (S35D_SPF_EXTRA); the lattice engine's level-1 prefetch of the next row's start (S35D_LPF=1)
# or of the next plane's row (S35D_LPF=2). Fixed plans, 16 threads.
cd "$(dirname "$0")/.."
D=.device/t30
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2 3; do
  echo "-- star7 f32 naive"; b $D/s-knob bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive
  for cfg in "0 0" "1 0" "2 0" "3 0" "0 2"; do set -- $cfg
    echo "-- star7 f32 dim_T 4 518x30 hint $1 extra $2"; S35D_SPF_HINT=$1 S35D_SPF_EXTRA=$2 b $D/s-knob bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine blocked --dim-t 4 --tile 518x30
  done
  T
  echo "-- d3q19 f32 naive"; b $D/s-knob bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive
  for l in 0 1 2; do
    echo "-- d3q19 f32 dim_T 3 262x20 lpf $l"; S35D_LPF=$l b $D/s-knob bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t 3 --tile 262x20
  done
  T
done
