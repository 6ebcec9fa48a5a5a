r"""Addition or concatenation, the verdicts and their tables (chapter 5).

What a results file of :mod:`posenc.experiment` says, read with the tests of
:mod:`posenc.stats`:

* :func:`load_results` reads a file of ``results/``;
* :func:`summarise`, :func:`format_summary` and :func:`learning_curves`: the
  first experiment (:func:`posenc.experiment.run_experiment`) as a table and
  as curves;
* :class:`Comparison`, :func:`cell_accuracy`, :func:`family_tests` and
  :func:`compare_design`: the designed experiment's verdict rule, every
  concatenated model against its added twin, Holm-corrected over a family;
  :func:`with_added_models_of` compares another run's added models instead;
* :func:`budget_curve`: a difference and its interval at every recorded budget;
* :func:`format_comparisons` and :func:`format_cells`: the comparisons and
  the cells as text tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .experiment import MATCHINGS, Design, ExperimentResult
from .stats import difference_interval, holm, mean_confidence_interval, tost, welch_test
from .validation import check_array, check_choice

__all__ = [
    "Comparison",
    "SummaryRow",
    "budget_curve",
    "cell_accuracy",
    "compare_design",
    "family_tests",
    "format_cells",
    "format_comparisons",
    "format_summary",
    "learning_curves",
    "load_results",
    "summarise",
    "with_added_models_of",
]


# -- the first experiment --------------------------------------------------------------


@dataclass(frozen=True)
class SummaryRow:
    """Test accuracy of one configuration on one task, over the seeds."""

    task: str
    label: str
    d_token: int
    d_position: int
    width: int
    n_parameters: int
    accuracies: np.ndarray
    mean: float
    low: float
    high: float


def summarise(result: ExperimentResult, confidence: float = 0.95) -> list[SummaryRow]:
    """Mean test accuracy and its Student-t interval for every run.

    The interval is cut to ``[0, 1]``, the range an accuracy can take (with
    five seeds near 100 %, the symmetric t interval would reach past it).
    """
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    rows = []
    for run in result.runs:
        mean, low, high = mean_confidence_interval(run.accuracies, confidence)
        low, high = max(low, 0.0), min(high, 1.0)  # an accuracy lies in [0, 1]
        spec = run.spec
        rows.append(
            SummaryRow(
                run.task,
                spec.label,
                spec.d_token,
                spec.d_position,
                spec.width,
                spec.n_parameters,
                run.accuracies.copy(),
                mean,
                low,
                high,
            )
        )
    return rows


def format_summary(rows: Sequence[SummaryRow]) -> str:
    """The summary as a text table, one block per task, accuracies in percent with one decimal.

    Examples
    --------
    >>> row = SummaryRow("relative", "learned add", 16, 16, 16, 1058,
    ...                  np.array([0.97, 0.99]), 0.98, 0.853, 1.0)
    >>> print(format_summary([row]))
    relative task                        width  params   mean %   95% interval %
      learned add                           16    1058     98.0   [ 85.3, 100.0]
    """
    lines = []
    task = None
    for r in rows:
        if r.task != task:
            task = r.task
            lines.append(
                f"{task + ' task':<36} {'width':>5}  {'params':>6}  {'mean %':>7}   95% interval %"
            )
        lines.append(
            f"  {r.label:<35} {r.width:>4}  {r.n_parameters:>6}  {100 * r.mean:7.1f}"
            f"   [{100 * r.low:5.1f}, {100 * r.high:5.1f}]"
        )
    return "\n".join(lines)


def learning_curves(
    result: ExperimentResult, task: str
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Test accuracy during training on ``task``, per configuration, over the seeds.

    Returns
    -------
    (numpy.ndarray, dict of str to numpy.ndarray)
        The steps ``(n_eval,)`` and, for every configuration label, an array
        ``(3, n_eval)``: the mean, the lowest and the highest accuracy over
        the seeds.
    """
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    task = check_choice("task", task, result.tasks)
    curves = {}
    steps = None
    for run in result.runs:
        if run.task != task:
            continue
        acc = run.history.test_accuracy
        steps = run.history.steps
        curves[run.spec.label] = np.stack([acc.mean(axis=1), acc.min(axis=1), acc.max(axis=1)])
    return steps, curves


