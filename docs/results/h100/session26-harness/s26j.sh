#!/usr/bin/env bash
# Session 26 run J: the last level streamed with non-temporal stores (N) against the committed
# build 128ca40 (H), planner defaults, interleaved rounds; D3Q19 with 3 (default) / 6 z chunks.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
H=.device/stencil35d-v4h
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
for round in 1 2 3; do
  echo "== round $round"
  for x in H N; do eval B=\$$x
    for dt in f32 f64; do echo "-- $x star7 $dt"; b $B bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done
  done
  T
done
for round in 1 2 3; do
  echo "== d3q19 round $round"
  b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine naive
  for zc in 3 6; do echo -n "z $zc: "; b $N bench --kernel d3q19 --size 256 --steps 12 --repeat 3 --engine blocked --z-chunks $zc; done
done
T
