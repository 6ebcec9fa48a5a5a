"""Figures of the course: every function returns a :class:`matplotlib.figure.Figure`.

The figures carry labelled axes with units, a title, and colour-blind-safe
colour maps (see :mod:`posenc.plots.style`). They compute nothing of their
own: the numbers come from :mod:`posenc` and the plotting functions only draw
them. One submodule per chapter keeps related figures together; everything
is re-exported here, so ``from posenc import plots; plots.heatmap(...)``
works for any of them.
"""

from .encoding import *  # noqa: F403
from .encoding import __all__ as _encoding_all
from .style import CMAP_DIVERGING, CMAP_SEQUENTIAL, QUALITATIVE, symmetric_limits

__all__ = ["CMAP_DIVERGING", "CMAP_SEQUENTIAL", "QUALITATIVE", "symmetric_limits"]
__all__ += _encoding_all
