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
* :func:`length_summary`, :func:`drop_tests`, :func:`extension_tests` and
  the other summaries, with :func:`classify`, the verdict rule: they read
  the results with the statistics of :mod:`posenc.stats` (paired Student-t
  intervals and tests, the two one-sided tests for equivalence within a
  margin, Holm's step-down correction), which this module also re-exports
  under their old names here (:func:`paired_interval`, :func:`paired_tost`,
  :func:`paired_beyond`, :func:`holm`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .lengthtasks import LENGTH_TASKS, make_length_batch
from .scaling import scaled_frequencies, yarn_attention_factor
from .stats import (
    add_holm,
    choose_rate,
    holm,
    mean_interval_or_nan,
    paired_beyond,
    paired_interval,
    paired_tost,
)
from .transformer import POSITION_METHODS, CausalTransformer, train_causal
from .validation import check_integer, check_real

__all__ = [
    "EXTENSIONS",
    "EXTENSION_PAIRS",
    "EXTENSION_VARIANTS",
    "ExtrapolationConfig",
    "accuracy_at",
    "budget_summary",
    "build_model",
    "classify",
    "config_from_dict",
    "drop_tests",
    "drop_unlearned_seeds",
    "extension_accuracies",
    "extension_summary",
    "extension_tests",
    "holm",
    "length_summary",
    "load_results",
    "ntk_sweep_summary",
    "paired_beyond",
    "paired_interval",
    "paired_tost",
    "run_cell",
    "run_extrapolation",
]

EXTENSIONS = ("linear", "ntk", "yarn", "yarn-no-temperature")


@dataclass(frozen=True)
class ExtrapolationConfig:
    """Every parameter of the experiment (the defaults are the chapter's design).

    Validation copies of learning rate ``j`` (position ``j`` in
    ``learning_rates``) use the seeds ``validation_seeds + 100 j``; candidate
    fine-tune rate ``j`` runs on labels ``10_000 (j + 1)`` plus the
    validation copy's seed. ``checkpoints`` are the numbers of updates after
    which the test accuracy is recorded (the budget curve); the last is
    ``steps``, the budget of every other number. ``rate_selection`` says
    how a learning rate is chosen on validation data: by the highest mean
    accuracy with ties to the smaller rate (``"accuracy"``, the design), or
    by the lowest mean cross-entropy (``"loss"``, the sensitivity analysis
    of chapter 7: where several rates reach an accuracy of 1, the first
    rule keeps the smallest of them and the second the one that trained
    furthest). Rates within ``tie_tolerance`` of the best mean (0.01 of
    accuracy, or 0.001 nats of cross-entropy, when not given), or within
    ``tie_band`` standard errors, are tied and the smallest is kept
    (:func:`posenc.stats.choose_rate`), so that a few roundings do not decide;
    files from before these fields kept the best mean alone, exact ties to
    the smaller rate (both 0).
    """

    # The model.
    vocab_size: int = 16
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    base: float = 10_000.0
    # The tasks: tested at these multiples of the length they are trained at.
    factors: tuple[int, ...] = (1, 2, 4)
    train_length: int = 16
    offset: int = 3
    # Training and the choice of its learning rate.
    steps: int = 1000
    checkpoints: tuple[int, ...] = (250, 500, 1000)
    batch_size: int = 16
    learning_rates: tuple[float, ...] = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
    validation_seeds: tuple[int, ...] = (1000, 1001, 1002, 1003)
    seeds: tuple[int, ...] = tuple(range(20))
    # Testing.
    n_test: int = 128
    test_seed: int = 12345
    validation_seed: int = 54321
    # The rules that extend a rotary model, and its short fine-tune.
    finetune_steps: int = 50
    finetune_learning_rates: tuple[float, ...] = (3e-4, 1e-3, 3e-3, 1e-2)
    ntk_alphas: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
    # The verdicts.
    margin: float = 0.05
    rate_selection: str = "accuracy"
    tie_band: float = 0.0
    tie_tolerance: float | None = None
    dtype: str = "float32"
    methods: tuple[str, ...] = POSITION_METHODS
    tasks: tuple[str, ...] = LENGTH_TASKS
    extensions: tuple[str, ...] = EXTENSIONS
    notes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rate_selection not in ("loss", "accuracy"):
            raise ValueError(
                f"rate_selection must be 'loss' or 'accuracy', got {self.rate_selection!r}"
            )
        if self.tie_tolerance is None:
            tolerance = 0.01 if self.rate_selection == "accuracy" else 1e-3
            object.__setattr__(self, "tie_tolerance", tolerance)
        check_real("tie_tolerance", self.tie_tolerance, minimum=0.0)
        check_real("tie_band", self.tie_band, minimum=0.0)

    @property
    def max_test_length(self) -> int:
        return self.train_length * max(self.factors)

    @property
    def budget(self) -> tuple[int, ...]:
        """The checkpoints, with ``steps`` last (checked)."""
        marks = tuple(sorted(set(self.checkpoints) | {self.steps}))
        if marks[0] < 1 or marks[-1] != self.steps:
            raise ValueError(
                f"checkpoints must lie in 1..steps ({self.steps}), got {self.checkpoints}"
            )
        return marks


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
        dtype=config.dtype,
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


def _train(model: CausalTransformer, config: ExtrapolationConfig, task: str, lr: Any, **kw):
    """Train with the design's batch size; ``progress`` counts copy-updates weighted by length."""
    length = kw.pop("length", config.train_length)
    progress = kw.pop("progress", None)
    after = kw.pop("after", None)
    weight = model.n_models * length / config.train_length

    def tick(step: int) -> None:
        if progress is not None:
            progress(weight)
        if after is not None:
            after(step)

    return train_causal(
        model,
        task,
        length=length,
        steps=kw.pop("steps", config.steps),
        batch_size=config.batch_size,
        learning_rate=lr,
        offset=config.offset,
        progress=tick,
        **kw,
    )


def _best(
    config: ExtrapolationConfig,
    rates: Sequence[float],
    scores: np.ndarray,
    losses: np.ndarray,
) -> tuple[int, list[int]]:
    """The rate ``config.rate_selection`` keeps, and the rates tied with the best.

    ``scores`` and ``losses`` hold one value per validation copy, the
    ``k`` copies of each rate consecutive. Rates within ``config.tie_band``
    standard errors (or ``config.tie_tolerance``) of the best mean accuracy
    (``"accuracy"``) or cross-entropy (``"loss"``) are tied, and the smallest
    of them is kept (:func:`posenc.stats.choose_rate`): where several rates
    reach an accuracy of 1 the accuracy rule keeps the smallest of them, and
    a few roundings do not break a tie. A diverged copy (NaN) makes its rate ineligible.
    """
    by_accuracy = config.rate_selection == "accuracy"
    values = np.asarray(scores if by_accuracy else losses, dtype=float)
    return choose_rate(
        rates,
        values.reshape(len(rates), -1),
        higher_is_better=by_accuracy,
        band=config.tie_band,
        tolerance=config.tie_tolerance,
    )


def _per_rate(values: np.ndarray, n_rates: int, k: int) -> list[float]:
    """Mean over each rate's ``k`` consecutive copies."""
    return [float(values[j * k : (j + 1) * k].mean()) for j in range(n_rates)]


def run_cell(
    config: ExtrapolationConfig,
    task: str,
    method: str,
    *,
    seeds: Sequence[int] | None = None,
    learning_rate: float | None = None,
    progress: Callable[[float], None] | None = None,
    extras: bool = True,
) -> dict[str, Any]:
    """Select the learning rate (unless given), train ``seeds``, test at every length.

    All candidate rates are trained at once, as one stack of validation
    copies (each rate on its own seeds, :class:`ExtrapolationConfig`), and
    the rate that ``config.rate_selection`` prefers on validation sequences
    of length ``L`` after ``config.steps`` updates is kept. The test seeds are then trained as one
    stack, and read on the test sequences after every checkpoint.

    Returns a JSON-ready dictionary: ``learning_rate``, ``validation`` and
    ``validation_loss`` (mean validation accuracy and cross-entropy at ``L``
    per candidate rate), ``seeds``,
    ``accuracy`` (per seed, per position up to the longest test length,
    after ``config.steps`` updates; ``None`` where not scored or, for
    learned codes, where the model cannot run), ``budget`` (the same after
    each checkpoint), ``train_seconds`` and, for RoPE (unless ``extras`` is
    false), ``extensions``, ``ntk_sweep``, ``finetune`` and
    ``finetune_selection``. ``progress`` is called after every update with
    the work done (copy-updates, weighted by length over ``L``).
    """
    seeds = config.seeds if seeds is None else tuple(seeds)
    marks = config.budget
    out: dict[str, Any] = {"task": task, "method": method}
    length = config.train_length
    rates = config.learning_rates
    chosen_copies = None
    if learning_rate is None:
        k = len(config.validation_seeds)
        val_seeds = [v + 100 * j for j in range(len(rates)) for v in config.validation_seeds]
        candidates = build_model(config, method, val_seeds)
        _train(
            candidates,
            config,
            task,
            np.repeat(np.array(rates, dtype=float), k),
            data_seed=2,
            progress=progress,
        )
        validation = _test_batch(config, task, config.validation_seed, length)
        per_copy = np.nanmean(candidates.accuracy_by_position(validation), axis=1)
        per_copy_loss = candidates.losses(validation)
        scores = _per_rate(per_copy, len(rates), k)
        losses = _per_rate(per_copy_loss, len(rates), k)
        best, tied = _best(config, rates, per_copy, per_copy_loss)
        learning_rate = rates[best]
        chosen_copies = candidates.subset(range(best * k, (best + 1) * k))
        out["validation"] = {repr(lr): sc for lr, sc in zip(rates, scores, strict=True)}
        out["validation_loss"] = {repr(lr): v for lr, v in zip(rates, losses, strict=True)}
        out["validation_per_seed"] = _by_rate(rates, per_copy, k)
        out["validation_loss_per_seed"] = _by_rate(rates, per_copy_loss, k)
        out["tied_rates"] = [rates[j] for j in tied]
        out["validation_seeds"] = val_seeds
    out["learning_rate"] = learning_rate
    out["seeds"] = list(seeds)
    model = build_model(config, method, seeds)
    test = _test_batch(config, task, config.test_seed, config.max_test_length)
    runnable = length if method == "learned" else config.max_test_length
    budget: dict[str, Any] = {}

    def read(step: int) -> None:
        if step in marks:
            accuracy = np.full((len(seeds), config.max_test_length), np.nan)
            accuracy[:, :runnable] = model.accuracy_by_position(_truncate(test, runnable))
            budget[str(step)] = _jsonable(accuracy)

    history = _train(model, config, task, learning_rate, progress=progress, after=read)
    out["train_seconds"] = history.seconds
    out["final_train_loss"] = float(history.train_loss[-20:].mean())
    out["accuracy"] = budget[str(config.steps)]
    out["budget"] = budget
    if method == "rope" and extras:
        out["extensions"] = _extensions(config, model, test)
        out["ntk_sweep"] = _ntk_sweep(config, model, test)
        if chosen_copies is None:
            raise ValueError("the RoPE extras need the validation run (learning_rate=None)")
        out["finetune"], out["finetune_selection"] = _finetune(
            config, model, chosen_copies, task, test, progress
        )
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
                method="yarn" if how.startswith("yarn") else how,
                factor=factor,
                original_length=config.train_length,
            )
            scale = yarn_attention_factor(factor) ** 2 if how == "yarn" else 1.0
            accuracy = model.accuracy_by_position(part, frequencies=freqs, logit_scale=scale)
            result[f"{how}@{factor}"] = _jsonable(accuracy)
    return result


def _ntk_sweep(config: ExtrapolationConfig, model: CausalTransformer, test) -> dict[str, Any]:
    """NTK-aware scaling with each ``alpha`` of the design, read up to the longest length.

    The new frequencies do not depend on the test length, so with a causal
    model the accuracy at ``2L`` is read off the first ``2L`` positions.
    """
    d_head = config.d_model // config.n_heads
    result: dict[str, Any] = {}
    for alpha in config.ntk_alphas:
        freqs = scaled_frequencies(d_head, config.base, method="ntk", factor=alpha)
        result[repr(float(alpha))] = _jsonable(model.accuracy_by_position(test, frequencies=freqs))
    return result


def _finetune(config, model, chosen, task, test, progress) -> tuple[dict, dict]:
    """Fine-tune copies at ``factor * L``: with position interpolation, and plainly (control).

    For each factor and variant, the fine-tune rate is chosen first: the
    validation copies of the chosen training rate (``chosen``) are
    fine-tuned at every rate of ``config.finetune_learning_rates`` as one
    stack and read on validation sequences of ``factor * L``; the rate
    ``config.rate_selection`` prefers wins. The test copies are then
    fine-tuned at that rate.
    """
    d_head = config.d_model // config.n_heads
    rates = config.finetune_learning_rates
    k = chosen.n_models
    result: dict[str, Any] = {}
    selection: dict[str, Any] = {}
    for factor in config.factors:
        if factor == 1:
            continue
        length = config.train_length * factor
        part = _truncate(test, length)
        validation = _test_batch(config, task, config.validation_seed, length)
        for how in ("linear", "none"):
            freqs = (
                scaled_frequencies(d_head, config.base, method="linear", factor=factor)
                if how == "linear"
                else None
            )
            labels = [10_000 * (j + 1) + s for j in range(len(rates)) for s in chosen.seeds]
            trial = chosen.subset(list(range(k)) * len(rates), seeds=labels)
            _train(
                trial,
                config,
                task,
                np.repeat(np.array(rates, dtype=float), k),
                length=length,
                steps=config.finetune_steps,
                frequencies=freqs,
                data_seed=3,
                progress=progress,
            )
            per_copy = np.nanmean(trial.accuracy_by_position(validation, frequencies=freqs), 1)
            per_copy_loss = trial.losses(validation, frequencies=freqs)
            scores = _per_rate(per_copy, len(rates), k)
            losses = _per_rate(per_copy_loss, len(rates), k)
            best, tied = _best(config, rates, per_copy, per_copy_loss)
            rate = rates[best]
            tuned = copy.deepcopy(model)
            _train(
                tuned,
                config,
                task,
                rate,
                length=length,
                steps=config.finetune_steps,
                frequencies=freqs,
                data_seed=3,
                progress=progress,
            )
            accuracy = tuned.accuracy_by_position(part, frequencies=freqs)
            result[f"{how}@{factor}"] = _jsonable(accuracy)
            selection[f"{how}@{factor}"] = {
                "learning_rate": rate,
                "validation": {repr(r): sc for r, sc in zip(rates, scores, strict=True)},
                "validation_loss": {repr(r): v for r, v in zip(rates, losses, strict=True)},
                "tied_rates": [rates[j] for j in tied],
            }
    return result, selection


def _by_rate(rates: Sequence[float], per_copy: Any, k: int) -> dict[str, list[float | None]]:
    """Each rate's ``k`` per-copy values (``None`` where not finite), keyed by ``repr(rate)``."""
    values = np.asarray(per_copy, dtype=float).reshape(len(rates), k)
    return {
        repr(r): [float(v) if np.isfinite(v) else None for v in row]
        for r, row in zip(rates, values, strict=True)
    }


def _jsonable(accuracy: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(a) else round(float(a), 6) for a in row] for row in accuracy]


