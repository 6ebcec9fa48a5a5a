"""Redraw latency of the explorers in posenc.widgets, measured in one run.

A redraw is everything that happens between setting a slider's value and the
new picture being ready in the widget (``explorer.image.value``): the
observer runs, the view updates its artists, matplotlib renders and the
pixels are encoded as PNG. Values are set from code, as a drag would set
them, alternating between neighbouring values so that every change is a
real one, at the default sizes (``posenc.widgets.DEFAULTS``: L = 100,
d = 128, n = 10,000, k = 20).

Prints, per explorer and per slider, the median and the 90th percentile of
the latency over many changes, and the target check: at most 100 ms for the
median. Sliders ``d``, ``n`` and ``L`` redraw the whole figure when released;
``k`` redraws only its marker and curve while it is dragged. The time
excludes sending the picture to the browser, which a plain Python process
does not do. The "full" column counts the changes that had to re-render the
frame (axes, ticks, labels) because a limit changed; the others only redraw
the data over the kept frame.

The wall-clock time depends on what else the machine runs; the CPU time
much less so. NumPy's BLAS may use several threads even for the small
matrices here, which only costs time when the cores are busy: on a shared
machine, compare with ``OPENBLAS_NUM_THREADS=1``. Run with ``make bench`` or
``.venv/bin/python benchmarks/bench_widgets.py``.

With ``BENCH_QUICK=1`` (as the tests run it) each slider changes 4 times: the numbers
then only show that the benchmark runs.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from posenc.widgets import (
    DEFAULTS,
    ROPE_DEFAULTS,
    encoding_explorer,
    projection_explorer,
    rope_explorer,
    similarity_explorer,
)

TARGET_MS = 100.0
CHANGES = 4 if os.environ.get("BENCH_QUICK", "") not in ("", "0") else 40  # per slider


def latencies(slider, values) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds taken by each assignment ``slider.value = v``."""
    wall, cpu = [], []
    for value in values:
        start, start_cpu = time.perf_counter(), time.process_time()
        slider.value = value
        wall.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - start_cpu) * 1e3)
    return wall, cpu


def main() -> None:
    d, n, length, k = (DEFAULTS[key] for key in ("d_model", "base", "length", "position"))
    builders = {
        "encoding": encoding_explorer,
        "similarity": similarity_explorer,
        "projection": projection_explorer,
    }
    print(
        f"redraw latency over {CHANGES} changes per slider at the default sizes "
        f"L={length}, d={d}, n={n:g}, k={k}; target: median <= {TARGET_MS:.0f} ms"
    )
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "not set")
    print(
        f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"OPENBLAS_NUM_THREADS: {threads}"
    )
    print(
        f"{'explorer':<11} {'slider':<7} {'median':>7} {'p90':>7} {'CPU median':>11} "
        f"{'full':>5}  verdict   (milliseconds)"
    )
    worst = 0.0
    for name, build in builders.items():
        explorer = build()
        cases = {
            "d": (explorer.d_slider, [d + 2, d] * (CHANGES // 2)),
            "n": (explorer.base_slider, [n * 1.5, n] * (CHANGES // 2)),
            "L": (explorer.length_slider, [length + 10, length] * (CHANGES // 2)),
            "k": (explorer.position_slider, [k + 1 + (i % 30) for i in range(CHANGES)]),
        }
        for slider_name, (slider, values) in cases.items():
            before, full_before = explorer.redraws, explorer.full_redraws
            wall, cpu = latencies(slider, values)
            assert explorer.redraws - before == len(values), "every change must redraw once"
            full = explorer.full_redraws - full_before
            median = statistics.median(wall)
            worst = max(worst, median)
            verdict = "ok" if median <= TARGET_MS else "OVER"
            print(
                f"{name:<11} {slider_name:<7} {median:7.1f} {np.percentile(wall, 90):7.1f} "
                f"{statistics.median(cpu):11.1f} {full:5d}  {verdict}"
            )
    worst = max(worst, rope_latencies())
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"largest median: {worst:.1f} ms (target <= {TARGET_MS:.0f} ms)")
    print("('full': changes that re-rendered the frame; CPU counts every thread of the process)")


def rope_latencies() -> float:
    """The RoPE explorer of chapter 6 at its defaults (d_k = 128, n = 10,000, offsets 1 to 8,192).

    Its sliders are the base and the head width (which recompute both curves)
    and the marked offset (which moves only the marker and the title).
    """
    d, n, offset = (ROPE_DEFAULTS[key] for key in ("d", "base", "offset"))
    explorer = rope_explorer()
    cases = {
        "n": (explorer.base_slider, [n * 1.5, n] * (CHANGES // 2)),
        "d_k": (explorer.d_slider, [d + 2, d] * (CHANGES // 2)),
        "offset": (explorer.offset_slider, [offset + 1 + (i % 30) for i in range(CHANGES)]),
    }
    worst = 0.0
    for slider_name, (slider, values) in cases.items():
        before, full_before = explorer.redraws, explorer.full_redraws
        wall, cpu = latencies(slider, values)
        assert explorer.redraws - before == len(values), "every change must redraw once"
        median = statistics.median(wall)
        worst = max(worst, median)
        verdict = "ok" if median <= TARGET_MS else "OVER"
        print(
            f"{'rope':<11} {slider_name:<7} {median:7.1f} {np.percentile(wall, 90):7.1f} "
            f"{statistics.median(cpu):11.1f} {explorer.full_redraws - full_before:5d}  {verdict}"
        )
    return worst


if __name__ == "__main__":
    main()