# -- the designed experiment -----------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One comparison of the designed experiment: a concatenated model minus its added twin.

    Attributes
    ----------
    length, d_model, n_layers : int
        The regime.
    code : str
        ``"sinusoidal"`` or ``"learned"``.
    concat, added : numpy.ndarray
        Final test accuracy of every seed, ``(seeds,)`` each.
    difference, low, high : float
        ``mean(concat) - mean(added)`` and its 95 % Welch interval.
    p : float
        Two-sided Welch p-value of "no difference".
    p_holm : float
        ``p`` after Holm's correction over the family.
    p_tost : float
        TOST p-value of "the difference is at least the margin".
    p_tost_holm : float
        ``p_tost`` after Holm's correction over the family.
    ceiling : bool
        Both means at or above the design's ceiling.
    verdict : str
        ``"concat better"``, ``"add better"``, ``"equivalent"`` or
        ``"undecided"``, from the corrected tests at level ``alpha``.
    matching : str
        How the concatenated model was matched to the added one:
        ``"parameters"`` (the primary family) or ``"width"`` (the secondary).
    """

    length: int
    d_model: int
    n_layers: int
    code: str
    concat: np.ndarray
    added: np.ndarray
    difference: float
    low: float
    high: float
    p: float
    p_holm: float
    p_tost: float
    p_tost_holm: float
    ceiling: bool
    verdict: str
    matching: str = "parameters"

    @property
    def regime(self) -> str:
        """E.g. ``"L=32, d=16, 1 layer"``."""
        layers = "1 layer" if self.n_layers == 1 else f"{self.n_layers} layers"
        return f"L={self.length}, d={self.d_model}, {layers}"


def _matched(cell: dict[str, Any], matching: str) -> bool:
    """Whether ``cell`` belongs to the comparisons at ``matching`` (added models always do)."""
    if "concat" not in cell["variant"]:
        return True
    return cell.get("matching", "parameters") == matching


def cell_accuracy(
    results: dict[str, Any], step: int | None = None, matching: str = "parameters"
) -> dict[tuple, np.ndarray]:
    """Test accuracy of every seed of every cell, keyed ``(L, d, n_layers, variant)``.

    ``step`` picks a recorded step (the default: the last one, the full
    budget); ``matching`` picks the concatenated models, matched to the added
    ones in ``"parameters"`` (the default) or in ``"width"``.
    """
    matching = check_choice("matching", matching, MATCHINGS)
    out = {}
    for cell in results["cells"]:
        if not _matched(cell, matching):
            continue
        steps = list(cell["steps"])
        row = len(steps) - 1 if step is None else steps.index(step)
        key = (cell["length"], cell["d_model"], cell["n_layers"], cell["variant"])
        out[key] = np.asarray(cell["test_accuracy"][row], dtype=float)
    return out


def family_tests(pairs: Mapping[Any, tuple[Any, Any]], design: Design) -> dict[Any, dict[str, Any]]:
    """The design's tests and verdict rule for one family of ``first - second`` pairs.

    For every key, Welch's interval and test of ``mean(first) - mean(second)``,
    the TOST against ``design.margin``, and whether both means reach
    ``design.ceiling``; both sets of p-values are corrected with :func:`holm`
    over the whole family. The verdict at ``design.alpha``: ``"first
    better"`` or ``"second better"`` if the corrected difference test
    rejects, else ``"equivalent"`` if the corrected TOST rejects, else
    ``"undecided"`` (the ceiling is reported beside it, not as a verdict).

    Examples
    --------
    >>> tests = family_tests({"x": ([0.9, 0.8, 0.85], [0.5, 0.4, 0.45])}, Design())
    >>> tests["x"]["verdict"], round(tests["x"]["difference"], 2)
    ('first better', 0.4)
    """
    if not isinstance(design, Design):
        raise TypeError(f"design must be a Design, got {type(design).__name__}")
    if not pairs:
        raise ValueError("pairs must hold at least one (first, second) pair")
    rows = {}
    for key, (first, second) in pairs.items():
        first = check_array(f"pairs[{key!r}][0]", first, ndim=1)
        second = check_array(f"pairs[{key!r}][1]", second, ndim=1)
        diff, low, high = difference_interval(first, second)
        rows[key] = {
            "first": first,
            "second": second,
            "difference": diff,
            "low": low,
            "high": high,
            "p": welch_test(first, second)[2],
            "p_tost": tost(first, second, design.margin)[0],
            "ceiling": bool(min(first.mean(), second.mean()) >= design.ceiling),
        }
    p_holm = holm([r["p"] for r in rows.values()])
    p_tost_holm = holm([r["p_tost"] for r in rows.values()])
    for r, ph, pth in zip(rows.values(), p_holm, p_tost_holm, strict=True):
        r["p_holm"], r["p_tost_holm"] = float(ph), float(pth)
        if ph < design.alpha:
            r["verdict"] = "first better" if r["difference"] > 0 else "second better"
        elif pth < design.alpha:
            r["verdict"] = "equivalent"
        else:
            r["verdict"] = "undecided"
    return rows


def compare_design(
    results: dict[str, Any], step: int | None = None, matching: str = "parameters"
) -> list[Comparison]:
    """One family of comparisons of a results file, with Holm-corrected tests.

    For every regime and every code, concatenated minus added, with the
    concatenated models matched in ``matching``: ``"parameters"``, the
    primary family, or ``"width"``, the secondary one. The family is every
    comparison returned; both the difference tests and the TOSTs are
    corrected over it with :func:`holm`. The verdict at level ``alpha``
    (:func:`family_tests`): "concat better" or "add better" if the
    corrected difference test rejects, else "equivalent" if the corrected
    TOST rejects (the difference lies within ``±margin``), else "undecided".
    """
    design = Design.from_dict(results["design"])
    acc = cell_accuracy(results, step, matching)
    pairs = {}
    for length, d_model, n_layers in design.regimes:
        for code in ("sinusoidal", "learned"):
            key_c = (length, d_model, n_layers, f"{code}-concat")
            key_a = (length, d_model, n_layers, f"{code}-add")
            if key_c in acc and key_a in acc:
                pairs[length, d_model, n_layers, code] = acc[key_c], acc[key_a]
    if not pairs:
        raise ValueError("results hold no pair of concatenated and added models")
    names = {"first better": "concat better", "second better": "add better"}
    return [
        Comparison(
            *key,
            r["first"],
            r["second"],
            r["difference"],
            r["low"],
            r["high"],
            r["p"],
            r["p_holm"],
            r["p_tost"],
            r["p_tost_holm"],
            r["ceiling"],
            names.get(r["verdict"], r["verdict"]),
            matching,
        )
        for key, r in family_tests(pairs, design).items()
    ]


def with_added_models_of(results: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    """``results`` with its added models replaced by those of another run, ``arm``.

    The concatenated models of ``results`` whose code ``arm`` also trains
    are kept, and the added models are taken from ``arm`` (the same regimes,
    seeds and data, trained another way, e.g. :data:`TOKEN_SCALE`), so that
    :func:`compare_design` of the result compares the two, in a family of its
    own: every regime and matching of the codes ``arm`` holds.

    Examples
    --------
    >>> main = {"design": {}, "cells": [
    ...     {"variant": "sinusoidal-concat", "length": 8},
    ...     {"variant": "sinusoidal-add", "length": 8},
    ...     {"variant": "learned-concat", "length": 8}]}
    >>> arm = {"cells": [{"variant": "sinusoidal-add", "length": 8, "embedding_scale": 0.25}]}
    >>> [c["variant"] for c in with_added_models_of(main, arm)["cells"]]
    ['sinusoidal-concat', 'sinusoidal-add']
    """
    for name, value in (("results", results), ("arm", arm)):
        if not isinstance(value, dict) or "cells" not in value:
            raise TypeError(
                f"{name} must be a results dict with 'cells', got {type(value).__name__}"
            )
    added = [c for c in arm["cells"] if c["variant"].endswith("-add")]
    if not added:
        raise ValueError("arm holds no added models")
    codes = {c["variant"].split("-")[0] for c in added}
    kept = [
        c
        for c in results["cells"]
        if c["variant"].endswith("-concat") and c["variant"].split("-")[0] in codes
    ]
    return {"design": results["design"], "cells": kept + added}


def budget_curve(
    results: dict[str, Any],
    length: int,
    d_model: int,
    n_layers: int,
    code: str,
    matching: str = "parameters",
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated minus added, with its 95 % Welch interval, at every recorded budget.

    ``matching`` picks the concatenated model (see :func:`cell_accuracy`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The steps ``(n_eval,)`` and ``(3, n_eval)``: difference, low, high
        (steps where both models have no spread give a zero-width interval).
    """
    code = check_choice("code", code, ("sinusoidal", "learned"))
    matching = check_choice("matching", matching, MATCHINGS)
    cells = {
        c["variant"]: c
        for c in results["cells"]
        if (c["length"], c["d_model"], c["n_layers"]) == (length, d_model, n_layers)
        and _matched(c, matching)
    }
    if f"{code}-concat" not in cells or f"{code}-add" not in cells:
        raise ValueError(f"no {code} pair for L={length}, d={d_model}, {n_layers} layer(s)")
    concat = np.asarray(cells[f"{code}-concat"]["test_accuracy"], dtype=float)
    added = np.asarray(cells[f"{code}-add"]["test_accuracy"], dtype=float)
    steps = np.asarray(cells[f"{code}-add"]["steps"])
    curve = np.array([difference_interval(c, a) for c, a in zip(concat, added, strict=True)]).T
    return steps, curve


