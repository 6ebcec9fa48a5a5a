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

Three more rules are in use in released models, in their ``transformers``
names:

* ``"dynamic"``, dynamic NTK scaling: the NTK rule, recomputed at each
  current length :math:`L' > L` with the factor :math:`sL'/L - (s - 1)`;
* ``"llama3"`` (Llama 3.1 and later): pairs whose wavelength
  :math:`2\pi/\theta_i` is shorter than :math:`L/h` keep their frequency,
  pairs longer than :math:`L/l` are divided by :math:`s`, and a ramp in
  :math:`L\theta_i/2\pi` joins them (``low_freq_factor`` :math:`l`,
  ``high_freq_factor`` :math:`h`);
* ``"longrope"`` (Phi-3): every frequency divided by a factor of its own,
  one list for contexts up to :math:`L` and one for longer ones, with the
  attention factor :func:`longrope_attention_factor`.

The formulas follow the reference implementations, read and re-written here
(nothing copied): Hugging Face ``transformers`` (version 5.23),
``src/transformers/modeling_rope_utils.py``, functions
``_compute_linear_scaling_rope_parameters``,
``_compute_dynamic_ntk_parameters``, ``_compute_yarn_parameters``,
``_compute_llama3_parameters`` and ``_compute_longrope_parameters``; and the
YaRN authors' ``jquesnelle/yarn``,
``scaled_rope/LlamaYaRNScaledRotaryEmbedding.py``
(``find_correction_dim``, ``find_correction_range``, ``linear_ramp_mask``,
``get_mscale``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .rotary import FREQUENCY_CONVENTIONS, rotary_frequencies
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "SCALING_METHODS",
    "YARN_BETA_FAST",
    "YARN_BETA_SLOW",
    "longrope_attention_factor",
    "scale_factors",
    "scaled_frequencies",
    "yarn_attention_factor",
    "yarn_correction_range",
]

SCALING_METHODS = ("linear", "ntk", "yarn", "dynamic", "llama3", "longrope")
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


def _check_betas(beta_fast: Any, beta_slow: Any) -> tuple[float, float]:
    beta_fast = check_real("beta_fast", beta_fast, positive=True)
    beta_slow = check_real("beta_slow", beta_slow, positive=True)
    if beta_fast <= beta_slow:
        raise ValueError(
            f"beta_fast must be > beta_slow (both > 0), got beta_fast={beta_fast}, "
            f"beta_slow={beta_slow}"
        )
    return beta_fast, beta_slow


def _check_base(base: Any) -> float:
    base = check_real("base", base, minimum=1.0)
    if base == 1.0:
        raise ValueError("base must be > 1, got 1.0")
    return base


def yarn_correction_range(
    d: int,
    base: float = 10_000.0,
    *,
    original_length: int,
    beta_fast: float = YARN_BETA_FAST,
    beta_slow: float = YARN_BETA_SLOW,
    truncate: bool = True,
) -> tuple[float, float]:
    r"""The pair indices where YaRN's ramp starts and ends, ``(low, high)``.

    ``low`` is the (fractional) pair that turns :math:`\beta_\text{fast}`
    times within ``original_length`` positions, ``high`` the pair that turns
    :math:`\beta_\text{slow}` times; with ``truncate=True`` (the default, and
    the YaRN paper's code) ``low`` is rounded down and ``high`` up, with
    ``truncate=False`` (gpt-oss) they stay fractional; then both are clamped
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
    beta_fast, beta_slow : float
        Turns within :math:`L` at the two ends of the ramp,
        ``beta_fast > beta_slow > 0``; 32 and 1 by default.
    truncate : bool
        Whether to round the ends to integers.

    Returns
    -------
    (int, int) or (float, float)
        Integers with ``truncate=True``.

    Examples
    --------
    >>> yarn_correction_range(128, original_length=4096)  # Llama 2 head, 4k context
    (20, 46)
    >>> low, high = yarn_correction_range(64, 150_000.0, original_length=4096, truncate=False)
    >>> round(low, 3), round(high, 3)  # gpt-oss
    (8.093, 17.398)
    """
    d = _check_d(d)
    base = _check_base(base)
    original_length = check_integer("original_length", original_length, minimum=1)
    beta_fast, beta_slow = _check_betas(beta_fast, beta_slow)
    if not isinstance(truncate, (bool, np.bool_)):
        raise TypeError(f"truncate must be True or False, got {truncate!r}")
    low = _correction_dim(beta_fast, d, base, original_length)
    high = _correction_dim(beta_slow, d, base, original_length)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, d - 1)


