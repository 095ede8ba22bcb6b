#!/usr/bin/env bash
# Session 33 run H: 84d56bf (s-pop: large buffers populated at allocation) against 3fab005
# (s-base); its unit tests for the allocator and the lattice on the host; smaps of a bench.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
$D/libtests aligned 2>&1 | grep -E "^test |test result"
$D/libtests lbm:: 2>&1 | grep -E "test result|FAIL|panicked" | head -5
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
$D/s-pop $B --engine blocked >/dev/null 2>&1 &
sleep 8; for p in $(pgrep -f "s-pop bench"); do grep -E "AnonHuge|^Rss" /proc/$p/smaps_rollup; done; wait
for r in 1 2 3; do
  for v in s-base s-pop; do echo "-- f32 $v"; b $D/$v $B --engine naive,blocked; done
done
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
for v in s-base s-pop; do echo "-- f64 $v"; b $D/$v $B64 --engine naive,blocked; done
