r"""Statistics of trained models: choosing a learning rate, comparing two runs.

Training magnifies the last bits of every floating-point sum: the same seed
on another processor or BLAS kernel can end far from where it ends here. So a
learning-rate sweep must not let rounding decide between rates that score
the same. :func:`choose_rate` treats every rate whose mean validation score
lies within a tolerance of the best one (optionally also within a number of
standard errors) as a tie, and breaks ties by a fixed preference, the
smallest such rate; a small perturbation of the scores then changes the
choice only where a rate sits at the edge of the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .validation import check_array, check_real

__all__ = ["choose_rate"]


def choose_rate(
    rates: Sequence[float],
    scores: Any,
    *,
    higher_is_better: bool = False,
    band: float = 0.0,
    tolerance: float = 0.0,
) -> tuple[int, list[int]]:
    r"""The rate a sweep keeps: the smallest rate tied with the best.

    Parameters
    ----------
    rates : sequence of float
        The candidate rates, in any order (``n_rates``).
    scores : array_like
        ``(n_rates, n_seeds)``: each candidate's validation score per sweep
        seed (a loss, or an accuracy with ``higher_is_better``). A non-finite
        score (a diverged copy) makes its rate ineligible.
    higher_is_better : bool
        True for accuracies, False for losses.
    band : float
        How many standard errors of the difference of two means count as a
        tie as well, ``>= 0`` (default 0: the tolerance alone). A band
        suits scores whose seeds scatter evenly; where some seeds fail and
        others do not (a cross-entropy of 3 beside one of 0.001), the
        standard error is so large that nearly every rate ties with the best.
    tolerance : float
        A difference of means at most this large is a tie, ``>= 0``, so that
        a difference of a few roundings never decides. ``band=0`` with
        ``tolerance=0`` gives the plain best mean (exact ties to the smaller rate).

    Returns
    -------
    (int, list of int)
        The index of the chosen rate in ``rates``, and the indices of every
        rate tied with the best (the chosen one among them), smallest rate first.

    Notes
    -----
    With means :math:`m_r`, standard errors :math:`s_r` over the sweep seeds
    and the best mean :math:`m_b` (lowest loss; exact ties to the smaller
    rate), rate :math:`r` is tied with the best when

    .. math:: |m_r - m_b| \le \max\left(\text{band}\,\sqrt{s_r^2 + s_b^2},\ \text{tolerance}\right),

    and the smallest tied rate is kept. Where the best rates saturate (every
    seed at 100% validation accuracy), they tie exactly and the smallest of
    them is kept, whatever the rounding.

    Examples
    --------
    Validation accuracies of four seeds at three rates: the two larger rates
    are within one point of each other, so the smaller of them is kept.

    >>> acc = [[0.80, 0.84, 0.78, 0.82], [0.99, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    >>> choose_rate([0.003, 0.01, 0.03], acc, higher_is_better=True, tolerance=0.01)
    (1, [1, 2])
    >>> choose_rate([0.003, 0.01, 0.03], acc, higher_is_better=True)  # the plain best
    (2, [2])
    >>> choose_rate([0.01, 0.03, 0.1], [[0.50, 0.52], [0.10, 0.30], [0.20, 0.21]], band=2)
    (1, [1, 2])
    """
    rates = [float(r) for r in rates]
    values = check_array("scores", scores, ndim=2, finite=False)
    if values.shape[0] != len(rates) or len(rates) == 0:
        raise ValueError(
            f"scores must have one row per rate ({len(rates)} rates, at least one), "
            f"got shape {values.shape}"
        )
    if values.shape[1] < 1:
        raise ValueError("scores must hold at least one seed per rate")
    band = check_real("band", band, minimum=0.0)
    tolerance = check_real("tolerance", tolerance, minimum=0.0)
    sign = -1.0 if higher_is_better else 1.0
    finite = np.isfinite(values).all(axis=1)
    if not finite.any():  # every rate diverged: keep the smallest, as the design's tie rule
        i = min(range(len(rates)), key=lambda j: rates[j])
        return i, [i]
    loss = np.where(finite[:, None], sign * values, 0.0)  # ineligible rows: never read
    mean = loss.mean(axis=1)
    n = values.shape[1]
    se = loss.std(axis=1, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(len(rates))
    eligible = [j for j in range(len(rates)) if finite[j]]
    best = min(eligible, key=lambda j: (mean[j], rates[j]))
    tied = [
        j
        for j in eligible
        if mean[j] - mean[best] <= max(band * math.hypot(se[j], se[best]), tolerance)
    ]
    tied.sort(key=lambda j: rates[j])
    return tied[0], tied
