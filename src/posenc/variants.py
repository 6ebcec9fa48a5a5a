r"""The sinusoidal code as major libraries build it, and as float32 code computes it.

Three things vary between the paper and the libraries a reader will meet:

* the **layout** of the columns: interleaved (sin, cos, sin, cos, ...) as in
  the paper and Keras's ``SinePositionEncoding``, split halves
  [sin ... | cos ...] as in tensor2tensor, fairseq and diffusers'
  ``get_timestep_embedding`` by default, or [cos ... | sin ...] as in
  diffusers with ``flip_sin_to_cos=True``. They are the same numbers in a
  different column order: :func:`split_permutation` gives the split order,
  and ``posenc.sinusoidal(..., layout="split")`` the split table itself;
* the **spacing** of the frequencies: the paper's
  :math:`\omega_i = n^{-2i/d}` (also Keras's) or the *endpoint* spacing
  :math:`\omega_i = n^{-i/(d/2 - 1)}` of tensor2tensor's
  ``get_timing_signal_1d`` (also used by fairseq, and by diffusers with its
  default ``downscale_freq_shift=1``), whose slowest pair has frequency
  exactly :math:`1/n`. These are genuinely different numbers; the endpoint
  spacing equals the paper's formula with the larger base
  :func:`endpoint_base`. :func:`timestep_embedding` covers diffusers'
  whole family :math:`n^{-i/(d/2 - s)}`;
* the **first position**: fairseq numbers the tokens of a sequence from
  ``padding_idx + 1`` (:func:`padded_positions`), so its first token gets the
  code of position 2 when the padding index is 1.

These functions follow the libraries' formulas in float64; the libraries
themselves compute in float32 by default, with the errors that
:func:`sinusoidal_float32` measures.

:func:`sinusoidal_at` gives the float64 code of any integer positions (the
angles formed as in :func:`posenc.sinusoidal`, with an error far below one
float64 unit in the last place of the angle), and :func:`sinusoidal_float32`
the table as many implementations compute it, with float32 angles, for the
precision comparisons of chapter 3.
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np

from .encodings import LAYOUTS, _frequencies_hi_lo, _sin_cos_exact_angle, frequencies, sinusoidal
from .validation import check_choice, check_integer, check_real

__all__ = [
    "FLOAT32_RECIPES",
    "SPACINGS",
    "endpoint_base",
    "float32_frequencies",
    "padded_positions",
    "sinusoidal_at",
    "sinusoidal_float32",
    "spaced_frequencies",
    "split_permutation",
    "timestep_embedding",
    "timing_signal",
]

SPACINGS = ("paper", "endpoint")
FLOAT32_RECIPES = ("nearest", "exp")


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


def _shifted_frequencies_hi_lo(
    half: int, base: float, shift: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""The frequencies :math:`n^{-i/(h - s)}`, ``0 <= i < h``, to 40 digits, as ``hi + lo``."""
    with decimal.localcontext() as context:
        context.prec = 40
        rate = decimal.Decimal(base).ln() / (decimal.Decimal(half) - decimal.Decimal(shift))
        exact = [(-i * rate).exp() for i in range(half)]
        hi = np.array([float(w) for w in exact])
        lo = np.array([float(w - decimal.Decimal(h)) for w, h in zip(exact, hi, strict=True)])
    return hi, lo


