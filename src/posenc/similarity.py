"""Similarity and distance between the rows of two code tables.

All functions take tables of shape ``(m, d)`` and ``(n, d)`` (the second
defaults to the first) and return an ``(m, n)`` matrix whose entry
``(a, b)`` compares row ``a`` of the first table with row ``b`` of the second.
"""

from __future__ import annotations

import numpy as np

from .validation import check_array

__all__ = ["cosine_distance_matrix", "cosine_similarity_matrix", "dot_product_matrix"]


def _pair(a, b):
    a = check_array("a", a, ndim=2)
    b = a if b is None else check_array("b", b, shape=(None, a.shape[1]))
    return a, b


def dot_product_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """All dot products between rows: ``out[p, q] = a[p] . b[q]``.

    Parameters
    ----------
    a : array_like
        Shape ``(m, d)``.
    b : array_like, optional
        Shape ``(n, d)``; ``a`` itself if omitted.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, n)``, float64.

    Examples
    --------
    >>> dot_product_matrix([[1.0, 0.0], [1.0, 1.0]])
    array([[1., 1.],
           [1., 2.]])
    """
    a, b = _pair(a, b)
    return a @ b.T


def cosine_similarity_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """All cosine similarities between rows, in ``[-1, 1]``.

    Rows of zero norm have no direction and are rejected.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, n)``, float64.

    Raises
    ------
    ValueError
        If a row of ``a`` or ``b`` has norm zero.

    Examples
    --------
    >>> cosine_similarity_matrix([[1.0, 0.0], [1.0, 1.0]]).round(4)
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    """
    a, b = _pair(a, b)
    norm_a = np.linalg.norm(a, axis=1)
    norm_b = np.linalg.norm(b, axis=1)
    for name, norms in (("a", norm_a), ("b", norm_b)):
        if np.any(norms == 0):
            raise ValueError(f"{name} has a row of norm zero; its cosine similarity is undefined")
    return np.clip((a @ b.T) / np.outer(norm_a, norm_b), -1.0, 1.0)


def cosine_distance_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """All cosine distances ``1 - cosine similarity`` between rows, in ``[0, 2]``.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, n)``, float64.

    Examples
    --------
    >>> cosine_distance_matrix([[1.0, 0.0], [0.0, 1.0]])
    array([[0., 1.],
           [1., 0.]])
    """
    return 1.0 - cosine_similarity_matrix(a, b)
