"""Figures of the frequencies of the sinusoidal encoding (chapter 4, visualisation).

:func:`plot_wavelengths` draws the wavelength of every pair of columns,
:func:`plot_pair_circles` one pair of columns as a point going round a
circle, :func:`plot_distance_from_start` the distance from position 0's code
for a few bases; the numbers come from :mod:`posenc.encodings` and
:mod:`posenc.analysis`. Like the figures of
:mod:`posenc.plots.encoding`, each is released from pyplot when made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from ..analysis import offset_cosine_distance
from ..encodings import frequencies, sinusoidal, wavelengths
from ..validation import check_integer, check_real
from .encoding import (
    _MARK_COLOUR,
    _PE,
    _check_indices,
    _check_table_args,
    _new_figure,
    _number,
    _settings,
)
from .style import CMAP_SEQUENTIAL, QUALITATIVE

__all__ = ["plot_distance_from_start", "plot_pair_circles", "plot_wavelengths"]

# line styles of the marked sequence lengths, in order
_LENGTH_STYLES = (":", "-.", (0, (6, 2)), (0, (1, 3)))
# line styles of the averaged curves, so that they differ by more than colour
_CURVE_STYLES = ("-", "--", "-.", ":")


def _check_bases(bases: Sequence[float], most: int) -> tuple[float, ...]:
    """``bases`` as a tuple of positive floats, one to ``most`` of them (one per line drawn)."""
    if isinstance(bases, (str, bytes)) or not isinstance(bases, Sequence):
        raise TypeError(f"bases must be a sequence of numbers, got {type(bases).__name__}")
    if not 1 <= len(bases) <= most:
        raise ValueError(f"bases must hold between 1 and {most} values, got {len(bases)}")
    return tuple(check_real(f"bases[{a}]", b, positive=True) for a, b in enumerate(bases))


def plot_wavelengths(
    d_model: int,
    bases: Sequence[float] = (10_000.0,),
    *,
    length: int | Sequence[int] | None = None,
    limits: bool = True,
    turns: float = 1.0,
    verdict: bool = False,
) -> Figure:
    r"""Wavelength :math:`\lambda_i = 2\pi n^{2i/d}` of each pair ``i``, on a log scale.

    One series of points per base, with a dashed line at that base's
    :math:`2\pi n`, which the last pair never reaches; a grey line at
    :math:`2\pi`, the first pair's wavelength; and, with ``length``, a dotted
    line at each ``L``: pairs above it do not complete one period within a
    sequence of that length, and a base whose last pair ends below it turns
    every pair at least once. With ``turns`` below 1 each line moves up to
    ``L / turns``, the wavelength of a pair that makes that many turns over
    ``L`` positions: a base whose last pair ends above it keeps its slowest
    pair within that margin.

    Parameters
    ----------
    d_model : int
        Width ``d >= 1``.
    bases : sequence of float
        One to eight bases ``n > 0``.
    length : int or sequence of int, optional
        One to four sequence lengths ``L >= 1`` to mark.
    limits : bool
        Draw each base's :math:`2\pi n` line (default); ``False`` leaves
        them out, which keeps a figure of several bases readable.
    turns : float
        Draw each length's line at ``L / turns`` (default 1, the length
        itself); for example 0.25 marks a quarter turn over ``L``.
    verdict : bool
        With ``length``: ring each base's last pair, the one the margin
        tests, name in its legend entry the lengths at which it keeps the
        margin (ends above the line) and those at which it does not, and
        leave out the line at :math:`2\pi`.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with a logarithmic vertical axis; line ``b`` holds
        ``wavelengths(d_model, bases[b])``.

    Examples
    --------
    >>> fig = plot_wavelengths(8, bases=(100.0,))
    >>> fig.axes[0].get_yscale()
    'log'
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    bases = _check_bases(bases, most=len(QUALITATIVE))
    turns = check_real("turns", turns, positive=True)
    if length is None:
        lengths: tuple[int, ...] = ()
    elif isinstance(length, Sequence) and not isinstance(length, (str, bytes)):
        if not 1 <= len(length) <= len(_LENGTH_STYLES):
            raise ValueError(
                f"length must hold between 1 and {len(_LENGTH_STYLES)} values, "
                f"got {len(length)}"
            )
        lengths = tuple(
            check_integer(f"length[{a}]", m, minimum=1) for a, m in enumerate(length)
        )
    else:
        lengths = (check_integer("length", length, minimum=1),)
    if verdict and not lengths:
        raise ValueError("verdict needs at least one length to test")

    fig = _new_figure(7.0, 4.2)
    ax = fig.subplots()
    for a, base in enumerate(bases):
        lam = wavelengths(d_model, base)
        label = f"$n$ = {_number(base)}"
        if verdict:
            # the last pair keeps the margin at L when it ends above L / turns
            kept = [_number(m) for m in lengths if lam[-1] > m / turns]
            lost = [_number(m) for m in lengths if lam[-1] <= m / turns]
            parts = [f"keeps the margin at {' and '.join(kept)}"] if kept else []
            parts += [f"misses it at {' and '.join(lost)}"] if lost else []
            label += ": " + "; ".join(parts)
        ax.plot(
            np.arange(lam.size),
            lam,
            color=QUALITATIVE[a],
            marker="o",
            markersize=3,
            linewidth=1.0,
            label=label,
        )
        if verdict:
            ax.plot(
                [lam.size - 1],
                [lam[-1]],
                linestyle="none",
                marker="o",
                markersize=11,
                markerfacecolor="none",
                markeredgecolor="black",
                markeredgewidth=1.4,
            )
        if limits:
            ax.axhline(
                2 * np.pi * base,
                color=QUALITATIVE[a],
                linestyle="--",
                linewidth=0.9,
                label=f"$2\\pi n$ = {_number(2 * np.pi * base)} (never reached)",
            )
    if not verdict:
        ax.axhline(2 * np.pi, color="0.5", linewidth=0.9, label=r"$2\pi$ (pair $i$ = 0)")
    for mark, style in zip(lengths, _LENGTH_STYLES, strict=False):
        label = f"sequence length $L$ = {_number(mark)}"
        if turns != 1.0:
            # name the margin first, then the line's height, L / turns
            label = (
                f"{turns:g} turn over $L$ = {_number(mark)} "
                f"($\\lambda$ = {_number(mark / turns)})"
            )
        ax.axhline(
            mark / turns,
            color=_MARK_COLOUR,
            linestyle=style,
            linewidth=1.2,
            label=label,
        )
    ax.set_yscale("log")
    ax.set_xlabel(r"pair index $i$ (columns $2i$ and $2i+1$)")
    ax.set_ylabel(r"wavelength $\lambda_i$ (positions, log scale)")
    title = f"Wavelengths grow geometrically across the pairs ($d$ = {d_model})"
    if verdict:
        title = f"The last pair decides: above a line keeps the margin ($d$ = {d_model})"
    ax.set_title(title, fontsize="medium")
    # opaque, so that a line drawn behind the legend does not cross its text
    ax.legend(fontsize="small", loc="upper left", framealpha=1.0)
    return fig


