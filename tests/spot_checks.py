"""What the spot checks of the committed results share: the rule, its budget, the seed.

A spot check re-trains stored seeds of a committed results file at the stored
learning rate and compares them, seed by seed, with the stored numbers by
:func:`posenc.stats.paired_rerun_test`: it fails when the fresh seeds are
systematically better or worse than the stored ones at p <= ``LEVEL``. On this
machine a correct run repeats every seed exactly and the p-value is 1; on
another processor some seeds end elsewhere, as likely better as worse, and
the p-value is uniform or larger.

The budget: every comparison that one ``make test`` makes with the rule is
listed in ``COMPARISONS``, and each is made at ``LEVEL``, the false-failure
rate over the number of comparisons (Bonferroni, valid whatever the
dependence between them), so that a correct code fails a ``make test`` with
probability at most ``FALSE_FAILURE_RATE`` in total, on any machine.

The random choices (which cells) are seeded from the environment variable
``POSENC_SPOT_SEED`` when it is set (to repeat a run), and otherwise drawn
afresh; the seed is printed and stands in every failure message.
"""

from __future__ import annotations

import os

import numpy as np

from posenc.extrapolation import accuracy_at

#: At most this share of ``make test`` runs fails on a correct code, all spot checks together.
FALSE_FAILURE_RATE = 1e-3

#: Every comparison one ``make test`` makes with the rule (the tests assert they make no more).
COMPARISONS = {
    # tests/test_experiment_results.py: random cells of ch5_experiment.json and of
    # ch5_token_scale.json, and the token-scale arm's reference retrain (one per regime)
    # against ch5_experiment.json
    "ch5 cells": 2,
    "ch5 token-scale cell": 1,
    "ch5 token-scale reference": 9,
    # tests/test_extrapolation.py: a random cell of ch7_extrapolation.json
    "ch7 cell": 1,
    # tests/test_longcontext.py: a random run of ch7_longcontext.json
    "ch7 text run": 1,
    # tests/test_spot_check_power.py: the runs without a planted bug
    "ch7 unmutated": 1,
    "ch5 unmutated": 1,
}

#: The level of each comparison.
LEVEL = FALSE_FAILURE_RATE / sum(COMPARISONS.values())

SEED_VARIABLE = "POSENC_SPOT_SEED"


def spot_seed() -> int:
    """The seed of a spot check's random choices: ``POSENC_SPOT_SEED``, or a fresh one (printed)."""
    value = os.environ.get(SEED_VARIABLE, "").strip()
    seed = int(value) if value else int.from_bytes(os.urandom(4), "little")
    print(f"spot check: {SEED_VARIABLE}={seed}")
    return seed


def ch5_features(
    fresh: dict, stored: dict, n_test: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The numbers of every seed of two runs of one chapter-5 cell, side by side.

    Per seed: the test accuracy at every recorded step (the whole learning
    curve; differences below half an answer of the test set are none), the
    final training loss (log10 of loss + 1e-4, which spreads the small losses
    and stays finite; differences below 0.01, about 2 %, are the rounding of
    the stored six decimals), and, where both runs recorded it, the
    token-to-code length ratio after training (log10; the stored four
    decimals, so differences below 1e-3 are none). Returns the fresh and the
    stored features ``(seeds, features)``, the tolerance per feature and the
    feature names.
    """

    def loss(cell: dict) -> np.ndarray:
        values = np.asarray(cell["final_train_loss"], dtype=float)
        values = np.where(np.isfinite(values), np.minimum(values, 1e3), 1e3)  # a diverged seed
        return np.log10(values + 1e-4)

    steps = list(stored["steps"])
    ratio = "token_code_ratio" in fresh and "token_code_ratio" in stored
    features = []
    for cell in (fresh, stored):
        columns = [np.asarray(cell["test_accuracy"], dtype=float).T, loss(cell)[:, None]]
        if ratio:
            columns.append(np.log10(np.asarray(cell["token_code_ratio"][1], dtype=float))[:, None])
        features.append(np.hstack(columns))
    tolerance = [0.5 / n_test] * len(steps) + [0.01] + [1e-3] * ratio
    names = [f"test accuracy at step {s}" for s in steps] + ["final training loss"]
    names += ["token-to-code ratio after training"] * ratio
    return features[0], features[1], np.array(tolerance), names


def ch7_features(per_position, config) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per seed, the accuracy in each band of test positions of a chapter-7 cell.

    The bands are the positions below ``L``, from ``L`` to ``2L``, and from
    ``2L`` to ``4L`` (``config.factors``); a band that the model cannot run
    (learned codes past their table) is left out. Identical answers give
    identical numbers, so differences below 1e-6 (the stored rounding) are
    none. Returns the features ``(seeds, bands)``, the tolerance and the names.
    """
    accuracy = np.array(per_position, dtype=float)
    columns, names, start = [], [], None
    for factor in config.factors:
        length = config.train_length * factor
        band = accuracy_at(accuracy, length, beyond=start)
        if not np.isnan(band).any():
            columns.append(band)
            names.append(f"accuracy at positions {start or 0}..{length - 1}")
        start = length
    return np.array(columns).T, np.full(len(columns), 1e-6), names


def describe(result, names: list[str]) -> str:
    """One line on a :class:`posenc.stats.RerunComparison`, for messages."""
    where = "" if result.feature is None else f", most of all in the {names[result.feature]}"
    return (
        f"p = {result.pvalue:.3g} (level {LEVEL:.3g}), {result.differing} of {result.seeds} "
        f"seeds differ{where}"
    )
