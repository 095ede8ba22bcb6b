#!/usr/bin/env bash
# Session 32 run A: where the lattice kernel's time goes on the 16-core host.
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d GHZ=2.1
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
lscpu | grep -E "Model name|MHz|Flags" | cut -c1-400
grep -m1 "model\s*:" /proc/cpuinfo; grep -m1 "stepping" /proc/cpuinfo
which perf gdb objdump valgrind 2>&1 | head
cat /proc/sys/kernel/perf_event_paranoid
$D/stencil35d probe 2>&1 | tail -25
T
echo "== one thread, naive, periodic (in L2 / L3 / memory)"
for s in 130x8x4 130x16x4 258x8x4 130x16x16 130x64x32 258x128x64; do timeout 60 $D/lbm_micro $s 1 naive periodic; done
T
echo "== 16 threads naive periodic"
for s in 130x16x64 130x16x256 258x128x128; do timeout 60 $D/lbm_micro $s 16 naive periodic; done
T
echo "== bench baseline"
for r in 1 2; do timeout 120 $D/stencil35d bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"; done
T
echo "== blocked one thread walls 256x256x64"
for cfg in "2 260x12" "3 262x20" "4 264x24" "6 268x24"; do set -- $cfg; timeout 60 $D/lbm_micro 256x256x64 1 blocked walls $1 $2; done
T
if which perf >/dev/null 2>&1; then
  perf stat -e cycles,instructions,L1-dcache-load-misses,LLC-load-misses -- $D/lbm_micro 130x16x4 1 naive periodic 2>&1 | tail -15
fi
T
