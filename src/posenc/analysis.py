"""The mathematics of the sinusoidal code, as functions of the offset between positions.

Chapter 2 proves that the dot product, the Euclidean distance and the cosine
distance between the codes of positions ``k`` and ``k + phi`` depend on the
offset ``phi`` only (for even ``d_model``). The functions here evaluate those
closed forms, the smooth limit of the cosine distance for wide codes, the
smallest distance between any two codes of a table, nearest-neighbour
decoding of positions from their (possibly perturbed or float32) codes, the
least-squares test of whether a fixed matrix shifts a table, and the level
crossings that compare the code with a binary counter.

Notation is the book's: ``k`` a position, ``phi`` an offset, ``d`` is
``d_model``, ``n`` is ``base``, :math:`\\omega_i = n^{-2i/d}`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import sici

from .encodings import _frequencies_hi_lo, _sin_cos_exact_angle, sinusoidal
from .validation import check_array, check_integer, check_real

__all__ = [
    "ShiftFit",
    "code_errors",
    "cosine_distance_wide_limit",
    "decode_positions",
    "first_decoding_failure",
    "level_crossings",
    "offset_cosine_distance",
    "offset_distance",
    "offset_dot_product",
    "separation_profile",
    "shift_fit",
]

# Entries of the distance matrix formed per block by the brute-force decoder.
_DECODE_BLOCK_ELEMENTS = 4_000_000
# Relative and absolute slack on the pruning bound of first_decoding_failure.
_BOUND_SLACK = 1.0 + 1e-9
_BOUND_FLOOR = 1e-28
# Offsets beyond 2**53 are not all representable in float64.
_MAX_OFFSET = 2.0**53


def _check_even_width(d_model, purpose: str) -> int:
    d_model = check_integer("d_model", d_model, minimum=2)
    if d_model % 2:
        raise ValueError(
            f"d_model must be an even integer >= 2 for {purpose} (an odd code has an unpaired "
            f"sine column whose contribution depends on the position), got {d_model}"
        )
    return d_model


def _stable_one_minus_cos(s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``1 - c`` for ``c = cos(x)``, ``s = sin(x)``, without cancellation.

    Evaluated as ``s^2 / (1 + c)`` where the cosine is positive, so that
    small angles keep their full relative accuracy.
    """
    out = 1.0 - c
    positive = c > 0
    out[positive] = s[positive] ** 2 / (1.0 + c[positive])
    return out


