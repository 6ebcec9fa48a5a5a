"""Figures of chapter 1 (motivation): why a transformer needs to be told about order.

* :func:`property_grid`: the candidate schemes against the properties of a
  position signal, as a grid of ticks and crosses with the measured numbers;
* :func:`pooled_vectors`: mean-pooled sentence vectors of several word
  orders, without and with a position code;
* :func:`distance_by_offset`: how far apart the codes of two positions are,
  as a function of their offset, for several schemes.

Every function draws numbers computed elsewhere (:mod:`posenc.properties`,
:mod:`posenc.attention`) and returns a :class:`matplotlib.figure.Figure`.
Each figure is made through :mod:`matplotlib.pyplot` (so that Jupyter's
inline backend knows how to display it) and at once removed from pyplot's
list of open figures: a notebook cell that ends with the figure shows it
exactly once, and no figure lingers in memory.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..properties import PROPERTY_LABELS, PROPERTY_MEASURES, PropertyTable
from ..validation import check_array
from .style import CMAP_SEQUENTIAL, QUALITATIVE, detached

__all__ = ["distance_by_offset", "pooled_vectors", "property_grid"]

_MARKERS = ("o", "x", "s", "^", "D", "v", "P", "*")
_LINESTYLES = ("-", "--", ":", "-.")
_NA_GREY = "#c8c8c8"  # a neutral grey, no hue of either end of viridis


def _new_figure(figsize: tuple[float, float]) -> Figure:
    """A figure that pyplot does not track, so a notebook displays it only where returned."""
    return detached(plt.figure(figsize=figsize))


def _two_tone_map() -> ListedColormap:
    """The two ends of the sequential map: dark for "lacks", light for "has"."""
    sequential = matplotlib.colormaps[CMAP_SEQUENTIAL]
    return ListedColormap([sequential(0.0), sequential(1.0)], name="property_grid")


def _format_value(value: float) -> str:
    return "no code" if math.isnan(value) else f"{value:.3g}"


def _column_label(prop: str, rule: str | None) -> str:
    """A property's name, then what its number measures and, if given, its pass line."""
    label = PROPERTY_LABELS.get(prop, prop)
    notes = [PROPERTY_MEASURES[prop]] if prop in PROPERTY_MEASURES else []
    if rule:
        notes.append(f"✓ if {rule}")
    return f"{label}\n({', '.join(notes)})" if notes else label


def _upright_label(label: str, width: int = 16) -> str:
    """A short label on lines of at most ``width`` characters, a new line after each comma."""
    clauses = label.split(", ")
    return ",\n".join(textwrap.fill(clause, width=width) for clause in clauses)


