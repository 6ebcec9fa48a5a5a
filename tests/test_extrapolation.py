"""Tests for posenc.extrapolation: statistics, and a spot check of the committed results."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from posenc.extrapolation import (
    EXTENSION_VARIANTS,
    ExtrapolationConfig,
    accuracy_at,
    budget_summary,
    build_model,
    classify,
    config_from_dict,
    drop_tests,
    drop_unlearned_seeds,
    extension_summary,
    length_summary,
    ntk_sweep_summary,
    run_cell,
    total_steps,
)
from posenc.stats import (
    choose_rate,
    paired_rerun_test,
)

from .spot_checks import COMPARISONS, LEVEL, SEED_VARIABLE, ch7_features, describe, spot_seed

RESULTS = Path(__file__).resolve().parents[1] / "results" / "ch7_extrapolation.json"
# The sensitivity analysis: the same grid, rates chosen by validation loss.
BY_LOSS = RESULTS.with_name("ch7_rate_by_loss.json")


def test_accuracy_at():
    per_position = [[None, 1.0, 1.0, 0.0, 0.0], [None, 1.0, 0.5, 0.5, 0.0]]
    np.testing.assert_allclose(accuracy_at(per_position, 3), [1.0, 0.75])
    np.testing.assert_allclose(accuracy_at(per_position, 5, beyond=3), [0.0, 0.25])
    np.testing.assert_allclose(accuracy_at([[None, 1.0, None]], 2), [1.0])
    assert np.isnan(accuracy_at([[None, 1.0, None]], 3)).all()
    with pytest.raises(ValueError, match="length"):
        accuracy_at(per_position, 6)


def test_learned_codes_cannot_be_tested_past_their_table():
    assert RESULTS.exists(), "run `make experiments-synthetic` to create the results file"
    payload = json.loads(RESULTS.read_text())
    config = config_from_dict(payload["config"])
    for cell in payload["cells"]:
        per_position = np.array(cell["accuracy"], dtype=float)
        assert per_position.shape == (len(config.seeds), config.max_test_length)
        if cell["method"] == "learned":
            assert np.isnan(per_position[:, config.train_length :]).all()
            assert np.isnan(accuracy_at(per_position, 2 * config.train_length)).all()
        else:
            assert not np.isnan(accuracy_at(per_position, config.max_test_length)).any()


def test_spot_check_a_random_cell_of_the_committed_results():
    """Re-train every seed of one randomly chosen cell and compare it, seed by seed, with the file.

    The seeds are trained at the stored rate up to the first checkpoint of the
    budget curve (a quarter of the budget: the whole budget would take four times
    as long) and compared with the accuracies stored there, in each band of test
    positions, by :func:`posenc.stats.paired_rerun_test`: the fresh run must not
    be systematically better or worse than the stored seeds at p <= ``LEVEL``
    (``tests/spot_checks.py``). On this machine it repeats them exactly.
    """
    payload = json.loads(RESULTS.read_text())
    config = config_from_dict(payload["config"])
    seed = spot_seed()
    rng = np.random.default_rng(seed)
    cells = rng.choice(len(payload["cells"]), size=COMPARISONS["ch7 cell"], replace=False)
    for cell in (payload["cells"][i] for i in cells):
        first = config.budget[0]
        fresh = run_cell(
            replace(config, steps=first, checkpoints=(first,)),
            cell["task"],
            cell["method"],
            learning_rate=cell["learning_rate"],
            extras=False,
        )
        assert fresh["seeds"] == cell["seeds"] == list(config.seeds)
        again, tolerance, names = ch7_features(fresh["accuracy"], config)
        before, _, _ = ch7_features(cell["budget"][str(first)], config)
        result = paired_rerun_test(again, before, tolerance=tolerance)
        label = f"{cell['task']}/{cell['method']} after {first} updates"
        print(f"{label}: {describe(result, names)}")
        assert result.pvalue > LEVEL, (
            f"{SEED_VARIABLE}={seed}: {label} at rate {cell['learning_rate']} is "
            f"systematically off its stored seeds: {describe(result, names)}"
        )


def test_drop_beyond_train_is_the_undiluted_change():
    """The change over all positions is the beyond-L change diluted by the shared prefix.

    With ``n`` scored positions below ``L`` and ``k`` from ``L`` on, the accuracy over
    all of them is the weighted mean, so the full change is ``k / (n + k)`` times the
    change on the unseen positions alone.
    """
    payload = json.loads(RESULTS.read_text())
    config = config_from_dict(payload["config"])
    cells = payload["cells"]
    full = drop_tests(config, cells)
    beyond = drop_tests(config, cells, beyond_train=True)
    assert [(r["task"], r["method"], r["factor"]) for r in full] == [
        (r["task"], r["method"], r["factor"]) for r in beyond
    ]
    for a, b in zip(full, beyond, strict=True):
        cell = next(c for c in cells if (c["task"], c["method"]) == (a["task"], a["method"]))
        scored = ~np.isnan(np.array(cell["accuracy"], dtype=float)[0])
        length = config.train_length * a["factor"]
        n = scored[: config.train_length].sum()
        k = scored[config.train_length : length].sum()
        assert a["change"] == pytest.approx(k / (n + k) * b["change"], rel=1e-9, abs=1e-12)
    with pytest.raises(TypeError, match="beyond_train"):
        drop_tests(config, cells, beyond_train=1)


def _chosen(cell: dict, rates, rule: str = "accuracy", config=None) -> float:
    """The rate the rule picks: the smallest rate tied with the best accuracy or loss.

    A fine-tune selection stores each rate's mean over the validation copies only;
    with ``tie_band == 0`` the rule reads nothing but the means, so they decide alike.
    """
    config = ExtrapolationConfig(rate_selection=rule) if config is None else config
    key = "validation_per_seed" if rule == "accuracy" else "validation_loss_per_seed"
    if key in cell:
        scores = [cell[key][repr(r)] for r in rates]
    else:
        assert config.tie_band == 0
        mean = "validation" if rule == "accuracy" else "validation_loss"
        scores = [[cell[mean][repr(r)]] for r in rates]
    i, tied = choose_rate(
        rates,
        scores,
        higher_is_better=rule == "accuracy",
        band=config.tie_band,
        tolerance=config.tie_tolerance,
    )
    assert cell["tied_rates"] == [rates[j] for j in tied]
    return rates[i]


@pytest.mark.parametrize(("path", "rule"), [(RESULTS, "accuracy"), (BY_LOSS, "loss")])
def test_committed_results_follow_the_design(path, rule):
    """Each file was written by the design of ExtrapolationConfig (with its rate rule)."""
    payload = json.loads(path.read_text())
    config = config_from_dict(payload["config"])
    assert config == ExtrapolationConfig(rate_selection=rule)
    assert payload["seconds"] < 15 * 60 and payload["jobs"] == 2
    assert [(c["task"], c["method"]) for c in payload["cells"]] == [
        (t, m) for t in config.tasks for m in config.methods
    ]
    for cell in payload["cells"]:
        assert set(cell["budget"]) == {str(s) for s in config.budget}
        assert cell["accuracy"] == cell["budget"][str(config.steps)]
        rule = config.rate_selection
        assert cell["learning_rate"] == _chosen(cell, config.learning_rates, rule, config)
        if cell["method"] != "rope":
            continue
        assert set(cell["ntk_sweep"]) == {repr(float(a)) for a in config.ntk_alphas}
        factors = [f for f in config.factors if f != 1]
        assert set(cell["extensions"]) == {f"{e}@{f}" for e in config.extensions for f in factors}
        for key, chosen in cell["finetune_selection"].items():
            rates = config.finetune_learning_rates
            assert chosen["learning_rate"] == _chosen(chosen, rates, rule, config), key


def test_summaries_read_the_same_numbers():
    """The budget curve ends at the main result; the NTK sweep starts at no scaling."""
    payload = json.loads(RESULTS.read_text())
    config = config_from_dict(payload["config"])
    cells = payload["cells"]
    main = length_summary(config, cells)
    extension = extension_summary(config, cells)
    sweep = ntk_sweep_summary(config, cells)
    for i, factor in enumerate(config.factors):
        budget = budget_summary(config, cells, factor)
        for task in config.tasks:
            for method in config.methods:
                np.testing.assert_array_equal(budget[task][method][-1], main[task][method][i])
            if factor != 1:
                j = [f for f in config.factors if f != 1].index(factor)
                assert len(sweep[task][factor]) == 1 + len(config.ntk_alphas)
                np.testing.assert_array_equal(
                    sweep[task][factor][0], extension[task]["no scaling"][j]
                )
    with pytest.raises(ValueError, match="factor"):
        budget_summary(config, cells, 3)


def test_a_small_design_end_to_end():
    """Every arm of the design on a tiny budget: structure, rate choices, progress total."""
    config = ExtrapolationConfig(
        steps=6,
        checkpoints=(3, 6),
        seeds=(0, 1),
        learning_rates=(1e-3, 1e-2),
        finetune_learning_rates=(1e-3, 1e-2),
        finetune_steps=2,
        n_test=4,
        ntk_alphas=(2.0, 8.0),
        methods=("rope",),
        tasks=("offset",),
    )
    work = []
    cell = run_cell(config, "offset", "rope", progress=work.append)
    assert sum(work) == pytest.approx(total_steps(config))
    assert cell["validation_seeds"] == [1000, 1001, 1002, 1003, 1100, 1101, 1102, 1103]
    assert cell["learning_rate"] == _chosen(cell, config.learning_rates, config.rate_selection)
    assert set(cell["budget"]) == {"3", "6"} and len(cell["accuracy"]) == 2
    assert set(cell["finetune"]) == {"linear@2", "none@2", "linear@4", "none@4"}
    summary = extension_summary(config, [cell])["offset"]
    assert set(summary) == set(EXTENSION_VARIANTS)
    with pytest.raises(ValueError, match="checkpoints"):
        run_cell(ExtrapolationConfig(steps=6, checkpoints=(3, 9)), "offset", "nope")


def test_the_rate_is_chosen_by_either_rule():
    """Both rules read the same validation copies; each picks by its own measure."""
    config = ExtrapolationConfig(
        steps=4, checkpoints=(4,), seeds=(0,), learning_rates=(1e-3, 1e-2), n_test=4
    )
    by_accuracy = run_cell(config, "first", "nope", extras=False)
    assert by_accuracy["learning_rate"] == _chosen(by_accuracy, config.learning_rates)
    by_loss = run_cell(replace(config, rate_selection="loss"), "first", "nope", extras=False)
    assert by_loss["validation_loss"] == by_accuracy["validation_loss"]  # same copies
    assert by_loss["learning_rate"] == _chosen(by_loss, config.learning_rates, "loss")
    with pytest.raises(ValueError, match="rate_selection"):
        ExtrapolationConfig(rate_selection="best")


def test_subset_copies_and_relabels():
    model = build_model(ExtrapolationConfig(), "rope", (0, 1, 2))
    part = model.subset([2, 0, 2], seeds=(7, 8, 9))
    assert part.seeds == (7, 8, 9) and part.n_models == 3
    np.testing.assert_array_equal(part.params["w_q_0"][0], model.params["w_q_0"][2])
    part.params["w_q_0"][0] += 1.0  # a copy, not a view
    assert not np.allclose(part.params["w_q_0"][0], model.params["w_q_0"][2])
    with pytest.raises(ValueError, match="distinct"):
        model.subset([0, 0])
    with pytest.raises(ValueError, match="copies"):
        model.subset([3])
    with pytest.raises(ValueError, match="one seed per copy"):
        model.subset([0, 1], seeds=(5,))


def test_classify_gives_every_verdict_of_the_design():
    def row(p, p_tost, p_beyond):
        return {"p_holm": p, "p_tost_holm": p_tost, "p_beyond_holm": p_beyond}

    assert classify(row(0.01, 0.01, 0.9), 0.05) == "small change"
    assert classify(row(0.01, 0.50, 0.20), 0.05) == "change"
    assert classify(row(0.01, 0.90, 0.01), 0.05) == "change beyond the margin"
    assert classify(row(0.40, 0.01, 1.0), 0.05) == "no change"
    assert classify(row(0.40, 0.40, 0.5), 0.05) == "inconclusive"
    with pytest.raises(ValueError, match="margin"):
        classify(row(0.4, 0.4, 1.0), -0.05)


def test_drop_unlearned_seeds_removes_only_failed_seeds_of_gated_cells():
    """Every per-seed record loses the same rows; cells below the gate are untouched."""
    config = ExtrapolationConfig(seeds=(0, 1, 2), factors=(1, 2), train_length=4)
    good, bad = [None, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5], [None, 0.2, 0.2, 0.2, 0.1] + [0.1] * 3
    gated = {
        "task": "offset",
        "method": "rope",
        "seeds": [0, 1, 2],
        "accuracy": [good, bad, good],
        "budget": {"5": [good, bad, good]},
        "extensions": {"ntk@2": [good, bad, good]},
        "finetune": {"linear@2": [bad, bad, good]},
    }
    failed = dict(gated, method="nope", accuracy=[bad, bad, good])
    kept, untouched = drop_unlearned_seeds(config, [gated, failed], gate=0.6)
    assert kept["seeds"] == [0, 2] and kept["accuracy"] == [good, good]
    assert kept["budget"]["5"] == [good, good] and kept["extensions"]["ntk@2"] == [good, good]
    assert kept["finetune"]["linear@2"] == [bad, good]
    assert untouched is failed and gated["seeds"] == [0, 1, 2]
    with pytest.raises(ValueError, match="gate"):
        drop_unlearned_seeds(config, [gated], gate=1.5)
