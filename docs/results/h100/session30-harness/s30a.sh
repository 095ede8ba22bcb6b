#!/usr/bin/env bash
# Session 30 run A: lattice prefetch distance (S35D_PF_AHEAD bytes) and output-row prefetch (S35D_PF_OUT).
cd "$(dirname "$0")/.."
D=.device/t30
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
lscpu | grep -E "Model name|MHz"
$D/s-exp plan --kernel d3q19 --dtype f32 --size 256 2>&1 | grep -E "^(balance|\*)"
T
for round in 1 2 3; do
  for cfg in "128 0" "128 1" "256 0" "256 1" "512 0" "512 1"; do set -- $cfg
    echo "-- f32 ahead $1 out $2"; S35D_PF_AHEAD=$1 S35D_PF_OUT=$2 b $D/s-exp bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
for cfg in "128 0" "256 1" "512 1"; do set -- $cfg
  echo "-- f32 1 thread ahead $1 out $2"; S35D_PF_AHEAD=$1 S35D_PF_OUT=$2 b $D/s-exp bench --kernel d3q19 --dtype f32 --size 256 --steps 3 --repeat 3 --engine naive,blocked --threads 1
done
T
for round in 1 2; do
  for cfg in "128 0" "256 1" "512 1"; do set -- $cfg
    echo "-- f64 ahead $1 out $2"; S35D_PF_AHEAD=$1 S35D_PF_OUT=$2 b $D/s-exp bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked
  done
  T
done
