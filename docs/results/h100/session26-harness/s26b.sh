#!/usr/bin/env bash
# Session 26 run B: per-level cycle shares (S35_CYC, thread 0) with the real grid and with level 0
# read from four cached planes and the last level written to a private scratch (S35_FAKE);
# the plane-sweep probe at 1 and 16 threads.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d STENCIL35D_PF=0 S35_CYC=1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked|cycles)" | tail -2 | tr '\n' ' '; echo; }
for th in 16 1; do
  sz=512; [ $th = 1 ] && sz=512x512x128
  for round in 1 2; do
    for t in "4 518x24" "4 518x16" "4 262x24" "3 516x17" "6 522x44"; do set -- $t
      for f in 0 1; do
        if [ $f = 1 ]; then export S35_FAKE=1; else unset S35_FAKE; fi
        echo -n "th $th fake=$f dim_T $1 $2: "; b $N bench --kernel star7 --size $sz --steps 24 --repeat 3 --threads $th --engine blocked --dim-t $1 --tile $2 --tile-threads 1
      done
    done
    T
  done
done
unset S35_FAKE
for th in 1 16; do PROBE_THREADS=$th timeout 120 .device/t26/lib --ignored --exact cpu::rows::tests::plane_sweep_speed --nocapture 2>&1 | grep MUPS; done
PROBE_THREADS=1 timeout 60 .device/t26/lib --ignored --exact cpu::rows::tests::row_kernel_speed --nocapture 2>&1 | grep width
T