def timestep_embedding(
    positions: Any,
    d_model: int,
    base: float = 10_000.0,
    *,
    flip_sin_to_cos: bool = False,
    freq_shift: float = 1.0,
) -> np.ndarray:
    r"""The code in the layout and spacing of diffusers' ``get_timestep_embedding``.

    With :math:`h = \lfloor d/2 \rfloor` and :math:`s` = ``freq_shift``
    (diffusers' ``downscale_freq_shift``), pair ``i`` (``0 <= i < h``) has the
    frequency :math:`n^{-i/(h - s)}`. The ``h`` sine columns come first and
    then the ``h`` cosine columns ([sin | cos]); ``flip_sin_to_cos=True``
    swaps the halves ([cos | sin]); an odd ``d_model`` gets a last column of
    zeros. ``freq_shift=1`` (diffusers' default) is the endpoint spacing, so
    the rows equal :func:`timing_signal`'s; ``freq_shift=0`` (diffusers'
    ``UNet2DConditionModel`` default, with ``flip_sin_to_cos=True``) is the
    paper's spacing for an even width, so the rows are those of
    :func:`posenc.sinusoidal` with the columns reordered.

    The formula is diffusers'; the arithmetic is not. This function works in
    float64, with the frequencies computed to 40 digits and the angles formed
    as in :func:`sinusoidal_at`, so it agrees with the exact code to a few
    float64 units in the last place of 1,
    whereas diffusers computes in float32 (with the errors that
    :func:`sinusoidal_float32` measures). It takes integer positions;
    diffusers also accepts fractional timesteps, and its ``scale`` argument
    (which multiplies the angles) is left out.

    Parameters
    ----------
    positions : array_like of int
        Any shape, entries ``>= 0``.
    d_model : int
        Width ``d``, ``>= 2``.
    base : float
        The base ``n`` (diffusers' ``max_period``), finite and ``> 0``.
    flip_sin_to_cos : bool
        ``True`` for the [cos | sin] order.
    freq_shift : float
        The shift ``s``, finite and ``< d_model // 2``.

    Returns
    -------
    numpy.ndarray
        Shape ``positions.shape + (d_model,)``, float64.

    Examples
    --------
    >>> timestep_embedding([1], 4, 100.0).round(4)
    array([[0.8415, 0.01  , 0.5403, 1.    ]])
    >>> timestep_embedding([1], 5, 100.0, flip_sin_to_cos=True, freq_shift=0).round(4)
    array([[0.5403, 0.995 , 0.8415, 0.0998, 0.    ]])
    """
    positions = _check_positions("positions", positions)
    d_model = check_integer("d_model", d_model, minimum=2)
    base = check_real("base", base, positive=True)
    if not isinstance(flip_sin_to_cos, (bool, np.bool_)):
        raise TypeError(f"flip_sin_to_cos must be a bool, got {type(flip_sin_to_cos).__name__}")
    half = d_model // 2
    freq_shift = check_real("freq_shift", freq_shift)
    if not freq_shift < half:
        raise ValueError(
            f"freq_shift must be < d_model // 2 = {half} (the spacing divides by "
            f"d_model // 2 - freq_shift), got {freq_shift}"
        )
    s, c = _sin_cos_exact_angle(
        positions.ravel(), *_shifted_frequencies_hi_lo(half, base, freq_shift)
    )
    first, second = (c, s) if flip_sin_to_cos else (s, c)
    table = np.zeros((positions.size, d_model))
    table[:, :half], table[:, half : 2 * half] = first, second
    return table.reshape((*positions.shape, d_model))


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
    to within ``1e-15`` (a few float64 units in the last place of 1, not
    bit for bit), without building the ``k + 1`` rows before it: every angle
    is formed as there and evaluated directly. The frequency is computed to
    40 digits and kept as a float64 plus the part float64 misses; the
    product ``k * omega`` is split into its float64 value and its exact
    rounding error (Dekker's two-product). The angle is not exact (the small
    parts are still rounded), but its error is far below one float64 unit in
    the last place of the angle. Useful for large or scattered positions
    (position one million, positions after a padding index). What remains
    is the rounding of the final sine and cosine and the first-order
    correction's neglected term, at most about ``(k * 2**-53)**2 / 2``: below
    one float64 rounding up to ``k`` near ``10**8``, where
    ``np.sin(k * omega)`` is already off by about ``k * 2**-53``.

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


def float32_frequencies(
    d_model: int, base: float = 10_000.0, *, recipe: str = "nearest"
) -> np.ndarray:
    r"""The float32 frequencies a float32 implementation starts from.

    * ``"nearest"``: the float32 values nearest :math:`n^{-2i/d}`, the best a
      float32 implementation can start from;
    * ``"exp"``: a common recipe (the official PyTorch transformer
      tutorial's, The Annotated Transformer's),
      ``div_term = exp(arange(0, d, 2) * (-ln(n) / d))`` with every step in
      float32 (PyTorch's default dtype): the constant ``-ln(n) / d`` is
      rounded to float32, the product with each even integer ``2i`` is
      rounded to float32, and so is the exponential. Each rounding of the
      exponent, of size up to about 9.2 for ``n = 10**4``, is an absolute
      error of up to half a float32 unit in the last place of the exponent,
      which the exponential turns into a relative error of the frequency:
      several times a float32 rounding, growing with ``i``.

    The exponential here is the float64 one rounded to float32, which is
    correctly rounded but for rare ties, so that the result is the same on
    every machine; a library's float32 ``exp`` (NumPy's, PyTorch's) may
    differ from it in the last bit.

    Parameters
    ----------
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.
    recipe : {"nearest", "exp"}

    Returns
    -------
    numpy.ndarray
        Shape ``(ceil(d_model / 2),)``, float32.

    Examples
    --------
    >>> float32_frequencies(4, 100.0)
    array([1. , 0.1], dtype=float32)
    >>> bool(float32_frequencies(64, recipe="exp")[20] != float32_frequencies(64)[20])
    True
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    recipe = check_choice("recipe", recipe, FLOAT32_RECIPES)
    if recipe == "nearest":
        return frequencies(d_model, base).astype(np.float32)
    step = np.float32(-math.log(base) / d_model)
    exponent = np.arange(0, d_model, 2, dtype=np.float32) * step  # rounded to float32
    return np.exp(exponent.astype(np.float64)).astype(np.float32)


def sinusoidal_float32(
    positions: Any, d_model: int, base: float = 10_000.0, *, recipe: str = "nearest"
) -> np.ndarray:
    r"""The interleaved table with its angles computed in float32, as many implementations do.

    Positions and frequencies are float32 (by default the float32 values
    nearest the exact frequencies, the best a float32 implementation can
    start from; ``recipe="exp"`` takes those of the usual
    ``exp(arange(0, d, 2) * (-ln(n) / d))`` recipe, see
    :func:`float32_frequencies`), their product is rounded to float32, and
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
    recipe : {"nearest", "exp"}
        Where the float32 frequencies come from (:func:`float32_frequencies`).

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
    omega = float32_frequencies(d_model, base, recipe=recipe)
    angles = positions.astype(np.float32)[:, None] * omega[None, :]
    table = np.empty((positions.size, d_model), dtype=np.float32)
    wide = angles.astype(np.float64)  # exact: every float32 is a float64
    table[:, 0::2] = np.sin(wide)  # rounded to float32 on assignment
    table[:, 1::2] = np.cos(wide[:, : d_model // 2])
    return table
