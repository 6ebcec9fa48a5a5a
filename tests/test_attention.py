"""Tests of posenc.attention: softmax stability, masking, permutation equivariance."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import causal_mask, self_attention, sinusoidal, softmax


def reference_attention(x, w_q, w_k, w_v, causal=False):
    """Loop-by-loop attention, written independently of posenc."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    out = np.zeros((x.shape[0], w_v.shape[1]))
    for a in range(x.shape[0]):
        keys = range(a + 1) if causal else range(x.shape[0])
        scores = np.array([q[a] @ k[b] / np.sqrt(w_q.shape[1]) for b in keys])
        weights = np.exp(scores - scores.max())
        weights /= weights.sum()
        out[a] = sum(w * v[b] for w, b in zip(weights, keys, strict=True))
    return out


def random_problem(seed, length=6, d_model=5, d_k=4, d_v=3):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(length, d_model)),
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_k)),
        rng.normal(size=(d_model, d_v)),
    )


# --- softmax ------------------------------------------------------------------


def test_softmax_sums_to_one_and_survives_huge_scores():
    scores = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]])
    weights = softmax(scores)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(weights[1], 1 / 3)
    e = np.exp([0.0, 1.0, -1.0])
    np.testing.assert_allclose(weights[0], e / e.sum())


def test_softmax_is_shift_invariant_and_respects_axis():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(3, 4))
    np.testing.assert_allclose(softmax(s + 123.0), softmax(s))
    np.testing.assert_allclose(softmax(s, axis=0).sum(axis=0), 1.0)


def test_softmax_minus_inf_gets_zero_weight():
    weights = softmax(np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_array_equal(weights, [0.5, 0.0, 0.5])


@pytest.mark.parametrize(
    ("scores", "error", "pattern"),
    [
        (np.array([np.nan, 1.0]), ValueError, "finite or -inf"),
        (np.array([np.inf, 1.0]), ValueError, "finite or -inf"),
        (np.array([-np.inf, -np.inf]), ValueError, "at least one finite entry"),
        (np.float64(3.0), ValueError, "at least 1 dimension"),
        (["a", "b"], TypeError, "scores must be an array of real numbers"),
    ],
)
def test_softmax_bad_input(scores, error, pattern):
    with pytest.raises(error, match=pattern):
        softmax(scores)


def test_softmax_bad_axis():
    with pytest.raises(ValueError, match="axis must be an integer >= -2 and <= 1"):
        softmax(np.zeros((2, 2)), axis=2)


# --- attention ------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_matches_loop_reference(causal):
    x, w_q, w_k, w_v = random_problem(2)
    np.testing.assert_allclose(
        self_attention(x, w_q, w_k, w_v, causal=causal),
        reference_attention(x, w_q, w_k, w_v, causal=causal),
        atol=1e-12,
    )


def test_weights_rows_sum_to_one_and_causal_is_lower_triangular():
    x, w_q, w_k, w_v = random_problem(3)
    _, weights = self_attention(x, w_q, w_k, w_v, causal=True, return_weights=True)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    assert np.all(weights[~causal_mask(x.shape[0])] == 0)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), length=st.integers(1, 12))
def test_permutation_equivariance(seed, length):
    x, w_q, w_k, w_v = random_problem(seed, length=length)
    perm = np.random.default_rng(seed + 1).permutation(length)
    out = self_attention(x, w_q, w_k, w_v)
    np.testing.assert_allclose(self_attention(x[perm], w_q, w_k, w_v), out[perm], atol=1e-12)
    # Mean pooling forgets the order completely.
    np.testing.assert_allclose(
        self_attention(x[perm], w_q, w_k, w_v).mean(axis=0), out.mean(axis=0), atol=1e-12
    )


def test_position_code_breaks_equivariance():
    x, w_q, w_k, w_v = random_problem(4, length=5)
    pe = sinusoidal(5, x.shape[1])
    perm = np.array([2, 1, 0, 3, 4])
    pooled = self_attention(x + pe, w_q, w_k, w_v).mean(axis=0)
    pooled_perm = self_attention(x[perm] + pe, w_q, w_k, w_v).mean(axis=0)
    assert np.abs(pooled - pooled_perm).max() > 1e-3


def test_empty_sequence():
    _, w_q, w_k, w_v = random_problem(5)
    assert self_attention(np.zeros((0, 5)), w_q, w_k, w_v).shape == (0, 3)


@pytest.mark.parametrize(
    ("shapes", "pattern"),
    [
        (((4,), (5, 4), (5, 4), (5, 3)), "x must have 2 dimensions"),
        (((6, 5), (4, 4), (5, 4), (5, 3)), r"w_q must have shape \(5, any\)"),
        (((6, 5), (5, 4), (5, 2), (5, 3)), r"w_k must have shape \(5, 4\)"),
        (((6, 5), (5, 4), (5, 4), (3, 3)), r"w_v must have shape \(5, any\)"),
    ],
)
def test_attention_bad_shapes(shapes, pattern):
    arrays = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError, match=pattern):
        self_attention(*arrays)


def test_attention_rejects_nan_and_bad_flag():
    x, w_q, w_k, w_v = random_problem(6)
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="x must contain only finite numbers"):
        self_attention(x, w_q, w_k, w_v)
    x, w_q, w_k, w_v = random_problem(6)
    with pytest.raises(TypeError, match="causal must be True or False"):
        self_attention(x, w_q, w_k, w_v, causal="yes")


def test_causal_mask_bad_length():
    with pytest.raises(ValueError, match="length must be an integer >= 0"):
        causal_mask(-1)
