"""Tests of posenc.model: forward pass, every gradient, Adam, training, and bad input."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import self_attention, sinusoidal
from posenc.model import (
    Adam,
    AttentionClassifier,
    check_index_array,
    check_seeds,
    gradient_check,
    train,
)

VARIANTS = [
    ("none", "add"),
    ("sinusoidal", "add"),
    ("sinusoidal", "concat"),
    ("learned", "add"),
    ("learned", "concat"),
]


def small_model(position, combine, *, seeds=(0,), **kwargs):
    options = {"d_token": 3, "d_k": 2, "d_v": 4, "embedding_scale": 1.7}
    if combine == "concat":
        options["d_position"] = 2
    options.update(kwargs)
    return AttentionClassifier(5, 4, 3, position=position, combine=combine, seeds=seeds, **options)


def random_batch(seed, batch=6, vocab=5, length=4, classes=3, n_models=None):
    rng = np.random.default_rng(seed)
    shape = (batch, length) if n_models is None else (n_models, batch, length)
    tokens = rng.integers(0, vocab, size=shape)
    labels = rng.integers(0, classes, size=shape[:-1])
    return tokens, labels


def reference_logits(model, tokens, m=0):
    """Copy m's class scores, sequence by sequence, with posenc.self_attention.

    One layer: the mean of one attention output. Two layers: two attention
    layers with a residual stream, then the mean.
    """
    p = {name: value[m] for name, value in model.params.items()}
    out = []
    for row in tokens:
        x = model.embedding_scale * p["token_embedding"][row]
        if model.position == "none":
            z = x
        else:
            codes = (
                sinusoidal(model.length, model.d_position, model.base)
                if model.position == "sinusoidal"
                else p["position_embedding"]
            )
            z = x + codes if model.combine == "add" else np.hstack([x, codes])
        if model.n_layers == 2:
            z = z + self_attention(z, p["w_q"], p["w_k"], p["w_v"])
            pooled = (z + self_attention(z, p["w_q2"], p["w_k2"], p["w_v2"])).mean(axis=0)
        else:
            pooled = self_attention(z, p["w_q"], p["w_k"], p["w_v"]).mean(axis=0)
        out.append(pooled @ p["w_out"] + p["b_out"])
    return np.array(out)


def reference_loss(model, tokens, labels):
    """Summed mean cross-entropy of all copies, written independently of the model."""
    total = 0.0
    for m in range(model.n_models):
        toks = tokens if tokens.ndim == 2 else tokens[m]
        labs = labels if labels.ndim == 1 else labels[m]
        logits = reference_logits(model, toks, m)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        total += -log_probs[np.arange(labs.size), labs].mean()
    return total


# --- forward -----------------------------------------------------------------------


@pytest.mark.parametrize(("position", "combine"), VARIANTS)
def test_logits_match_reference_built_on_self_attention(position, combine):
    model = small_model(position, combine, seeds=(3, 4))
    tokens, _ = random_batch(1)
    logits = model.logits(tokens)
    assert logits.shape == (2, 6, 3)
    for m in range(2):
        np.testing.assert_allclose(logits[m], reference_logits(model, tokens, m), atol=1e-12)


@pytest.mark.parametrize(("position", "combine"), VARIANTS)
def test_loss_matches_reference(position, combine):
    model = small_model(position, combine, seeds=(0, 1))
    tokens, labels = random_batch(2, n_models=2)
    assert model.loss(tokens, labels).sum() == pytest.approx(
        reference_loss(model, tokens, labels), rel=1e-12
    )


def test_attention_weights_are_rows_of_a_softmax_and_input_has_the_right_width():
    model = small_model("learned", "concat", seeds=(0, 1))
    tokens, _ = random_batch(3)
    weights = model.attention_weights(tokens)
    assert weights.shape == (2, 6, 4, 4)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    z = model.attention_input(tokens)
    assert z.shape == (2, 6, 4, 5)
    np.testing.assert_allclose(
        z[..., 3:], np.broadcast_to(model.params["position_embedding"][:, None], (2, 6, 4, 2))
    )


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_without_positions_the_output_ignores_order(seed):
    model = AttentionClassifier(6, 6, 4, d_token=5, position="none", seeds=seed)
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 6, size=(3, 6))
    shuffled = rng.permuted(tokens, axis=1)
    np.testing.assert_allclose(model.logits(shuffled), model.logits(tokens), atol=1e-12)


def test_positions_break_the_symmetry():
    tokens = np.array([[0, 1, 2, 3]])
    for position in ("sinusoidal", "learned"):
        model = AttentionClassifier(4, 4, 3, d_token=4, position=position)
        gap = np.abs(model.logits(tokens) - model.logits(tokens[:, ::-1])).max()
        assert gap > 1e-6


def test_stacked_copies_equal_single_seed_models():
    tokens, labels = random_batch(4, batch=8)
    stack = small_model("learned", "add", seeds=(7, 8, 9))
    for m, seed in enumerate((7, 8, 9)):
        alone = small_model("learned", "add", seeds=seed)
        for name in alone.params:
            np.testing.assert_array_equal(stack.params[name][m], alone.params[name][0])
        np.testing.assert_allclose(stack.logits(tokens)[m], alone.logits(tokens)[0], atol=1e-12)
    history = train(stack, tokens, labels, tokens, labels, steps=20, batch_size=4)
    alone = small_model("learned", "add", seeds=8)
    alone_history = train(alone, tokens, labels, tokens, labels, steps=20, batch_size=4)
    np.testing.assert_allclose(history.train_loss[:, 1], alone_history.train_loss[:, 0], rtol=1e-9)


def test_parameter_shapes_and_count():
    model = small_model("learned", "concat", seeds=(0, 1))
    shapes = {name: value.shape for name, value in model.params.items()}
    assert shapes == {
        "token_embedding": (2, 5, 3),
        "position_embedding": (2, 4, 2),
        "w_q": (2, 5, 2),
        "w_k": (2, 5, 2),
        "w_v": (2, 5, 4),
        "w_out": (2, 4, 3),
        "b_out": (2, 3),
    }
    assert model.n_parameters == 15 + 8 + 10 + 10 + 20 + 12 + 3
    assert model.width == 5 and model.n_models == 2
    sinusoidal_model = small_model("sinusoidal", "concat")
    assert "position_embedding" not in sinusoidal_model.params
    np.testing.assert_array_equal(sinusoidal_model.position_codes()[0], sinusoidal(4, 2))
    assert small_model("none", "add").position_codes() is None
    assert "n_parameters=78" in repr(model)


# --- gradients -----------------------------------------------------------------------


def numeric_gradients(model, tokens, labels, eps=1e-6):
    grads = {}
    for name, value in model.params.items():
        flat = value.reshape(-1)
        g = np.empty(flat.size)
        for index in range(flat.size):
            saved = flat[index]
            flat[index] = saved + eps
            up = reference_loss(model, tokens, labels)
            flat[index] = saved - eps
            down = reference_loss(model, tokens, labels)
            flat[index] = saved
            g[index] = (up - down) / (2 * eps)
        grads[name] = g.reshape(value.shape)
    return grads


@pytest.mark.parametrize(("position", "combine"), VARIANTS)
@pytest.mark.parametrize("per_copy_batches", [False, True])
def test_every_gradient_matches_central_differences(position, combine, per_copy_batches):
    model = small_model(position, combine, seeds=(5, 6))
    tokens, labels = random_batch(9, n_models=2 if per_copy_batches else None)
    loss, grads = model.loss_and_gradients(tokens, labels)
    assert loss.shape == (2,)
    numeric = numeric_gradients(model, tokens, labels)
    assert set(grads) == set(model.params)
    for name in model.params:
        assert grads[name].shape == model.params[name].shape
        np.testing.assert_allclose(
            grads[name],
            numeric[name],
            atol=1e-8,
            rtol=1e-6,
            err_msg=f"{position}/{combine}: {name}",
        )


def test_gradient_check_reports_small_errors_and_needs_float64():
    model = small_model("sinusoidal", "concat")
    tokens, labels = random_batch(10)
    errors = gradient_check(model, tokens, labels, n_entries=50)
    assert set(errors) == set(model.params) and max(errors.values()) < 1e-6
    # A wrong gradient is caught: spoil one analytic gradient on purpose.
    honest = model._loss_and_gradients

    def spoiled(tokens, labels):
        loss, grads = honest(tokens, labels)
        grads["w_k"] = 1.1 * grads["w_k"]
        return loss, grads

    model._loss_and_gradients = spoiled
    errors = gradient_check(model, tokens, labels, n_entries=50)
    assert errors["w_k"] > 1e-3 and errors["w_q"] < 1e-6
    single = small_model("learned", "add", dtype="float32")
    with pytest.raises(ValueError, match="float64 for a gradient check"):
        gradient_check(single, tokens, labels)


# --- Adam ----------------------------------------------------------------------------


def test_adam_matches_a_hand_written_update_over_several_steps():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(3, 2))
    params = {"w": theta.copy()}
    opt = Adam(params, learning_rate=0.05, beta1=0.8, beta2=0.9, eps=1e-6)
    m = v = np.zeros_like(theta)
    for t in range(1, 6):
        g = 2 * params["w"] - 1.0  # gradient of sum(w**2 - w)
        m = 0.8 * m + 0.2 * g
        v = 0.9 * v + 0.1 * g * g
        theta = theta - 0.05 * (m / (1 - 0.8**t)) / (np.sqrt(v / (1 - 0.9**t)) + 1e-6)
        opt.step({"w": g})
        np.testing.assert_allclose(params["w"], theta, rtol=1e-12)
    assert opt.t == 5


def test_adam_first_step_is_the_learning_rate_times_the_sign():
    params = {"a": np.array([1.0, 1.0, 1.0])}
    Adam(params, learning_rate=0.25).step({"a": np.array([10.0, -0.5, 3.0])})
    np.testing.assert_allclose(params["a"], [0.75, 1.25, 0.75], rtol=1e-7)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"learning_rate": 0.0}, ValueError, "learning_rate must be a finite number > 0"),
        ({"learning_rate": -1e-3}, ValueError, "learning_rate must be a finite number > 0"),
        ({"beta1": 1.0}, ValueError, r"beta1 must be in \[0, 1\)"),
        ({"beta2": -0.1}, ValueError, "beta2 must be >= 0.0"),
        ({"eps": 0.0}, ValueError, "eps must be a finite number > 0"),
        ({"learning_rate": "fast"}, TypeError, "learning_rate must be a real number"),
    ],
)
def test_adam_bad_settings(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        Adam({"w": np.zeros(2)}, **kwargs)


def test_adam_bad_parameters_and_gradients():
    with pytest.raises(TypeError, match="params must be a non-empty dict"):
        Adam({})
    with pytest.raises(TypeError, match=r"params\['w'\] must be a NumPy float array"):
        Adam({"w": np.zeros(2, dtype=int)})
    opt = Adam({"w": np.zeros(2)})
    with pytest.raises(ValueError, match=r"grads must have exactly the keys \['w'\]"):
        opt.step({"v": np.zeros(2)})
    with pytest.raises(ValueError, match=r"grads\['w'\] must have shape \(2,\), got \(3,\)"):
        opt.step({"w": np.zeros(3)})


# --- training ------------------------------------------------------------------------


def separable_task(n=64):
    """Label = is token 0 before token 1, among permutations of 4 tokens."""
    rng = np.random.default_rng(0)
    tokens = np.array([rng.permutation(4) for _ in range(n)])
    labels = (np.argsort(tokens, axis=1)[:, 0] < np.argsort(tokens, axis=1)[:, 1]).astype(int)
    return tokens, labels


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_training_learns_order_and_is_deterministic(dtype):
    tokens, labels = separable_task()
    runs = []
    for _ in range(2):
        model = AttentionClassifier(
            4, 4, 2, d_token=8, position="learned", seeds=(0, 1), dtype=dtype
        )
        runs.append(
            train(
                model,
                tokens,
                labels,
                tokens,
                labels,
                steps=150,
                batch_size=16,
                learning_rate=0.02,
                eval_every=50,
            )
        )
        assert all(p.dtype == np.dtype(dtype) for p in model.params.values())
    first, second = runs
    np.testing.assert_array_equal(first.train_loss, second.train_loss)  # bit for bit
    np.testing.assert_array_equal(first.test_accuracy, second.test_accuracy)
    assert first.steps.tolist() == [0, 50, 100, 150]
    assert first.train_loss.shape == (150, 2)
    assert np.all(first.final_accuracy >= 0.9)
    assert np.all(first.train_loss[-10:].mean(axis=0) < first.train_loss[:10].mean(axis=0))


def test_training_without_positions_stays_at_a_constant_answer():
    tokens, labels = separable_task()
    model = AttentionClassifier(4, 4, 2, d_token=8, position="none", seeds=(0, 1))
    train(model, tokens, labels, tokens, labels, steps=100, batch_size=16)
    predicted = model.predict(tokens)
    assert np.all(predicted == predicted[:, :1])


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"learning_rate": 0.0}, ValueError, "learning_rate must be a finite number > 0"),
        ({"learning_rate": -0.1}, ValueError, "learning_rate must be a finite number > 0"),
        ({"steps": 0}, ValueError, "steps must be an integer >= 1"),
        ({"batch_size": 65}, ValueError, "batch_size must be an integer >= 1 and <= 64"),
        ({"eval_every": 0}, ValueError, "eval_every must be an integer >= 1"),
    ],
)
def test_train_bad_settings(kwargs, error, pattern):
    tokens, labels = separable_task()
    model = AttentionClassifier(4, 4, 2, d_token=4, position="learned")
    with pytest.raises(error, match=pattern):
        train(model, tokens, labels, tokens, labels, **kwargs)


def test_train_bad_data():
    tokens, labels = separable_task()
    model = AttentionClassifier(4, 4, 2, d_token=4, position="learned")
    with pytest.raises(TypeError, match="model must be an AttentionClassifier"):
        train("model", tokens, labels, tokens, labels)
    with pytest.raises(ValueError, match="train_tokens must have 2 dimensions"):
        train(model, tokens[None], labels, tokens, labels)
    with pytest.raises(ValueError, match=r"labels must have shape \(64,\)"):
        train(model, tokens, labels[:-1], tokens, labels)
    with pytest.raises(ValueError, match=r"labels must hold integers in \[0, 2\)"):
        train(model, tokens, labels + 1, tokens, labels)


# --- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"position": "rotary"}, ValueError, r"position must be one of \('none', 'sinusoidal'"),
        ({"combine": "multiply"}, ValueError, r"combine must be one of \('add', 'concat'\)"),
        ({"position": 3}, TypeError, "position must be one of"),
        ({"position": "none", "combine": "concat"}, ValueError, "combine must be 'add'"),
        ({"position": "none", "d_position": 3}, ValueError, "d_position must be 0"),
        ({"d_position": 2}, ValueError, r"d_position must equal d_token \(4\)"),
        ({"combine": "concat", "d_position": 0}, ValueError, "d_position must be an integer >= 1"),
        ({"d_token": 0}, ValueError, "d_token must be an integer >= 1"),
        ({"d_token": 2.0}, TypeError, "d_token must be an integer"),
        ({"d_k": 0}, ValueError, "d_k must be an integer >= 1"),
        ({"embedding_scale": 0.0}, ValueError, "embedding_scale must be a finite number > 0"),
        ({"seeds": (1, 1)}, ValueError, r"seeds must be distinct, got \(1, 1\)"),
        ({"seeds": ()}, ValueError, "seeds must hold at least one seed"),
        ({"seeds": -1}, ValueError, r"seeds\[\.\.\.\] must be an integer >= 0"),
        ({"seeds": "0"}, TypeError, "seeds must be an int or a sequence of ints"),
        ({"dtype": "float16"}, ValueError, r"dtype must be one of \('float64', 'float32'\)"),
    ],
)
def test_model_bad_settings(kwargs, error, pattern):
    options = {"d_token": 4, "position": "learned"}
    options.update(kwargs)
    with pytest.raises(error, match=pattern):
        AttentionClassifier(5, 4, 3, **options)


def test_model_bad_sizes():
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        AttentionClassifier(5, 4, 1, d_token=4)
    with pytest.raises(ValueError, match="length must be an integer >= 1"):
        AttentionClassifier(5, 0, 2, d_token=4)


@pytest.mark.parametrize(
    ("tokens", "error", "pattern"),
    [
        (np.zeros((2, 3), dtype=int), ValueError, r"tokens must have shape \(batch, 4\)"),
        (np.zeros((3, 2, 4), dtype=int), ValueError, r"or \(2, batch, 4\)"),
        (np.zeros(4, dtype=int), ValueError, "tokens must have 2 or 3 dimensions"),
        (np.full((2, 4), 5), ValueError, r"tokens must hold integers in \[0, 5\)"),
        (np.full((2, 4), -1), ValueError, r"tokens must hold integers in \[0, 5\)"),
        (np.zeros((2, 4)), TypeError, "tokens must be an array of integers, got dtype float64"),
        (np.zeros((2, 4), dtype=bool), TypeError, "tokens must be an array of integers"),
        (np.zeros((0, 4), dtype=int), ValueError, "tokens must hold at least one sequence"),
    ],
)
def test_model_bad_tokens(tokens, error, pattern):
    model = small_model("learned", "add", seeds=(0, 1))
    with pytest.raises(error, match=pattern):
        model.logits(tokens)


def test_model_bad_labels():
    model = small_model("learned", "add", seeds=(0, 1))
    tokens, labels = random_batch(0)
    with pytest.raises(ValueError, match=r"labels must have shape \(6,\) to match tokens"):
        model.loss_and_gradients(tokens, labels[:3])
    with pytest.raises(ValueError, match=r"labels must hold integers in \[0, 3\)"):
        model.loss(tokens, labels + 3)
    with pytest.raises(TypeError, match="labels must be an array of integers"):
        model.accuracy(tokens, labels.astype(float))


def test_check_helpers():
    assert check_index_array("t", [[1, 0]], ndim=2, upper=2).dtype == np.int64
    with pytest.raises(ValueError, match="t must have 1 dimensions"):
        check_index_array("t", [[1]], ndim=1, upper=2)
    assert check_seeds(np.int64(4)) == (4,)
    assert check_seeds(range(3)) == (0, 1, 2)
    with pytest.raises(TypeError, match="seeds must be an int or a sequence"):
        check_seeds(True)


def test_accuracy_counts_correct_answers():
    model = small_model("sinusoidal", "add", seeds=(0, 1))
    tokens, _ = random_batch(11, batch=10)
    predicted = model.predict(tokens)
    labels = predicted[0].copy()
    labels[:4] = (labels[:4] + 1) % 3
    np.testing.assert_allclose(model.accuracy(tokens, labels)[0], 0.6)
    expected_other = np.mean(predicted[1] == labels)
    np.testing.assert_allclose(model.accuracy(tokens, labels)[1], expected_other)


def test_all_variants_train_one_step_in_both_precisions():
    tokens, labels = random_batch(12)
    for (position, combine), dtype in itertools.product(VARIANTS, ["float64", "float32"]):
        model = small_model(position, combine, seeds=(0, 1), dtype=dtype)
        history = train(model, tokens, labels, tokens, labels, steps=3, batch_size=6)
        assert np.all(np.isfinite(history.train_loss))
        assert history.train_loss.dtype == np.dtype(dtype)


# --- bugs a maintainer could make, each caught directly -------------------------------


@pytest.mark.parametrize("base", [10.0, 100.0, 1e4, 1e6])
def test_sinusoidal_model_uses_its_own_base(base):
    model = AttentionClassifier(4, 6, 2, d_token=4, position="sinusoidal", base=base)
    np.testing.assert_array_equal(model.position_codes()[0], sinusoidal(6, 4, base))
    tokens, _ = random_batch(5, batch=3, vocab=4, length=6)
    np.testing.assert_allclose(model.logits(tokens)[0], reference_logits(model, tokens), atol=1e-12)


def test_the_base_changes_the_output():
    tokens, _ = random_batch(6, batch=5, vocab=4, length=6)
    outputs = [
        AttentionClassifier(4, 6, 2, d_token=4, position="sinusoidal", base=b).logits(tokens)
        for b in (10.0, 1e4)
    ]
    assert np.abs(outputs[0] - outputs[1]).max() > 1e-3


def recorded_batches(model, tokens, labels, *, steps, batch_size):
    """Train ``model``; return the rows of ``tokens`` each update used.

    Shape ``(steps, n_models, batch)``.
    """
    seen = []
    original = model._loss_and_gradients

    def spy(batch_tokens, batch_labels):
        # every row of ``tokens`` is distinct, so a row identifies its index
        index = {tuple(row): i for i, row in enumerate(tokens.tolist())}
        seen.append([[index[tuple(r)] for r in copy] for copy in batch_tokens.tolist()])
        return original(batch_tokens, batch_labels)

    model._loss_and_gradients = spy
    train(model, tokens, labels, tokens, labels, steps=steps, batch_size=batch_size)
    return np.array(seen)


def test_every_epoch_visits_every_example_once_in_a_fresh_order():
    tokens = np.array(list(itertools.permutations(range(4))))[:20]  # 20 distinct rows
    labels = np.arange(20) % 2
    model = AttentionClassifier(4, 4, 2, d_token=4, position="learned", seeds=(0, 1))
    batches = recorded_batches(model, tokens, labels, steps=12, batch_size=5)  # 3 epochs of 4
    epochs = batches.reshape(3, 4, 2, 5).transpose(0, 2, 1, 3).reshape(3, 2, 20)
    for epoch in epochs:
        for order in epoch:
            assert sorted(order.tolist()) == list(range(20))  # each example once per epoch
    for m in range(2):
        orders = {tuple(epochs[e, m]) for e in range(3)}
        assert len(orders) == 3  # reshuffled every epoch
    assert not np.array_equal(epochs[:, 0], epochs[:, 1])  # each copy its own order


def test_training_evaluates_on_the_test_set_not_the_training_set():
    tokens, labels = separable_task()
    model = AttentionClassifier(4, 4, 2, d_token=8, position="learned", seeds=(0, 1))
    flipped = 1 - labels  # a test set the model cannot get right
    history = train(
        model, tokens, labels, tokens, flipped, steps=150, batch_size=16, learning_rate=0.02
    )
    np.testing.assert_array_equal(history.final_accuracy, model.accuracy(tokens, flipped))
    np.testing.assert_allclose(history.final_accuracy, 1 - model.accuracy(tokens, labels))
    assert np.all(history.final_accuracy <= 0.1)


def test_learning_rate_scales_the_updates():
    tokens, labels = random_batch(8, batch=8)
    changes = []
    for rate in (1e-3, 4e-3):
        model = small_model("learned", "add")
        before = model.params["w_q"].copy()
        train(model, tokens, labels, tokens, labels, steps=1, batch_size=8, learning_rate=rate)
        changes.append(np.abs(model.params["w_q"] - before).max())
    # Adam's first step moves every entry by the learning rate (times the sign)
    np.testing.assert_allclose(changes, [1e-3, 4e-3], rtol=1e-6)


# --- two layers on a residual stream, and a learning rate per copy -------------------------


@pytest.mark.parametrize(("position", "combine"), VARIANTS)
def test_two_layer_logits_match_a_reference(position, combine):
    model = small_model(position, combine, seeds=(3, 4), n_layers=2, d_v=None)
    tokens, _ = random_batch(11)
    logits = model.logits(tokens)
    for m in range(2):
        np.testing.assert_allclose(logits[m], reference_logits(model, tokens, m), atol=1e-12)
    assert {"w_q2", "w_k2", "w_v2"} <= set(model.params)
    assert model.params["w_out"].shape == (2, model.width, 3)


@pytest.mark.parametrize(("position", "combine"), VARIANTS)
@pytest.mark.parametrize("per_copy_batches", [False, True])
def test_two_layer_gradients_match_central_differences(position, combine, per_copy_batches):
    model = small_model(position, combine, seeds=(5, 6), n_layers=2, d_v=None)
    tokens, labels = random_batch(12, n_models=2 if per_copy_batches else None)
    _, grads = model.loss_and_gradients(tokens, labels)
    numeric = numeric_gradients(model, tokens, labels)
    assert set(grads) == set(model.params)
    for name in model.params:
        np.testing.assert_allclose(
            grads[name],
            numeric[name],
            atol=1e-8,
            rtol=1e-6,
            err_msg=f"{position}/{combine}: {name}",
        )


def test_two_layers_need_values_as_wide_as_the_input():
    with pytest.raises(ValueError, match=r"d_v must equal the input width \(3\) when n_layers"):
        small_model("learned", "add", n_layers=2)  # small_model asks for d_v = 4
    with pytest.raises(ValueError, match="n_layers must be an integer >= 1 and <= 2"):
        small_model("learned", "add", n_layers=3, d_v=None)


def test_two_layer_model_without_positions_ignores_order():
    model = small_model("none", "add", n_layers=2, d_v=None, seeds=(0, 1))
    tokens, _ = random_batch(13)
    shuffled = tokens[:, np.random.default_rng(0).permutation(tokens.shape[1])]
    np.testing.assert_allclose(model.logits(tokens), model.logits(shuffled), atol=1e-12)


def test_a_learning_rate_per_copy_equals_separate_optimisers():
    tokens, labels = random_batch(14, n_models=3)
    rates = np.array([0.001, 0.01, 0.1])
    stacked = small_model("learned", "concat", seeds=(0, 1, 2))
    opt = Adam(stacked.params, learning_rate=rates)
    for _ in range(3):
        opt.step(stacked.loss_and_gradients(tokens, labels)[1])
    for m, (seed, rate) in enumerate(zip((0, 1, 2), rates, strict=True)):
        single = small_model("learned", "concat", seeds=(seed,))
        opt1 = Adam(single.params, learning_rate=float(rate))
        for _ in range(3):
            opt1.step(single.loss_and_gradients(tokens[m], labels[m])[1])
        for name, value in single.params.items():
            np.testing.assert_allclose(stacked.params[name][m], value[0], atol=1e-12)


def test_train_accepts_a_learning_rate_per_copy_and_checks_it():
    tokens = np.array([[0, 1, 2, 3], [3, 2, 1, 0]] * 4)
    labels = np.array([0, 1] * 4)
    model = small_model("learned", "add", seeds=(0, 1))
    history = train(
        model,
        tokens,
        labels,
        tokens,
        labels,
        steps=3,
        batch_size=4,
        learning_rate=[0.01, 0.02],
        eval_every=1,
    )
    assert history.train_loss.shape == (3, 2)
    with pytest.raises(ValueError, match=r"learning_rate holds 3 rates \(one per copy\)"):
        train(
            model,
            tokens,
            labels,
            tokens,
            labels,
            steps=1,
            batch_size=4,
            learning_rate=[0.1, 0.1, 0.1],
        )
    with pytest.raises(ValueError, match="learning_rate must hold numbers > 0"):
        train(
            model, tokens, labels, tokens, labels, steps=1, batch_size=4, learning_rate=[0.1, -0.1]
        )


def test_accuracy_in_chunks_equals_one_pass():
    model = AttentionClassifier(6, 6, 6, d_token=4, position="learned", seeds=range(40))
    rng = np.random.default_rng(0)
    tokens = np.array([rng.permutation(6) for _ in range(700)])  # more than one chunk
    labels = tokens[:, 2]
    expected = (model.logits(tokens).argmax(axis=-1) == labels).mean(axis=-1)
    np.testing.assert_array_equal(model.accuracy(tokens, labels), expected)


@pytest.mark.parametrize(
    ("position", "combine", "n_layers"),
    [("sinusoidal", "add", 1), ("learned", "concat", 1), ("learned", "add", 2)],
)
def test_copies_run_in_cache_sized_groups_give_the_same_numbers(
    monkeypatch, position, combine, n_layers
):
    """A stack split into groups of copies equals one pass and each copy built alone."""
    import posenc.model as model_module

    options = {"d_v": None} if n_layers == 2 else {}
    stack = small_model(position, combine, seeds=(3, 4, 5, 6, 7), n_layers=n_layers, **options)
    tokens, labels = random_batch(21, batch=6, n_models=5)
    one_pass = stack.loss_and_gradients(tokens, labels)
    accuracy = stack.accuracy(tokens[0], labels[0])
    # 6 sequences of 4 x 4 weights per copy: groups of 2 copies, the last one alone.
    monkeypatch.setattr(model_module, "_GROUP_ENTRIES", 2 * 6 * 16)
    assert [g.indices(5) for g in stack._groups(6)] == [(0, 2, 1), (2, 4, 1), (4, 5, 1)]
    grouped = stack.loss_and_gradients(tokens, labels)
    np.testing.assert_allclose(grouped[0], one_pass[0], rtol=1e-13)
    for name in stack.params:
        np.testing.assert_allclose(grouped[1][name], one_pass[1][name], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(stack.accuracy(tokens[0], labels[0]), accuracy)
    for m, seed in enumerate((3, 4, 5, 6, 7)):
        alone = small_model(position, combine, seeds=seed, n_layers=n_layers, **options)
        loss, grads = alone.loss_and_gradients(tokens[m], labels[m])
        np.testing.assert_allclose(grouped[0][m], loss[0], rtol=1e-13)
        for name in stack.params:
            np.testing.assert_allclose(grouped[1][name][m], grads[name][0], rtol=1e-12, atol=1e-15)