_COUNTER: Any = None


def _init_worker(counter: Any) -> None:
    global _COUNTER
    _COUNTER = counter


def _run_unit(args: tuple[int, ExtrapolationConfig, str, str]) -> tuple[int, dict[str, Any]]:
    index, config, task, method = args
    with threadpool_limits(limits=1, user_api="blas"):
        tick = None if _COUNTER is None else _count_work
        return index, run_cell(config, task, method, progress=tick)


def _count_work(work: float) -> None:
    with _COUNTER.get_lock():
        _COUNTER.value += work


def run_extrapolation(
    config: ExtrapolationConfig,
    path: str | Path | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[float, float], None] | None = None,
) -> dict[str, Any]:
    """Run every cell of the design; write the results as JSON to ``path`` if given.

    The cells (one per task and method) are independent and each depends
    only on its seeds, so ``jobs`` worker processes can share them out,
    the heavier RoPE cells first; the results are the same as with one
    process, in the order of the design. ``progress(done, total)`` is
    called about once a second with the training work done
    (:func:`total_steps`).
    """
    import multiprocessing as mp

    jobs = check_integer("jobs", jobs, minimum=1)
    units = [
        (i, config, task, method)
        for i, (task, method) in enumerate(
            (task, method) for task in config.tasks for method in config.methods
        )
    ]
    total = total_steps(config)
    if jobs == 1:
        done = [0.0]

        def tick(work: float) -> None:
            done[0] += work
            if progress is not None:
                progress(done[0], total)

        with threadpool_limits(limits=1, user_api="blas"):
            cells = [run_cell(c, t, m, progress=tick) for _, c, t, m in units]
        return _finish(config, cells, path, progress, total)
    units.sort(key=lambda u: u[3] != "rope")  # the longest cells first
    context = mp.get_context("spawn")
    counter = context.Value("d", 0.0)
    with context.Pool(jobs, initializer=_init_worker, initargs=(counter,)) as pool:
        pending = pool.map_async(_run_unit, units, chunksize=1)
        while not pending.ready():
            pending.wait(1.0)
            if progress is not None:
                progress(counter.value, total)
        cells = [cell for _, cell in sorted(pending.get(), key=lambda pair: pair[0])]
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
    data = {"tie_band": 0.0, "tie_tolerance": 0.0, **data}  # files from before the tie rule
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
                mean_interval_or_nan(accuracy_at(acc, config.train_length * f))
                for f in config.factors
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
    the p-value of no change, the TOST p-value of a change within
    ``± config.margin`` and the one-sided p-value of a change beyond it
    (:func:`paired_beyond`); each of the three families Holm-corrected over
    every row.

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
                        "p_beyond": paired_beyond(diff, config.margin),
                    }
                )
    add_holm(rows, ("p", "p_tost", "p_beyond"))
    return rows


