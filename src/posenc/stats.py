r"""Statistics of trained models: choosing a learning rate, comparing two runs.

Training magnifies the last bits of every floating-point sum: the same seed
on another processor or BLAS kernel can end far from where it ends here. Two
consequences, and the two functions of this module:

* A learning-rate sweep must not let rounding decide between rates that it
  cannot tell apart. :func:`choose_rate` treats every rate whose mean
  validation score lies within the sweep's own noise of the best one as a
  tie, and breaks ties by a fixed preference (the smallest such rate), so a
  small perturbation of the scores changes the choice only where a rate sits
  at the edge of that band.
* A fresh run compared with a stored one is a second sample, not the same
  numbers. :func:`same_distribution` tests whether two sets of seeds could
  come from one distribution, at a level the caller sets (and so with a
  false-failure rate the caller states).
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
    band: float = 2.0,
    tolerance: float = 0.0,
) -> tuple[int, list[int]]:
    r"""The rate a sweep keeps: the smallest rate tied with the best within the noise.

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
        How many standard errors of the difference of two means count as
        "within the noise", ``>= 0``. ``0`` with ``tolerance=0`` gives the
        plain best mean (exact ties to the smaller rate).
    tolerance : float
        A difference of means at most this large is a tie too, ``>= 0``: the
        floor of the band where every seed scores the same (a standard error
        of zero), so that a difference of one rounding never decides.

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

    and the smallest tied rate is kept. The ends of the band lie where the
    scores change fastest with the rate (a rate too small to train, or one
    that starts to diverge), where a perturbation of the last bits rarely
    moves a rate across.

    Examples
    --------
    >>> choose_rate([0.01, 0.03, 0.1], [[0.50, 0.52], [0.10, 0.30], [0.20, 0.21]])
    (1, [1, 2])
    >>> choose_rate([0.01, 0.03, 0.1], [[0.5, 0.5], [0.2, 0.2], [0.2, 0.2]])
    (1, [1, 2])
    >>> choose_rate([0.01, 0.03], [[0.2, 0.2], [0.19, 0.19]], band=0)
    (1, [1])
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