def plot_pair_circles(
    length: int,
    d_model: int,
    base: float = 10_000.0,
    pairs: Sequence[int] = (0, 4, 8, 16),
) -> Figure:
    r"""Each pair of columns as a point on the unit circle, one panel per pair.

    Pair ``i`` of position ``k`` is the point
    :math:`(\cos k\omega_i, \sin k\omega_i) = (\PE_{k,2i+1}, \PE_{k,2i})`:
    moving one position on turns it by the angle :math:`\omega_i`, whatever
    ``k`` is. Points are coloured by position (``viridis``), joined in order
    by grey chords of equal length, and the first three are numbered.

    Parameters
    ----------
    length, d_model, base
        The table; ``d_model >= 2``.
    pairs : sequence of int
        One to eight pair indices in ``[0, d_model // 2)`` (pairs with both a
        sine and a cosine column).

    Returns
    -------
    matplotlib.figure.Figure
        One square axes per pair (plus the colour bar); the scatter of panel
        ``p`` has offsets ``pe[:, [2i + 1, 2i]]``.

    Examples
    --------
    >>> fig = plot_pair_circles(12, 8, pairs=(0, 3))
    >>> fig.axes[0].collections[0].get_offsets().shape
    (12, 2)
    """
    length, d_model, base = _check_table_args(length, d_model, base)
    if d_model < 2:
        raise ValueError(f"d_model must be >= 2 to have a sine/cosine pair, got {d_model}")
    pairs = _check_indices("pairs", pairs, 0, d_model // 2 - 1)
    pe = sinusoidal(length, d_model, base)
    omega = frequencies(d_model, base)
    circle = np.linspace(0.0, 2 * np.pi, 181)

    ncols = len(pairs) if len(pairs) < 4 else math.ceil(math.sqrt(len(pairs)))
    nrows = math.ceil(len(pairs) / ncols)
    fig = _new_figure(1.2 + 2.6 * ncols, 0.6 + 2.9 * nrows)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True)).ravel()
    for ax in axes[len(pairs) :]:
        ax.set_visible(False)
    for ax, i in zip(axes, pairs, strict=False):
        ax.plot(np.cos(circle), np.sin(circle), color="0.85", linewidth=0.8, zorder=0)
        ax.plot(pe[:, 2 * i + 1], pe[:, 2 * i], color="0.6", linewidth=0.7, zorder=1)
        points = ax.scatter(
            pe[:, 2 * i + 1],
            pe[:, 2 * i],
            c=np.arange(length),
            cmap=CMAP_SEQUENTIAL,
            vmin=0,
            vmax=max(length - 1, 1),
            s=16,
            zorder=2,
        )
        for k in range(min(length, 3)):
            ax.annotate(
                f"{k}",
                (pe[k, 2 * i + 1], pe[k, 2 * i]),
                xytext=(0.84 * pe[k, 2 * i + 1] - 0.06, 0.84 * pe[k, 2 * i] - 0.05),
                fontsize="small",
            )
        ax.set_aspect("equal")
        ax.set_xlim(-1.2, 1.2)
        ax.set_ylim(-1.2, 1.2)
        ax.set_title(
            f"pair $i$ = {i}\n$\\omega_{{{i}}}$ = {omega[i]:.3g} rad/position", fontsize="medium"
        )
        ax.set_xlabel(f"${_PE}_{{k,{2 * i + 1}}}$ (cos)")
        ax.set_ylabel(f"${_PE}_{{k,{2 * i}}}$ (sin)")
    fig.colorbar(points, ax=list(axes), label="position $k$ (tokens)", shrink=0.85)
    fig.suptitle(
        f"Each pair turns by $\\omega_i$ per position ({_settings(length, d_model, base)})"
    )
    return fig