def drop_unlearned_seeds(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]], *, gate: float = 0.95
) -> list[dict[str, Any]]:
    """The cells, each gated cell without its seeds below ``gate`` at ``L``.

    A cell passes the gate on its mean over seeds, so a seed that never
    learned the task can still enter the tests of a method that did; this
    copy leaves such seeds out of every per-seed record (main accuracy,
    budget, extensions, fine-tunes, NTK sweep), to check that a verdict does
    not rest on them. Cells below the gate are returned unchanged.
    """
    gate = check_real("gate", gate, minimum=0.0, maximum=1.0)
    out = []
    for cell in cells:
        base = accuracy_at(cell["accuracy"], config.train_length)
        keep = base >= gate
        if np.isnan(base).any() or base.mean() < gate or keep.all():
            out.append(cell)
            continue
        rows = np.flatnonzero(keep)

        def pick(table: list, rows: np.ndarray = rows) -> list:
            return [table[i] for i in rows]

        new = dict(cell, seeds=pick(cell["seeds"]), accuracy=pick(cell["accuracy"]))
        new["budget"] = {k: pick(v) for k, v in cell["budget"].items()}
        for key in ("extensions", "finetune", "ntk_sweep"):
            if key in cell:
                new[key] = {k: pick(v) for k, v in cell[key].items()}
        out.append(new)
    return out


