r"""The length-extrapolation experiment of chapter 7 and its statistics.

Every position method of :mod:`posenc.transformer` is trained on the tasks
of :mod:`posenc.lengthtasks` at one length ``L`` and tested at ``L``,
``2L`` and ``4L``; the rotary model is then extended with the rules of
:mod:`posenc.scaling`, zero-shot and after a short fine-tune.

* :class:`ExtrapolationConfig`: every parameter of the design, stored with
  the results;
* :func:`run_extrapolation`: the whole experiment (``make experiments-ch7``
  runs it and writes ``results/ch7_extrapolation.json``);
* :func:`accuracy_at`: per-seed accuracy at one test length from the stored
  per-position accuracies;
* :func:`paired_interval`, :func:`paired_tost`, :func:`holm`: the statistics
  (a paired Student-t interval and test, the two one-sided tests for
  equivalence within a margin, Holm's step-down correction). Means over
  seeds use :func:`posenc.experiment.mean_confidence_interval`.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from .experiment import holm, mean_confidence_interval  # one Holm adjustment
from .lengthtasks import LENGTH_TASKS, make_length_batch
from .scaling import scaled_frequencies, yarn_attention_factor
from .transformer import POSITION_METHODS, CausalTransformer, train_causal
from .validation import check_array, check_integer, check_real

__all__ = [
    "EXTENSIONS",
    "EXTENSION_VARIANTS",
    "ExtrapolationConfig",
    "accuracy_at",
    "build_model",
    "config_from_dict",
    "drop_tests",
    "extension_accuracies",
    "extension_summary",
    "extension_tests",
    "holm",
    "length_summary",
    "load_results",
    "paired_interval",
    "paired_tost",
    "run_cell",
    "run_extrapolation",
]

EXTENSIONS = ("linear", "ntk", "yarn")


@dataclass(frozen=True)
class ExtrapolationConfig:
    """Every parameter of the experiment (the defaults are the chapter's design)."""

    vocab_size: int = 16
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    base: float = 10_000.0
    train_length: int = 16
    factors: tuple[int, ...] = (1, 2, 4)
    offset: int = 3
    steps: int = 500
    batch_size: int = 16
    learning_rates: tuple[float, ...] = (3e-3, 1e-2)
    validation_seeds: tuple[int, ...] = (1000, 1001)
    seeds: tuple[int, ...] = tuple(range(10))
    n_test: int = 128
    test_seed: int = 12345
    validation_seed: int = 54321
    finetune_steps: int = 50
    margin: float = 0.05
    methods: tuple[str, ...] = POSITION_METHODS
    tasks: tuple[str, ...] = LENGTH_TASKS
    extensions: tuple[str, ...] = EXTENSIONS
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def max_test_length(self) -> int:
        return self.train_length * max(self.factors)


def build_model(
    config: ExtrapolationConfig, method: str, seeds: Sequence[int]
) -> CausalTransformer:
    """The model of the design for ``method`` with the given seeds."""
    return CausalTransformer(
        config.vocab_size,
        d_model=config.d_model,
        n_heads=config.n_heads,
        n_layers=config.n_layers,
        position=method,
        max_length=config.train_length if method == "learned" else None,
        base=config.base,
        t5_buckets=16,
        t5_max_distance=config.train_length,
        seeds=tuple(seeds),
    )


def _test_batch(config: ExtrapolationConfig, task: str, seed: int, length: int):
    return make_length_batch(
        task,
        np.random.default_rng(seed),
        batch=config.n_test,
        length=length,
        vocab_size=config.vocab_size,
        offset=config.offset,
    )


def _truncate(batch, length: int):
    return type(batch)(
        batch.tokens[..., :length], batch.targets[..., :length], batch.scored[:length]
    )


def _train(model: CausalTransformer, config: ExtrapolationConfig, task: str, lr: float, **kw):
    return train_causal(
        model,
        task,
        length=kw.pop("length", config.train_length),
        steps=kw.pop("steps", config.steps),
        batch_size=config.batch_size,
        learning_rate=lr,
        offset=config.offset,
        **kw,
    )


def run_cell(
    config: ExtrapolationConfig,
    task: str,
    method: str,
    *,
    seeds: Sequence[int] | None = None,
    learning_rate: float | None = None,
    progress: Callable[[int], None] | None = None,
    extras: bool = True,
) -> dict[str, Any]:
    """Select the learning rate (unless given), train ``seeds``, test at every length.

    Returns a JSON-ready dictionary: ``learning_rate``, ``validation``
    (mean validation accuracy at ``L`` per candidate rate), ``seeds``,
    ``accuracy`` (per seed, per position up to the longest test length;
    ``None`` where not scored or, for learned codes, where the model cannot
    run), ``train_seconds`` and, for RoPE (unless ``extras`` is false),
    ``extensions`` and ``finetune``.
    """
    seeds = config.seeds if seeds is None else tuple(seeds)
    out: dict[str, Any] = {"task": task, "method": method}
    length = config.train_length
    if learning_rate is None:
        validation = _test_batch(config, task, config.validation_seed, length)
        scores = {}
        for lr in config.learning_rates:
            model = build_model(config, method, config.validation_seeds)
            _train(model, config, task, lr, data_seed=2, progress=progress)
            scores[lr] = float(np.nanmean(model.accuracy_by_position(validation)))
        # The best mean validation accuracy; ties go to the smaller rate.
        learning_rate = max(config.learning_rates, key=lambda lr: (scores[lr], -lr))
        out["validation"] = {repr(lr): s for lr, s in scores.items()}
    out["learning_rate"] = learning_rate
    out["seeds"] = list(seeds)
    model = build_model(config, method, seeds)
    history = _train(model, config, task, learning_rate, progress=progress)
    out["train_seconds"] = history.seconds
    out["final_train_loss"] = float(history.train_loss[-20:].mean())
    test = _test_batch(config, task, config.test_seed, config.max_test_length)
    runnable = length if method == "learned" else config.max_test_length
    accuracy = np.full((len(seeds), config.max_test_length), np.nan)
    accuracy[:, :runnable] = model.accuracy_by_position(_truncate(test, runnable))
    out["accuracy"] = _jsonable(accuracy)
    if method == "rope" and extras:
        out["extensions"] = _extensions(config, model, test)
        out["finetune"] = _finetune(config, model, task, learning_rate, test, progress)
    return out


def _extensions(config: ExtrapolationConfig, model: CausalTransformer, test) -> dict[str, Any]:
    d_head = config.d_model // config.n_heads
    result: dict[str, Any] = {}
    for factor in config.factors:
        if factor == 1:
            continue
        part = _truncate(test, config.train_length * factor)
        for how in config.extensions:
            freqs = scaled_frequencies(
                d_head,
                config.base,
                method=how,
                factor=factor,
                original_length=config.train_length,
            )
            scale = yarn_attention_factor(factor) ** 2 if how == "yarn" else 1.0
            accuracy = model.accuracy_by_position(part, frequencies=freqs, logit_scale=scale)
            result[f"{how}@{factor}"] = _jsonable(accuracy)
    return result


def _finetune(config, model, task, lr, test, progress) -> dict[str, Any]:
    """Fine-tune copies at ``factor * L``: with position interpolation, and plainly (control)."""
    d_head = config.d_model // config.n_heads
    result: dict[str, Any] = {}
    for factor in config.factors:
        if factor == 1:
            continue
        length = config.train_length * factor
        part = _truncate(test, length)
        for how in ("linear", "none"):
            tuned = copy.deepcopy(model)
            freqs = (
                scaled_frequencies(d_head, config.base, method="linear", factor=factor)
                if how == "linear"
                else None
            )
            _train(
                tuned,
                config,
                task,
                lr,
                length=length,
                steps=config.finetune_steps,
                frequencies=freqs,
                data_seed=3,
                progress=progress,
            )
            accuracy = tuned.accuracy_by_position(part, frequencies=freqs)
            result[f"{how}@{factor}"] = _jsonable(accuracy)
    return result


def _jsonable(accuracy: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(a) else round(float(a), 6) for a in row] for row in accuracy]