def _one_minus_cos(offsets: np.ndarray, d_model: int, base: float) -> np.ndarray:
    """``1 - cos(omega_i * phi)`` for every offset and pair, shape ``(m, d_model // 2)``."""
    s, c = _sin_cos_exact_angle(offsets, *_frequencies_hi_lo(d_model, base))
    return _stable_one_minus_cos(s[:, : d_model // 2], c[:, : d_model // 2])


def _offset_sq_from_table(table: np.ndarray) -> np.ndarray:
    """Squared distance ``|PE_phi - PE_0|^2`` over the sine-cosine pairs, for each row ``phi``.

    For even widths this is the squared distance between any two codes at
    offset ``phi``; for odd widths (an unpaired last sine column) a lower bound.
    """
    pairs = table.shape[1] // 2
    s, c = table[:, 0 : 2 * pairs : 2], table[:, 1 : 2 * pairs : 2]
    return 2.0 * _stable_one_minus_cos(s, c).sum(axis=1)


def _offsets_and_args(offsets, d_model, base, purpose):
    offsets = check_array("offsets", offsets)
    if np.any(np.abs(offsets) > _MAX_OFFSET):
        raise ValueError("offsets must be at most 2**53 in absolute value")
    d_model = _check_even_width(d_model, purpose)
    base = check_real("base", base, positive=True)
    return offsets, d_model, base


def offset_dot_product(offsets, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""The dot product :math:`\PE_k \cdot \PE_{k+\phi} = \sum_i \cos(\omega_i \phi)`.

    It does not depend on ``k``, and it is even in the offset: positions to
    the left and to the right at the same distance give the same value.

    Parameters
    ----------
    offsets : array_like
        Offsets :math:`\phi` in positions, any shape (integers in practice;
        any finite real is accepted).
    d_model : int
        Width ``d`` of the code; must be even.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``offsets``, float64, in ``[-d/2, d/2]``.

    Examples
    --------
    >>> offset_dot_product([0, 1, -1], 2).round(4)
    array([1.    , 0.5403, 0.5403])
    """
    offsets, d_model, base = _offsets_and_args(offsets, d_model, base, "offset_dot_product")
    flat = offsets.ravel()
    _, c = _sin_cos_exact_angle(flat, *_frequencies_hi_lo(d_model, base))
    return c[:, : d_model // 2].sum(axis=1).reshape(offsets.shape)


def offset_cosine_distance(offsets, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""The cosine distance :math:`1 - \frac{2}{d}\sum_i \cos(\omega_i \phi)` between codes.

    Every row of an even-width table has norm :math:`\sqrt{d/2}`, so the
    cosine distance between :math:`\PE_k` and :math:`\PE_{k+\phi}` is this
    closed form, whatever ``k``. It is computed as
    :math:`\frac{2}{d}\sum_i (1 - \cos\omega_i\phi)` without cancellation, so
    small distances keep their relative accuracy.

    Parameters
    ----------
    offsets : array_like
        Offsets :math:`\phi`, any shape.
    d_model : int
        Width ``d``; must be even.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``offsets``, float64, in ``[0, 2]``.

    Examples
    --------
    >>> offset_cosine_distance([0, 1, 2], 4, base=100.0).round(4)
    array([0.    , 0.2323, 0.718 ])
    """
    offsets, d_model, base = _offsets_and_args(offsets, d_model, base, "offset_cosine_distance")
    terms = _one_minus_cos(offsets.ravel(), d_model, base)
    return (2.0 / d_model * terms.sum(axis=1)).reshape(offsets.shape)


def offset_distance(offsets, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""The Euclidean distance :math:`\lVert \PE_{k+\phi} - \PE_k \rVert`, a function of the offset.

    Equal to :math:`\sqrt{2\sum_i (1 - \cos\omega_i\phi)} = \sqrt{d \cdot D(\phi)}`
    with :math:`D` the cosine distance.

    Parameters
    ----------
    offsets : array_like
        Offsets :math:`\phi`, any shape.
    d_model : int
        Width ``d``; must be even.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``offsets``, float64, in ``[0, sqrt(2 d)]``.

    Examples
    --------
    >>> offset_distance([0, 1], 2).round(4)
    array([0.    , 0.9589])
    """
    offsets, d_model, base = _offsets_and_args(offsets, d_model, base, "offset_distance")
    terms = _one_minus_cos(offsets.ravel(), d_model, base)
    return np.sqrt(2.0 * terms.sum(axis=1)).reshape(offsets.shape)


def _cin(x: np.ndarray) -> np.ndarray:
    """The entire cosine integral Cin(x) = int_0^x (1 - cos t) / t dt, for x >= 0."""
    out = np.zeros_like(x)
    small = (x > 0) & (x < 1e-3)
    # Series x^2/4 - x^4/96 where gamma + ln x - Ci(x) would cancel.
    out[small] = x[small] ** 2 / 4 - x[small] ** 4 / 96
    large = x >= 1e-3
    out[large] = np.euler_gamma + np.log(x[large]) - sici(x[large])[1]
    return out


def cosine_distance_wide_limit(offsets, base: float = 10_000.0) -> np.ndarray:
    r"""The cosine distance of a very wide code: :func:`offset_cosine_distance` as d grows.

    The sum over pairs becomes an integral over :math:`\omega` from
    :math:`1/n` to :math:`1`, uniform in :math:`\ln\omega`:

    .. math::

        D_\infty(\phi) = \frac{\operatorname{Cin}(|\phi|) - \operatorname{Cin}(|\phi|/n)}{\ln n},
        \qquad \operatorname{Cin}(x) = \int_0^x \frac{1 - \cos t}{t}\,dt,

    which for :math:`1 \ll \phi \ll n` is close to
    :math:`(\ln\phi + \gamma)/\ln n`: the distance grows like the logarithm
    of the offset in base ``n``, whatever the width.

    Parameters
    ----------
    offsets : array_like
        Offsets :math:`\phi`, any shape, finite.
    base : float
        The base ``n``, finite and ``> 1``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``offsets``, float64.

    Examples
    --------
    >>> cosine_distance_wide_limit([0, 1, 100], 10_000.0).round(4)
    array([0.    , 0.026 , 0.5632])
    """
    offsets = np.abs(check_array("offsets", offsets))
    base = check_real("base", base, positive=True)
    if base <= 1.0:
        raise ValueError(f"base must be a finite number > 1 for the wide limit, got {base}")
    return (_cin(offsets) - _cin(offsets / base)) / np.log(base)


def separation_profile(length: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""Smallest distance between the codes of two positions in ``[0, p]``, for each ``p``.

    Because the distance between two codes depends only on their offset,
    the closest pair among positions ``0..p`` is at the offset
    :math:`1 \le \phi \le p` that minimises :func:`offset_distance`; entry
    ``p`` is that running minimum. Nearest-neighbour decoding among positions
    ``0..p`` is guaranteed to succeed for every code whose error is less than
    half of it.

    Parameters
    ----------
    length : int
        Number of positions ``L``, ``>= 1``.
    d_model : int
        Width ``d``; must be even.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(length,)``, float64, non-increasing; entry 0 is ``inf`` (one
        position has no pair).

    Examples
    --------
    >>> separation_profile(8, 2).round(4)
    array([   inf, 0.9589, 0.9589, 0.9589, 0.9589, 0.9589, 0.2822, 0.2822])
    """
    length = check_integer("length", length, minimum=1)
    d_model = _check_even_width(d_model, "separation_profile")
    base = check_real("base", base, positive=True)
    distance = np.sqrt(_offset_sq_from_table(sinusoidal(length, d_model, base)))
    distance[0] = np.inf
    return np.minimum.accumulate(distance)


def _check_codes(codes, d_model, base):
    d_model = check_integer("d_model", d_model, minimum=1)
    base = check_real("base", base, positive=True)
    codes = check_array("codes", codes, shape=(None, d_model))
    return codes, d_model, base


def code_errors(codes, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""Distance of each row ``k`` of ``codes`` from the exact code :math:`\PE_k`.

    Parameters
    ----------
    codes : array_like
        Shape ``(m, d_model)``; row ``k`` stands for position ``k``.
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(m,)``, float64, non-negative.

    Examples
    --------
    >>> code_errors(sinusoidal(3, 4) + 0.1, 4).round(4)
    array([0.2, 0.2, 0.2])
    """
    codes, d_model, base = _check_codes(codes, d_model, base)
    return np.linalg.norm(codes - sinusoidal(codes.shape[0], d_model, base), axis=1)


def decode_positions(codes, length: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    r"""Decode positions by nearest neighbour: the ``k`` in ``[0, length)`` whose code is closest.

    Brute force over every position, in blocks to bound the memory; ties go
    to the smaller position.

    Parameters
    ----------
    codes : array_like
        Shape ``(m, d_model)``: any vectors, for example perturbed codes.
    length : int
        Number of candidate positions ``L``, ``>= 1``.
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(m,)``, int64 positions in ``[0, length)``.

    Examples
    --------
    >>> decode_positions(sinusoidal(50, 8)[[3, 41, 7]] + 0.01, 50, 8)
    array([ 3, 41,  7])
    """
    codes, d_model, base = _check_codes(codes, d_model, base)
    length = check_integer("length", length, minimum=1)
    table = sinusoidal(length, d_model, base)
    table_sq = np.einsum("ij,ij->i", table, table)
    out = np.empty(codes.shape[0], dtype=np.int64)
    step = max(1, _DECODE_BLOCK_ELEMENTS // length)
    for start in range(0, codes.shape[0], step):
        block = codes[start : start + step]
        # |c - t|^2 = |c|^2 - 2 c.t + |t|^2; |c|^2 does not change the argmin.
        out[start : start + step] = np.argmin(table_sq[None, :] - 2.0 * block @ table.T, axis=1)
    return out


def first_decoding_failure(codes, d_model: int, base: float = 10_000.0) -> int | None:
    r"""The first position where nearest-neighbour decoding of a growing sequence fails.

    Row ``k`` of ``codes`` stands for position ``k``. For each ``p``, decode
    rows ``0..p`` among the exact codes of positions ``0..p``; decoding fails
    at ``p`` when some row ``k <= p`` is at least as close to the code of
    another position ``j <= p`` as to its own (a wrong answer or a tie). The
    result is the smallest such ``p``, that is the smallest
    ``max(k, j)`` over confused pairs.

    The search is exact but avoids comparing every pair: a row with error
    :math:`e_k = \lVert c_k - \PE_k\rVert` can only be confused with a
    position at a distance of at most :math:`2 e_k` from its own code, and
    that distance depends on the offset only (on the sine-cosine pairs, a
    lower bound for odd widths). Only the few offsets whose codes come that
    close are checked, on growing prefixes of the table.

    Parameters
    ----------
    codes : array_like
        Shape ``(m, d_model)``, ``m >= 1``.
    d_model : int
        Width ``d``, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.

    Returns
    -------
    int or None
        The first failing position, or ``None`` when all ``m`` rows decode to
        their own positions among positions ``0..m-1``.

    Examples
    --------
    >>> codes = sinusoidal(100, 2)
    >>> first_decoding_failure(codes, 2) is None
    True
    >>> codes[50] = codes[6]  # position 50 now carries the code of position 6
    >>> first_decoding_failure(codes, 2)
    50
    """
    codes, d_model, base = _check_codes(codes, d_model, base)
    m = codes.shape[0]
    if m == 0:
        raise ValueError("codes must have at least one row, got shape (0, d_model)")
    table = sinusoidal(m, d_model, base)
    err_sq = np.einsum("ij,ij->i", codes - table, codes - table)
    offset_sq = _offset_sq_from_table(table)
    prefix = min(m, 1024)
    while True:
        first = _first_failure_in_prefix(codes, table, err_sq, offset_sq, prefix)
        if first is not None:
            return first
        if prefix == m:
            return None
        prefix = min(m, 2 * prefix)


def _first_failure_in_prefix(codes, table, err_sq, offset_sq, prefix):
    """Smallest ``max(k, j)`` over confused pairs with ``k, j < prefix``, or None."""
    err_sq = err_sq[:prefix]
    # A confused pair at offset phi needs offset_sq[phi] <= 4 e_k^2 (triangle
    # inequality); the slack keeps rounding from dropping a genuine candidate.
    bound = 4.0 * err_sq * _BOUND_SLACK + _BOUND_FLOOR
    candidates = np.nonzero(offset_sq[1:prefix] <= bound.max())[0] + 1
    best = None
    for phi in candidates:
        # Row k mistaken for position k + phi (the pair's larger position is k + phi) ...
        k = np.nonzero(bound[: prefix - phi] >= offset_sq[phi])[0]
        if k.size:
            diff = codes[k] - table[k + phi]
            bad = k[np.einsum("ij,ij->i", diff, diff) <= err_sq[k]]
            if bad.size:
                best = min(best, int(bad[0]) + phi) if best is not None else int(bad[0]) + phi
        # ... or for position k - phi (the larger position is k itself).
        k = np.nonzero(bound[phi:] >= offset_sq[phi])[0] + phi
        if k.size:
            diff = codes[k] - table[k - phi]
            bad = k[np.einsum("ij,ij->i", diff, diff) <= err_sq[k]]
            if bad.size:
                best = min(best, int(bad[0])) if best is not None else int(bad[0])
    return best


class ShiftFit(NamedTuple):
    """Result of :func:`shift_fit`: the best matrix and its relative residual."""

    matrix: np.ndarray
    residual: float


def shift_fit(table, offset: int) -> ShiftFit:
    r"""The one matrix ``F`` that best maps every row ``k`` of a table to row ``k + offset``.

    Solves :math:`\min_F \sum_k \lVert T_{k+\phi} - F\,T_k \rVert^2` over every
    ``k`` with both rows in the table, by least squares (:math:`T_k` is row
    ``k`` of ``table``). A residual at
    rounding level means that one fixed matrix shifts every row (as
    :math:`M(\phi)` does for the sinusoidal table); a large one means that no
    matrix can.

    Parameters
    ----------
    table : array_like
        Shape ``(L, c)``, for example the sinusoidal table or its sine columns.
    offset : int
        The shift :math:`\phi`, with ``|offset| < L``; negative shifts left.

    Returns
    -------
    ShiftFit
        ``matrix``: shape ``(c, c)``; ``residual``: the Frobenius norm of the
        misfit divided by that of the target rows (0 when they are all zero).

    Examples
    --------
    >>> fit = shift_fit(sinusoidal(200, 4), 3)
    >>> fit.residual < 1e-12
    True
    >>> shift_fit(sinusoidal(200, 4)[:, 0::2], 1).residual > 0.1
    True
    """
    table = check_array("table", table, ndim=2)
    length = table.shape[0]
    if length < 2:
        raise ValueError(f"table must have at least 2 rows, got shape {table.shape}")
    offset = check_integer("offset", offset, minimum=-(length - 1), maximum=length - 1)
    if offset >= 0:
        source, target = table[: length - offset], table[offset:]
    else:
        source, target = table[-offset:], table[: length + offset]
    solution, *_ = np.linalg.lstsq(source, target, rcond=None)
    misfit = np.linalg.norm(target - source @ solution)
    scale = np.linalg.norm(target)
    residual = float(misfit / scale) if scale > 0 else 0.0
    return ShiftFit(matrix=solution.T, residual=residual)


def level_crossings(table, level: float = 0.0) -> np.ndarray:
    """How many times each column crosses ``level`` from one row to the next.

    A crossing is a pair of consecutive rows with one value ``>= level`` and
    the other ``< level``: sign changes of a sine column for ``level=0``, bit
    flips of a binary column for ``level=0.5``.

    Parameters
    ----------
    table : array_like
        Shape ``(L, c)``.
    level : float
        The threshold, finite.

    Returns
    -------
    numpy.ndarray
        Shape ``(c,)``, int64 counts in ``[0, L - 1]``.

    Examples
    --------
    >>> level_crossings([[0, 0], [1, 0], [0, 1], [1, 1]], level=0.5)
    array([3, 1])
    """
    table = check_array("table", table, ndim=2)
    level = check_real("level", level)
    above = table >= level
    return np.count_nonzero(above[1:] != above[:-1], axis=0).astype(np.int64)