def format_comparisons(comparisons: Sequence[Comparison]) -> str:
    """The comparisons as a text table, differences in points (percent of the test set)."""
    lines = [
        f"{'regime':<24}{'code':<11}{'concat-add':>10}  {'95% interval':>16}"
        f"  {'p Holm':>7}  {'TOST Holm':>9}  verdict"
    ]
    for c in comparisons:
        flag = " (ceiling)" if c.ceiling else ""
        lines.append(
            f"{c.regime:<24}{c.code:<11}{100 * c.difference:+10.1f}  "
            f"[{100 * c.low:+6.1f}, {100 * c.high:+6.1f}]  {c.p_holm:7.3f}  "
            f"{c.p_tost_holm:9.3f}  {c.verdict}{flag}"
        )
    return "\n".join(lines)


def load_results(name: str = "ch5_experiment.json") -> dict[str, Any]:
    """Read a results file from ``results/`` in the working directory or the nearest parent.

    Examples
    --------
    >>> load_results("no_such_file.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: results/no_such_file.json not found here or in any parent; ...
    """
    import json
    from pathlib import Path

    for folder in (Path.cwd(), *Path.cwd().parents):
        path = folder / "results" / name
        if path.is_file():
            return json.loads(path.read_text())
    raise FileNotFoundError(
        f"results/{name} not found here or in any parent; run `make experiments`"
    )


