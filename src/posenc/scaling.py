r"""Context extension of rotary embeddings: rescaled frequencies (chapter 7).

A rotary model trained on sequences of at most :math:`L` positions has seen
the angles :math:`m\,\theta_i` for :math:`0 \le m < L` only. Three published
rules change the frequencies :math:`\theta_i = b^{-2i/d}` so that a longer
context of :math:`s L` positions (``factor`` :math:`s \ge 1`) maps onto angles
closer to those seen in training:

* ``"linear"``, position interpolation (Chen et al. 2023): every frequency
  divided by :math:`s`, so position :math:`sL` turns as far as position
  :math:`L` did;
* ``"ntk"``, NTK-aware scaling (bloc97, 2023): the base :math:`b` replaced by
  :math:`b\,s^{d/(d-2)}`, which leaves the fastest pair (:math:`i = 0`)
  unchanged and divides the slowest (:math:`i = d/2 - 1`) by exactly :math:`s`;
* ``"yarn"`` (Peng et al. 2024): pairs that turn many times within
  :math:`L` keep their frequency, pairs that turn less than once are
  interpolated (divided by :math:`s`), and a linear ramp in the pair index
  joins the two. YaRN also sharpens the attention logits by a temperature,
  :func:`yarn_attention_factor`.

The formulas follow the reference implementations, read and re-written here
(nothing copied): Hugging Face ``transformers``,
``src/transformers/modeling_rope_utils.py``, functions
``_compute_linear_scaling_rope_parameters``,
``_compute_dynamic_ntk_parameters`` and ``_compute_yarn_parameters``; and the
YaRN authors' ``jquesnelle/yarn``,
``scaled_rope/LlamaYaRNScaledRotaryEmbedding.py``
(``find_correction_dim``, ``find_correction_range``, ``linear_ramp_mask``,
``get_mscale``).
"""

from __future__ import annotations

import math

import numpy as np

from .encodings import frequencies
from .validation import check_choice, check_integer, check_real

__all__ = [
    "SCALING_METHODS",
    "YARN_BETA_FAST",
    "YARN_BETA_SLOW",
    "scale_factors",
    "scaled_frequencies",
    "yarn_attention_factor",
    "yarn_correction_range",
]

SCALING_METHODS = ("linear", "ntk", "yarn")
YARN_BETA_FAST = 32.0
YARN_BETA_SLOW = 1.0


def _check_d(d: int) -> int:
    d = check_integer("d", d, minimum=2)
    if d % 2:
        raise ValueError(f"d must be even (rotary pairs of columns), got {d}")
    return d


