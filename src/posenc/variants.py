r"""The sinusoidal code as major libraries build it, and as float32 code computes it.

Three things vary between the paper and the libraries a reader will meet:

* the **layout** of the columns: interleaved (sin, cos, sin, cos, ...) as in
  the paper, or split halves [sin ... | cos ...] as in tensor2tensor and
  fairseq. The two are the same numbers in a different column order:
  :func:`split_permutation` gives the order, and ``posenc.sinusoidal(...,
  layout="split")`` the split table itself;
* the **spacing** of the frequencies: the paper's
  :math:`\omega_i = n^{-2i/d}` or the *endpoint* spacing
  :math:`\omega_i = n^{-i/(d/2 - 1)}` of tensor2tensor's
  ``get_timing_signal_1d`` (also used by fairseq), whose slowest pair has
  frequency exactly :math:`1/n`. These are genuinely different numbers; the
  endpoint spacing equals the paper's formula with the larger base
  :func:`endpoint_base`;
* the **first position**: fairseq numbers the tokens of a sequence from
  ``padding_idx + 1`` (:func:`padded_positions`), so its first token gets the
  code of position 2 when the padding index is 1.

:func:`sinusoidal_at` gives the float64 code of any integer positions (the
angles formed exactly, as in :func:`posenc.sinusoidal`), and
:func:`sinusoidal_float32` the table as many implementations compute it, with
float32 angles, for the precision comparisons of chapter 3.
"""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np

from .encodings import LAYOUTS, _frequencies_hi_lo, _sin_cos_exact_angle, frequencies, sinusoidal
from .validation import check_choice, check_integer, check_real

__all__ = [
    "SPACINGS",
    "endpoint_base",
    "padded_positions",
    "sinusoidal_at",
    "sinusoidal_float32",
    "spaced_frequencies",
    "split_permutation",
    "timing_signal",
]

SPACINGS = ("paper", "endpoint")


def _check_positions(name: str, positions: Any) -> np.ndarray:
    """Return ``positions`` as an int64 array of non-negative integers, or raise."""
    array = np.asarray(positions)
    if array.dtype == object or array.dtype.kind not in "iu":
        raise TypeError(
            f"{name} must be an array of integers, got dtype {array.dtype} "
            f"from {type(positions).__name__}"
        )
    if array.size and array.min() < 0:
        raise ValueError(f"{name} must contain integers >= 0, got minimum {array.min()}")
    return array.astype(np.int64, copy=False)