def format_cells(results: dict[str, Any], confidence: float = 0.95) -> str:
    """Every cell of a results file as a text table: rate, parameters, accuracy, steps-to-threshold.

    Accuracy in percent: the mean over seeds with its Student-t interval
    (cut to [0, 100]) and the worst seed; steps-to-threshold as the median
    over seeds (">budget" when more than half never reach it).
    """
    design = Design.from_dict(results["design"])
    reach_label = f"to {100 * design.threshold:.0f}%"
    lines = [
        f"{'regime':<22}{'model':<37}{'rate':>6}{'params':>7}{'gap':>7}"
        f"{'mean %':>8}{'95% interval':>16}{'worst':>7}{reach_label:>8}"
    ]
    for c in results["cells"]:
        acc = np.asarray(c["test_accuracy"][-1], dtype=float)
        mean, low, high = mean_confidence_interval(acc, confidence)
        low, high = max(low, 0.0), min(high, 1.0)
        reach = np.array([np.inf if s is None else s for s in c["steps_to_threshold"]])
        median = np.median(reach)
        to = f">{design.steps}" if not np.isfinite(median) else f"{median:.0f}"
        gap = c["n_parameters"] / c["reference_parameters"] - 1
        layers = "1 layer" if c["n_layers"] == 1 else "2 layers"
        lines.append(
            f"{'L=' + str(c['length']) + ', d=' + str(c['d_model']) + ', ' + layers:<22}"
            f"{c['label']:<37}{c['learning_rate']:>6g}{c['n_parameters']:>7}"
            f"{100 * gap:>+6.1f}%{100 * mean:>8.1f}   [{100 * low:5.1f}, {100 * high:5.1f}]"
            f"{100 * acc.min():>7.1f}{to:>8}"
        )
    return "\n".join(lines)
