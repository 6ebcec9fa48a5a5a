"""Speed and accuracy of posenc.sinusoidal, as ratios measured in one run.

Prints
(a) the time of ``sinusoidal(8192, 1024)`` divided by the time NumPy takes for
    its own ``sin`` and ``cos`` over the same angles (the bound of any method
    that evaluates every entry directly), with the largest difference from
    direct float64 evaluation and the largest error against an exact
    (mpmath) reference on sampled entries, for both methods;
(b) the speed-up over the literal double loop of the popular tutorials at
    256 x 256 (NumPy scalar functions per entry, as they write it), and over
    the same loop with the faster ``math`` functions.

Targets: (a) at most 0.5 with the difference at most 1e-12; (b) at least 50.
Each time is the minimum over several repetitions, to keep other processes'
noise out. Run with ``make bench`` or ``.venv/bin/python benchmarks/bench_sinusoidal.py``.

With ``BENCH_QUICK=1`` (as the tests run it) each time is the best of one or two runs:
the numbers then only show that the benchmark runs.
"""

from __future__ import annotations

import math
import os
import time

import mpmath
import numpy as np

from posenc import frequencies, sinusoidal

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")


def best_time(func, repeat: int) -> float:
    repeat = min(repeat, 2) if QUICK else repeat
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def direct_bound(length: int, d_model: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's sin and cos over every angle k * omega_i: the work a direct method cannot avoid."""
    angles = np.arange(length)[:, None] * frequencies(d_model)[None, :]
    return np.sin(angles), np.cos(angles)


def direct_table(length: int, d_model: int) -> np.ndarray:
    s, c = direct_bound(length, d_model)
    table = np.empty((length, d_model))
    table[:, 0::2], table[:, 1::2] = s, c[:, : d_model // 2]
    return table


def literal_loop(length: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """The double loop as the popular tutorials write it: NumPy's scalar functions per entry."""
    table = np.zeros((length, d_model))
    for k in range(length):
        for i in np.arange(d_model // 2):
            denominator = np.power(base, 2 * i / d_model)
            table[k, 2 * i] = np.sin(k / denominator)
            table[k, 2 * i + 1] = np.cos(k / denominator)
    return table


def math_loop(length: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """The same loop with the math module's scalar functions, the fastest pure-Python form."""
    table = np.zeros((length, d_model))
    for k in range(length):
        for i in range(d_model // 2):
            denominator = base ** (2 * i / d_model)
            table[k, 2 * i] = math.sin(k / denominator)
            table[k, 2 * i + 1] = math.cos(k / denominator)
    return table


def exact(k: int, j: int, d_model: int) -> float:
    with mpmath.workdps(40):
        angle = k * mpmath.power(10_000, mpmath.mpf(-2 * (j // 2)) / d_model)
        return float(mpmath.sin(angle) if j % 2 == 0 else mpmath.cos(angle))


def main() -> None:
    length, d_model = 8192, 1024
    t_fast = best_time(lambda: sinusoidal(length, d_model), repeat=15)
    t_bound = best_time(lambda: direct_bound(length, d_model), repeat=15)
    fast, direct = sinusoidal(length, d_model), direct_table(length, d_model)
    diff = float(np.abs(fast - direct).max())

    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, length, 400), rng.integers(0, d_model, 400)
    ref = np.array([exact(int(k), int(j), d_model) for k, j in zip(rows, cols, strict=True)])
    err_fast = float(np.abs(fast[rows, cols] - ref).max())
    err_direct = float(np.abs(direct[rows, cols] - ref).max())

    print(
        f"(a) sinusoidal({length}, {d_model}): {t_fast * 1e3:.1f} ms; "
        f"NumPy sin+cos of the same angles: {t_bound * 1e3:.1f} ms"
    )
    print(f"    ratio to the direct bound: {t_fast / t_bound:.3f}   (target <= 0.5)")
    print(f"    largest difference from direct float64 evaluation: {diff:.2e}   (target <= 1e-12)")
    print(
        f"    largest error against mpmath on 400 sampled entries: "
        f"posenc {err_fast:.1e}, direct {err_direct:.1e}"
    )

    small = 256
    t_loop = best_time(lambda: literal_loop(small, small), repeat=3)
    t_math = best_time(lambda: math_loop(small, small), repeat=3)
    t_small = best_time(lambda: sinusoidal(small, small), repeat=50)
    np.testing.assert_allclose(sinusoidal(small, small), literal_loop(small, small), atol=1e-12)
    np.testing.assert_allclose(sinusoidal(small, small), math_loop(small, small), atol=1e-12)
    print(
        f"(b) {small} x {small}: tutorials' double loop {t_loop * 1e3:.1f} ms, "
        f"posenc {t_small * 1e3:.3f} ms"
    )
    print(f"    speed-up over the tutorials' loop: {t_loop / t_small:.0f}x   (target >= 50)")
    print(
        f"    (the same loop with math.sin/math.cos takes {t_math * 1e3:.1f} ms: "
        f"speed-up {t_math / t_small:.0f}x)"
    )


if __name__ == "__main__":
    main()
