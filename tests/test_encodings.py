"""Tests of posenc.encodings: values, layouts, the rotation property, accuracy, bad input."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc import (
    binary_encoding,
    frequencies,
    index_encoding,
    index_over_length_encoding,
    one_hot_encoding,
    relative_rotation,
    sinusoidal,
    wavelengths,
)


def literal_loop(length, d_model, base=10_000.0):
    """The textbook double loop, written as plainly as possible."""
    table = np.zeros((length, d_model))
    for k in range(length):
        for i in range((d_model + 1) // 2):
            angle = k / base ** (2 * i / d_model)
            table[k, 2 * i] = math.sin(angle)
            if 2 * i + 1 < d_model:
                table[k, 2 * i + 1] = math.cos(angle)
    return table


def exact_value(k, column, d_model, base=10_000):
    """PE[k, column] to 30 significant digits with mpmath."""
    with mpmath.workdps(40):
        i = column // 2
        angle = mpmath.mpf(k) * mpmath.power(mpmath.mpf(base), mpmath.mpf(-2 * i) / d_model)
        value = mpmath.sin(angle) if column % 2 == 0 else mpmath.cos(angle)
        return float(value)


lengths = st.integers(min_value=0, max_value=300)
widths = st.integers(min_value=1, max_value=64)
even_widths = st.integers(min_value=1, max_value=32).map(lambda h: 2 * h)
bases = st.floats(min_value=1.5, max_value=1e5)


# --- shape, values, literal loop -----------------------------------------


@pytest.mark.parametrize(("length", "d_model"), [(0, 4), (1, 1), (7, 3), (50, 16), (513, 10)])
def test_shape_and_dtype(length, d_model):
    table = sinusoidal(length, d_model)
    assert table.shape == (length, d_model)
    assert table.dtype == np.float64


@pytest.mark.parametrize(
    ("length", "d_model", "base"),
    [
        (40, 6, 100.0),
        (300, 9, 10_000.0),
        (3000, 64, 10_000.0),
        (2000, 7, 50.0),
        (1024, 64, 10_000.0),
    ],
)
def test_equals_literal_double_loop(length, d_model, base):
    # The long tables exercise the block (multiply-add) path, the short ones the direct path.
    np.testing.assert_allclose(
        sinusoidal(length, d_model, base), literal_loop(length, d_model, base), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize(("length", "d_model"), [(8192, 1024), (1024, 64), (256, 256), (1000, 7)])
def test_long_tables_evaluate_few_angles_directly(monkeypatch, length, d_model):
    # The speed of the table comes from evaluating sin and cos for one block of
    # offsets and one row per block, and building the other rows with multiply-adds.
    import posenc.encodings as enc

    evaluated = []
    original = enc._sin_cos_exact_angle

    def counting(k, *args):
        evaluated.append(k.size)
        return original(k, *args)

    monkeypatch.setattr(enc, "_sin_cos_exact_angle", counting)
    table = enc.sinusoidal(length, d_model)
    assert sum(evaluated) <= length // 8 + 64
    np.testing.assert_allclose(table[-3:], literal_loop(length, d_model)[-3:], atol=1e-12)


def test_first_row_is_sin0_cos0():
    np.testing.assert_array_equal(sinusoidal(1, 7)[0], [0, 1, 0, 1, 0, 1, 0])


def test_odd_width_last_column_is_sine():
    d = 9
    table = sinusoidal(20, d)
    omega_last = 10_000.0 ** (-(d - 1) / d)
    np.testing.assert_allclose(table[:, -1], np.sin(np.arange(20) * omega_last), atol=1e-15)
    # The even-width prefix is not the same table: frequencies depend on d.
    assert not np.allclose(table[:, :8], sinusoidal(20, 8))


@settings(max_examples=60, deadline=None)
@given(length=lengths, d_model=widths, base=bases)
def test_values_bounded(length, d_model, base):
    table = sinusoidal(length, d_model, base)
    assert np.all(np.abs(table) <= 1.0)


@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 3000), d_model=even_widths, base=bases)
def test_every_row_has_norm_sqrt_half_d(length, d_model, base):
    norms = np.linalg.norm(sinusoidal(length, d_model, base), axis=1)
    np.testing.assert_allclose(norms, np.sqrt(d_model / 2), rtol=1e-13)


@settings(max_examples=40, deadline=None)
@given(length=lengths, d_model=widths, base=bases)
def test_split_is_a_column_permutation_of_interleaved(length, d_model, base):
    inter = sinusoidal(length, d_model, base)
    split = sinusoidal(length, d_model, base, layout="split")
    n_sin = (d_model + 1) // 2
    order = np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])
    np.testing.assert_array_equal(split, inter[:, order])
    assert split.shape == inter.shape and n_sin == order[:n_sin].size


@pytest.mark.parametrize("d_model", [1, 7, 64, 1024])
def test_same_code_whatever_the_length(d_model):
    # Position k gets the same code, bit for bit, in a short and in a long table.
    longest = sinusoidal(3000, d_model)
    for length in (0, 1, 5, 31, 32, 33, 64, 100, 1000, 2999):
        np.testing.assert_array_equal(sinusoidal(length, d_model), longest[:length])


# --- rotation property -----------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(0, 2000),
    offset=st.integers(-2000, 2000),
    d_model=even_widths,
    base=bases,
)
def test_relative_rotation_shifts_every_position(k, offset, d_model, base):
    if k + offset < 0:
        k = -offset
    table = sinusoidal(k + max(offset, 0) + 1, d_model, base)
    rotated = relative_rotation(offset, d_model, base) @ table[k]
    np.testing.assert_allclose(rotated, table[k + offset], atol=1e-11)


@settings(max_examples=30, deadline=None)
@given(offset=st.integers(-(10**6), 10**6), d_model=even_widths)
def test_relative_rotation_is_orthogonal_and_composes(offset, d_model):
    m = relative_rotation(offset, d_model)
    np.testing.assert_allclose(m @ m.T, np.eye(d_model), atol=1e-12)
    np.testing.assert_allclose(relative_rotation(-offset, d_model), m.T, atol=1e-15)
    both = relative_rotation(offset, d_model) @ relative_rotation(7, d_model)
    np.testing.assert_allclose(both, relative_rotation(offset + 7, d_model), atol=1e-9)


def test_relative_rotation_zero_is_identity():
    np.testing.assert_array_equal(relative_rotation(0, 8), np.eye(8))


def test_relative_rotation_rejects_odd_width():
    with pytest.raises(ValueError, match="d_model must be an even integer"):
        relative_rotation(1, 5)


# --- accuracy ----------------------------------------------------------------


@pytest.mark.parametrize("d_model", [16, 7])
def test_position_one_million_within_1e9_of_exact(d_model):
    k = 1_000_000
    row = sinusoidal(k + 1, d_model)[k]
    exact = np.array([exact_value(k, j, d_model) for j in range(d_model)])
    np.testing.assert_allclose(row, exact, rtol=0, atol=1e-9)


@pytest.mark.parametrize("d_model", [512, 384])
def test_code_of_position_one_million_from_the_rotation_is_exact(d_model):
    # A table of 1e6 x 512 would take 4 GB; M(1e6) applied to PE(0) gives the same row.
    k = 1_000_000
    row = relative_rotation(k, d_model) @ sinusoidal(1, d_model)[0]
    exact = np.array([exact_value(k, j, d_model) for j in range(d_model)])
    np.testing.assert_allclose(row, exact, rtol=0, atol=1e-9)


def test_large_positions_match_mpmath_on_a_wide_table():
    # Exact to a few units in the last place, not just to 1e-12.
    # 20,000 rows x 512 columns go through the block path; check sampled entries exactly.
    d_model, length = 512, 20_000
    table = sinusoidal(length, d_model)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, length, size=25)
    cols = rng.integers(0, d_model, size=25)
    for k, j in zip(rows, cols, strict=True):
        assert abs(table[k, j] - exact_value(int(k), int(j), d_model)) < 1e-14


def test_frequencies_are_correctly_rounded():
    d_model = 384  # 2i/d is not exactly representable for most i
    omega = frequencies(d_model)
    with mpmath.workdps(40):
        exact = [
            float(mpmath.power(10_000, mpmath.mpf(-2 * i) / d_model)) for i in range(d_model // 2)
        ]
    np.testing.assert_array_equal(omega, exact)


def test_frequencies_returns_a_fresh_array():
    first = frequencies(8)
    first[:] = -1.0
    assert np.all(frequencies(8) > 0)
    assert np.all(sinusoidal(3, 8)[0, 1::2] == 1.0)


def test_wavelength_range():
    lam = wavelengths(512)
    assert lam[0] == pytest.approx(2 * np.pi)
    assert lam[-1] == pytest.approx(2 * np.pi * 10_000 ** (510 / 512))
    assert lam[-1] < 2 * np.pi * 10_000
    assert np.all(np.diff(lam) > 0)


# --- naive schemes --------------------------------------------------------------


def test_naive_schemes_values():
    np.testing.assert_array_equal(index_encoding(3, 2), [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(index_over_length_encoding(4, 1).ravel(), [0, 0.25, 0.5, 0.75])
    np.testing.assert_array_equal(one_hot_encoding(3, 4), np.eye(3, 4))
    np.testing.assert_array_equal(one_hot_encoding(4, 4), np.eye(4))  # one column per position
    assert one_hot_encoding(0, 4).shape == (0, 4)
    bits = binary_encoding(8, 3)
    np.testing.assert_array_equal(bits @ [1, 2, 4], np.arange(8))


def test_naive_schemes_capacity_errors():
    with pytest.raises(ValueError, match="length must be <= d_model"):
        one_hot_encoding(5, 4)
    with pytest.raises(ValueError, match=r"length must be <= 2\*\*d_model"):
        binary_encoding(9, 3)
    assert binary_encoding(8, 3).shape == (8, 3)                    # 2**d_model codes fit
    assert binary_encoding(0, 80).shape == (0, 80)


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    "func",
    [
        sinusoidal,
        index_encoding,
        index_over_length_encoding,
        one_hot_encoding,
        binary_encoding,
    ],
)
@pytest.mark.parametrize(
    ("length", "d_model", "error", "pattern"),
    [
        (4.0, 8, TypeError, "length must be an integer"),
        ("4", 8, TypeError, "length must be an integer"),
        (True, 8, TypeError, "length must be an integer"),
        (4, 8.0, TypeError, "d_model must be an integer"),
        (4, np.bool_(True), TypeError, "d_model must be an integer"),
        (-1, 8, ValueError, "length must be an integer >= 0"),
        (4, 0, ValueError, "d_model must be an integer >= 1"),
    ],
)
def test_bad_shape_arguments(func, length, d_model, error, pattern):
    with pytest.raises(error, match=pattern):
        func(length, d_model)


def test_numpy_integers_are_accepted():
    np.testing.assert_array_equal(sinusoidal(np.int64(5), np.int32(4)), sinusoidal(5, 4))


@pytest.mark.parametrize(
    ("base", "error", "pattern"),
    [
        (0.0, ValueError, "base must be a finite number > 0"),
        (-5, ValueError, "base must be a finite number > 0"),
        (float("nan"), ValueError, "base must be a finite number"),
        (float("inf"), ValueError, "base must be a finite number"),
        ("10000", TypeError, "base must be a real number"),
        (None, TypeError, "base must be a real number"),
        (True, TypeError, "base must be a real number"),
    ],
)
def test_bad_base(base, error, pattern):
    for call in (
        lambda: sinusoidal(4, 8, base),
        lambda: relative_rotation(1, 8, base),
        lambda: frequencies(8, base),
    ):
        with pytest.raises(error, match=pattern):
            call()


def test_bad_layout():
    with pytest.raises(
        ValueError, match=r"layout must be one of \('interleaved', 'split'\), got 'halves'"
    ):
        sinusoidal(4, 8, layout="halves")
    with pytest.raises(TypeError, match="layout must be one of"):
        sinusoidal(4, 8, layout=None)


def test_bad_offset():
    with pytest.raises(TypeError, match="offset must be an integer"):
        relative_rotation(1.5, 8)


def test_public_api_is_exported():
    for name in posenc.__all__:
        assert hasattr(posenc, name), name
