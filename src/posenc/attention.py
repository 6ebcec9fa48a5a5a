"""Single-head self-attention in NumPy, small enough to read in one sitting.

``self_attention`` computes :math:`\\mathrm{softmax}(Q K^T / \\sqrt{d_k}) V`
with :math:`Q = X W_Q`, :math:`K = X W_K`, :math:`V = X W_V`, optionally
with a causal mask. It has no notion of position: permuting the rows of
``X`` permutes the rows of the output in the same way (chapter 1).
"""

from __future__ import annotations

import numpy as np

from .validation import check_array, check_integer

__all__ = ["causal_mask", "self_attention", "softmax"]


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    The maximum along ``axis`` is subtracted before exponentiating, so large
    scores do not overflow; entries equal to ``-inf`` get weight 0 (a row of
    only ``-inf`` is rejected).

    Parameters
    ----------
    scores : array_like
        Any shape with at least one dimension; finite values or ``-inf``.
    axis : int
        The axis that sums to one.

    Returns
    -------
    numpy.ndarray
        Same shape as ``scores``, float64, non-negative, summing to 1 along ``axis``.

    Examples
    --------
    >>> softmax(np.array([1000.0, 1000.0]))
    array([0.5, 0.5])
    """
    scores = check_array("scores", scores, finite=False)
    if scores.ndim == 0:
        raise ValueError("scores must have at least 1 dimension, got a scalar")
    axis = check_integer("axis", axis, minimum=-scores.ndim, maximum=scores.ndim - 1)
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("scores must be finite or -inf (no NaN or +inf)")
    top = scores.max(axis=axis, keepdims=True)
    if np.isneginf(top).any():
        raise ValueError("scores must have at least one finite entry along axis")
    weights = np.exp(scores - top)
    return weights / weights.sum(axis=axis, keepdims=True)


def causal_mask(length: int) -> np.ndarray:
    """Causal mask, shape ``(length, length)``: ``True`` where query ``q`` may see key ``k <= q``.

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    length = check_integer("length", length, minimum=0)
    return np.tril(np.ones((length, length), dtype=bool))


def self_attention(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    *,
    causal: bool = False,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Single-head scaled dot-product self-attention.

    Parameters
    ----------
    x : array_like
        Input rows, shape ``(length, d_model)``.
    w_q, w_k : array_like
        Query and key projections, shape ``(d_model, d_k)``.
    w_v : array_like
        Value projection, shape ``(d_model, d_v)``.
    causal : bool
        If true, position ``q`` attends only to positions ``<= q``.
    return_weights : bool
        If true, also return the attention weights.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        The output, shape ``(length, d_v)``; with ``return_weights`` also the
        weights, shape ``(length, length)``, each row summing to 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, w = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    >>> self_attention(x, w, w, w).shape
    (4, 3)
    """
    x = check_array("x", x, ndim=2)
    d_model = x.shape[1]
    w_q = check_array("w_q", w_q, shape=(d_model, None))
    w_k = check_array("w_k", w_k, shape=(d_model, w_q.shape[1]))
    w_v = check_array("w_v", w_v, shape=(d_model, None))
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.T / np.sqrt(max(w_q.shape[1], 1))
    if causal:
        scores = np.where(causal_mask(x.shape[0]), scores, -np.inf)
    weights = softmax(scores, axis=-1) if x.shape[0] else np.zeros((0, 0))
    out = weights @ v
    return (out, weights) if return_weights else out
