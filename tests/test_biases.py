"""Tests of posenc.biases: Shaw indices, T5 buckets, ALiBi slopes and biases, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import alibi_bias, alibi_slopes, shaw_relative_indices, t5_relative_bucket


def slopes_by_recursion(n):
    """The ALiBi authors' construction as the paper's appendix describes it, in words turned
    into a recursion: a geometric sequence for a power of two, else the nearest lower power
    of two plus every other slope of the next one."""
    if n & (n - 1) == 0:
        ratio = 2.0 ** (-8.0 / n)
        return [ratio ** (i + 1) for i in range(n)]
    p = 2 ** math.floor(math.log2(n))
    return slopes_by_recursion(p) + slopes_by_recursion(2 * p)[0::2][: n - p]


def test_exported():
    for name in ("alibi_bias", "alibi_slopes", "shaw_relative_indices", "t5_relative_bucket"):
        assert getattr(posenc, name) is not None and name in posenc.__all__


# --- ALiBi ----------------------------------------------------------------


def test_slopes_hand_computed():
    # 8 heads: 2^-1 ... 2^-8. 6 heads: 2^-2, 2^-4, 2^-6, 2^-8 (the 4-head
    # sequence), then 2^-1, 2^-3 (every other slope of the 8-head one).
    np.testing.assert_array_equal(alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    np.testing.assert_array_equal(alibi_slopes(6), 2.0 ** -np.array([2, 4, 6, 8, 1, 3]))
    # 12 heads: 2^-1 ... 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    expected12 = np.concatenate([2.0 ** -np.arange(1, 9), 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5])])
    np.testing.assert_allclose(alibi_slopes(12), expected12, rtol=1e-15)
    np.testing.assert_array_equal(alibi_slopes(1), [2.0**-8])


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 12, 16, 20, 40, 64, 96])
def test_slopes_match_the_recursive_construction(n):
    np.testing.assert_allclose(alibi_slopes(n), slopes_by_recursion(n), rtol=4e-16 * 16)


@settings(max_examples=30, deadline=None)
@given(k=st.integers(0, 9))
def test_slopes_geometric_for_powers_of_two(k):
    n = 2**k
    s = alibi_slopes(n)
    ratio = 2.0 ** (-8.0 / n)
    np.testing.assert_allclose(s[0], ratio, rtol=1e-15)
    np.testing.assert_allclose(s[1:] / s[:-1], ratio, rtol=1e-14)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300))
def test_slopes_interleave_the_next_power(n):
    s = alibi_slopes(n)
    assert s.shape == (n,) and np.all((s > 0) & (s < 1))
    assert len(np.unique(s)) == n
    p = 2 ** math.floor(math.log2(n))
    # each group is geometric with its own ratio
    np.testing.assert_allclose(s[1:p] / s[: p - 1], 2.0 ** (-8.0 / p), rtol=1e-13)
    if n - p > 1:
        np.testing.assert_allclose(s[p + 1 :] / s[p:-1], 2.0 ** (-8.0 / p), rtol=1e-13)
    # all slopes are among those of the next power of two
    pool = alibi_slopes(2 * p)
    assert np.all(np.min(np.abs(s[:, None] - pool[None, :]), axis=1) < 1e-15)


def test_bias_entries_and_shape():
    b = alibi_bias(5, 3)
    s = alibi_slopes(3)
    assert b.shape == (3, 5, 5)
    for h in range(3):
        for i in range(5):
            for j in range(5):
                assert b[h, i, j] == -s[h] * abs(i - j)
    assert alibi_bias(0, 2).shape == (2, 0, 0)


# --- T5 -------------------------------------------------------------------


def test_buckets_hand_computed_defaults():
    # bidirectional, 32 buckets, max distance 128: 16 per direction, 8 exact.
    offsets = [0, -1, -7, -8, -11, -12, -15, -16, -22, -23, -127, -128, -5000]
    expected = [0, 1, 7, 8, 8, 9, 9, 10, 10, 11, 15, 15, 15]
    np.testing.assert_array_equal(t5_relative_bucket(offsets), expected)
    np.testing.assert_array_equal(
        t5_relative_bucket(-np.array(offsets[1:])), np.array(expected[1:]) + 16
    )


def test_buckets_hand_computed_causal():
    # unidirectional: 32 buckets for offsets <= 0, 16 exact; future keys in bucket 0.
    offsets = [3, 0, -1, -15, -16, -19, -20, -128, -129]
    # -19: 16 + int(log(19/16) / log(8) * 16) = 16 + int(1.32) = 17
    expected = [0, 0, 1, 15, 16, 17, 17, 31, 31]
    expected[6] = 16 + int(math.log(20 / 16) / math.log(128 / 16) * 16)
    np.testing.assert_array_equal(t5_relative_bucket(offsets, bidirectional=False), expected)


@settings(max_examples=60, deadline=None)
@given(
    num_buckets=st.integers(4, 64),
    max_distance=st.integers(20, 1000),
    bidirectional=st.booleans(),
)
def test_buckets_monotone_in_distance(num_buckets, max_distance, bidirectional):
    half = num_buckets // 2 if bidirectional else num_buckets
    if max_distance <= half // 2:
        return
    distance = np.arange(0, 3 * max_distance)
    kwargs = dict(bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    past = t5_relative_bucket(-distance, **kwargs)
    assert np.all(np.diff(past) >= 0) and past.max() <= half - 1 and past.min() == 0
    assert np.all(past[distance >= max_distance] == past[-1])
    exact = half // 2
    np.testing.assert_array_equal(past[:exact], distance[:exact])
    if bidirectional:
        future = t5_relative_bucket(distance[1:], **kwargs)
        np.testing.assert_array_equal(future, past[1:] + half)
    else:
        assert np.all(t5_relative_bucket(distance, **kwargs) == 0)


def test_buckets_keep_shape():
    rel = np.arange(-4, 5)[None, :] - np.arange(3)[:, None]
    assert t5_relative_bucket(rel).shape == (3, 9)
    assert t5_relative_bucket(5).shape == ()


# --- Shaw -----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(length=st.integers(0, 30), k=st.integers(0, 10))
def test_shaw_indices_clip(length, k):
    idx = shaw_relative_indices(length, k)
    assert idx.shape == (length, length)
    for i in range(length):
        for j in range(length):
            assert idx[i, j] == min(max(j - i, -k), k) + k
    if length:
        assert idx.min() >= 0 and idx.max() <= 2 * k


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: alibi_slopes(0), ValueError, "n_heads"),
        (lambda: alibi_slopes(2.0), TypeError, "n_heads"),
        (lambda: alibi_bias(-1, 2), ValueError, "length"),
        (lambda: t5_relative_bucket([0.5]), TypeError, "relative_position"),
        (lambda: t5_relative_bucket([1], num_buckets=3), ValueError, "num_buckets"),
        (lambda: t5_relative_bucket([1], max_distance=8), ValueError, "max_distance"),
        (lambda: t5_relative_bucket([1], bidirectional=1), TypeError, "bidirectional"),
        (lambda: shaw_relative_indices(4, -1), ValueError, "max_relative_position"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
