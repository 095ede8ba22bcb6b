#!/usr/bin/env bash
# Session 28 run F: 08c5de3 (compute probes cached per SIMD width). The AVX2 build (v3) runs
# first and measures its probes, then the AVX-512 build (v4) must measure its own: both plans,
# then both builds' defaults interleaved; the lib's plan/cpu/lbm units on the host.
cd "$(dirname "$0")/.."
V3=.device/t28/v3; V4=.device/t28/new
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
echo "-- lib plan:: cpu:: lbm:: finite grid::"; timeout 200 .device/t28/lib --test-threads 8 plan:: cpu:: lbm:: finite grid:: 2>&1 | grep -E "test result|panicked|FAILED"
T
for v in v3 v4; do
  B=$V4; [ $v = v3 ] && B=$V3
  echo "-- $v plan d3q19 f32"; $B plan --kernel d3q19 --dtype f32 --size 256 2>&1 | grep -E "^(balance|choice|  *dim_T)"
done
T
for round in 1 2; do
  for k in "d3q19 f32 256 12" "star7 f32 512 24" "star7 f64 512 24"; do set -- $k
    for v in v3 v4; do
      B=$V4; [ $v = v3 ] && B=$V3
      echo "-- $v $1 $2"; b $B bench --kernel $1 --dtype $2 --size $3 --steps $4 --repeat 3 --engine naive,blocked
    done
  done
  T
done
