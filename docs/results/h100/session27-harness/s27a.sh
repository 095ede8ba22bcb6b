#!/usr/bin/env bash
# Session 27 run A: PMU check and perf counters of the blocked engine; tile shapes on the host.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
P() { .device/perf/ld-linux-x86-64.so.2 --library-path .device/perf .device/perf/perf "$@"; }
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
ls /sys/bus/event_source/devices/ ; grep -o -w "arch_perfmon" /proc/cpuinfo | head -1
P stat -e cycles,instructions true 2>&1 | tail -6
$N plan --kernel star7 --size 512 --engine blocked 2>&1 | grep -E "dim_T|tile groups"
S="bench --kernel star7 --size 512x512x256 --steps 24 --repeat 3"
for th in 1 16; do
  for e in naive blocked; do
    echo "== perf stat $e $th threads"
    P stat -D 2500 -e cycles,instructions,L1-dcache-load-misses,LLC-load-misses,LLC-loads -- $N $S --threads $th --engine $e 2>&1 | grep -E "^(naive|blocked)|cycles|instr|misses|loads|elapsed"
    P stat -D 2500 -e cycle_activity.stalls_l1d_miss,cycle_activity.stalls_l2_miss,cycle_activity.stalls_l3_miss,cycle_activity.stalls_total,l2_rqsts.references,l2_rqsts.miss,l1d.replacement -- $N $S --threads $th --engine $e 2>&1 | grep -vE "^\s*$|^engine|^star"
  done
  T
done
echo "== perf record blocked 1 thread"
P record -q -F 1999 -o $OUT/rec1.data -- $N $S --threads 1 --engine blocked 2>&1 | grep -E "^blocked"
P report -i $OUT/rec1.data --stdio --sort sym 2>/dev/null | grep -vE "^#|^$" | head -12
P annotate -i $OUT/rec1.data --stdio 2>/dev/null | head -5
T
echo "== star7 f32 defaults"
for round in 1 2; do b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
T
echo "== star7 f32 tiles, dim_T 4, 16 threads"
for tile in 518x30 262x30 262x60 134x60 390x40 518x30:2; do
  t=${tile%%:*}; tt=1; [ "$tile" != "$t" ] && tt=${tile##*:}
  echo -n "$tile: "; b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile $t --tile-threads $tt
done
T
echo "== d3q19 f32"
b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive,blocked
for cfg in "2 260x12" "2 132x12" "2 260x6" "3 262x20" "3 134x30" "2 196x16"; do set -- $cfg
  echo -n "dim_T $1 $2: "; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2
done
T
