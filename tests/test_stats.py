"""posenc.stats: every test and interval, against SciPy and statsmodels and chapter 5's cell.

statsmodels is a second, independent implementation of the same tests (its Welch
test, TOST, Holm and power code share nothing with SciPy's wrappers here); it is
installed for the tests only (requirements.txt), and those tests are skipped without it.
The last part tests paired_rerun_test, the rule that compares a fresh run of stored seeds.
"""

import importlib
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import posenc.experiment
import posenc.extrapolation
from posenc.experiment_verdicts import compare_design, load_results
from posenc.stats import (
    add_holm,
    bootstrap_t_test,
    chance_interval,
    difference_interval,
    difference_of_differences,
    holm,
    mean_confidence_interval,
    mean_interval_or_nan,
    paired_beyond,
    paired_interval,
    paired_permutation_test,
    paired_rerun_test,
    paired_t_test,
    paired_tost,
    power_two_sample,
    seeds_for_power,
    studentized_permutation_test,
    tost,
    welch_test,
)

samples = st.lists(st.floats(0, 1), min_size=3, max_size=25).map(np.array)


def _spread(*groups):
    return all(np.ptp(g) > 1e-6 for g in groups)


# -- against statsmodels ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sm():
    weightstats = pytest.importorskip("statsmodels.stats.weightstats")
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    power = pytest.importorskip("statsmodels.stats.power")
    return weightstats, multitest, power


