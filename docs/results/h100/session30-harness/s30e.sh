#!/usr/bin/env bash
# Session 30 run E: the stencil engine's next-plane prefetch forced on for whole-width strips
# (S35D_SPF_FORCE=1; 47956c7 asks for it only when tiles are narrower than the grid), with hint
# T0 or T2 (S35D_SPF_HINT). star7 f32 512^3, dim_T 4 518x30, 16 threads; four rounds.
cd "$(dirname "$0")/.."
D=.device/t30
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2 3 4; do
  echo "-- star7 f32 naive"; b $D/s-knob bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine naive
  for cfg in "0 0" "1 0" "1 2"; do set -- $cfg
    echo "-- star7 f32 dim_T 4 518x30 force $1 hint $2"; S35D_SPF_FORCE=$1 S35D_SPF_HINT=$2 b $D/s-knob bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3 --engine blocked --dim-t 4 --tile 518x30
  done
  T
done
for cfg in "0 0" "1 0" "1 2"; do set -- $cfg
  echo "-- star7 f64 dim_T 3 516x20 force $1 hint $2"; S35D_SPF_FORCE=$1 S35D_SPF_HINT=$2 b $D/s-knob bench --kernel star7 --dtype f64 --size 512 --steps 20 --repeat 3 --engine blocked --dim-t 3 --tile 516x20
done
T
