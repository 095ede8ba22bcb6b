#!/usr/bin/env python3
"""Times Devito's isotropic acoustic forward operator, for a side-by-side comparison with
`stencil35d bench --kernel wave:O --size N --steps S`.

The operator is the one of Devito's `examples.seismic.acoustic` (`ForwardOperator` /
`AcousticWaveSolver.forward`, kernel 'OT2'), built here from the same pieces without the
receivers, as stencil35d's benchmark shot has none:

    m·u_tt − ∇²u + damp·u_t = 0,   u.forward = solve(...)   (2nd order in time, order O in space)
    src.inject(u.forward, src·dt²/m)                          (one Ricker source, 15 Hz)

on an N³ grid that *includes* the absorbing layer of `nbl` cells per face, as stencil35d counts
it (Devito's `Model` is given the inner (N − 2·nbl)³ shape and pads it by `nbl`), 10 m cells,
f32. `damp` is Devito's own damping layer (`Model(bcs="damp")`: zero inside, rising over the
`nbl` cells of each face), not a PML. The velocity is stencil35d's benchmark model: five layers
down z (Devito's last, contiguous axis) of 1.5, 2.0, 2.5, 3.0 and 3.5 km/s, boundaries at
i·N/5 of the full grid. Devito's units are km/s, m and ms; dt = 0.9 × `model.critical_dt`.
The source sits at the centre cell.

Compiled for OpenMP (DEVITO_LANGUAGE=openmp, DEVITO_ARCH=gcc unless set) with Devito's default
optimisation level opt='advanced' (blocking, SIMD, CSE, factorisation; no auto-tuning unless
--autotune). The first `op.apply` (JIT compilation and a run) is a warm-up; then each of
--repeat runs resets the wavefield (untimed) and times `op.apply(time_m=0, time_M=steps − 1)`
(`steps` updates of the whole grid) by wall clock. Prints one JSON line: "seconds" is the
median wall time of apply, "min_seconds" the fastest, "mups" = N³·steps / seconds / 1e6 over
the whole grid (layers included); from Devito's own profiler (DEVITO_PROFILING=advanced, which
generates the same code as the default 'basic' and adds flop and point counts) for the median
run: "devito_seconds" (its time loop: the sum of its section timers), "devito_gpts_s" (its
"fdlike" metric, N³·steps over that time), "devito_gflops_s" (its flop count over that time)
and "devito_stencil_gpts_s" (the stencil section alone, without the source injection).

Each step opens two OpenMP parallel regions (stencil, injection), so any other busy process on
the machine costs a scheduler slice per region: on a loaded 2-core machine 2 threads ran ten
times slower than 1. Time on an idle machine; a "devito_stencil_gpts_s" far above
"devito_gpts_s" is the sign of such waits.

`examples.seismic` ships in Devito's wheel but imports pytest and scipy, which are not among
its requirements:

    python3 -m venv venv-devito && venv-devito/bin/pip install devito pytest scipy
    venv-devito/bin/python benches/peers/devito_acoustic.py --size 256 --steps 50 \
        --repeat 3 --threads 2
"""

import argparse
import json
import math
import os
import statistics
import time


