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

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from posenc.experiment import LONG_BUDGET, TOKEN_SCALE, TOKEN_SCALE_REFERENCE, Design, run_cell
from posenc.experiment_verdicts import compare_design, load_results
from posenc.stats import choose_rate, paired_rerun_test

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
        check_sweep(cell, design)


def check_sweep(cell, design):
    """The stored sweep chose its rate, and went past the grid, as the design's rule says.

    The rule (:func:`posenc.stats.choose_rate`): the smallest rate whose mean
    validation accuracy over the sweep seeds lies within ``tie_tolerance`` of the
    best; the sweep goes on below the grid while its smallest rate is tied with the
    best, and above it while the best is the largest rate tried.
    """
    rates = cell["sweep_rates"]
    scores = np.asarray(cell["sweep_validation_per_seed"], dtype=float)
    assert design.selection == "accuracy" and scores.shape == (len(rates), design.sweep_seeds)
    np.testing.assert_allclose(scores.mean(axis=1), cell["sweep_validation"], atol=1e-6)
    chosen, tied = choose_rate(
        rates,
        scores,
        higher_is_better=True,
        band=design.tie_band,
        tolerance=design.tie_tolerance,
    )
    assert cell["learning_rate"] == rates[chosen]
    assert cell["sweep_tied"] == [rates[j] for j in tied]
    mean = scores.mean(axis=1)
    top = min(range(len(rates)), key=lambda j: (-mean[j], rates[j]))
    if min(rates) in cell["sweep_tied"]:
        assert set(design.lower_rates) <= set(rates)  # no smaller rate was left to try
    if rates[top] == max(rates):
        assert set(design.higher_rates) <= set(rates)  # no larger rate was left to try
    extra = rates[len(design.learning_rates) :]
    assert set(extra) <= set(design.lower_rates) | set(design.higher_rates)


def test_long_budget_file_holds_its_design_and_every_cell():
    long = load_results("ch5_long_budget.json")
    assert Design.from_dict(long["design"]) == LONG_BUDGET
    stored = [
        (c["length"], c["d_model"], c["n_layers"], c["variant"], c["matching"])
        for c in long["cells"]
    ]
    assert stored == [tuple(j) for j in LONG_BUDGET.jobs()]
    for cell in long["cells"]:
        check_sweep(cell, LONG_BUDGET)
    # The follow-up covers every regime in which the main design found a win.
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


def test_token_scale_sweeps_follow_the_rule():
    arm = load_results("ch5_token_scale.json")
    for cell in arm["cells"]:
        check_sweep(cell, TOKEN_SCALE)


ASSIGNMENT_5 = (
    Path(__file__).resolve().parents[1]
    / "assignments/source/05_addition_or_concatenation/05_addition_or_concatenation.ipynb"
)


def test_assignment_5_copies_the_results_file(results):
    """The per-seed counts and the p-values that assignment 5 copies are the file's."""
    namespace = {"np": np}
    for cell in json.loads(ASSIGNMENT_5.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and re.search(r"^(CORRECT|OTHER_WELCH_P) =", source, re.M):
            exec(source, namespace)
    n_test = namespace["N_TEST"]
    comparisons = compare_design(results)
    by_key = {(c.code, c.length, c.d_model, c.n_layers): c for c in comparisons}
    copied = 0
    for name, (concat, added) in namespace["CORRECT"].items():
        found = re.fullmatch(r"(\w+), L=(\d+), d=(\d+)(, 2 layers)?", name)
        if found is None:
            assert name.startswith("synthetic"), name
            continue
        code, length, d_model, two = found.groups()
        c = by_key[code, int(length), int(d_model), 2 if two else 1]
        assert concat == np.rint(c.concat * n_test).astype(int).tolist(), name
        assert added == np.rint(c.added * n_test).astype(int).tolist(), name
        copied += 1
    assert copied >= 4

    def three_digits(values):
        return [float(f"{v:.3g}") for v in values]

    # Question 5 corrects one comparison with the other 17 of the family.
    fits = [
        i
        for i in range(len(comparisons))
        if three_digits(c.p for j, c in enumerate(comparisons) if j != i)
        == namespace["OTHER_WELCH_P"].tolist()
        and three_digits(c.p_tost for j, c in enumerate(comparisons) if j != i)
        == namespace["OTHER_TOST_P"].tolist()
    ]
    assert len(fits) == 1
    c = comparisons[fits[0]]
    layers = ", 2 layers" if c.n_layers == 2 else ""
    assert f"{c.code}, L={c.length}, d={c.d_model}{layers}" in namespace["CORRECT"]


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
