#!/usr/bin/env bash
# Session 26 run C: topology; fake-memory engine (S35_FAKE) and real engine across thread counts
# and tile heights; the plane probe at 1-16 threads.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d STENCIL35D_PF=0
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -1; }
lscpu -e | head -20
for c in 0 1 8; do echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list) L2 shared $(cat /sys/devices/system/cpu/cpu$c/cache/index2/shared_cpu_list) L1 $(cat /sys/devices/system/cpu/cpu$c/cache/index0/size)"; done
grep -m1 MHz /proc/cpuinfo
for th in 1 2 4 8 16; do
  for f in 1 0; do
    if [ $f = 1 ]; then export S35_FAKE=1; else unset S35_FAKE; fi
    for t in 518x24 518x12; do
      echo -n "th $th fake=$f $t: "; b $N bench --kernel star7 --size 512x512x256 --steps 24 --repeat 3 --threads $th --engine blocked --dim-t 4 --tile $t --tile-threads 1
    done
  done
  unset S35_FAKE
  echo -n "th $th fake=0 518x24 no-pin: "; b $N bench --kernel star7 --size 512x512x256 --steps 24 --repeat 3 --threads $th --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1 --no-pin
  T
done
for th in 2 8; do PROBE_THREADS=$th timeout 120 .device/t26/lib --ignored --exact cpu::rows::tests::plane_sweep_speed --nocapture 2>&1 | grep MUPS | head -4; done
T
