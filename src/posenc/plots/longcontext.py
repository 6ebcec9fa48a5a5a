"""Figures of chapter 7's experiment on real text (:mod:`posenc.longcontext`).

Each function takes numbers already summarised (means and 95% intervals over
seeds) and only draws them; it returns a :class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..validation import check_array
from .style import CMAP_SEQUENTIAL, QUALITATIVE, detached

__all__ = ["budget_figure", "extension_figure", "passkey_figure", "position_figure"]

_PALETTE = tuple(c for c in QUALITATIVE if c not in ("#F0E442", "#000000"))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_STYLES = ("-", "--", "-.", ":")


def _rows(name: str, rows) -> np.ndarray:
    array = check_array(name, rows, ndim=2, finite=False)
    if array.shape[1] != 3:
        raise ValueError(f"{name} must have rows (mean, low, high), got shape {array.shape}")
    return array


def position_figure(
    curves: Mapping[str, Sequence[Sequence[float]]],
    positions: Sequence[float],
    *,
    train_length: int,
    ylim: tuple[float, float] | None = None,
    xlabel: str = "input length read (bytes, log scale; dashed: training length)",
) -> Figure:
    """Perplexity against position, one line (and 95% band) per method.

    Parameters
    ----------
    curves : mapping label -> rows ``(mean, low, high)``, one per position bin
        A curve may be shorter than ``positions`` (a learned table stops at ``L``).
    positions : sequence of float
        Where each row belongs (tokens): the end of the prefix it averages
        over, or the centre of a bin.
    train_length : int
        Drawn as a dashed vertical line.

    Examples
    --------
    >>> fig = position_figure({"a": [[3, 2.9, 3.1], [3.5, 3.4, 3.6]]}, [16, 48], train_length=32)
    >>> len(fig.axes)
    1
    """
    if not curves:
        raise ValueError("curves must hold at least one method")
    positions = check_array("positions", positions, ndim=1)
    fig, ax = plt.subplots(figsize=(8.4, 4.4), layout="constrained")
    for index, (label, rows) in enumerate(curves.items()):
        rows = _rows(f"curves[{label!r}]", rows)
        x = positions[: len(rows)]
        colour = _PALETTE[index % len(_PALETTE)]
        ax.plot(x, rows[:, 0], color=colour, marker=_MARKERS[index % len(_MARKERS)],
                markersize=4, linestyle=_STYLES[index % len(_STYLES)], label=label)
        ax.fill_between(x, rows[:, 1], rows[:, 2], color=colour, alpha=0.1, linewidth=0)
    ax.axvline(train_length, color="0.4", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    ticks = [t for t in 2.0 ** np.arange(0, 16) if positions[0] <= t <= positions[-1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("perplexity per byte (lower is better)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title="position")
    return detached(fig)


def extension_figure(
    panels: Mapping[str, Mapping[str, Sequence[Sequence[float]]]],
    lengths: Sequence[int],
    *,
    train_length: int,
    ylim: tuple[float, float] | None = None,
) -> Figure:
    """Perplexity over the whole input against its length, one panel per setting.

    Parameters
    ----------
    panels : mapping title -> mapping label -> rows ``(mean, low, high)``, one per length

    Examples
    --------
    >>> fig = extension_figure({"p": {"a": [[3, 2.9, 3.1], [3.2, 3.1, 3.3]]}}, [8, 16],
    ...                        train_length=8)
    >>> len(fig.axes)
    1
    """
    if not panels:
        raise ValueError("panels must hold at least one panel")
    lengths = np.asarray(lengths, dtype=float)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels) + 1.8, 4.0),
                             layout="constrained", squeeze=False, sharey=True)
    labels = list(dict.fromkeys(k for p in panels.values() for k in p))
    for ax, (title, lines) in zip(axes[0], panels.items(), strict=True):
        for label, rows in lines.items():
            index = labels.index(label)
            rows = _rows(f"panels[{title!r}][{label!r}]", rows)
            shift = 1.0 + 0.04 * (index - len(labels) / 2)
            ax.errorbar(lengths * shift, rows[:, 0],
                        yerr=[rows[:, 0] - rows[:, 1], rows[:, 2] - rows[:, 0]],
                        color=_PALETTE[index % len(_PALETTE)],
                        marker=_MARKERS[index % len(_MARKERS)], capsize=3,
                        linestyle=_STYLES[index % len(_STYLES)], label=label)
        ax.axvline(train_length, color="0.4", linestyle="--", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [f"{int(n)}" for n in lengths])
        ax.set_xlabel("input length (bytes; dashed: training length)")
        ax.set_title(title)
        if ylim is not None:
            ax.set_ylim(*ylim)
    axes[0, 0].set_ylabel("perplexity per byte over the input")
    handles, names = [], []
    for ax in axes[0]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=False):
            if n not in names:
                handles.append(h)
                names.append(n)
    axes[0, -1].legend(handles, names, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                       fontsize="small", title="RoPE with")
    return detached(fig)


def passkey_figure(
    grids: Mapping[str, np.ndarray],
    lengths: Sequence[int],
    depths: Sequence[float],
    *,
    columns: int = 4,
) -> Figure:
    """Passkey accuracy by input length (columns) and depth of the key (rows), one panel each.

    Parameters
    ----------
    grids : mapping label -> array ``(len(depths), len(lengths))`` in ``[0, 1]``
        NaN where the model cannot run.

    Examples
    --------
    >>> fig = passkey_figure({"a": np.ones((2, 3))}, [8, 16, 32], [0.1, 0.9])
    >>> len(fig.axes)  # one panel and the colour bar
    2
    """
    if not grids:
        raise ValueError("grids must hold at least one panel")
    columns = min(columns, len(grids))
    rows = -(-len(grids) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.55 * columns + 1.2, 2.3 * rows + 0.5),
                             layout="constrained", squeeze=False)
    image = None
    for ax, (label, grid) in zip(axes.flat, grids.items(), strict=False):
        grid = check_array(f"grids[{label!r}]", grid, ndim=2, finite=False)
        if grid.shape != (len(depths), len(lengths)):
            raise ValueError(f"grids[{label!r}] must have shape (depths, lengths), "
                             f"got {grid.shape}")
        image = ax.imshow(grid, cmap=CMAP_SEQUENTIAL, vmin=0, vmax=1, aspect="auto")
        for (r, c), v in np.ndenumerate(grid):
            text = "n/a" if np.isnan(v) else f"{100 * v:.0f}"
            ax.text(c, r, text, ha="center", va="center", fontsize=8,
                    color="black" if not np.isnan(v) and v > 0.6 else "white")
        ax.set_xticks(range(len(lengths)), [str(n) for n in lengths], fontsize=8)
        ax.set_yticks(range(len(depths)), [f"{d:.0%}" for d in depths], fontsize=8)
        ax.set_title(label, fontsize=9)
    for ax in axes.flat[len(grids):]:
        fig.delaxes(ax)
    for ax in axes[-1]:
        ax.set_xlabel("input length (bytes)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("key's depth", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.8, label="keys recalled, % (all 5 digits right)",
                 format=lambda v, _: f"{100 * v:.0f}")
    return detached(fig)


def budget_figure(
    curves: Mapping[str, Sequence[Sequence[float]]],
    steps: Sequence[int],
    *,
    length: int,
    labels: Sequence[str] | None = None,
) -> Figure:
    """Perplexity at one length against fine-tuning updates, one line per rule.

    ``labels``: every label in the order of :func:`extension_figure`, so that
    a rule keeps its colour and marker from one figure to the other.

    Examples
    --------
    >>> fig = budget_figure({"a": [[4, 3.9, 4.1], [3, 2.9, 3.1]]}, [0, 10], length=64)
    >>> len(fig.axes)
    1
    """
    if not curves:
        raise ValueError("curves must hold at least one rule")
    steps = np.asarray(steps, dtype=float)
    fig, ax = plt.subplots(figsize=(7.0, 3.8), layout="constrained")
    order = list(labels) if labels is not None else list(curves)
    for label, rows in curves.items():
        index = order.index(label)
        rows = _rows(f"curves[{label!r}]", rows)
        ax.errorbar(steps + 0.6 * (index - len(order) / 2), rows[:, 0],
                    yerr=[rows[:, 0] - rows[:, 1], rows[:, 2] - rows[:, 0]],
                    color=_PALETTE[index % len(_PALETTE)], marker=_MARKERS[index % len(_MARKERS)],
                    capsize=3, linestyle=_STYLES[index % len(_STYLES)], label=label)
    ax.set_xticks(steps, [f"{int(s)}" for s in steps])
    ax.set_xlabel(f"fine-tuning updates at {length} bytes")
    ax.set_ylabel(f"perplexity per byte over {length} bytes")
    ax.legend(fontsize="small", title="RoPE with")
    return detached(fig)
