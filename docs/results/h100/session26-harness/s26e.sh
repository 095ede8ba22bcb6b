#!/usr/bin/env bash
# Session 26 run E: z chunks (S35_ZC=1: whole tiles as before; unset: the engine's choice; 6),
# star7 512^3 16 threads, interleaved rounds, with naive.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
for round in 1 2 3; do
  echo "== round $round"
  b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive
  for zc in 1 auto 6; do
    if [ $zc = auto ]; then unset S35_ZC; else export S35_ZC=$zc; fi
    echo -n "zc=$zc f32 4 518x24: "; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
    echo -n "zc=$zc f64 3 516x17: "; b $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 3 --tile 516x17 --tile-threads 1
  done
  unset S35_ZC
  T
done
for zc in 1 auto; do
  if [ $zc = auto ]; then unset S35_ZC; else export S35_ZC=$zc; fi
  for cfg in "3 516x38" "6 522x44" "4 518x40"; do set -- $cfg
    echo -n "zc=$zc f32 $1 $2: "; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1
  done
done
unset S35_ZC
echo "== defaults"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked; T
