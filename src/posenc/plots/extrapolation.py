"""Figures of chapter 7, length extrapolation and context extension.

Each function returns a :class:`matplotlib.figure.Figure`; the numbers come
from :mod:`posenc.extrapolation` and :mod:`posenc.scaling`, the functions
only draw them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..validation import check_array
from .style import QUALITATIVE, detached

__all__ = [
    "budget_figure",
    "extension_figure",
    "extrapolation_figure",
    "ntk_sweep_figure",
    "per_position_figure",
    "scale_factor_figure",
]

_PALETTE = tuple(c for c in QUALITATIVE if c not in ("#F0E442", "#000000"))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _interval_rows(name: str, rows: Sequence[Sequence[float]]) -> np.ndarray:
    array = check_array(name, rows, ndim=2, finite=False)
    if array.shape[1] != 3:
        raise ValueError(f"{name} must have rows (mean, low, high), got shape {array.shape}")
    return array


def extrapolation_figure(
    results: Mapping[str, Mapping[str, Sequence[Sequence[float]]]],
    lengths: Sequence[int],
    *,
    train_length: int,
    chance: float,
) -> Figure:
    """Accuracy against test length, one panel per task, one line per method.

    Parameters
    ----------
    results : mapping task -> mapping method -> rows ``(mean, low, high)``
        One row per entry of ``lengths``; NaN where a method cannot run.
    lengths : sequence of int
        The test lengths (tokens).
    train_length : int
        Drawn as a dashed vertical line.
    chance : float
        Accuracy of a uniform guess, drawn as a dotted line.

    Examples
    --------
    >>> fig = extrapolation_figure(
    ...     {"t": {"a": [[1, 1, 1], [0.5, 0.4, 0.6]]}}, [16, 32], train_length=16, chance=0.1
    ... )
    >>> len(fig.axes)
    1
    """
    if not results:
        raise ValueError("results must hold at least one task")
    lengths = np.asarray(lengths, dtype=float)
    fig, axes = plt.subplots(
        1,
        len(results),
        figsize=(4.2 * len(results) + 1.6, 4.0),
        layout="constrained",
        squeeze=False,
    )
    for ax, (task, methods) in zip(axes[0], results.items(), strict=True):
        for index, (method, rows) in enumerate(methods.items()):
            rows = _interval_rows(f"results[{task!r}][{method!r}]", rows)
            ok = ~np.isnan(rows[:, 0])
            shift = 1.0 + 0.02 * (index - len(methods) / 2)  # keep error bars apart
            ax.errorbar(
                lengths[ok] * shift,
                rows[ok, 0],
                yerr=[rows[ok, 0] - rows[ok, 1], rows[ok, 2] - rows[ok, 0]],
                color=_PALETTE[index % len(_PALETTE)],
                marker=_MARKERS[index % len(_MARKERS)],
                capsize=3,
                label=method,
            )
        ax.axvline(train_length, color="0.4", linestyle="--", linewidth=1)
        ax.axhline(chance, color="0.4", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [f"{int(n)}" for n in lengths])
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel("test length (tokens; dashed: training length)")
        ax.set_ylabel("accuracy (share of answers; dotted: chance)")
        ax.set_title(f"task: {task}")
    axes[0, -1].legend(
        loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title="position"
    )
    return detached(fig)


def scale_factor_figure(factors: Mapping[str, Sequence[float]], *, factor: float) -> Figure:
    """Per-pair frequency divisor of each context-extension rule.

    Parameters
    ----------
    factors : mapping method -> array ``(d/2,)``
        :func:`posenc.scaling.scale_factors` of each rule.
    factor : float
        The extension, drawn as a dotted line (full interpolation).

    Examples
    --------
    >>> fig = scale_factor_figure({"linear": [2, 2], "ntk": [1, 2]}, factor=2)
    >>> len(fig.axes[0].lines)
    3
    """
    if not factors:
        raise ValueError("factors must hold at least one method")
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    for index, (method, values) in enumerate(factors.items()):
        values = check_array(f"factors[{method!r}]", values, ndim=1)
        ax.plot(
            np.arange(values.size),
            values,
            marker=_MARKERS[index % len(_MARKERS)],
            color=_PALETTE[index % len(_PALETTE)],
            label=method,
        )
    ax.axhline(factor, color="0.4", linestyle=":", linewidth=1)
    ax.set_xlabel("rotary pair i (0 = fastest)")
    ax.set_ylabel("frequency divided by (θ_i / θ'_i)")
    ax.set_title(f"How each rule rescales the pairs, extension factor {factor:g}")
    ax.legend(fontsize="small")
    return detached(fig)


def extension_figure(
    results: Mapping[str, Mapping[str, Sequence[Sequence[float]]]],
    factors: Sequence[int],
    *,
    chance: float,
) -> Figure:
    """RoPE accuracy at the longer lengths under each extension, one panel per task.

    Parameters
    ----------
    results : mapping task -> mapping variant -> rows ``(mean, low, high)``
        One row per entry of ``factors``.
    factors : sequence of int
        The extension factors (test length over training length).
    chance : float
        Drawn as a dotted line.

    Examples
    --------
    >>> fig = extension_figure({"t": {"none": [[0.5, 0.4, 0.6]]}}, [2], chance=0.1)
    >>> len(fig.axes)
    1
    """
    if not results:
        raise ValueError("results must hold at least one task")
    fig, axes = plt.subplots(
        1,
        len(results),
        figsize=(4.2 * len(results) + 1.8, 4.0),
        layout="constrained",
        squeeze=False,
    )
    for ax, (task, variants) in zip(axes[0], results.items(), strict=True):
        width = 0.8 / len(variants)
        for index, (variant, rows) in enumerate(variants.items()):
            rows = _interval_rows(f"results[{task!r}][{variant!r}]", rows)
            x = np.arange(len(factors)) + (index - (len(variants) - 1) / 2) * width
            ax.bar(
                x,
                rows[:, 0],
                width,
                yerr=[rows[:, 0] - rows[:, 1], rows[:, 2] - rows[:, 0]],
                color=_PALETTE[index % len(_PALETTE)],
                hatch="//" if index >= len(_PALETTE) else None,  # colours run out: hatch
                edgecolor="white",
                capsize=2,
                label=variant,
            )
        ax.axhline(chance, color="0.4", linestyle=":", linewidth=1)
        ax.set_xticks(np.arange(len(factors)), [f"{f}× training length" for f in factors])
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy (share of answers; dotted: chance)")
        ax.set_title(f"task: {task}")
    axes[0, -1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    return detached(fig)


def per_position_figure(
    curves: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    train_length: int,
    chance: float,
) -> Figure:
    """Accuracy at each position, one panel per task, one line per method.

    Parameters
    ----------
    curves : mapping task -> mapping method -> array ``(max_length,)``
        Mean accuracy over seeds at each position; NaN where a position is
        not scored or the method cannot run (those points are left out).
    train_length : int
        Drawn as a dashed vertical line: positions from it on were never
        seen in training.
    chance : float
        Accuracy of a uniform guess, drawn as a dotted line.

    Examples
    --------
    >>> fig = per_position_figure(
    ...     {"t": {"a": [float("nan"), 1.0, 0.5]}}, train_length=2, chance=0.1
    ... )
    >>> len(fig.axes[0].lines)
    3
    """
    if not curves:
        raise ValueError("curves must hold at least one task")
    fig, axes = plt.subplots(
        1,
        len(curves),
        figsize=(4.2 * len(curves) + 1.6, 4.0),
        layout="constrained",
        squeeze=False,
    )
    # One colour and marker per method across all panels, one legend entry each.
    order = list(dict.fromkeys(m for methods in curves.values() for m in methods))
    handles = {}
    for ax, (task, methods) in zip(axes[0], curves.items(), strict=True):
        for method, values in methods.items():
            index = order.index(method)
            values = check_array(f"curves[{task!r}][{method!r}]", values, ndim=1, finite=False)
            ok = ~np.isnan(values)
            ax.plot(
                np.flatnonzero(ok),
                values[ok],
                color=_PALETTE[index % len(_PALETTE)],
                marker=_MARKERS[index % len(_MARKERS)],
                markersize=3,
                linewidth=1.2,
                label=method,
            )
            handles.setdefault(method, ax.lines[-1])
        ax.axvline(train_length - 0.5, color="0.4", linestyle="--", linewidth=1)
        ax.axhline(chance, color="0.4", linestyle=":", linewidth=1)
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel("position in the test sequence (dashed: training length)")
        ax.set_ylabel("accuracy (share of answers; dotted: chance)")
        ax.set_title(f"task: {task}")
    axes[0, -1].legend(
        [handles[m] for m in order],
        order,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize="small",
        title="position",
    )
    return detached(fig)


def budget_figure(
    panels: Mapping[str, Mapping[str, Sequence[Sequence[float]]]],
    steps: Sequence[int],
    *,
    chance: float,
    ncols: int = 2,
) -> Figure:
    """Accuracy against the number of training updates (a budget curve), one line per method.

    Parameters
    ----------
    panels : mapping title -> mapping method -> rows ``(mean, low, high)``
        One panel each (e.g. one task at one test length); one row per entry
        of ``steps``; NaN where a method cannot run (left out).
    steps : sequence of int
        The checkpoints (updates), on a log scale.
    chance : float
        Accuracy of a uniform guess, drawn as a dotted line.
    ncols : int
        Panels per row.

    Examples
    --------
    >>> fig = budget_figure({"t": {"a": [[0.5, 0.4, 0.6], [0.9, 0.8, 1.0]]}}, [10, 20], chance=0.1)
    >>> len(fig.axes)
    1
    """
    if not panels:
        raise ValueError("panels must hold at least one panel")
    steps = np.asarray(steps, dtype=float)
    ncols = min(ncols, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(4.2 * ncols + 1.6, 3.4 * nrows),
        layout="constrained",
        squeeze=False,
    )
    order = list(dict.fromkeys(m for methods in panels.values() for m in methods))
    handles = {}
    for ax, (title, methods) in zip(axes.flat, panels.items(), strict=False):
        for method, rows in methods.items():
            index = order.index(method)
            rows = _interval_rows(f"panels[{title!r}][{method!r}]", rows)
            ok = ~np.isnan(rows[:, 0])
            if not ok.any():
                continue
            shift = 1.0 + 0.02 * (index - len(order) / 2)
            bars = ax.errorbar(
                steps[ok] * shift,
                rows[ok, 0],
                yerr=[rows[ok, 0] - rows[ok, 1], rows[ok, 2] - rows[ok, 0]],
                color=_PALETTE[index % len(_PALETTE)],
                marker=_MARKERS[index % len(_MARKERS)],
                capsize=3,
                label=method,
            )
            handles.setdefault(method, bars)
        ax.axhline(chance, color="0.4", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(steps, [f"{int(n)}" for n in steps])
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel("training updates")
        ax.set_ylabel("accuracy (share; dotted: chance)")
        ax.set_title(title)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    axes[0, -1].legend(
        [handles[m] for m in order if m in handles],
        [m for m in order if m in handles],
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize="small",
        title="position",
    )
    return detached(fig)


def ntk_sweep_figure(
    results: Mapping[str, Mapping[int, Sequence[Sequence[float]]]],
    alphas: Sequence[float],
    *,
    chance: float,
) -> Figure:
    """RoPE accuracy under NTK-aware scaling against its factor alpha, one panel per task.

    Parameters
    ----------
    results : mapping task -> mapping factor -> rows ``(mean, low, high)``
        One line per extension factor ``s`` (test length over training
        length), one row per entry of ``alphas``.
    alphas : sequence of float
        The NTK factors (1 = no scaling), on a log scale; the point
        ``alpha = s`` of each line (the usual choice) is circled.
    chance : float
        Drawn as a dotted line.

    Examples
    --------
    >>> fig = ntk_sweep_figure({"t": {2: [[0.5, 0.4, 0.6], [0.7, 0.6, 0.8]]}}, [1, 2], chance=0.1)
    >>> len(fig.axes)
    1
    """
    if not results:
        raise ValueError("results must hold at least one task")
    alphas = check_array("alphas", alphas, ndim=1)
    fig, axes = plt.subplots(
        1,
        len(results),
        figsize=(4.2 * len(results) + 1.6, 3.8),
        layout="constrained",
        squeeze=False,
    )
    for ax, (task, lines) in zip(axes[0], results.items(), strict=True):
        for index, (factor, rows) in enumerate(lines.items()):
            rows = _interval_rows(f"results[{task!r}][{factor!r}]", rows)
            if rows.shape[0] != alphas.size:
                raise ValueError(
                    f"results[{task!r}][{factor!r}] must have one row per alpha "
                    f"({alphas.size}), got {rows.shape[0]}"
                )
            color = _PALETTE[index % len(_PALETTE)]
            ax.errorbar(
                alphas,
                rows[:, 0],
                yerr=[rows[:, 0] - rows[:, 1], rows[:, 2] - rows[:, 0]],
                color=color,
                marker=_MARKERS[index % len(_MARKERS)],
                capsize=3,
                label=f"at {factor}× training length",
            )
            at_s = np.isclose(alphas, factor)
            ax.plot(
                alphas[at_s],
                rows[at_s, 0],
                linestyle="none",
                marker="o",
                markersize=12,
                markerfacecolor="none",
                markeredgecolor=color,
            )
        ax.axhline(chance, color="0.4", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlabel("NTK factor α (1: no scaling; circled: α = s)")
        ax.set_ylabel("accuracy (share; dotted: chance)")
        ax.set_title(f"task: {task}")
    axes[0, -1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    return detached(fig)
