"""Training throughput of the chapter 7 transformer per position method, in one run.

Prints, for each position method, the training throughput (tokens per
second: sequences x length x stacked copies, per forward-and-backward pass
and Adam update) of the chapter's model (2 layers, 4 heads, width 32, ten
stacked seeds, 16 sequences of 16 tokens, float32 as in the experiment),
and the cost of RoPE, ALiBi and T5 buckets relative to no position code
(NoPE) as time ratios; then, for RoPE, the time of one update of the ten
seeds as one stack against ten updates of one seed each, and float64
against float32.

Targets, from what each method adds per layer: RoPE rotates queries and
keys (two element-wise products and a small matrix product each), ALiBi adds
a fixed bias table, T5 looks up a learned one, so each should cost at most
1.5 times NoPE. The methods are timed in turns, several times, and each keeps
its best time, so that other processes' load falls on all of them alike.
Run with ``make bench`` or ``.venv/bin/python benchmarks/bench_transformer.py``.

With ``BENCH_QUICK=1`` (as the tests run it) every method is timed once, over one step:
the numbers then only show that the benchmark runs.
"""

from __future__ import annotations

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from posenc.lengthtasks import LengthBatch, make_length_batch
from posenc.model import Adam
from posenc.transformer import POSITION_METHODS, CausalTransformer

SEEDS = tuple(range(10))
BATCH = 16
LENGTH = 16
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
STEPS = 1 if QUICK else 5
ROUNDS = 1 if QUICK else 5
DTYPE = "float32"  # the experiment's


def main() -> None:
    rng = np.random.default_rng(0)
    parts = [make_length_batch("offset", rng, batch=BATCH, length=LENGTH) for _ in SEEDS]
    batch = LengthBatch(
        np.stack([p.tokens for p in parts]), np.stack([p.targets for p in parts]), parts[0].scored
    )
    models = {
        method: CausalTransformer(
            16,
            position=method,
            max_length=LENGTH if method == "learned" else None,
            t5_max_distance=LENGTH,
            seeds=SEEDS,
            dtype=DTYPE,
        )
        for method in POSITION_METHODS
    }
    optimisers = {m: Adam(model.params, learning_rate=1e-3) for m, model in models.items()}
    best = dict.fromkeys(POSITION_METHODS, float("inf"))
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(ROUNDS):
            for method, model in models.items():
                start = time.perf_counter()
                for _ in range(STEPS):
                    _, grads = model.loss_and_gradients(batch)
                    optimisers[method].step(grads)
                best[method] = min(best[method], (time.perf_counter() - start) / STEPS)
    tokens = len(SEEDS) * BATCH * LENGTH
    print(f"{'method':<11} {'tokens/s':>9} {'time / NoPE':>12}")
    for method in POSITION_METHODS:
        print(f"{method:<11} {tokens / best[method]:9.0f} {best[method] / best['nope']:12.2f}")
    for method in ("rope", "alibi", "t5"):
        ratio = best[method] / best["nope"]
        verdict = "ok" if ratio <= 1.5 else "SLOWER THAN TARGET"
        print(f"{method} / nope time ratio {ratio:.2f} (target <= 1.5): {verdict}")
    stacked_vs_separate(batch)


def _best_update(models, optimisers, batches) -> float:
    """Best time over ROUNDS of one update of every model in turn (seconds)."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(STEPS):
            for model, opt, part in zip(models, optimisers, batches, strict=True):
                opt.step(model.loss_and_gradients(part)[1])
        best = min(best, (time.perf_counter() - start) / STEPS)
    return best


def stacked_vs_separate(batch: LengthBatch) -> None:
    """RoPE: ten seeds as one stack against one at a time; float64 against float32."""
    parts = [
        LengthBatch(batch.tokens[i], batch.targets[i], batch.scored) for i in range(len(SEEDS))
    ]
    times = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for dtype in ("float32", "float64"):
            stack = CausalTransformer(16, position="rope", seeds=SEEDS, dtype=dtype)
            alone = [CausalTransformer(16, position="rope", seeds=(s,), dtype=dtype) for s in SEEDS]
            times[dtype, "stacked"] = _best_update(
                [stack], [Adam(stack.params, learning_rate=1e-3)], [batch]
            )
            times[dtype, "separate"] = _best_update(
                alone, [Adam(m.params, learning_rate=1e-3) for m in alone], parts
            )
    for dtype in ("float32", "float64"):
        stacked, separate = times[dtype, "stacked"], times[dtype, "separate"]
        print(
            f"rope {dtype}, {len(SEEDS)} seeds, one update: stacked {1e3 * stacked:.1f} ms, "
            f"separate {1e3 * separate:.1f} ms, separate / stacked {separate / stacked:.2f}"
        )
    ratio = times["float64", "stacked"] / times["float32", "stacked"]
    print(f"rope stacked, float64 / float32 time ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
