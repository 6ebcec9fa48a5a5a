"""The committed results of chapter 5's designed experiment agree with a fresh run.

``make experiments`` trains every cell of :class:`posenc.experiment.Design`
(too slow for a test) into ``results/ch5_experiment.json``; chapter 5 reads
that file. These tests check that the file holds the design the code
states, and re-train every seed of a random subset of its cells at the
stored rate: training depends on the order of floating-point sums, so a
fresh run on another processor need not match digit by digit, but it must
not be systematically better or worse than the stored seeds (the rule and
its false-failure budget: ``tests/spot_checks.py``). The subset is drawn
afresh on every run, or from the seed in ``POSENC_SPOT_SEED`` (printed, and
in every failure message); by default from the cells with ``L = 8``, which
train in seconds, and from every cell with ``POSENC_RERUN_ANY=1``.
"""

import os

import numpy as np
import pytest

from posenc.experiment import (
    LONG_BUDGET,
    TOKEN_SCALE,
    TOKEN_SCALE_REFERENCE,
    Design,
    load_results,
    run_cell,
)
from posenc.stats import paired_rerun_test

from .spot_checks import COMPARISONS, LEVEL, SEED_VARIABLE, ch5_features, describe, spot_seed


@pytest.fixture(scope="module")
def results():
    return load_results("ch5_experiment.json")


def test_results_hold_the_stated_design_and_every_cell(results):
    design = Design.from_dict(results["design"])
    assert design == Design()
    jobs = [tuple(j) for j in design.jobs()]
    stored = [
        (c["length"], c["d_model"], c["n_layers"], c["variant"], c["matching"])
        for c in results["cells"]
    ]
    assert stored == jobs
    for cell in results["cells"]:
        acc = np.asarray(cell["test_accuracy"])
        assert acc.shape == (design.steps // design.eval_every + 1, design.seeds)
        assert np.all((acc >= 0) & (acc <= 1))
        assert cell["sweep_rates"][: len(design.learning_rates)] == list(design.learning_rates)
        assert cell["learning_rate"] in cell["sweep_rates"]
        losses = [np.inf if x is None else x for x in cell["sweep_validation_loss"]]
        assert len(losses) == len(cell["sweep_rates"])
        # The chosen rate has the lowest mean validation loss of the sweep.
        assert min(losses) == losses[cell["sweep_rates"].index(cell["learning_rate"])]


def test_long_budget_file_holds_its_design_and_every_cell():
    long = load_results("ch5_long_budget.json")
    assert Design.from_dict(long["design"]) == LONG_BUDGET
    stored = [
        (c["length"], c["d_model"], c["n_layers"], c["variant"], c["matching"])
        for c in long["cells"]
    ]
    assert stored == [tuple(j) for j in LONG_BUDGET.jobs()]
    # The follow-up covers every regime in which the main design found a win.
    from posenc.experiment import compare_design

    wins = {
        (c.length, c.d_model, c.n_layers)
        for c in compare_design(load_results("ch5_experiment.json"))
        if c.verdict == "concat better"
    }
    assert wins == set(LONG_BUDGET.regimes)


def test_token_scale_file_holds_its_two_designs_and_repeats_the_main_added_models(results):
    arm = load_results("ch5_token_scale.json")
    main = {
        (c["length"], c["d_model"], c["n_layers"]): c
        for c in results["cells"]
        if c["variant"] == "sinusoidal-add"
    }
    for part, design in ((arm, TOKEN_SCALE), (arm["reference"], TOKEN_SCALE_REFERENCE)):
        assert Design.from_dict(part["design"]) == design
        stored = [
            (c["length"], c["d_model"], c["n_layers"], c["variant"], c["matching"])
            for c in part["cells"]
        ]
        assert stored == [tuple(j) for j in design.jobs()]
        for cell in part["cells"]:
            assert cell["embedding_scale"] == design.embedding_scale(cell["d_model"])
            before, after = np.asarray(cell["token_code_ratio"])
            assert before.shape == after.shape == (design.seeds,)
    # The reference retrains the main design's added models at the same rate and
    # seeds: a second run of each cell, compared seed by seed like a spot check (the
    # same numbers where both files were made on one machine).
    reference = arm["reference"]["cells"]
    assert len(reference) <= COMPARISONS["ch5 token-scale reference"]
    for cell in reference:
        old = main[cell["length"], cell["d_model"], cell["n_layers"]]
        assert cell["learning_rate"] == old["learning_rate"]
        again, before, tolerance, names = ch5_features(cell, old, TOKEN_SCALE_REFERENCE.n_test)
        result = paired_rerun_test(again, before, tolerance=tolerance)
        assert result.pvalue > LEVEL, (
            f"the reference retrain of L={cell['length']}, d={cell['d_model']}, "
            f"{cell['n_layers']} layer(s) differs from the main file: {describe(result, names)}"
        )


def test_readout_file_has_its_grid():
    draws = load_results("ch5_readout.json")
    assert draws["n_draws"] >= 20
    shape = (len(draws["d_values"]), draws["n_draws"], 2)
    assert all(np.asarray(v).shape == shape for v in draws["by_width"].values())


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("ch5_experiment.json", "ch5 cells"),
        ("ch5_token_scale.json", "ch5 token-scale cell"),
    ],
)
def test_random_cells_retrain_like_their_stored_seeds(name, key):
    """Every seed of randomly chosen cells, re-trained at the stored rate, against its stored run.

    Compared seed by seed (:func:`posenc.stats.paired_rerun_test`): the whole test
    accuracy curve, the final training loss and the token-to-code ratio after
    training. A fresh run must not be systematically better or worse than the
    stored seeds at p <= ``LEVEL``; on this machine it repeats them exactly.
    """
    results = load_results(name)
    design = Design.from_dict(results["design"])
    seed = spot_seed()
    rng = np.random.default_rng(seed)
    pool = [
        i
        for i, c in enumerate(results["cells"])
        if os.environ.get("POSENC_RERUN_ANY") or c["length"] <= 8
    ]
    for i in sorted(rng.choice(pool, size=min(COMPARISONS[key], len(pool)), replace=False)):
        stored = results["cells"][i]
        job = (
            stored["length"],
            stored["d_model"],
            stored["n_layers"],
            stored["variant"],
            stored["matching"],
        )
        fresh = run_cell(design, job, learning_rate=stored["learning_rate"])
        assert fresh["steps"] == stored["steps"], f"{SEED_VARIABLE}={seed}"
        again, before, tolerance, names = ch5_features(fresh, stored, design.n_test)
        result = paired_rerun_test(again, before, tolerance=tolerance)
        print(f"{name} {job}: {describe(result, names)}")
        assert result.pvalue > LEVEL, (
            f"{SEED_VARIABLE}={seed}: {name} cell {job} re-trained at rate "
            f"{stored['learning_rate']} is systematically off its stored seeds: "
            f"{describe(result, names)}"
        )