@settings(max_examples=40, deadline=None)
@given(a=samples, b=samples, margin=st.sampled_from([0.01, 0.03, 0.1]))
def test_welch_interval_and_tost_agree_with_statsmodels(sm, a, b, margin):
    if not _spread(a, b):
        return
    weightstats = sm[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, p, dof = weightstats.ttest_ind(a, b, usevar="unequal")
        compare = weightstats.CompareMeans(weightstats.DescrStatsW(a), weightstats.DescrStatsW(b))
        low, high = compare.tconfint_diff(alpha=0.05, usevar="unequal")
        p_tost = weightstats.ttost_ind(a, b, -margin, margin, usevar="unequal")[0]
    assert welch_test(a, b) == pytest.approx((t, dof, p), rel=1e-9, abs=1e-12)
    assert difference_interval(a, b)[1:] == pytest.approx((low, high), rel=1e-9, abs=1e-12)
    assert tost(a, b, margin)[0] == pytest.approx(p_tost, rel=1e-9, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(d=samples.map(lambda x: x - 0.5), margin=st.sampled_from([0.02, 0.05, 0.2]))
def test_paired_tests_agree_with_statsmodels(sm, d, margin):
    if not _spread(d):
        return
    weightstats = sm[0]
    described = weightstats.DescrStatsW(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, p, dof = described.ttest_mean(0.0)
        low, high = described.tconfint_mean(alpha=0.05)
        p_tost = weightstats.ttost_paired(d, np.zeros_like(d), -margin, margin)[0]
        smaller = described.ttest_mean(-margin, alternative="smaller")[1]
        larger = described.ttest_mean(margin, alternative="larger")[1]
    assert mean_confidence_interval(d)[1:] == pytest.approx((low, high), rel=1e-9, abs=1e-12)
    assert paired_interval(d) == pytest.approx((d.mean(), low, high, p), rel=1e-9, abs=1e-12)
    assert paired_t_test(d, np.zeros_like(d)) == pytest.approx((t, dof, p), rel=1e-9, abs=1e-12)
    assert paired_tost(d, margin) == pytest.approx(p_tost, rel=1e-9, abs=1e-12)
    beyond = smaller if d.mean() < 0 else larger
    assert paired_beyond(d, margin) == pytest.approx(beyond, rel=1e-9, abs=1e-12)


def test_holm_and_power_agree_with_statsmodels(sm):
    _, multitest, power = sm
    rng = np.random.default_rng(4)
    for _ in range(30):
        p = rng.random(rng.integers(1, 12)) ** 2
        np.testing.assert_allclose(holm(p), multitest.multipletests(p, method="holm")[1])
    analysis = power.TTestIndPower()
    for delta, sd, n in ((0.1, 0.15, 12), (1.0, 1.0, 17), (0.03, 0.05, 20), (0.0, 1.0, 5)):
        expected = analysis.power(effect_size=delta / sd, nobs1=n, alpha=0.05)
        assert power_two_sample(delta, sd, n) == pytest.approx(expected, rel=1e-6)
        needed = analysis.solve_power(effect_size=max(delta, 0.05) / sd, power=0.8, alpha=0.05)
        assert seeds_for_power(max(delta, 0.05), sd) == math.ceil(needed)


def test_chance_interval_is_the_central_binomial_interval():
    low, high = chance_interval(500, 0.125)
    assert (low, high) == (48 / 500, 77 / 500)
    dist = stats.binom(500, 0.125)
    assert dist.cdf(48 - 1) <= 0.025 <= dist.cdf(48) and dist.sf(77) <= 0.025


# -- the paired permutation test -------------------------------------------------------


def test_paired_permutation_test_enumerates_every_sign_pattern():
    rng = np.random.default_rng(2)
    for n in (3, 6, 9):
        d = np.round(rng.normal(0.02, 0.05, n), 3)
        observed = abs(d.mean())
        means = [abs(np.mean(np.array(s) * d)) for s in itertools.product((-1, 1), repeat=n)]
        expected = np.mean(np.array(means) >= observed - 1e-12)
        assert paired_permutation_test(d) == pytest.approx(expected, rel=1e-12)


def test_paired_permutation_test_leaves_zeros_out():
    """Fifteen losses and five seeds that did not move: the zeros change nothing."""
    d = -np.linspace(0.01, 0.05, 15)
    with_zeros = np.concatenate([d, np.zeros(5)])
    p_sign = paired_permutation_test(with_zeros)
    assert p_sign == paired_permutation_test(d) == 2 / 2**15  # only all-negative and all-positive
    sampled = paired_permutation_test(with_zeros, n_resamples=4000, rng=1)
    assert 0 < sampled < 0.002
    mixed = np.array([-0.02, -0.01, 0.015, -0.03, 0.0, -0.005, 0.01, -0.02])
    assert paired_permutation_test(mixed, n_resamples=50_000, rng=2) == pytest.approx(
        paired_permutation_test(mixed), abs=0.01
    )
    assert paired_permutation_test(np.zeros(4)) == 1.0


# -- no spread: a verdict instead of NaN -----------------------------------------------


def test_samples_without_spread_give_a_verdict():
    same, ones, halves = [0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]
    assert welch_test(same, halves) == (0.0, math.inf, 1.0)
    assert welch_test(ones, halves) == (math.inf, math.inf, 0.0)
    assert difference_interval(ones, halves) == (0.5, 0.5, 0.5)
    assert tost(ones, halves, 0.1)[0] == 1.0 and tost(same, halves, 0.1)[0] == 0.0
    assert mean_confidence_interval(ones) == (1.0, 1.0, 1.0)
    assert paired_interval([0.0, 0.0]) == (0.0, 0.0, 0.0, 1.0)
    assert paired_interval([0.2, 0.2])[3] == 0.0
    assert paired_t_test([1.0, 0.75], [0.5, 0.25]) == (math.inf, 1.0, 0.0)
    assert paired_t_test(ones, ones) == (0.0, 2.0, 1.0)
    assert paired_tost([0.01, 0.01], 0.05) == 0.0 and paired_tost([0.1, 0.1], 0.05) == 1.0
    assert paired_beyond([-0.2, -0.2], 0.05) == 0.0 and paired_beyond([0.0, 0.0], 0.05) == 1.0
    est, low, high, p = difference_of_differences((ones, halves), (ones, halves))
    assert (est, low, high, p) == (0.0, 0.0, 0.0, 1.0)
    assert studentized_permutation_test(same, halves, n_resamples=50, rng=0) == 1.0
    assert bootstrap_t_test(ones, halves, n_resamples=50, rng=0) == 1.0
    # One sample constant, the other not: SciPy's warning about it stays inside.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0 < welch_test(ones, [0.2, 0.4, 0.3])[2] < 0.05
        assert difference_interval(ones, [0.2, 0.4, 0.3])[1] > 0


def test_mean_interval_or_nan_and_add_holm():
    assert mean_interval_or_nan([0.1, 0.1, 0.1]) == (0.1, 0.1, 0.1)  # not 0.10000000000000002
    assert all(math.isnan(x) for x in mean_interval_or_nan([0.5, np.nan, 0.7]))
    assert mean_interval_or_nan([0.2, 0.4, 0.3]) == mean_confidence_interval([0.2, 0.4, 0.3])
    rows = [{"p": 0.01, "q": 0.5}, {"p": 0.04, "q": 0.2}, {"p": 0.03, "q": 0.9}]
    add_holm(rows, ("p", "q"))
    assert [r["p_holm"] for r in rows] == pytest.approx(list(holm([0.01, 0.04, 0.03])))
    assert [r["q_holm"] for r in rows] == pytest.approx(list(holm([0.5, 0.2, 0.9])))
    with pytest.raises(TypeError, match="keys must be a sequence of column names"):
        add_holm(rows, "p")


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: welch_test([1.0], [1.0, 2.0]), ValueError, "a and b must hold at least 2"),
        (lambda: paired_interval([0.1, 0.2], 1.0), ValueError, "confidence must be strictly"),
        (lambda: paired_tost([0.1, 0.2], -0.1), ValueError, "margin must be a finite number > 0"),
        (lambda: paired_t_test([1.0, 2.0], [1.0, 2.0, 3.0]), ValueError, "the same length"),
        (lambda: paired_beyond([0.1, np.nan], 0.1), ValueError, "differences must contain only"),
        (lambda: mean_confidence_interval("abc"), TypeError, "values must be an array"),
        (
            lambda: difference_of_differences(([1.0, 2.0],), ([1.0, 2.0], [1.0, 2.0])),
            TypeError,
            "first must be a pair",
        ),
        (
            lambda: studentized_permutation_test([1.0, 2.0], [1.0, 3.0], n_resamples=0),
            ValueError,
            "n_resamples must be an integer >= 1",
        ),
        (lambda: bootstrap_t_test([1.0, 2.0], [1.0, 3.0], rng=-1), ValueError, "rng must be"),
        (lambda: paired_permutation_test([0.1]), ValueError, "differences must hold at least 2"),
        (lambda: holm([0.5, 1.5]), ValueError, r"p_values must lie in \[0, 1\]"),
        (lambda: power_two_sample(0.1, 0.0, 10), ValueError, "sd must be a finite number > 0"),
    ],
)
def test_bad_arguments_are_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


