"""Figures of the sinusoidal encoding itself (chapter 4, visualisation).

Its frequencies, wavelengths and pairs of columns as circles are drawn by
:mod:`posenc.plots.frequency`.

Every ``plot_*`` function returns a :class:`matplotlib.figure.Figure`. The
numbers come from :mod:`posenc` (:func:`~posenc.sinusoidal`,
:func:`~posenc.wavelengths`, :mod:`posenc.similarity`,
:mod:`posenc.projection`); the functions here only draw them.

Three figures can follow a slider: :class:`EncodingView`,
:class:`SimilarityView` and :class:`ProjectionView` build the figure once and
then change the data of its artists in place (``update`` for the table's
parameters, ``set_position`` for the marked position). The ``plot_*``
function of the same figure is a view's ``figure``, so the static figure in
the book and the live one in :mod:`posenc.widgets` are the same drawing.

Figures are created through :mod:`matplotlib.pyplot` and immediately
released from it (``plt.close``): a notebook then shows a figure exactly once,
when it is the value of a cell, and long sessions do not accumulate open
figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..colour import CVD_TYPES, DICHROMACY, simulate_cvd
from ..encodings import sinusoidal, wavelengths
from ..projection import offset_profile, pca_projection
from ..similarity import cosine_distance_matrix, dot_product_matrix
from ..validation import check_choice, check_integer, check_real
from .style import CMAP_DIVERGING, CMAP_SEQUENTIAL, QUALITATIVE, detached, symmetric_limits

__all__ = [
    "MEASURES",
    "EncodingView",
    "ProjectionView",
    "SimilarityView",
    "plot_columns_against_position",
    "plot_distance_against_offset",
    "plot_encoding_heatmap",
    "plot_pca_projection",
    "plot_positions_against_column",
    "plot_similarity",
]

#: The two ways of comparing positions drawn by :func:`plot_similarity`.
MEASURES = ("dot", "cosine")

_MEASURE_LABELS = {
    "dot": r"dot product $\mathrm{PE}_k \cdot \mathrm{PE}_{k'}$ (no unit)",
    "cosine": "cosine distance (no unit)",
}
_MEASURE_TITLES = {"dot": "Dot products", "cosine": "Cosine distances"}
_SIN_COLOUR, _COS_COLOUR = QUALITATIVE[0], QUALITATIVE[1]
_MARK_COLOUR = QUALITATIVE[7]
# One row of the table against the column: its sine and its cosine columns.
_SIN_STYLE = {
    "color": _SIN_COLOUR,
    "marker": "o",
    "markersize": 2.5,
    "linewidth": 0.8,
    "label": "sine, even $j$",
}
_COS_STYLE = {**_SIN_STYLE, "color": _COS_COLOUR, "marker": "s", "label": "cosine, odd $j$"}
_PE = r"\mathrm{PE}"
# Where the titles of the live figures sit: right on top of the axes, where matplotlib
# would put them anyway (none of these axes has ticks on top). Saying so spares every
# drawing matplotlib's search for tick labels above the axes, a tenth of a redraw.
_TITLE_Y = 1.0
# Above the top right corner of an axes, beside its left-aligned title, clear of the data.
_LEGEND_ABOVE = {
    "loc": "lower right",
    "bbox_to_anchor": (1.0, 1.0),
    "ncols": 2,
    "fontsize": "small",
    "frameon": False,
    "borderaxespad": 0.1,
}


def _new_figure(width: float, height: float) -> Figure:
    """A constrained-layout figure that pyplot does not keep (see the module docstring)."""
    return detached(plt.figure(figsize=(width, height), layout="constrained"))


def _check_table_args(length, d_model, base):
    length = check_integer("length", length, minimum=1)
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    return length, d_model, base


def _check_indices(name: str, values, minimum: int, maximum: int) -> tuple[int, ...]:
    """A non-empty sequence of at most eight integers in ``[minimum, maximum]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    if not 1 <= len(values) <= len(QUALITATIVE):
        raise ValueError(
            f"{name} must hold between 1 and {len(QUALITATIVE)} values, got {len(values)}"
        )
    return tuple(
        check_integer(f"{name}[{a}]", v, minimum=minimum, maximum=maximum)
        for a, v in enumerate(values)
    )


def _value_axis(ax) -> None:
    """A vertical axis for code values: the range [-1, 1] with a margin, and the zero line."""
    ax.axhline(0.0, color="0.7", linewidth=0.6, zorder=0)
    ax.set_ylim(-1.15, 1.15)