def plot_distance_from_start(
    length: int,
    d_model: int,
    bases: Sequence[float] = (10_000.0,),
    *,
    window: int = 257,
    mark_peaks: bool = False,
    parts: int = 0,
) -> Figure:
    r"""The cosine distance from position 0's code to every position's, for a few bases.

    One faint line per base draws :math:`D(k)`, the cosine distance between
    :math:`\PE_0` and :math:`\PE_k` for ``k = 0 .. length - 1``
    (:func:`posenc.analysis.offset_cosine_distance`); over a long input the
    fast pairs make it jitter. A bold line of the same colour draws its
    average over ``window`` neighbouring positions, centred on ``k``, which
    shows where the distance still climbs and where it levels off or comes
    back. Each legend entry names the base and how many times its slowest
    pair turns over the input, :math:`(L - 1) / \lambda_{d/2-1}`.

    Parameters
    ----------
    length : int
        Positions ``0 .. length - 1``; ``length >= window``.
    d_model : int
        Width ``d``, even and ``>= 2``.
    bases : sequence of float
        One to four bases ``n > 0``.
    window : int
        Odd number ``>= 1`` of positions in each average.
    mark_peaks : bool
        If true, a large dot marks where each average is highest, which
        shows at a glance where each distance stops growing.
    parts : int
        If ``>= 2``, a second, narrow axes draws for each base the mean
        distance over each of ``parts`` equal parts of the input (split by
        :func:`numpy.array_split`), so that one can read whether it grows
        from each part to the next; ``0`` (the default) leaves it out.

    Returns
    -------
    matplotlib.figure.Figure
        The first axes holds, for base ``b``, lines ``2 b`` (the distance)
        and ``2 b + 1`` (the average, drawn at positions
        ``window // 2 .. length - 1 - window // 2``); with ``mark_peaks``,
        line ``2 B + b`` (``B`` bases) is the dot at the average's highest
        point (its first, if it is reached twice). With ``parts``, the
        second axes holds line ``b``: the part means at ``1 .. parts``.

    Examples
    --------
    >>> fig = plot_distance_from_start(64, 8, bases=(100.0,), window=9)
    >>> fig.axes[0].lines[1].get_xdata()[:2]
    array([4, 5])
    """
    length = check_integer("length", length, minimum=1)
    d_model = check_integer("d_model", d_model, minimum=2)
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    bases = _check_bases(bases, most=len(_CURVE_STYLES))
    window = check_integer("window", window, minimum=1)
    if window % 2 == 0 or window > length:
        raise ValueError(f"window must be odd and at most length = {length}, got {window}")
    parts = check_integer("parts", parts, minimum=0)
    if parts == 1 or parts > length:
        raise ValueError(f"parts must be 0 or from 2 to length = {length}, got {parts}")

    positions = np.arange(length)
    half = window // 2
    if parts:
        fig = _new_figure(9.0, 4.2)
        ax, ax_parts = fig.subplots(1, 2, width_ratios=(3, 1))
    else:
        fig = _new_figure(7.0, 4.2)
        ax = fig.subplots()
    peaks, part_means = [], []
    for a, base in enumerate(bases):
        dist = offset_cosine_distance(positions, d_model, base)
        mean = np.convolve(dist, np.ones(window) / window, mode="valid")
        peaks.append((int(np.argmax(mean)) + half, float(mean.max())))
        part_means.append([part.mean() for part in np.array_split(dist, parts or 1)])
        turns = (length - 1) / wavelengths(d_model, base)[-1]
        colour = QUALITATIVE[a]
        ax.plot(positions, dist, color=colour, linewidth=0.3, alpha=0.25)
        ax.plot(
            positions[half : length - half],
            mean,
            color=colour,
            linestyle=_CURVE_STYLES[a],
            linewidth=2.0,
            label=f"$n$ = {_number(round(base))}: slowest pair turns {turns:.2g} times",
        )
    if mark_peaks:
        for a, (k, top) in enumerate(peaks):
            ax.plot(
                [k],
                [top],
                linestyle="none",
                marker="o",
                markersize=11,
                markerfacecolor=QUALITATIVE[a],
                markeredgecolor="black",
                markeredgewidth=1.2,
                zorder=5,
            )
    ax.set_xlim(0, length - 1)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("position $k$ (tokens)")
    ax.set_ylabel("cosine distance from position 0 (no unit)")
    ax.set_title(
        f"Distance from position 0; bold: average over {window} positions "
        f"($d$ = {d_model})",
        fontsize="medium",
    )
    ax.legend(fontsize="small", loc="lower right", framealpha=1.0)
    if parts:
        for a, means in enumerate(part_means):
            ax_parts.plot(
                np.arange(1, parts + 1),
                means,
                color=QUALITATIVE[a],
                linestyle=_CURVE_STYLES[a],
                linewidth=2.0,
                marker="o",
            )
        ax_parts.set_xticks(np.arange(1, parts + 1))
        ax_parts.set_xlabel(f"part of the input (1 to {parts})")
        ax_parts.set_ylabel("mean distance from position 0 (no unit)")
        ax_parts.set_title(f"Mean over each of {parts} parts", fontsize="medium")
    return fig
