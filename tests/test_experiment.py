"""Tests of chapter 5's experiment: analysis, width matching, runner, verdicts, statistics."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import sinusoidal
from posenc.experiment import CONFIGURATIONS, ExperimentResult, run_experiment, variant_spec
from posenc.experiment_analysis import (
    SCORE_TERMS,
    accuracy_with_terms,
    model_score_terms,
    parameter_count,
    readout_accuracy,
    score_terms,
    split_weight,
    term_sizes,
    token_position_cosines,
)
from posenc.experiment_verdicts import SummaryRow, format_summary, learning_curves, summarise
from posenc.model import AttentionClassifier
from posenc.stats import difference_interval, mean_confidence_interval
from posenc.tasks import make_task

# --- linear algebra --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d_x=st.integers(1, 6), d_p=st.integers(1, 6))
def test_concatenation_then_linear_is_a_sum_of_projections(seed, d_x, d_p):
    rng = np.random.default_rng(seed)
    x, p, w = rng.normal(size=d_x), rng.normal(size=d_p), rng.normal(size=(d_x + d_p, 3))
    w_x, w_p = split_weight(w, d_x)
    assert w_x.shape == (d_x, 3) and w_p.shape == (d_p, 3)
    np.testing.assert_allclose(np.concatenate([x, p]) @ w, x @ w_x + p @ w_p, atol=1e-12)


def test_split_weight_returns_copies_and_rejects_bad_input():
    w = np.arange(6.0).reshape(3, 2)
    w_x, _ = split_weight(w, 2)
    w_x[0, 0] = 99.0
    assert w[0, 0] == 0.0
    with pytest.raises(ValueError, match="d_token must be an integer >= 1 and <= 2"):
        split_weight(w, 3)
    with pytest.raises(ValueError, match="w must have at least 2 rows"):
        split_weight(np.ones((1, 2)), 1)
    with pytest.raises(ValueError, match="w must have 2 dimensions"):
        split_weight(np.ones(4), 1)


@settings(max_examples=40, deadline=None)
@given(
    position=st.sampled_from(["none", "sinusoidal", "learned"]),
    combine=st.sampled_from(["add", "concat"]),
    d_token=st.integers(1, 6),
    d_position=st.integers(1, 6),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 5),
    n_classes=st.integers(2, 5),
)
def test_parameter_count_matches_the_model(
    position, combine, d_token, d_position, d_k, d_v, n_classes
):
    if position == "none":
        combine, d_position = "add", 0
    elif combine == "add":
        d_position = d_token
    model = AttentionClassifier(
        7,
        5,
        n_classes,
        d_token=d_token,
        d_position=d_position or None,
        d_k=d_k,
        d_v=d_v,
        position=position,
        combine=combine,
    )
    count = parameter_count(
        vocab_size=7,
        length=5,
        n_classes=n_classes,
        d_token=d_token,
        d_position=d_position,
        position=position,
        combine=combine,
        d_k=d_k,
        d_v=d_v,
    )
    assert count == model.n_parameters


def test_variant_spec_equal_width_splits_the_columns():
    spec = variant_spec(
        "sinusoidal-concat", "width", d_model=16, vocab_size=8, length=8, n_classes=8
    )
    assert (spec.d_token, spec.d_position, spec.width, spec.d_k, spec.d_v) == (8, 8, 16, 16, 16)
    assert spec.label == "sinusoidal concat, equal width"
    for matching in ("width", "parameters"):
        added = variant_spec(
            "learned-add", matching, d_model=16, vocab_size=8, length=8, n_classes=2
        )
        assert (added.d_token, added.width, added.label) == (16, 16, "learned add")
    none = variant_spec("none", "parameters", d_model=16, vocab_size=8, length=8, n_classes=2)
    assert (none.d_position, none.width, none.label) == (0, 16, "no position")


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
@pytest.mark.parametrize(
    ("d_model", "vocab", "length", "classes"),
    [(16, 8, 8, 8), (16, 8, 8, 2), (12, 30, 10, 3), (32, 100, 50, 10)],
)
def test_variant_spec_equal_parameters_picks_the_closest_width(
    kind, d_model, vocab, length, classes
):
    sizes = dict(vocab_size=vocab, length=length, n_classes=classes)
    spec = variant_spec(f"{kind}-concat", "parameters", d_model=d_model, **sizes)
    target = variant_spec(f"{kind}-add", "width", d_model=d_model, **sizes).n_parameters

    def count(m):  # independent of the library: the formula written out
        learned = length * m if kind == "learned" else 0
        return vocab * m + learned + 3 * (2 * m) * d_model + d_model * classes + classes

    best = min(range(1, 2 * d_model + 1), key=lambda m: (abs(count(m) - target), m))
    assert spec.d_token == spec.d_position == best
    assert spec.n_parameters == count(best) and spec.width == 2 * best


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        (("sinusoidal-multiply", "width"), ValueError, "variant must be one of"),
        (("learned-concat", "flops"), ValueError, r"matching must be one of \('width'"),
        (("learned-concat", "width", 15), ValueError, "d_model must be even"),
        (("learned-add", "width", 1), ValueError, "d_model must be an integer >= 2"),
    ],
)
def test_variant_spec_bad_input(args, error, pattern):
    variant, matching, *rest = args
    d_model = rest[0] if rest else 16
    with pytest.raises(error, match=pattern):
        variant_spec(variant, matching, d_model=d_model, vocab_size=8, length=8, n_classes=2)


# --- geometry ----------------------------------------------------------------------------


def test_cosines_against_a_direct_computation():
    cos = token_position_cosines(8, n_tokens=5, length=6, seed=2)
    tokens = np.random.default_rng(2).normal(size=(5, 8))
    codes = sinusoidal(6, 8)
    direct = [t @ c / (np.linalg.norm(t) * np.linalg.norm(c)) for t in tokens for c in codes]
    np.testing.assert_allclose(cos, direct, atol=1e-12)


@pytest.mark.parametrize("d", [32, 128, 512])
def test_cosine_spread_is_one_over_root_d(d):
    cos = token_position_cosines(d, n_tokens=200, length=100)
    assert np.all(np.abs(cos) <= 1.0)
    assert abs(cos.mean()) < 3 / math.sqrt(d * 200)
    assert abs(cos.std() * math.sqrt(d) - 1) < 0.1


def test_readout_is_exact_when_wide_and_lossy_when_narrow():
    assert readout_accuracy(64, vocab_size=16, length=16) == (1.0, 1.0)
    assert readout_accuracy(64, vocab_size=16, length=16, scale=50.0) == (1.0, 1.0)
    token, position = readout_accuracy(8, vocab_size=16, length=16)
    assert token < 1.0 and position < 1.0


def test_readout_matches_an_independent_least_squares_fit():
    d, vocab, length, scale = 12, 10, 9, 2.0
    rng = np.random.default_rng(0)
    tokens = rng.normal(scale=scale / math.sqrt(d), size=(vocab, d))
    codes = sinusoidal(length, d)
    rows, token_of, position_of = [], [], []
    for t in range(vocab):
        for k in range(length):
            rows.append(np.append(tokens[t] + codes[k], 1.0))
            token_of.append(t)
            position_of.append(k)
    a = np.array(rows)
    fit_t = np.linalg.pinv(a) @ np.eye(vocab)[token_of]
    fit_p = np.linalg.pinv(a) @ np.eye(length)[position_of]
    expected = (
        np.mean((a @ fit_t).argmax(axis=1) == token_of),
        np.mean((a @ fit_p).argmax(axis=1) == position_of),
    )
    assert readout_accuracy(d, vocab_size=vocab, length=length, scale=scale) == pytest.approx(
        expected
    )


def test_longer_tokens_cost_position_at_short_width():
    short = readout_accuracy(32, scale=0.5)
    long = readout_accuracy(32, scale=32.0)
    assert long[1] < short[1] - 0.2 and long[0] >= short[0]


def test_readout_bad_input():
    with pytest.raises(ValueError, match="scale must be a finite number > 0"):
        readout_accuracy(8, scale=0.0)
    with pytest.raises(ValueError, match="vocab_size must be an integer >= 2"):
        readout_accuracy(8, vocab_size=1)


# --- the four terms ------------------------------------------------------------------------


def test_score_terms_are_the_four_products_and_sum_to_the_score():
    rng = np.random.default_rng(0)
    x, p = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    w_q, w_k = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    terms = score_terms(x, p, w_q, w_k)
    m = w_q @ w_k.T / math.sqrt(3)
    for got, (a, b) in zip(terms, [(x, x), (x, p), (p, x), (p, p)], strict=True):
        np.testing.assert_allclose(got, a @ m @ b.T, atol=1e-12)
    z = x + p
    np.testing.assert_allclose(terms.sum(axis=0), z @ m @ z.T, atol=1e-12)


def test_score_terms_bad_shapes():
    ones = np.ones
    with pytest.raises(ValueError, match=r"p must have shape \(5, 4\)"):
        score_terms(ones((5, 4)), ones((5, 3)), ones((4, 2)), ones((4, 2)))
    with pytest.raises(ValueError, match=r"w_k must have shape \(4, 2\)"):
        score_terms(ones((5, 4)), ones((5, 4)), ones((4, 2)), ones((4, 3)))


@pytest.mark.parametrize(
    ("position", "combine"),
    [("sinusoidal", "add"), ("learned", "add"), ("sinusoidal", "concat"), ("learned", "concat")],
)
def test_model_score_terms_sum_to_the_models_own_scores(position, combine):
    model = AttentionClassifier(
        6,
        5,
        3,
        d_token=4,
        d_position=2 if combine == "concat" else None,
        d_k=3,
        position=position,
        combine=combine,
        embedding_scale=1.5,
        seeds=(0, 1),
    )
    tokens = np.random.default_rng(1).integers(0, 6, size=(7, 5))
    terms = model_score_terms(model, tokens)
    assert terms.shape == (4, 2, 7, 5, 5)
    z = model.attention_input(tokens)
    q = z @ model.params["w_q"][:, None]
    k = z @ model.params["w_k"][:, None]
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(3)
    np.testing.assert_allclose(terms.sum(axis=0), scores, atol=1e-12)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(
        weights / weights.sum(-1, keepdims=True), model.attention_weights(tokens), atol=1e-12
    )


def test_model_score_terms_bad_input():
    with pytest.raises(ValueError, match="model must have a position signal"):
        model_score_terms(
            AttentionClassifier(4, 4, 2, d_token=4, position="none"), np.zeros((1, 4), dtype=int)
        )
    with pytest.raises(TypeError, match="model must be an AttentionClassifier"):
        model_score_terms(None, np.zeros((1, 4), dtype=int))


@pytest.mark.parametrize(("position", "combine"), [("sinusoidal", "add"), ("learned", "concat")])
def test_accuracy_with_terms_keeps_only_the_chosen_terms(position, combine):
    model = AttentionClassifier(
        6, 5, 3, d_token=4, d_k=3, position=position, combine=combine, seeds=(0, 1, 2)
    )
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 6, size=(40, 5))
    labels = rng.integers(0, 3, size=40)
    every = accuracy_with_terms(model, tokens, labels, SCORE_TERMS)
    np.testing.assert_array_equal(every, model.accuracy(tokens, labels))
    # Without the cross terms: an independent forward pass, one copy at a time.
    kept = ("token-token", "position-position")
    ablated = accuracy_with_terms(model, tokens, labels, kept)
    z = model.attention_input(tokens)
    for m in range(3):
        terms = model_score_terms(model, tokens)[:, m]
        scores = terms[0] + terms[3]
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        pooled = (weights @ (z[m] @ model.params["w_v"][m])).mean(axis=1)
        logits = pooled @ model.params["w_out"][m] + model.params["b_out"][m]
        assert ablated[m] == np.mean(logits.argmax(-1) == labels)
    # Tokens and labels per copy give the same answer as shared ones.
    per_copy = accuracy_with_terms(model, np.tile(tokens, (3, 1, 1)), np.tile(labels, (3, 1)), kept)
    np.testing.assert_array_equal(per_copy, ablated)


def test_accuracy_with_terms_bad_input():
    model = AttentionClassifier(4, 4, 2, d_token=4, position="learned")
    tokens, labels = np.zeros((2, 4), dtype=int), np.zeros(2, dtype=int)
    with pytest.raises(TypeError, match="model must be an AttentionClassifier"):
        accuracy_with_terms(None, tokens, labels, SCORE_TERMS)
    with pytest.raises(TypeError, match="keep must be a sequence"):
        accuracy_with_terms(model, tokens, labels, "token-token")
    with pytest.raises(TypeError, match="keep must be a sequence"):
        accuracy_with_terms(model, tokens, labels, 3)
    with pytest.raises(ValueError, match="keep must be one of"):
        accuracy_with_terms(model, tokens, labels, ["token-token", "cross"])
    with pytest.raises(ValueError, match="keep must name at least one"):
        accuracy_with_terms(model, tokens, labels, [])
    with pytest.raises(ValueError, match="keep must name at least one"):
        accuracy_with_terms(model, tokens, labels, ["token-token", "token-token"])
    with pytest.raises(ValueError, match="labels must have shape"):
        accuracy_with_terms(model, tokens, np.zeros(3, dtype=int), SCORE_TERMS)
    with pytest.raises(ValueError, match="model must have a position signal"):
        accuracy_with_terms(
            AttentionClassifier(4, 4, 2, d_token=4, position="none"), tokens, labels, SCORE_TERMS
        )


def test_term_sizes_ignore_row_constants_and_scale_linearly():
    rng = np.random.default_rng(3)
    terms = rng.normal(size=(4, 2, 3, 5, 5))
    sizes = term_sizes(terms)
    assert sizes.shape == (4, 2)
    shifted = terms + rng.normal(size=(4, 2, 3, 5, 1))  # a constant per query row
    np.testing.assert_allclose(term_sizes(shifted), sizes, atol=1e-12)
    np.testing.assert_allclose(term_sizes(3 * terms), 3 * sizes, atol=1e-12)
    single = terms[:, 0, 0]
    centred = single - single.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(term_sizes(single), np.sqrt((centred**2).mean(axis=(1, 2))))
    with pytest.raises(ValueError, match=r"terms must have shape \(4, \.\.\., L, L\)"):
        term_sizes(np.ones((3, 5, 5)))
    assert len(SCORE_TERMS) == 4


# --- statistics ----------------------------------------------------------------------------


# --- the runner ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_result():
    tasks = [
        make_task("absolute", length=5, n_train=60, n_test=40, seed=0),
        make_task("relative", length=5, n_train=60, n_test=40, seed=1),
    ]
    configurations = [("none", "width"), ("learned-add", "width"), ("learned-concat", "parameters")]
    return run_experiment(
        tasks,
        d_model=8,
        seeds=(0, 1, 2),
        configurations=configurations,
        steps=12,
        batch_size=10,
        eval_every=5,
    )


def test_run_experiment_structure(small_result):
    assert isinstance(small_result, ExperimentResult)
    assert small_result.tasks == ("absolute", "relative")
    assert small_result.seeds == (0, 1, 2)
    assert small_result.n_test == {"absolute": 40, "relative": 40}
    assert len(small_result.runs) == 6
    run = small_result.run("relative", "learned concat, equal parameters")
    assert run.model.n_models == 3 and run.model.dtype == np.float32
    assert run.history.steps.tolist() == [0, 5, 10, 12]
    assert run.accuracies.shape == (3,)
    with pytest.raises(KeyError, match="no run for task 'relative' and label 'nothing'"):
        small_result.run("relative", "nothing")


def test_run_experiment_is_deterministic(small_result):
    tasks = [make_task("absolute", length=5, n_train=60, n_test=40, seed=0)]
    again = run_experiment(
        tasks,
        d_model=8,
        seeds=(0, 1, 2),
        configurations=[("learned-add", "width")],
        steps=12,
        batch_size=10,
        eval_every=5,
    )
    np.testing.assert_array_equal(
        again.runs[0].history.train_loss,
        small_result.run("absolute", "learned add").history.train_loss,
    )


def test_summary_and_table(small_result):
    rows = summarise(small_result)
    assert [r.label for r in rows[:3]] == [
        "no position",
        "learned add",
        "learned concat, equal parameters",
    ]
    for row, run in zip(rows, small_result.runs, strict=True):
        mean, low, high = mean_confidence_interval(run.accuracies)
        assert row.mean == pytest.approx(mean)
        assert row.low == pytest.approx(max(low, 0.0)) and row.high == pytest.approx(min(high, 1))
    text = format_summary(rows).splitlines()
    assert len(text) == 8 and text[0].startswith("absolute task")
    assert text[4].startswith("relative task")
    assert f"{100 * rows[1].mean:6.1f}" in text[2]


def test_format_summary_example():
    row = SummaryRow("absolute", "x", 1, 2, 3, 4, np.array([0.5, 0.7]), 0.6, 0.4, 0.8)
    line = format_summary([row]).splitlines()[1]
    assert line.split()[-4:] == ["60.0", "[", "40.0,", "80.0]"]


def test_learning_curves(small_result):
    steps, curves = learning_curves(small_result, "absolute")
    assert steps.tolist() == [0, 5, 10, 12]
    band = curves["learned add"]
    acc = small_result.run("absolute", "learned add").history.test_accuracy
    np.testing.assert_allclose(band, [acc.mean(1), acc.min(1), acc.max(1)])
    with pytest.raises(ValueError, match="task must be one of"):
        learning_curves(small_result, "copy")


def test_runner_bad_input():
    task = make_task("absolute", length=5, n_train=60, n_test=40, seed=0)
    with pytest.raises(TypeError, match="tasks must be a non-empty sequence of TaskData"):
        run_experiment([])
    with pytest.raises(ValueError, match="configurations must not be empty"):
        run_experiment([task], configurations=[])
    with pytest.raises(ValueError, match="variant must be one of"):
        run_experiment([task], configurations=[("rope-add", "width")], steps=1)
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        run_experiment([task], configurations=[("learned-add", "width")], learning_rate=-1.0)
    with pytest.raises(TypeError, match="result must be an ExperimentResult"):
        summarise([])
    assert len(CONFIGURATIONS) == 7


# --- the designed experiment: statistics ------------------------------------------------


from posenc.experiment import Design, run_cell  # noqa: E402
from posenc.experiment_analysis import readout_draws, steps_to_threshold  # noqa: E402
from posenc.experiment_verdicts import (  # noqa: E402
    budget_curve,
    compare_design,
    format_comparisons,
)
from posenc.stats import holm, welch_test  # noqa: E402


def test_steps_to_threshold():
    steps = [0, 50, 100]
    acc = [[0.0, 0.0, 0.9], [0.5, 0.1, 0.9], [0.6, 0.2, 0.9]]
    np.testing.assert_array_equal(steps_to_threshold(steps, acc, 0.5), [50.0, np.inf, 0.0])
    with pytest.raises(ValueError, match="accuracy must have 3 rows"):
        steps_to_threshold(steps, acc[:2], 0.5)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
def test_two_layer_parameter_count_and_matching(kind):
    sizes = dict(vocab_size=32, length=32, n_classes=32)
    for variant, matching in ((f"{kind}-add", "width"), (f"{kind}-concat", "parameters")):
        spec = variant_spec(variant, matching, d_model=16, n_layers=2, **sizes)
        model = AttentionClassifier(
            32,
            32,
            32,
            d_token=spec.d_token,
            d_position=spec.d_position,
            d_k=spec.d_k,
            d_v=spec.d_v,
            position=spec.position,
            combine=spec.combine,
            n_layers=2,
        )
        assert model.n_parameters == spec.n_parameters and spec.d_v == spec.width
    added = variant_spec(f"{kind}-add", "width", d_model=16, n_layers=2, **sizes)
    concat = variant_spec(f"{kind}-concat", "parameters", d_model=16, n_layers=2, **sizes)

    def count(m):  # the formula written out: two layers of 2 w d_k + w w, read-out w C + C
        w = 2 * m
        learned = 32 * m if kind == "learned" else 0
        return 32 * m + learned + 2 * (2 * w * 16 + w * w) + w * 32 + 32

    best = min(range(1, 33), key=lambda m: (abs(count(m) - added.n_parameters), m))
    assert concat.d_token == best and concat.n_parameters == count(best)


def fake_results(differences, seeds=20, sd=0.02, design=None):
    """A results file with one regime per difference, sinusoidal codes only."""
    rng = np.random.default_rng(3)
    regimes = tuple((8 * (i + 1), 16, 1) for i in range(len(differences)))
    design = design or Design(regimes=regimes, seeds=seeds)
    cells = []
    for (length, d, layers), diff in zip(regimes, differences, strict=True):
        for variant, shift in (("sinusoidal-add", 0.0), ("sinusoidal-concat", diff)):
            final = np.clip(0.8 + shift + rng.normal(0, sd, seeds), 0, 1)
            acc = [np.full(seeds, 0.1).tolist(), final.tolist()]
            cells.append(
                {
                    "length": length,
                    "d_model": d,
                    "n_layers": layers,
                    "variant": variant,
                    "steps": [0, 100],
                    "test_accuracy": acc,
                }
            )
    return {"design": design.as_dict(), "cells": cells}


def test_compare_design_verdicts_follow_the_corrected_tests():
    results = fake_results([0.10, -0.10, 0.0, 0.015])
    rows = compare_design(results)
    assert [r.verdict for r in rows[:3]] == ["concat better", "add better", "equivalent"]
    p = [welch_test(r.concat, r.added)[2] for r in rows]
    np.testing.assert_allclose([r.p_holm for r in rows], holm(p))
    for r in rows:
        diff, low, high = difference_interval(r.concat, r.added)
        assert (r.difference, r.low, r.high) == pytest.approx((diff, low, high))
        assert not r.ceiling
    text = format_comparisons(rows)
    assert "concat better" in text and text.count("\n") == len(rows)
    # Too few seeds to decide a small difference.
    small = compare_design(fake_results([0.02], seeds=3, sd=0.05))
    assert small[0].verdict == "undecided"


def test_budget_curve_is_the_difference_at_every_step():
    results = fake_results([0.05])
    steps, curve = budget_curve(results, 8, 16, 1, "sinusoidal")
    assert steps.tolist() == [0, 100] and curve.shape == (3, 2)
    np.testing.assert_allclose(curve[:, 0], 0.0, atol=1e-15)  # both constant at step 0
    assert curve[0, 1] == pytest.approx(compare_design(results)[0].difference)
    with pytest.raises(ValueError, match="no learned pair"):
        budget_curve(results, 8, 16, 1, "learned")


def test_design_round_trips_and_lists_its_cells():
    design = Design()
    assert Design.from_dict(design.as_dict()) == design
    assert len(design.jobs()) == len(design.regimes) * len(design.models)
    assert design.seeds >= 20 and design.margin > 0
    assert all(length >= 1 for length, *_ in design.regimes)


def tiny_design(**changes):
    """A design small enough to train in a test: one regime, a few seeds and updates."""
    values = dict(
        regimes=((5, 8, 1),),
        seeds=3,
        steps=30,
        eval_every=10,
        sweep_seeds=2,
        n_train=60,
        n_validation=30,
        n_test=30,
        learning_rates=(0.001, 0.05),
    )
    return Design(**{**values, **changes})


def test_run_cell_chooses_the_rate_on_validation_and_is_deterministic():
    design = tiny_design()
    job = (5, 8, 1, "learned-concat", "parameters")
    cell = run_cell(design, job)
    assert cell["sweep_rates"][: len(design.learning_rates)] == list(design.learning_rates)
    assert len(cell["sweep_validation"]) == len(cell["sweep_rates"])
    assert len(cell["sweep_validation_loss"]) == len(cell["sweep_rates"])
    # The default: the smallest rate within one point of the best mean validation accuracy.
    assert design.selection == "accuracy" and design.tie_tolerance == 0.01
    acc = np.asarray(cell["sweep_validation"])
    tied = sorted(r for r, a in zip(cell["sweep_rates"], acc, strict=True) if a >= acc.max() - 0.01)
    assert cell["sweep_tied"] == tied and cell["learning_rate"] == tied[0]
    per_seed = np.asarray(cell["sweep_validation_per_seed"])
    np.testing.assert_allclose(per_seed.mean(axis=1), acc, atol=1e-6)
    assert np.array(cell["test_accuracy"]).shape == (4, 3) and cell["steps"] == [0, 10, 20, 30]
    assert cell["n_parameters"] != cell["reference_parameters"] or cell["d_token"] == 8
    assert run_cell(design, job) == cell
    # The rules of the earlier runs are still available: the lowest mean loss ...
    by_loss = run_cell(replace(design, selection="loss", tie_tolerance=0.0), job)
    best = int(np.argmin(by_loss["sweep_validation_loss"]))
    assert by_loss["learning_rate"] == by_loss["sweep_rates"][best]
    # ... and the highest mean accuracy with exact ties only.
    by_accuracy = run_cell(replace(design, tie_tolerance=0.0), job)
    best = int(np.argmax(by_accuracy["sweep_validation"]))
    assert by_accuracy["learning_rate"] == by_accuracy["sweep_rates"][best]
    with pytest.raises(ValueError, match="selection must be one of"):
        Design(selection="median")


def test_a_results_file_without_a_selection_field_selected_by_accuracy():
    values = Design().as_dict()
    del values["selection"]
    assert Design.from_dict(values).selection == "accuracy"
    assert Design.from_dict(Design().as_dict()) == Design()


def test_mean_ablation_keeps_the_average_of_the_dropped_terms():
    model = AttentionClassifier(6, 6, 6, d_token=4, position="learned", seeds=(0, 1))
    rng = np.random.default_rng(4)
    tokens = np.array([rng.permutation(6) for _ in range(50)])
    labels = tokens[:, 2]
    full = model.accuracy(tokens, labels)
    for ablation in ("zero", "mean"):
        np.testing.assert_array_equal(
            accuracy_with_terms(model, tokens, labels, SCORE_TERMS, ablation=ablation), full
        )
    # By hand: the cross terms replaced by their mean over the sequences.
    terms = model_score_terms(model, tokens)
    scores = terms[0] + terms[3] + (terms[1] + terms[2]).mean(axis=1, keepdims=True)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    values = model.attention_input(tokens) @ model.params["w_v"][:, None]
    logits = (weights @ values).mean(-2) @ model.params["w_out"] + model.params["b_out"][:, None]
    expected = (logits.argmax(-1) == labels).mean(-1)
    got = accuracy_with_terms(model, tokens, labels, ("token-token", "position-position"), "mean")
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="ablation must be one of"):
        accuracy_with_terms(model, tokens, labels, SCORE_TERMS, ablation="half")
    deep = AttentionClassifier(6, 6, 6, d_token=4, position="learned", n_layers=2)
    with pytest.raises(ValueError, match="model must have one layer"):
        accuracy_with_terms(deep, tokens, labels, SCORE_TERMS)


def test_the_sweep_extends_the_grid_past_a_chosen_edge():
    """A rate far too small loses; the sweep then tries the larger rates one at a time."""
    design = tiny_design(
        seeds=2, learning_rates=(1e-6, 2e-6), lower_rates=(1e-7,), higher_rates=(0.03, 1e-5)
    )
    cell = run_cell(design, (5, 8, 1, "learned-add", "width"))
    rates, scores = cell["sweep_rates"], cell["sweep_validation"]
    # 2e-6 is the best and the largest: 0.03 is tried; 0.03 is then the best and the
    # largest, so 1e-5 is tried; the smallest rate never ties with the best, so the grid
    # is not extended down (1e-7 is never tried).
    assert rates == [1e-6, 2e-6, 0.03, 1e-5]
    assert scores[2] > max(scores[:2]) + 0.01  # at 30 updates, only the large rate learns
    assert cell["learning_rate"] == 0.03 and cell["sweep_tied"] == [0.03]
    for key in ("sweep_validation_per_seed", "sweep_validation_loss_per_seed"):
        assert np.asarray(cell[key]).shape == (4, design.sweep_seeds)


def test_a_cell_can_be_rerun_at_a_given_rate_and_seeds():
    design = tiny_design(steps=20)
    job = (5, 8, 1, "learned-add", "width")
    full = run_cell(design, job, learning_rate=0.03)
    assert full["sweep_rates"] == [] and full["learning_rate"] == 0.03
    part = run_cell(design, job, learning_rate=0.03, seeds=[2, 0])
    acc, sub = np.asarray(full["test_accuracy"]), np.asarray(part["test_accuracy"])
    np.testing.assert_array_equal(sub, acc[:, [2, 0]])  # a seed trains the same alone
    with pytest.raises(ValueError, match="learning_rate"):
        run_cell(design, job, learning_rate=-1.0)


def test_compare_design_keeps_the_two_matchings_apart():
    results = fake_results([0.10, 0.0])
    for cell in list(results["cells"]):
        if cell["variant"] == "sinusoidal-concat":
            cell["matching"] = "parameters"
            twin = dict(cell, matching="width")
            twin["test_accuracy"] = [row[:] for row in cell["test_accuracy"]]
            twin["test_accuracy"][-1] = [a - 0.2 for a in twin["test_accuracy"][-1]]
            results["cells"].append(twin)
    primary = compare_design(results)
    secondary = compare_design(results, matching="width")
    assert [c.matching for c in primary + secondary] == ["parameters"] * 2 + ["width"] * 2
    for p, w in zip(primary, secondary, strict=True):
        assert w.difference == pytest.approx(p.difference - 0.2)
    # Each family is corrected on its own.
    p_raw = [welch_test(c.concat, c.added)[2] for c in secondary]
    np.testing.assert_allclose([c.p_holm for c in secondary], holm(p_raw))
    _, curve = budget_curve(results, 8, 16, 1, "sinusoidal", matching="width")
    assert curve[0, -1] == pytest.approx(secondary[0].difference)
    with pytest.raises(ValueError, match="matching must be one of"):
        compare_design(results, matching="depth")


def test_readout_draws_in_worker_processes_equal_one_process():
    kwargs = dict(n_draws=2, d_values=(8, 16), ratios=(0.5, 2.0), d_fixed=16)
    one = readout_draws(**kwargs)
    two = readout_draws(processes=2, **kwargs)
    assert one == two
    assert np.asarray(one["by_ratio"]).shape == (2, 2, 2)
    assert one["by_width"]["x1"][1][0] == readout_accuracy(16, scale=1.0, seed=0)


# --- the token-scale arm ------------------------------------------------------------------

from posenc.experiment import TOKEN_SCALE, TOKEN_SCALE_REFERENCE  # noqa: E402
from posenc.experiment_analysis import token_code_ratio  # noqa: E402


def test_token_code_ratio_is_the_ratio_of_mean_lengths():
    model = AttentionClassifier(6, 5, 3, d_token=8, position="sinusoidal", seeds=(0, 1))
    tokens = model.params["token_embedding"]
    codes = sinusoidal(5, 8)
    expected = np.linalg.norm(tokens, axis=-1).mean(axis=-1) / np.linalg.norm(codes, axis=-1).mean()
    np.testing.assert_allclose(token_code_ratio(model), expected, rtol=1e-12)
    # The fixed factor enters the ratio, and learned codes are read from the table.
    short = AttentionClassifier(6, 5, 3, d_token=8, embedding_scale=0.25, seeds=(0, 1))
    np.testing.assert_allclose(token_code_ratio(short), 0.25 * expected, rtol=1e-12)
    learned = AttentionClassifier(6, 5, 3, d_token=8, position="learned", seeds=3)
    table = learned.params["position_embedding"][0]
    want = (
        np.linalg.norm(learned.params["token_embedding"][0], axis=-1).mean()
        / np.linalg.norm(table, axis=-1).mean()
    )
    np.testing.assert_allclose(token_code_ratio(learned), [want], rtol=1e-12)


def test_token_code_ratio_bad_input():
    with pytest.raises(TypeError, match="model must be an AttentionClassifier"):
        token_code_ratio("model")
    with pytest.raises(ValueError, match="no position codes"):
        token_code_ratio(AttentionClassifier(4, 4, 2, d_token=4, position="none"))


def test_token_scale_designs():
    assert TOKEN_SCALE.token_scale == "1/sqrt(d)" and Design().token_scale == "1"
    assert TOKEN_SCALE.embedding_scale(16) == 0.25 and Design().embedding_scale(16) == 1.0
    # Apart from the scale, the arm and its reference keep the main design.
    for arm in (TOKEN_SCALE, TOKEN_SCALE_REFERENCE):
        assert replace(arm, models=Design().models, token_scale="1") == Design()
        assert arm.models == (("sinusoidal-add", "width"),)
    assert Design.from_dict(TOKEN_SCALE.as_dict()) == TOKEN_SCALE
    values = Design().as_dict()
    del values["token_scale"]  # files from before the field existed
    assert Design.from_dict(values) == Design()
    with pytest.raises(ValueError, match="token_scale must be one of"):
        Design(token_scale="0.5")
    with pytest.raises(ValueError, match="d_model"):
        TOKEN_SCALE.embedding_scale(0)


def test_run_cell_trains_with_the_designs_token_scale():
    small = tiny_design(
        regimes=((5, 16, 1),), seeds=2, learning_rates=(0.01,), lower_rates=(), higher_rates=()
    )
    job = (5, 16, 1, "sinusoidal-add", "width")
    plain = run_cell(small, job)
    short = run_cell(replace(small, token_scale="1/sqrt(d)"), job)
    assert plain["embedding_scale"] == 1.0 and short["embedding_scale"] == 0.25
    before_plain, _ = np.array(plain["token_code_ratio"])
    before_short, _ = np.array(short["token_code_ratio"])
    # Same seeds, same initial table: the factor alone shortens the tokens.
    np.testing.assert_allclose(before_short, 0.25 * before_plain, rtol=1e-3)
    assert "token_code_ratio" not in run_cell(small, (5, 16, 1, "none", "width"))


def test_with_added_models_of_swaps_the_added_models_only():
    from posenc.experiment_verdicts import with_added_models_of

    main = {
        "design": Design().as_dict(),
        "cells": [
            {"variant": "sinusoidal-concat", "matching": "parameters", "tag": "main"},
            {"variant": "sinusoidal-add", "matching": "width", "tag": "main"},
            {"variant": "learned-add", "matching": "width", "tag": "main"},
        ],
    }
    arm = {"cells": [{"variant": "sinusoidal-add", "matching": "width", "tag": "arm"}]}
    out = with_added_models_of(main, arm)
    assert out["design"] is main["design"]
    assert [(c["variant"], c["tag"]) for c in out["cells"]] == [
        ("sinusoidal-concat", "main"),
        ("sinusoidal-add", "arm"),
    ]
    with pytest.raises(TypeError, match="arm must be a results dict"):
        with_added_models_of(main, [])
    with pytest.raises(ValueError, match="no added models"):
        with_added_models_of(main, {"cells": main["cells"][:1]})


def test_family_tests_follow_the_design_rule_and_reject_bad_input():
    from posenc.experiment_verdicts import family_tests

    rng = np.random.default_rng(3)
    low, high = rng.normal(0.5, 0.05, 20), rng.normal(0.8, 0.05, 20)
    same = rng.normal(0.6, 0.002, (2, 30))
    tests = family_tests({"up": (high, low), "down": (low, high), "same": tuple(same)}, Design())
    assert tests["up"]["verdict"] == "first better"
    assert tests["down"]["verdict"] == "second better"
    assert tests["same"]["verdict"] == "equivalent" and not tests["same"]["ceiling"]
    # Holm over the family of three: the smallest p-value is multiplied by 3
    raw = [tests[k]["p"] for k in ("up", "down", "same")]
    np.testing.assert_allclose([tests[k]["p_holm"] for k in ("up", "down", "same")], holm(raw))
    with pytest.raises(TypeError, match="design must be a Design"):
        family_tests({"x": (low, high)}, "design")
    with pytest.raises(ValueError, match="at least one"):
        family_tests({}, Design())
