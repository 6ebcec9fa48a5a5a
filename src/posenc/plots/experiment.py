"""Figures of chapter 5, addition or concatenation.

Each function returns a :class:`matplotlib.figure.Figure`. The numbers are
computed by :mod:`posenc.experiment_analysis`, :mod:`posenc.experiment_verdicts`
and :mod:`posenc.stats` and passed in; the functions here only draw them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..experiment_analysis import SCORE_TERMS
from ..experiment_verdicts import Comparison, SummaryRow
from ..stats import difference_interval
from ..validation import check_array, check_real
from .style import QUALITATIVE, detached

__all__ = [
    "accuracy_figure",
    "budget_figure",
    "comparison_figure",
    "cosine_figure",
    "learning_curve_figure",
    "power_figure",
    "readout_figure",
    "score_term_figure",
]


# Okabe-Ito without yellow (too faint on white) and black (kept for the
# model without positions, the baseline of every comparison).
_PALETTE = tuple(c for c in QUALITATIVE if c not in ("#F0E442", "#000000"))
_BASELINE = "no position"


def _colour(index: int) -> str:
    return _PALETTE[index % len(_PALETTE)]


def _label_colours(labels: Sequence[str]) -> dict[str, str]:
    """Black for the model without positions, the palette in order for the others."""
    others = [label for label in labels if label != _BASELINE]
    colours = {label: _colour(i) for i, label in enumerate(others)}
    colours[_BASELINE] = "#000000"
    return colours


def cosine_figure(cosines: Mapping[int, np.ndarray]) -> Figure:
    """Histograms of token-position cosines, one outline per width ``d``.

    Parameters
    ----------
    cosines : mapping of int to array_like
        For every width ``d``, the cosines from
        :func:`posenc.experiment_analysis.token_position_cosines`.

    Returns
    -------
    matplotlib.figure.Figure
        One axis, one step histogram (as a density) per width.

    Examples
    --------
    >>> fig = cosine_figure({16: np.linspace(-0.5, 0.5, 50), 64: np.zeros(10)})
    >>> len(fig.axes[0].patches)
    2
    """
    if not cosines:
        raise ValueError("cosines must hold at least one width")
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    bins = np.linspace(-1, 1, 161)
    for index, (d, values) in enumerate(sorted(cosines.items())):
        values = check_array(f"cosines[{d}]", values, ndim=1)
        ax.hist(
            values,
            bins=bins,
            density=True,
            histtype="step",
            linewidth=1.8,
            color=_colour(index),
            label=f"d = {d}",
        )
    ax.set_xlabel("cosine between a token embedding and a position code (dimensionless)")
    ax.set_ylabel("density (per unit cosine)")
    ax.set_title("Random token embeddings are nearly orthogonal to the position codes")
    ax.set_xlim(-0.8, 0.8)
    ax.legend(frameon=False)
    return detached(fig)


def readout_figure(
    d_values: Sequence[int],
    by_width: Mapping[str, np.ndarray],
    ratios: Sequence[float],
    by_ratio: np.ndarray,
    d_fixed: int,
    marks: Mapping[str, float] | None = None,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """Linear read-out of token and position from their sum: against ``d``, and against scale.

    Parameters
    ----------
    d_values : sequence of int
        Widths of the left panel.
    by_width : mapping of str to array_like
        For each scaling of the token embeddings (a legend label), the
        accuracies ``(len(d_values), 2)``: token, position.
    ratios : sequence of float
        Length of a token vector divided by the length of a position code,
        for the right panel.
    by_ratio : array_like
        Accuracies ``(len(ratios), 2)`` at width ``d_fixed``.
    d_fixed : int
        Width of the right panel.
    marks : mapping of str to float, optional
        Ratios to mark on the right panel with a vertical line, by legend
        label (default: the ratio sqrt(2) that the sqrt(d_model) factor gives).
    colours : mapping of str to str, optional
        The colour of each scaling of the left panel, by its key in
        ``by_width`` (default: the palette in order), so that a page can give
        one colour one meaning across its figures. The right panel, which
        varies the scaling itself, draws token and position in dark grey,
        told apart by their markers as on the left.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes.

    Examples
    --------
    >>> acc = np.ones((2, 2))
    >>> fig = readout_figure([8, 16], {"x1": acc}, [0.5, 2.0], acc, 16)
    >>> len(fig.axes)
    2
    """
    d_values = np.asarray(d_values)
    ratios = check_array("ratios", ratios, ndim=1)
    by_ratio = check_array("by_ratio", by_ratio, shape=(ratios.size, 2))
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.9), layout="constrained")
    for index, (label, acc) in enumerate(by_width.items()):
        acc = check_array(f"by_width[{label!r}]", acc, shape=(d_values.size, 2))
        colour = colours[label] if colours and label in colours else _colour(index)
        left.plot(d_values, 100 * acc[:, 0], "o-", color=colour, label=f"token, {label}")
        left.plot(d_values, 100 * acc[:, 1], "s--", color=colour, label=f"position, {label}")
    left.set_xscale("log", base=2)
    left.set_xticks(d_values, [str(d) for d in d_values])
    left.set_xlabel("width d (columns)")
    left.set_ylabel("recovered from the sum (% of pairs)")
    left.set_title("Against the width")
    left.set_ylim(0, 104)
    left.legend(frameon=False, fontsize="small")
    right.plot(ratios, 100 * by_ratio[:, 0], "o-", color="0.2", label="token")
    right.plot(ratios, 100 * by_ratio[:, 1], "s--", color="0.2", label="position")
    if marks is None:
        marks = {r"ratio $\sqrt{2}$": float(np.sqrt(2))}
    for index, (label, ratio) in enumerate(marks.items()):
        ratio = check_real(f"marks[{label!r}]", ratio, minimum=0.0)
        style = (":", "-.", "--")[index % 3]
        right.axvline(ratio, color="0.4", linestyle=style, label=label)
    right.set_xscale("log", base=2)
    right.set_xlabel("r = length of token vector / length of position code")
    right.set_ylabel("recovered from the sum (% of pairs)")
    right.set_title(f"Against the token-to-code ratio r, d = {d_fixed}")
    right.set_ylim(0, 104)
    # framed and opaque: the marks run through the legend's corner of the panel
    right.legend(fontsize="small", loc="center left", framealpha=1.0, edgecolor="none")
    return detached(fig)


def score_term_figure(sizes: Mapping[str, np.ndarray], title: str) -> Figure:
    """Sizes of the four attention-score terms, one group of bars per term.

    Parameters
    ----------
    sizes : mapping of str to array_like
        For every case (a legend label), the sizes ``(4, n_models)`` from
        :func:`posenc.experiment_analysis.term_sizes`; the bar is the mean over the
        copies, the error bar spans the smallest to the largest copy.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One axis.

    Examples
    --------
    >>> fig = score_term_figure({"random": np.ones((4, 3))}, "sizes")
    >>> len(fig.axes[0].patches)
    4
    """
    if not sizes:
        raise ValueError("sizes must hold at least one case")
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    positions = np.arange(len(SCORE_TERMS))
    width = 0.8 / len(sizes)
    for index, (label, values) in enumerate(sizes.items()):
        values = check_array(f"sizes[{label!r}]", values, ndim=2)
        if values.shape[0] != len(SCORE_TERMS):
            raise ValueError(f"sizes[{label!r}] must have 4 rows, got shape {values.shape}")
        mean = values.mean(axis=1)
        err = np.stack([mean - values.min(axis=1), values.max(axis=1) - mean])
        offset = (index - (len(sizes) - 1) / 2) * width
        ax.bar(
            positions + offset,
            mean,
            width,
            yerr=err,
            capsize=3,
            color=_colour(index),
            label=label,
        )
    ax.set_xticks(positions, list(SCORE_TERMS))
    ax.set_xlabel("term of the attention score (query part - key part)")
    ax.set_ylabel("size: RMS over keys, row mean removed (score units)")
    ax.set_title(title)
    ax.legend(frameon=False, fontsize="small")
    return detached(fig)


def accuracy_figure(
    rows: Sequence[SummaryRow],
    chance: Mapping[str, tuple[float, float, float]],
) -> Figure:
    """Mean test accuracy with its 95 % interval, one panel per task.

    Parameters
    ----------
    rows : sequence of SummaryRow
        From :func:`posenc.experiment_verdicts.summarise`.
    chance : mapping of str to (float, float, float)
        For every task: the chance level and the interval a constant guess
        reaches (from :func:`posenc.stats.chance_interval`), drawn as a
        grey band.

    Returns
    -------
    matplotlib.figure.Figure
        One axis per task.
    """
    tasks = list(dict.fromkeys(r.task for r in rows))
    if not tasks:
        raise ValueError("rows must not be empty")
    fig, axes = plt.subplots(
        1,
        len(tasks),
        figsize=(2.2 + 3.6 * len(tasks), 4),
        layout="constrained",
        squeeze=False,
        sharey=True,
    )
    for ax, task in zip(axes[0], tasks, strict=True):
        mine = [r for r in rows if r.task == task]
        colours = _label_colours([r.label for r in mine])
        y = np.arange(len(mine))[::-1]
        for yi, r in zip(y, mine, strict=True):
            ax.errorbar(
                100 * r.mean,
                yi,
                xerr=[[100 * (r.mean - r.low)], [100 * (r.high - r.mean)]],
                fmt="o",
                capsize=4,
                color=colours[r.label],
            )
            ax.plot(
                100 * r.accuracies,
                np.full(r.accuracies.size, yi - 0.22),
                "|",
                color=colours[r.label],
                markersize=6,
            )
        if task in chance:
            level, low, high = chance[task]
            ax.axvspan(100 * low, 100 * high, color="0.85", zorder=0, label="chance interval")
            ax.axvline(100 * level, color="0.5", linewidth=1)
        ax.set_yticks(y, [r.label for r in mine])
        ax.set_xlim(0, 102)
        ax.set_xlabel("test accuracy (%)")
        ax.set_title(f"{task} task")
    if any(task in chance for task in tasks):
        # One legend for the figure, below the panels: inside an axis it would sit on
        # the models that reach 100 %, which are drawn at the right edge.
        first = next(ax for ax, task in zip(axes[0], tasks, strict=True) if task in chance)
        handles, labels = first.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", frameon=False, fontsize="small")
    fig.suptitle("Test accuracy over five seeds")
    return detached(fig)


def learning_curve_figure(
    curves: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]],
) -> Figure:
    """Test accuracy during training, one panel per task: mean over seeds and their range.

    Parameters
    ----------
    curves : mapping of str to (array_like, mapping of str to array_like)
        For every task, the output of :func:`posenc.experiment_verdicts.learning_curves`:
        the steps and, per configuration, an array ``(3, n_eval)`` (mean,
        lowest, highest).

    Returns
    -------
    matplotlib.figure.Figure
        One axis per task.
    """
    if not curves:
        raise ValueError("curves must hold at least one task")
    fig, axes = plt.subplots(
        1, len(curves), figsize=(4.7 * len(curves), 3.8), layout="constrained", squeeze=False
    )
    for ax, (task, (steps, by_label)) in zip(axes[0], curves.items(), strict=True):
        steps = check_array("steps", steps, ndim=1)
        colours = _label_colours(list(by_label))
        for label, band in by_label.items():
            band = check_array(f"curves[{task!r}][{label!r}]", band, shape=(3, steps.size))
            style = "--" if "concat" in label else "-"
            ax.plot(steps, 100 * band[0], style, color=colours[label], label=label)
            ax.fill_between(steps, 100 * band[1], 100 * band[2], color=colours[label], alpha=0.12)
        ax.set_xlabel("training step (updates)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_ylim(0, 102)
        ax.set_title(f"{task} task")
    axes[0, -1].legend(frameon=False, fontsize="small", loc="lower right")
    fig.suptitle("Learning curves: mean over seeds, band from lowest to highest seed")
    return detached(fig)


def comparison_figure(
    comparisons: Sequence[Comparison],
    margin: float,
    confidence: float = 0.95,
    titles: Mapping[str, str] | None = None,
    family: int | Mapping[str, int] | None = None,
    sharex: bool = False,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """Concatenated minus added, with its Welch interval, for every regime and code.

    Parameters
    ----------
    comparisons : sequence of Comparison
        From :func:`posenc.experiment_verdicts.compare_design`.
    margin : float
        The equivalence margin (an accuracy difference), drawn as a grey band.
    confidence : float
        Confidence of the drawn Welch intervals, in (0, 1); e.g.
        ``1 - 0.05 / len(comparisons)`` for Bonferroni-simultaneous intervals.
    titles : mapping of str to str, optional
        The title of each code's panel (default ``"<code> codes"``), e.g. to
        show two families of one code side by side under other names.
    family : int or mapping of str to int, optional
        If given, the intervals hold for ``family`` comparisons together at
        ``confidence`` (Bonferroni: each at ``1 - (1 - confidence) / family``),
        and the title says so; otherwise each interval holds alone. A mapping
        gives each code's panel its own family size.
    sharex : bool
        Draw every panel on one horizontal scale, so that equal differences
        look equally large.
    colours : mapping of str to str, optional
        The colour of each code's panel (default: the palette in order), so
        that a page can give one colour one meaning across its figures.

    Returns
    -------
    matplotlib.figure.Figure
        One axis per code; one row per regime; hollow markers for
        comparisons at the ceiling; each point labelled with its verdict
        ("ceiling" for a pair at the ceiling, whatever its tests say).
    """
    if not comparisons:
        raise ValueError("comparisons must not be empty")
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    codes = list(dict.fromkeys(c.code for c in comparisons))
    sizes = family if isinstance(family, Mapping) else dict.fromkeys(codes, family)
    if isinstance(family, Mapping) and set(family) != set(codes):
        raise ValueError(f"family must give a size for each of {codes}, got {list(family)}")
    for size in sizes.values():
        if size is not None and (int(size) != size or size < 1):
            raise ValueError(f"family must be a positive integer, got {size}")
    each = {
        code: confidence if size is None else 1.0 - (1.0 - confidence) / size
        for code, size in sizes.items()
    }
    if family is None:
        reach = f"{100 * confidence:.4g}% interval for each comparison alone"
    elif isinstance(family, Mapping):
        reach = f"{100 * confidence:.4g}% intervals for each panel's comparisons together"
    else:
        reach = f"{100 * confidence:.4g}% intervals for all {family} comparisons together"
    regimes = list(dict.fromkeys(c.regime for c in comparisons))
    fig, axes = plt.subplots(
        1,
        len(codes),
        figsize=(4.4 * len(codes) + 1.4, 0.42 * len(regimes) + 1.6),
        layout="constrained",
        squeeze=False,
        sharey=True,
        sharex=sharex,
    )
    if colours is not None and set(colours) != set(codes):
        raise ValueError(f"colours must give a colour for each of {codes}, got {list(colours)}")
    panel_colours = [
        colours[code] if colours is not None else _colour(index) for index, code in enumerate(codes)
    ]
    for ax, code, colour in zip(axes[0], codes, panel_colours, strict=True):
        ax.axvspan(
            -100 * margin,
            100 * margin,
            color="0.88",
            zorder=0,
            label=f"margin ±{100 * margin:g} points",
        )
        ax.axvline(0, color="0.4", linewidth=1)
        for c in comparisons:
            if c.code != code:
                continue
            y = len(regimes) - 1 - regimes.index(c.regime)
            _, low, high = difference_interval(c.concat, c.added, each[code])
            ax.errorbar(
                100 * c.difference,
                y,
                xerr=[[100 * (c.difference - low)], [100 * (high - c.difference)]],
                fmt="o",
                capsize=3,
                color=colour,
                markerfacecolor="white" if c.ceiling else colour,
            )
            ax.annotate(
                "ceiling" if c.ceiling else c.verdict,
                (100 * high, y),
                xytext=(4, 3),
                textcoords="offset points",
                fontsize=7,
                color="0.25",
            )
        ax.margins(x=0.25)
        ax.set_yticks(range(len(regimes)), regimes[::-1])
        # Head room above the top row, so its label is not cut by the frame.
        ax.set_ylim(-0.5, len(regimes) - 0.2)
        ax.set_xlabel("concatenated minus added (accuracy points)")
        ax.set_title(titles[code] if titles and code in titles else f"{code} codes")
    axes[0, 0].set_ylabel("regime (length, width, layers)")
    fig.suptitle(
        f"Difference of mean test accuracy, {reach};\n"
        f"grey: ±{100 * margin:g} points, set in advance as too small to matter;"
        " hollow: both models near 100%"
    )
    return detached(fig)


def budget_figure(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], margin: float) -> Figure:
    """The difference concatenated minus added against the training budget.

    Parameters
    ----------
    curves : mapping of str to (array_like, array_like)
        For every label, the output of :func:`posenc.experiment_verdicts.budget_curve`:
        the steps ``(n,)`` and ``(3, n)`` (difference, low, high).
    margin : float
        The equivalence margin, drawn as a grey band.

    Returns
    -------
    matplotlib.figure.Figure
        One axis: a line per label with its interval as a band.
    """
    if not curves:
        raise ValueError("curves must hold at least one label")
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    ax.axhspan(-100 * margin, 100 * margin, color="0.88", zorder=0, label="equivalence margin")
    ax.axhline(0, color="0.4", linewidth=1)
    for index, (label, (steps, curve)) in enumerate(curves.items()):
        steps = check_array("steps", steps, ndim=1)
        curve = check_array(f"curves[{label!r}]", curve, shape=(3, steps.size))
        style = "-" if index % 2 == 0 else "--"
        ax.plot(steps, 100 * curve[0], style, marker="o", color=_colour(index), label=label)
        ax.fill_between(steps, 100 * curve[1], 100 * curve[2], color=_colour(index), alpha=0.15)
    ax.set_xlabel("training budget (updates)")
    ax.set_ylabel("concatenated minus added (accuracy points)")
    ax.set_title("The main difference against the training budget, 95% Welch interval")
    ax.legend(frameon=False, fontsize="small")
    return detached(fig)


def power_figure(
    deltas: Sequence[float], powers: Mapping[int, Sequence[float]], sd: float
) -> Figure:
    """Power of a two-sample t test against the true difference, one line per seed count.

    Parameters
    ----------
    deltas : sequence of float
        True differences (accuracy, not points).
    powers : mapping of int to sequence of float
        For every number of seeds per model, the power at each delta.
    sd : float
        The seed-to-seed standard deviation assumed (shown in the title).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = power_figure([0.0, 0.1], {5: [0.05, 0.3], 20: [0.05, 0.8]}, 0.1)
    >>> len(fig.axes[0].get_lines())
    3
    """
    deltas = check_array("deltas", deltas, ndim=1)
    if not powers:
        raise ValueError("powers must hold at least one seed count")
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    for index, (n, values) in enumerate(sorted(powers.items())):
        values = check_array(f"powers[{n}]", values, shape=(deltas.size,))
        ax.plot(100 * deltas, 100 * values, color=_colour(index), label=f"{n} seeds per model")
    ax.axhline(80, color="0.5", linewidth=1, linestyle=":", label="80% power")
    ax.set_xlabel("true difference of mean accuracy (points)")
    ax.set_ylabel("power: chance of a significant result (%)")
    ax.set_ylim(0, 102)
    ax.set_title(f"Two-sided t test at 5%, seed-to-seed spread {100 * sd:.1f} points")
    ax.legend(frameon=False, fontsize="small")
    return detached(fig)