# -- chapter 5's resampling cell, as it was written there ------------------------------

N_RESAMPLE = 20_000


def _cell_welch_t(a, b):
    """Welch's statistic as chapter 5's results were computed (the statistic of welch_test)."""
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0.0:
        return 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
    return diff / math.sqrt(va + vb)


def _welch_t_rows(a, b):
    se = np.sqrt(a.var(axis=1, ddof=1) / a.shape[1] + b.var(axis=1, ddof=1) / b.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a.mean(axis=1) - b.mean(axis=1)) / se


def _cell_resampling_p(concat, added, rng, n_resample=N_RESAMPLE):
    """Chapter 5's cell, verbatim but for the names of its helpers."""
    t_obs = _cell_welch_t(concat, added)
    pooled = np.concatenate([concat, added])
    shuffled = rng.permuted(np.tile(pooled, (n_resample, 1)), axis=1)
    t_perm = _welch_t_rows(shuffled[:, : concat.size], shuffled[:, concat.size :])
    p_perm = (np.sum(~(np.abs(t_perm) < abs(t_obs))) + 1) / (n_resample + 1)
    boot = [g[rng.integers(0, g.size, (n_resample, g.size))] - g.mean() for g in (concat, added)]
    t_boot = _welch_t_rows(*boot)
    p_boot = (np.sum(~(np.abs(t_boot) < abs(t_obs))) + 1) / (n_resample + 1)
    return p_perm, p_boot