_COUNTER: Any = None


def _init_worker(counter: Any) -> None:
    global _COUNTER
    _COUNTER = counter


def _run_unit(args: tuple[ExtrapolationConfig, str, str]) -> dict[str, Any]:
    config, task, method = args
    with threadpool_limits(limits=1, user_api="blas"):
        return run_cell(config, task, method, progress=None if _COUNTER is None else _count_step)


def _count_step(step: int) -> None:
    with _COUNTER.get_lock():
        _COUNTER.value += 1


def run_extrapolation(
    config: ExtrapolationConfig,
    path: str | Path | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run every cell of the design; write the results as JSON to ``path`` if given.

    The cells (one per task and method) are independent and each depends
    only on its seeds, so ``jobs`` worker processes can share them out; the
    results are the same as with one process, in the same order.
    ``progress(done, total)`` is called about once a second with the number
    of training updates done.
    """
    import multiprocessing as mp

    jobs = check_integer("jobs", jobs, minimum=1)
    units = [(config, task, method) for task in config.tasks for method in config.methods]
    total = total_steps(config)
    if jobs == 1:
        done = [0]

        def tick(step: int) -> None:
            done[0] += 1
            if progress is not None and done[0] % 50 == 0:
                progress(done[0], total)

        with threadpool_limits(limits=1, user_api="blas"):
            cells = [run_cell(c, t, m, progress=tick) for c, t, m in units]
        return _finish(config, cells, path, progress, total)
    counter = mp.get_context("spawn").Value("q", 0)
    with mp.get_context("spawn").Pool(jobs, initializer=_init_worker, initargs=(counter,)) as pool:
        pending = pool.map_async(_run_unit, units, chunksize=1)
        while not pending.ready():
            pending.wait(1.0)
            if progress is not None:
                progress(counter.value, total)
        cells = pending.get()
    return _finish(config, cells, path, progress, total)


def _finish(config, cells, path, progress, total) -> dict[str, Any]:
    if progress is not None:
        progress(total, total)
    payload = {"config": _config_dict(config), "cells": cells}
    if path is not None:
        Path(path).write_text(json.dumps(payload, indent=1) + "\n")
    return payload


def _config_dict(config: ExtrapolationConfig) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()}


def config_from_dict(data: dict[str, Any]) -> ExtrapolationConfig:
    """Rebuild the configuration stored in a results file."""
    return ExtrapolationConfig(
        **{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items()}
    )


def accuracy_at(per_position: Any, length: int, *, beyond: int | None = None) -> np.ndarray:
    """Per-seed accuracy on test sequences of ``length``, ``(n_seeds,)``.

    ``per_position`` is ``(n_seeds, max_length)`` with NaN (or ``None``) at
    the unscored positions at the start of the sequence and at the positions
    the model cannot run at the end (learned codes past their table). The
    mean is over scored positions ``< length``; with ``beyond``, only over
    positions ``>= beyond`` (those never seen in training). If ``length``
    reaches past the positions the model can run, the result is NaN.

    Examples
    --------
    >>> accuracy_at([[None, 1.0, 0.5, 0.0]], 3)
    array([0.75])
    >>> accuracy_at([[None, 1.0, None, None]], 3)
    array([nan])
    """
    array = np.array(per_position, dtype=np.float64)
    length = check_integer("length", length, minimum=1, maximum=array.shape[-1])
    start = 0 if beyond is None else check_integer("beyond", beyond, minimum=0, maximum=length - 1)
    # Unscored positions lead the sequence (NaN in every seed); NaN columns
    # after the last number are positions the model cannot run.
    has_number = ~np.all(np.isnan(array), axis=0)
    if not has_number.any() or length > np.flatnonzero(has_number)[-1] + 1:
        return np.full(array.shape[0], np.nan)
    window = array[:, start:length][:, has_number[start:length]]
    if window.size == 0 or np.isnan(window).any():
        return np.full(array.shape[0], np.nan)
    return window.mean(axis=1)


def load_results(path: str | Path) -> tuple[ExtrapolationConfig, list[dict[str, Any]], dict]:
    """Read a results file: ``(config, cells, payload)``."""
    payload = json.loads(Path(path).read_text())
    return config_from_dict(payload["config"]), payload["cells"], payload


def _cell(cells: Sequence[dict[str, Any]], task: str, method: str) -> dict[str, Any]:
    for cell in cells:
        if cell["task"] == task and cell["method"] == method:
            return cell
    raise KeyError(f"no cell for task {task!r} and method {method!r}")


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    if np.isnan(values).any():
        return (math.nan, math.nan, math.nan)
    if np.ptp(values) == 0.0:
        return (float(values[0]),) * 3
    return mean_confidence_interval(values)


def length_summary(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]]
) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """Mean accuracy and 95% interval over seeds, per task, method and test length.

    Returns ``{task: {method: [(mean, low, high) for each factor]}}``; NaN
    where the method cannot run (learned codes past their table).
    """
    out: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    for task in config.tasks:
        out[task] = {}
        for method in config.methods:
            acc = _cell(cells, task, method)["accuracy"]
            out[task][method] = [
                _interval(accuracy_at(acc, config.train_length * f)) for f in config.factors
            ]
    return out


def drop_tests(
    config: ExtrapolationConfig,
    cells: Sequence[dict[str, Any]],
    *,
    gate: float = 0.95,
    beyond_train: bool = False,
) -> list[dict[str, Any]]:
    """Accuracy lost from ``L`` to each longer length, per task and method, with tests.

    Only methods whose mean accuracy at ``L`` reaches ``gate`` are tested (a
    method that has not learned the task has nothing to lose). For each, the
    paired per-seed difference ``acc(factor L) - acc(L)``, its 95% interval,
    the p-value of no change, and the TOST p-value of a change within
    ``± config.margin``; both families Holm-corrected over every row.

    With ``beyond_train=True``, the longer length is scored only on the
    positions ``>= L`` (those never seen in training), so the difference is
    ``acc(positions L .. factor L - 1) - acc(L)`` and is not diluted by the
    shared in-distribution prefix.
    """
    if not isinstance(beyond_train, bool):
        raise TypeError(f"beyond_train must be True or False, got {beyond_train!r}")
    rows = []
    for task in config.tasks:
        for method in config.methods:
            acc = _cell(cells, task, method)["accuracy"]
            base = accuracy_at(acc, config.train_length)
            if np.isnan(base).any() or base.mean() < gate:
                continue
            for factor in config.factors[1:]:
                longer = accuracy_at(
                    acc,
                    config.train_length * factor,
                    beyond=config.train_length if beyond_train else None,
                )
                if np.isnan(longer).any():
                    continue
                diff = longer - base
                mean, low, high, p = paired_interval(diff)
                rows.append(
                    {
                        "task": task,
                        "method": method,
                        "factor": factor,
                        "change": mean,
                        "low": low,
                        "high": high,
                        "p": p,
                        "p_tost": paired_tost(diff, config.margin),
                    }
                )
    _add_holm(rows)
    return rows


def _add_holm(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    for key in ("p", "p_tost"):
        for row, adjusted in zip(rows, holm([r[key] for r in rows]), strict=True):
            row[f"{key}_holm"] = float(adjusted)


EXTENSION_VARIANTS = {
    "no scaling": None,
    "PI": ("extensions", "linear"),
    "NTK": ("extensions", "ntk"),
    "YaRN": ("extensions", "yarn"),
    "fine-tune only": ("finetune", "none"),
    "PI + fine-tune": ("finetune", "linear"),
}


def extension_accuracies(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]], task: str, factor: int
) -> dict[str, np.ndarray]:
    """Per-seed accuracy of the RoPE model at ``factor * L`` under each extension."""
    cell = _cell(cells, task, "rope")
    length = config.train_length * factor
    out = {}
    for name, where in EXTENSION_VARIANTS.items():
        acc = cell["accuracy"] if where is None else cell[where[0]][f"{where[1]}@{factor}"]
        out[name] = accuracy_at(acc, length)
    return out


def extension_summary(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]]
) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """``{task: {variant: [(mean, low, high) for each factor > 1]}}`` for the RoPE model."""
    factors = [f for f in config.factors if f != 1]
    out: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    for task in config.tasks:
        per_factor = [extension_accuracies(config, cells, task, f) for f in factors]
        out[task] = {name: [_interval(p[name]) for p in per_factor] for name in EXTENSION_VARIANTS}
    return out


def extension_tests(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Paired comparisons of the RoPE extensions, Holm-corrected as one family.

    Each zero-shot rule against no scaling, and the fine-tune with position
    interpolation against the same fine-tune without it, per task and factor.
    """
    pairs = [
        ("PI", "no scaling"),
        ("NTK", "no scaling"),
        ("YaRN", "no scaling"),
        ("PI + fine-tune", "fine-tune only"),
    ]
    rows = []
    for task in config.tasks:
        for factor in [f for f in config.factors if f != 1]:
            acc = extension_accuracies(config, cells, task, factor)
            for a, b in pairs:
                mean, low, high, p = paired_interval(acc[a] - acc[b])
                rows.append(
                    {
                        "task": task,
                        "factor": factor,
                        "variant": a,
                        "against": b,
                        "change": mean,
                        "low": low,
                        "high": high,
                        "p": p,
                        "p_tost": paired_tost(acc[a] - acc[b], config.margin),
                    }
                )
    _add_holm(rows)
    return rows


def paired_interval(
    differences: Any, confidence: float = 0.95
) -> tuple[float, float, float, float]:
    """Mean of paired differences, its Student-t interval and the two-sided p-value of zero.

    With no spread at all, the interval is the point and the p-value is 1
    if the mean is 0, else 0.

    Examples
    --------
    >>> mean, low, high, p = paired_interval([0.1, 0.2, 0.3])
    >>> round(mean, 2), round(p, 4)
    (0.2, 0.0742)
    """
    d = check_array("differences", differences, ndim=1)
    if d.size < 2:
        raise ValueError(f"differences must hold at least 2 numbers, got {d.size}")
    mean, low, high = mean_confidence_interval(d, confidence)  # the one-sample t interval
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    if se == 0.0:
        return mean, mean, mean, 1.0 if mean == 0.0 else 0.0
    p = float(2 * stats.t.sf(abs(mean) / se, d.size - 1))
    return mean, low, high, p


def paired_tost(differences: Any, margin: float) -> float:
    """p-value of the two one-sided tests that the mean difference lies within ``±margin``.

    Equivalence is shown at level alpha when the p-value is below alpha,
    which is the same as the ``1 - 2 alpha`` interval lying inside the
    margin (Schuirmann 1987). With no spread, 0 if ``|mean| < margin``, else 1.

    Examples
    --------
    >>> round(paired_tost([0.01, -0.01, 0.0, 0.02], 0.05), 4)
    0.003
    """
    d = check_array("differences", differences, ndim=1)
    if d.size < 2:
        raise ValueError(f"differences must hold at least 2 numbers, got {d.size}")
    margin = check_real("margin", margin, positive=True)
    mean = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    if se == 0.0:
        return 0.0 if abs(mean) < margin else 1.0
    lower = stats.t.sf((mean + margin) / se, d.size - 1)
    upper = stats.t.cdf((mean - margin) / se, d.size - 1)
    return float(max(lower, upper))


def total_steps(config: ExtrapolationConfig) -> int:
    """Training updates of the whole design (for a progress bar)."""
    per_cell = (len(config.learning_rates) + 1) * config.steps
    extensions = sum(1 for f in config.factors if f != 1)
    rope = 2 * extensions * config.finetune_steps
    n_rope = 1 if "rope" in config.methods else 0
    return len(config.tasks) * (len(config.methods) * per_cell + n_rope * rope)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m posenc.extrapolation OUT.json [--jobs 2]``: run the design, write the results."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args(argv)
    config = ExtrapolationConfig()
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        share = done / total
        elapsed = time.perf_counter() - start
        left = elapsed / share - elapsed if share > 0 else float("nan")
        bar = "#" * int(30 * share)
        sys.stderr.write(
            f"\r[{bar:<30}] {100 * share:5.1f}%  {elapsed:6.0f} s, about {left:5.0f} s left"
        )
        sys.stderr.flush()

    payload = run_extrapolation(config, None, jobs=args.jobs, progress=progress)
    payload["seconds"] = round(time.perf_counter() - start, 1)
    payload["jobs"] = args.jobs
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    sys.stderr.write(f"\nwrote {args.out} in {payload['seconds']} s\n")


if __name__ == "__main__":
    main()