def split_permutation(d_model: int) -> np.ndarray:
    """Column order that turns the interleaved layout into the split one.

    ``sinusoidal(L, d, layout="split")`` equals
    ``sinusoidal(L, d)[:, split_permutation(d)]``: first every sine column
    ``0, 2, 4, ...`` and then every cosine column ``1, 3, 5, ...``.

    Parameters
    ----------
    d_model : int
        Width ``d`` of the code, ``>= 1``; odd widths keep their extra sine
        column at the end of the sine half.

    Returns
    -------
    numpy.ndarray
        Shape ``(d_model,)``, int64, a permutation of ``range(d_model)``.
        ``np.argsort`` of it gives the inverse order (split to interleaved).

    Examples
    --------
    >>> split_permutation(6)
    array([0, 2, 4, 1, 3, 5])
    >>> split_permutation(5)
    array([0, 2, 4, 1, 3])
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    return np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])


def endpoint_base(d_model: int, base: float = 10_000.0) -> float:
    r"""The base :math:`n'` for which the paper's spacing equals the endpoint spacing.

    With :math:`h = \lfloor d/2 \rfloor`, the endpoint spacing
    :math:`n^{-i/(h-1)}` equals :math:`n'^{-2i/(2h)}` for
    :math:`n' = n^{h/(h-1)}`, slightly larger than :math:`n`.

    Parameters
    ----------
    d_model : int
        Width ``d``, ``>= 4`` (the spacing divides by ``d // 2 - 1``).
    base : float
        The base ``n`` of the endpoint spacing, finite and ``> 0``.

    Returns
    -------
    float
        The float64 nearest :math:`n^{h/(h-1)}`: the power is taken to 40
        digits with :mod:`decimal`, so the result is the same on every
        platform.

    Examples
    --------
    >>> round(endpoint_base(512), 2)
    10367.79
    >>> endpoint_base(4, 100.0)
    10000.0
    """
    d_model = check_integer("d_model", d_model, minimum=4)
    base = check_real("base", base, positive=True)
    half = d_model // 2
    with decimal.localcontext() as context:
        context.prec = 40
        exponent = decimal.Decimal(half) / decimal.Decimal(half - 1)
        return float((exponent * decimal.Decimal(base).ln()).exp())


def spaced_frequencies(
    d_model: int, base: float = 10_000.0, *, spacing: str = "paper"
) -> np.ndarray:
    r"""Angular frequencies of the sinusoidal code under either spacing.

    * ``"paper"``: :math:`\omega_i = n^{-2i/d}` for
      :math:`0 \le i < \lceil d/2 \rceil` (:func:`posenc.frequencies`);
    * ``"endpoint"``: :math:`\omega_i = n^{-i/(h-1)}` for :math:`0 \le i < h`,
      :math:`h = \lfloor d/2 \rfloor`, so that the last frequency is exactly
      :math:`1/n` (tensor2tensor's ``get_timing_signal_1d``, fairseq).

    Parameters
    ----------
    d_model : int
        Width ``d``: ``>= 1`` for the paper spacing, ``>= 4`` for the endpoint one.
    base : float
        The base ``n``, finite and ``> 0``.
    spacing : {"paper", "endpoint"}

    Returns
    -------
    numpy.ndarray
        Shape ``(ceil(d_model / 2),)`` for ``"paper"``, ``(d_model // 2,)``
        for ``"endpoint"``; float64, in radians per position, decreasing.

    Examples
    --------
    >>> spaced_frequencies(6, 100.0)
    array([1.        , 0.21544347, 0.04641589])
    >>> spaced_frequencies(6, 100.0, spacing="endpoint")
    array([1.  , 0.1 , 0.01])
    """
    spacing = check_choice("spacing", spacing, SPACINGS)
    if spacing == "paper":
        return frequencies(d_model, base)
    d_model = check_integer("d_model", d_model, minimum=4)
    return frequencies(2 * (d_model // 2), endpoint_base(d_model, base))


def timing_signal(
    length: int, d_model: int, base: float = 10_000.0, *, start: int = 0
) -> np.ndarray:
    r"""The table in the layout and spacing of tensor2tensor's ``get_timing_signal_1d``.

    Row ``r`` is the code of position ``start + r``: ``h = d_model // 2``
    sine columns then ``h`` cosine columns (split layout) at the endpoint
    frequencies :math:`n^{-i/(h-1)}`; an odd ``d_model`` gets a last column of
    zeros, as the libraries pad it. fairseq's ``SinusoidalPositionalEmbedding``
    builds the same rows and starts at ``start = padding_idx + 1``.

    Parameters
    ----------
    length : int
        Number of rows ``L``, ``>= 0``.
    d_model : int
        Width ``d``, ``>= 4``.
    base : float
        The base ``n`` (tensor2tensor's ``max_timescale``), finite and ``> 0``.
    start : int
        First position, ``>= 0``. The table is computed from position 0, so
        this costs ``start + length`` rows.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64.

    Examples
    --------
    >>> timing_signal(2, 5, 100.0).round(4)
    array([[0.    , 0.    , 1.    , 1.    , 0.    ],
           [0.8415, 0.01  , 0.5403, 1.    , 0.    ]])
    """
    length = check_integer("length", length, minimum=0)
    start = check_integer("start", start, minimum=0)
    base_prime = endpoint_base(d_model, base)
    table = np.zeros((length, d_model))
    even = 2 * (d_model // 2)
    table[:, :even] = sinusoidal(start + length, even, base_prime, layout="split")[start:]
    return table


def padded_positions(tokens: Any, padding_idx: int) -> np.ndarray:
    """Positions numbered as fairseq numbers them: from ``padding_idx + 1``, padding skipped.

    Every token that is not ``padding_idx`` gets ``padding_idx + 1`` plus the
    number of non-padding tokens before it in its row; padding tokens get
    ``padding_idx`` itself (a row that fairseq sets to zeros). Left and right
    padding both give the first real token the position ``padding_idx + 1``.

    Parameters
    ----------
    tokens : array_like of int
        Token ids, shape ``(..., length)``.
    padding_idx : int
        The id of the padding token, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``tokens``, int64.

    Examples
    --------
    >>> padded_positions([[5, 7, 9, 1, 1], [1, 1, 4, 8, 6]], padding_idx=1)
    array([[2, 3, 4, 1, 1],
           [1, 1, 2, 3, 4]])
    """
    tokens = _check_positions("tokens", tokens)
    padding_idx = check_integer("padding_idx", padding_idx, minimum=0)
    if tokens.ndim == 0:
        raise ValueError("tokens must have at least 1 dimension (..., length), got a scalar")
    real = tokens != padding_idx
    return np.cumsum(real, axis=-1) * real + padding_idx


def sinusoidal_at(
    positions: Any, d_model: int, base: float = 10_000.0, *, layout: str = "interleaved"
) -> np.ndarray:
    """The float64 sinusoidal code of arbitrary non-negative integer positions.

    Row for position ``k`` agrees with row ``k`` of :func:`posenc.sinusoidal`
    to a float64 rounding or two, without building the ``k + 1`` rows before
    it: every angle is formed as there (the product ``k * omega`` without
    rounding error, the frequency computed to 40 digits) and evaluated
    directly. Useful for large or scattered positions (position one million,
    positions after a padding index). What remains is the rounding of the
    final sine and cosine and the first-order correction's neglected term,
    at most about ``(k * 2**-53)**2 / 2``: below one float64 rounding up to
    ``k`` near ``10**8``, where ``np.sin(k * omega)`` is already off by about
    ``k * 2**-53``.

    Parameters
    ----------
    positions : array_like of int
        Any shape, entries ``>= 0``.
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.
    layout : {"interleaved", "split"}

    Returns
    -------
    numpy.ndarray
        Shape ``positions.shape + (d_model,)``, float64.

    Examples
    --------
    >>> sinusoidal_at([2, 0], 4, 100.0).round(4)
    array([[ 0.9093, -0.4161,  0.1987,  0.9801],
           [ 0.    ,  1.    ,  0.    ,  1.    ]])
    """
    positions = _check_positions("positions", positions)
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    layout = check_choice("layout", layout, LAYOUTS)
    s, c = _sin_cos_exact_angle(positions.ravel(), *_frequencies_hi_lo(d_model, base))
    table = np.empty((positions.size, d_model))
    table[:, 0::2] = s
    table[:, 1::2] = c[:, : d_model // 2]
    if layout == "split":
        table = table[:, split_permutation(d_model)]
    return table.reshape((*positions.shape, d_model))


def sinusoidal_float32(positions: Any, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""The interleaved table with its angles computed in float32, as many implementations do.

    Positions and frequencies are float32 (the frequencies are the float32
    values nearest the exact ones, the best a float32 implementation can
    start from; the usual ``exp(2i * (-ln n / d))`` recipe adds a rounding of
    its own of the same order), their product is rounded to float32, and
    the sine and cosine of that float32 angle are rounded to float32. They
    are evaluated in float64 before that rounding, so that the table is the
    same on every machine: a float32 ``sin`` differs between CPUs by a unit
    in the last place or two (about 1e-7), far below the errors measured
    here except in the one pair whose angle is exact. The rounding of the angle
    :math:`k\omega_i` alone is up to half a float32 unit in the last place,
    about :math:`k\omega_i \cdot 2^{-24}`, which is why the error grows with
    the position. Compare with ``sinusoidal_at(...).astype(np.float32)``.

    Parameters
    ----------
    positions : array_like of int
        Shape ``(m,)``, entries ``>= 0`` (above ``2**24`` they are not even
        representable in float32).
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, d_model)``, float32.

    Examples
    --------
    >>> table = sinusoidal_float32([0, 1], 4, 100.0)
    >>> table.dtype
    dtype('float32')
    >>> table.round(4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.0998, 0.995 ]], dtype=float32)
    """
    positions = _check_positions("positions", positions)
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    if positions.ndim != 1:
        raise ValueError(f"positions must have 1 dimension, got shape {positions.shape}")
    omega = frequencies(d_model, base).astype(np.float32)
    angles = positions.astype(np.float32)[:, None] * omega[None, :]
    table = np.empty((positions.size, d_model), dtype=np.float32)
    wide = angles.astype(np.float64)  # exact: every float32 is a float64
    table[:, 0::2] = np.sin(wide)  # rounded to float32 on assignment
    table[:, 1::2] = np.cos(wide[:, : d_model // 2])
    return table