def _package_resampling_p(concat, added, rng, n_resample=N_RESAMPLE):
    return (
        studentized_permutation_test(concat, added, n_resamples=n_resample, rng=rng),
        bootstrap_t_test(concat, added, n_resamples=n_resample, rng=rng),
    )


def test_resampling_tests_give_chapter_5s_numbers_on_its_results():
    """Every comparison of the committed experiment, one generator (seed 2024) shared in
    turn, permutation first: the p-values of chapter 5's cell to the last bit."""
    comparisons = compare_design(load_results("ch5_experiment.json"))
    cell_rng, package_rng = np.random.default_rng(2024), np.random.default_rng(2024)
    for c in comparisons:
        expected = _cell_resampling_p(c.concat, c.added, cell_rng)
        assert _package_resampling_p(c.concat, c.added, package_rng) == expected, c.regime
    assert cell_rng.integers(1 << 30) == package_rng.integers(1 << 30)  # the same draws used
    wins = [c for c in comparisons if c.verdict == "concat better"]
    first = np.random.default_rng(2024)
    assert studentized_permutation_test(wins[0].concat, wins[0].added, rng=first) == 1 / 20_001


@settings(max_examples=15, deadline=None)
@given(
    a=st.lists(st.integers(0, 6), min_size=3, max_size=12),
    b=st.lists(st.integers(0, 6), min_size=3, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_resampling_tests_match_the_cell_on_data_with_ties(a, b, seed):
    """Accuracies take few values: many shuffles give the two groups again."""
    a, b = np.array(a) / 6, np.array(b) / 6
    cell = _cell_resampling_p(a, b, np.random.default_rng(seed), 500)
    assert _package_resampling_p(a, b, np.random.default_rng(seed), 500) == cell


def test_difference_of_differences_is_chapter_5s_interaction():
    rng = np.random.default_rng(8)
    one = rng.normal(0.8, 0.05, 20), rng.normal(0.7, 0.1, 20)
    two = rng.normal(0.9, 0.02, 20), rng.normal(0.6, 0.1, 20)
    groups = (two[0], two[1], one[0], one[1])
    v = np.array([g.var(ddof=1) / g.size for g in groups])
    est = float(two[0].mean() - two[1].mean()) - float(one[0].mean() - one[1].mean())
    dof = v.sum() ** 2 / sum(vi**2 / (g.size - 1) for vi, g in zip(v, groups, strict=True))
    half = stats.t.ppf(0.975, dof) * np.sqrt(v.sum())
    p = 2 * stats.t.sf(abs(est) / np.sqrt(v.sum()), dof)
    assert difference_of_differences(one, two) == (est, est - half, est + half, p)
    # With two groups empty of effect the interaction is a plain Welch difference.
    zero = np.zeros(20), np.zeros(20)
    zero[1][0] = 1e-300  # spread too small to count
    assert difference_of_differences(zero, two)[0] == pytest.approx(difference_interval(*two)[0])


# -- the old names ---------------------------------------------------------------------


def test_every_moved_name_is_its_new_home_object():
    """Chapters 5 and 7 and the assignments import these from their old modules; they get
    the very function of the new home (so an assignment that blocks one blocks both)."""
    for name, home in posenc.experiment.MOVED.items():
        assert getattr(posenc.experiment, name) is getattr(importlib.import_module(home), name)
    for name in ("holm", "paired_interval", "paired_tost", "paired_beyond"):
        assert getattr(posenc.extrapolation, name) is getattr(posenc.stats, name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        posenc.experiment.no_such_name  # noqa: B018
    from posenc.experiment import holm as old_holm, welch_test as old_welch  # noqa: I001

    assert old_holm is holm and old_welch is welch_test


# -- moved with the functions: first written for chapters 5 and 7 --------------------


def test_paired_interval_matches_scipy():
    d = np.array([0.1, -0.05, 0.2, 0.15, 0.0, 0.12])
    mean, low, high, p = paired_interval(d)
    assert p == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-12)
    assert mean == pytest.approx(d.mean())
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (low, high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert paired_interval([0.0, 0.0, 0.0])[3] == 1.0
    assert paired_interval([0.2, 0.2])[3] == 0.0


def test_tost_agrees_with_the_interval_rule():
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = rng.normal(rng.uniform(-0.1, 0.1), 0.05, size=10)
        p = paired_tost(d, 0.05)
        # Equivalent at alpha = 0.05 exactly when the 90% interval lies inside the margin.
        _, low, high, _ = paired_interval(d, confidence=0.90)
        assert (p < 0.05) == (low > -0.05 and high < 0.05)
    assert paired_tost([0.01, 0.01], 0.05) == 0.0
    assert paired_tost([0.1, 0.1], 0.05) == 1.0


def test_holm_against_hand_computation():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.5]), [0.04, 0.09, 0.09, 0.5])
    assert holm([]).size == 0
    with pytest.raises(ValueError, match="p_values"):
        holm([0.5, 1.5])


