#!/usr/bin/env bash
# Session 33 run B: AlignedBuf asks for huge pages before its first write (s-huge) against the
# committed code (s-knob with knobs off); strips by hand on s-huge; per-level profile.
cd "$(dirname "$0")/.."
D=.device/t33
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 100 "$@" 2>&1 | grep -E "^(naive|blocked)|PROF" | tail -3; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3"
( $D/s-huge $B --engine blocked >/dev/null 2>&1 & p=$!; sleep 7; grep -E "AnonHuge|^Rss" /proc/$p/smaps_rollup; wait )
( $D/s-knob $B --engine blocked >/dev/null 2>&1 & p=$!; sleep 7; grep -E "AnonHuge|^Rss" /proc/$p/smaps_rollup; wait )
T
for r in 1 2 3; do
  echo "== round $r"
  for v in s-knob s-huge; do echo "-- $v"; b $D/$v $B --engine naive,blocked; done
  T
done
echo "== strips (s-huge)"
for cfg in "3 262x14" "3 262x20" "3 262x30" "2 260x16" "2 260x40" "4 264x16" "4 264x24"; do set -- $cfg
  echo "-- dim_T $1 $2"; b $D/s-huge $B --engine blocked --dim-t $1 --tile $2
done
T
echo "== profile s-huge"
( export S35D_PROF=1; b $D/s-huge $B --engine blocked; b $D/s-huge $B --engine blocked --dim-t 3 --tile 262x14 )
T
echo "== f64"
B64="bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3"
for r in 1 2; do
  for v in s-knob s-huge; do echo "-- $v"; b $D/$v $B64 --engine naive,blocked; done
done
T
echo "== closing f32"
for v in s-knob s-huge; do echo "-- $v"; b $D/$v $B --engine naive,blocked; done
T
