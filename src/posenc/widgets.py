"""Interactive explorers of the sinusoidal encoding (and, for chapter 6, of RoPE's
score and decay bound: :func:`rope_explorer`), built with ipywidgets.

Each explorer is a :class:`ipywidgets.VBox` holding sliders for the width
``d``, the base ``n``, the length ``L`` and a position ``k``, above a
picture of one of the figures of :mod:`posenc.plots.encoding`. Moving a
slider redraws the picture:

* ``d``, ``n`` and ``L`` change the whole table, so their sliders redraw when
  they are released (``continuous_update=False``);
* ``k`` only moves a marker and one curve, so its slider redraws
  continuously while it is dragged.

How a redraw works, and why it is fast enough to follow a slider: the
figure is built once, by the same view class that makes the static figure
(for instance :class:`~posenc.plots.encoding.EncodingView`), laid out once
(:meth:`~posenc.plots.encoding.EncodingView.freeze_layout`), and rendered by
matplotlib's Agg renderer into an :class:`ipywidgets.Image`. A change of
``d``, ``n`` or ``L`` updates the artists' data in place (no new figure). The
picture is kept in layers (blitting): the frame (axes, ticks, labels, colour
bars) is rendered again only when its limits or labels changed; the data
(heat map, points, titles) are drawn over a copy of it; a change of ``k``
pastes back frame and data and draws only the few moving artists. The
explorers need no particular matplotlib backend: they work with the default
inline backend of a Jupyter kernel, in JupyterLab, Notebook and VS Code. In
a static page (the HTML book) nothing can redraw: use the static figures
there.

Every explorer keeps the count of its redraws in ``redraws`` (and of full
renderings in ``full_redraws``), which the tests and the benchmark read.

Examples
--------
>>> explorer = encoding_explorer(length=20, d_model=8, position=3)
>>> explorer.d_slider.value = 6
>>> explorer.view.table.shape
(20, 6)
>>> explorer.redraws
2
"""

from __future__ import annotations

import math
import struct
import zlib

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from .plots.encoding import MEASURES, EncodingView, ProjectionView, SimilarityView
from .plots.inside import RopeView
from .validation import check_choice, check_integer, check_real

__all__ = [
    "BASE_RANGE",
    "DEFAULTS",
    "ROPE_DEFAULTS",
    "EncodingExplorer",
    "Explorer",
    "ProjectionExplorer",
    "RopeExplorer",
    "SimilarityExplorer",
    "encoding_explorer",
    "projection_explorer",
    "rope_explorer",
    "similarity_explorer",
]

#: Default settings of every explorer: the sizes the redraw latency is measured at.
DEFAULTS = {"length": 100, "d_model": 128, "base": 10_000.0, "position": 20}
#: Smallest and largest base ``n`` the base slider offers (a logarithmic slider).
BASE_RANGE = (1.0, 1e6)
#: Resolution of the pictures, in dots per inch of the figure.
DPI = 90

