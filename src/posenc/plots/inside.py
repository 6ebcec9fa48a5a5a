"""Figures of chapter 6, position inside attention (Shaw, T5, RoPE, ALiBi, NoPE).

Every function draws numbers computed by :mod:`posenc.rotary`,
:mod:`posenc.biases` or the notebook and returns a
:class:`matplotlib.figure.Figure`, already closed in pyplot. :class:`RopeView`
is the figure of the RoPE explorer (:func:`posenc.widgets.rope_explorer`) and
of its static version in the book; it redraws in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..rotary import rope_decay_bound, rotary_score
from ..validation import check_array, check_integer, check_real
from .style import CMAP_DIVERGING, QUALITATIVE, detached

__all__ = [
    "RopeView",
    "alibi_figure",
    "angle_error_figure",
    "decay_bound_figure",
    "rope_score_figure",
    "shaw_clip_figure",
    "t5_bucket_figure",
]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: Smallest value the logarithmic axis of :class:`RopeView` shows.
FLOOR = 1e-3


def _check_series(x_name: str, x: Any, series: Mapping[str, Any], *, finite: bool = True):
    x = check_array(x_name, x, ndim=1)
    if not isinstance(series, Mapping) or not series:
        raise TypeError(f"series must be a non-empty mapping of label to values, got {series!r}")
    if len(series) > len(QUALITATIVE):
        raise ValueError(f"at most {len(QUALITATIVE)} series can be drawn, got {len(series)}")
    return x, {
        str(label): check_array(f"series {label!r}", values, shape=(x.size,), finite=finite)
        for label, values in series.items()
    }


def shaw_clip_figure(offsets: Any, clipped: Any, max_relative_position: int) -> Figure:
    """The offset ``j - i`` and its clipped value, side by side, as heat maps.

    Each map has its own colour scale: the clipped one uses ``2k + 1``
    discrete colours, one per learned vector, so it is not washed out by the
    range of the unclipped offsets.

    Parameters
    ----------
    offsets, clipped : array_like
        Shape ``(length, length)`` each: ``j - i`` and ``clip(j - i, -k, k)``.
    max_relative_position : int
        The clipping distance ``k``, for the title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> off = np.arange(6)[None, :] - np.arange(6)[:, None]
    >>> fig = shaw_clip_figure(off, np.clip(off, -2, 2), 2)
    >>> len(fig.axes)  # two heat maps, each with its own colour bar
    4
    """
    offsets = check_array("offsets", offsets, ndim=2)
    clipped = check_array("clipped", clipped, shape=offsets.shape)
    k = check_integer("max_relative_position", max_relative_position, minimum=0)
    limit = max(float(np.abs(offsets).max()), 1.0)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2), layout="constrained", sharey=True)
    left = axes[0].imshow(
        offsets, cmap=CMAP_DIVERGING, vmin=-limit, vmax=limit, interpolation="nearest"
    )
    fig.colorbar(left, ax=axes[0], label="offset (positions)")
    # the clipped table on its own scale: one colour per learned vector, so
    # the 2k + 1 values stay as distinct as the offsets on the left
    levels = plt.get_cmap(CMAP_DIVERGING).resampled(2 * k + 1)
    right = axes[1].imshow(
        clipped, cmap=levels, vmin=-k - 0.5, vmax=k + 0.5, interpolation="nearest"
    )
    fig.colorbar(right, ax=axes[1], ticks=np.arange(-k, k + 1), label="clipped offset")
    axes[0].set_title("offset $b - a$")
    axes[1].set_title(f"clipped to $[-{k}, {k}]$: one learned vector each")
    for ax in axes:
        ax.set_xlabel("key position $b$ (tokens)")
    axes[0].set_ylabel("query position $a$ (tokens)")
    return detached(fig)


def t5_bucket_figure(offsets: Any, buckets: Mapping[str, Any], max_distance: int) -> Figure:
    """T5's bucket against the offset, one step line per setting.

    Parameters
    ----------
    offsets : array_like of int
        Shape ``(n,)``, offsets ``key - query``.
    buckets : mapping of str to array_like
        Label to buckets of the same shape.
    max_distance : int
        Drawn as dotted lines at ``±max_distance``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from posenc import t5_relative_bucket
    >>> off = np.arange(-200, 201)
    >>> fig = t5_bucket_figure(off, {"T5": t5_relative_bucket(off)}, 128)
    >>> fig.axes[0].get_ylabel()
    'bucket (index)'
    """
    offsets, buckets = _check_series("offsets", offsets, buckets)
    max_distance = check_integer("max_distance", max_distance, minimum=1)
    fig, ax = plt.subplots(figsize=(8.0, 4.2), layout="constrained")
    for (label, values), colour in zip(buckets.items(), QUALITATIVE, strict=False):
        ax.step(offsets, values, where="mid", color=colour, label=label, linewidth=1.6)
    for x in (-max_distance, max_distance):
        ax.axvline(x, color="black", linestyle=":", linewidth=1)
    ax.set_xlabel("offset: key position - query position (positions)")
    ax.set_ylabel("bucket (index)")
    ax.set_title(f"Exact buckets near zero, logarithmic ones up to ±{max_distance} (dotted)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left")
    return detached(fig)


def decay_bound_figure(offsets: Any, bounds: Mapping[str, Any]) -> Figure:
    """The relative decay bound of RoFormer against the offset, one line per setting.

    Parameters
    ----------
    offsets : array_like
        Shape ``(n,)``.
    bounds : mapping of str to array_like
        Label to :func:`~posenc.rotary.rope_decay_bound` values.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from posenc.rotary import rope_decay_bound
    >>> off = np.arange(0, 100)
    >>> fig = decay_bound_figure(off, {"b = 1e4": rope_decay_bound(off, 128)})
    >>> fig.axes[0].get_xlabel()
    'distance $a - b$, query minus key (positions)'
    """
    offsets, bounds = _check_series("offsets", offsets, bounds)
    fig, ax = plt.subplots(figsize=(8.0, 4.2), layout="constrained")
    for (label, values), colour in zip(bounds.items(), QUALITATIVE, strict=False):
        ax.plot(offsets, values, color=colour, label=label, linewidth=1.2)
    ax.set_xlabel("distance $a - b$, query minus key (positions)")
    ax.set_ylabel(r"relative bound $(2/d_k)\,\sum_j |C_j|$ (no unit)")
    ax.set_title("RoFormer's long-term decay bound")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return detached(fig)


def angle_error_figure(
    positions: Any,
    errors: Mapping[str, Any],
    threshold: float = 1.0,
    *,
    per_step: bool = False,
    guides: Mapping[str, float] | None = None,
) -> Figure:
    """Largest error of the RoPE angles at each position, per number format, log scale.

    By default the errors are in radians and a dashed line marks
    ``threshold`` radians (default 1, the fastest pair's step between
    neighbouring positions): above it, the fastest pair can no longer tell
    neighbouring positions apart. With ``per_step=True`` the errors are
    shares of each pair's step (the angle between neighbouring positions),
    and the dashed line marks that share (pass e.g. ``threshold=0.05``).

    Parameters
    ----------
    positions : array_like
        Shape ``(n,)``, positive.
    errors : mapping of str to array_like
        Label to the largest angle error at each position, in radians or,
        with ``per_step``, as a share of a step; zeros are drawn at the
        bottom of the axis and values that are not finite (a format's
        overflow) are not drawn.
    threshold : float, optional
        Height of the dashed reference line.
    per_step : bool, optional
        Whether the errors are shares of a step rather than radians.
    guides : mapping of str to float, optional
        Label of a series to a relative precision ``u``: a dotted line
        ``positions * u`` in that series' colour, the rule of thumb for the
        share of a step that rounding costs.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = angle_error_figure(np.arange(1, 5), {"float16": np.array([0, 1e-3, 0, 1.0])})
    >>> fig.axes[0].get_yscale()
    'log'
    """
    positions, errors = _check_series("positions", positions, errors, finite=False)
    guides = {} if guides is None else dict(guides)
    unknown = set(guides) - set(errors)
    if unknown:
        raise ValueError(f"guides name no series: {sorted(unknown)}")
    fig, ax = plt.subplots(figsize=(8.0, 4.2), layout="constrained")
    floor = 1e-9
    top = 30.0
    for (label, values), colour, marker in zip(errors.items(), QUALITATIVE, _MARKERS, strict=False):
        values = np.where(np.isfinite(values), values, np.nan)
        if per_step and np.any(np.isfinite(values)):
            top = max(top, 3 * float(np.nanmax(values)))
        ax.plot(
            positions,
            np.maximum(values, floor),
            color=colour,
            marker=marker,
            markersize=3,
            linestyle="none",
            label=label,
        )
        if label in guides:
            ax.plot(positions, positions * guides[label], color=colour, linestyle=":", linewidth=1)
    ax.axhline(threshold, color="black", linestyle="--", linewidth=1)
    if per_step:
        note = f"{threshold:.0%} of a step: our safety margin"
        ylabel = "largest error over the pairs (share of a step)"
    else:
        note = f"{threshold:g} rad: neighbouring positions blur (fastest pair)"
        ylabel = "largest angle error over the pairs (radians)"
    ax.text(positions.min(), threshold * 1.4, note, fontsize="small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, top)
    ax.set_xlabel("position $a$ (tokens, log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title("RoPE angles computed in each number format")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right")
    return detached(fig)


def alibi_figure(distance: Any, slopes: Any) -> Figure:
    """How much attention weight ALiBi's bias leaves each head, against the distance.

    Head ``h`` adds ``-m_h * d`` to the score of a key ``d`` positions away,
    which multiplies that key's weight by ``exp(-m_h * d)`` compared with an
    equal key at distance 0. One line per head, on a logarithmic distance
    axis, so steep and flat heads are all visible at once; a dotted line
    marks ``exp(-1)``, where the penalty reaches 1. The legend lists the
    heads from the steepest slope to the flattest.

    Parameters
    ----------
    distance : array_like
        Shape ``(n,)``, positive distances ``|b - a|``.
    slopes : array_like
        Shape ``(n_heads,)``, positive, in the order of the heads.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from posenc import alibi_slopes
    >>> fig = alibi_figure(np.arange(1, 1001), alibi_slopes(6))
    >>> len(fig.axes[0].get_lines())
    7
    """
    distance = check_array("distance", distance, ndim=1)
    slopes = check_array("slopes", slopes, ndim=1)
    if slopes.size == 0 or slopes.size > len(QUALITATIVE):
        raise ValueError(f"between 1 and {len(QUALITATIVE)} slopes can be drawn, got {slopes.size}")
    if np.any(distance <= 0) or np.any(slopes <= 0):
        raise ValueError("distances and slopes must be positive")
    fig, ax = plt.subplots(figsize=(8.0, 4.2), layout="constrained")
    styles = ("-", "--", "-.", ":")
    for h, (m, colour) in enumerate(zip(slopes, QUALITATIVE, strict=False)):
        ax.plot(
            distance,
            np.exp(-m * distance),
            color=colour,
            linestyle=styles[h % len(styles)],
            linewidth=1.8,
            label=f"head {h}: slope $2^{{{np.log2(m):g}}}$",
        )
    ax.axhline(np.exp(-1.0), color="black", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("distance $|b - a|$ between query and key (tokens, log scale)")
    ax.set_ylabel(r"weight kept, $e^{-m_h |b - a|}$")
    ax.set_title("ALiBi: steep heads keep only near keys, flat heads keep far ones")
    ax.grid(True, which="major", alpha=0.3)
    # the legend from the steepest head to the flattest, whatever the code's
    # head order (the authors' code gives the steepest slope to a late head)
    handles, labels = ax.get_legend_handles_labels()
    order = np.argsort(-slopes, kind="stable")
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="upper right",
        fontsize="small",
        title="steepest first",
        title_fontsize="small",
    )
    return detached(fig)


class RopeView:
    """The score of RoPE for one pair against the offset, under its decay bound.

    The pair is ``q = k = (1, ..., 1) / sqrt(d)``, for which ``|q| = |k| = 1``
    and every pair of columns carries the same weight ``h_i = 2/d``. Then
    the score is ``(2/d) sum_i cos(phi theta_i)`` and the RoFormer bound for
    this pair equals the relative bound of
    :func:`~posenc.rotary.rope_decay_bound` exactly. Both are drawn in
    absolute value against the offset on logarithmic axes (values below
    :data:`FLOOR` at it): every offset up to 256, then about a thousand
    offsets spread evenly on the logarithmic axis up to ``max_offset``
    (``offsets``). A marker shows one offset and the title gives both values
    there, computed for that offset.

    The axes do not depend on ``d``, the base or the marked offset, so a
    redraw never has to lay out or render the frame again.

    Parameters
    ----------
    d : int
        Head width, even, ``2 <= d <= max_d``.
    base : float
        The base ``n``, ``> 0``.
    offset : int
        The marked offset, ``1 <= offset <= max_offset``.
    max_offset : int
        The offsets drawn are ``1, ..., max_offset``; ``>= 1``.
    max_d : int
        The largest width the view will show, which fixes the y axis.

    Examples
    --------
    >>> view = RopeView(64, 10_000.0, 100, max_offset=500)
    >>> view.update(32, 500_000.0)
    >>> int(view.score_line.get_xdata()[-1])
    500
    >>> view.set_offset(1)
    >>> view.marker.get_xdata()
    [1, 1]
    """

    def __init__(
        self, d: int, base: float, offset: int, *, max_offset: int = 8192, max_d: int = 256
    ) -> None:
        self.max_d = check_integer("max_d", max_d, minimum=2)
        self.max_offset = check_integer("max_offset", max_offset, minimum=1)
        # Every offset up to 256, then about 1,000 offsets spread evenly on the
        # logarithmic axis: the same picture at a tenth of the cost.
        spread = np.geomspace(1, self.max_offset, 1024).round().astype(np.int64)
        self.offsets = np.union1d(np.arange(1, min(256, self.max_offset) + 1), spread)
        fig = detached(plt.figure(figsize=(8.0, 4.4), layout="constrained"))
        self.figure = fig
        self.ax = fig.add_subplot()
        (self.bound_line,) = self.ax.plot(
            [], [], color=QUALITATIVE[1], linewidth=1.6, label="RoFormer bound for this pair"
        )
        (self.score_line,) = self.ax.plot(
            [],
            [],
            color=QUALITATIVE[0],
            linewidth=1.0,
            label=r"|score| of $q = \kappa = (1, \dots, 1)/\sqrt{d_k}$",
        )
        self.marker = self.ax.axvline(1, color="black", linewidth=1.0, linestyle="--")
        self.ax.set_xscale("log")
        self.ax.set_yscale("log")
        self.ax.set_xlim(1, self.max_offset)
        self.ax.set_ylim(FLOOR, (self.max_d / 2 + 1) / 2 * 1.5)
        self.ax.set_xlabel("distance $a - b$, query minus key (positions, log scale)")
        self.ax.set_ylabel("|score|, bound (no unit, log scale)")
        self.ax.grid(True, which="major", alpha=0.3)
        self.ax.legend(loc="lower left")
        self.title = self.ax.set_title("", fontsize="medium")
        self.data_artists = (self.bound_line, self.score_line)
        self.moving_artists = (self.marker, self.title)
        self.offset = check_integer("offset", offset, minimum=1, maximum=self.max_offset)
        self.update(d, base)

    def update(self, d: int, base: float) -> None:
        """Recompute the curves for a new width and base (no new figure)."""
        d = check_integer("d", d, minimum=2, maximum=self.max_d)
        if d % 2:
            raise ValueError(f"d must be an even integer >= 2 (pairs of columns), got {d}")
        base = check_real("base", base, positive=True)
        q = np.full(d, 1.0 / np.sqrt(d))
        self.score = rotary_score(q, q, self.offsets, base=base)
        self.bound = rope_decay_bound(self.offsets, d, base)
        self.settings = {"d": d, "base": base}
        self.bound_line.set_data(self.offsets, np.maximum(self.bound, FLOOR))
        self.score_line.set_data(self.offsets, np.maximum(np.abs(self.score), FLOOR))
        self.set_offset(self.offset)

    def set_offset(self, offset: int) -> None:
        """Move the marker to ``offset`` and give both values there in the title."""
        offset = check_integer("offset", offset, minimum=1, maximum=self.max_offset)
        self.offset = offset
        self.marker.set_xdata([offset, offset])
        q = np.full(self.settings["d"], 1.0 / np.sqrt(self.settings["d"]))
        score = rotary_score(q, q, [offset], base=self.settings["base"])[0]
        bound = rope_decay_bound([offset], self.settings["d"], self.settings["base"])[0]
        self.title.set_text(
            f"RoPE, $d_k = {self.settings['d']}$, base $n = {self.settings['base']:,.6g}$; "
            f"offset {offset}: score {score:.3f}, bound {bound:.2f}"
        )


def rope_score_figure(
    d: int, base: float = 10_000.0, offset: int = 100, max_offset: int = 8192
) -> Figure:
    """The figure of :class:`RopeView`, static: what the RoPE explorer shows.

    Examples
    --------
    >>> fig = rope_score_figure(128, 10_000.0, 50, max_offset=200)
    >>> fig.axes[0].get_yscale()
    'log'
    """
    return RopeView(d, base, offset, max_offset=max_offset, max_d=max(int(d), 2)).figure
