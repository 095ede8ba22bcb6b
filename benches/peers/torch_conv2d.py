#!/usr/bin/env python3
"""Peer rates for 2D convolution on the GPU: PyTorch's conv2d (cuDNN) with one channel in and
out, f32, on an 8192x8192 image with 3x3, 5x5, 7x7 and 11x11 filters (padding='same'), and a
device-to-device copy of the image for the bandwidth ceiling. Each rate is the median of several
timed runs (CUDA events) after warm-ups; one JSON line per measurement with G pixels/s and GB/s
(the image read once and written once: 8 bytes per pixel in f32).

Usage: python3 torch_conv2d.py [--size N] [--filters 3,5,7,11] [--repeats 20]
"""

import argparse
import json
import statistics

import torch


def median_ms(fn, repeats, warmup=3):
    """Median of `repeats` timings of `fn` (milliseconds, CUDA events) after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def report(name, pixels, ms, extra):
    """One JSON line: G pixels/s and GB/s (8 bytes per pixel) of a run over `pixels` pixels."""
    gps = pixels / (ms * 1e-3) / 1e9
    line = {"peer": name, "g_pixels_per_s": round(gps, 2), "gb_per_s": round(8 * gps, 1), "ms": round(ms, 4)}
    line.update(extra)
    print(json.dumps(line), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--filters", default="3,5,7,11")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithm per shape
    n = args.size
    device = torch.device("cuda")
    gen = torch.Generator(device=device).manual_seed(1)
    image = torch.rand((1, 1, n, n), device=device, dtype=torch.float32, generator=gen)
    out = torch.empty_like(image)
    base = {"size": f"{n}x{n}", "dtype": "f32", "device": torch.cuda.get_device_name()}

    ms = median_ms(lambda: out.copy_(image), args.repeats)
    report("copy", n * n, ms, base)

    for k in (int(s) for s in args.filters.split(",")):
        weight = torch.rand((1, 1, k, k), device=device, dtype=torch.float32, generator=gen)
        weight /= weight.sum()
        conv = lambda: torch.nn.functional.conv2d(image, weight, padding="same")
        result = conv()
        assert result.shape == image.shape and torch.isfinite(result).all()
        ms = median_ms(conv, args.repeats)
        report("torch.conv2d", n * n, ms, dict(base, filter=f"{k}x{k}", cudnn=torch.backends.cudnn.version()))


if __name__ == "__main__":
    main()