def _number(value: float) -> str:
    """A number for a label: whole numbers in full with thousands separators, else 6 digits."""
    if value == round(value) and abs(value) < 1e12:
        return f"{value:,.0f}"
    return f"{value:,.6g}"


def _settings(length: int | None, d_model: int, base: float) -> str:
    text = f"$d$ = {d_model}, $n$ = {_number(base)}"
    return text if length is None else f"$L$ = {length}, " + text


# --- waves ---------------------------------------------------------------------


def plot_columns_against_position(
    length: int,
    d_model: int,
    base: float = 10_000.0,
    columns: Sequence[int] = (0, 1, 20, 60),
) -> Figure:
    r"""Sine waves per column: :math:`\PE_{k,j}` against the position ``k``, one panel per column.

    Parameters
    ----------
    length : int
        Number of positions ``L >= 1`` on the horizontal axis.
    d_model : int
        Width ``d >= 1`` of the code.
    base : float
        The base ``n > 0``.
    columns : sequence of int
        One to eight columns ``j`` in ``[0, d)``, one panel each, top to bottom.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per column, sharing the position axis; each panel's line
        holds ``sinusoidal(length, d_model, base)[:, j]``.

    Examples
    --------
    >>> fig = plot_columns_against_position(50, 16, columns=(0, 9))
    >>> [len(ax.lines[0].get_ydata()) for ax in fig.axes]
    [50, 50]
    """
    length, d_model, base = _check_table_args(length, d_model, base)
    columns = _check_indices("columns", columns, 0, d_model - 1)
    pe = sinusoidal(length, d_model, base)
    lam = wavelengths(d_model, base)
    k = np.arange(length)

    fig = _new_figure(7.0, 1.0 + 1.25 * len(columns))
    axes = np.atleast_1d(fig.subplots(len(columns), 1, sharex=True))
    for a, (ax, j) in enumerate(zip(axes, columns, strict=True)):
        kind = "sine" if j % 2 == 0 else "cosine"
        ax.plot(k, pe[:, j], color=QUALITATIVE[a], marker=".", markersize=3, linewidth=1)
        _value_axis(ax)
        ax.set_ylabel(f"${_PE}_{{k,{j}}}$")
        ax.set_title(
            f"column $j$ = {j}: {kind} of pair $i$ = {j // 2}, "
            f"wavelength $\\lambda_{{{j // 2}}}$ = {lam[j // 2]:,.1f} positions",
            fontsize="medium",
            loc="left",
        )
    axes[-1].set_xlabel("position $k$ (tokens)")
    fig.suptitle(f"Each column is a wave along the positions ({_settings(length, d_model, base)})")
    return fig