def test_paired_beyond_is_a_one_sided_test_against_the_margin():
    """Beyond the margin on the side of the mean: a t test against -margin or +margin."""
    rng = np.random.default_rng(1)
    loss = -0.1 + 0.05 * rng.standard_normal(20)
    expected = stats.ttest_1samp(loss, -0.05, alternative="less").pvalue
    assert paired_beyond(loss, 0.05) == pytest.approx(expected, rel=1e-10)
    gain = 0.1 + 0.05 * rng.standard_normal(20)
    expected = stats.ttest_1samp(gain, 0.05, alternative="greater").pvalue
    assert paired_beyond(gain, 0.05) == pytest.approx(expected, rel=1e-10)
    assert paired_beyond([-0.25, -0.25, -0.25], 0.05) == 0.0
    assert paired_beyond([0.0, 0.0], 0.05) == 1.0
    with pytest.raises(ValueError, match="differences"):
        paired_beyond([0.1], 0.05)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=10), st.sampled_from([0.9, 0.95, 0.99]))
def test_mean_interval_matches_scipy(values, confidence):
    mean, low, high = mean_confidence_interval(values, confidence)
    assert mean == pytest.approx(np.mean(values))
    sem = stats.sem(values)
    if sem == 0:
        assert low == high == pytest.approx(mean)
    else:
        lo, hi = stats.t.interval(confidence, len(values) - 1, loc=np.mean(values), scale=sem)
        assert (low, high) == pytest.approx((lo, hi))


def test_chance_interval_is_the_binomial_interval():
    low, high = chance_interval(500, 0.125)
    assert (low, high) == (48 / 500, 77 / 500)
    assert chance_interval(10, 0.5, 0.5)[0] <= 0.5 <= chance_interval(10, 0.5, 0.5)[1]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=3, max_size=8),
    st.lists(st.floats(0, 1), min_size=3, max_size=8),
)
def test_difference_interval_matches_welch(a, b):
    diff, low, high = difference_interval(a, b)
    assert diff == pytest.approx(np.mean(a) - np.mean(b))
    if np.var(a) + np.var(b) > 1e-12:
        # SciPy warns when one sample is constant ("catastrophic cancellation"), yet
        # its variance is then exactly 0 and the interval is still right.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
        assert (low, high) == pytest.approx((ci.low, ci.high), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: mean_confidence_interval([1.0]), "values must hold at least 2 numbers"),
        (lambda: mean_confidence_interval([1.0, 2.0], 1.0), "strictly between 0 and 1"),
        (lambda: difference_interval([1.0], [1.0, 2.0]), "at least 2 numbers each"),
        (lambda: chance_interval(0, 0.5), "n_test must be an integer >= 1"),
        (lambda: chance_interval(10, 1.5), "chance must be <= 1.0"),
        (lambda: chance_interval(10, 0.5, 0.0), "strictly between 0 and 1"),
    ],
)
def test_statistics_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@settings(max_examples=30, deadline=None)
@given(
    a=st.lists(st.floats(0, 1), min_size=2, max_size=25),
    b=st.lists(st.floats(0, 1), min_size=2, max_size=25),
)
def test_welch_test_matches_scipy(a, b):
    a, b = np.array(a), np.array(b)
    if a.var() + b.var() < 1e-6:
        return  # the constant case is tested on its own
    t, _, p = welch_test(a, b)
    with warnings.catch_warnings():  # SciPy warns of one constant sample, and is right
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = stats.ttest_ind(a, b, equal_var=False)
    assert t == pytest.approx(reference.statistic, rel=1e-9, abs=1e-12)
    assert p == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-12)


