#!/usr/bin/env bash
# Builds everything a GPU machine without a Rust toolchain needs into .device/ (git-ignored):
# the release CLI (x86-64-v3, plus an x86-64-v4 / AVX-512 build), every test binary, and
# .device/run.sh, which runs them there. Usage:
#   scripts/gpu-bundle.sh            # here: build and bundle
#   .device/run.sh tests             # on the GPU machine: all test suites (GPU ones included)
#   .device/run.sh bench [args...]   # on the GPU machine: stencil35d bench with the given args
#   .device/run.sh compare --size 256 --steps 20 --out "$OUT/compare"   # the README's GPU table
# With the `device` tool: run `.device/run.sh ...` with carry [".device"].
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
rm -rf "$out"
mkdir -p "$out/tests"
# Portable builds: .cargo/config.toml targets the build machine's own CPU, which the GPU
# machine's need not have.
export RUSTFLAGS="-C target-cpu=x86-64-v3"
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
if [ "${NO_V4:-}" = "" ]; then
  # An explicit --target keeps these flags off the build scripts, which run here.
  RUSTFLAGS="-C target-cpu=x86-64-v4" cargo build --release --bin stencil35d \
    --target x86_64-unknown-linux-gnu --target-dir target/v4
  cp target/v4/x86_64-unknown-linux-gnu/release/stencil35d "$out/stencil35d-v4"
fi
strip --strip-debug "$out"/stencil35d* "$out"/tests/*
cp scripts/device-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
du -sh "$out"
