#!/usr/bin/env bash
# Session 26 run A: spread software prefetch (STENCIL35D_PF=0 off / 1 T1 / 2 T2) on the host.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
lscpu | grep -E "Model name|L2|L3|^CPU\(s\)"
timeout 120 $N plan --kernel star7 --size 512 --engine blocked 2>&1 | tail -25; T
for round in 1 2 3; do
  echo "== round $round: f32 512^3 16 threads naive, then dim_T 4 518x24 PF 0/1/2"
  b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive
  for pf in 0 1 2; do echo -n "PF=$pf "; STENCIL35D_PF=$pf b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1; done
  T
done
echo "== L3-resident 512x256x128 f32: naive, PF 0/1"
for round in 1 2; do
  b $N bench --kernel star7 --size 512x256x128 --steps 48 --repeat 3 --engine naive
  for pf in 0 1; do echo -n "PF=$pf "; STENCIL35D_PF=$pf b $N bench --kernel star7 --size 512x256x128 --steps 48 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1; done
done; T
echo "== deeper / taller, PF 0/1"
for cfg in "4 518x40" "6 522x40" "8 526x48" "6 522x64"; do set -- $cfg
  for pf in 0 1; do echo -n "PF=$pf dim_T $1 $2 "; STENCIL35D_PF=$pf b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done
done; T
echo "== f64 dim_T 3 516x17 and 6 522x44, PF 0/1"
b $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine naive
for cfg in "3 516x17" "6 522x44"; do set -- $cfg
  for pf in 0 1; do echo -n "PF=$pf dim_T $1 $2 "; STENCIL35D_PF=$pf b $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1; done
done; T
echo "== one thread 512x512x128 f32 naive, PF 0/1"
b $N bench --kernel star7 --size 512x512x128 --steps 8 --repeat 3 --threads 1 --engine naive
for pf in 0 1 0 1; do echo -n "PF=$pf "; STENCIL35D_PF=$pf b $N bench --kernel star7 --size 512x512x128 --steps 8 --repeat 3 --threads 1 --engine blocked --dim-t 4 --tile 518x24; done; T
