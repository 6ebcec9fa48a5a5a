"""Figures of chapter 3, the implementation of the sinusoidal code.

Each function draws numbers computed elsewhere (by :mod:`posenc.variants`,
:mod:`posenc.layers` or the notebook) and returns a
:class:`matplotlib.figure.Figure`, already closed in pyplot so that a notebook
cell ending with it displays it once; none of them computes anything beyond
what it draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..validation import check_array, check_integer
from .style import CMAP_DIVERGING, QUALITATIVE, detached, symmetric_limits

__all__ = [
    "plot_float_precision",
    "plot_layouts",
    "plot_learned_vs_fixed",
    "plot_signal_ratio",
    "plot_spacings",
]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _check_series(
    x_name: str, x: Any, series: Mapping[str, Any], *, positive: bool
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Check an x array and a mapping of labelled y arrays of the same length."""
    x = check_array(x_name, x, ndim=1)
    if not isinstance(series, Mapping) or not series:
        raise TypeError(
            f"the series must be a non-empty mapping of label to values, got {series!r}"
        )
    if len(series) > len(QUALITATIVE):
        raise ValueError(f"at most {len(QUALITATIVE)} series can be drawn, got {len(series)}")
    checked = {}
    for label, values in series.items():
        values = check_array(f"series {label!r}", values, shape=(x.size,))
        if positive and np.any(values <= 0):
            raise ValueError(f"series {label!r} must be > 0 everywhere for a logarithmic axis")
        checked[str(label)] = values
    if positive and np.any(x <= 0):
        raise ValueError(f"{x_name} must be > 0 everywhere for a logarithmic axis")
    return x, checked


