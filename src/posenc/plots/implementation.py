"""Figures of chapter 3, the implementation of the sinusoidal code.

Each function draws numbers computed elsewhere (by :mod:`posenc.variants`,
:mod:`posenc.layers` or the notebook) and returns a
:class:`matplotlib.figure.Figure`; none of them computes anything beyond
what it draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..validation import check_array, check_integer
from .style import CMAP_DIVERGING, QUALITATIVE, symmetric_limits

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


def _heatmap(fig: Figure, ax: Any, table: np.ndarray, title: str, limits: tuple[float, float]):
    image = ax.imshow(
        table,
        aspect="auto",
        cmap=CMAP_DIVERGING,
        vmin=limits[0],
        vmax=limits[1],
        interpolation="nearest",
    )
    ax.set_xlabel("column j (index)")
    ax.set_ylabel("position k (tokens)")
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
    fig.colorbar(image, ax=axes, label="code value (dimensionless)")
    fig.suptitle("Two layouts of the same numbers: a permutation of the columns")
    return fig


def plot_spacings(omega_paper: Any, omega_endpoint: Any, column_difference: Any) -> Figure:
    """Compare the paper's frequency spacing with the endpoint spacing.

    Parameters
    ----------
    omega_paper, omega_endpoint : array_like
        Frequencies per pair ``i``, shape ``(h,)`` each, ``> 0``.
    column_difference : array_like
        Largest absolute difference between the two tables in each column,
        shape ``(2h,)``, ``>= 0``.

    Returns
    -------
    matplotlib.figure.Figure
        Left: the frequencies against the pair index (log scale). Right: the
        largest difference per column.

    Examples
    --------
    >>> fig = plot_spacings([1.0, 0.1], [1.0, 0.01], [0.0, 0.0, 0.5, 0.4])
    >>> fig.axes[0].get_yscale()
    'log'
    """
    omega_paper = check_array("omega_paper", omega_paper, ndim=1)
    omega_endpoint = check_array("omega_endpoint", omega_endpoint, shape=omega_paper.shape)
    column_difference = check_array(
        "column_difference", column_difference, shape=(2 * omega_paper.size,)
    )
    if np.any(omega_paper <= 0) or np.any(omega_endpoint <= 0):
        raise ValueError("frequencies must be > 0 for a logarithmic axis")
    if np.any(column_difference < 0):
        raise ValueError("column_difference must be >= 0 (largest absolute differences)")
    pairs = np.arange(omega_paper.size)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    left.semilogy(pairs, omega_paper, color=QUALITATIVE[0], label=r"paper: $n^{-2i/d}$")
    left.semilogy(
        pairs,
        omega_endpoint,
        color=QUALITATIVE[1],
        linestyle="--",
        label=r"endpoint: $n^{-i/(d/2-1)}$",
    )
    left.set_xlabel("pair index i")
    left.set_ylabel(r"frequency $\omega_i$ (radians per position)")
    left.set_title("Frequencies of the two spacings")
    left.legend()
    right.plot(np.arange(column_difference.size), column_difference, color=QUALITATIVE[2])
    right.set_xlabel("column j (index)")
    right.set_ylabel("largest |difference| (code units)")
    right.set_title("Where the two tables differ")
    return fig


def plot_float_precision(positions: Any, errors: Mapping[str, Any]) -> Figure:
    """Largest error of each way of computing the code, against the position (log-log).

    Parameters
    ----------
    positions : array_like
        Shape ``(m,)``, ``> 0``.
    errors : mapping of str to array_like
        Label of a method to its largest absolute error at each position,
        shape ``(m,)``, ``> 0``; at most eight methods.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_float_precision([10, 100], {"float32 angles": [1e-6, 1e-5]})
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
    ('log', 'log')
    """
    positions, errors = _check_series("positions", positions, errors, positive=True)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    for (label, values), color, marker in zip(errors.items(), QUALITATIVE, _MARKERS, strict=False):
        ax.loglog(positions, values, color=color, marker=marker, markersize=4, label=label)
    ax.set_xlabel("position k (tokens)")
    ax.set_ylabel("largest absolute error over the columns (code units)")
    ax.set_title("Error of the code against the exact value, by position")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    return fig


def plot_signal_ratio(d_values: Any, ratios: Mapping[str, Any]) -> Figure:
    """Size of the token signal relative to the position signal, against the width.

    Parameters
    ----------
    d_values : array_like
        Widths ``d``, shape ``(m,)``, ``> 0``.
    ratios : mapping of str to array_like
        Label of a setting to its ratio ``||x|| / ||PE_k||`` at each width,
        shape ``(m,)``, ``> 0``; at most eight settings.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_signal_ratio([16, 64], {"scaled": [1.4, 1.4]})
    >>> fig.axes[0].get_xlabel()
    'width d (columns)'
    """
    d_values, ratios = _check_series("d_values", d_values, ratios, positive=True)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    for (label, values), color, marker in zip(ratios.items(), QUALITATIVE, _MARKERS, strict=False):
        ax.loglog(d_values, values, color=color, marker=marker, label=label)
    ax.axhline(1.0, color="grey", linewidth=1, linestyle=":", label="equal sizes")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("width d (columns)")
    ax.set_ylabel(r"$\|x\| \,/\, \|\mathrm{PE}_k\|$ (ratio of norms)")
    ax.set_title("Token signal relative to position signal")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    return fig


def plot_learned_vs_fixed(learned: Any, fixed: Any, trained_length: int) -> Figure:
    """A trained learned table next to the sinusoidal one, with the trained rows marked.

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
    _heatmap(fig, axes[0], learned, "learned table after training", limits)
    image = _heatmap(fig, axes[1], fixed, "sinusoidal table", limits)
    axes[1].set_ylabel("")
    for ax in axes:
        ax.axhline(trained_length - 0.5, color="black", linewidth=1.5, linestyle="--")
    fig.colorbar(image, ax=axes, label="code value (dimensionless)")
    fig.suptitle(f"Rows below the dashed line (positions >= {trained_length}) were never trained")
    return fig