def layered_velocity(n, np):
    """stencil35d's benchmark model (`perf::wave_shot`) in km/s: five layers down the last
    axis, 1.5 to 3.5 km/s, the i-th starting at cell i·n/5."""
    vp = np.empty((n, n, n), dtype=np.float32)
    for i in range(5):
        vp[:, :, i * n // 5:] = 1.5 + 0.5 * i
    return vp


def build(args):
    """The model, wavefield, source and operator; returns them with dt (ms)."""
    import numpy as np
    from devito import Eq, Operator, TimeFunction, solve
    from examples.seismic import Model, RickerSource, TimeAxis

    n, nbl = args.size, args.nbl
    inner = n - 2 * nbl
    if inner < 1:
        raise SystemExit(f"--size {n} leaves no cells inside two layers of --nbl {nbl}")
    model = Model(
        vp=np.full((inner,) * 3, 1.5, dtype=np.float32),
        origin=(0.0, 0.0, 0.0),
        spacing=(10.0, 10.0, 10.0),
        shape=(inner,) * 3,
        space_order=args.order,
        nbl=nbl,
        bcs="damp",
        dtype=np.float32,
    )
    assert model.grid.shape == (n, n, n), model.grid.shape
    model.update("vp", layered_velocity(n, np))  # the full grid, layers included
    dt = 0.9 * float(model.critical_dt)

    u = TimeFunction(name="u", grid=model.grid, time_order=2, space_order=args.order)
    time_range = TimeAxis(start=0.0, step=dt, num=args.steps + 1)
    src = RickerSource(name="src", grid=model.grid, f0=0.015, npoint=1, time_range=time_range)
    # Cell n/2 of each axis; the grid's origin is −nbl·h (Devito's Model convention).
    src.coordinates.data[0, :] = [o + (n // 2) * 10.0 for o in model.grid.origin]

    s = model.grid.stepping_dim.spacing
    pde = model.m * u.dt2 - u.laplace + model.damp * u.dt
    update = Eq(u.forward, solve(pde, u.forward), subdomain=model.grid.subdomains["physdomain"])
    inject = src.inject(field=u.forward, expr=src * s**2 / model.m)
    op = Operator([update] + inject, subs=model.spacing_map, name="Forward", opt="advanced")
    return model, u, src, op, dt


def apply_once(op, model, u, src, dt, args, **extra):
    """Resets the wavefield, then times one apply of `args.steps` steps; (seconds, summary)."""
    u.data[:] = 0.0
    kwargs = dict(u=u, src=src, vp=model.vp, damp=model.damp, dt=dt,
                  time_m=0, time_M=args.steps - 1, nthreads=args.threads, **extra)
    start = time.perf_counter()
    summary = op.apply(**kwargs)
    return time.perf_counter() - start, summary


def devito_numbers(summary, points):
    """Devito's own profile of a run (DEVITO_PROFILING=advanced): the seconds of its time loop
    (the sum of its sections' timers; its "fdlike" global rounds them to 0.01 s), its GPts/s
    over the whole grid (`points` = N³·steps, as Devito's "fdlike" counts) and GFlop/s from
    those seconds, and the GPts/s of the stencil section alone (the one with the most
    iterations; the other injects the source)."""
    seconds = sum(e.time for e in summary.values())
    ops = sum(i.ops for i in summary.input.values() if not math.isnan(i.ops))
    stencil = max(
        (e for e in summary.values() if e.itershapes),
        key=lambda e: max(math.prod(s) for s in e.itershapes),
        default=None,
    )
    return {
        "devito_seconds": seconds,
        "devito_gpts_s": points / seconds / 1e9,
        "devito_gflops_s": ops / seconds / 1e9 if ops else None,
        "devito_stencil_gpts_s": stencil.gpointss if stencil else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="N: the grid is N³, layers included")
    parser.add_argument("--order", type=int, default=8, help="space order")
    parser.add_argument("--nbl", type=int, default=20, help="damping-layer width, cells")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--autotune", choices=["off", "basic", "aggressive"], default="off",
                        help="Devito's block-size auto-tuning, done on the warm-up run")
    args = parser.parse_args()
    if args.steps < 1 or args.repeat < 1:
        raise SystemExit("--steps and --repeat must be at least 1")

    # Before devito is imported: it reads its configuration at import.
    os.environ.setdefault("DEVITO_LANGUAGE", "openmp")
    os.environ.setdefault("DEVITO_ARCH", "gcc")
    os.environ.setdefault("DEVITO_LOGGING", "ERROR")
    os.environ.setdefault("DEVITO_PROFILING", "advanced")  # same code, plus flop and point counts
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import devito
    import numpy as np
    from devito import configuration

    model, u, src, op, dt = build(args)

    # Warm-up: JIT compilation, auto-tuning if asked, a run.
    tuned = {}
    if args.autotune == "off":
        apply_once(op, model, u, src, dt, args)
    else:
        apply_once(op, model, u, src, dt, args, autotune=args.autotune)
        found = op._state["autotuning"][-1].get("tuned", {})  # the block sizes it chose
        tuned = {k: int(v) for k, v in found.items() if k != "nthreads"}
    runs = [apply_once(op, model, u, src, dt, args, **tuned) for _ in range(args.repeat)]
    times = [t for t, _ in runs]
    median = statistics.median(times)
    median_run = min(runs, key=lambda r: abs(r[0] - median))
    if not np.isfinite(u.data).all():
        raise SystemExit("the wavefield is not finite: the run blew up")

    n = args.size
    print(
        json.dumps(
            {
                "peer": "devito-acoustic",
                "devito": devito.__version__,
                "kernel": f"wave:{args.order}",
                "size": f"{n}x{n}x{n}",
                "nbl": args.nbl,
                "steps": args.steps,
                "threads": args.threads,
                "dtype": "f32",
                "boundary": "damp",
                "language": str(configuration["language"]),
                "compiler": f"{type(configuration['compiler']).__name__} {configuration['compiler'].version}",
                "platform": str(configuration["platform"]),
                "opt": "advanced",
                "autotune": args.autotune,
                "tuned": tuned or None,
                "dt_ms": dt,
                "seconds": median,
                "min_seconds": min(times),
                "mups": n**3 * args.steps / median / 1e6,
                **devito_numbers(median_run[1], n**3 * args.steps),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