def property_grid(
    table: PropertyTable,
    *,
    not_applicable: Mapping[tuple[str, str], str] | None = None,
    pass_rules: Mapping[str, str] | None = None,
    show_values: bool = True,
    notes: Mapping[tuple[str, str], str] | None = None,
) -> Figure:
    """The property table as a grid: one row per scheme, one column per property.

    A cell is light with a tick (✓) where the scheme has the property and dark
    with a cross (✗) where it lacks it, so the verdict reads without colour
    too; under the mark stands the measured number behind the verdict, and
    each column's label names what that number measures
    (:data:`posenc.properties.PROPERTY_MEASURES`; for "has codes past training
    length" the number of positions coded, "no code" where the scheme
    raised). Colours are the two ends of ``viridis``, with colour limits
    fixed at ``(0, 1)``.

    A cell listed in ``not_applicable`` is drawn grey with "n/a" and a short
    note instead of its mark and number, for a verdict that does not apply
    (for instance the order of a learned table before training); the table's
    own verdicts stay as they are.

    A property listed in ``pass_rules`` gets its pass line in its column label,
    after what the number measures, e.g. ``"(agreement, ✓ if ≥ 0.75)"``, so
    that a reader sees why a number earns a tick without the text.

    With ``show_values=False`` the grid shows the marks alone, and the column
    labels the property names alone, upright and wrapped at 16 characters so
    that none is slanted or cut off, for a page that gives the numbers
    elsewhere. A cell listed in ``notes`` shows its note (a word or two, such
    as why a cross is a cross) under the mark instead of the number.

    Parameters
    ----------
    table : PropertyTable
        From :func:`posenc.properties.property_table`.
    not_applicable : mapping of (scheme, property) to str, optional
        Cells to mark "n/a", each with a note of a word or two shown under it.
    pass_rules : mapping of property to str, optional
        The pass line of each listed property, in a few words (``"≥ 0.75"``).
    show_values : bool, default True
        Print the measured number under each mark, and what it measures under
        each property's name.
    notes : mapping of (scheme, property) to str, optional
        Cells whose note replaces the number under the mark.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from posenc.properties import property_table
    >>> fig = property_grid(property_table(length=8, d_model=8))
    >>> fig.axes[0].images[0].get_array().shape
    (5, 6)
    """
    if not isinstance(table, PropertyTable):
        raise TypeError(
            "table must be a PropertyTable (from posenc.properties.property_table), "
            f"got {type(table).__name__}"
        )
    not_applicable = dict(not_applicable or {})
    for scheme, prop in not_applicable:
        if scheme not in table.schemes or prop not in table.properties:
            raise ValueError(
                f"not_applicable names a cell the table does not have: {(scheme, prop)!r}"
            )
    notes = dict(notes or {})
    for scheme, prop in notes:
        if scheme not in table.schemes or prop not in table.properties:
            raise ValueError(f"notes names a cell the table does not have: {(scheme, prop)!r}")
    pass_rules = dict(pass_rules or {})
    for prop in pass_rules:
        if prop not in table.properties:
            raise ValueError(f"pass_rules names a property the table does not have: {prop!r}")
    passed = table.passed.astype(float)
    values = table.values
    n_schemes, n_props = passed.shape
    fig = _new_figure((1.45 * n_props + 2.2, 0.62 * n_schemes + 1.9))
    ax = fig.subplots()
    ax.imshow(passed, cmap=_two_tone_map(), vmin=0.0, vmax=1.0, aspect="auto")
    for r, scheme in enumerate(table.schemes):
        for c, prop in enumerate(table.properties):
            if (scheme, prop) in not_applicable:
                ax.add_patch(
                    Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=_NA_GREY, edgecolor="none")
                )
                ax.text(
                    c,
                    r,
                    f"n/a\n{not_applicable[scheme, prop]}",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="black",
                )
                continue
            mark = "✓" if passed[r, c] else "✗"
            if (scheme, prop) in notes:
                under = f"\n{notes[scheme, prop]}"
            elif show_values:
                under = f"\n{_format_value(values[r, c])}"
            else:
                under = ""
            ax.text(
                c,
                r,
                f"{mark}{under}",
                ha="center",
                va="center",
                fontsize=9,
                color="black" if passed[r, c] else "white",
            )
    labels = [
        _column_label(p, pass_rules.get(p))
        if show_values
        else _upright_label(PROPERTY_LABELS.get(p, p))
        for p in table.properties
    ]
    ax.set_xticks(range(n_props), labels)
    ax.set_yticks(range(n_schemes), list(table.schemes))
    if show_values:  # long labels with their measures: slanted
        ax.tick_params(axis="x", labelrotation=25)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    measured = "what it measures, and when it earns ✓" if pass_rules else "what it measures"
    sizes = f"training length L_train = {table.length}, d = {table.d_model} columns"
    ax.set_xlabel(
        f"property (number: {measured}), {sizes}" if show_values else f"property, {sizes}"
    )
    ax.set_ylabel("candidate position code")
    ax.set_title("Which position codes have which property")
    cmap = _two_tone_map()
    ax.legend(
        handles=[
            Patch(facecolor=cmap(1.0), edgecolor="grey", label="✓ has the property"),
            Patch(facecolor=cmap(0.0), edgecolor="grey", label="✗ lacks it"),
            *(
                [Patch(facecolor=_NA_GREY, edgecolor="grey", label="n/a: does not apply")]
                if not_applicable
                else []
            ),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    fig.tight_layout()
    return fig


def pooled_vectors(
    without_code: np.ndarray,
    with_code: np.ndarray,
    sentences: Sequence[str],
    *,
    titles: tuple[str, str] = ("attention only", "attention after adding position codes"),
) -> Figure:
    """Mean-pooled sentence vectors, one line per sentence, without (left) and with (right) codes.

    Identical vectors draw on top of each other: the markers differ in shape
    and size so that both remain visible.

    Parameters
    ----------
    without_code, with_code : array_like
        Shape ``(n_sentences, d)``: one pooled vector per sentence.
    sentences : sequence of str
        The ``n_sentences`` sentences, used as legend labels.
    titles : tuple of two str
        Titles of the left and right panels.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the vertical axis; line ``s`` of each panel holds
        row ``s`` of the corresponding array (a grey line marks zero).

    Examples
    --------
    >>> fig = pooled_vectors(np.zeros((2, 3)), np.eye(2, 3), ["a b", "b a"])
    >>> fig.axes[1].lines[0].get_ydata()
    array([1., 0., 0.])
    """
    without_code = check_array("without_code", without_code, ndim=2)
    with_code = check_array("with_code", with_code, shape=without_code.shape)
    sentences = list(sentences)
    n, d = without_code.shape
    if len(sentences) != n or not all(isinstance(s, str) for s in sentences):
        raise ValueError(
            f"sentences must be {n} strings (one per row of without_code), got {sentences!r}"
        )
    if not 1 <= n <= len(QUALITATIVE):
        raise ValueError(f"without_code must have 1 to {len(QUALITATIVE)} rows, got {n}")
    if len(titles) != 2 or not all(isinstance(t, str) for t in titles):
        raise ValueError(f"titles must be two strings, got {titles!r}")
    fig = _new_figure((10, 3.6))
    axes = fig.subplots(1, 2, sharey=True)
    columns = np.arange(d)
    for ax, data, title in zip(axes, (without_code, with_code), titles, strict=True):
        for s, sentence in enumerate(sentences):
            ax.plot(
                columns,
                data[s],
                color=QUALITATIVE[s],
                marker=_MARKERS[s % len(_MARKERS)],
                markersize=9 - 2 * (s % 3),
                markerfacecolor="none" if s % 2 else QUALITATIVE[s],
                linestyle=_LINESTYLES[s % len(_LINESTYLES)],
                linewidth=1.2,
                label=f"“{sentence}”",
            )
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set_title(title)
        ax.set_xlabel("column j of the pooled vector (index)")
        ax.set_xticks(columns)
    axes[0].set_ylabel("value (no unit)")
    axes[1].legend(loc="best", fontsize=8)
    fig.suptitle("Mean of the attention outputs over the words of each sentence")
    fig.tight_layout()
    return fig


def distance_by_offset(curves: Mapping[str, np.ndarray], *, log: bool = True) -> Figure:
    r"""Mean distance between codes :math:`\phi` positions apart, one line per scheme.

    Parameters
    ----------
    curves : mapping of str to array_like
        Scheme name to :math:`\bar{e}(\phi)` for :math:`\phi = 1, 2, \dots`, as
        returned by :func:`posenc.properties.mean_distance_by_offset`
        (shape ``(L - 1,)``; lengths may differ between schemes).
    log : bool
        Logarithmic vertical axis (needs positive values), so that codes
        of very different scales fit on one figure.

    Returns
    -------
    matplotlib.figure.Figure
        One line per entry of ``curves``, in order, at offsets 1, 2, ...

    Examples
    --------
    >>> fig = distance_by_offset({"a": [1.0, 2.0], "b": [1.0, 1.0]})
    >>> fig.axes[0].get_yscale()
    'log'
    """
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(
            f"curves must be a non-empty mapping of names to arrays, got {type(curves).__name__}"
        )
    if len(curves) > len(QUALITATIVE):
        raise ValueError(f"curves must hold at most {len(QUALITATIVE)} schemes, got {len(curves)}")
    if not isinstance(log, (bool, np.bool_)):
        raise TypeError(f"log must be True or False, got {log!r}")
    checked = {}
    for name, curve in curves.items():
        curve = check_array(f"curves[{name!r}]", curve, ndim=1)
        if log and np.any(curve <= 0):
            raise ValueError(
                f"curves[{name!r}] must be > 0 everywhere on a log scale (use log=False)"
            )
        checked[str(name)] = curve
    fig = _new_figure((7, 4))
    ax = fig.subplots()
    for s, (name, curve) in enumerate(checked.items()):
        ax.plot(
            np.arange(1, curve.size + 1),
            curve,
            color=QUALITATIVE[s],
            marker=_MARKERS[s % len(_MARKERS)],
            markersize=4,
            linestyle=_LINESTYLES[s % len(_LINESTYLES)],
            label=name,
        )
    if log:
        ax.set_yscale("log")
    scale = ", log scale" if log else ""
    ax.set_xlabel("offset φ between the two positions (positions)")
    ax.set_ylabel(f"mean distance between codes\n(no unit{scale})")
    ax.set_title("How far apart the codes of two positions are, by offset")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig
