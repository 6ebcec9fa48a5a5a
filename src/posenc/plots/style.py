"""Shared style of the course's figures: colour maps and small drawing helpers.

* :data:`CMAP_SEQUENTIAL` (``"viridis"``) for non-negative quantities such as
  distances; perceptually uniform and readable with every common form of
  colour-vision deficiency.
* :data:`CMAP_DIVERGING` (``"RdBu_r"``, ColorBrewer's red-blue) for signed
  values, always centred on zero with :func:`symmetric_limits`.
* :data:`QUALITATIVE`: the Okabe-Ito palette for lines and markers that must
  be told apart by colour.

:func:`detached` is how every plotting function returns its figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["CMAP_DIVERGING", "CMAP_SEQUENTIAL", "QUALITATIVE", "detached", "symmetric_limits"]

CMAP_SEQUENTIAL = "viridis"
CMAP_DIVERGING = "RdBu_r"
QUALITATIVE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermilion
    "#F0E442",  # yellow
    "#000000",  # black
)


def symmetric_limits(values: np.ndarray) -> tuple[float, float]:
    """Colour limits ``(-m, m)`` centred on zero, with ``m`` the largest absolute value.

    Examples
    --------
    >>> symmetric_limits(np.array([-0.5, 2.0]))
    (-2.0, 2.0)
    """
    values = np.asarray(values, dtype=float)
    m = float(np.max(np.abs(values))) if values.size else 1.0
    m = m if m > 0 else 1.0
    return -m, m


def detached(fig: Figure) -> Figure:
    """Close ``fig`` in pyplot and return it, so a notebook cell ending with it shows it once.

    Figures made through pyplot are drawn by Jupyter's inline backend at the
    end of the cell *and* displayed as the cell's value; a closed figure is
    only displayed as the value. Every plotting function returns its figure
    through this.
    """
    plt.close(fig)
    return fig