def _correction_dim(rotations: float, d: int, base: float, original_length: int) -> float:
    # The (fractional) pair index whose wavelength 2*pi/theta_i fits `rotations`
    # times into original_length: solve original_length * theta_i = 2*pi*rotations.
    return d * math.log(original_length / (rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_correction_range(
    d: int, base: float = 10_000.0, *, original_length: int
) -> tuple[int, int]:
    r"""The pair indices where YaRN's ramp starts and ends, ``(low, high)``.

    ``low`` is the pair that turns :math:`\beta_\text{fast} = 32` times
    within ``original_length`` positions, rounded down; ``high`` the pair
    that turns :math:`\beta_\text{slow} = 1` time, rounded up; then clamped
    to ``[0, d - 1]`` as in the reference code (the upper clamp is ``d - 1``,
    not ``d/2 - 1``, in both reference implementations).

    Parameters
    ----------
    d : int
        Width of a rotary head, even, ``>= 2``.
    base : float
        Rotary base :math:`b > 1`.
    original_length : int
        Training context :math:`L`, ``>= 1``.

    Returns
    -------
    (int, int)

    Examples
    --------
    >>> yarn_correction_range(128, original_length=4096)  # Llama 2 head, 4k context
    (20, 46)
    """
    d = _check_d(d)
    base = check_real("base", base, minimum=1.0)
    if base == 1.0:
        raise ValueError("base must be > 1, got 1.0")
    original_length = check_integer("original_length", original_length, minimum=1)
    low = math.floor(_correction_dim(YARN_BETA_FAST, d, base, original_length))
    high = math.ceil(_correction_dim(YARN_BETA_SLOW, d, base, original_length))
    return max(low, 0), min(high, d - 1)


def scaled_frequencies(
    d: int,
    base: float = 10_000.0,
    *,
    method: str,
    factor: float,
    original_length: int | None = None,
) -> np.ndarray:
    r"""Rotary frequencies after a context-extension rule, float64 of shape ``(d/2,)``.

    Entry ``i`` rotates pair ``i`` of a head of width ``d``; with
    ``factor == 1`` every method returns :math:`\theta_i = b^{-2i/d}`
    (:func:`posenc.frequencies`) unchanged.

    Parameters
    ----------
    d : int
        Width of a rotary head, even, ``>= 2`` (``>= 4`` for ``"ntk"``, whose
        exponent :math:`d/(d-2)` needs :math:`d > 2`).
    base : float
        Rotary base :math:`b > 1`.
    method : {"linear", "ntk", "yarn"}
        ``"linear"``: :math:`\theta_i / s` (position interpolation).
        ``"ntk"``: :math:`(b\,s^{d/(d-2)})^{-2i/d}` (the static NTK-aware
        rule; ``transformers``' dynamic variant uses the same formula with
        :math:`s` replaced by :math:`sL'/L - (s - 1)` at the current length
        :math:`L'`).
        ``"yarn"``: :math:`(1 - r_i)\,\theta_i + r_i\,\theta_i / s`, with the
        ramp :math:`r_i = \operatorname{clip}((i - \text{low}) /
        (\text{high} - \text{low}), 0, 1)` over the range of
        :func:`yarn_correction_range` (``high`` nudged by 0.001 when it equals
        ``low``, as in the reference code).
    factor : float
        The extension :math:`s \ge 1`: the new context is ``factor`` times the
        training context.
    original_length : int, optional
        Training context :math:`L`; required by ``"yarn"``, ignored otherwise.

    Returns
    -------
    numpy.ndarray
        ``(d // 2,)``, float64, radians per position.

    Raises
    ------
    ValueError
        An unknown ``method``, ``factor < 1``, an odd ``d``, or ``"yarn"``
        without ``original_length``.

    Examples
    --------
    >>> scaled_frequencies(4, 100.0, method="linear", factor=2.0)
    array([0.5 , 0.05])
    >>> scaled_frequencies(4, 100.0, method="ntk", factor=2.0)  # base 400: 400**-0.5
    array([1.  , 0.05])
    """
    method = check_choice("method", method, SCALING_METHODS)
    d = _check_d(d)
    if method == "ntk" and d < 4:
        raise ValueError(f"d must be >= 4 for method 'ntk' (exponent d/(d-2)), got {d}")
    base = check_real("base", base, minimum=1.0)
    if base == 1.0:
        raise ValueError("base must be > 1, got 1.0")
    factor = check_real("factor", factor, minimum=1.0)
    if method == "yarn" and original_length is None:
        raise ValueError("original_length is required for method 'yarn' (an int >= 1)")
    theta = frequencies(d, base)
    if factor == 1.0:  # exactly the unscaled frequencies, whatever rounding would do
        return theta
    if method == "linear":
        return theta / factor
    if method == "ntk":
        return frequencies(d, base * factor ** (d / (d - 2)))
    low, high = yarn_correction_range(d, base, original_length=original_length)
    top = high + 0.001 if high == low else high
    ramp = np.clip((np.arange(d // 2) - low) / (top - low), 0.0, 1.0)
    return (1.0 - ramp) * theta + ramp * (theta / factor)


def scale_factors(
    d: int,
    base: float = 10_000.0,
    *,
    method: str,
    factor: float,
    original_length: int | None = None,
) -> np.ndarray:
    r"""By how much each pair's frequency is divided, :math:`\theta_i / \theta'_i`, ``(d/2,)``.

    1 means the pair is left alone (it extrapolates), ``factor`` means it is
    fully interpolated. Arguments as in :func:`scaled_frequencies`.

    Examples
    --------
    >>> scale_factors(4, 100.0, method="ntk", factor=2.0)
    array([1., 2.])
    """
    scaled = scaled_frequencies(
        d, base, method=method, factor=factor, original_length=original_length
    )
    return frequencies(d, base) / scaled


def yarn_attention_factor(factor: float) -> float:
    r"""YaRN's attention temperature :math:`0.1 \ln s + 1` (1 for :math:`s \le 1`).

    The reference code multiplies both the cosine and the sine tables by it,
    so the attention logits :math:`q^\top k` are multiplied by its square
    (Peng et al. 2024, eq. 22, :math:`\sqrt{1/t} = 0.1 \ln s + 1`).

    Parameters
    ----------
    factor : float
        The extension :math:`s > 0`.

    Examples
    --------
    >>> round(yarn_attention_factor(4.0), 6)
    1.138629
    >>> yarn_attention_factor(1.0)
    1.0
    """
    factor = check_real("factor", factor, positive=True)
    if factor <= 1.0:
        return 1.0
    return 0.1 * math.log(factor) + 1.0