EXTENSION_VARIANTS = {
    "no scaling": None,
    "PI": ("extensions", "linear"),
    "NTK": ("extensions", "ntk"),
    "YaRN": ("extensions", "yarn"),
    "YaRN, no temperature": ("extensions", "yarn-no-temperature"),
    "fine-tune only": ("finetune", "none"),
    "PI + fine-tune": ("finetune", "linear"),
}

EXTENSION_PAIRS = (
    ("PI", "no scaling"),
    ("NTK", "no scaling"),
    ("YaRN", "no scaling"),
    ("YaRN, no temperature", "no scaling"),
    ("YaRN", "YaRN, no temperature"),
    ("YaRN", "NTK"),
    ("PI + fine-tune", "fine-tune only"),
)
"""The planned comparisons of question 2: ``(variant, against)``."""


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
        out[task] = {
            name: [mean_interval_or_nan(p[name]) for p in per_factor] for name in EXTENSION_VARIANTS
        }
    return out


def extension_tests(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Paired comparisons of the RoPE extensions, Holm-corrected as one family.

    The pairs of :data:`EXTENSION_PAIRS`, per task and factor: each
    zero-shot rule against no scaling; YaRN with its attention temperature
    against YaRN without it (what the temperature adds) and against NTK-aware
    scaling; the fine-tune with position interpolation against the same
    fine-tune without it.
    """
    pairs = EXTENSION_PAIRS
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
                        "p_beyond": paired_beyond(acc[a] - acc[b], config.margin),
                    }
                )
    add_holm(rows, ("p", "p_tost", "p_beyond"))
    return rows


def budget_summary(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]], factor: int
) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    """Mean accuracy at ``factor * L`` with its 95% interval after each checkpoint.

    Returns ``{task: {method: [(mean, low, high) for each checkpoint]}}``
    (one training run per method, read after each number of updates of
    ``config.budget``); NaN where the method cannot run.
    """
    factor = check_integer("factor", factor, minimum=1)
    if factor not in config.factors:
        raise ValueError(f"factor must be one of {config.factors}, got {factor}")
    out: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    for task in config.tasks:
        out[task] = {}
        for method in config.methods:
            budget = _cell(cells, task, method)["budget"]
            out[task][method] = [
                mean_interval_or_nan(accuracy_at(budget[str(step)], config.train_length * factor))
                for step in config.budget
            ]
    return out


def ntk_sweep_summary(
    config: ExtrapolationConfig, cells: Sequence[dict[str, Any]]
) -> dict[str, dict[int, list[tuple[float, float, float]]]]:
    """The RoPE model under NTK-aware scaling with each ``alpha`` (1 = no scaling).

    Returns ``{task: {factor: [(mean, low, high) for alpha in (1, *config.ntk_alphas)]}}``
    for every factor above 1, zero-shot.
    """
    out: dict[str, dict[int, list[tuple[float, float, float]]]] = {}
    for task in config.tasks:
        cell = _cell(cells, task, "rope")
        runs = [cell["accuracy"]] + [cell["ntk_sweep"][repr(float(a))] for a in config.ntk_alphas]
        out[task] = {
            f: [mean_interval_or_nan(accuracy_at(r, config.train_length * f)) for r in runs]
            for f in config.factors
            if f != 1
        }
    return out


def classify(row: dict[str, Any], margin: float, alpha: float = 0.05) -> str:
    """The verdict the design allows for one tested row (Holm-adjusted p-values).

    ``"change beyond the margin"`` (no change rejected, and a change within
    ``±margin`` rejected by the one-sided test of :func:`paired_beyond`,
    ``p_beyond_holm``), ``"change"`` (no change rejected),
    ``"small change"`` (no change rejected and equivalence within the
    margin shown), ``"no change"`` (equivalence shown, no change not
    rejected) or ``"inconclusive"`` (neither).

    Examples
    --------
    >>> classify({"p_holm": 0.001, "p_tost_holm": 0.9, "p_beyond_holm": 0.01}, 0.05)
    'change beyond the margin'
    >>> classify({"p_holm": 0.3, "p_tost_holm": 0.01, "p_beyond_holm": 1.0}, 0.05)
    'no change'
    """
    margin = check_real("margin", margin, positive=True)
    changed = row["p_holm"] < alpha
    within = row["p_tost_holm"] < alpha
    if changed and within:
        return "small change"
    if changed:
        return "change beyond the margin" if row["p_beyond_holm"] < alpha else "change"
    return "no change" if within else "inconclusive"


def total_steps(config: ExtrapolationConfig) -> float:
    """Training work of the whole design, in copy-updates at length ``L`` (for a progress bar).

    An update of a stack of ``M`` copies at length ``s L`` counts ``M s``.
    """
    n_val = len(config.learning_rates) * len(config.validation_seeds)
    per_cell = (n_val + len(config.seeds)) * config.steps
    n_ft = len(config.finetune_learning_rates) * len(config.validation_seeds) + len(config.seeds)
    rope = sum(2 * n_ft * config.finetune_steps * f for f in config.factors if f != 1)
    n_rope = 1 if "rope" in config.methods else 0
    return float(len(config.tasks) * (len(config.methods) * per_cell + n_rope * rope))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m posenc.extrapolation OUT.json [--jobs 2] [--rate-selection loss]``."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--rate-selection",
        choices=("accuracy", "loss"),
        default="accuracy",
        help="how validation data choose a learning rate (default: the design's 'accuracy')",
    )
    args = parser.parse_args(argv)
    config = ExtrapolationConfig(rate_selection=args.rate_selection)
    start = time.perf_counter()
    shown = [-1.0]

    def progress(done: float, total: float) -> None:
        share = done / total
        elapsed = time.perf_counter() - start
        if elapsed - shown[0] < 1.0 and done < total:
            return
        shown[0] = elapsed
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
