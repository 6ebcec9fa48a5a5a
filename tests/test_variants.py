"""Tests of posenc.variants: layouts, spacings, offsets, codes at any position, float32 angles."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import frequencies, sinusoidal
from posenc.variants import (
    FLOAT32_RECIPES,
    SPACINGS,
    endpoint_base,
    float32_frequencies,
    padded_positions,
    sinusoidal_at,
    sinusoidal_float32,
    spaced_frequencies,
    split_permutation,
    timestep_embedding,
    timing_signal,
)

widths = st.integers(min_value=1, max_value=64)
wide_widths = st.integers(min_value=4, max_value=96)


def exact_code(k, column, d_model, base=10_000):
    """Interleaved PE[k, column] from mpmath at 40 digits."""
    with mpmath.workdps(40):
        angle = mpmath.mpf(k) * mpmath.power(base, mpmath.mpf(-2 * (column // 2)) / d_model)
        return float(mpmath.sin(angle) if column % 2 == 0 else mpmath.cos(angle))


def timing_signal_by_formula(length, d_model, base=10_000.0, start=0):
    """tensor2tensor's recipe written out directly: log-spaced timescales, sin half, cos half."""
    half = d_model // 2
    increment = math.log(base) / (half - 1)
    inv_timescales = np.exp(-increment * np.arange(half))
    scaled = np.arange(start, start + length)[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    return np.pad(signal, [(0, 0), (0, d_model % 2)])


def timestep_embedding_by_formula(positions, d_model, base, flip, shift):
    """diffusers' documented recipe written out in float64: exponent -ln(n) i / (h - s)."""
    half = d_model // 2
    exponent = -math.log(base) * np.arange(half) / (half - shift)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * np.exp(exponent)[None, :]
    signal = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    if flip:
        signal = np.concatenate([signal[:, half:], signal[:, :half]], axis=1)
    return np.pad(signal, [(0, 0), (0, d_model % 2)])


def keras_sine_position_encoding_by_formula(length, d_model, base=10_000.0, start=0):
    """Keras's documented SinePositionEncoding in float64: interleaved, (1/n)^(2(j//2)/d)."""
    columns = np.arange(d_model)
    timescales = (1.0 / base) ** (2 * (columns // 2) / d_model)
    angles = np.arange(start, start + length, dtype=np.float64)[:, None] * timescales
    cos_mask = columns % 2
    return np.sin(angles) * (1 - cos_mask) + np.cos(angles) * cos_mask


# --- layouts ---------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(d_model=widths, length=st.integers(0, 200))
def test_split_layout_is_the_interleaved_table_with_columns_permuted(d_model, length):
    perm = split_permutation(d_model)
    assert sorted(perm.tolist()) == list(range(d_model))
    interleaved = sinusoidal(length, d_model)
    np.testing.assert_array_equal(sinusoidal(length, d_model, layout="split"), interleaved[:, perm])
    # the inverse permutation restores the paper's order
    split = sinusoidal(length, d_model, layout="split")
    np.testing.assert_array_equal(split[:, np.argsort(perm)], interleaved)


def test_split_permutation_puts_sines_first():
    np.testing.assert_array_equal(split_permutation(8), [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(split_permutation(1), [0])


# --- spacings ---------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [4, 5, 64, 384, 512, 1023])
def test_endpoint_frequencies_match_the_formula_exactly(d_model):
    half = d_model // 2
    omega = spaced_frequencies(d_model, spacing="endpoint")
    assert omega.shape == (half,)
    with mpmath.workdps(40):
        exact = [float(mpmath.power(10_000, -mpmath.mpf(i) / (half - 1))) for i in range(half)]
    np.testing.assert_allclose(omega, exact, rtol=4e-16, atol=0)
    assert omega[0] == 1.0
    assert omega[-1] == pytest.approx(1e-4, rel=1e-15)


@pytest.mark.parametrize("d_model", [1, 2, 7, 512])
def test_paper_spacing_is_posenc_frequencies(d_model):
    np.testing.assert_array_equal(spaced_frequencies(d_model, 50.0), frequencies(d_model, 50.0))


@pytest.mark.parametrize(("d_model", "base"), [(4, 100.0), (512, 10_000.0), (130, 7.5)])
def test_endpoint_base_turns_the_paper_formula_into_the_endpoint_spacing(d_model, base):
    half = d_model // 2
    new_base = endpoint_base(d_model, base)
    with mpmath.workdps(50):
        exact = float(mpmath.power(base, mpmath.mpf(half) / (half - 1)))
    assert new_base == exact  # the float64 nearest n^(h/(h-1)), on every platform
    paper_with_new_base = new_base ** (-2 * np.arange(half) / (2 * half))
    direct = base ** (-np.arange(half) / (half - 1))
    np.testing.assert_allclose(paper_with_new_base, direct, rtol=1e-13)


def test_the_two_spacings_agree_only_on_the_first_pair():
    paper, endpoint = spaced_frequencies(64), spaced_frequencies(64, spacing="endpoint")
    assert paper[0] == endpoint[0] == 1.0
    assert np.all(endpoint[1:] < paper[1:])


@settings(max_examples=25, deadline=None)
@given(
    d_model=wide_widths,
    length=st.integers(0, 300),
    start=st.integers(0, 50),
    base=st.floats(10.0, 1e5),
)
def test_timing_signal_matches_the_tensor2tensor_recipe(d_model, length, start, base):
    np.testing.assert_allclose(
        timing_signal(length, d_model, base, start=start),
        timing_signal_by_formula(length, d_model, base, start),
        rtol=0,
        atol=1e-11,
    )


def test_timing_signal_odd_width_ends_with_a_zero_column():
    table = timing_signal(50, 9)
    np.testing.assert_array_equal(table[:, -1], 0.0)
    # the extra column changes nothing else: d // 2 pairs either way
    np.testing.assert_array_equal(table[:, :8], timing_signal(50, 8))


def test_timing_signal_is_accurate_against_mpmath():
    d_model, half = 256, 128
    table = timing_signal(3000, d_model)
    for k, i in [(2999, 1), (1234, 20), (2500, 127), (7, 64)]:
        with mpmath.workdps(40):
            angle = k * mpmath.power(10_000, -mpmath.mpf(i) / (half - 1))
            assert table[k, i] == pytest.approx(float(mpmath.sin(angle)), abs=1e-13)
            assert table[k, half + i] == pytest.approx(float(mpmath.cos(angle)), abs=1e-13)


@settings(max_examples=40, deadline=None)
@given(
    d_model=st.integers(2, 96),
    positions=st.lists(st.integers(0, 3000), min_size=0, max_size=20),
    flip=st.booleans(),
    shift=st.sampled_from([0.0, 1.0, 0.5, -1.0]),
    base=st.floats(10.0, 1e5),
)
def test_timestep_embedding_matches_the_diffusers_recipe(d_model, positions, flip, shift, base):
    if not shift < d_model // 2:
        return
    positions = np.array(positions, dtype=np.int64)
    np.testing.assert_allclose(
        timestep_embedding(positions, d_model, base, flip_sin_to_cos=flip, freq_shift=shift),
        timestep_embedding_by_formula(positions, d_model, base, flip, shift).reshape(
            len(positions), d_model
        ),
        rtol=0,
        atol=1e-11,
    )


@pytest.mark.parametrize("d_model", [4, 7, 64, 513])
def test_timestep_embedding_default_is_the_timing_signal(d_model):
    start, length = 5, 300
    np.testing.assert_allclose(
        timestep_embedding(np.arange(start, start + length), d_model),
        timing_signal(length, d_model, start=start),
        rtol=0,
        atol=1e-15,
    )


@pytest.mark.parametrize("d_model", [2, 8, 9, 512])
def test_timestep_embedding_cos_first_with_no_shift_is_the_paper_table_reordered(d_model):
    # diffusers' UNet2DConditionModel default: [cos | sin] at the paper's frequencies
    even = 2 * (d_model // 2)
    perm = np.concatenate([np.arange(1, even, 2), np.arange(0, even, 2)])
    table = timestep_embedding(np.arange(400), d_model, flip_sin_to_cos=True, freq_shift=0)
    np.testing.assert_allclose(table[:, :even], sinusoidal(400, even)[:, perm], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(table[:, even:], 0.0)


def test_timestep_embedding_keeps_the_shape_of_positions_and_is_accurate():
    positions = np.array([[0, 10**6], [7, 123_456]])
    table = timestep_embedding(positions, 12, freq_shift=0.5)
    assert table.shape == (2, 2, 12)
    half = 6
    with mpmath.workdps(40):
        for k, row in ((10**6, table[0, 1]), (123_456, table[1, 1])):
            for i in range(half):
                angle = k * mpmath.power(10_000, -mpmath.mpf(i) / (half - mpmath.mpf("0.5")))
                assert row[i] == pytest.approx(float(mpmath.sin(angle)), abs=1e-15)
                assert row[half + i] == pytest.approx(float(mpmath.cos(angle)), abs=1e-15)


@pytest.mark.parametrize("d_model", [1, 2, 5, 8, 63, 64])
def test_keras_sine_position_encoding_is_the_paper_table(d_model):
    # interleaved, the paper's spacing, and for odd widths a last sine column, as posenc
    np.testing.assert_allclose(
        keras_sine_position_encoding_by_formula(500, d_model),
        sinusoidal(500, d_model),
        rtol=0,
        atol=1e-12,
    )
    # its start_index: the rows of positions start, start + 1, ...
    np.testing.assert_allclose(
        keras_sine_position_encoding_by_formula(50, d_model, start=1000),
        sinusoidal_at(np.arange(1000, 1050), d_model),
        rtol=0,
        atol=1e-12,
    )


# --- offsets -------------------------------------------------------------------------


def positions_by_loop(tokens, padding_idx):
    out = np.empty_like(tokens)
    for r, row in enumerate(tokens):
        count = 0
        for c, token in enumerate(row):
            if token == padding_idx:
                out[r, c] = padding_idx
            else:
                count += 1
                out[r, c] = padding_idx + count
    return out


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=12), min_size=1, max_size=4),
    padding_idx=st.integers(0, 3),
)
def test_padded_positions_count_real_tokens_from_padding_idx_plus_one(tokens, padding_idx):
    width = max(len(row) for row in tokens)
    array = np.array([row + [padding_idx] * (width - len(row)) for row in tokens])
    np.testing.assert_array_equal(
        padded_positions(array, padding_idx), positions_by_loop(array, padding_idx)
    )


def test_padded_positions_one_dimensional_and_left_padding():
    np.testing.assert_array_equal(padded_positions([1, 1, 7, 8], padding_idx=1), [1, 1, 2, 3])
    np.testing.assert_array_equal(padded_positions([4, 5, 6], padding_idx=0), [1, 2, 3])


# --- codes at any position ---------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(d_model=widths, data=st.data())
def test_sinusoidal_at_equals_the_table_rows(d_model, data):
    length = 400
    positions = np.array(data.draw(st.lists(st.integers(0, length - 1), max_size=20)), dtype=int)
    for layout in ("interleaved", "split"):
        table = sinusoidal(length, d_model, layout=layout)
        np.testing.assert_allclose(
            sinusoidal_at(positions, d_model, layout=layout), table[positions], rtol=0, atol=1e-15
        )


def test_sinusoidal_at_keeps_the_shape_of_positions():
    positions = np.array([[0, 3, 5], [2, 2, 9]])
    codes = sinusoidal_at(positions, 6)
    assert codes.shape == (2, 3, 6)
    np.testing.assert_array_equal(codes[1, 0], codes[1, 1])
    np.testing.assert_allclose(codes[0, 2], sinusoidal(10, 6)[5], atol=1e-15)


@pytest.mark.parametrize("k", [10**6, 123_456_789, 2**40 + 3])
def test_sinusoidal_at_is_accurate_at_huge_positions(k):
    # The angle k * omega is formed with an error far below a float64 ulp of the
    # angle (the frequency to 40 digits, Dekker's two-product), so what is left
    # is the final rounding and the first-order correction's neglected term, at
    # most about (k * 2**-53)**2 / 2; float64 angles would be off by about
    # k * 2**-53 (1e-10 at k = 10**6, 1e-4 at k = 2**40).
    d_model = 12
    row = sinusoidal_at([k], d_model)[0]
    exact = [exact_code(k, j, d_model) for j in range(d_model)]
    np.testing.assert_allclose(row, exact, rtol=0, atol=4e-16 + (k * 2.0**-53) ** 2 / 2)


# --- float32 angles ---------------------------------------------------------------------


def test_float32_angles_lose_accuracy_in_proportion_to_the_position():
    d_model = 64
    errors = []
    for k in (10**3, 10**4, 10**5, 10**6):
        positions = np.arange(k, k + 64)
        reference = sinusoidal_at(positions, d_model)
        table = sinusoidal_float32(positions, d_model)
        assert table.dtype == np.float32
        error = np.abs(table.astype(np.float64) - reference).max()
        # half a float32 ulp of the angle, plus the frequency's own rounding, plus sin's error
        assert error <= (k + 64) * 2.0**-23 + 2e-7
        errors.append(error)
    assert errors[1] > 1e-4
    assert errors[3] > 1e-2
    assert np.all(np.diff(np.log10(errors)) > 0.7)


def test_casting_the_float64_code_to_float32_keeps_every_position_accurate():
    positions = np.array([0, 1, 10**4, 10**6, 10**7])
    exact = sinusoidal_at(positions, 32)
    np.testing.assert_allclose(exact.astype(np.float32), exact, rtol=0, atol=2.0**-25)


def test_float32_pair_zero_is_spared_because_its_frequency_is_one():
    positions = np.arange(10**6, 10**6 + 64)
    error = np.abs(sinusoidal_float32(positions, 16) - sinusoidal_at(positions, 16))
    assert error[:, :2].max() < 2e-7
    assert error[:, 2:].max() > 1e-3


def test_float32_sine_and_cosine_are_correctly_rounded():
    """Only the float32 angle is inexact: its sine and cosine are the float32 nearest the truth."""
    positions = np.array([0, 3, 777, 40_000, 1_234_567])
    d_model = 10
    table = sinusoidal_float32(positions, d_model)
    omega = frequencies(d_model).astype(np.float32)
    for row, k in zip(table, positions, strict=True):
        angles = np.float32(k) * omega  # the float32 angles the function works from
        for i, angle in enumerate(angles):
            exact = mpmath.mpf(float(angle))
            assert row[2 * i] == np.float32(float(mpmath.sin(exact)))
            assert row[2 * i + 1] == np.float32(float(mpmath.cos(exact)))


@pytest.mark.parametrize("d_model", [1, 7, 64, 512])
def test_exp_recipe_frequencies_follow_the_float32_steps(d_model):
    omega = float32_frequencies(d_model, recipe="exp")
    assert omega.dtype == np.float32 and omega.shape == ((d_model + 1) // 2,)
    step = np.float32(-math.log(10_000.0) / d_model)
    exponent = np.arange(0, d_model, 2, dtype=np.float32) * step
    assert exponent.dtype == np.float32
    with mpmath.workdps(40):
        exact = [float(mpmath.exp(mpmath.mpf(float(x)))) for x in exponent]
    # the exponential of the float32 exponent, correctly rounded to float32
    np.testing.assert_array_equal(omega, np.array(exact).astype(np.float32))
    # NumPy's own float32 exp gives the same frequencies to within a float32 ulp or two
    np.testing.assert_allclose(np.exp(exponent), omega, rtol=2.5e-7, atol=0)


@pytest.mark.parametrize("d_model", [16, 64, 512])
def test_exp_recipe_frequencies_are_the_same_on_every_machine(d_model):
    # The float64 exponential sits far from every float32 rounding boundary, so
    # any float64 exp accurate to a few ulps rounds to the same float32 value.
    exponent = np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-math.log(1e4) / d_model)
    wide = np.exp(exponent.astype(np.float64))
    low = wide.astype(np.float32).astype(np.float64)
    spacing = np.spacing(wide.astype(np.float32)).astype(np.float64)
    to_boundary = np.abs(np.abs(wide - low) - spacing / 2)
    assert np.all(to_boundary > 100 * np.spacing(wide))


def test_exp_recipe_is_worse_than_the_nearest_frequencies():
    d_model = 512
    exact = frequencies(d_model)
    nearest = np.abs(float32_frequencies(d_model).astype(np.float64) / exact - 1)
    recipe = np.abs(float32_frequencies(d_model, recipe="exp").astype(np.float64) / exact - 1)
    assert nearest.max() <= 2.0**-24
    assert 4 * 2.0**-24 < recipe.max() < 16 * 2.0**-24


def test_float32_table_with_the_exp_recipe_uses_its_frequencies():
    positions = np.arange(0, 5000, 7)
    table = sinusoidal_float32(positions, 10, recipe="exp")
    angle = (positions.astype(np.float32)[:, None] * float32_frequencies(10, recipe="exp")).astype(
        np.float64
    )
    np.testing.assert_array_equal(table[:, 0::2], np.sin(angle).astype(np.float32))
    np.testing.assert_array_equal(table[:, 1::2], np.cos(angle).astype(np.float32))
    assert FLOAT32_RECIPES == ("nearest", "exp")


def test_float32_odd_width():
    table = sinusoidal_float32(np.arange(5), 5, 100.0)
    np.testing.assert_allclose(table, sinusoidal(5, 5, 100.0), atol=1e-6)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: split_permutation(0), ValueError, "d_model must be an integer >= 1"),
        (lambda: split_permutation(2.0), TypeError, "d_model must be an integer"),
        (lambda: endpoint_base(3), ValueError, "d_model must be an integer >= 4"),
        (lambda: endpoint_base(8, -1.0), ValueError, "base must be a finite number > 0"),
        (lambda: spaced_frequencies(8, spacing="log"), ValueError, "spacing must be one of"),
        (lambda: spaced_frequencies(8, spacing=None), TypeError, "spacing must be one of"),
        (lambda: spaced_frequencies(2, spacing="endpoint"), ValueError, "d_model must be an"),
        (lambda: timing_signal(-1, 8), ValueError, "length must be an integer >= 0"),
        (lambda: timing_signal(4, 8, start=-2), ValueError, "start must be an integer >= 0"),
        (lambda: timing_signal(4, 8, start=1.0), TypeError, "start must be an integer"),
        (lambda: timing_signal(4, 3), ValueError, "d_model must be an integer >= 4"),
        (lambda: padded_positions([1.0, 2.0], 1), TypeError, "tokens must be an array of integ"),
        (lambda: padded_positions([[1, -2]], 1), ValueError, "tokens must contain integers >= 0"),
        (lambda: padded_positions(np.int64(3), 1), ValueError, "at least 1 dimension"),
        (lambda: padded_positions([1, 2], -1), ValueError, "padding_idx must be an integer >= 0"),
        (lambda: padded_positions([1, 2], None), TypeError, "padding_idx must be an integer"),
        (lambda: sinusoidal_at([0.5], 8), TypeError, "positions must be an array of integers"),
        (lambda: sinusoidal_at([True], 8), TypeError, "positions must be an array of integers"),
        (lambda: sinusoidal_at(["1"], 8), TypeError, "positions must be an array of integers"),
        (lambda: sinusoidal_at([3, -1], 8), ValueError, "positions must contain integers >= 0"),
        (lambda: sinusoidal_at([1], 0), ValueError, "d_model must be an integer >= 1"),
        (lambda: sinusoidal_at([1], 8, layout="halves"), ValueError, "layout must be one of"),
        (lambda: sinusoidal_at([1], 8, 0.0), ValueError, "base must be a finite number > 0"),
        (lambda: sinusoidal_float32([[1, 2]], 8), ValueError, "positions must have 1 dimension"),
        (lambda: sinusoidal_float32([1.5], 8), TypeError, "positions must be an array of integ"),
        (lambda: sinusoidal_float32([1], 8, "big"), TypeError, "base must be a real number"),
        (lambda: sinusoidal_float32([1], 8, recipe="log"), ValueError, "recipe must be one of"),
        (lambda: float32_frequencies(0), ValueError, "d_model must be an integer >= 1"),
        (lambda: timestep_embedding([1], 1), ValueError, "d_model must be an integer >= 2"),
        (lambda: timestep_embedding([1], 2), ValueError, "freq_shift must be < d_model // 2"),
        (lambda: timestep_embedding([1], 8, freq_shift=4), ValueError, "freq_shift must be <"),
        (lambda: timestep_embedding([1], 8, freq_shift="1"), TypeError, "freq_shift must be a"),
        (lambda: timestep_embedding([1], 8, flip_sin_to_cos=1), TypeError, "flip_sin_to_cos must"),
        (lambda: timestep_embedding([0.5], 8), TypeError, "positions must be an array of integ"),
    ],
)
def test_bad_input(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_spacings_constant():
    assert SPACINGS == ("paper", "endpoint")


def test_float32_table_rounds_each_angle_to_float32():
    # Independent recomputation: the float32 angle, with sin and cos taken in float64.
    length, d_model, base = 3000, 10, 10_000.0
    table = sinusoidal_float32(np.arange(length), d_model, base)
    assert table.dtype == np.float32 and table.shape == (length, d_model)
    omega32 = (base ** (-2 * np.arange(5) / d_model)).astype(np.float32)
    angle = (np.arange(length, dtype=np.float32)[:, None] * omega32).astype(np.float64)
    np.testing.assert_allclose(table[:, 0::2], np.sin(angle), atol=2e-7)
    np.testing.assert_allclose(table[:, 1::2], np.cos(angle), atol=2e-7)
