"""Position encodings: the sinusoidal table and the naive schemes it replaces.

Every encoder here returns a float64 array of shape ``(length, d_model)``
whose row ``k`` is the code of position ``k``. Notation follows the book's
notation page: ``k`` is a position, ``i`` a frequency (pair) index, ``d`` is
``d_model`` and ``n`` is ``base``.

The sinusoidal table is built with the relative-position property
``PE(k + m) = M(m) PE(k)`` (chapter 3): sines and cosines are evaluated
directly only for a short block of offsets ``j`` and for the block starts
``k0``; every other row is a pair of multiply-adds,

    sin((k0 + j) w) = sin(k0 w) cos(j w) + cos(k0 w) sin(j w)
    cos((k0 + j) w) = cos(k0 w) cos(j w) - sin(k0 w) sin(j w).

The angles ``k0 * w`` that are evaluated directly are formed with an error
far below one float64 unit in the last place (ulp) of the angle, though not
exactly: the frequency is computed to 40 digits and kept as a float64 plus
the part that float64 misses, the product ``k0 * w`` is split into its
float64 value and its exact rounding error (Dekker's two-product), and
that small remainder enters through ``sin(a + e) ~ sin(a) + e cos(a)``;
the frequency's small part times ``k0`` and the sum of the small terms are
still rounded. The sines and cosines, and the multiply-adds that combine
them, then add a few roundings of numbers of size at most 1: the entries are
accurate to a few ulps of 1 in absolute terms (chapter 3 measures at most
``4 * 2**-53`` on sampled entries of a 4096 x 512 table), not to a few ulps
of each entry (an entry near zero can be off by many of its own ulps).
Evaluating ``np.sin(k * w)`` directly in float64 starts from an angle that
is off by up to about ``k * 2**-53``, so at large positions the table is the
more accurate of the two.
"""

from __future__ import annotations

import decimal
import functools

import numpy as np

from .validation import check_choice, check_integer, check_real

__all__ = [
    "BLOCK_ROWS",
    "LAYOUTS",
    "binary_encoding",
    "frequencies",
    "index_encoding",
    "index_over_length_encoding",
    "one_hot_encoding",
    "relative_rotation",
    "sinusoidal",
    "wavelengths",
]

LAYOUTS = ("interleaved", "split")

#: Rows per block of the fast table. Fixed, so that a position's code is the
#: same bit for bit in tables of any length; a table of L rows evaluates sines
#: and cosines directly for only ``BLOCK_ROWS + ceil(L / BLOCK_ROWS)`` rows.
BLOCK_ROWS = 32
# Elements one NumPy call aims at (small enough to stay in cache, large enough
# to amortise the call).
_GROUP_ELEMENTS = 16_384
_SPLITTER = 134_217_729.0  # 2**27 + 1, Dekker's constant for float64


def _check_shape_args(length, d_model, base):
    length = check_integer("length", length, minimum=0)
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    return length, d_model, base


