#!/usr/bin/env bash
# Session 33 run G: db6c5c1 (s-mmap: large buffers are their own madvised mappings) against
# 3fab005 (s-base), interleaved; smaps of a 256^3 bench.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
$D/s-mmap $B --engine blocked >/dev/null 2>&1 &
sleep 8; for p in $(pgrep -f "s-mmap bench"); do grep -E "AnonHuge|^Rss" /proc/$p/smaps_rollup; done; wait
for r in 1 2 3; do
  for v in s-base s-mmap; do echo "-- f32 $v"; b $D/$v $B --engine naive,blocked; done
done
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
for v in s-base s-mmap; do echo "-- f64 $v"; b $D/$v $B64 --engine naive,blocked; done
S="bench --kernel star7 --dtype f32 --size 512 --steps 20 --repeat 3"
for v in s-base s-mmap; do echo "-- star7 $v"; b $D/$v $S --engine naive,blocked; done
