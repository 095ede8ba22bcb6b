#!/usr/bin/env bash
# Session 26 run D: when each thread finishes its tiles within a pass (S35_END), 16 and 8 threads,
# real and fake memory; naive for reference.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d STENCIL35D_PF=0 S35_END=1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked|pass)" | tail -8; }
uptime; top -bn1 | head -15
for th in 16 8; do
  for f in 0 1; do
    if [ $f = 1 ]; then export S35_FAKE=1; else unset S35_FAKE; fi
    echo "th $th fake=$f 518x24:"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 1 --threads $th --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
  done
  T
done
unset S35_FAKE
echo "th 15 518x24:"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 1 --threads 15 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
echo "th 16 518x24 512x512x1024:"; b $N bench --kernel star7 --size 512x512x1024 --steps 24 --repeat 1 --threads 16 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
echo "th 16 518x12:"; b $N bench --kernel star7 --size 512 --steps 24 --repeat 1 --threads 16 --engine blocked --dim-t 4 --tile 518x12 --tile-threads 1
T
