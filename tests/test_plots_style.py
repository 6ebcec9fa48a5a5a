"""Tests of posenc.plots.style: colour limits and figures detached from pyplot."""

import matplotlib.pyplot as plt
import numpy as np

from posenc.plots.style import detached, symmetric_limits


def test_symmetric_limits_centre_on_zero():
    assert symmetric_limits(np.array([-0.25, 3.0])) == (-3.0, 3.0)
    assert symmetric_limits(np.array([-4.0, 1.0])) == (-4.0, 4.0)
    assert symmetric_limits(np.zeros(3)) == (-1.0, 1.0)
    assert symmetric_limits(np.array([])) == (-1.0, 1.0)


def test_detached_figure_is_no_longer_tracked_by_pyplot():
    fig = plt.figure()
    assert fig.number in plt.get_fignums()
    assert detached(fig) is fig
    assert fig.number not in plt.get_fignums()
    fig.add_subplot().plot([0, 1])  # still usable for drawing and saving
    assert len(fig.axes) == 1
