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
  ``float32``, ``float16`` or ``bfloat16`` would (rounding included), for
  positions of shape ``(length,)`` or ``(batch, length)``;
* :func:`rotary_frequencies`, the frequencies themselves, either the float64
  values nearest the exact ones or the float32 values Hugging Face
  ``transformers`` computes (``frequencies="transformers"``);
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

from .encodings import LAYOUTS
from .encodings import frequencies as _nearest_frequencies
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "ANGLE_DTYPES",
    "FREQUENCY_CONVENTIONS",
    "apply_rotary",
    "layout_permutation",
    "rope_decay_bound",
    "rotary_angles",
    "rotary_frequencies",
    "rotary_score",
    "rotate_pairs",
]

#: Number formats :func:`rotary_angles` can compute the angles in.
ANGLE_DTYPES = ("float64", "float32", "float16", "bfloat16")

#: How :func:`rotary_frequencies` computes the frequencies.
FREQUENCY_CONVENTIONS = ("nearest", "transformers")

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


def _check_positions(
    positions: Any, length: int | None = None, *, ndims: tuple[int, ...] = (1,)
) -> np.ndarray:
    array = np.asarray(positions)
    if array.dtype == object or array.dtype.kind not in "iu":
        raise TypeError(
            f"positions must be an array of integers, got dtype {array.dtype} from {positions!r}"
            if len(repr(positions)) < 60
            else f"positions must be an array of integers, got dtype {array.dtype}"
        )
    if array.ndim not in ndims:
        shapes = " or ".join(("(length,)", "(batch, length)")[n - 1] for n in ndims)
        raise ValueError(f"positions must have shape {shapes}, got shape {array.shape}")
    if length is not None and array.shape[-1] != length:
        raise ValueError(
            f"positions must have {length} entries on its last axis (the length of x), "
            f"got shape {array.shape}"
        )
    if array.size and np.abs(array).max() > 2**52:
        raise ValueError("positions must lie in [-2**52, 2**52], where float64 holds integers")
    return array.astype(np.int64)


def rotary_frequencies(
    d: int, base: float = 10_000.0, *, frequencies: str = "nearest"
) -> np.ndarray:
    r"""The rotary frequencies :math:`\theta_i = b^{-2i/d}`, in one of two conventions.

    ``frequencies="nearest"`` gives the float64 value nearest each exact
    frequency (:func:`~posenc.frequencies`). ``frequencies="transformers"``
    gives the float32 values Hugging Face ``transformers`` computes (its
    default rotary embedding and every rule of ``ROPE_INIT_FUNCTIONS`` in
    ``src/transformers/modeling_rope_utils.py`` start from them): the
    exponent :math:`2i/d` rounded to float32, the base rounded to float32,
    the power rounded to float32, then its reciprocal rounded to float32.
    Those roundings move the frequency of pair ``i`` by up to about
    :math:`(2i/d)\ln b` float32 units in the last place (ulps): at
    ``d = 128``, ``b = 500,000`` 18 of the 64 float32 frequencies differ from
    the float32 nearest the exact value, and the angle at position 4,095
    with them.

    The power here is the float32 nearest the float64 power; PyTorch's
    float32 ``pow`` on CPU is not always correctly rounded. Over every even
    ``d`` from 2 to 512 and 303 bases from 10 to 10**8 (about 10 million
    frequencies; torch 2.13, CPU with AVX-512), 1.5 % of the frequencies
    differ from PyTorch's by 1 or 2 ulps, and none by more; at the widths and
    bases of the common models (``d`` in 64 ... 256, ``b`` in 10**4 ... 10**6)
    at most one pair per head differs, by 1 ulp. NumPy's own float32 ``**``
    is further off (21 % of the frequencies differ from PyTorch's), which is
    why it is not used. For results that agree with ``transformers`` bit for
    bit, use :func:`posenc.torch.rope_inv_freq`.

    Parameters
    ----------
    d : int
        Rotary width, even, ``>= 2`` (``int(head_dim * partial_rotary_factor)``
        for a partial rotary model).
    base : float
        The base ``b``, finite and ``> 0``.
    frequencies : {"nearest", "transformers"}
        The convention.

    Returns
    -------
    numpy.ndarray
        Shape ``(d // 2,)``, float64 (holding float32 values exactly with
        ``"transformers"``).

    Examples
    --------
    >>> rotary_frequencies(4, 100.0)
    array([1. , 0.1])
    >>> theta = rotary_frequencies(128, 500_000.0, frequencies="transformers")
    >>> int((theta != rotary_frequencies(128, 500_000.0).astype(np.float32)).sum())
    18
    """
    d = _check_width(d)
    base = check_real("base", base, positive=True)
    frequencies = check_choice("frequencies", frequencies, FREQUENCY_CONVENTIONS)
    if frequencies == "nearest":
        return _nearest_frequencies(d, base)
    if base > float(np.finfo(np.float32).max):
        raise ValueError(f"base must be at most the float32 maximum for 'transformers', got {base}")
    exponent = np.arange(0, d, 2).astype(np.float32) / np.float32(d)
    with np.errstate(over="ignore", under="ignore"):
        power = (np.float64(np.float32(base)) ** exponent.astype(np.float64)).astype(np.float32)
        return (np.float32(1.0) / power).astype(np.float64)