def test_welch_test_constant_samples():
    assert welch_test([1.0, 1.0], [1.0, 1.0])[2] == 1.0
    assert welch_test([1.0, 1.0], [0.5, 0.5])[2] == 0.0


def test_tost_is_the_larger_one_sided_p_and_matches_the_90_percent_interval():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.01, 0.02, 20), rng.normal(0.0, 0.02, 20)
    p, low, high = tost(a, b, 0.03)
    lower = stats.ttest_ind(a + 0.03, b, equal_var=False, alternative="greater").pvalue
    upper = stats.ttest_ind(a - 0.03, b, equal_var=False, alternative="less").pvalue
    assert p == pytest.approx(max(lower, upper), rel=1e-9)
    # p < 0.05 exactly when the 90 % interval lies inside the margins.
    for margin in (0.005, 0.01, 0.02, 0.03, 0.05):
        p, low, high = tost(a, b, margin)
        assert (p < 0.05) == (-margin < low and high < margin)
    far = tost(a + 0.2, b, 0.03)[0]
    assert far > 0.5
    with pytest.raises(ValueError, match="margin must be a finite number > 0"):
        tost(a, b, 0.0)


def test_holm_against_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(50):
        p = rng.random(rng.integers(1, 9)) ** 3
        m = p.size
        order = np.argsort(p)
        expected = np.empty(m)
        for rank, i in enumerate(order):
            expected[i] = min(1.0, max((m - r) * p[order[r]] for r in range(rank + 1)))
        np.testing.assert_allclose(holm(p), expected)
    with pytest.raises(ValueError, match=r"p_values must lie in \[0, 1\]"):
        holm([0.5, 1.5])


def test_power_agrees_with_a_simulation():
    rng = np.random.default_rng(2)
    delta, sd, n = 0.1, 0.15, 12
    a = rng.normal(delta, sd, size=(4000, n))
    b = rng.normal(0.0, sd, size=(4000, n))
    rejected = stats.ttest_ind(a, b, axis=1).pvalue < 0.05
    simulated = rejected.mean()
    # Binomial standard error of 4000 draws is below 0.008; allow four of them.
    assert abs(power_two_sample(delta, sd, n) - simulated) < 0.032
    assert power_two_sample(0.0, 1.0, 10) == pytest.approx(0.05, abs=1e-9)
    assert power_two_sample(0.3, 0.05, 5) == pytest.approx(1.0)  # far out: no NaN
    n_needed = seeds_for_power(delta, sd)
    assert power_two_sample(delta, sd, n_needed) >= 0.8 > power_two_sample(delta, sd, n_needed - 1)


# -- paired_rerun_test ------------------------------------------------------------------


def _max_t(fresh, stored, axis):
    d = fresh - stored
    return (np.abs(d.sum(axis=axis)) / np.sqrt((d * d).sum(axis=axis))).max(axis=-1)


@pytest.mark.parametrize("n_seeds", [3, 8, 12])
def test_the_exact_p_value_is_scipys_paired_permutation_test(n_seeds):
    rng = np.random.default_rng(n_seeds)
    fresh = rng.normal(size=(n_seeds, 4))
    stored = rng.normal(size=(n_seeds, 4)) + 0.4
    reference = stats.permutation_test(
        (fresh.T, stored.T),
        _max_t,
        permutation_type="samples",  # swap fresh and stored within a seed
        vectorized=True,
        axis=-1,
        n_resamples=np.inf,
        alternative="greater",
    )
    result = paired_rerun_test(fresh, stored)
    assert result.exact and result.differing == n_seeds
    assert result.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    assert result.statistic == pytest.approx(reference.statistic, rel=1e-12)


