#!/usr/bin/env python3
"""Times OpenCV's filter2D on the filters stencil35d benchmarks, for a side-by-side comparison
with `stencil35d bench --kernel conv2d:KxL`.

Prints one JSON line per filter and size: {"peer": "opencv-filter2d", "filter", "size",
"threads", "dtype", "border", "seconds" (median), "min_seconds", "mpix_s" (from the median)}.

The `dense:KxL` weights are those of stencil35d's `Filter2::from_name("dense:KxL")` (the same
linear congruential sequence, normalised to sum one), so both sides run the same non-separable
filter; `gaussian:K` and `mean:K` follow OpenCV's own definitions. The border is
BORDER_REFLECT_101 (OpenCV's default and stencil35d's `Border::Reflect101`), the image uniform
random f32 (or f64) in [0, 1).

    pip install opencv-python-headless
    python3 benches/peers/opencv_filter2d.py --filters dense:5x5,dense:7x7 --size 4096x4096 \
        --threads 2 --repeats 9
"""

import argparse
import json
import statistics
import time

import cv2
import numpy as np

MASK64 = (1 << 64) - 1


def dense_weights(kw, kh):
    """The weights of stencil35d's `dense:KxL` filter, kh rows of kw."""
    state = 0x2545F491
    raw = []
    for _ in range(kw * kh):
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK64
        raw.append(0.5 + (state >> 40) / float(1 << 24))
    total = sum(raw)
    return np.array([v / total for v in raw], dtype=np.float64).reshape(kh, kw)


def parse_size(text):
    """`K` or `KxL` as (K, L)."""
    a, _, b = text.partition("x")
    return int(a), int(b or a)


def make_filter(name):
    """The weights (kh rows of kw) of a named filter."""
    kind, _, arg = name.partition(":")
    kw, kh = parse_size(arg)
    if kind == "dense":
        return dense_weights(kw, kh)
    if kind == "mean":
        return np.full((kh, kw), 1.0 / (kw * kh))
    if kind == "gaussian":
        g = cv2.getGaussianKernel(kw, 0)
        return g @ g.T
    raise SystemExit(f"unknown filter '{name}' (expected dense:KxL, mean:KxL or gaussian:K)")


def time_filter(image, weights, repeats):
    """Seconds of each of `repeats` filter2D calls, after one warm-up call."""
    depth = cv2.CV_32F if image.dtype == np.float32 else cv2.CV_64F
    kernel = weights.astype(image.dtype)
    out = np.empty_like(image)
    cv2.filter2D(image, depth, kernel, dst=out, borderType=cv2.BORDER_REFLECT_101)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        cv2.filter2D(image, depth, kernel, dst=out, borderType=cv2.BORDER_REFLECT_101)
        times.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--filters", default="dense:5x5,dense:7x7")
    parser.add_argument("--size", default="4096x4096", help="WxH")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    args = parser.parse_args()

    cv2.setNumThreads(args.threads)
    width, height = parse_size(args.size)
    dtype = np.float32 if args.dtype == "f32" else np.float64
    image = np.random.default_rng(1).random((height, width)).astype(dtype)
    for name in args.filters.split(","):
        times = time_filter(image, make_filter(name), args.repeats)
        median = statistics.median(times)
        print(
            json.dumps(
                {
                    "peer": "opencv-filter2d",
                    "opencv": cv2.__version__,
                    "filter": name,
                    "size": f"{width}x{height}",
                    "threads": args.threads,
                    "dtype": args.dtype,
                    "border": "reflect101",
                    "seconds": median,
                    "min_seconds": min(times),
                    "mpix_s": width * height / median / 1e6,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
