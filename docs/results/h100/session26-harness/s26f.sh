#!/usr/bin/env bash
# Session 26 run F: row loop aligned to the vector size (new) against the z-chunk build without
# it (C), interleaved rounds, 16 threads and 1 thread; naive with each build.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
C=.device/stencil35d-v4c
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 90 "$@" 2>&1 | grep -E "^(naive|blocked)" | tail -2; }
for round in 1 2 3; do
  echo "== round $round"
  for x in C N; do eval B=\$$x
    echo -n "$x naive f32: "; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive
    echo -n "$x f32 4 518x24: "; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
    echo -n "$x f64 3 516x17: "; b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 3 --tile 516x17 --tile-threads 1
  done
  T
done
for x in C N C N; do eval B=\$$x
  echo -n "$x 1 thread f32 4 518x24: "; b $B bench --kernel star7 --size 512x512x128 --steps 8 --repeat 3 --threads 1 --engine blocked --dim-t 4 --tile 518x24
done
for x in C N; do eval B=\$$x
  echo -n "$x f32 4 262x24: "; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 262x24 --tile-threads 1
  echo -n "$x f32 6 522x44: "; b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 6 --tile 522x44 --tile-threads 1
done
T
echo "== N defaults"; for dt in f32 f64; do b $N bench --kernel star7 --dtype $dt --size 512 --steps 24 --repeat 3 --engine naive,blocked; done; T
