r"""Statistics of trained models: the one home of every test and interval of the course.

A trained model is one draw: another seed gives another model, so the
chapters compare models through many seeds. Where SciPy computes the
statistic, the function here is a thin wrapper over :mod:`scipy.stats`
that adds checks naming each argument and its accepted range, and a rule
for samples with no spread (every seed at 100 %), where SciPy returns NaN
but a verdict is due: agreement gives p = 1, disagreement p = 0. Every
sample holds at least two finite numbers.

**One sample, or paired differences** (Student's t; seed ``s`` of two
models shares its data, so ``first - second`` is one sample):

* :func:`mean_confidence_interval` (``scipy.stats.ttest_1samp``), and
  :func:`mean_interval_or_nan` for a result that may be missing;
* :func:`paired_interval`, :func:`paired_t_test` (``ttest_1samp``, ``ttest_rel``);
* :func:`paired_tost` (equivalence within a margin) and :func:`paired_beyond`
  (a change larger than the margin), one-sided ``ttest_1samp``;
* :func:`paired_permutation_test`, the sign-flip test
  (``scipy.stats.permutation_test``).

**Two independent samples** (Welch's t, unequal variances):

* :func:`welch_test`, :func:`difference_interval`
  (``scipy.stats.ttest_ind(equal_var=False)`` and its ``confidence_interval()``);
* :func:`tost`, the two one-sided tests for equivalence within a margin;
* :func:`difference_of_differences`, the interaction of two differences;
* :func:`studentized_permutation_test` and :func:`bootstrap_t_test`, the
  resampling checks of a Welch test, by hand (chapter 5's seed handling).

**Chance, power, many tests:** :func:`chance_interval` (binomial),
:func:`power_two_sample` and :func:`seeds_for_power` (non-central t),
:func:`holm` (Holm's step-down correction, written out because it is short
and it teaches) and :func:`add_holm` for a table of tests.

**Training itself:** :func:`choose_rate` keeps the smallest learning rate
whose validation score ties with the best, so that a few roundings do not
decide between rates; :func:`paired_rerun_test` compares a fresh run of
stored seeds with the stored one, seed by seed (training magnifies the last
bits of every sum, so another machine's run is a second sample, not a copy).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .validation import check_array, check_integer, check_real

__all__ = [
    "RerunComparison",
    "add_holm",
    "bootstrap_t_test",
    "chance_interval",
    "choose_rate",
    "difference_interval",
    "difference_of_differences",
    "holm",
    "mean_confidence_interval",
    "mean_interval_or_nan",
    "paired_beyond",
    "paired_interval",
    "paired_permutation_test",
    "paired_rerun_test",
    "paired_t_test",
    "paired_tost",
    "power_two_sample",
    "seeds_for_power",
    "studentized_permutation_test",
    "tost",
    "welch_test",
]


# -- argument checks and SciPy's warnings ----------------------------------------------


def _sample(name: str, values: Any) -> np.ndarray:
    """``values`` as a 1-D float array of at least two finite numbers."""
    values = check_array(name, values, ndim=1)
    if values.size < 2:
        raise ValueError(f"{name} must hold at least 2 numbers, got {values.size}")
    return values


def _two_samples(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a = check_array("a", a, ndim=1)
    b = check_array("b", b, ndim=1)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"a and b must hold at least 2 numbers each, got {a.size} and {b.size}")
    return a, b


def _confidence(confidence: Any) -> float:
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    return confidence


def _margin(margin: Any) -> float:
    return check_real("margin", margin, positive=True)


def _generator(rng: Any) -> np.random.Generator:
    """A NumPy generator: ``rng`` itself (its state moves on), or one seeded with it."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    return np.random.default_rng(check_integer("rng", rng, minimum=0))


