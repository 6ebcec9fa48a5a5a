"""posenc.stats.choose_rate: the learning-rate rule that rounding cannot decide."""

import numpy as np
import pytest

from posenc.stats import choose_rate


def test_band_zero_is_the_plain_best_mean_with_ties_to_the_smaller_rate():
    rates = [0.1, 0.003, 0.03]
    scores = [[0.5, 0.7], [0.9, 0.9], [0.6, 0.6]]
    # means 0.6, 0.9, 0.6: the two at 0.6 tie exactly, and the smaller rate is kept
    assert choose_rate(rates, scores, band=0) == (2, [2, 0])
    # an exact tie of means goes to the smaller rate, wherever it stands in the list
    assert choose_rate([0.1, 0.03], [[0.6, 0.6], [0.5, 0.7]], band=0) == (1, [1, 0])
    # accuracies: higher is better
    assert choose_rate([0.01, 0.03], [[0.8], [0.9]], higher_is_better=True, band=0) == (1, [1])


def test_rates_within_the_noise_are_tied_and_the_smallest_is_kept():
    rates = [0.003, 0.01, 0.03, 0.1]
    scores = [
        [1.20, 1.25, 1.22, 1.18],  # too small to train: far outside the band
        [0.31, 0.35, 0.28, 0.36],
        [0.30, 0.20, 0.40, 0.26],  # the lowest mean, noisy
        [0.90, 2.00, 1.50, 0.40],  # diverging sometimes: noisy and high
    ]
    chosen, tied = choose_rate(rates, scores, band=2)
    assert tied == [1, 2] and chosen == 1
    # The band grows with the noise of the two means compared: with band 0 the best wins.
    assert choose_rate(rates, scores, band=0)[0] == 2


def test_a_tolerance_ties_rates_whose_seeds_all_agree():
    # Every seed scores the same (standard error 0): only the tolerance can tie them.
    scores = [[0.0104, 0.0104], [0.0100, 0.0100]]
    assert choose_rate([0.01, 0.1], scores, tolerance=0.0)[0] == 1
    assert choose_rate([0.01, 0.1], scores, tolerance=1e-3) == (0, [0, 1])


def test_a_diverged_copy_makes_its_rate_ineligible():
    scores = [[0.5, 0.5], [0.1, np.inf], [0.2, np.nan]]
    assert choose_rate([0.01, 0.03, 0.1], scores, band=2) == (0, [0])
    # every rate diverged: the smallest is kept (nothing else to go by)
    assert choose_rate([0.1, 0.03], [[np.inf], [np.nan]]) == (1, [1])


def test_last_bit_perturbations_do_not_move_the_choice_of_tied_rates():
    """Where two rates are tied, rounding-sized changes never flip the choice.

    The plain best mean flips on them (about half the time by symmetry);
    the rule of the design does not flip once in 2,000 perturbations.
    """
    rng = np.random.default_rng(20261127)
    base = np.array([[0.40, 0.46, 0.43, 0.41], [0.42, 0.44, 0.40, 0.44], [0.9, 0.8, 0.85, 0.95]])
    rates = [0.01, 0.03, 0.1]
    plain, rule = set(), set()
    for _ in range(2000):
        noisy = base * (1 + 1e-6 * rng.standard_normal(base.shape))
        plain.add(choose_rate(rates, noisy, band=0)[0])
        rule.add(choose_rate(rates, noisy, tolerance=0.01)[0])
    assert plain == {0, 1}  # the exact rule lets rounding decide
    assert rule == {0}


def test_the_rule_is_steadier_than_the_best_mean_when_seeds_are_redrawn():
    """Fresh sweep seeds (as on another machine): the choice moves less often.

    Validation accuracies of four seeds at three rates: the larger two both
    saturate (every seed at 100%, as in many cells of chapter 5), the
    smallest sometimes loses a seed. Redrawing the seeds 2,000 times, the
    plain best mean splits between the two good rates by the last digits
    (54% and 42% with this generator), while the tolerance rule keeps the
    smaller good rate unless one of its seeds fails (81%; deterministic).
    """
    rng = np.random.default_rng(7)
    fail = np.array([0.5, 0.04, 0.04])  # chance that a seed of each rate fails
    rates = [0.003, 0.01, 0.03]
    plain, rule = [], []
    for _ in range(2000):
        failed = rng.random((3, 4)) < fail[:, None]
        draw = np.where(failed, 0.3, 1.0 - 0.002 * rng.integers(0, 2, (3, 4)))
        plain.append(choose_rate(rates, draw, higher_is_better=True)[0])
        rule.append(choose_rate(rates, draw, higher_is_better=True, tolerance=0.01)[0])
    share_plain = max(np.bincount(plain, minlength=3)) / 2000
    share_rule = np.bincount(rule, minlength=3)[1] / 2000
    assert share_plain < 0.6 and share_rule > 0.75


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rates": [0.1], "scores": [[0.1], [0.2]]}, "one row per rate"),
        ({"rates": [], "scores": np.zeros((0, 2))}, "one row per rate"),
        ({"rates": [0.1], "scores": [0.1, 0.2]}, "scores"),
        ({"rates": [0.1], "scores": [[0.1]], "band": -1}, "band"),
        ({"rates": [0.1], "scores": [[0.1]], "tolerance": -0.1}, "tolerance"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        choose_rate(**kwargs)
