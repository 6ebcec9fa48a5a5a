r"""Rotary position embeddings (RoPE): rotate queries and keys by their positions.

RoPE (Su et al., "RoFormer") leaves the input alone. Before the score is
taken, the query of position ``m`` and the key of position ``n`` are each
rotated, pair of columns by pair of columns, by the angles
:math:`m\theta_i` and :math:`n\theta_i` with :math:`\theta_i = b^{-2i/d}`.
Since rotations compose, :math:`(R_m q)^\top (R_n k) = q^\top R_{n-m} k`
depends on the offset only. This module holds

* :func:`apply_rotary`, the rotation itself, in the two column layouts used
  in practice ("interleaved" pairs ``(2i, 2i + 1)`` and "split" pairs
  ``(i, i + d/2)``), and :func:`layout_permutation`, which converts one into
  the other; :func:`rotate_pairs`, its arithmetic for a given angle table in
  any precision (the model of chapter 7 rotates with it);
* :func:`rotary_angles`, the angle table, also as a model computing it in
  ``float32``, ``float16`` or ``bfloat16`` would (rounding included);
* :func:`rotary_score`, the score of a fixed pair ``q, k`` as a function of
  the offset, and :func:`rope_decay_bound`, the long-term decay bound of the
  RoFormer paper.

Notation: ``d`` is the head width (even), ``b`` the base, ``i`` a pair index,
``m`` a query position, ``n`` a key position, and the offset is
:math:`\phi = m - n`.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .encodings import LAYOUTS, frequencies
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "ANGLE_DTYPES",
    "apply_rotary",
    "layout_permutation",
    "rope_decay_bound",
    "rotary_angles",
    "rotary_score",
    "rotate_pairs",
]

#: Number formats :func:`rotary_angles` can compute the angles in.
ANGLE_DTYPES = ("float64", "float32", "float16", "bfloat16")

_NUMPY_DTYPES = {
    "float64": np.float64,
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
}


def _check_width(d: Any, name: str = "d") -> int:
    d = check_integer(name, d, minimum=2)
    if d % 2:
        raise ValueError(f"{name} must be an even integer >= 2 (pairs of columns), got {d}")
    return d


def _check_positions(positions: Any, length: int | None = None) -> np.ndarray:
    array = np.asarray(positions)
    if array.dtype == object or array.dtype.kind not in "iu":
        raise TypeError(
            f"positions must be an array of integers, got dtype {array.dtype} from {positions!r}"
            if len(repr(positions)) < 60
            else f"positions must be an array of integers, got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise ValueError(f"positions must have 1 dimension, got shape {array.shape}")
    if length is not None and array.size != length:
        raise ValueError(
            f"positions must have shape ({length},) to match the length of x, got {array.shape}"
        )
    if array.size and np.abs(array).max() > 2**52:
        raise ValueError("positions must lie in [-2**52, 2**52], where float64 holds integers")
    return array.astype(np.int64)


def rotary_angles(
    positions: Any,
    d: int,
    base: float = 10_000.0,
    *,
    dtype: str = "float64",
) -> np.ndarray:
    r"""The rotation angles :math:`m\,\theta_i` with :math:`\theta_i = b^{-2i/d}`.

    With ``dtype="float64"`` (the default) the frequencies are the float64
    values nearest the exact ones (:func:`~posenc.frequencies`) and each angle
    is their product with the position, rounded once. With a lower precision
    the table is computed the way a model running in that format computes it
    (as in the GPT-NeoX ``RotaryEmbedding`` that EleutherAI/gpt-neox#1003
    reports): the positions and the inverse frequencies are converted to
    ``dtype``, and their product is rounded to ``dtype``.

    Parameters
    ----------
    positions : array_like of int
        Shape ``(length,)``.
    d : int
        Head width, even, ``>= 2``.
    base : float
        The base ``b``, finite and ``> 0``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The number format the angles are computed in (``bfloat16`` is
        ``ml_dtypes.bfloat16``).

    Returns
    -------
    numpy.ndarray
        Shape ``(length, d // 2)``, float64 (holding the ``dtype`` values
        exactly); entry ``[k, i]`` is the angle of pair ``i`` at
        ``positions[k]``, in radians.

    Examples
    --------
    >>> rotary_angles([0, 1, 2], 4, base=100.0)
    array([[0. , 0. ],
           [1. , 0.1],
           [2. , 0.2]])
    >>> float(rotary_angles([1857], 32, dtype="float16")[0, 1])
    1045.0
    """
    positions = _check_positions(positions)
    d = _check_width(d)
    base = check_real("base", base, positive=True)
    dtype = check_choice("dtype", dtype, ANGLE_DTYPES)
    theta = frequencies(d, base)
    if dtype == "float64":
        return positions[:, None] * theta[None, :]
    kind = _NUMPY_DTYPES[dtype]
    # Each operand is rounded to the format; the product of two such numbers is
    # exact in float64 (at most 2 x 24 significant bits), so one rounding to
    # the format follows, as in hardware that multiplies in that format.
    largest = float(ml_dtypes.finfo(kind).max)
    if positions.size and np.abs(positions).max() > largest:
        raise ValueError(
            f"positions must lie in [-{largest:g}, {largest:g}] for dtype {dtype}, "
            f"got {int(np.abs(positions).max())}"
        )
    m = positions.astype(np.float64).astype(kind).astype(np.float64)
    t = theta.astype(kind).astype(np.float64)
    return (m[:, None] * t[None, :]).astype(kind).astype(np.float64)


def layout_permutation(d: int) -> np.ndarray:
    """The column order that turns the interleaved layout into the split one.

    Pair ``i`` occupies columns ``(2i, 2i + 1)`` in the interleaved layout and
    ``(i, i + d/2)`` in the split layout, so column ``i`` of the split layout
    is column ``2i`` of the interleaved one and column ``i + d/2`` is column
    ``2i + 1``. For every ``x``,
    ``apply_rotary(x[..., p], layout="split")`` equals
    ``apply_rotary(x, layout="interleaved")[..., p]`` with
    ``p = layout_permutation(d)``. Applied to the output columns of the query
    and key projections of every head (in PyTorch's ``(out, in)`` weights:
    their rows), it converts weights made for one layout into weights for the
    other; this is the ``permute`` of Hugging Face's
    ``convert_llama_weights_to_hf.py`` (huggingface/transformers, file
    ``src/transformers/models/llama/convert_llama_weights_to_hf.py``),
    restricted to one head.

    Parameters
    ----------
    d : int
        Head width, even, ``>= 2``.

    Returns
    -------
    numpy.ndarray
        Shape ``(d,)``, int64: ``0, 2, 4, ..., d - 2, 1, 3, ..., d - 1``.

    Examples
    --------
    >>> layout_permutation(6)
    array([0, 2, 4, 1, 3, 5])
    """
    d = _check_width(d)
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def apply_rotary(
    x: Any,
    positions: Any = None,
    *,
    base: float = 10_000.0,
    layout: str = "interleaved",
) -> np.ndarray:
    r"""Rotate every row of ``x`` by its position: rotary position embedding.

    Pair ``i`` of the row at position ``m``, :math:`(x_a, x_b)`, becomes

    .. math::

        (x_a \cos m\theta_i - x_b \sin m\theta_i,\;
         x_a \sin m\theta_i + x_b \cos m\theta_i),
        \qquad \theta_i = b^{-2i/d},

    a rotation by :math:`m\theta_i`. With ``layout="interleaved"`` pair ``i``
    is the columns ``(a, b) = (2i, 2i + 1)``, as in the RoFormer paper
    (section 3.4.2) and in Meta's reference code (meta-llama/llama,
    ``llama/model.py``, ``apply_rotary_emb``, which multiplies by complex
    numbers); with ``layout="split"`` it is ``(i, i + d/2)``, as in GPT-NeoX
    and in Hugging Face's ``rotate_half``/``apply_rotary_pos_emb``
    (huggingface/transformers,
    ``src/transformers/models/llama/modeling_llama.py``). The two layouts
    differ by a fixed permutation of the columns (:func:`layout_permutation`).
    The formula here follows those references; it is not compared with them
    in a test, as none of them installs without a deep-learning framework
    (keras-hub's ``RotaryEmbedding`` layer, for one, requires
    ``tensorflow-text`` and so TensorFlow on Linux).

    Parameters
    ----------
    x : array_like
        Queries or keys, shape ``(..., length, d)`` with ``d`` even; every
        leading axis (batch, head) is rotated alike.
    positions : array_like of int, optional
        Shape ``(length,)``, the position of each row; ``0, ..., length - 1``
        by default.
    base : float
        The base ``b``, finite and ``> 0`` (10,000 in RoFormer and Llama 2;
        500,000 in Llama 3).
    layout : {"interleaved", "split"}
        Which columns form a pair, the vocabulary of
        :func:`~posenc.sinusoidal`.

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``, float64.

    Raises
    ------
    ValueError
        If ``d`` is odd, ``x`` has fewer than 2 dimensions, or ``positions``
        has the wrong shape.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0, 1.0, 0.0]] * 2)
    >>> apply_rotary(x, base=100.0).round(4)
    array([[1.    , 0.    , 1.    , 0.    ],
           [0.5403, 0.8415, 0.995 , 0.0998]])
    >>> apply_rotary(np.ones((2, 3)))
    Traceback (most recent call last):
        ...
    ValueError: d (the last axis of x) must be an even integer >= 2 (pairs of columns), got 3
    """
    x = check_array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., length, d), got shape {x.shape}")
    length, d = x.shape[-2], x.shape[-1]
    d = _check_width(d, "d (the last axis of x)")
    base = check_real("base", base, positive=True)
    layout = check_choice("layout", layout, LAYOUTS)
    positions = np.arange(length) if positions is None else _check_positions(positions, length)
    angles = rotary_angles(positions, d, base)
    return rotate_pairs(x, np.cos(angles), np.sin(angles), layout=layout)


def rotate_pairs(x: Any, cos: Any, sin: Any, *, layout: str = "interleaved") -> np.ndarray:
    r"""Rotate each pair of columns of ``x`` by the angle whose cosine and sine are given.

    The arithmetic of :func:`apply_rotary`, for a model that computes its
    angle table once (with frequencies of its own, e.g. scaled by
    :mod:`posenc.scaling`) and runs in its own precision: pair ``i`` of the
    row at position ``m``, :math:`(x_a, x_b)`, becomes
    :math:`(x_a c - x_b s,\; x_a s + x_b c)` with :math:`c, s` = ``cos[m, i]``,
    ``sin[m, i]``, in the dtype of ``x`` and the tables (float32 stays
    float32). Passing ``-sin`` rotates by the opposite angle, the transpose
    of the rotation: the backward pass of a model that rotates its queries and keys.

    Parameters
    ----------
    x : numpy.ndarray
        Shape ``(..., length, d)``, floating point, ``d`` even.
    cos, sin : numpy.ndarray
        Shape ``(length, d // 2)`` each (or broadcastable to ``x``'s halves).
    layout : {"interleaved", "split"}
        Which columns form a pair (see :func:`apply_rotary`).

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``x``.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0, 3.0, 4.0]])
    >>> angle = np.array([[np.pi / 2, 0.0]])
    >>> rotate_pairs(x, np.cos(angle), np.sin(angle)).round(6)  # pair 0 turned a quarter
    array([[-2.,  1.,  3.,  4.]])
    >>> cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    >>> rotate_pairs(x.astype(np.float32), cos, sin).dtype
    dtype('float32')
    """
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError(
            "x must be a floating-point array of shape (..., length, d) with d even, got "
            f"{getattr(x, 'shape', type(x).__name__)}"
        )
    layout = check_choice("layout", layout, LAYOUTS)
    half = x.shape[-1] // 2
    if np.shape(cos) != np.shape(sin) or np.shape(cos)[-1:] != (half,):
        raise ValueError(
            f"cos and sin must have the same shape, (length, {half}), "
            f"got {np.shape(cos)} and {np.shape(sin)}"
        )
    if layout == "interleaved":
        first, second = x[..., 0::2], x[..., 1::2]
    else:
        first, second = x[..., :half], x[..., half:]
    new_first = first * cos - second * sin
    new_second = first * sin + second * cos
    out = np.empty_like(x)
    if layout == "interleaved":
        out[..., 0::2], out[..., 1::2] = new_first, new_second
    else:
        out[..., :half], out[..., half:] = new_first, new_second
    return out


def rotary_score(q: Any, k: Any, offsets: Any, *, base: float = 10_000.0) -> np.ndarray:
    r"""The score :math:`(R_m q)^\top (R_n k)` of a fixed pair as a function of :math:`m - n`.

    Write pair ``i`` of ``q`` and ``k`` (interleaved layout) as complex
    numbers :math:`q_i = q_{2i} + \mathrm{i}\,q_{2i+1}` and likewise
    :math:`k_i`. Then

    .. math::

        (R_m q)^\top (R_n k) = \operatorname{Re} \sum_i
        q_i \overline{k_i}\, e^{\mathrm{i}\,(m - n)\,\theta_i},

    which depends on the offset :math:`\phi = m - n` only.

    Parameters
    ----------
    q, k : array_like
        Shape ``(d,)`` each, ``d`` even, interleaved layout.
    offsets : array_like of int
        Shape ``(n_offsets,)``, the offsets :math:`\phi = m - n`.
    base : float
        The base ``b``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_offsets,)``, float64.

    Examples
    --------
    >>> q = np.array([1.0, 0.0, 0.0, 0.0])
    >>> rotary_score(q, q, [0, 1, 2], base=100.0).round(4)
    array([ 1.    ,  0.5403, -0.4161])
    """
    q = check_array("q", q, ndim=1)
    d = _check_width(q.shape[0], "d (the length of q)")
    k = check_array("k", k, shape=(d,))
    base = check_real("base", base, positive=True)
    offsets = _check_positions(offsets)
    q_c = q[0::2] + 1j * q[1::2]
    k_c = k[0::2] + 1j * k[1::2]
    angles = rotary_angles(offsets, d, base)
    return np.real(np.exp(1j * angles) @ (q_c * np.conj(k_c)))


def rope_decay_bound(offsets: Any, d: int, base: float = 10_000.0) -> np.ndarray:
    r"""The long-term decay bound of RoFormer, section 3.4.3, per offset.

    With :math:`g_i = q_i \overline{k_i}` (complex pairs, as in
    :func:`rotary_score`) and the partial sums
    :math:`C_j = \sum_{i=0}^{j-1} e^{\mathrm{i}\phi\theta_i}`, summation by
    parts gives, for every ``q`` and ``k``,

    .. math::

        \Big|\sum_{i=0}^{d/2-1} g_i e^{\mathrm{i}\phi\theta_i}\Big|
        \le \Big(\max_i |g_{i+1} - g_i|\Big) \sum_{j=1}^{d/2} |C_j|
        \qquad (g_{d/2} = 0).

    This function returns the relative bound the paper plots (its figure
    2), :math:`\frac{1}{d/2}\sum_{j=1}^{d/2} |C_j|`, which depends on the
    offset, the width and the base only. It equals ``(d/2 + 1) / 2`` at
    offset 0 and decays, with oscillations, as ``|offset|`` grows. It is a
    bound: a given pair ``q, k`` need not decay at all.

    Parameters
    ----------
    offsets : array_like of int
        Shape ``(n_offsets,)``.
    d : int
        Head width, even, ``>= 2``.
    base : float
        The base ``b``, finite and ``> 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_offsets,)``, float64, positive, even in the offset.

    Examples
    --------
    >>> rope_decay_bound([0], 128)
    array([32.5])
    """
    d = _check_width(d)
    base = check_real("base", base, positive=True)
    offsets = _check_positions(offsets)
    angles = rotary_angles(offsets, d, base)
    partial = np.cumsum(np.exp(1j * angles), axis=1)  # S_1 ... S_{d/2}
    return np.abs(partial).mean(axis=1)
