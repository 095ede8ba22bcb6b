#!/usr/bin/env bash
# Builds everything a GPU machine without a Rust toolchain needs into .device/ (git-ignored):
# the release CLI (one build: the CPU engines pick their SIMD level at run time), every test
# binary, and .device/run.sh, which runs them there. Copy .device/ to the GPU machine. Usage:
#   scripts/gpu-bundle.sh            # here: build and bundle
#   .device/run.sh tests             # on the GPU machine: all test suites (GPU ones included)
#   .device/run.sh bench [args...]   # on the GPU machine: stencil35d bench with the given args
#   .device/run.sh compare --size 256 --steps 20 --out "$OUT/compare"   # the README's GPU table
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
rm -rf "$out"
mkdir -p "$out/tests"
cargo build --release
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])' \
  | while read -r kind name exe; do
      cp "$exe" "$out/tests/$kind-$name"
    done
cp target/release/stencil35d "$out/stencil35d"
strip --strip-debug "$out"/stencil35d* "$out"/tests/*
cp scripts/device-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
du -sh "$out"