@contextmanager
def _quiet():
    """SciPy warns of "catastrophic cancellation" when one sample is constant.

    Its variance is then exactly 0 and the result is right, so the warning
    says nothing here (samples where *every* value is equal never reach SciPy).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        yield


def _welch_parts(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    r"""``mean(a) - mean(b)``, :math:`v_a + v_b` (:math:`v = s^2/n`) and Welch's degrees of freedom.

    The degrees of freedom (Welch 1947, Satterthwaite 1946) are
    :math:`(v_a + v_b)^2 / (v_a^2/(n_a - 1) + v_b^2/(n_b - 1))`; ``inf`` when
    neither sample has any spread.
    """
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0.0:
        return diff, 0.0, math.inf
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return diff, float(va + vb), float(dof)


def _welch_t(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Welch's statistic of ``a`` against ``b`` along ``axis`` (many resamples at once)."""
    se = np.sqrt(
        a.var(axis=axis, ddof=1) / a.shape[axis] + b.var(axis=axis, ddof=1) / b.shape[axis]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a.mean(axis=axis) - b.mean(axis=axis)) / se


# -- one sample, or paired differences -------------------------------------------------


def mean_confidence_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of a small sample.

    The half-width is :math:`t_{n-1} \\, s / \\sqrt{n}`, with :math:`s` the
    sample standard deviation and :math:`t_{n-1}` the two-sided quantile of
    Student's t distribution with ``n - 1`` degrees of freedom:
    ``scipy.stats.ttest_1samp(values, 0).confidence_interval(confidence)``.
    A sample with no spread gives the single point of its mean.

    Returns ``(mean, low, high)``.

    Examples
    --------
    >>> mean, low, high = mean_confidence_interval([1.0, 2.0, 3.0])
    >>> round(high - mean, 4)  # t = 4.3027 for 2 degrees of freedom, s = 1, n = 3
    2.4841
    >>> mean_confidence_interval([0.5, 0.5, 0.5])
    (0.5, 0.5, 0.5)
    """
    values = _sample("values", values)
    confidence = _confidence(confidence)
    mean = float(values.mean())
    if values.std(ddof=1) == 0.0:
        return mean, mean, mean
    with _quiet():
        ci = stats.ttest_1samp(values, 0.0).confidence_interval(confidence)
    return mean, float(ci.low), float(ci.high)


def mean_interval_or_nan(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """:func:`mean_confidence_interval` of a result that may be missing: NaN where it is.

    A sample holding a NaN (a method that cannot run there, as learned codes
    past their table) gives three NaN; a sample with no spread gives its
    value three times (the value itself, not a mean that rounding can move).

    Examples
    --------
    >>> mean_interval_or_nan([0.1, 0.1, 0.1])
    (0.1, 0.1, 0.1)
    >>> mean_interval_or_nan([0.5, float("nan")])
    (nan, nan, nan)
    """
    values = check_array("values", values, ndim=1, finite=False)
    if np.isnan(values).any():
        return (math.nan, math.nan, math.nan)
    if values.size and np.ptp(values) == 0.0:
        return (float(values[0]),) * 3
    return mean_confidence_interval(values, confidence)


def paired_interval(
    differences: Any, confidence: float = 0.95
) -> tuple[float, float, float, float]:
    """Mean of paired differences, its Student-t interval and the two-sided p-value of zero.

    ``scipy.stats.ttest_1samp(differences, 0)``, its p-value and its
    ``confidence_interval(confidence)``. With no spread at all, the interval
    is the point and the p-value is 1 if the mean is 0, else 0.

    Returns ``(mean, low, high, p)``.

    Examples
    --------
    >>> mean, low, high, p = paired_interval([0.1, 0.2, 0.3])
    >>> round(mean, 2), round(p, 4)
    (0.2, 0.0742)
    """
    d = _sample("differences", differences)
    confidence = _confidence(confidence)
    mean = float(d.mean())
    if d.std(ddof=1) == 0.0:
        return mean, mean, mean, 1.0 if mean == 0.0 else 0.0
    with _quiet():
        result = stats.ttest_1samp(d, 0.0)
        ci = result.confidence_interval(confidence)
    return mean, float(ci.low), float(ci.high), float(result.pvalue)


def paired_t_test(first: Any, second: Any) -> tuple[float, float, float]:
    """Paired t test of ``mean(first - second) = 0``: statistic, degrees of freedom, two-sided p.

    ``scipy.stats.ttest_rel(first, second)``: entry ``s`` of both is the same
    seed (the same data, the same mini-batches), so only the differences
    count. Where the differences have no spread, the statistic is 0 with
    p = 1 if they are all zero, and infinite with p = 0 if not.

    ``first`` and ``second`` hold one number per seed each (at least two).
    Returns ``(t, dof, p)``, ``dof = n - 1``.

    Examples
    --------
    >>> t, dof, p = paired_t_test([0.9, 0.8, 0.7, 0.6], [0.8, 0.75, 0.6, 0.45])
    >>> round(t, 3), dof, round(p, 4)
    (4.899, 3.0, 0.0163)
    >>> paired_t_test([1.0, 0.75], [0.5, 0.25])  # the same gain for every seed
    (inf, 1.0, 0.0)
    """
    first = _sample("first", first)
    second = _sample("second", second)
    if first.shape != second.shape:
        raise ValueError(
            f"first and second must hold one number per seed each (the same length), "
            f"got {first.size} and {second.size}"
        )
    d = first - second
    dof = float(d.size - 1)
    if np.ptp(d) == 0.0:
        mean = float(d.mean())
        return (0.0, dof, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), dof, 0.0)
    with _quiet():
        result = stats.ttest_rel(first, second)
    return float(result.statistic), dof, float(result.pvalue)


def paired_tost(differences: Any, margin: float) -> float:
    """p-value of the two one-sided tests that the mean difference lies within ``±margin``.

    The larger of ``ttest_1samp(differences, -margin, alternative="greater")``
    and ``ttest_1samp(differences, margin, alternative="less")``. Equivalence
    is shown at level alpha when the p-value is below alpha, which is the
    same as the ``1 - 2 alpha`` interval lying inside the margin (Schuirmann
    1987). With no spread, 0 if ``|mean| < margin``, else 1.

    Examples
    --------
    >>> round(paired_tost([0.01, -0.01, 0.0, 0.02], 0.05), 4)
    0.003
    """
    d = _sample("differences", differences)
    margin = _margin(margin)
    if d.std(ddof=1) == 0.0:
        return 0.0 if abs(float(d.mean())) < margin else 1.0
    with _quiet():
        lower = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
        upper = stats.ttest_1samp(d, margin, alternative="less").pvalue
    return float(max(lower, upper))


def paired_beyond(differences: Any, margin: float) -> float:
    """One-sided p-value that the mean difference lies beyond ``±margin``, on the side of its sign.

    For a loss (negative mean), the test of "the mean is at least
    ``-margin``" (``ttest_1samp(differences, -margin, alternative="less")``);
    for a gain, of "the mean is at most ``margin``". Only one of the two can
    reject at a time, so its size is that of one one-sided test. With no
    spread, 0 if ``|mean| > margin``, else 1.

    Examples
    --------
    >>> round(paired_beyond([-0.2, -0.3, -0.25, -0.22], 0.05), 4)
    0.0015
    >>> paired_beyond([-0.01, 0.0, 0.01], 0.05) > 0.5
    True
    """
    d = _sample("differences", differences)
    margin = _margin(margin)
    mean = float(d.mean())
    if d.std(ddof=1) == 0.0:
        return 0.0 if abs(mean) > margin else 1.0
    with _quiet():
        if mean < 0:
            return float(stats.ttest_1samp(d, -margin, alternative="less").pvalue)
        return float(stats.ttest_1samp(d, margin, alternative="greater").pvalue)


def paired_permutation_test(
    differences: Any, *, n_resamples: int = 2**20, rng: Any = None
) -> float:
    r"""Two-sided sign-flip permutation test of "paired differences centred on zero".

    Under the null hypothesis each seed's difference is as likely to have
    come out with the other sign (the two models are exchangeable within a
    seed). The statistic is the mean difference; the p-value is the share
    of the :math:`2^n` sign patterns whose mean lies at least as far from
    zero as the observed one (``scipy.stats.permutation_test`` with
    ``permutation_type="samples"``; the t statistic gives the same test, as
    the sum of squares does not change with the signs). It asks nothing of
    the shape of the distribution of the differences, only that it be
    symmetric under the null. A zero difference has no sign to flip and is
    left out. The test is exact while :math:`2^k \le` ``n_resamples`` for the
    ``k`` non-zero differences (20 by default); beyond, the Monte Carlo
    estimate from ``n_resamples`` random patterns, drawn with ``rng``.

    ``differences`` holds two or more finite numbers; ``n_resamples >= 1`` is
    the most sign patterns evaluated; ``rng``, a generator (its state moves
    on) or a seed ``>= 0``, draws the patterns of a Monte Carlo p-value.
    Returns the p-value, in ``(0, 1]``.

    Examples
    --------
    >>> paired_permutation_test([0.1, 0.2, 0.3])  # 2 of the 8 patterns are as far out
    0.25
    >>> paired_permutation_test([0.0, 0.0, 0.0])
    1.0
    """
    d = _sample("differences", differences)
    n_resamples = check_integer("n_resamples", n_resamples, minimum=1)
    d = d[d != 0.0]  # no sign to flip: every pattern of the others comes 2**zeros times
    if d.size == 0:
        return 1.0
    result = stats.permutation_test(
        (d,),
        np.mean,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        batch=1 << 14,
        rng=_generator(rng) if 2**d.size > n_resamples else None,
    )
    return float(result.pvalue)


# -- two independent samples (Welch) ---------------------------------------------------


def welch_test(a: Any, b: Any) -> tuple[float, float, float]:
    r"""Welch's t statistic for ``mean(a) - mean(b)``, its degrees of freedom and two-sided p.

    ``scipy.stats.ttest_ind(a, b, equal_var=False)``: the standard error is
    :math:`\sqrt{s_a^2/n_a + s_b^2/n_b}`, the degrees of freedom those of
    Welch and Satterthwaite. If both samples have zero spread, the statistic
    is 0 with p = 1 when the means agree, and infinite with p = 0 when they
    do not.

    Returns ``(t, dof, p)``.

    Examples
    --------
    >>> t, dof, p = welch_test([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    >>> float(t), float(p)
    (0.0, 1.0)
    >>> welch_test([1.0, 1.0], [0.5, 0.5])
    (inf, inf, 0.0)
    """
    a, b = _two_samples(a, b)
    diff, variance, _ = _welch_parts(a, b)
    if variance == 0.0:
        return (
            (0.0, math.inf, 1.0) if diff == 0.0 else (math.copysign(math.inf, diff), math.inf, 0.0)
        )
    with _quiet():
        result = stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.df), float(result.pvalue)


def difference_interval(a: Any, b: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    r"""Difference of two means, ``mean(a) - mean(b)``, with Welch's confidence interval.

    ``scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)``:
    the standard error is :math:`\sqrt{s_a^2/n_a + s_b^2/n_b}` and the
    degrees of freedom follow Welch and Satterthwaite. If both samples have
    zero spread the interval is the single point of the difference.

    Returns
    -------
    (float, float, float)
        ``(difference, low, high)``.

    Examples
    --------
    >>> difference_interval([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    (0.0, 0.0, 0.0)
    >>> diff, low, high = difference_interval([0.9, 1.0, 0.8], [0.5, 0.6, 0.4])
    >>> round(diff, 4), bool(low > 0)
    (0.4, True)
    """
    a, b = _two_samples(a, b)
    confidence = _confidence(confidence)
    diff, variance, _ = _welch_parts(a, b)
    if variance == 0.0:
        return diff, diff, diff
    with _quiet():
        ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    return diff, float(ci.low), float(ci.high)


def tost(a: Any, b: Any, margin: float) -> tuple[float, float, float]:
    r"""Two one-sided tests (TOST) that ``mean(a) - mean(b)`` lies within ``±margin``.

    The null hypothesis is that the difference is at least ``margin`` away
    from zero, :math:`|\Delta| \ge m`; it is rejected at level :math:`\alpha`
    when both one-sided Welch tests, :math:`\Delta > -m` and :math:`\Delta < m`,
    reject it, which is the same as the :math:`1 - 2\alpha` Welch interval
    lying inside :math:`(-m, m)`. The p-value is the larger of the two
    one-sided p-values. (SciPy's Welch test has no null difference other
    than 0, hence the two tails by hand.) Two samples with no spread give
    0 when their difference lies strictly within the margin, else 1.

    Returns
    -------
    (float, float, float)
        ``(p, low, high)``: the TOST p-value and the 90 % Welch interval of
        the difference (the interval that matches a TOST at 5 %).

    Examples
    --------
    >>> p, low, high = tost([0.50, 0.51, 0.49, 0.50], [0.50, 0.49, 0.51, 0.50], 0.05)
    >>> bool(p < 0.05), bool(-0.05 < low < high < 0.05)
    (True, True)
    """
    a, b = _two_samples(a, b)
    margin = _margin(margin)
    diff, low, high = difference_interval(a, b, 0.90)
    _, variance, dof = _welch_parts(a, b)
    if variance == 0.0:
        return (0.0 if abs(diff) < margin else 1.0), low, high
    se = math.sqrt(variance)
    p_lower = float(stats.t.sf((diff + margin) / se, dof))  # H0: diff <= -margin
    p_upper = float(stats.t.cdf((diff - margin) / se, dof))  # H0: diff >= +margin
    return max(p_lower, p_upper), low, high


def difference_of_differences(
    first: tuple[Any, Any], second: tuple[Any, Any], confidence: float = 0.95
) -> tuple[float, float, float, float]:
    r"""How much a difference changes between two settings, with Welch's interval and test.

    ``first = (a1, b1)`` and ``second = (a2, b2)`` are four independent
    samples; the estimate is the interaction
    :math:`(\bar a_2 - \bar b_2) - (\bar a_1 - \bar b_1)` (e.g. concatenated
    minus added with two layers, minus the same with one). Its standard
    error is :math:`\sqrt{\sum_g s_g^2/n_g}` over the four groups and its
    degrees of freedom those of Welch and Satterthwaite for four groups,
    :math:`(\sum_g v_g)^2 / \sum_g v_g^2/(n_g - 1)`. With no spread in any
    group, the interval is the point and the p-value is 1 if the estimate is
    0, else 0.

    Returns
    -------
    (float, float, float, float)
        ``(estimate, low, high, p)``, p two-sided.

    Examples
    --------
    >>> est, low, high, p = difference_of_differences(
    ...     ([0.9, 0.8, 0.85], [0.5, 0.4, 0.45]), ([0.9, 0.8, 0.85], [0.5, 0.4, 0.45]))
    >>> est, float(p)
    (0.0, 1.0)
    """
    for name, pair in (("first", first), ("second", second)):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise TypeError(f"{name} must be a pair (a, b) of samples, got {type(pair).__name__}")
    a1, b1 = (_sample(f"first[{i}]", x) for i, x in enumerate(first))
    a2, b2 = (_sample(f"second[{i}]", x) for i, x in enumerate(second))
    confidence = _confidence(confidence)
    groups = (a2, b2, a1, b1)
    v = np.array([g.var(ddof=1) / g.size for g in groups])
    est = float(a2.mean() - b2.mean()) - float(a1.mean() - b1.mean())
    if v.sum() == 0:  # every seed of every group at the same accuracy
        return est, est, est, 1.0 if est == 0 else 0.0
    dof = v.sum() ** 2 / sum(vi**2 / (g.size - 1) for vi, g in zip(v, groups, strict=True))
    half = stats.t.ppf(0.5 + confidence / 2, dof) * np.sqrt(v.sum())
    p = 2 * stats.t.sf(abs(est) / np.sqrt(v.sum()), dof)
    return est, float(est - half), float(est + half), float(p)


def studentized_permutation_test(
    a: Any, b: Any, *, n_resamples: int = 20_000, rng: Any = None
) -> float:
    r"""Two-sided permutation test of ``a`` against ``b`` on Welch's statistic.

    The pooled ``n_a + n_b`` numbers are shuffled ``n_resamples`` times and
    split again into groups of the original sizes; the p-value is
    :math:`(1 + \#\{|t^*| \ge |t|\}) / (1 + n)` with :math:`t` Welch's
    statistic of the data and :math:`t^*` that of each shuffle (a shuffle
    with no spread in either group counts as at least as far out).
    Studentizing keeps the test valid for means when the two spreads differ
    (Janssen 1997), where a permutation test of the plain difference is not.

    ``scipy.stats.permutation_test`` draws the same shuffles from the same
    generator, but counts a :math:`t^*` within a relative :math:`2 \cdot
    10^{-14}` of :math:`t` as equal to it; accuracies on a test set take few
    values, so many shuffles give the same two groups again, with a
    :math:`t^*` that rounding puts just below :math:`t` or just above it.
    This test compares the numbers as they come out, as chapter 5 did (it
    counts fewer of those ties, and its p-values are a little smaller:
    0.0329 where SciPy gives 0.0338, for the 20 + 20 seeds of one regime).

    ``rng`` draws the shuffles, ``rng.permuted(np.tile(pooled, (n_resamples,
    1)), axis=1)``: a generator shared with :func:`bootstrap_t_test`, called
    permutation first, gives the numbers of chapter 5's resampling check.
    ``a`` and ``b`` hold two or more finite numbers each; ``n_resamples >= 1``;
    ``rng`` is a generator (its state moves on) or a seed ``>= 0``.
    Returns the p-value, in ``(0, 1]``.

    Examples
    --------
    >>> a, b = [0.9, 0.95, 0.92, 0.97, 0.91], [0.5, 0.6, 0.55, 0.4, 0.52]
    >>> studentized_permutation_test(a, b, n_resamples=999, rng=0)  # 5 of 999 as far out
    0.006
    """
    a, b = _two_samples(a, b)
    n_resamples = check_integer("n_resamples", n_resamples, minimum=1)
    rng = _generator(rng)
    observed = abs(float(_welch_t(a, b)))
    shuffled = rng.permuted(np.tile(np.concatenate([a, b]), (n_resamples, 1)), axis=1)
    far = ~(np.abs(_welch_t(shuffled[:, : a.size], shuffled[:, a.size :])) < observed)
    return float((np.sum(far) + 1) / (n_resamples + 1))


def bootstrap_t_test(a: Any, b: Any, *, n_resamples: int = 20_000, rng: Any = None) -> float:
    r"""Two-sided bootstrap-t test of ``mean(a) = mean(b)`` on Welch's statistic.

    Each sample is centred on its own mean (so that the null hypothesis
    holds in the resampled world, whatever the spreads) and resampled with
    replacement, ``n_resamples`` times; the p-value is
    :math:`(1 + \#\{|t^*| \ge |t|\}) / (1 + n)` with :math:`t` Welch's
    statistic of the data and :math:`t^*` that of each resample (Efron and
    Tibshirani 1993, section 16.4). A resample with no spread in either
    group gives no finite :math:`t^*` and counts as at least as far out.
    SciPy's ``bootstrap`` gives intervals, not this test, hence it is written out.

    ``rng`` draws the resamples, ``rng.integers(0, n, (n_resamples, n))``
    for ``a`` and then for ``b``: after :func:`studentized_permutation_test`
    with the same generator, the numbers of chapter 5's resampling check.

    ``a`` and ``b`` hold two or more finite numbers each; ``n_resamples >= 1``;
    ``rng`` is a generator (its state moves on) or a seed ``>= 0``.
    Returns the p-value, in ``(0, 1]``.

    Examples
    --------
    >>> p = bootstrap_t_test([0.9, 0.95, 0.92, 0.97, 0.91], [0.5, 0.6, 0.55, 0.4, 0.52], rng=0)
    >>> bool(p < 0.01)
    True
    """
    a, b = _two_samples(a, b)
    n_resamples = check_integer("n_resamples", n_resamples, minimum=1)
    rng = _generator(rng)
    observed = abs(float(_welch_t(a, b)))
    if math.isnan(observed):  # neither sample has any spread, and their means agree
        return 1.0
    boot = [g[rng.integers(0, g.size, (n_resamples, g.size))] - g.mean() for g in (a, b)]
    far = ~(np.abs(_welch_t(*boot)) < observed)
    return float((np.sum(far) + 1) / (n_resamples + 1))


# -- chance, power and many tests ------------------------------------------------------


def chance_interval(n_test: int, chance: float, confidence: float = 0.95) -> tuple[float, float]:
    """Range of accuracies a constant guess reaches on ``n_test`` examples, with ``confidence``.

    A model that answers one class whose share of the test set is
    ``chance`` in expectation gets a binomial number of answers right; the
    interval is the central binomial interval (``scipy.stats.binom.interval``)
    divided by ``n_test``.

    Examples
    --------
    >>> chance_interval(500, 0.5)
    (0.456, 0.544)
    """
    n_test = check_integer("n_test", n_test, minimum=1)
    chance = check_real("chance", chance, minimum=0.0, maximum=1.0)
    confidence = _confidence(confidence)
    low, high = stats.binom.interval(confidence, n_test, chance)
    return float(low) / n_test, float(high) / n_test


def power_two_sample(delta: float, sd: float, n: int, alpha: float = 0.05) -> float:
    r"""Power of a two-sided two-sample t test with ``n`` seeds per group.

    The chance that the test rejects "no difference" when the true
    difference of the means is ``delta`` and each group has standard
    deviation ``sd``: the non-central t distribution with
    :math:`2n - 2` degrees of freedom and non-centrality
    :math:`\delta / (\mathrm{sd}\sqrt{2/n})`.

    Examples
    --------
    >>> round(power_two_sample(1.0, 1.0, 17), 2)  # the textbook 80 % at 17 per group
    0.81
    """
    delta = check_real("delta", delta, minimum=0.0)
    sd = check_real("sd", sd, positive=True)
    n = check_integer("n", n, minimum=2)
    alpha = check_real("alpha", alpha, positive=True, maximum=0.5)
    dof = 2 * n - 2
    critical = stats.t.ppf(1 - alpha / 2, dof)
    shift = delta / (sd * math.sqrt(2 / n))
    upper = float(stats.nct.sf(critical, dof, shift))
    lower = float(stats.nct.cdf(-critical, dof, shift))
    # SciPy's non-central t returns NaN far out in a tail; there the tail is 0 (or 1).
    if not math.isfinite(upper):
        upper = 1.0 if shift > critical else 0.0
    if not math.isfinite(lower):
        lower = 0.0
    return min(1.0, upper + lower)


def seeds_for_power(
    delta: float, sd: float, power: float = 0.8, alpha: float = 0.05, limit: int = 10_000
) -> int:
    """Smallest number of seeds per group that gives ``power`` (see :func:`power_two_sample`).

    Examples
    --------
    >>> seeds_for_power(1.0, 1.0)
    17
    """
    power = check_real("power", power, positive=True, maximum=0.999)
    for n in range(2, check_integer("limit", limit, minimum=2) + 1):
        if power_two_sample(delta, sd, n, alpha) >= power:
            return n
    raise ValueError(f"more than {limit} seeds per group would be needed")


def holm(p_values: Any) -> np.ndarray:
    """Holm's step-down adjustment of several p-values (family-wise error control).

    Sort the m p-values, multiply the k-th smallest by ``m - k + 1`` (k from
    1), make the sequence non-decreasing and cap it at 1. Rejecting every
    hypothesis whose adjusted p-value is below :math:`\\alpha` keeps the
    chance of any false rejection in the family at most :math:`\\alpha`,
    whatever the dependence between the tests.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03])
    array([0.03, 0.06, 0.06])
    """
    p = check_array("p_values", p_values, ndim=1)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(scaled, 1.0)
    return adjusted


def add_holm(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> None:
    """Holm-correct each column ``keys`` of a table of tests, in place.

    Every row is a dict of one test's results; for each key, the p-values
    ``row[key]`` of all rows form one family (:func:`holm`) and each row gets
    ``row[key + "_holm"]``.

    Examples
    --------
    >>> rows = [{"p": 0.01}, {"p": 0.04}, {"p": 0.03}]
    >>> add_holm(rows, ["p"])
    >>> [row["p_holm"] for row in rows]
    [0.03, 0.06, 0.06]
    """
    if isinstance(keys, str):
        raise TypeError(f"keys must be a sequence of column names, got the string {keys!r}")
    if not rows:
        return
    for key in keys:
        for row, adjusted in zip(rows, holm([r[key] for r in rows]), strict=True):
            row[f"{key}_holm"] = float(adjusted)


# -- training: the rate a sweep keeps, and a re-run of stored seeds --------------------


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
