#!/usr/bin/env bash
# Session 33 run E: streams microbenchmark (session33-harness/streams.c): TSC cycles per 64-byte
# line per stream for L2-sized read/write stream sets, one core, then 16 cores at once.
cd "$(dirname "$0")/.."
D=.device/t33
for kb in 256 512 1024 1536 3072; do taskset -c 3 $D/streams $kb; done
echo "== 16 at once, 1024 KB each"
for c in $(seq 0 15); do taskset -c $c $D/streams 1024 > /tmp/st$c.txt & done; wait
cat /tmp/st0.txt /tmp/st7.txt /tmp/st15.txt