def _check_factor_list(name: str, value: Any, half: int) -> np.ndarray:
    if value is None:
        raise ValueError(
            f"{name} is required for method 'longrope' (d/2 = {half} numbers > 0)"
        )
    array = check_array(name, value, shape=(half,))
    if not np.all(array > 0):
        raise ValueError(f"{name} must hold numbers > 0, got minimum {array.min()}")
    return array


def scaled_frequencies(
    d: int,
    base: float = 10_000.0,
    *,
    method: str,
    factor: float | None = None,
    original_length: int | None = None,
    current_length: int | None = None,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
    beta_fast: float = YARN_BETA_FAST,
    beta_slow: float = YARN_BETA_SLOW,
    truncate: bool = True,
    short_factor: Any = None,
    long_factor: Any = None,
    frequencies: str = "nearest",
) -> np.ndarray:
    r"""Rotary frequencies after a context-extension rule, float64 of shape ``(d/2,)``.

    Entry ``i`` rotates pair ``i`` of a head of width ``d``; with
    ``factor == 1`` every method but ``"dynamic"`` and ``"longrope"`` returns
    :math:`\theta_i = b^{-2i/d}` (:func:`posenc.frequencies`) unchanged. Each
    rule is the one of the ``transformers`` function named in the module
    docstring, in float64 arithmetic; ``tests/test_transformers_numpy.py``
    compares every one with the executed code.

    Parameters
    ----------
    d : int
        Width of the rotated part of a head, even, ``>= 2`` (``>= 4`` for
        ``"ntk"`` and ``"dynamic"``, whose exponent :math:`d/(d-2)` needs
        :math:`d > 2`); ``int(head_dim * partial_rotary_factor)`` in
        ``transformers``' terms.
    base : float
        Rotary base :math:`b > 1`.
    method : {"linear", "ntk", "yarn", "dynamic", "llama3", "longrope"}
        ``"linear"``: :math:`\theta_i / s` (position interpolation).
        ``"ntk"``: :math:`(b\,s^{d/(d-2)})^{-2i/d}` (the static NTK-aware
        rule).
        ``"dynamic"``: the NTK rule with :math:`s` replaced by
        :math:`sL'/L - (s - 1)` at the current length
        :math:`L' = \max(` ``current_length`` :math:`, L)`, so nothing
        changes up to :math:`L` (``transformers``' ``"dynamic"``, which reads
        :math:`L` from ``max_position_embeddings``).
        ``"yarn"``: :math:`(1 - r_i)\,\theta_i + r_i\,\theta_i / s`, with the
        ramp :math:`r_i = \operatorname{clip}((i - \text{low}) /
        (\text{high} - \text{low}), 0, 1)` over the range of
        :func:`yarn_correction_range` (``high`` nudged by 0.001 when it equals
        ``low``, as in the reference code).
        ``"llama3"``: with the wavelength :math:`w_i = 2\pi/\theta_i`,
        :math:`\theta_i` where :math:`w_i < L/h`, :math:`\theta_i/s` where
        :math:`w_i > L/l`, and in between
        :math:`(1 - g_i)\,\theta_i/s + g_i\,\theta_i` with
        :math:`g_i = (L/w_i - l)/(h - l)`.
        ``"longrope"``: :math:`\theta_i / f_i`, with :math:`f` =
        ``long_factor`` when ``current_length`` exceeds :math:`L` and
        ``short_factor`` otherwise (also when ``current_length`` is None, as
        ``transformers`` at initialisation); ``factor`` is not used (it sets
        the attention factor only, :func:`longrope_attention_factor`).
    factor : float, optional
        The extension :math:`s \ge 1`: the new context is ``factor`` times the
        training context. Required by every method but ``"longrope"``.
    original_length : int, optional
        Training context :math:`L \ge 1`; required by ``"yarn"``,
        ``"dynamic"``, ``"llama3"`` and ``"longrope"``, ignored otherwise.
    current_length : int, optional
        The current sequence length :math:`L' \ge 1` (``"dynamic"``,
        ``"longrope"``; ignored otherwise); :math:`L` when omitted.
    low_freq_factor, high_freq_factor : float
        ``"llama3"`` only: :math:`0 < l < h`; 1 and 4 by default (Llama 3.1,
        3.2 and 3.3).
    beta_fast, beta_slow, truncate
        ``"yarn"`` only: the ends of the ramp and whether to round them
        (:func:`yarn_correction_range`); ``truncate=False`` is gpt-oss's.
    short_factor, long_factor : array_like of float, optional
        ``"longrope"`` only, required there: ``d/2`` numbers ``> 0`` each.
    frequencies : {"nearest", "transformers"}
        The unscaled frequencies the rule starts from
        (:func:`posenc.rotary.rotary_frequencies`): the nearest float64 values
        (default), or the float32 values ``transformers`` computes, which
        brings the result within a few float32 ulps of ``transformers``'.

    Returns
    -------
    numpy.ndarray
        ``(d // 2,)``, float64, radians per position.

    Raises
    ------
    ValueError
        An unknown ``method``, ``factor < 1`` or missing, an odd ``d``, a
        length missing where the method needs it, ``high_freq_factor <=
        low_freq_factor``, ``beta_fast <= beta_slow``, or factor lists of the
        wrong length. Each message names the argument and its accepted range.

    Examples
    --------
    >>> scaled_frequencies(4, 100.0, method="linear", factor=2.0)
    array([0.5 , 0.05])
    >>> scaled_frequencies(4, 100.0, method="ntk", factor=2.0)  # base 400: 400**-0.5
    array([1.  , 0.05])
    >>> scaled_frequencies(4, 100.0, method="dynamic", factor=2.0,
    ...                    original_length=8, current_length=12)  # s' = 2 * 12/8 - 1 = 2
    array([1.  , 0.05])
    >>> theta = scaled_frequencies(128, 500_000.0, method="llama3", factor=8.0,
    ...                            original_length=8192)  # Llama 3.1
    >>> start = rotary_frequencies(128, 500_000.0)
    >>> int((theta == start).sum()), int(np.isclose(theta, start / 8).sum())
    (29, 29)
    """
    method = check_choice("method", method, SCALING_METHODS)
    d = _check_d(d)
    if method in ("ntk", "dynamic") and d < 4:
        raise ValueError(f"d must be >= 4 for method {method!r} (exponent d/(d-2)), got {d}")
    base = _check_base(base)
    frequencies = check_choice("frequencies", frequencies, FREQUENCY_CONVENTIONS)
    if method == "longrope":
        if factor is not None:
            check_real("factor", factor, minimum=1.0)
    elif factor is None:
        raise ValueError(f"factor is required for method {method!r} (a number >= 1)")
    else:
        factor = check_real("factor", factor, minimum=1.0)
    if method in ("yarn", "dynamic", "llama3", "longrope"):
        if original_length is None:
            raise ValueError(f"original_length is required for method {method!r} (an int >= 1)")
        original_length = check_integer("original_length", original_length, minimum=1)
    if current_length is not None:
        current_length = check_integer("current_length", current_length, minimum=1)
    theta = rotary_frequencies(d, base, frequencies=frequencies)

    if method == "longrope":
        short = _check_factor_list("short_factor", short_factor, d // 2)
        long = _check_factor_list("long_factor", long_factor, d // 2)
        use_long = current_length is not None and current_length > original_length
        return theta / (long if use_long else short)
    if method == "dynamic":
        length = original_length if current_length is None else current_length
        length = max(length, original_length)
        stretch = factor * length / original_length - (factor - 1.0)
        return rotary_frequencies(d, base * stretch ** (d / (d - 2)), frequencies=frequencies)
    if method == "llama3":
        low_freq_factor = check_real("low_freq_factor", low_freq_factor, positive=True)
        high_freq_factor = check_real("high_freq_factor", high_freq_factor, positive=True)
        if high_freq_factor <= low_freq_factor:
            raise ValueError(
                "high_freq_factor must be > low_freq_factor (both > 0), got "
                f"high_freq_factor={high_freq_factor}, low_freq_factor={low_freq_factor}"
            )
    if method == "yarn":
        low, high = yarn_correction_range(
            d, base, original_length=original_length, beta_fast=beta_fast,
            beta_slow=beta_slow, truncate=truncate,
        )
    if factor == 1.0:  # exactly the unscaled frequencies, whatever rounding would do
        return theta
    if method == "linear":
        return theta / factor
    if method == "ntk":
        return rotary_frequencies(d, base * factor ** (d / (d - 2)), frequencies=frequencies)
    if method == "llama3":
        wavelength = 2 * math.pi / theta
        turns = original_length / wavelength  # turns of each pair within L
        smooth = (turns - low_freq_factor) / (high_freq_factor - low_freq_factor)
        blended = (1.0 - smooth) * theta / factor + smooth * theta
        long_wave = wavelength > original_length / low_freq_factor
        short_wave = wavelength < original_length / high_freq_factor
        return np.where(long_wave, theta / factor, np.where(short_wave, theta, blended))
    top = high + 0.001 if high == low else high
    ramp = np.clip((np.arange(d // 2) - low) / (top - low), 0.0, 1.0)
    return (1.0 - ramp) * theta + ramp * (theta / factor)


def scale_factors(
    d: int,
    base: float = 10_000.0,
    *,
    method: str,
    factor: float | None = None,
    original_length: int | None = None,
    **rule: Any,
) -> np.ndarray:
    r"""By how much each pair's frequency is divided, :math:`\theta_i / \theta'_i`, ``(d/2,)``.

    1 means the pair is left alone (it extrapolates), ``factor`` means it is
    fully interpolated. Arguments as in :func:`scaled_frequencies` (``rule``
    holds its further keywords).

    Examples
    --------
    >>> scale_factors(4, 100.0, method="ntk", factor=2.0)
    array([1., 2.])
    """
    scaled = scaled_frequencies(
        d, base, method=method, factor=factor, original_length=original_length, **rule
    )
    convention = rule.get("frequencies", "nearest")
    return rotary_frequencies(d, base, frequencies=convention) / scaled


def yarn_attention_factor(
    factor: float, *, mscale: float | None = None, mscale_all_dim: float | None = None
) -> float:
    r"""YaRN's attention temperature :math:`0.1 \ln s + 1` (1 for :math:`s \le 1`).

    The reference code multiplies both the cosine and the sine tables by it,
    so the attention logits :math:`q^\top k` are multiplied by its square
    (Peng et al. 2024, eq. 22, :math:`\sqrt{1/t} = 0.1 \ln s + 1`).

    With ``mscale`` and ``mscale_all_dim`` (DeepSeek-V2 and V3 configs) the
    factor is :math:`(0.1\,m \ln s + 1) / (0.1\,m_\text{all} \ln s + 1)`, as
    ``transformers``' ``_compute_yarn_parameters``; it uses that ratio only
    when both are given and non-zero, and the plain rule otherwise, and so
    does this function. An ``attention_factor`` written in a config replaces
    all of this in ``transformers``; a config without ``factor`` has
    ``max_position_embeddings / original_max_position_embeddings`` as
    :math:`s`.

    Parameters
    ----------
    factor : float
        The extension :math:`s > 0`.
    mscale, mscale_all_dim : float, optional
        Each ``>= 0``.

    Examples
    --------
    >>> round(yarn_attention_factor(4.0), 6)
    1.138629
    >>> yarn_attention_factor(1.0)
    1.0
    >>> yarn_attention_factor(40.0, mscale=1.0, mscale_all_dim=1.0)  # DeepSeek-V3
    1.0
    """
    factor = check_real("factor", factor, positive=True)
    if mscale is not None:
        mscale = check_real("mscale", mscale, minimum=0.0)
    if mscale_all_dim is not None:
        mscale_all_dim = check_real("mscale_all_dim", mscale_all_dim, minimum=0.0)

    def temperature(m: float) -> float:
        return 1.0 if factor <= 1.0 else 0.1 * m * math.log(factor) + 1.0

    if mscale and mscale_all_dim:
        return temperature(mscale) / temperature(mscale_all_dim)
    return temperature(1.0)


def longrope_attention_factor(factor: float, original_length: int) -> float:
    r"""LongRoPE's attention factor :math:`\sqrt{1 + \ln s / \ln L}` (1 for :math:`s \le 1`).

    ``transformers`` multiplies the cosine and sine tables by it
    (``_compute_longrope_parameters``) unless a config gives
    ``attention_factor``. Phi-3's configs give no ``factor``: there
    :math:`s` is the ratio of ``max_position_embeddings`` to
    ``original_max_position_embeddings``.

    Parameters
    ----------
    factor : float
        :math:`s > 0`, the new context over the trained one.
    original_length : int
        Training context :math:`L \ge 2`.

    Examples
    --------
    >>> round(longrope_attention_factor(131072 / 4096, 4096), 6)  # Phi-3-mini-128k
    1.190238
    """
    factor = check_real("factor", factor, positive=True)
    original_length = check_integer("original_length", original_length, minimum=2)
    if factor <= 1.0:
        return 1.0
    return math.sqrt(1.0 + math.log(factor) / math.log(original_length))
