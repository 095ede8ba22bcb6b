#!/bin/bash
# Session 35 run A: x-face own lines prefetched at the row start (S35D_EDGEPF knob build of
# s-epf = ef48da7 plus the knob): 0 = none (ef48da7), 1 = the face nodes' own lines, 3 = both ends' two lines
# when the end node is not plain fluid. D3Q19 256^3, 16 threads, alternated in one boot.
cd "$(dirname "$0")/.."
D=.device/t35
P() { .device/perf/lib/ld-linux-x86-64.so.2 --library-path .device/perf/lib .device/perf/perf "$@"; }
b() { env S35D_EDGEPF=$1 $D/s-epf bench --kernel d3q19 --dtype $2 --size 256 --steps 12 --repeat 3 --engine naive,blocked 2>&1 | grep -E '^(naive|blocked)' | sed "s/^/k=$1 $2 /"; }
for r in 1 2 3 4; do
  echo "== round $r [t=${SECONDS}s]"
  b 0 f32; b 1 f32; b 3 f32
done
echo "== f64 [t=${SECONDS}s]"
for r in 1 2; do b 0 f64; b 1 f64; done
for k in 0 1; do
  echo "== perf record blocked k=$k [t=${SECONDS}s]"
  S35D_EDGEPF=$k P record -q -o /tmp/p$k.data -e cpu-clock -- $D/s-epf bench --kernel d3q19 --dtype f32 --size 256 --steps 24 --repeat 2 --engine blocked 2>&1 | grep -E '^blocked'
  P report -i /tmp/p$k.data --no-children --sort symbol --stdio 2>/dev/null | grep -v "^#" | grep "%" | sed 's/  \+/ /g' | head -16
done
P annotate -i /tmp/p1.data --stdio -s 'stencil35d::lbm::blocked::Pass<T>::work::{{closure}}' 2>/dev/null | grep -E "^\s+[0-9]+\.[0-9]+ :" | sort -rn | head -40 > $OUT/work-annotate.txt
echo "done [t=${SECONDS}s]"
