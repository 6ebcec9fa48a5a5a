r"""Statistics of trained models: choosing a learning rate, comparing two runs.

Training magnifies the last bits of every floating-point sum: the same seed
on another processor or BLAS kernel can end far from where it ends here. So a
learning-rate sweep must not let rounding decide between rates that score
the same. :func:`choose_rate` treats every rate whose mean validation score
lies within a tolerance of the best one (optionally also within a number of
standard errors) as a tie, and breaks ties by a fixed preference, the
smallest such rate; a small perturbation of the scores then changes the
choice only where a rate sits at the edge of the tolerance.

For the same reason a fresh run of stored seeds is compared with the stored
numbers as a second sample, not digit by digit. :func:`paired_rerun_test`
asks, seed by seed, whether the fresh run is systematically better or worse
than the stored one (a sign-flip permutation test over the seeds, exact), at
a level the caller sets, so that a spot check states its false-failure rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .validation import check_array, check_integer, check_real

__all__ = ["RerunComparison", "choose_rate", "paired_rerun_test"]


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
        a difference of a few roundings does not decide. ``band=0`` with
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


@dataclass(frozen=True)
class RerunComparison:
    """What :func:`paired_rerun_test` found.

    Attributes
    ----------
    pvalue : float
        The permutation p-value, in ``(0, 1]``.
    statistic : float
        The largest absolute paired t-like statistic over the features (0 when
        no seed differs).
    feature : int or None
        Index of the feature with that largest statistic (``None`` when no
        seed differs).
    differing : int
        Seeds whose fresh numbers differ from the stored ones by more than
        the tolerance in at least one feature.
    seeds : int
        Seeds compared.
    exact : bool
        True when every sign pattern was enumerated; False for a Monte Carlo
        p-value (more than ``log2(n_resamples) + 1`` differing seeds).
    """

    pvalue: float
    statistic: float
    feature: int | None
    differing: int
    seeds: int
    exact: bool


def paired_rerun_test(
    fresh: Any,
    stored: Any,
    *,
    tolerance: Any = 0.0,
    n_resamples: int = 2**20,
    seed: int = 0,
) -> RerunComparison:
    r"""Is a fresh run of stored seeds systematically better or worse than the stored run?

    Row ``s`` of ``fresh`` and of ``stored`` holds the numbers of seed ``s``
    (a learning curve, a final loss, ...), one column per feature. Training
    magnifies the last bits of every sum, so on another processor or BLAS
    kernel a seed can end elsewhere; on the same machine it ends exactly where
    it did. The test therefore compares each seed with itself.

    **Null hypothesis.** For every seed, the stored and the fresh outcome are
    exchangeable (either could have been the stored one), independently from
    seed to seed: the paired difference :math:`d_s` (a row vector) is
    symmetric about zero. This holds where the fresh run repeats the stored
    seed exactly (:math:`d_s = 0`), and where another machine's rounding sends
    a seed to another outcome, as likely a better one as a worse one. It fails
    when the code trains differently (a bug that makes training faster or
    slower, more or less accurate), which shifts the differences one way.

    **Statistic.** Differences with :math:`|d_{sj}| \le` ``tolerance`` count
    as zero (a difference the storage's rounding can make). For feature
    :math:`j`, :math:`T_j = \sum_s d_{sj} / \sqrt{\sum_s d_{sj}^2}`, a
    monotone function of the paired t statistic that stays finite where
    every difference is equal; the statistic is :math:`\max_j |T_j|`, so a
    whole learning curve and a loss are tested at once, and the permutation
    distribution of the maximum accounts for the number of features (no
    further correction within one comparison). Features without a nonzero
    difference are left out.

    **p-value.** Under the null every sign pattern :math:`d_s \to \pm d_s` is
    equally likely given :math:`|d_s|`; the p-value is the share of patterns
    whose statistic is at least the observed one. It is exact (every pattern
    of the ``k`` differing seeds) while :math:`2^{k-1} \le` ``n_resamples``,
    and otherwise the Monte Carlo estimate :math:`(1 + \#) / (1 +` ``n_resamples``
    :math:`)` from random patterns (seeded with ``seed``). Either way
    :math:`P(p \le \alpha) \le \alpha` under the null, so rejecting at
    :math:`p \le \alpha` fails a correct run with probability at most
    :math:`\alpha`. The smallest p-value possible is :math:`2^{1-k}`: with
    20 differing seeds :math:`1.9 \times 10^{-6}`, and where fewer than
    ``log2(1/alpha) + 1`` seeds differ the test cannot reject at all.

    Ties need no special care: equal values (accuracies at 1.0, a seed that
    repeats exactly) give a zero difference, which carries no sign, and a
    feature with the same difference in every seed gives
    :math:`|T_j| = \sqrt k`, the largest value, as it should.

    Parameters
    ----------
    fresh, stored : array_like
        ``(n_seeds,)`` or ``(n_seeds, n_features)``, the same shape, finite;
        row ``s`` of both is the same seed.
    tolerance : float or array_like
        ``>= 0``: one bound for every feature or one per feature
        ``(n_features,)``.
    n_resamples : int
        ``>= 1``: the most sign patterns evaluated (the exact enumeration
        up to ``2**20`` patterns by default, 21 differing seeds).
    seed : int
        ``>= 0``, the seed of the random patterns of a Monte Carlo p-value.

    Returns
    -------
    RerunComparison

    Examples
    --------
    The same numbers: nothing differs, nothing to reject.

    >>> stored = np.array([[0.50, 0.81], [0.62, 0.90], [0.71, 1.00], [0.44, 0.77]])
    >>> paired_rerun_test(stored, stored).pvalue
    1.0

    Another machine: two seeds end elsewhere, one better and one worse.

    >>> other = stored.copy()
    >>> other[1], other[3] = [0.58, 0.93], [0.52, 0.70]
    >>> result = paired_rerun_test(other, stored)
    >>> result.differing, result.pvalue
    (2, 1.0)

    A slower trainer: every one of 20 seeds a little worse, beyond any sign pattern.

    >>> rng = np.random.default_rng(0)
    >>> curves = rng.uniform(0.3, 0.9, size=(20, 3))
    >>> result = paired_rerun_test(curves - 0.01, curves)
    >>> result.pvalue == 2.0 ** -19, result.exact
    (True, True)
    >>> paired_rerun_test(curves - 0.01, curves, tolerance=0.02).pvalue  # within the rounding
    1.0
    """
    fresh = check_array("fresh", fresh, ndim=(1, 2))
    stored = check_array("stored", stored, ndim=(1, 2))
    if fresh.shape != stored.shape:
        raise ValueError(
            f"fresh and stored must have the same shape (one row per seed), "
            f"got {fresh.shape} and {stored.shape}"
        )
    if fresh.ndim == 1:
        fresh, stored = fresh[:, None], stored[:, None]
    n_seeds, n_features = fresh.shape
    if n_seeds < 1 or n_features < 1:
        raise ValueError(
            f"fresh and stored must hold at least one seed and one feature, got {fresh.shape}"
        )
    tol = check_array("tolerance", tolerance, ndim=(0, 1))
    if tol.ndim == 1 and tol.shape != (n_features,):
        raise ValueError(
            f"tolerance must be one number or one per feature ({n_features}), got shape {tol.shape}"
        )
    if np.any(tol < 0):
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    n_resamples = check_integer("n_resamples", n_resamples, minimum=1)
    seed = check_integer("seed", seed, minimum=0)

    d = fresh - stored
    d[np.abs(d) <= tol] = 0.0
    d = d[np.any(d != 0, axis=1)]
    k = d.shape[0]
    if k == 0:
        return RerunComparison(1.0, 0.0, None, 0, n_seeds, True)
    scale = np.sqrt(np.sum(d * d, axis=0))
    used = np.flatnonzero(scale > 0)
    z = d[:, used] / scale[used]
    observed = np.abs(z.sum(axis=0))
    statistic = float(observed.max())
    feature = int(used[observed.argmax()])
    # A pattern and its negation give the same statistic: fix the first sign.
    threshold = statistic * (1.0 - 1e-12)
    exact = k - 1 <= math.log2(n_resamples)
    if exact:
        patterns = np.arange(2 ** (k - 1))
        count = 0
        for start in range(0, patterns.size, 1 << 15):
            bits = (patterns[start : start + (1 << 15), None] >> np.arange(k - 1)) & 1
            sums = z[0] + (1.0 - 2.0 * bits) @ z[1:]
            count += int(np.count_nonzero(np.abs(sums).max(axis=1) >= threshold))
        pvalue = count / patterns.size
    else:
        rng = np.random.default_rng(seed)
        count = 0
        for start in range(0, n_resamples, 1 << 15):
            size = min(1 << 15, n_resamples - start)
            signs = rng.choice([-1.0, 1.0], size=(size, k))
            count += int(np.count_nonzero(np.abs(signs @ z).max(axis=1) >= threshold))
        pvalue = (1 + count) / (1 + n_resamples)
    return RerunComparison(float(pvalue), statistic, feature, k, n_seeds, exact)