def plot_positions_against_column(
    d_model: int,
    base: float = 10_000.0,
    positions: Sequence[int] = (0, 1, 10, 50),
) -> Figure:
    r"""Each position's code: :math:`\PE_{k,j}` against the column ``j``, one panel per position.

    Sine columns (even ``j``) and cosine columns (odd ``j``) are drawn in two
    colours, each joined by its own line: read along a colour, a position's
    code is a wave over the pair index whose speed depends on ``k``.

    Parameters
    ----------
    d_model : int
        Width ``d >= 1`` of the code.
    base : float
        The base ``n > 0``.
    positions : sequence of int
        One to eight positions ``k >= 0``, one panel each.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per position; its first line holds the sine columns and its
        second line (if ``d >= 2``) the cosine columns of that row.

    Examples
    --------
    >>> fig = plot_positions_against_column(8, positions=(3,))
    >>> fig.axes[0].lines[0].get_xdata()
    array([0, 2, 4, 6])
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    positions = _check_indices("positions", positions, 0, 10**9)
    pe = sinusoidal(max(positions) + 1, d_model, base)
    j = np.arange(d_model)

    fig = _new_figure(7.0, 1.0 + 1.25 * len(positions))
    axes = np.atleast_1d(fig.subplots(len(positions), 1, sharex=True))
    for ax, k in zip(axes, positions, strict=True):
        row = pe[k]
        ax.plot(j[0::2], row[0::2], **_SIN_STYLE)
        if d_model > 1:
            ax.plot(j[1::2], row[1::2], **_COS_STYLE)
        _value_axis(ax)
        ax.set_ylabel(f"${_PE}_{{{k},j}}$")
        ax.set_title(f"position $k$ = {k}", fontsize="medium", loc="left")
    axes[0].legend(**_LEGEND_ABOVE)
    axes[-1].set_xlabel("column $j$ (feature index)")
    fig.suptitle(
        f"Each position is a row of waves over the columns ({_settings(None, d_model, base)})"
    )
    return fig


# --- figures that follow a slider ---------------------------------------------------


class _LiveView:
    """What the three figures that can follow a slider share.

    A view draws its figure once and then changes its artists in place:
    :meth:`update` for new table settings, :meth:`set_position` for the
    marked position. ``data_artists`` change with every update and
    ``moving_artists`` with the position; everything else (axes, ticks,
    labels, colour bars) is the frame, which only changes when limits or
    labels do. :mod:`posenc.widgets` uses this split to redraw as little as
    possible.
    """

    figure: Figure
    settings: dict
    position: int | None = None
    data_artists: tuple = ()
    moving_artists: tuple = ()

    def update(self, length: int, d_model: int, base: float = 10_000.0) -> None:
        raise NotImplementedError

    def set_position(self, position: int) -> None:
        raise NotImplementedError

    def _widest(self, max_length: int, max_d_model: int) -> dict:
        """The settings whose tick labels are the widest up to these sizes.

        The largest sizes, and the base 1, which gives every pair the same
        frequency and so the largest values of either sign.
        """
        return {"length": max_length, "d_model": max_d_model, "base": 1.0}

    def _check_marked(self, position: int, length: int) -> int:
        if not self.moving_artists:
            raise ValueError("this view was built without a position; pass position= to mark one")
        return check_integer("position", position, minimum=0, maximum=length - 1)

    def freeze_layout(self, max_length: int, max_d_model: int) -> None:
        """Lay the figure out for the widest labels up to these sizes, then keep that layout.

        A constrained layout costs about as much as drawing the figure; a
        figure whose data change but whose labels fit in the same margins
        does not need it again. The view is laid out at the settings with
        the widest tick labels, the layout is fixed, and the current settings
        are restored. The layout therefore depends on the maximum sizes only.

        The axis labels are pinned where that widest case puts them: placing
        a label measures every tick label of the axis, a fifth of a drawing,
        and pinned labels stay still while a slider moves instead of
        following the width of the tick labels.
        """
        max_length = check_integer("max_length", max_length, minimum=1)
        max_d_model = check_integer("max_d_model", max_d_model, minimum=1)
        saved, position = dict(self.settings), self.position
        self.update(**{**saved, **self._widest(max_length, max_d_model)})
        engine = self.figure.get_layout_engine()
        pads = engine.get()
        # A little more room than the widest case needs, for labels that are close to it.
        engine.set(w_pad=1.5 * pads["w_pad"], h_pad=1.5 * pads["h_pad"])
        self.figure.draw_without_rendering()
        self.figure.set_layout_engine("none")
        for ax in self.figure.axes:
            for axis in (ax.xaxis, ax.yaxis):
                label = axis.label
                where = label.get_transform().transform(label.get_position())
                axis.set_label_coords(*ax.transAxes.inverted().transform(where))
        self.update(**saved)
        if position is not None:
            self.set_position(position)


def _set_colours(mappable, *, cmap: str | None = None, limits: tuple[float, float]) -> None:
    """Set a colour map and colour limits, touching only what changes.

    Each change makes an attached colour bar rebuild itself, which costs as
    much as computing a new table; a live figure changes them rarely.
    """
    if cmap is not None and mappable.get_cmap().name != cmap:
        mappable.set_cmap(cmap)
    if tuple(mappable.get_clim()) != tuple(limits):
        mappable.set_clim(*limits)


def _round_up(value: float, step: float) -> float:
    """The smallest multiple of ``step`` that is at least ``value`` (up to rounding)."""
    return step * math.ceil(value / step - 1e-9)


def _integer_ticks(*axes) -> None:
    """Ticks at whole numbers only: positions and columns are integers."""
    for axis in axes:
        axis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=1))


# --- the table as a heat map -----------------------------------------------------


class EncodingView(_LiveView):
    """The table as a heat map; with a position, that row is marked and drawn below.

    Parameters
    ----------
    length, d_model, base
        The table ``sinusoidal(length, d_model, base)``; ``length >= 1``.
    position : int, optional
        A row ``k`` in ``[0, length)`` to mark; adds a panel with
        :math:`\\PE_{k,j}` against the column ``j`` under the heat map.

    Attributes
    ----------
    figure : matplotlib.figure.Figure
    image : matplotlib.image.AxesImage
        The heat map; ``image.get_array()`` is the table.
    moving_artists : tuple
        The artists :meth:`set_position` changes (empty without a position).

    Examples
    --------
    >>> view = EncodingView(20, 8, position=3)
    >>> view.update(30, 6, 100.0)
    >>> view.image.get_array().shape
    (30, 6)
    >>> view.set_position(29)
    """

    def __init__(
        self, length: int, d_model: int, base: float = 10_000.0, position: int | None = None
    ) -> None:
        length, d_model, base = _check_table_args(length, d_model, base)
        with_row = position is not None
        fig = _new_figure(7.0, 5.6 if with_row else 4.2)
        grid = fig.add_gridspec(
            2 if with_row else 1,
            2,
            width_ratios=(1.0, 0.03),
            height_ratios=(2.6, 1.0) if with_row else None,
        )
        self.figure = fig
        self.ax = fig.add_subplot(grid[0, 0])
        self.image = self.ax.imshow(
            np.zeros((1, 1)), cmap=CMAP_DIVERGING, aspect="auto", interpolation="nearest"
        )
        self.colorbar = fig.colorbar(self.image, cax=fig.add_subplot(grid[0, 1]))
        self.colorbar.locator = MaxNLocator(nbins=4)
        self.colorbar.set_label(f"${_PE}_{{k,j}}$ (no unit)")
        self.ax.set_xlabel("column $j$ (feature index)")
        self.ax.set_ylabel("position $k$ (tokens)")
        _integer_ticks(self.ax.xaxis, self.ax.yaxis)
        self.data_artists = (self.image, self.ax.title)
        self.moving_artists = ()
        self.position = position
        self._table = np.zeros((0, 0))
        if with_row:
            self.row_ax = fig.add_subplot(grid[1, 0])
            self.marker = self.ax.axhline(0.0, color=_MARK_COLOUR, linewidth=1.2)
            (self.sin_line,) = self.row_ax.plot([], [], **_SIN_STYLE)
            (self.cos_line,) = self.row_ax.plot([], [], **_COS_STYLE)
            _value_axis(self.row_ax)
            self.row_ax.set_autoscale_on(False)
            self.row_ax.set_xlabel("column $j$ (feature index)")
            self.row_ax.set_ylabel(f"${_PE}_{{k,j}}$")
            _integer_ticks(self.row_ax.xaxis)
            # The panel below has the same columns: label them once, at the bottom.
            self.ax.tick_params(labelbottom=False)
            self.ax.set_xlabel("")
            self.row_ax.legend(**_LEGEND_ABOVE)
            self.row_title = self.row_ax.set_title("", fontsize="medium", loc="left", y=_TITLE_Y)
            self.moving_artists = (self.marker, self.sin_line, self.cos_line, self.row_title)
        self.update(length, d_model, base)
        if with_row:
            self.set_position(position)

    def update(self, length: int, d_model: int, base: float = 10_000.0) -> None:
        """Redraw for a new table; a marked position beyond the new length moves to its end."""
        length, d_model, base = _check_table_args(length, d_model, base)
        self.settings = {"length": length, "d_model": d_model, "base": base}
        self._table = table = sinusoidal(length, d_model, base)
        self.image.set_data(table)
        self.image.set_extent((-0.5, d_model - 0.5, length - 0.5, -0.5))
        _set_colours(self.image, limits=symmetric_limits(table))
        self.ax.set_xlim(-0.5, d_model - 0.5)
        self.ax.set_ylim(length - 0.5, -0.5)
        self.ax.set_title(f"Sinusoidal encoding, {_settings(length, d_model, base)}", y=_TITLE_Y)
        if self.moving_artists:
            self.row_ax.set_xlim(-0.5, d_model - 0.5)
            self.set_position(min(self.position, length - 1))

    @property
    def table(self) -> np.ndarray:
        """The table drawn, shape ``(length, d_model)``."""
        return self._table

    def set_position(self, position: int) -> None:
        """Mark row ``position`` and draw it in the lower panel."""
        self.position = position = self._check_marked(position, self._table.shape[0])
        row = self._table[position]
        j = np.arange(row.size)
        self.marker.set_ydata([position, position])
        self.sin_line.set_data(j[0::2], row[0::2])
        self.cos_line.set_data(j[1::2], row[1::2])
        self.row_title.set_text(f"row $k$ = {position}")


def plot_encoding_heatmap(
    length: int, d_model: int, base: float = 10_000.0, *, position: int | None = None
) -> Figure:
    r"""The whole table :math:`\PE` as a heat map: positions down, columns across.

    Diverging colour map ``RdBu_r`` centred on zero (values are signed), with
    a colour bar. With ``position``, that row is marked and drawn as
    :math:`\PE_{k,j}` against ``j`` in a second panel (the figure of
    :func:`posenc.widgets.encoding_explorer`).

    Parameters
    ----------
    length : int
        Number of positions ``L >= 1``.
    d_model : int
        Width ``d >= 1``.
    base : float
        The base ``n > 0``.
    position : int, optional
        A row in ``[0, L)`` to mark.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_encoding_heatmap(10, 4)
    >>> fig.axes[0].images[0].get_clim()
    (-1.0, 1.0)
    """
    return EncodingView(length, d_model, base, position).figure


def plot_cvd_heatmaps(length: int, d_model: int, base: float = 10_000.0) -> Figure:
    r"""The heat map of :math:`\PE` as readers with colour-vision deficiencies see it.

    Four panels: normal vision, then deuteranopia, protanopia and tritanopia
    (deuteranomaly, protanomaly and tritanomaly at full severity, where the
    model removes one cone type), simulated with
    :func:`posenc.colour.simulate_cvd` (Machado et al. 2009). Each panel is
    the figure of :func:`plot_encoding_heatmap` without its colour bar: the
    table through ``RdBu_r`` with limits ``[-1, 1]``, its colours converted.

    Parameters
    ----------
    length : int
        Number of positions ``L >= 1``.
    d_model : int
        Width ``d >= 1``.
    base : float
        The base ``n > 0``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_cvd_heatmaps(10, 4)
    >>> [ax.get_title() for ax in fig.axes][:2]
    ['normal vision', 'deuteranopia (simulated)']
    """
    length, d_model, base = _check_table_args(length, d_model, base)
    table = sinusoidal(length, d_model, base)
    rgb = plt.get_cmap(CMAP_DIVERGING)((table + 1.0) / 2.0)[..., :3]
    fig = _new_figure(9.0, 6.4)
    axes = fig.subplots(2, 2, sharex=True, sharey=True)
    panels = [("normal vision", rgb)]
    panels += [(f"{DICHROMACY[kind]} (simulated)", simulate_cvd(rgb, kind)) for kind in CVD_TYPES]
    for ax, (title, image) in zip(axes.flat, panels, strict=True):
        ax.imshow(image, aspect="auto", interpolation="nearest")
        ax.set_title(title)
    for ax in axes[1]:
        ax.set_xlabel("column j")
    for ax in axes[:, 0]:
        ax.set_ylabel("position k")
    fig.suptitle(
        f"{CMAP_DIVERGING} heat map, {_settings(length, d_model, base)}, red = +1, blue = -1"
    )
    return fig


# --- similarity ----------------------------------------------------------------------


def _similarity_matrix(table: np.ndarray, measure: str) -> np.ndarray | None:
    """The matrix of ``measure``, or ``None`` where a cosine is undefined (a zero row)."""
    if measure == "dot":
        return dot_product_matrix(table)
    try:
        return cosine_distance_matrix(table)
    except ValueError:
        return None


class SimilarityView(_LiveView):
    """Dot products or cosine distances between all positions; with a position, its profile.

    The matrix is drawn as a square image: a diverging map centred on zero
    for dot products (signed), ``viridis`` from zero for cosine distances.
    With a position ``k``, its row is marked and a second panel draws that
    row against the offset :math:`\\phi = k' - k`.

    The cosine distance is undefined when a code is the zero vector, which
    happens for ``d = 1`` at position 0 (the code is ``sin 0``); the view
    then leaves the panels empty and says so in the title.

    Examples
    --------
    >>> view = SimilarityView(12, 8, measure="dot", position=2)
    >>> view.update(20, 8, 10_000.0, measure="cosine")
    >>> view.image.get_array().shape
    (20, 20)
    """

    def __init__(
        self,
        length: int,
        d_model: int,
        base: float = 10_000.0,
        *,
        measure: str = "cosine",
        position: int | None = None,
    ) -> None:
        _check_table_args(length, d_model, base)
        with_row = position is not None
        fig = _new_figure(9.4 if with_row else 5.6, 4.4)
        grid = fig.add_gridspec(
            1, 3 if with_row else 2, width_ratios=(1.0, 0.045, 1.15) if with_row else (1.0, 0.045)
        )
        fig.get_layout_engine().set(wspace=0.08)
        self.figure = fig
        self.ax = fig.add_subplot(grid[0, 0])
        self.image = self.ax.imshow(np.zeros((1, 1)), interpolation="nearest")
        self.colorbar = fig.colorbar(self.image, cax=fig.add_subplot(grid[0, 1]))
        self.colorbar.locator = MaxNLocator(nbins=5)
        self.ax.set_xlabel("position $k'$ (tokens)")
        self.ax.set_ylabel("position $k$ (tokens)")
        _integer_ticks(self.ax.xaxis, self.ax.yaxis)
        self.data_artists = (self.image, self.ax.title)
        self.moving_artists = ()
        self.position = position
        self.measure = measure
        self.matrix: np.ndarray | None = None
        if with_row:
            self.row_ax = fig.add_subplot(grid[0, 2])
            self.marker = self.ax.axhline(0.0, color="white", linewidth=1.0, linestyle="--")
            (self.profile,) = self.row_ax.plot(
                [], [], color=QUALITATIVE[0], marker=".", markersize=3, linewidth=1.0
            )
            self.row_ax.axvline(0.0, color="0.6", linewidth=0.8, zorder=0)
            self.row_ax.set_autoscale_on(False)
            self.row_ax.set_xlabel(r"offset $\phi = k' - k$ (positions)")
            _integer_ticks(self.row_ax.xaxis)
            self.row_ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
            self.row_title = self.row_ax.set_title("", fontsize="medium", y=_TITLE_Y)
            self.moving_artists = (self.marker, self.profile, self.row_title)
        self.update(length, d_model, base, measure=measure)
        if with_row:
            self.set_position(position)

    def update(
        self, length: int, d_model: int, base: float = 10_000.0, *, measure: str | None = None
    ) -> None:
        """Redraw for a new table (and measure); a marked position beyond the end moves to it."""
        length, d_model, base = _check_table_args(length, d_model, base)
        if measure is not None:
            self.measure = check_choice("measure", measure, MEASURES)
        self.settings = {"length": length, "d_model": d_model, "base": base}
        self.settings["measure"] = self.measure
        self.length = length
        self.matrix = matrix = _similarity_matrix(sinusoidal(length, d_model, base), self.measure)
        shown = np.full((length, length), np.nan) if matrix is None else matrix
        if self.measure == "dot":
            cmap, limits = CMAP_DIVERGING, symmetric_limits(shown)
        else:
            # Rounded up to 0.05, so that small changes keep the colour scale (and its bar).
            top = _round_up(float(np.nanmax(shown)), 0.05) if matrix is not None else 0.0
            cmap, limits = CMAP_SEQUENTIAL, (0.0, top if top > 0 else 1.0)
        self.image.set_data(shown)
        self.image.set_extent((-0.5, length - 0.5, length - 0.5, -0.5))
        _set_colours(self.image, cmap=cmap, limits=limits)
        self.colorbar.set_label(_MEASURE_LABELS[self.measure])
        self.ax.set_xlim(-0.5, length - 0.5)
        self.ax.set_ylim(length - 0.5, -0.5)
        # Two lines always, so that the layout does not depend on the case.
        if matrix is None:
            title = (
                f"{_MEASURE_TITLES[self.measure]} undefined: position 0 has the zero code\n"
                f"when $d$ = 1 ({_settings(length, d_model, base)})"
            )
        else:
            title = f"{_MEASURE_TITLES[self.measure]}\n{_settings(length, d_model, base)}"
        self.ax.set_title(title, fontsize="medium", y=_TITLE_Y)
        if self.moving_artists:
            span = max(length - 1, 1)
            self.row_ax.set_xlim(-span - 0.5, span + 0.5)
            if matrix is None or self.measure == "cosine":
                low, high = limits
            else:
                low, high = float(shown.min()), float(shown.max())
            pad = 0.06 * (high - low) if high > low else 0.5
            self.row_ax.set_ylim(low - pad, high + pad)
            self.row_ax.set_ylabel(_MEASURE_LABELS[self.measure])
            self.set_position(min(self.position, length - 1))

    def _widest(self, max_length: int, max_d_model: int) -> dict:
        # Dot products reach d/2: their labels are wider than the distances'.
        return {**super()._widest(max_length, max_d_model), "measure": "dot"}

    def set_position(self, position: int) -> None:
        """Mark row ``position`` and draw it against the offset."""
        self.position = position = self._check_marked(position, self.length)
        self.marker.set_ydata([position, position])
        if self.matrix is None:
            self.profile.set_data([], [])
        else:
            self.profile.set_data(*offset_profile(self.matrix, position))
        self.row_title.set_text(f"from position $k$ = {position}")


def plot_similarity(
    length: int,
    d_model: int,
    base: float = 10_000.0,
    *,
    measure: str = "cosine",
    position: int | None = None,
) -> Figure:
    r"""The matrix of dot products (``measure="dot"``) or cosine distances between all positions.

    Entry ``(k, k')`` compares :math:`\PE_k` with :math:`\PE_{k'}`. Dot
    products are signed and drawn with ``RdBu_r`` centred on zero; cosine
    distances lie in ``[0, 2]`` and are drawn with ``viridis`` from zero.
    With ``position``, that row is marked and drawn against the offset
    :math:`\phi = k' - k` in a second panel (the figure of
    :func:`posenc.widgets.similarity_explorer`). Unlike the explorer, whose
    offset axis stays fixed while the position moves, this static figure
    trims that axis to the row, so that both arms fill the panel.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_similarity(16, 8, measure="dot")
    >>> fig.axes[0].images[0].get_clim()
    (-4.0, 4.0)
    """
    view = SimilarityView(length, d_model, base, measure=measure, position=position)
    if position is not None:
        first, last = -view.position, view.length - 1 - view.position
        view.row_ax.set_xlim(min(first, -1) - 0.5, max(last, 1) + 0.5)
    return view.figure


def plot_distance_against_offset(
    length: int,
    d_model: int,
    base: float = 10_000.0,
    positions: Sequence[int] = (0, 30, 60),
    *,
    measure: str = "cosine",
) -> Figure:
    r"""The distance from each of a few positions to every other one, against the offset.

    One curve per reference position ``k``: row ``k`` of the matrix of
    :func:`plot_similarity` drawn at :math:`\phi = k' - k`. For the
    sinusoidal code the curves lie on top of each other (the value depends on
    :math:`\phi` only) and are mirror images around :math:`\phi = 0`.

    Parameters
    ----------
    length, d_model, base
        The table, ``length >= 1``.
    positions : sequence of int
        One to eight reference positions in ``[0, length)``.
    measure : {"cosine", "dot"}

    Returns
    -------
    matplotlib.figure.Figure
        One line per position, in the order given.

    Examples
    --------
    >>> fig = plot_distance_against_offset(10, 4, positions=(0, 9))
    >>> fig.axes[0].lines[1].get_xdata()[:3]
    array([-9, -8, -7])
    """
    length, d_model, base = _check_table_args(length, d_model, base)
    positions = _check_indices("positions", positions, 0, length - 1)
    measure = check_choice("measure", measure, MEASURES)
    matrix = _similarity_matrix(sinusoidal(length, d_model, base), measure)
    if matrix is None:
        raise ValueError(
            "the cosine distance is undefined for d_model = 1 (position 0 has the "
            "zero code); use measure='dot' or d_model >= 2"
        )

    fig = _new_figure(7.0, 3.8)
    ax = fig.subplots()
    styles = ("-", "--", ":", "-.")
    markers = ("o", "s", "^", "D", "v", "P", "X", "*")
    for a, k in enumerate(positions):
        offsets, values = offset_profile(matrix, k)
        ax.plot(
            offsets,
            values,
            color=QUALITATIVE[a],
            linestyle=styles[a % len(styles)],
            marker=markers[a],
            markersize=3,
            markevery=max(1, length // 25),
            linewidth=1.2,
            label=f"from $k$ = {k}",
        )
    ax.axvline(0.0, color="0.6", linewidth=0.8, zorder=0)
    ax.set_xlabel(r"offset $\phi = k' - k$ (positions)")
    ax.set_ylabel(_MEASURE_LABELS[measure])
    ax.legend(fontsize="small")
    ax.set_title(
        f"{_MEASURE_TITLES[measure]} against the offset, {_settings(length, d_model, base)}",
        fontsize="medium",
    )
    return fig


# --- projection -----------------------------------------------------------------------


class ProjectionView(_LiveView):
    """The codes projected on their first two principal axes, coloured by position.

    Consecutive positions are joined by a thin grey line, so the path of the
    code through the plane is visible; a marked position gets a ring and a
    label. The title gives each axis's share of the variance. With ``d = 1``
    there is a single axis and the points lie on the horizontal line.

    Examples
    --------
    >>> view = ProjectionView(30, 16, position=4)
    >>> view.points.get_offsets().shape
    (30, 2)
    >>> view.update(5, 1, 10_000.0)
    >>> view.points.get_offsets().shape
    (5, 2)
    """

    def __init__(
        self, length: int, d_model: int, base: float = 10_000.0, position: int | None = None
    ) -> None:
        _check_table_args(length, d_model, base)
        fig = _new_figure(6.4, 5.0)
        self.figure = fig
        self.ax = ax = fig.subplots()
        (self.path,) = ax.plot([], [], color="0.75", linewidth=0.8, zorder=1)
        self.points = ax.scatter(
            np.zeros(1), np.zeros(1), c=np.zeros(1), cmap=CMAP_SEQUENTIAL, s=14, zorder=2
        )
        self.colorbar = fig.colorbar(self.points, ax=ax, shrink=0.8)
        self.colorbar.locator = MaxNLocator(nbins=5, integer=True)
        self.colorbar.set_label("position $k$ (tokens)")
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel("principal axis 1 (no unit)")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=5))
        self.data_artists = (self.path, self.points, ax.title)
        self.moving_artists = ()
        self.position = position
        if position is not None:
            (self.marker,) = ax.plot(
                [],
                [],
                linestyle="none",
                marker="o",
                markersize=11,
                markerfacecolor="none",
                markeredgecolor=_MARK_COLOUR,
                markeredgewidth=1.6,
                zorder=3,
            )
            self.label = ax.annotate(
                "",
                (0.0, 0.0),
                xytext=(8, 8),
                textcoords="offset points",
                fontsize="small",
                zorder=4,
            )
            self.moving_artists = (self.marker, self.label)
        self.update(length, d_model, base)
        if position is not None:
            self.set_position(position)

    def update(self, length: int, d_model: int, base: float = 10_000.0) -> None:
        """Redraw for a new table; a marked position beyond the new length moves to its end."""
        length, d_model, base = _check_table_args(length, d_model, base)
        self.settings = {"length": length, "d_model": d_model, "base": base}
        self.result = result = pca_projection(
            sinusoidal(length, d_model, base), n_components=min(2, d_model)
        )
        xy = np.zeros((length, 2))
        xy[:, : result.coordinates.shape[1]] = result.coordinates
        self.xy = xy
        self.points.set_offsets(xy)
        self.points.set_array(np.arange(length, dtype=float))
        _set_colours(self.points, limits=(0.0, float(max(length - 1, 1))))
        self.path.set_data(xy[:, 0], xy[:, 1])
        ratio = 100 * result.explained_variance_ratio
        if d_model > 1:
            self.ax.set_ylabel("principal axis 2 (no unit)")
            shares = f"axis 1 holds {ratio[0]:.1f}% of the variance, axis 2 {ratio[1]:.1f}%"
        else:
            self.ax.set_ylabel("principal axis 2 (none: $d$ = 1)")
            shares = f"axis 1 holds {ratio[0]:.1f}% of the variance; there is no axis 2"
        radius = float(np.abs(xy).max()) if length > 1 else 0.0
        # A round half-width, so that small changes keep the axes (and their ticks).
        half = 1.12 * radius
        half = _round_up(half, 10 ** math.floor(math.log10(half)) / 4) if half > 0 else 1.0
        self.ax.set_xlim(-half, half)
        self.ax.set_ylim(-half, half)
        self.ax.set_title(
            f"Principal-component projection, {_settings(length, d_model, base)}\n{shares}",
            fontsize="medium",
            y=_TITLE_Y,
        )
        if self.moving_artists:
            self.set_position(min(self.position, length - 1))

    def set_position(self, position: int) -> None:
        """Ring and label the point of ``position``."""
        self.position = position = self._check_marked(position, self.xy.shape[0])
        x, y = self.xy[position]
        self.marker.set_data([x], [y])
        self.label.xy = (x, y)
        self.label.set_text(f"$k$ = {position}")


def plot_pca_projection(
    length: int, d_model: int, base: float = 10_000.0, *, position: int | None = None
) -> Figure:
    r"""The position codes :math:`\PE_0, \dots, \PE_{L-1}` projected on their two principal axes.

    Points are coloured by position (``viridis``, with a colour bar) and
    joined in order; the principal axes come from
    :func:`posenc.projection.pca_projection`. With ``position``, that point
    is ringed (the figure of :func:`posenc.widgets.projection_explorer`).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_pca_projection(40, 2)
    >>> fig.axes[0].collections[0].get_cmap().name
    'viridis'
    """
    return ProjectionView(length, d_model, base, position).figure
