"""Tests of posenc.rotary: the rotation, its offset-only score, the layouts, angles, the bound."""

import math

import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import apply_rotary, relative_rotation
from posenc.rotary import (
    layout_permutation,
    rope_decay_bound,
    rotary_angles,
    rotary_frequencies,
    rotary_score,
)

half_widths = st.integers(1, 16)
bases = st.sampled_from([10.0, 100.0, 10_000.0, 500_000.0])
positions = st.integers(-5000, 5000)


def pair_loop(x, positions, base):
    """RoPE as the paper writes it: a 2 x 2 rotation per pair (2i, 2i + 1), one loop each."""
    out = np.array(x, dtype=float)
    d = out.shape[1]
    for row, m in enumerate(positions):
        for i in range(d // 2):
            angle = m * base ** (-2 * i / d)
            a, b = out[row, 2 * i], out[row, 2 * i + 1]
            out[row, 2 * i] = a * math.cos(angle) - b * math.sin(angle)
            out[row, 2 * i + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


def test_exported():
    assert posenc.apply_rotary is apply_rotary
    assert "apply_rotary" in posenc.__all__


def test_matches_the_pair_loop():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 10))
    pos = np.array([0, 1, 2, 50, 300, 4000, -3])
    np.testing.assert_allclose(
        apply_rotary(x, pos, base=1000.0), pair_loop(x, pos, 1000.0), atol=1e-12
    )


def test_default_positions_and_float64():
    x = np.ones((3, 4), dtype=np.float32)
    out = apply_rotary(x)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, apply_rotary(x, np.arange(3)))
    np.testing.assert_array_equal(out[0], x[0])  # position 0 is the identity


def test_rows_are_the_transposed_rotation_of_chapter_2():
    # R_m = M(m)^T = M(-m): chapter 2's rotation, run backwards.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 8))
    for m in (1, 7, 100):
        np.testing.assert_allclose(
            apply_rotary(x, [m])[0], relative_rotation(m, 8).T @ x[0], atol=1e-12
        )


@settings(max_examples=60, deadline=None)
@given(
    half=half_widths,
    base=bases,
    m=positions,
    n=positions,
    shift=positions,
    seed=st.integers(0, 2**31),
)
def test_score_depends_on_the_offset_only(half, base, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 1, 2 * half))
    s1 = apply_rotary(q, [m], base=base)[0] @ apply_rotary(k, [n], base=base)[0]
    s2 = apply_rotary(q, [m + shift], base=base)[0] @ apply_rotary(k, [n + shift], base=base)[0]
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(s1 - s2) <= 1e-9 * scale
    closed = rotary_score(q[0], k[0], [m - n], base=base)[0]
    assert abs(s1 - closed) <= 1e-9 * scale


@settings(max_examples=60, deadline=None)
@given(
    half=half_widths,
    base=bases,
    layout=st.sampled_from(["interleaved", "split"]),
    seed=st.integers(0, 2**31),
)
def test_norm_preserved(half, base, layout, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 5, 2 * half))
    pos = rng.integers(-10_000, 10_000, size=5)
    out = apply_rotary(x, pos, base=base, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)


@settings(max_examples=60, deadline=None)
@given(half=half_widths, base=bases, seed=st.integers(0, 2**31))
def test_split_equals_interleaved_on_permuted_columns(half, base, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 6, 2 * half))
    p = layout_permutation(2 * half)
    interleaved = apply_rotary(x, base=base)
    split = apply_rotary(x[..., p], base=base, layout="split")
    np.testing.assert_array_equal(split, interleaved[..., p])


def test_layouts_differ_without_the_permutation():
    x = np.random.default_rng(3).normal(size=(5, 8))
    assert not np.allclose(apply_rotary(x), apply_rotary(x, layout="split"))


def test_layout_permutation_values():
    np.testing.assert_array_equal(layout_permutation(2), [0, 1])
    np.testing.assert_array_equal(layout_permutation(8), [0, 2, 4, 6, 1, 3, 5, 7])


def test_leading_axes_rotate_alike():
    x = np.random.default_rng(4).normal(size=(2, 3, 4, 6))
    out = apply_rotary(x, [5, 6, 7, 8])
    np.testing.assert_array_equal(out[1, 2], apply_rotary(x[1, 2], [5, 6, 7, 8]))