def _loglog_series(
    x_name: str, x: Any, series: Mapping[str, Any], *, xlabel: str, ylabel: str, title: str
) -> tuple[Figure, Any]:
    """A log-log figure with one Okabe-Ito line per labelled series, legend and grid."""
    x, series = _check_series(x_name, x, series, positive=True)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    for (label, values), color, marker in zip(series.items(), QUALITATIVE, _MARKERS, strict=False):
        ax.loglog(x, values, color=color, marker=marker, markersize=5, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    return fig, ax


def _heatmap(fig: Figure, ax: Any, table: np.ndarray, title: str, limits: tuple[float, float]):
    image = ax.imshow(
        table,
        aspect="auto",
        cmap=CMAP_DIVERGING,
        vmin=limits[0],
        vmax=limits[1],
        interpolation="nearest",
    )
    ax.set_xlabel("column j (no unit)")
    ax.set_ylabel("position k (positions)")
    ax.set_title(title)
    return image


def plot_layouts(interleaved: Any, split: Any) -> Figure:
    """The same code in the interleaved and the split layout, side by side.

    Parameters
    ----------
    interleaved, split : array_like
        Tables of the same shape ``(length, d_model)``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from posenc import sinusoidal
    >>> fig = plot_layouts(sinusoidal(20, 8), sinusoidal(20, 8, layout="split"))
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['interleaved: sin, cos, sin, cos, ...', 'split halves: sin ... | cos ...']
    """
    interleaved = check_array("interleaved", interleaved, ndim=2)
    split = check_array("split", split, shape=interleaved.shape)
    limits = symmetric_limits(np.concatenate([interleaved.ravel(), split.ravel()]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    _heatmap(fig, axes[0], interleaved, "interleaved: sin, cos, sin, cos, ...", limits)
    image = _heatmap(fig, axes[1], split, "split halves: sin ... | cos ...", limits)
    axes[1].axvline((split.shape[1] + 1) // 2 - 0.5, color="black", linewidth=1.5)
    axes[1].set_ylabel("")
    fig.colorbar(image, ax=axes, label="code value (no unit)")
    fig.suptitle("Two layouts of the same numbers: a permutation of the columns")
    return detached(fig)


def plot_spacings(
    frequency_difference: Any, column_difference: Any, *, show_drift: bool = True
) -> Figure:
    r"""Why the paper's spacing and the endpoint spacing give different tables.

    Parameters
    ----------
    frequency_difference : array_like
        :math:`\omega_i - \omega'_i`, paper minus endpoint frequency for each
        pair ``i``, shape ``(h,)``, in radians per position. At position
        ``k`` the angles of pair ``i`` have drifted apart by ``k`` times this.
    column_difference : array_like
        Largest absolute difference between the two tables in each column of
        the split layout, shape ``(2h,)``, ``>= 0``.
    show_drift : bool, default True
        Whether to draw the frequency difference in a left panel. With
        ``False`` the figure has one panel, the column differences, and
        ``frequency_difference`` only fixes ``h``.

    Returns
    -------
    matplotlib.figure.Figure
        Left (when ``show_drift``): the frequency difference against the pair
        index. Right, or alone: the largest difference per column, with the
        start of the cosine half marked.

    Examples
    --------
    >>> fig = plot_spacings([0.0, 0.09], [0.0, 0.5, 0.0, 0.4])
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['pair index i (no unit)', 'column j (no unit)']
    >>> fig = plot_spacings([0.0, 0.09], [0.0, 0.5, 0.0, 0.4], show_drift=False)
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['column j (no unit)']
    """
    frequency_difference = check_array("frequency_difference", frequency_difference, ndim=1)
    column_difference = check_array(
        "column_difference", column_difference, shape=(2 * frequency_difference.size,)
    )
    if np.any(column_difference < 0):
        raise ValueError("column_difference must be >= 0 (largest absolute differences)")
    if show_drift:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
        left.plot(
            np.arange(frequency_difference.size), frequency_difference, color=QUALITATIVE[0]
        )
        left.set_xlabel("pair index i (no unit)")
        left.set_ylabel(r"$\omega_i - \omega'_i$ (radians per position)")
        left.set_title("How fast the angles of each pair drift apart")
    else:
        fig, right = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
    right.plot(np.arange(column_difference.size), column_difference, color=QUALITATIVE[2])
    right.axvline(frequency_difference.size - 0.5, color="grey", linewidth=1, linestyle=":")
    right.set_xlabel("column j (no unit)")
    right.set_ylabel("largest |difference| (no unit)")
    right.set_title("Where the two tables differ (sines | cosines)")
    return detached(fig)


def plot_float_precision(positions: Any, errors: Mapping[str, Any]) -> Figure:
    """Largest error of each way of computing the code, against the position (log-log).

    Parameters
    ----------
    positions : array_like
        Shape ``(m,)``, ``> 0``: the first position of each window.
    errors : mapping of str to array_like
        Label of a method to its largest absolute error in each window,
        measured against the float64 code with accurately formed angles
        (:func:`posenc.variants.sinusoidal_at`), shape ``(m,)``, ``> 0``; at
        most eight methods.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_float_precision([10, 100], {"float32 angles": [1e-6, 1e-5]})
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')
    """
    fig, ax = _loglog_series(
        "positions",
        positions,
        errors,
        xlabel="first position k of the window (positions)",
        ylabel="largest absolute error over the columns (no unit)",
        title="Error of the code against the float64 code, accurate angles",
    )
    ax.legend()
    return detached(fig)


def plot_signal_ratio(d_values: Any, ratios: Mapping[str, Any]) -> Figure:
    """Size of the token signal relative to the position signal, against the width.

    Parameters
    ----------
    d_values : array_like
        Widths ``d``, shape ``(m,)``, ``> 0``.
    ratios : mapping of str to array_like
        Label of a setting to its ratio at each width, shape ``(m,)``,
        ``> 0``; at most eight settings. The ratio is the norm of the token
        signal *as added to the code* (``x``, or ``sqrt(d) * x`` for a setting
        that scales the embeddings) over ``||PE_k||``.
        Every second series is drawn dashed, with hollow markers, on top
        of the others, so that two settings with the same ratios both show.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_signal_ratio([16, 64], {"scaled": [1.4, 1.4]})
    >>> fig.axes[0].get_xlabel()
    'width d (columns)'
    >>> "sqrt{d}" in fig.axes[0].get_ylabel()
    True
    """
    fig, ax = _loglog_series(
        "d_values",
        d_values,
        ratios,
        xlabel="width d (columns)",
        ylabel=(
            r"token signal / code: $\|x\|$ or $\|\sqrt{d}\,x\|$"
            r" over $\|\mathrm{PE}_k\|$ (no unit)"
        ),
        title="Token signal relative to position signal",
    )
    # Settings can give the same ratios (small embeddings scaled, standard
    # ones unscaled): every second line is dashed with hollow, larger markers
    # and drawn on top, so that a line lying on another one stays visible.
    for line in ax.lines[1::2]:
        line.set_linestyle((0, (5, 3)))
        line.set_markerfacecolor("none")
        line.set_markersize(9)
        line.set_zorder(3)
    ax.axhline(1.0, color="grey", linewidth=1, linestyle=":", label="equal sizes")
    ax.set_xscale("log", base=2)
    ax.legend(loc="best")
    return detached(fig)


def plot_learned_vs_fixed(learned: Any, fixed: Any, trained_length: int) -> Figure:
    """A learned table trained toward the sinusoid next to it, with the trained rows marked.

    The titles say that the learned table's target was the sinusoidal one, so
    that matching rows read as the toy's target, not as what training learns.

    Parameters
    ----------
    learned, fixed : array_like
        Tables of the same shape ``(max_length, d_model)``.
    trained_length : int
        Number of leading rows (positions) that training reached,
        ``0 <= trained_length <= max_length``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_learned_vs_fixed(np.zeros((8, 4)), np.ones((8, 4)), 5)
    >>> len(fig.axes)
    3
    """
    learned = check_array("learned", learned, ndim=2)
    fixed = check_array("fixed", fixed, shape=learned.shape)
    trained_length = check_integer(
        "trained_length", trained_length, minimum=0, maximum=learned.shape[0]
    )
    limits = symmetric_limits(np.concatenate([learned.ravel(), fixed.ravel()]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    _heatmap(fig, axes[0], learned, "learned table, trained toward the sinusoid", limits)
    image = _heatmap(fig, axes[1], fixed, "sinusoidal table", limits)
    axes[1].set_ylabel("")
    for ax in axes:
        ax.axhline(trained_length - 0.5, color="black", linewidth=1.5, linestyle="--")
    fig.colorbar(image, ax=axes, label="code value (no unit)")
    fig.suptitle(
        "Trained to reproduce the sinusoid above the dashed line; rows below it "
        f"(positions >= {trained_length}) were never trained"
    )
    return detached(fig)