_LARGEST_MAXIMUM = 2048  # upper bound of max_length and max_d_model


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's pixels as PNG bytes: 8-bit RGB (the figures are opaque), fast compression.

    Written here rather than by Pillow, which tries five row filters on every
    row and takes two to three times as long (about 17 ms against 6 to 9 ms
    for the explorers' pictures at the default sizes). Rows are stored
    unfiltered: the flat colours of a figure compress almost as well without
    a filter, to the same size within 4%.
    """
    rgb = np.asarray(canvas.buffer_rgba())[..., :3]
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # leading 0: "no filter"
    rows[:, 1:] = rgb.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)),
            _png_chunk(b"IEND", b""),
        )
    )


def _slider(kind, description: str, value, minimum, maximum, **options):
    """A slider that redraws on release unless ``continuous_update=True`` is given."""
    options.setdefault("continuous_update", False)
    return kind(
        value=value,
        min=minimum,
        max=maximum,
        description=description,
        style={"description_width": "initial"},
        **options,
    )


class HintedVBox(widgets.VBox):
    """What every explorer shares: a one-line plain-text fallback instead of a repr
    tree, and the fast redraw of the artists that move over a kept frame."""

    #: What a notebook shows in place of the live widget: before its cell runs
    #: (a stored output, or an untrusted notebook), and in a front end without
    #: widgets. One line, the same on every machine.
    HINT = "Run this cell to get the sliders (a live picture needs a running kernel)."

    def __repr__(self) -> str:
        return f"{type(self).__name__}: {self.HINT}"

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The widget view, with a one-line hint as its plain-text fallback.

        ipywidgets' own fallback is the repr of the whole tree of children
        (``EncodingExplorer(children=(HBox(...``), which is what a reader sees
        of a stored output before running the cell.
        """
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle

    def _blit_moving_artists(self) -> None:
        """Paste back the frame and the data, draw the moving artists, publish the PNG.

        A subclass keeps ``view`` (with ``figure`` and ``moving_artists``), ``_canvas``,
        ``_under_marker`` (the saved frame and data), ``image`` and ``redraws``.
        """
        figure, canvas = self.view.figure, self._canvas
        canvas.restore_region(self._under_marker)
        for artist in self.view.moving_artists:
            figure.draw_artist(artist)
        self.image.value = _png(canvas)
        self.redraws += 1


class Explorer(HintedVBox):
    """Sliders for ``d``, ``n``, ``L`` and ``k`` above a live picture of a view.

    Not used directly: :func:`encoding_explorer`, :func:`similarity_explorer`
    and :func:`projection_explorer` build one for their figure.

    Attributes
    ----------
    d_slider, base_slider, length_slider, position_slider : ipywidgets widgets
        The controls; setting ``.value`` from code redraws like a drag does.
    image : ipywidgets.Image
        The picture, PNG bytes in ``image.value``.
    view
        The figure's view (its ``figure``, ``update`` and ``set_position``).
    redraws, full_redraws : int
        Pictures rendered so far, and how many of them were full renderings.
    """

    def __init__(
        self,
        view,
        *,
        length: int,
        d_model: int,
        base: float,
        position: int,
        max_length: int,
        max_d_model: int,
        extra_controls: tuple = (),
    ) -> None:
        self.view = view
        self.redraws = 0
        self.full_redraws = 0
        self._holding = False
        view.figure.set_dpi(DPI)
        self._canvas = FigureCanvasAgg(view.figure)
        view.freeze_layout(max_length, max_d_model)
        # Data and moving artists are drawn by hand over the kept frame (blitting).
        for artist in (*view.data_artists, *view.moving_artists):
            artist.set_animated(True)
        self._frame = None  # pixels of the frame: axes, ticks, labels, colour bars
        self._frame_key = None  # what the frame's pixels depend on
        self._under_marker = None  # pixels of the frame and the data

        self.d_slider = _slider(widgets.IntSlider, "d (width)", d_model, 1, max_d_model)
        self.base_slider = _slider(
            widgets.FloatLogSlider,
            "n (base)",
            base,
            math.log10(BASE_RANGE[0]),
            math.log10(BASE_RANGE[1]),
            base=10,
            step=0.01,
            readout_format=",.6g",
        )
        self.length_slider = _slider(widgets.IntSlider, "L (length)", length, 1, max_length)
        # Moving k redraws only the marker: cheap enough to follow the drag.
        self.position_slider = _slider(
            widgets.IntSlider, "k (position)", position, 0, length - 1, continuous_update=True
        )
        self.image = widgets.Image(format="png")
        for control in (self.d_slider, self.base_slider, self.length_slider, *extra_controls):
            control.observe(self._on_table_change, names="value")
        self.position_slider.observe(self._on_position_change, names="value")
        controls = widgets.HBox(
            [
                widgets.VBox([self.d_slider, self.base_slider]),
                widgets.VBox([self.length_slider, self.position_slider, *extra_controls]),
            ]
        )
        super().__init__(children=[controls, self.image])
        self._render_data()

    # What a subclass changes: how the view is told about new settings.
    def _update_view(self) -> None:
        self.view.update(self.length_slider.value, self.d_slider.value, self.base_slider.value)

    def _on_table_change(self, change) -> None:
        # A shorter table moves the position slider's end (and maybe its value):
        # hold the light redraw, the full one below covers it.
        self._holding = True
        try:
            self.position_slider.max = self.length_slider.value - 1
        finally:
            self._holding = False
        self._update_view()
        self.view.set_position(self.position_slider.value)
        self._render_data()

    def _on_position_change(self, change) -> None:
        if self._holding:
            return
        self.view.set_position(self.position_slider.value)
        self._render_position()

    def _frame_signature(self) -> tuple:
        """What the frame's pixels depend on: every axes' limits and labels, the colour maps."""
        key = [
            (
                ax.get_position().bounds,
                ax.get_xlim(),
                ax.get_ylim(),
                ax.get_xlabel(),
                ax.get_ylabel(),
            )
            for ax in self.view.figure.axes
        ]
        key += [a.get_cmap().name for a in self.view.data_artists if hasattr(a, "get_cmap")]
        return tuple(key)

    def _render_data(self) -> None:
        """After new settings: redraw the frame if it changed, then the data and the marker."""
        figure, canvas = self.view.figure, self._canvas
        key = self._frame_signature()
        if key != self._frame_key or self._frame is None:
            canvas.draw()  # animated (data and moving) artists are left out
            self._frame = canvas.copy_from_bbox(figure.bbox)
            self._frame_key = key
            self.full_redraws += 1
        else:
            canvas.restore_region(self._frame)
        for artist in self.view.data_artists:
            figure.draw_artist(artist)
        self._under_marker = canvas.copy_from_bbox(figure.bbox)
        self._render_position()

    def _render_position(self) -> None:
        """After a new position: paste back the frame and data, draw the moving artists."""
        self._blit_moving_artists()


def _check_explorer_args(length, d_model, base, position, max_length, max_d_model):
    max_length = check_integer("max_length", max_length, minimum=1, maximum=_LARGEST_MAXIMUM)
    max_d_model = check_integer("max_d_model", max_d_model, minimum=1, maximum=_LARGEST_MAXIMUM)
    length = check_integer("length", length, minimum=1, maximum=max_length)
    d_model = check_integer("d_model", d_model, minimum=1, maximum=max_d_model)
    base = check_real("base", base, minimum=BASE_RANGE[0], maximum=BASE_RANGE[1])
    position = check_integer("position", position, minimum=0, maximum=length - 1)
    return {
        "length": length,
        "d_model": d_model,
        "base": base,
        "position": position,
        "max_length": max_length,
        "max_d_model": max_d_model,
    }


class EncodingExplorer(Explorer):
    """The heat map of the table with row ``k`` marked and drawn below it."""

    def __init__(self, **settings) -> None:
        view = EncodingView(
            settings["length"], settings["d_model"], settings["base"], settings["position"]
        )
        super().__init__(view, **settings)


class SimilarityExplorer(Explorer):
    """Dot products or cosine distances between positions, and row ``k`` against the offset.

    Adds ``measure_dropdown`` (``"cosine"`` or ``"dot"``), which redraws in full.
    """

    def __init__(self, measure: str, **settings) -> None:
        view = SimilarityView(
            settings["length"],
            settings["d_model"],
            settings["base"],
            measure=measure,
            position=settings["position"],
        )
        self.measure_dropdown = widgets.Dropdown(
            options=[("cosine distance", "cosine"), ("dot product", "dot")],
            value=measure,
            description="measure",
        )
        super().__init__(view, extra_controls=(self.measure_dropdown,), **settings)

    def _update_view(self) -> None:
        self.view.update(
            self.length_slider.value,
            self.d_slider.value,
            self.base_slider.value,
            measure=self.measure_dropdown.value,
        )


class ProjectionExplorer(Explorer):
    """The codes on their first two principal axes, with position ``k`` ringed."""

    def __init__(self, **settings) -> None:
        view = ProjectionView(
            settings["length"], settings["d_model"], settings["base"], settings["position"]
        )
        super().__init__(view, **settings)


def encoding_explorer(
    *,
    length: int = DEFAULTS["length"],
    d_model: int = DEFAULTS["d_model"],
    base: float = DEFAULTS["base"],
    position: int = DEFAULTS["position"],
    max_length: int = 512,
    max_d_model: int = 512,
) -> EncodingExplorer:
    """The heat map of :func:`~posenc.plots.plot_encoding_heatmap`, live.

    Parameters
    ----------
    length, d_model, base, position : optional
        The starting values: ``1 <= length <= max_length``,
        ``1 <= d_model <= max_d_model``, base in :data:`BASE_RANGE`,
        ``0 <= position < length``.
    max_length, max_d_model : int, optional
        The ends of the ``L`` and ``d`` sliders, each in ``[1, 2048]``.

    Returns
    -------
    EncodingExplorer
        A widget: display it (last expression of a cell) to use it.

    Raises
    ------
    TypeError, ValueError
        If a setting has the wrong type or lies outside its range.

    Examples
    --------
    >>> explorer = encoding_explorer(length=10, d_model=4)
    Traceback (most recent call last):
        ...
    ValueError: position must be an integer >= 0 and <= 9, got 20
    """
    settings = _check_explorer_args(length, d_model, base, position, max_length, max_d_model)
    return EncodingExplorer(**settings)


def similarity_explorer(
    *,
    length: int = DEFAULTS["length"],
    d_model: int = DEFAULTS["d_model"],
    base: float = DEFAULTS["base"],
    position: int = DEFAULTS["position"],
    measure: str = "cosine",
    max_length: int = 512,
    max_d_model: int = 512,
) -> SimilarityExplorer:
    """The similarity matrix and offset profile of :func:`~posenc.plots.plot_similarity`, live.

    Parameters are those of :func:`encoding_explorer`, plus ``measure``
    (``"cosine"`` or ``"dot"``), the starting choice of the measure menu.

    Returns
    -------
    SimilarityExplorer

    Examples
    --------
    >>> explorer = similarity_explorer(length=30, d_model=16, position=5, measure="dot")
    >>> explorer.measure_dropdown.value = "cosine"
    >>> explorer.view.measure
    'cosine'
    """
    settings = _check_explorer_args(length, d_model, base, position, max_length, max_d_model)
    measure = check_choice("measure", measure, MEASURES)
    return SimilarityExplorer(measure, **settings)


def projection_explorer(
    *,
    length: int = DEFAULTS["length"],
    d_model: int = DEFAULTS["d_model"],
    base: float = DEFAULTS["base"],
    position: int = DEFAULTS["position"],
    max_length: int = 512,
    max_d_model: int = 512,
) -> ProjectionExplorer:
    """The principal-component projection of :func:`~posenc.plots.plot_pca_projection`, live.

    Parameters are those of :func:`encoding_explorer`.

    Returns
    -------
    ProjectionExplorer

    Examples
    --------
    >>> explorer = projection_explorer(length=40, d_model=2, position=0)
    >>> explorer.length_slider.value = 1
    >>> explorer.position_slider.max
    0
    """
    settings = _check_explorer_args(length, d_model, base, position, max_length, max_d_model)
    return ProjectionExplorer(**settings)


#: Default settings of the RoPE explorer (chapter 6), where its latency is measured.
ROPE_DEFAULTS = {"d": 128, "base": 10_000.0, "offset": 100}


class RopeExplorer(HintedVBox):
    """Sliders for the base ``n``, the head width ``d_k`` and an offset, above the
    RoPE score of an evenly spread pair and its decay bound (:class:`RopeView`).

    The axes are fixed (logarithmic, offsets 1 to ``max_offset``), so the
    frame (axes, ticks, labels, legend) is rendered once. A change of ``n``
    or ``d_k`` (on release) recomputes the two curves and draws them over the
    kept frame; a change of the offset (continuous, while dragging) only
    moves the marker and rewrites the title.

    Attributes
    ----------
    base_slider, d_slider, offset_slider : ipywidgets widgets
    image : ipywidgets.Image
    view : RopeView
    redraws, full_redraws : int
    """

    def __init__(self, d: int, base: float, offset: int, *, max_d: int, max_offset: int) -> None:
        self.view = view = RopeView(d, base, offset, max_offset=max_offset, max_d=max_d)
        self.redraws = 0
        self.full_redraws = 0
        view.figure.set_dpi(DPI)
        self._canvas = FigureCanvasAgg(view.figure)
        view.figure.draw_without_rendering()  # constrained layout, once
        view.figure.set_layout_engine("none")
        for artist in (*view.data_artists, *view.moving_artists):
            artist.set_animated(True)
        self._canvas.draw()
        self._frame = self._canvas.copy_from_bbox(view.figure.bbox)
        self.full_redraws = 1
        self._under_marker = None
        self.base_slider = _slider(
            widgets.FloatLogSlider,
            "n (base)",
            base,
            1.0,
            math.log10(BASE_RANGE[1]),
            base=10,
            step=0.01,
            readout_format=",.6g",
        )
        self.d_slider = _slider(widgets.IntSlider, "d_k (head width)", d, 2, max_d, step=2)
        self.offset_slider = _slider(
            widgets.IntSlider, "offset a - b", offset, 1, max_offset, continuous_update=True
        )
        self.image = widgets.Image(format="png")
        self.base_slider.observe(self._on_curve_change, names="value")
        self.d_slider.observe(self._on_curve_change, names="value")
        self.offset_slider.observe(self._on_offset_change, names="value")
        controls = widgets.HBox(
            [widgets.VBox([self.base_slider, self.d_slider]), widgets.VBox([self.offset_slider])]
        )
        super().__init__(children=[controls, self.image])
        self._render_data()

    def _on_curve_change(self, change) -> None:
        self.view.update(self.d_slider.value, self.base_slider.value)
        self._render_data()

    def _on_offset_change(self, change) -> None:
        self.view.set_offset(self.offset_slider.value)
        self._render_offset()

    def _render_data(self) -> None:
        figure, canvas = self.view.figure, self._canvas
        canvas.restore_region(self._frame)
        for artist in self.view.data_artists:
            figure.draw_artist(artist)
        self._under_marker = canvas.copy_from_bbox(figure.bbox)
        self._render_offset()

    def _render_offset(self) -> None:
        self._blit_moving_artists()


def rope_explorer(
    *,
    d: int = ROPE_DEFAULTS["d"],
    base: float = ROPE_DEFAULTS["base"],
    offset: int = ROPE_DEFAULTS["offset"],
    max_d: int = 256,
    max_offset: int = 8192,
) -> RopeExplorer:
    """The RoPE score and its decay bound against the offset, live (chapter 6).

    Parameters
    ----------
    d : int, optional
        Starting head width ``d_k``, even, in ``[2, max_d]``.
    base : float, optional
        Starting base ``n``, in ``[10, 1e6]``.
    offset : int, optional
        Starting marked offset, in ``[1, max_offset]``.
    max_d : int, optional
        End of the width slider, even, in ``[2, 2048]``.
    max_offset : int, optional
        Largest offset drawn and end of the offset slider, in ``[1, 65536]``.

    Returns
    -------
    RopeExplorer

    Examples
    --------
    >>> explorer = rope_explorer(d=16, offset=10, max_d=32, max_offset=100)
    >>> explorer.d_slider.value = 32
    >>> explorer.view.settings["d"]
    32
    >>> rope_explorer(d=7)
    Traceback (most recent call last):
        ...
    ValueError: d must be an even integer in [2, 256], got 7
    """
    max_d = check_integer("max_d", max_d, minimum=2, maximum=_LARGEST_MAXIMUM)
    if max_d % 2:
        raise ValueError(f"max_d must be an even integer in [2, {_LARGEST_MAXIMUM}], got {max_d}")
    d = check_integer("d", d, minimum=2, maximum=max_d)
    if d % 2:
        raise ValueError(f"d must be an even integer in [2, {max_d}], got {d}")
    base = check_real("base", base, minimum=10.0, maximum=BASE_RANGE[1])
    max_offset = check_integer("max_offset", max_offset, minimum=1, maximum=65_536)
    offset = check_integer("offset", offset, minimum=1, maximum=max_offset)
    return RopeExplorer(d, base, offset, max_d=max_d, max_offset=max_offset)