def test_rotary_angles_float64_against_mpmath():
    angles = rotary_angles([123_457], 64, base=10_000.0)[0]
    with mpmath.workdps(40):
        exact = [
            mpmath.mpf(123_457) * mpmath.power(10_000, mpmath.mpf(-2 * i) / 64) for i in range(32)
        ]
    np.testing.assert_allclose(angles, [float(a) for a in exact], rtol=3e-16)


def test_rotary_angles_low_precision_rounds_like_the_format():
    pos = np.arange(4096)
    for name, kind in (
        ("float16", np.float16),
        ("bfloat16", ml_dtypes.bfloat16),
        ("float32", np.float32),
    ):
        angles = rotary_angles(pos, 32, dtype=name)
        # every entry is a number of the format
        np.testing.assert_array_equal(angles, angles.astype(kind).astype(np.float64))
    # float16 represents every integer up to 2048, bfloat16 only up to 256
    assert np.array_equal(rotary_angles(pos[:2049], 2, dtype="float16")[:, 0], pos[:2049])
    b16 = rotary_angles(pos[:300], 2, dtype="bfloat16")[:, 0]
    assert np.array_equal(b16[:257], pos[:257]) and b16[257] != 257


def test_gpt_neox_1003_reproduced():
    # The report: seqlen 2048, dim 32, base 10000; emb[1857, 1] is 1044.2678 in
    # float32 and 1045 in float16, and the cosines differ by up to 0.78.
    exact = rotary_angles(np.arange(2048), 32)
    half = rotary_angles(np.arange(2048), 32, dtype="float16")
    assert half[1857, 1] == 1045.0
    assert abs(exact[1857, 1] - 1044.2678) < 1e-4
    err = np.abs(np.cos(half) - np.cos(exact)).max()
    assert 0.7 < err < 0.8


def test_rotary_score_is_even_for_symmetric_pairs_and_matches_rotations():
    rng = np.random.default_rng(5)
    q, k = rng.normal(size=(2, 12))
    offsets = np.arange(-40, 41)
    scores = rotary_score(q, k, offsets, base=100.0)
    direct = [apply_rotary(q[None], [o], base=100.0)[0] @ k for o in offsets]
    np.testing.assert_allclose(scores, direct, atol=1e-12)
    same = rotary_score(q, q, offsets, base=100.0)
    np.testing.assert_allclose(same, same[::-1], atol=1e-12)


def test_decay_bound_at_zero_and_symmetric():
    for d in (2, 16, 128):
        assert rope_decay_bound([0], d)[0] == (d / 2 + 1) / 2
    b = rope_decay_bound(np.arange(-300, 301), 64)
    np.testing.assert_allclose(b, b[::-1], atol=1e-12)
    assert b.argmax() == 300


@settings(max_examples=40, deadline=None)
@given(half=half_widths, base=bases, offset=positions, seed=st.integers(0, 2**31))
def test_decay_bound_bounds_every_score(half, base, offset, seed):
    # |score| <= max_i |h_{i+1} - h_i| * (d/2) * relative bound, with h_{d/2} = 0.
    rng = np.random.default_rng(seed)
    d = 2 * half
    q, k = rng.normal(size=(2, d))
    h = (q[0::2] + 1j * q[1::2]) * np.conj(k[0::2] + 1j * k[1::2])
    step = np.abs(np.diff(np.append(h, 0))).max()
    score = rotary_score(q, k, [offset], base=base)[0]
    bound = step * (d / 2) * rope_decay_bound([offset], d, base)[0]
    assert abs(score) <= bound * (1 + 1e-12) + 1e-12