def rotary_angles(
    positions: Any,
    d: int,
    base: float = 10_000.0,
    *,
    dtype: str = "float64",
    frequencies: str = "nearest",
) -> np.ndarray:
    r"""The rotation angles :math:`m\,\theta_i` with :math:`\theta_i = b^{-2i/d}`.

    With ``dtype="float64"`` (the default) the frequencies are the float64
    values nearest the exact ones (:func:`~posenc.frequencies`) and each angle
    is their product with the position, rounded once. With a lower precision
    the table is computed the way a model running in that format computes it
    (as in the GPT-NeoX ``RotaryEmbedding`` that EleutherAI/gpt-neox#1003
    reports): the positions and the inverse frequencies are converted to
    ``dtype``, and their product is rounded to ``dtype``.

    ``frequencies="transformers"`` starts from the float32 frequencies Hugging
    Face ``transformers`` computes (:func:`rotary_frequencies`) instead of the
    nearest ones; with ``dtype="float32"`` the table is then the one of its
    rotary embeddings (``LlamaRotaryEmbedding.forward`` and its copies:
    float32 positions times float32 frequencies, rounded to float32).

    Parameters
    ----------
    positions : array_like of int
        Shape ``(length,)``, or ``(batch, length)`` (the ``position_ids`` of
        a batch, e.g. positions continuing after a cache of earlier tokens).
        Any integers, not only ``0, 1, ...``.
    d : int
        Head width, even, ``>= 2``.
    base : float
        The base ``b``, finite and ``> 0``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The number format the angles are computed in (``bfloat16`` is
        ``ml_dtypes.bfloat16``).
    frequencies : {"nearest", "transformers"}
        Which frequencies (:func:`rotary_frequencies`); ``"nearest"`` by
        default.

    Returns
    -------
    numpy.ndarray
        Shape ``positions.shape + (d // 2,)``, float64 (holding the ``dtype``
        values exactly); entry ``[..., k, i]`` is the angle of pair ``i`` at
        ``positions[..., k]``, in radians.

    Examples
    --------
    >>> rotary_angles([0, 1, 2], 4, base=100.0)
    array([[0. , 0. ],
           [1. , 0.1],
           [2. , 0.2]])
    >>> float(rotary_angles([1857], 32, dtype="float16")[0, 1])
    1045.0
    >>> rotary_angles([[0, 1], [7, 8]], 4, base=100.0).shape  # (batch, length, d/2)
    (2, 2, 2)
    """
    positions = _check_positions(positions, ndims=(1, 2))
    d = _check_width(d)
    base = check_real("base", base, positive=True)
    dtype = check_choice("dtype", dtype, ANGLE_DTYPES)
    theta = rotary_frequencies(d, base, frequencies=frequencies)
    if dtype == "float64":
        return positions[..., None] * theta
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
    return (m[..., None] * t).astype(kind).astype(np.float64)


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
    rotary_dim: int | None = None,
    angle_dtype: str = "float64",
    frequencies: str = "nearest",
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
    ``tests/test_transformers_numpy.py`` compares it with the executed
    ``transformers`` code: Llama's ``apply_rotary_pos_emb`` (split), GPT-J's
    (interleaved, partial) and GPT-NeoX's (split, partial).

    ``rotary_dim`` rotates the first ``rotary_dim`` columns only and passes
    the rest through, as GPT-J (``rotary_dim``) and GPT-NeoX
    (``rotary_pct``, ``partial_rotary_factor``) do; the layout then applies
    within those columns and the frequencies are those of width
    ``rotary_dim``. ``angle_dtype`` and ``frequencies`` choose how the angle
    table is computed (:func:`rotary_angles`); ``angle_dtype="float32",
    frequencies="transformers"`` is the table of ``transformers``.

    Parameters
    ----------
    x : array_like
        Queries or keys, shape ``(..., length, d)`` with ``d`` even; every
        leading axis (batch, head) is rotated alike.
    positions : array_like of int, optional
        Shape ``(length,)``, the position of each row, ``0, ..., length - 1``
        by default; or ``(batch, length)``, one row of positions per entry of
        the first axis of ``x`` (which then has shape
        ``(batch, ..., length, d)``), as ``transformers``' ``position_ids``.
        Any integers: positions continuing after a cache are fine.
    base : float
        The base ``b``, finite and ``> 0`` (10,000 in RoFormer and Llama 2;
        500,000 in Llama 3).
    layout : {"interleaved", "split"}
        Which columns form a pair, the vocabulary of
        :func:`~posenc.sinusoidal`.
    rotary_dim : int, optional
        How many leading columns are rotated, even, ``2 <= rotary_dim <= d``;
        all ``d`` by default.
    angle_dtype : {"float64", "float32", "float16", "bfloat16"}
        The format of the angle table (``dtype`` of :func:`rotary_angles`).
    frequencies : {"nearest", "transformers"}
        The frequencies (:func:`rotary_frequencies`).

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``, float64.

    Raises
    ------
    ValueError
        If ``d`` or ``rotary_dim`` is odd, ``x`` has fewer than 2 dimensions
        (3 with positions of shape ``(batch, length)``), or ``positions`` has
        the wrong shape.

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

    A batch of two sequences, the second continuing after 5 cached tokens:

    >>> x = np.ones((2, 3, 2, 4))  # (batch, heads, length, d)
    >>> out = apply_rotary(x, [[0, 1], [5, 6]], base=100.0)
    >>> bool(np.allclose(out[1], apply_rotary(x[1], [5, 6], base=100.0)))
    True
    """
    x = check_array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., length, d), got shape {x.shape}")
    length, d = x.shape[-2], x.shape[-1]
    d = _check_width(d, "d (the last axis of x)")
    base = check_real("base", base, positive=True)
    layout = check_choice("layout", layout, LAYOUTS)
    if rotary_dim is None:
        rotary_dim = d
    rotary_dim = _check_width(rotary_dim, "rotary_dim")
    if rotary_dim > d:
        raise ValueError(f"rotary_dim must be an even integer in [2, {d}] (d), got {rotary_dim}")
    if positions is None:
        positions = np.arange(length)
    else:
        positions = _check_positions(positions, length, ndims=(1, 2))
    if positions.ndim == 2:
        if x.ndim < 3 or x.shape[0] != positions.shape[0]:
            raise ValueError(
                "positions of shape (batch, length) need x of shape (batch, ..., length, d) "
                f"with the same batch; got positions {positions.shape} and x {x.shape}"
            )
    angles = rotary_angles(
        positions, rotary_dim, base, dtype=angle_dtype, frequencies=frequencies
    )
    if positions.ndim == 2:  # (batch, length, r/2) -> (batch, 1, ..., 1, length, r/2)
        angles = angles.reshape(angles.shape[:1] + (1,) * (x.ndim - 3) + angles.shape[1:])
    rotated = rotate_pairs(x[..., :rotary_dim], np.cos(angles), np.sin(angles), layout=layout)
    if rotary_dim == d:
        return rotated
    return np.concatenate([rotated, x[..., rotary_dim:]], axis=-1)


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
