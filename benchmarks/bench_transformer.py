"""Training throughput of the chapter 7 transformer per position method, in one run.

Prints, for each position method, the training throughput (tokens per
second: sequences x length x stacked copies, per forward-and-backward pass
and Adam update) of the chapter's model (2 layers, 4 heads, width 32, ten
stacked seeds, 16 sequences of 16 tokens), and the cost of RoPE, ALiBi and
T5 buckets relative to no position code (NoPE) as time ratios; then, for
RoPE, the time of one update of the ten seeds as one stack against ten
updates of one seed each (the stack's speed-up).

Targets, from what each method adds per layer: RoPE rotates queries and
keys (two element-wise products and a small matrix product each), ALiBi adds
a fixed bias table, T5 looks up a learned one, so each should cost at most
1.5 times NoPE. The methods are timed in turns, several times, and each keeps
its best time, so that other processes' load falls on all of them alike.
Run with ``make bench`` or ``.venv/bin/python benchmarks/bench_transformer.py``.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from posenc.lengthtasks import LengthBatch, make_length_batch
from posenc.model import Adam
from posenc.transformer import POSITION_METHODS, CausalTransformer

SEEDS = tuple(range(10))
BATCH = 16
LENGTH = 16
STEPS = 5
ROUNDS = 5


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


def stacked_vs_separate(batch: LengthBatch) -> None:
    """Ten seeds as one stack against the same ten seeds one model at a time (RoPE)."""
    stack = CausalTransformer(16, position="rope", seeds=SEEDS)
    alone = [CausalTransformer(16, position="rope", seeds=(s,)) for s in SEEDS]
    parts = [
        LengthBatch(batch.tokens[i], batch.targets[i], batch.scored) for i in range(len(SEEDS))
    ]
    stack_opt = Adam(stack.params, learning_rate=1e-3)
    alone_opt = [Adam(m.params, learning_rate=1e-3) for m in alone]
    best_stack = best_alone = float("inf")
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(STEPS):
                stack_opt.step(stack.loss_and_gradients(batch)[1])
            best_stack = min(best_stack, (time.perf_counter() - start) / STEPS)
            start = time.perf_counter()
            for _ in range(STEPS):
                for model, opt, part in zip(alone, alone_opt, parts, strict=True):
                    opt.step(model.loss_and_gradients(part)[1])
            best_alone = min(best_alone, (time.perf_counter() - start) / STEPS)
    print(
        f"rope, {len(SEEDS)} seeds, one update: stacked {1e3 * best_stack:.1f} ms, "
        f"separate {1e3 * best_alone:.1f} ms, separate / stacked {best_alone / best_stack:.2f}"
    )


if __name__ == "__main__":
    main()
