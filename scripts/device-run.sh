#!/usr/bin/env bash
# Runs the binaries bundled by scripts/gpu-bundle.sh on a GPU machine (no Rust needed).
#   run.sh tests [filter]      every test suite, GPU suites included
#   run.sh tests SUITE [filter] one suite (gpu_lbm: tests/test-gpu_lbm; lib-stencil35d: unit tests)
#   run.sh bench [args...]     stencil35d bench ...      (run.sh cli <subcommand> ... for others)
#   run.sh compare [args...]   stencil35d compare ...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# NVRTC ships with the CUDA toolkit (or the nvidia-cuda-nvrtc Python wheel); put it on the path.
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
  if ls "$dir"/libnvrtc.so* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}"
    break
  fi
done
export STENCIL35D_CACHE_DIR="${STENCIL35D_CACHE_DIR:-/tmp/stencil35d-cache}"
cmd=${1:-tests}
shift || true
case "$cmd" in
  tests)
    # On the GPU machine a test that finds no GPU fails instead of skipping (tests/gpu_common).
    export STENCIL35D_REQUIRE_GPU=1
    status=0
    suites=("$here"/tests/*)
    if [ $# -gt 0 ] && [ -x "$here/tests/test-$1" ]; then
      suites=("$here/tests/test-$1")
      shift
    elif [ $# -gt 0 ] && [ -x "$here/tests/$1" ]; then
      suites=("$here/tests/$1")
      shift
    fi
    for t in "${suites[@]}"; do
      echo "== $(basename "$t")"
      "$t" --test-threads="${TEST_THREADS:-8}" "$@" 2>&1 | grep -E "^test |test result|panicked|skipping|max rel err|GPU:|mass drift|blow-up" || status=1
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    exit $status ;;
  bench) exec "$here/stencil35d" bench "$@" ;;
  cli) exec "$here/stencil35d" "$@" ;;
  compare)
    exec "$here/stencil35d" compare "$@" ;;
  *) echo "usage: run.sh tests|bench|compare|cli ..." >&2; exit 2 ;;
esac
