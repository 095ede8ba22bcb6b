#!/usr/bin/env bash
# Session 32 run B: hardware counters on the lattice kernel (perf carried in .device/perf).
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d GHZ=2.1
P() { .device/perf/lib/ld-linux-x86-64.so.2 --library-path .device/perf/lib .device/perf/perf "$@"; }
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
grep -o -w -E "arch_perfmon|pdcm|avx512f|avx512_fp16|amx_tile" /proc/cpuinfo | sort | uniq -c
ls /sys/bus/event_source/devices/; cat /sys/bus/event_source/devices/cpu/caps/pmu_name 2>/dev/null
P stat -e cycles,instructions,ref-cycles true 2>&1 | tail -8
EV="cycles,instructions,ref-cycles"
EV="$EV,cpu/event=0x03,umask=0x04,name=ld_alias/,cpu/event=0x03,umask=0x82,name=ld_stfwd/"
EV="$EV,cpu/event=0xc1,umask=0x02,name=assist_fp/,cpu/event=0xd0,umask=0x41,name=split_ld/"
EV="$EV,cpu/event=0xa3,umask=0x04,cmask=0x04,name=stall_total/,cpu/event=0xa3,umask=0x0c,cmask=0x0c,name=stall_l1miss/"
EV="$EV,cpu/event=0xa3,umask=0x05,cmask=0x05,name=stall_l2miss/,cpu/event=0xa2,umask=0x08,name=stall_sb/"
EV="$EV,cpu/event=0xc3,umask=0x01,cmask=1,edge=1,name=mclear/,cpu/event=0x48,umask=0x02,name=fb_full/"
EV="$EV,cpu/event=0xae,umask=0x01,name=uops_issued/,cpu/event=0xc7,umask=0x80,name=fp512_ps/"
EV="$EV,cpu/event=0x79,umask=0x04,name=mite_uops/,cpu/event=0x79,umask=0x08,name=dsb_uops/"
EV="$EV,cpu/event=0xd1,umask=0x02,name=l2_hit/,cpu/event=0xd1,umask=0x08,name=l1_miss/"
EV="$EV,cpu/event=0xa2,umask=0x02,name=stall_scoreboard/,cpu/event=0xc1,umask=0x1b,name=assist_any/"
for s in 130x16x4 258x128x64; do
  echo "== perf micro $s 1 thread naive periodic"
  WORK=200000000 P stat -e $EV -- $D/lbm_micro $s 1 naive periodic 2>&1 | tail -30
  T
done
echo "== perf micro 256x256x64 1 thread blocked walls dim_T 3 262x20"
WORK=100000000 P stat -e $EV -- $D/lbm_micro 256x256x64 1 blocked walls 3 262x20 2>&1 | tail -30
T
echo "== perf bench blocked 16 threads cavity 256 (whole process)"
P stat -e $EV -- $D/stencil35d bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked 2>&1 | grep -v "^$" | tail -32
T
echo "== perf bench naive 16 threads"
P stat -e $EV -- $D/stencil35d bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive 2>&1 | grep -v "^$" | tail -32
T
echo "== knobs: FTZ and no source prefetch"
for r in 1 2; do
  for k in base S35D_FTZ S35D_NOPF; do
    echo "-- $k"; env $k=1 $D/stencil35d bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"
  done
done
T
for k in base S35D_NOPF; do echo "-- $k"; env $k=1 WORK=200000000 $D/lbm_micro 130x16x4 1 naive periodic; done
echo "== perf record micro in L2"
WORK=200000000 P record -q -o /tmp/m.data -e cycles -- $D/lbm_micro 130x16x4 1 naive periodic 2>&1 | tail -2
P annotate -i /tmp/m.data --stdio 2>/dev/null | grep -v "^\s*0.00 :" | head -700 > $OUT/annotate.txt
P report -i /tmp/m.data --stdio 2>/dev/null | head -40
T
