#!/bin/bash
# Session 35 run G (another boot): what the probes saw and the plan they give, then dim_T 2
# 260x30 against dim_T 3 262x20 forced, one-thread strips, alternated (s-fw2 = 2830384),
# D3Q19 f32 256^3, 16 threads.
cd "$(dirname "$0")/.."
D=.device/t35
$D/s-fw2 probe 2>&1 | tail -25
$D/s-fw2 plan --kernel d3q19 --dtype f32 --size 256 2>&1 | grep -E "^(choice|predict|balance|\*|  blocked|  naive|         dim_T)"
b() { $D/s-fw2 bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine blocked --dim-t $1 --tile $2 --tile-threads 1 2>&1 | grep -E '^blocked'; }
for r in 1 2 3 4 5; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then b 2 260x30; b 3 262x20; else b 3 262x20; b 2 260x30; fi
done
$D/s-fw2 bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive 2>&1 | grep -E '^naive'
echo "done [t=${SECONDS}s]"
