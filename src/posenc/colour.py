"""Colour-vision-deficiency checks for the colour maps of the course's figures.

A colour map is "colour-blind safe" when readers with the common forms of
colour-vision deficiency (CVD) can still tell apart the values it encodes.
Rather than take that on trust, these functions simulate how a reader with
deuteranomaly, protanomaly or tritanomaly sees given sRGB colours, using the
model of Machado, Oliveira and Fernandes (2009) as implemented by the
``colorspacious`` package, and measure colour differences in the
perceptually uniform CAM02-UCS space (a difference of about 1 is just
noticeable).

:func:`sign_separation` answers the question the heat maps of signed values
raise: are a value and its negative still clearly different colours?

Reference: G. M. Machado, M. M. Oliveira, L. A. F. Fernandes, "A
physiologically-based model for simulation of color vision deficiency",
IEEE Transactions on Visualization and Computer Graphics 15(6), 2009.
"""

from __future__ import annotations

from typing import Any

import colorspacious
import matplotlib
import numpy as np

from .validation import check_array, check_choice, check_real

__all__ = ["CVD_TYPES", "DICHROMACY", "colour_difference", "sign_separation", "simulate_cvd"]

#: The three kinds of colour-vision deficiency the model simulates.
CVD_TYPES = ("deuteranomaly", "protanomaly", "tritanomaly")

#: What each kind becomes at full severity (``severity=100``), where the model
#: removes one cone type: a dichromacy. The model's tritan simulation is the
#: least validated of the three.
DICHROMACY = {
    "deuteranomaly": "deuteranopia",
    "protanomaly": "protanopia",
    "tritanomaly": "tritanopia",
}


def _rgb(name: str, value: Any) -> np.ndarray:
    rgb = check_array(name, value)
    if rgb.shape[-1:] != (3,):
        raise ValueError(f"{name} must have shape (..., 3) (sRGB in [0, 1]), got {rgb.shape}")
    if not (np.all(rgb >= 0.0) and np.all(rgb <= 1.0)):
        raise ValueError(f"{name} must hold sRGB values in [0, 1]")
    return rgb


def simulate_cvd(rgb: Any, kind: str, severity: float = 100.0) -> np.ndarray:
    """How a reader with a colour-vision deficiency sees the colours ``rgb``.

    Parameters
    ----------
    rgb : array_like
        sRGB colours in ``[0, 1]``, shape ``(..., 3)``.
    kind : str
        One of :data:`CVD_TYPES`.
    severity : float
        From 0 (normal vision) to 100 (dichromacy: the cone type is missing).

    Returns
    -------
    numpy.ndarray
        The simulated sRGB colours, shape ``(..., 3)``, clipped to ``[0, 1]``.

    Examples
    --------
    >>> red_green = [[0.8, 0.1, 0.1], [0.1, 0.6, 0.1]]
    >>> simulate_cvd(red_green, "deuteranomaly").round(2)
    array([[0.51, 0.46, 0.04],
           [0.56, 0.5 , 0.17]])
    """
    rgb = _rgb("rgb", rgb)
    kind = check_choice("kind", kind, CVD_TYPES)
    severity = check_real("severity", severity, minimum=0.0, maximum=100.0)
    space = {"name": "sRGB1+CVD", "cvd_type": kind, "severity": severity}
    return np.clip(colorspacious.cspace_convert(rgb, space, "sRGB1"), 0.0, 1.0)


def colour_difference(rgb_a: Any, rgb_b: Any) -> np.ndarray:
    """Perceptual difference between sRGB colours, in CAM02-UCS units.

    Parameters
    ----------
    rgb_a, rgb_b : array_like
        sRGB colours in ``[0, 1]``, shape ``(..., 3)``, broadcastable.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``: 0 for equal colours, about 1 for a just noticeable
        difference; black and white are about 100 apart.

    Examples
    --------
    >>> float(colour_difference([0, 0, 0], [1, 1, 1])).__round__()
    100
    """
    a, b = _rgb("rgb_a", rgb_a), _rgb("rgb_b", rgb_b)
    return np.asarray(colorspacious.deltaE(a, b, input_space="sRGB1", uniform_space="CAM02-UCS"))


def sign_separation(cmap: str, values: Any, kind: str | None = None) -> np.ndarray:
    """Colour difference between ``+v`` and ``-v`` on a diverging map, as a reader sees it.

    The map is taken as centred on zero with limits ``[-1, 1]``, as the
    course's heat maps of signed values are.

    Parameters
    ----------
    cmap : str
        A Matplotlib colour map name, e.g. ``"RdBu_r"``.
    values : array_like
        Magnitudes ``v`` in ``[0, 1]``, shape ``(m,)``.
    kind : str, optional
        One of :data:`CVD_TYPES` (full severity), or ``None`` for normal vision.

    Returns
    -------
    numpy.ndarray
        Shape ``(m,)``: the CAM02-UCS difference between the colours of ``v``
        and ``-v``.

    Examples
    --------
    >>> float(sign_separation("RdBu_r", [0.0])[0])
    0.0
    """
    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise ValueError(f"cmap must be the name of a Matplotlib colour map, got {cmap!r}")
    values = check_array("values", values, ndim=1)
    if not (np.all(values >= 0.0) and np.all(values <= 1.0)):
        raise ValueError("values must lie in [0, 1] (magnitudes on a map from -1 to 1)")
    colours = matplotlib.colormaps[cmap]
    positive = colours(0.5 + values / 2)[:, :3]
    negative = colours(0.5 - values / 2)[:, :3]
    if kind is not None:
        positive, negative = simulate_cvd(positive, kind), simulate_cvd(negative, kind)
    return colour_difference(positive, negative)
