"""Low-dimensional views of a code table: PCA by SVD, and profiles along offsets.

The figures of the visualisation chapter draw these numbers; they compute
nothing themselves.

* :func:`pca_projection` projects the rows of a table onto its leading
  principal axes (Pearson's lines and planes of closest fit), computed with a
  singular value decomposition of the centred table, and reports the share of
  the variance each axis explains.
* :func:`offset_profile` reads one row of a position-by-position matrix (a
  similarity or a distance) as a function of the offset :math:`\\phi = k' - k`
  from the reference position :math:`k`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .validation import check_array, check_integer

__all__ = ["SIGN_TOLERANCE", "PCAResult", "offset_profile", "pca_projection"]

#: Relative size below which a coordinate is treated as lying on the mean when
#: :func:`pca_projection` fixes the sign of an axis.
SIGN_TOLERANCE = 1e-8


class PCAResult(NamedTuple):
    """The result of :func:`pca_projection` for a table of ``m`` rows and ``d`` columns.

    Attributes
    ----------
    coordinates : numpy.ndarray
        Shape ``(m, c)``: row ``k`` projected onto the ``c`` principal axes.
    explained_variance_ratio : numpy.ndarray
        Shape ``(c,)``: the share of the total variance along each axis, in
        decreasing order; all zero when every row is the same.
    components : numpy.ndarray
        Shape ``(c, d)``: the principal axes, orthonormal rows.
    mean : numpy.ndarray
        Shape ``(d,)``: the mean row, subtracted before projecting.
    """

    coordinates: np.ndarray
    explained_variance_ratio: np.ndarray
    components: np.ndarray
    mean: np.ndarray


def pca_projection(x: np.ndarray, n_components: int = 2) -> PCAResult:
    r"""Principal component analysis of the rows of ``x``, by singular value decomposition.

    With :math:`\bar x` the mean row and :math:`X - \bar x = U S V^\top` the
    thin SVD of the centred table, the principal axes are the first ``c``
    rows of :math:`V^\top`, the coordinates are :math:`(X - \bar x) V_{:, :c}`
    and the explained-variance ratios are :math:`s_a^2 / \sum_b s_b^2`.

    Each axis is only defined up to its sign; the sign is fixed so that the
    first row lying off the mean along the axis has a negative coordinate
    there (for a code table, position 0 is drawn on the negative side). A row
    counts as off the mean when its coordinate exceeds ``1e-8`` times the
    largest magnitude on that axis, so rounding noise never decides the sign,
    not even when two coordinates tie in magnitude with opposite signs (a
    rule such as "the largest coordinate is positive" would then be decided
    by the last bits). Axes whose variances are equal span a plane in
    which any orthonormal pair is as good as another, and an axis of zero
    variance has no meaningful sign; in both cases the SVD picks one.

    Parameters
    ----------
    x : array_like
        Shape ``(m, d)`` with ``m >= 1`` rows (for a code table, one per
        position) and ``d >= 1`` finite columns.
    n_components : int
        Number ``c`` of axes, ``1 <= c <= d``. When the table has fewer
        independent directions than ``c`` (for instance fewer rows than
        ``c``), the extra axes are orthonormal completions with zero
        coordinates and zero explained variance.

    Returns
    -------
    PCAResult
        ``coordinates`` ``(m, c)``, ``explained_variance_ratio`` ``(c,)``,
        ``components`` ``(c, d)``, ``mean`` ``(d,)``; all float64.

    Raises
    ------
    TypeError
        If ``x`` is not an array of real numbers or ``n_components`` not an
        integer.
    ValueError
        If ``x`` is not two-dimensional, has no row or no column, holds NaN or
        infinity, or ``n_components`` is outside ``[1, d]``.

    Examples
    --------
    Three points on a line are one-dimensional: the first axis explains
    everything.

    >>> result = pca_projection([[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]], n_components=2)
    >>> result.explained_variance_ratio.round(4)
    array([1., 0.])
    >>> result.coordinates[:, 0].round(4)
    array([-1.8856, -0.4714,  2.357 ])
    >>> result.components[0].round(4)
    array([0.7071, 0.7071])
    """
    x = check_array("x", x, ndim=2)
    m, d = x.shape
    if m < 1 or d < 1:
        raise ValueError(f"x must have at least one row and one column, got shape {x.shape}")
    n_components = check_integer("n_components", n_components, minimum=1, maximum=d)

    mean = x.mean(axis=0)
    centred = x - mean
    # The thin SVD holds min(m, d) axes; ask for the full basis only when more are wanted.
    _, s, vt = np.linalg.svd(centred, full_matrices=n_components > min(m, d))
    components = vt[:n_components]
    coordinates = centred @ components.T

    # Sign convention: the first row clearly off the mean is negative on each axis.
    # A relative threshold keeps rounding noise (exact ties, rows at the mean)
    # from deciding the sign.
    magnitude = np.abs(coordinates)
    off_mean = magnitude > SIGN_TOLERANCE * magnitude.max(axis=0)
    first = np.argmax(off_mean, axis=0)  # 0 when no row is off the mean
    signs = -np.sign(coordinates[first, np.arange(n_components)])
    signs[signs == 0] = 1.0
    coordinates = coordinates * signs
    components = components * signs[:, None]

    variances = np.zeros(n_components)
    kept = min(n_components, s.size)
    variances[:kept] = s[:kept] ** 2
    total = float(np.sum(s**2))
    ratio = variances / total if total > 0 else np.zeros(n_components)
    return PCAResult(coordinates, ratio, components, mean)


def offset_profile(matrix: np.ndarray, position: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Row ``position`` of a position-by-position matrix, against the offset.

    For a matrix ``D`` whose entry ``(k, k')`` compares positions ``k`` and
    ``k'`` (a dot product, a cosine distance...), returns the offsets
    :math:`\phi = k' - k` and the values ``D[k, k']`` for every ``k'``.

    Parameters
    ----------
    matrix : array_like
        Shape ``(L, L)``, ``L >= 1``.
    position : int
        The reference position ``k``, ``0 <= k < L``.

    Returns
    -------
    offsets : numpy.ndarray
        Shape ``(L,)``, int64: ``-k, -k + 1, ..., L - 1 - k``.
    values : numpy.ndarray
        Shape ``(L,)``, float64: row ``k`` of ``matrix`` (a copy).

    Raises
    ------
    TypeError
        If ``matrix`` is not numeric or ``position`` not an integer.
    ValueError
        If ``matrix`` is not square and non-empty, or ``position`` is outside
        ``[0, L)``.

    Examples
    --------
    >>> offsets, values = offset_profile(np.arange(9.0).reshape(3, 3), 1)
    >>> offsets
    array([-1,  0,  1])
    >>> values
    array([3., 4., 5.])
    """
    matrix = check_array("matrix", matrix, ndim=2)
    length = matrix.shape[0]
    if length < 1 or matrix.shape[1] != length:
        raise ValueError(f"matrix must be square with at least one row, got shape {matrix.shape}")
    position = check_integer("position", position, minimum=0, maximum=length - 1)
    offsets = np.arange(length, dtype=np.int64) - position
    return offsets, matrix[position].copy()