def frequencies(d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""Angular frequencies :math:`\omega_i = n^{-2i/d}` of the sinusoidal code.

    Parameters
    ----------
    d_model : int
        Width ``d`` of the code, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0`` (10,000 in the original model).

    Returns
    -------
    numpy.ndarray
        Shape ``(ceil(d_model / 2),)``, float64; entry ``i`` is the frequency
        of columns ``2i`` (sine) and ``2i + 1`` (cosine), in radians per
        position. The power is taken to 40 digits, so each entry is the
        float64 nearest the exact value.

    Examples
    --------
    >>> frequencies(4, base=100.0)
    array([1. , 0.1])
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    return _frequencies_hi_lo(d_model, base)[0].copy()


@functools.lru_cache(maxsize=64)
def _frequencies_hi_lo(d_model: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """The frequencies as an unevaluated sum ``hi + lo`` of two float64 arrays.

    Each frequency is computed to 40 significant digits with the standard
    library's :mod:`decimal` (the same on every platform); ``hi`` is the
    float64 nearest to it and ``lo`` the part that ``hi`` misses. Cached, as
    the decimal power is slow; the arrays are read-only so the cache cannot
    be altered.
    """
    with decimal.localcontext() as context:
        context.prec = 40
        log_base = decimal.Decimal(base).ln()  # the float base, converted exactly
        exact = [(-2 * i * log_base / d_model).exp() for i in range((d_model + 1) // 2)]
        hi = np.array([float(w) for w in exact])
        lo = np.array([float(w - decimal.Decimal(h)) for w, h in zip(exact, hi, strict=True)])
    hi.flags.writeable = False
    lo.flags.writeable = False
    return hi, lo


@functools.lru_cache(maxsize=16)
def _offset_block(d_model: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of ``j * omega_i`` for the offsets ``0 <= j < BLOCK_ROWS``.

    Shape ``(BLOCK_ROWS, ceil(d_model / 2))`` each.

    They depend on the width and the base only, not on the length, so they
    are computed once and cached (read-only), like the frequencies.
    """
    sin_j, cos_j = _sin_cos_exact_angle(np.arange(BLOCK_ROWS), *_frequencies_hi_lo(d_model, base))
    sin_j.flags.writeable = False
    cos_j.flags.writeable = False
    return sin_j, cos_j


def wavelengths(d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""Wavelengths :math:`\lambda_i = 2\pi / \omega_i = 2\pi n^{2i/d}`, in positions.

    Returns
    -------
    numpy.ndarray
        Shape ``(ceil(d_model / 2),)``, float64, increasing from ``2*pi``.

    Examples
    --------
    >>> wavelengths(4, base=100.0).round(4)
    array([ 6.2832, 62.8319])
    """
    return 2 * np.pi / frequencies(d_model, base)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def _sin_cos_exact_angle(
    k: np.ndarray, omega: np.ndarray, omega_lo: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of the angles ``k[:, None] * (omega + omega_lo)[None, :]``.

    The product ``k * omega`` is split into its float64 rounding ``hi`` and
    the exact rounding error (Dekker's two-product); ``k * omega_lo`` adds the
    part of the frequency that float64 cannot hold. The small remainder ``lo``
    enters through the first-order correction
    ``sin(hi + lo) ~ sin(hi) + lo cos(hi)``, whose neglected term, about
    ``lo**2 / 2``, is tiny because ``|lo|`` is of the order of one unit in
    the last place of ``hi``. The angle is not exact (``k * omega_lo`` and
    the sum of the small terms are rounded), but its error is far below one
    unit in the last place of ``hi``.
    """
    a = k.astype(np.float64)[:, None]
    b = omega[None, :]
    hi = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    if omega_lo is not None:
        lo = lo + a * omega_lo[None, :]
    s, c = np.sin(hi), np.cos(hi)
    return s + lo * c, c - lo * s


def sinusoidal(
    length: int,
    d_model: int,
    base: float = 10_000.0,
    *,
    layout: str = "interleaved",
) -> np.ndarray:
    r"""The sinusoidal position code of Vaswani et al. (2017).

    Row ``k`` holds the code of position ``k``; with
    :math:`\omega_i = n^{-2i/d}`,

    * column ``2i`` is :math:`\sin(k\,\omega_i)`,
    * column ``2i + 1`` is :math:`\cos(k\,\omega_i)`,

    for ``0 <= k < length`` and ``0 <= i < ceil(d_model / 2)``. For odd
    ``d_model`` the last column is a sine column.

    Parameters
    ----------
    length : int
        Number of positions ``L``, ``>= 0``.
    d_model : int
        Width ``d`` of each code, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``; 10,000 in the original model.
    layout : {"interleaved", "split"}
        ``"interleaved"`` (sin, cos, sin, cos, ...) as in the paper, or
        ``"split"``: the same columns reordered, every sine column first and
        then every cosine column, as several major libraries store them.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64.

    Raises
    ------
    TypeError
        If ``length`` or ``d_model`` is not an integer, or ``base`` not a
        real number.
    ValueError
        If ``length < 0``, ``d_model < 1``, ``base`` is not finite and
        positive, or ``layout`` is unknown.

    Examples
    --------
    >>> sinusoidal(3, 4, base=100.0).round(4)
    array([[ 0.    ,  1.    ,  0.    ,  1.    ],
           [ 0.8415,  0.5403,  0.0998,  0.995 ],
           [ 0.9093, -0.4161,  0.1987,  0.9801]])
    """
    length, d_model, base = _check_shape_args(length, d_model, base)
    layout = check_choice("layout", layout, LAYOUTS)
    omega, omega_lo = _frequencies_hi_lo(d_model, base)
    n_sin = omega.size
    n_cos = d_model // 2

    # Row k = k0 + j with k0 a multiple of BLOCK_ROWS and 0 <= j < BLOCK_ROWS. The
    # block size does not depend on the length, so every row is computed by
    # the same operations whatever the length: a position's code is the same,
    # bit for bit, in a short table and in a long one.
    n_blocks = max(1, -(-length // BLOCK_ROWS))
    table = np.empty((n_blocks * BLOCK_ROWS if length > BLOCK_ROWS else length, d_model))
    if layout == "interleaved":
        sin_cols, cos_cols = table[:, 0::2], table[:, 1::2]
    else:
        sin_cols, cos_cols = table[:, :n_sin], table[:, n_sin:]

    sin_j, cos_j = _offset_block(d_model, base)
    if length <= BLOCK_ROWS:
        # The first block needs no multiply-add: sin(0) = 0 and cos(0) = 1 exactly.
        sin_cols[...] = sin_j[:length]
        cos_cols[...] = cos_j[:length, :n_cos]
        return table

    sin_k0, cos_k0 = _sin_cos_exact_angle(np.arange(n_blocks) * BLOCK_ROWS, omega, omega_lo)
    # Several blocks per NumPy call when rows are narrow, one when they are wide,
    # so that the scratch array stays in cache.
    group = max(1, _GROUP_ELEMENTS // (BLOCK_ROWS * n_sin))
    scratch = np.empty((group, BLOCK_ROWS, n_sin))
    sin_jc, cos_jc = sin_j[None, :, :n_cos], cos_j[None, :, :n_cos]
    sin_j, cos_j = sin_j[None], cos_j[None]
    for first in range(0, n_blocks, group):
        last = min(first + group, n_blocks)
        rows = slice(first * BLOCK_ROWS, last * BLOCK_ROWS)
        out_s = sin_cols[rows].reshape(last - first, BLOCK_ROWS, n_sin)
        out_c = cos_cols[rows].reshape(last - first, BLOCK_ROWS, n_cos)
        s0, c0 = sin_k0[first:last, None, :], cos_k0[first:last, None, :]
        tmp, tmp_c = scratch[: last - first], scratch[: last - first, :, :n_cos]
        np.multiply(cos_j, s0, out=out_s)
        np.multiply(sin_j, c0, out=tmp)
        np.add(out_s, tmp, out=out_s)
        np.multiply(cos_jc, c0[..., :n_cos], out=out_c)
        np.multiply(sin_jc, s0[..., :n_cos], out=tmp_c)
        np.subtract(out_c, tmp_c, out=out_c)
    return table[:length]


def relative_rotation(offset: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""The matrix :math:`M(\phi)` with :math:`PE(k + \phi) = M(\phi)\,PE(k)` for every ``k``.

    :math:`M(\phi)` is block diagonal; block ``i`` acts on the pair of columns
    ``(2i, 2i + 1)`` = :math:`(\sin k\omega_i, \cos k\omega_i)` and equals

    .. math::

        \begin{pmatrix} \cos \phi\omega_i & \sin \phi\omega_i \\
                        -\sin \phi\omega_i & \cos \phi\omega_i \end{pmatrix},

    a rotation that does not depend on ``k``.

    Parameters
    ----------
    offset : int
        The shift :math:`\phi` in positions; negative values shift left.
    d_model : int
        Width of the code; must be even (an odd code has an unpaired sine
        column that no linear map of the row can shift).
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(d_model, d_model)``, float64, orthogonal, for the interleaved
        layout of :func:`sinusoidal`.

    Examples
    --------
    >>> pe = sinusoidal(10, 4)
    >>> bool(np.allclose(relative_rotation(3, 4) @ pe[2], pe[5]))
    True
    """
    offset = check_integer("offset", offset)
    d_model = check_integer("d_model", d_model, minimum=2)
    base = check_real("base", base, positive=True)
    if d_model % 2:
        raise ValueError(
            f"d_model must be an even integer >= 2 for relative_rotation (sine/cosine "
            f"pairs), got {d_model}"
        )
    s, c = _sin_cos_exact_angle(np.array([offset]), *_frequencies_hi_lo(d_model, base))
    s, c = s[0], c[0]
    matrix = np.zeros((d_model, d_model))
    even = np.arange(0, d_model, 2)
    matrix[even, even] = c
    matrix[even, even + 1] = s
    matrix[even + 1, even] = -s
    matrix[even + 1, even + 1] = c
    return matrix


# --- naive schemes (chapter 1) -------------------------------------------


def index_encoding(length: int, d_model: int) -> np.ndarray:
    """Raw index: every column of row ``k`` holds ``k``.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64.

    Examples
    --------
    >>> index_encoding(3, 2)
    array([[0., 0.],
           [1., 1.],
           [2., 2.]])
    """
    length = check_integer("length", length, minimum=0)
    d_model = check_integer("d_model", d_model, minimum=1)
    return np.repeat(np.arange(length, dtype=np.float64)[:, None], d_model, axis=1)


def index_over_length_encoding(length: int, d_model: int) -> np.ndarray:
    """Index divided by the sequence length: every column of row ``k`` holds ``k / length``.

    The same position gets a different code in sequences of different
    lengths, which is why this scheme fails chapter 1's checklist.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64, values in ``[0, 1)``.

    Examples
    --------
    >>> index_over_length_encoding(4, 1).ravel()
    array([0.  , 0.25, 0.5 , 0.75])
    """
    length = check_integer("length", length, minimum=0)
    d_model = check_integer("d_model", d_model, minimum=1)
    return index_encoding(length, d_model) / max(length, 1)


def one_hot_encoding(length: int, d_model: int) -> np.ndarray:
    """One-hot: row ``k`` is the ``k``-th unit vector.

    Needs one column per position, so ``length <= d_model``; a longer
    sequence has no code at all.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64.

    Raises
    ------
    ValueError
        If ``length > d_model``.

    Examples
    --------
    >>> one_hot_encoding(2, 3)
    array([[1., 0., 0.],
           [0., 1., 0.]])
    """
    length = check_integer("length", length, minimum=0)
    d_model = check_integer("d_model", d_model, minimum=1)
    if length > d_model:
        raise ValueError(
            f"length must be <= d_model for a one-hot code (one column per position), "
            f"got length={length} > d_model={d_model}"
        )
    return np.eye(length, d_model)


def binary_encoding(length: int, d_model: int) -> np.ndarray:
    """Binary digits: column ``j`` of row ``k`` is bit ``j`` of ``k`` (least significant first).

    ``d_model`` bits count up to ``2**d_model - 1``, so ``length`` must be at
    most ``2**d_model``.

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d_model)``, float64, entries 0 or 1.

    Raises
    ------
    ValueError
        If ``length > 2**d_model``.

    Examples
    --------
    >>> binary_encoding(4, 3)
    array([[0., 0., 0.],
           [1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 0.]])
    """
    length = check_integer("length", length, minimum=0)
    d_model = check_integer("d_model", d_model, minimum=1)
    if d_model < 63 and length > 2**d_model:
        raise ValueError(
            f"length must be <= 2**d_model for a {d_model}-bit code, got length={length}"
        )
    k = np.arange(length, dtype=np.uint64)[:, None]
    bits = np.arange(min(d_model, 64), dtype=np.uint64)[None, :]
    table = np.zeros((length, d_model))
    table[:, : bits.shape[1]] = (k >> bits) & np.uint64(1)
    return table
