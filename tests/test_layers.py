"""Tests of posenc.layers: the fixed sinusoidal layer and the learned lookup table."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import sinusoidal
from posenc.layers import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

# --- the sinusoidal layer ----------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(0, 40),
    d_model=st.integers(1, 24),
    seed=st.integers(0, 2**32 - 1),
)
def test_sinusoidal_layer_adds_the_code_of_each_position(batch, length, d_model, seed):
    x = np.random.default_rng(seed).normal(size=(batch, length, d_model))
    layer = SinusoidalPositionalEncoding(40, d_model)
    out = layer(x)
    assert out.shape == x.shape
    expected = sinusoidal(40, d_model)[:length]
    for b in range(batch):
        np.testing.assert_allclose(out[b] - x[b], expected, rtol=0, atol=1e-15)


def test_sinusoidal_layer_table_is_computed_once_and_read_only():
    layer = SinusoidalPositionalEncoding(64, 10, base=500.0, layout="split")
    np.testing.assert_array_equal(layer.table, sinusoidal(64, 10, 500.0, layout="split"))
    with pytest.raises(ValueError, match="read-only"):
        layer.table[0, 0] = 1.0
    codes = layer.codes(5)
    codes[0, 0] = 42.0  # a copy: the table is untouched
    assert layer.table[0, 0] == 0.0


def test_scale_embeddings_multiplies_by_sqrt_d_before_adding():
    x = np.random.default_rng(1).normal(size=(2, 7, 16))
    plain = SinusoidalPositionalEncoding(10, 16)
    scaled = SinusoidalPositionalEncoding(10, 16, scale_embeddings=True)
    np.testing.assert_allclose(scaled(x), 4.0 * x + plain.table[:7], rtol=1e-15)
    np.testing.assert_allclose(plain(x), x + plain.table[:7], rtol=1e-15)


def test_layer_accepts_integer_and_list_input():
    layer = SinusoidalPositionalEncoding(4, 2)
    out = layer([[[1, 2], [3, 4]]])
    np.testing.assert_allclose(out[0], np.array([[1, 2], [3, 4]]) + layer.table[:2])


def test_resized_layer_keeps_the_settings_and_the_shared_rows():
    layer = SinusoidalPositionalEncoding(50, 12, base=300.0, layout="split", scale_embeddings=True)
    longer = layer.resized(5000)
    assert (longer.d_model, longer.base, longer.layout, longer.scale_embeddings) == (
        12,
        300.0,
        "split",
        True,
    )
    assert longer.table.shape == (5000, 12)
    np.testing.assert_array_equal(longer.table[:50], layer.table)
    x = np.ones((1, 3000, 12))
    np.testing.assert_allclose(longer(x)[0, 2999], math.sqrt(12) + longer.table[2999])


def test_too_long_sequence_names_both_lengths():
    layer = SinusoidalPositionalEncoding(128, 8)
    with pytest.raises(ValueError, match=r"sequence length 129 exceeds max_length=128") as info:
        layer(np.zeros((2, 129, 8)))
    assert "can be computed for any length" in str(info.value)
    with pytest.raises(ValueError, match=r"sequence length 200 exceeds max_length=128"):
        layer.codes(200)


@pytest.mark.parametrize(
    ("x", "pattern"),
    [
        (np.zeros((2, 5, 7)), r"x must have shape \(batch, length, d_model=8\), got \(2, 5, 7\)"),
        (np.zeros((5, 8)), r"x must have shape \(batch, length, d_model=8\), got \(5, 8\)"),
        (np.zeros((1, 2, 5, 8)), r"got \(1, 2, 5, 8\)"),
    ],
)
def test_wrong_shapes_are_rejected(x, pattern):
    for layer in (SinusoidalPositionalEncoding(16, 8), LearnedPositionalEmbedding(16, 8, rng=0)):
        with pytest.raises(ValueError, match=pattern):
            layer(x)


def test_non_numeric_and_non_finite_input_are_rejected():
    layer = SinusoidalPositionalEncoding(16, 2)
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        layer([[["a", "b"]]])
    with pytest.raises(ValueError, match="x must contain only finite numbers"):
        layer(np.full((1, 1, 2), np.nan))


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"max_length": 0, "d_model": 4}, ValueError, "max_length must be an integer >= 1"),
        ({"max_length": 8.0, "d_model": 4}, TypeError, "max_length must be an integer"),
        ({"max_length": 8, "d_model": 0}, ValueError, "d_model must be an integer >= 1"),
        ({"max_length": 8, "d_model": 4, "base": -1}, ValueError, "base must be a finite num"),
        ({"max_length": 8, "d_model": 4, "layout": "x"}, ValueError, "layout must be one of"),
        (
            {"max_length": 8, "d_model": 4, "scale_embeddings": "yes"},
            TypeError,
            "scale_embeddings must be True or False",
        ),
    ],
)
def test_sinusoidal_layer_bad_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        SinusoidalPositionalEncoding(**kwargs)


def test_reprs_name_the_settings():
    assert repr(SinusoidalPositionalEncoding(8, 4)) == (
        "SinusoidalPositionalEncoding(max_length=8, d_model=4, base=10000, "
        "layout='interleaved', scale_embeddings=False)"
    )
    assert repr(LearnedPositionalEmbedding(8, 4, rng=0)) == (
        "LearnedPositionalEmbedding(max_length=8, d_model=4, std=0.5)"
    )


# --- the learned layer --------------------------------------------------------------------


def test_learned_table_is_seeded_and_has_the_requested_scale():
    a = LearnedPositionalEmbedding(400, 64, rng=3)
    b = LearnedPositionalEmbedding(400, 64, rng=np.random.default_rng(3))
    c = LearnedPositionalEmbedding(400, 64, rng=4)
    np.testing.assert_array_equal(a.table, b.table)
    assert not np.array_equal(a.table, c.table)
    assert a.table.std() == pytest.approx(1 / 8, rel=0.02)
    assert np.abs(a.table.mean()) < 0.005
    wide = LearnedPositionalEmbedding(400, 64, rng=3, std=0.02)
    assert wide.table.std() == pytest.approx(0.02, rel=0.02)


def test_learned_layer_adds_its_rows():
    layer = LearnedPositionalEmbedding(10, 3, rng=0)
    x = np.random.default_rng(1).normal(size=(4, 6, 3))
    np.testing.assert_allclose(layer(x), x + layer.table[None, :6], rtol=1e-15)


def test_learned_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    layer = LearnedPositionalEmbedding(6, 3, rng=0)
    x, target = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))

    def loss():
        return 0.5 * np.sum((layer(x) - target) ** 2)

    grad = layer.gradient(layer(x) - target)
    numeric = np.zeros_like(layer.table)
    eps = 1e-6
    for index in np.ndindex(layer.table.shape):
        saved = layer.table[index]
        layer.table[index] = saved + eps
        up = loss()
        layer.table[index] = saved - eps
        down = loss()
        layer.table[index] = saved
        numeric[index] = (up - down) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=1e-7)
    np.testing.assert_array_equal(grad[4:], 0.0)


def test_training_learns_the_seen_rows_and_leaves_the_others_untouched():
    layer = LearnedPositionalEmbedding(32, 8, rng=0)
    before = layer.table.copy()
    goal = sinusoidal(32, 8)
    rng = np.random.default_rng(1)
    for _ in range(200):
        x = rng.normal(size=(4, 20, 8))
        layer.step((layer(x) - (x + goal[:20])) / 4, learning_rate=0.5)
    np.testing.assert_allclose(layer.table[:20], goal[:20], atol=1e-10)
    np.testing.assert_array_equal(layer.table[20:], before[20:])


def test_learned_layer_has_no_row_past_max_length():
    layer = LearnedPositionalEmbedding(16, 4, rng=0)
    with pytest.raises(ValueError, match=r"sequence length 17 exceeds max_length=16") as info:
        layer(np.zeros((1, 17, 4)))
    assert "cannot be extended without new training" in str(info.value)
    with pytest.raises(ValueError, match="exceeds max_length=16"):
        layer.codes(17)
    with pytest.raises(ValueError, match="exceeds max_length=16"):
        layer.gradient(np.zeros((1, 17, 4)))


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"max_length": 0, "d_model": 4}, ValueError, "max_length must be an integer >= 1"),
        ({"max_length": 4, "d_model": 2.5}, TypeError, "d_model must be an integer"),
        ({"max_length": 4, "d_model": 4, "std": 0.0}, ValueError, "std must be a finite number"),
        ({"max_length": 4, "d_model": 4, "std": "big"}, TypeError, "std must be a real number"),
        ({"max_length": 4, "d_model": 4, "rng": "seed"}, TypeError, "rng must be an integer"),
        ({"max_length": 4, "d_model": 4, "rng": -1}, ValueError, "rng must be an integer >= 0"),
    ],
)
def test_learned_layer_bad_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        LearnedPositionalEmbedding(**kwargs)


def test_learned_step_bad_arguments():
    layer = LearnedPositionalEmbedding(4, 2, rng=0)
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        layer.step(np.zeros((1, 2, 2)), learning_rate=0.0)
    with pytest.raises(ValueError, match=r"upstream must have shape \(batch, length, d_model=2\)"):
        layer.step(np.zeros((1, 2, 3)), learning_rate=0.1)
    with pytest.raises(ValueError, match="upstream must contain only finite numbers"):
        layer.gradient(np.full((1, 2, 2), np.inf))
