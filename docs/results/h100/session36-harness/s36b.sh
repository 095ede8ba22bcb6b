#!/bin/bash
# Session 36 run B: s-base = 2e55ffc; s-new = the general-vector change (populations in
# registers, SIMD link masks, the row's first vector computed last, the end vectors' links and
# bounce rows prefetched at the row start, vector() out of line); s-inl = s-new with vector()
# inlined (three copies per row function); s-noface = s-new without the last level's face-wall
# copy (wrong walls: an upper bound for a cheaper copy). D3Q19 256^3, 16 threads, issue command.
cd "$(dirname "$0")/.."
D=.device/t36b
P() { .device/perf/lib/ld-linux-x86-64.so.2 --library-path .device/perf/lib .device/perf/perf "$@"; }
b() { $D/$1 bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/$1 $2 /"; }
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  if [ $((r % 2)) = 1 ]; then
    b s-base f32; b s-new f32; b s-inl f32; b s-noface f32
  else
    b s-noface f32; b s-inl f32; b s-new f32; b s-base f32
  fi
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2; do b s-base f64; b s-new f64; done
echo "== perf record s-new blocked f32 [t=${SECONDS}s]"
P record -q -o /tmp/pn.data -e cpu-clock -- $D/s-new bench --kernel d3q19 --dtype f32 --size 256 --steps 36 --repeat 2 --engine blocked 2>&1 | grep -E '^blocked'
P report -i /tmp/pn.data --no-children --sort symbol --stdio 2>/dev/null | grep -v "^#" | grep "%" | sed 's/  \+/ /g' | head -16
echo "done [t=${SECONDS}s]"
