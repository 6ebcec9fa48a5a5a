"""Speed of the chapter 5 model, as ratios measured in one run.

Prints
(a) the time of one training step (forward and backward pass, five stacked
    copies, 32 sequences each) in float64 divided by the time in float32;
(b) the time of five separate single-seed models divided by the time of the
    same five seeds stacked in one model, and the time of the five stacked
    copies divided by the time of one copy alone;
(c) the time of one test-set evaluation (500 sequences, five copies) with
    BLAS free to use every thread divided by the time with one thread, the
    setting :func:`posenc.model.train` uses;
(d) training throughput in model-updates per second (one update of one
    copy on a mini-batch of 16, as in chapter 5's designed experiment) for
    20 stacked copies and for 20 separate models, and their ratio, at
    L = 8, 32 and 64 with one layer and at L = 32 and 64 with two layers
    (the regimes of the designed experiment).

Targets: (a) at least 1.5; (b) at least 1.3 and at most 4 (five seeds for
the price of a few); (c) no target; (d) a ratio of at least 1 at every
length (the stack runs its copies in cache-sized groups, so stacking never
costs; it gains most where the arrays are small): it says what threads would bring on this
machine at this moment (little, and on a busy machine a large loss). The
variants are timed in turns, several times, and each keeps its best time, so
that other processes' load falls on all of them alike. Run with
``make bench`` or ``.venv/bin/python benchmarks/bench_model.py``.

With ``BENCH_QUICK=1`` (as the tests run it) every variant is timed once, over fewer
steps: the numbers then only show that the benchmark runs.
"""

from __future__ import annotations

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from posenc.model import AttentionClassifier
from posenc.tasks import make_task

SEEDS = tuple(range(5))
BATCH = 32
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
STEPS = 4 if QUICK else 40
ROUNDS = 1 if QUICK else 7


def build(seeds, dtype="float32"):
    return AttentionClassifier(8, 8, 8, d_token=16, position="learned", seeds=seeds, dtype=dtype)


def main() -> None:
    task = make_task("absolute", seed=0)
    index = np.arange(len(SEEDS) * BATCH).reshape(len(SEEDS), BATCH)
    tokens, labels = task.train_tokens[index], task.train_labels[index]

    def steps(models):
        def run():
            for _ in range(STEPS):
                for m, model in enumerate(models):
                    rows = slice(m, m + model.n_models)
                    model.loss_and_gradients(tokens[rows], labels[rows])

        return run

    def evaluation(model):
        def run():
            for _ in range(STEPS // 4):
                model.accuracy(task.test_tokens, task.test_labels)

        return run

    stacked = build(SEEDS)
    cases = {
        "float64": (steps([build(SEEDS, "float64")]), 1),
        "float32": (steps([stacked]), 1),
        "separate": (steps([build(seed) for seed in SEEDS]), 1),
        "one copy": (steps([build(0)]), 1),
        "eval, one thread": (evaluation(stacked), 1),
        "eval, all threads": (evaluation(stacked), None),
    }
    best = dict.fromkeys(cases, np.inf)
    for _ in range(ROUNDS):
        for name, (run, threads) in cases.items():
            with threadpool_limits(limits=threads, user_api="blas"):
                start = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - start)

    ratio_a = best["float64"] / best["float32"]
    ratio_b = best["separate"] / best["float32"]
    ratio_b1 = best["float32"] / best["one copy"]
    ratio_c = best["eval, all threads"] / best["eval, one thread"]
    print(f"(a) float64 / float32 step:               {ratio_a:5.2f}  (target >= 1.5)")
    print(f"(b) five separate / five stacked:         {ratio_b:5.2f}  (target >= 1.3)")
    print(f"    five stacked / one copy:              {ratio_b1:5.2f}  (target <= 4)")
    print(f"(c) evaluation, all threads / one thread: {ratio_c:5.2f}  (no target)")
    print(f"    one step of five float32 copies:      {1e3 * best['float32'] / STEPS:5.2f} ms")
    throughput()


def throughput(
    n_copies: int = 20, batch: int = 16, steps: int = 5, rounds: int = 1 if QUICK else 3
) -> None:
    """(d): model-updates per second, stacked and separate, at the sizes of the experiment."""
    print("(d) model-updates per second (one copy, one mini-batch of 16):")
    for length, layers in ((8, 1), (32, 1), (64, 1), (32, 2), (64, 2)):
        rng = np.random.default_rng(0)
        tokens = np.stack(
            [[rng.permutation(length) for _ in range(batch)] for _ in range(n_copies)]
        )
        labels = tokens[:, :, 2]

        def model(seeds, length=length, layers=layers):
            return AttentionClassifier(
                length,
                length,
                length,
                d_token=16,
                position="sinusoidal",
                seeds=seeds,
                n_layers=layers,
                dtype="float32",
            )

        stacked, separate = model(range(n_copies)), [model(s) for s in range(n_copies)]
        best = {"stacked": np.inf, "separate": np.inf}
        for _ in range(rounds):
            with threadpool_limits(limits=1, user_api="blas"):
                start = time.perf_counter()
                for _ in range(steps):
                    stacked.loss_and_gradients(tokens, labels)
                best["stacked"] = min(best["stacked"], time.perf_counter() - start)
                start = time.perf_counter()
                for _ in range(steps):
                    for m, single in enumerate(separate):
                        single.loss_and_gradients(tokens[m], labels[m])
                best["separate"] = min(best["separate"], time.perf_counter() - start)
        rate = {k: n_copies * steps / v for k, v in best.items()}
        print(
            f"    L={length:<3} {layers} layer(s): stacked {rate['stacked']:8.0f}/s, "
            f"separate {rate['separate']:8.0f}/s, ratio {rate['stacked'] / rate['separate']:5.2f}"
            "  (target >= 1)"
        )


if __name__ == "__main__":
    main()