def test_the_monte_carlo_p_value_is_close_to_the_exact_one_and_never_zero():
    rng = np.random.default_rng(7)
    fresh = rng.normal(size=(14, 2)) + 0.5
    stored = rng.normal(size=(14, 2))
    exact = paired_rerun_test(fresh, stored)
    sampled = paired_rerun_test(fresh, stored, n_resamples=4000, seed=1)
    assert exact.exact and not sampled.exact
    assert sampled.pvalue == pytest.approx(exact.pvalue, abs=4 * np.sqrt(0.25 / 4000))
    assert paired_rerun_test(fresh, stored, n_resamples=4000, seed=1) == sampled  # seeded
    shifted = np.arange(30.0)
    assert paired_rerun_test(shifted + 1, shifted, n_resamples=99).pvalue == 1 / 100


def test_the_false_failure_rate_is_at_most_the_level_under_the_null():
    """Symmetric differences, some seeds repeated exactly: P(p <= alpha) <= alpha."""
    rng = np.random.default_rng(2024)
    runs, n_seeds = 4000, 10
    pvalues = np.empty(runs)
    for i in range(runs):
        stored = rng.uniform(size=(n_seeds, 3))
        fresh = stored.copy()
        moved = rng.random(n_seeds) < 0.6  # the seeds another machine sends elsewhere
        fresh[moved] = rng.uniform(size=(moved.sum(), 3))
        pvalues[i] = paired_rerun_test(fresh, stored).pvalue
    for alpha in (0.01, 0.05, 0.2):
        bound = alpha + 3 * np.sqrt(alpha * (1 - alpha) / runs)
        assert np.mean(pvalues <= alpha) <= bound, alpha


def test_zero_differences_and_the_tolerance():
    stored = np.array([[0.2, 1.0], [0.4, 1.0], [0.6, 1.0]])
    same = paired_rerun_test(stored, stored)
    assert (same.pvalue, same.statistic, same.feature, same.differing) == (1.0, 0.0, None, 0)
    fresh = stored.copy()
    fresh[:, 0] += [0.1, 0.1, 0.1]  # only the first feature moves, all one way
    result = paired_rerun_test(fresh, stored)
    assert result.feature == 0 and result.differing == 3
    assert result.statistic == pytest.approx(np.sqrt(3))
    assert result.pvalue == 0.25  # 2 of the 8 sign patterns, the smallest possible
    assert paired_rerun_test(fresh, stored, tolerance=[0.1 + 1e-9, 0.0]).pvalue == 1.0
    assert paired_rerun_test(fresh, stored, tolerance=[0.0, 1.0]).differing == 3
    one_d = paired_rerun_test(fresh[:, 0], stored[:, 0])
    assert one_d.pvalue == result.pvalue and one_d.feature == 0


@pytest.mark.parametrize(
    ("fresh", "stored", "kwargs", "match"),
    [
        (np.zeros((3, 2)), np.zeros((4, 2)), {}, "same shape"),
        (np.zeros((2, 2, 2)), np.zeros((2, 2, 2)), {}, "fresh must have 1 or 2 dimensions"),
        (np.zeros((0, 2)), np.zeros((0, 2)), {}, "at least one seed and one feature"),
        ([[np.nan]], [[0.0]], {}, "fresh must contain only finite numbers"),
        ([[0.0]], [[np.inf]], {}, "stored must contain only finite numbers"),
        ([[0.0]], [[0.0]], {"tolerance": -0.1}, "tolerance must be >= 0"),
        (np.zeros((2, 3)), np.zeros((2, 3)), {"tolerance": [0.1, 0.1]}, "one per feature"),
        ([[0.0]], [[0.0]], {"n_resamples": 0}, "n_resamples must be an integer >= 1"),
        ([[0.0]], [[0.0]], {"seed": -1}, "seed must be an integer >= 0"),
    ],
)
def test_bad_input_is_named(fresh, stored, kwargs, match):
    with pytest.raises(ValueError, match=match):
        paired_rerun_test(fresh, stored, **kwargs)


def test_non_numbers_are_refused():
    with pytest.raises(TypeError, match="fresh must be an array of real numbers"):
        paired_rerun_test([["a"]], [[0.0]])
