"""posenc.stats.paired_rerun_test: the rule that compares a fresh run of stored seeds."""

import numpy as np
import pytest
from scipy import stats

from posenc.stats import paired_rerun_test


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