def test_decay_bound_decays_on_average():
    b = rope_decay_bound(np.arange(0, 2000), 128)
    assert b[:10].mean() > 3 * b[1000:].mean()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: apply_rotary(np.ones((2, 3))), ValueError, "even"),
        (lambda: apply_rotary(np.ones(4)), ValueError, "length, d"),
        (lambda: apply_rotary(np.ones((2, 4)), [0, 1, 2]), ValueError, "must have 2 entries"),
        (lambda: apply_rotary(np.ones((2, 4)), [[0, 1]]), ValueError, "batch"),
        (lambda: apply_rotary(np.ones((3, 2, 4)), [[0, 1]] * 2), ValueError, "same batch"),
        (lambda: apply_rotary(np.ones((2, 4)), rotary_dim=6), ValueError, r"in \[2, 4\]"),
        (lambda: apply_rotary(np.ones((2, 4)), rotary_dim=3), ValueError, "rotary_dim must be an"),
        (lambda: apply_rotary(np.ones((2, 4)), angle_dtype="int8"), ValueError, "dtype"),
        (lambda: apply_rotary(np.ones((2, 4)), frequencies="torch"), ValueError, "frequencies"),
        (lambda: apply_rotary(np.ones((2, 4)), [0.0, 1.0]), TypeError, "integers"),
        (lambda: apply_rotary(np.ones((2, 4)), layout="halves"), ValueError, "layout"),
        (lambda: apply_rotary(np.ones((2, 4)), base=0.0), ValueError, "base"),
        (lambda: apply_rotary(np.ones((2, 4)), base="1e4"), TypeError, "base"),
        (lambda: apply_rotary([["a", "b"]]), TypeError, "x must be"),
        (lambda: apply_rotary(np.full((2, 4), np.nan)), ValueError, "finite"),
        (lambda: rotary_angles([0], 4, dtype="float8"), ValueError, "dtype"),
        (lambda: rotary_angles([[[0]]], 4), ValueError, r"\(length,\) or \(batch, length\)"),
        (lambda: rotary_frequencies(4, frequencies="exact"), ValueError, "nearest"),
        (lambda: rotary_frequencies(4, 1e39, frequencies="transformers"), ValueError, "float32"),
        (lambda: rotary_angles([70_000], 4, dtype="float16"), ValueError, "65504"),
        (lambda: rotary_angles([65_505], 4, dtype="float16"), ValueError, "float16"),
        (lambda: layout_permutation(5), ValueError, "even"),
        (lambda: rope_decay_bound([0], 0), ValueError, "d must be"),
        (lambda: rotary_score(np.ones(4), np.ones(6), [0]), ValueError, "k must have shape"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_batched_positions_rotate_each_sequence_by_its_own_positions():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 2, 5, 8))  # (batch, heads, length, d)
    pos = np.array([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11], [4, 0, 9, 2, 1]])
    for layout in ("interleaved", "split"):
        out = apply_rotary(x, pos, base=500.0, layout=layout)
        for b in range(3):
            np.testing.assert_array_equal(
                out[b], apply_rotary(x[b], pos[b], base=500.0, layout=layout)
            )
    angles = rotary_angles(pos, 8, 500.0)
    assert angles.shape == (3, 5, 4)
    np.testing.assert_array_equal(angles[1], rotary_angles(pos[1], 8, 500.0))


def test_rotary_dim_rotates_the_leading_columns_only():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 6, 10))
    pos = np.arange(40, 46)
    out = apply_rotary(x, pos, rotary_dim=4, layout="split")
    np.testing.assert_array_equal(out[..., 4:], x[..., 4:])
    np.testing.assert_array_equal(out[..., :4], apply_rotary(x[..., :4], pos, layout="split"))
    assert not np.allclose(out[..., :4], x[..., :4])


def test_transformers_frequencies_are_float32_and_close_to_the_nearest():
    for d, base in [(2, 10.0), (64, 10_000.0), (128, 500_000.0), (96, 1e6)]:
        theta = rotary_frequencies(d, base, frequencies="transformers")
        nearest = rotary_frequencies(d, base)
        np.testing.assert_array_equal(theta, theta.astype(np.float32))
        # Exponent, base, power and reciprocal each rounded: within (1 + ln b) float32 ulps.
        np.testing.assert_allclose(theta, nearest, rtol=(2 + math.log(base)) * 2.0**-24)
        assert theta[0] == 1.0
    np.testing.assert_array_equal(rotary_frequencies(8, 100.0), posenc.frequencies(8, 100.0))


def test_transformers_angles_in_float32_round_the_product_once():
    pos = np.array([0, 1, 4095, 100_000])
    theta32 = rotary_frequencies(128, 500_000.0, frequencies="transformers").astype(np.float32)
    want = pos.astype(np.float32)[:, None] * theta32[None, :]  # float32 * float32 -> float32
    got = rotary_angles(pos, 128, 500_000.0, dtype="float32", frequencies="transformers")
    np.testing.assert_array_equal(got, want.astype(np.float64))
    nearest = rotary_angles(pos, 128, 500_000.0, dtype="float32")
    assert np.abs(np.cos(got[2]) - np.cos(nearest[2])).max() > 1e-5  # the two conventions differ
