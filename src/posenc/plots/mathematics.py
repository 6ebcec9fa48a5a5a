"""Figures of chapter 2, the mathematics of the sinusoidal code.

Each function returns a :class:`matplotlib.figure.Figure`, already closed in
pyplot so that a notebook shows it exactly once, as the value of the cell
(outside a notebook, save it with ``fig.savefig``). The numbers come
from :mod:`posenc` (:mod:`posenc.encodings`, :mod:`posenc.analysis`,
:mod:`posenc.similarity`) or are passed in already computed; the functions
here only draw them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..analysis import (
    cosine_distance_wide_limit,
    offset_cosine_distance,
    offset_dot_product,
    shift_fit,
)
from ..encodings import binary_encoding, frequencies, sinusoidal, wavelengths
from ..similarity import dot_product_matrix
from ..validation import check_array, check_integer, check_real
from .style import CMAP_DIVERGING, CMAP_SEQUENTIAL, QUALITATIVE, detached, symmetric_limits

__all__ = [
    "binary_sinusoidal_figure",
    "cosine_distance_offset_figure",
    "decoding_figure",
    "dot_product_offset_figure",
    "frequency_wavelength_figure",
    "separation_figure",
    "shift_fit_figure",
    "turn_direction_figure",
]


def _log_spaced(length: int, count: int = 400) -> np.ndarray:
    """About ``count`` distinct indices in ``[1, length)``, evenly spaced on a log scale."""
    if length <= 1:
        return np.array([], dtype=np.int64)
    return np.unique(np.geomspace(1, length - 1, count).astype(np.int64))


def frequency_wavelength_figure(d_model: int = 512, base: float = 10_000.0) -> Figure:
    """Frequency and wavelength of every column, with the range of the wavelengths marked.

    Left: :math:`\\omega_i` against the column ``j`` (columns ``2i`` and
    ``2i + 1`` share it), log scale. Right: :math:`\\lambda_i`, with the
    shortest wavelength :math:`2\\pi`, the longest one
    :math:`2\\pi n^{(d-2)/d}` and the value :math:`2\\pi n` that is never
    reached.

    Parameters
    ----------
    d_model : int
        Width ``d``, ``>= 2``.
    base : float
        The base ``n``, finite and ``> 1``.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes.

    Examples
    --------
    >>> fig = frequency_wavelength_figure(16, 100.0)
    >>> len(fig.axes)
    2
    """
    d_model = check_integer("d_model", d_model, minimum=2)
    base = check_real("base", base, positive=True)
    if base <= 1:
        raise ValueError(f"base must be a finite number > 1, got {base}")
    columns = np.arange(d_model)
    omega = frequencies(d_model, base)[columns // 2]
    lam = wavelengths(d_model, base)[columns // 2]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    left.semilogy(columns, omega, ".", color=QUALITATIVE[0], markersize=4)
    left.set(
        xlabel="column j (index)",
        ylabel="frequency ω (radians per position)",
        title="Frequencies: fast columns first",
    )
    right.semilogy(columns, lam, ".", color=QUALITATIVE[0], markersize=4, label="λ of column j")
    right.axhline(2 * np.pi, color=QUALITATIVE[2], linestyle=":", label="shortest, 2π = 6.28")
    right.axhline(
        lam[-1],
        color=QUALITATIVE[1],
        linestyle="-.",
        label=f"longest, 2π n^((d−2)/d) = {lam[-1]:,.0f}",
    )
    right.axhline(
        2 * np.pi * base,
        color=QUALITATIVE[5],
        linestyle="--",
        label=f"2π n = {2 * np.pi * base:,.0f} (never reached)",
    )
    right.set(
        xlabel="column j (index)",
        ylabel="wavelength λ (positions)",
        title="Wavelengths: a geometric progression",
    )
    # Outside the axes: inside, the legend would sit on the dots or on the
    # reference lines at the top.
    right.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize="small")
    fig.suptitle(f"Sinusoidal code, d = {d_model}, n = {base:g}")
    return detached(fig)


def binary_sinusoidal_figure(
    length: int = 32, bits: int = 5, d_model: int = 10, base: float = 100.0
) -> Figure:
    """The binary counter next to the sinusoidal table, positions down the rows.

    Parameters
    ----------
    length : int
        Number of positions, ``1 <= length <= 2**bits``.
    bits : int
        Columns of the binary table (least significant bit first), ``>= 1``.
    d_model : int
        Width of the sinusoidal table, ``>= 1``.
    base : float
        Its base ``n``, finite and ``> 0``.

    Returns
    -------
    matplotlib.figure.Figure
        Two heat maps with colour bars (four axes).

    Examples
    --------
    >>> len(binary_sinusoidal_figure(8, 3, 6).axes)
    4
    """
    length = check_integer("length", length, minimum=1)
    bits_table = binary_encoding(length, bits)
    sin_table = sinusoidal(length, d_model, base)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9, 4.6), layout="constrained", width_ratios=[bits, d_model]
    )
    image = left.imshow(
        bits_table, aspect="auto", cmap=CMAP_SEQUENTIAL, vmin=0, vmax=1, interpolation="nearest"
    )
    fig.colorbar(image, ax=left, label="bit value (no unit)", ticks=[0, 1])
    left.set(
        xlabel="bit j (index, least significant first)",
        ylabel="position k (positions)",
        title="Binary counter",
        xticks=range(bits),
    )
    low, high = symmetric_limits(sin_table)
    image = right.imshow(
        sin_table, aspect="auto", cmap=CMAP_DIVERGING, vmin=low, vmax=high, interpolation="nearest"
    )
    fig.colorbar(image, ax=right, label="value of PE[k, j] (no unit)")
    right.set(
        xlabel="column j (index)",
        ylabel="position k (positions)",
        title=f"Sinusoidal code, d = {d_model}, n = {base:g}",
        xticks=range(d_model),
    )
    fig.suptitle("Both change fast in the first columns and slowly in the last")
    return detached(fig)


def shift_fit_figure(
    offsets: Sequence[int], d_model: int = 16, base: float = 10_000.0, length: int = 512
) -> Figure:
    """Residual of the best fixed matrix mapping row k to row k + offset, with and without cosines.

    Parameters
    ----------
    offsets : sequence of int
        Offsets to fit, each ``>= 1`` and ``< length``.
    d_model : int
        Width of the full code; must be even.
    base : float
        The base ``n``.
    length : int
        Number of positions in the table the fit uses.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, log scale.

    Examples
    --------
    >>> len(shift_fit_figure([1, 2, 3], 4, length=64).axes)
    1
    """
    offsets = check_array("offsets", offsets, ndim=1).astype(np.int64)
    table = sinusoidal(length, d_model, base)
    variants = {
        "sine and cosine columns": table,
        "sine columns only": table[:, 0::2],
        "cosine columns only": table[:, 1::2],
    }
    residuals = {
        label: [shift_fit(part, int(phi)).residual for phi in offsets]
        for label, part in variants.items()
    }
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    for (label, values), colour, marker in zip(
        residuals.items(), QUALITATIVE, ("o", "s", "^"), strict=False
    ):
        ax.semilogy(offsets, values, marker=marker, color=colour, label=label, markersize=4)
    ax.set(
        xlabel="offset φ (positions)",
        ylabel="relative residual (no unit)",
        title=f"Best fixed matrix for PE(k) → PE(k + φ), d = {d_model}, n = {base:g}",
    )
    ax.legend(fontsize="small")
    return detached(fig)


def dot_product_offset_figure(
    length: int = 64, d_model: int = 16, base: float = 100.0, position: int | None = None
) -> Figure:
    """The dot-product matrix between positions, and one of its rows against the offset.

    Left: :math:`\\PE_k \\cdot \\PE_{k'}` for all pairs: constant along every
    diagonal. Right: the row of ``position`` plotted against the offset
    :math:`\\phi = k' - k`, on top of the closed form
    :func:`posenc.analysis.offset_dot_product`: symmetric about 0.

    Parameters
    ----------
    length : int
        Number of positions, ``>= 2``.
    d_model : int
        Width; must be even.
    base : float
        The base ``n``.
    position : int, optional
        The row drawn on the right; the middle position by default.

    Returns
    -------
    matplotlib.figure.Figure
        Three axes (two plots and a colour bar).

    Examples
    --------
    >>> len(dot_product_offset_figure(16, 4).axes)
    3
    """
    length = check_integer("length", length, minimum=2)
    position = length // 2 if position is None else position
    position = check_integer("position", position, minimum=0, maximum=length - 1)
    table = sinusoidal(length, d_model, base)
    dots = dot_product_matrix(table)
    offsets = np.arange(length) - position
    fine = np.linspace(-position, length - 1 - position, 8 * length)
    closed_form = offset_dot_product(fine, d_model, base)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    low, high = symmetric_limits(dots)
    image = left.imshow(dots, cmap=CMAP_DIVERGING, vmin=low, vmax=high, interpolation="nearest")
    fig.colorbar(image, ax=left, label="dot product (no unit)")
    left.set(
        xlabel="position k′ (positions)", ylabel="position k (positions)", title="PE(k) · PE(k′)"
    )
    right.plot(fine, closed_form, color=QUALITATIVE[0], label="closed form")
    right.plot(
        offsets,
        dots[position],
        "o",
        color=QUALITATIVE[1],
        markersize=4,
        label=f"row k = {position}",
    )
    right.axvline(0, color="0.6", linewidth=0.8)
    right.set(
        xlabel="offset φ = k′ − k (positions)",
        ylabel="dot product (no unit)",
        title="Depends on the offset only, and symmetrically",
    )
    right.legend(fontsize="small")
    fig.suptitle(f"Dot products of the codes, d = {d_model}, n = {base:g}")
    return detached(fig)


def cosine_distance_offset_figure(
    max_offset: int = 100_000,
    widths: Sequence[int] = (16, 64, 512),
    bases: Sequence[float] = (100.0, 10_000.0, 1_000_000.0),
    *,
    width_for_bases: int = 512,
    base_for_widths: float = 10_000.0,
) -> Figure:
    """Cosine distance against the offset: several widths at one base, several bases at one width.

    Each panel also draws the wide-code limit
    :func:`posenc.analysis.cosine_distance_wide_limit` (dashed).

    Parameters
    ----------
    max_offset : int
        Largest offset drawn, ``>= 2``; offsets are spaced evenly on a log scale.
    widths : sequence of int
        Even widths of the left panel, at ``base_for_widths``.
    bases : sequence of float
        Bases ``> 1`` of the right panel, at ``width_for_bases``.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes.

    Examples
    --------
    >>> len(cosine_distance_offset_figure(1000, (8,), (100.0,)).axes)
    2
    """
    max_offset = check_integer("max_offset", max_offset, minimum=2)
    offsets = _log_spaced(max_offset + 1, 600)
    by_width = {d: offset_cosine_distance(offsets, d, base_for_widths) for d in widths}
    by_base = {
        n: (
            offset_cosine_distance(offsets, width_for_bases, n),
            cosine_distance_wide_limit(offsets, n),
        )
        for n in bases
    }
    limit = cosine_distance_wide_limit(offsets, base_for_widths)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", sharey=True)
    # The coloured curves are drawn on top, so none hides under the limit
    # (n = 100 follows it closely). The limit is dashed, black and wider, so it
    # shows on both sides of a curve that follows it, and the curves are
    # slightly transparent, so it shows through the scatter of narrow codes.
    limit_style = {"color": "black", "linestyle": "--", "linewidth": 2.6, "zorder": 2}
    curve_style = {"linewidth": 1.0, "alpha": 0.8, "zorder": 3}
    for (d, values), colour in zip(by_width.items(), QUALITATIVE, strict=False):
        left.semilogx(offsets, values, color=colour, label=f"d = {d}", **curve_style)
    left.semilogx(offsets, limit, label="wide limit", **limit_style)
    left.set(
        xlabel="offset φ (positions)",
        ylabel="cosine distance (no unit)",
        title=f"n = {base_for_widths:,.0f}: the width sets the wiggles",
    )
    for (n, (values, _)), colour in zip(by_base.items(), QUALITATIVE, strict=False):
        right.semilogx(offsets, values, color=colour, label=f"n = {n:,.0f}", **curve_style)
    for index, (_, wide) in enumerate(by_base.values()):
        label = "wide limit, each n" if index == 0 else None
        right.semilogx(offsets, wide, label=label, **limit_style)
    right.set(
        xlabel="offset φ (positions)",
        title=f"d = {width_for_bases}: the base sets the pace",
    )
    for ax in (left, right):
        ax.legend(fontsize="small", loc="upper left")
    fig.suptitle("Cosine distance between PE(k) and PE(k + φ)")
    return detached(fig)


def separation_figure(profiles: Mapping[str, np.ndarray]) -> Figure:
    """Smallest distance between two codes among positions 0..p, against p, for several codes.

    Parameters
    ----------
    profiles : mapping of str to array_like
        Label -> output of :func:`posenc.analysis.separation_profile` (shape
        ``(L,)``, entry 0 infinite).

    Returns
    -------
    matplotlib.figure.Figure
        One axes, log-log.

    Examples
    --------
    >>> from posenc.analysis import separation_profile
    >>> len(separation_figure({"d = 2": separation_profile(100, 2)}).axes)
    1
    """
    profiles = {
        label: check_array(f"profiles[{label!r}]", profile, ndim=1, finite=False)
        for label, profile in profiles.items()
    }
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for (label, profile), colour in zip(profiles.items(), QUALITATIVE, strict=False):
        index = _log_spaced(profile.size, 500)
        ax.loglog(index, profile[index], color=colour, label=label)
    ax.set(
        xlabel="last position p of the table (positions)",
        ylabel="smallest distance between two codes (no unit)",
        title="How close two different positions' codes come",
    )
    ax.legend(fontsize="small", loc="lower left")
    return detached(fig)


def turn_direction_figure(
    start: np.ndarray, code_turn: np.ndarray, rotary_turn: np.ndarray
) -> Figure:
    """One pair of a query or key on the unit circle, turned both ways.

    Parameters
    ----------
    start : array_like, shape ``(2,)``
        The pair before the turn (first entry across, second up).
    code_turn, rotary_turn : array_like, shape ``(2,)``
        The pair after the code's shift ``M(k)`` (clockwise) and after
        rotary's ``M(k)^T`` (counter-clockwise), computed by the caller.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with equal aspect: the circle, the start and both turns as arcs.

    Examples
    --------
    >>> fig = turn_direction_figure([1.0, 0.0], [0.6, -0.8], [0.6, 0.8])
    >>> len(fig.axes)
    1
    """
    start = check_array("start", start, shape=(2,))
    ends = {
        "code_turn": check_array("code_turn", code_turn, shape=(2,)),
        "rotary_turn": check_array("rotary_turn", rotary_turn, shape=(2,)),
    }
    labels = {
        "rotary_turn": "rotary, M(k)ᵀ, as in rotate,\n"
        "RoFormer and Meta's Llama\n(counter-clockwise, +θ)",
        "code_turn": "the code's shift, M(k):\nas in rotation\n(clockwise, −θ)",
    }
    colours = {"rotary_turn": QUALITATIVE[0], "code_turn": QUALITATIVE[5]}
    fig, ax = plt.subplots(figsize=(5, 4.6), layout="constrained")
    ring = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(ring), np.sin(ring), color="0.75", linewidth=1)
    ax.axhline(0, color="0.85", linewidth=0.8)
    ax.axvline(0, color="0.85", linewidth=0.8)
    ax.plot(*start, "o", color="black", markersize=7)
    ax.annotate("start, angle 0", start, xytext=(1.08, -0.08), va="top")
    begin = np.arctan2(start[1], start[0])
    for name in ("rotary_turn", "code_turn"):
        end, colour = ends[name], colours[name]
        arc = np.linspace(begin, np.arctan2(end[1], end[0]), 60)
        radius = 1.12 * np.hypot(*end)
        ax.plot(radius * np.cos(arc), radius * np.sin(arc), color=colour, lw=2)
        ax.annotate(
            "",
            xy=(radius * np.cos(arc[-1]), radius * np.sin(arc[-1])),
            xytext=(radius * np.cos(arc[-4]), radius * np.sin(arc[-4])),
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2},
        )
        ax.plot(*end, "o", color=colour, markersize=7)
        ax.text(
            *(1.3 * end),
            labels[name],
            color=colour,
            ha="left",
            va="bottom" if end[1] > 0 else "top",
        )
    ax.set(
        xlim=(-1.3, 2.4),
        ylim=(-1.6, 1.6),
        aspect="equal",
        xlabel="first entry of the pair (no unit)",
        ylabel="second entry of the pair (no unit)",
        title="One pair turned by θ = kω: two directions",
    )
    return detached(fig)


def decoding_figure(
    separation: np.ndarray,
    errors: Mapping[str, np.ndarray],
    failures: Mapping[str, int | None],
    *,
    title: str = "Nearest-neighbour decoding",
) -> Figure:
    """The decoding guarantee (half the separation) against the largest code error so far.

    Decoding among positions 0..p cannot fail while every error is below half
    the smallest distance between two codes; where an error curve comes near
    the guarantee, a marker shows the first position where decoding actually
    failed.

    Parameters
    ----------
    separation : array_like
        Shape ``(L,)``, from :func:`posenc.analysis.separation_profile`.
    errors : mapping of str to array_like
        Label -> per-position errors, shape ``(L,)``, from
        :func:`posenc.analysis.code_errors`.
    failures : mapping of str to int or None
        Label -> first failing position (from
        :func:`posenc.analysis.first_decoding_failure`), ``None`` if none.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, log-log.

    Examples
    --------
    >>> from posenc.analysis import separation_profile
    >>> sep = separation_profile(50, 2)
    >>> len(decoding_figure(sep, {"exact": np.full(50, 1e-17)}, {"exact": None}).axes)
    1
    """
    separation = check_array("separation", separation, ndim=1, finite=False)
    index = _log_spaced(separation.size, 600)
    running_max = {
        label: np.maximum.accumulate(
            check_array(f"errors[{label!r}]", error, shape=separation.shape)
        )
        for label, error in errors.items()
    }
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    ax.loglog(index, separation[index] / 2, color="black", label="half the smallest separation")
    for (label, running), colour in zip(running_max.items(), QUALITATIVE, strict=False):
        ax.loglog(index, np.maximum(running[index], 1e-18), color=colour, label=f"{label}: error")
        first = failures.get(label)
        if first is not None:
            ax.plot(
                [first],
                [max(running[first], 1e-18)],
                "X",
                color=colour,
                markersize=10,
                markeredgecolor="black",
                label=f"{label}: first failure, k = {first:,}",
            )
    ax.set(
        xlabel="position k (positions)",
        ylabel="distance (no unit)",
        title=title,
    )
    ax.legend(fontsize="small", loc="center left")
    return detached(fig)
