"""Tests of posenc.analysis against direct computations on the table, mpmath and brute force."""

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from posenc import (
    binary_encoding,
    cosine_distance_matrix,
    dot_product_matrix,
    relative_rotation,
    sinusoidal,
)
from posenc.analysis import (
    ShiftFit,
    code_errors,
    cosine_distance_wide_limit,
    decode_positions,
    first_decoding_failure,
    level_crossings,
    offset_cosine_distance,
    offset_distance,
    offset_dot_product,
    separation_profile,
    shift_fit,
)

even_widths = st.integers(min_value=1, max_value=24).map(lambda h: 2 * h)
bases = st.floats(min_value=1.5, max_value=1e5)


# --- functions of the offset --------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(d_model=even_widths, base=bases, length=st.integers(2, 120))
def test_offset_functions_match_the_table(d_model, base, length):
    table = sinusoidal(length, d_model, base)
    dots = dot_product_matrix(table)
    cos_dist = cosine_distance_matrix(table)
    offsets = np.arange(-(length - 1), length)
    dot_closed = offset_dot_product(offsets, d_model, base)
    cos_closed = offset_cosine_distance(offsets, d_model, base)
    for phi, dot, cosd in zip(offsets, dot_closed, cos_closed, strict=True):
        # Every entry on diagonal phi of the matrices equals the closed form.
        np.testing.assert_allclose(np.diagonal(dots, offset=phi), dot, atol=1e-11)
        np.testing.assert_allclose(np.diagonal(cos_dist, offset=phi), cosd, atol=1e-11)
    rows = np.linalg.norm(table[1:] - table[0], axis=1)
    np.testing.assert_allclose(
        offset_distance(np.arange(1, length), d_model, base), rows, atol=1e-11
    )


def test_offset_functions_against_plain_sums():
    omega = 10_000.0 ** (-np.arange(8) / 8)  # d = 16
    phi = np.array([0.0, 1.0, -3.0, 250.0, 1e5])
    expected_dot = np.cos(np.outer(phi, omega)).sum(axis=1)
    np.testing.assert_allclose(offset_dot_product(phi, 16), expected_dot, atol=1e-10)
    np.testing.assert_allclose(offset_cosine_distance(phi, 16), 1 - expected_dot / 8, atol=1e-10)
    np.testing.assert_allclose(offset_distance(phi, 16) ** 2, 16 - 2 * expected_dot, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(d_model=even_widths, base=bases, phi=st.integers(-(10**6), 10**6))
def test_offset_functions_are_even(d_model, base, phi):
    for func in (offset_dot_product, offset_cosine_distance, offset_distance):
        assert func(phi, d_model, base) == pytest.approx(func(-phi, d_model, base), abs=1e-9)


def test_offset_functions_keep_shape():
    offsets = np.arange(6).reshape(2, 3)
    for func in (offset_dot_product, offset_cosine_distance, offset_distance):
        assert func(offsets, 4).shape == (2, 3)
        assert func(5, 4).shape == ()


def test_small_offsets_keep_relative_accuracy():
    # 1 - cos(x) for tiny x cancels to nothing in plain arithmetic; the closed
    # form must keep all its digits. Reference: mpmath with 40 digits.
    d_model, base = 8, 10_000
    for phi in (1e-9, 1e-4, 0.5):
        with mpmath.workdps(40):
            exact = sum(
                1 - mpmath.cos(mpmath.mpf(phi) * mpmath.power(base, mpmath.mpf(-2 * i) / d_model))
                for i in range(d_model // 2)
            )
            exact = float(2 * exact / d_model)
        assert offset_cosine_distance(phi, d_model, base) == pytest.approx(exact, rel=1e-12)
        assert offset_distance(phi, d_model, base) == pytest.approx(
            math.sqrt(d_model * exact), rel=1e-12
        )


def test_dot_product_is_d_over_2_at_zero_and_bounded():
    phi = np.arange(-500, 500)
    dots = offset_dot_product(phi, 12, 50.0)
    assert dots[500] == pytest.approx(6.0)
    assert np.all(np.abs(dots) <= 6.0 + 1e-12)


# --- wide limit ---------------------------------------------------------------


@pytest.mark.parametrize("base", [100.0, 10_000.0, 1e6])
def test_wide_limit_against_numerical_integral(base):
    for phi in (0.01, 1.0, 7.0, 300.0):
        # Break the oscillating integrand at every multiple of pi.
        points = [phi / base, *np.arange(math.pi, phi, math.pi), phi]
        value = sum(
            integrate.quad(lambda t: (1 - math.cos(t)) / t, a, b, epsabs=1e-14)[0]
            for a, b in itertools.pairwise(points)
        )
        assert cosine_distance_wide_limit(phi, base) == pytest.approx(
            value / math.log(base), abs=1e-10
        )


def test_wide_limit_at_large_offsets_against_mpmath():
    # Cin(x) = gamma + ln x - Ci(x), with mpmath's own cosine integral.
    def cin(x):
        return mpmath.euler + mpmath.log(x) - mpmath.ci(x)

    for phi, base in ((5e4, 100.0), (3e6, 10_000.0)):
        with mpmath.workdps(30):
            exact = float((cin(phi) - cin(mpmath.mpf(phi) / base)) / mpmath.log(base))
        assert cosine_distance_wide_limit(phi, base) == pytest.approx(exact, abs=1e-12)


def test_wide_limit_is_the_limit_of_wide_codes():
    # The Riemann sum over 2**14 pairs is within 1e-3 of the integral for moderate offsets.
    phi = np.arange(0, 200)
    wide = offset_cosine_distance(phi, 2**15, 10_000.0)
    np.testing.assert_allclose(cosine_distance_wide_limit(phi, 10_000.0), wide, atol=1e-3)


def test_wide_limit_is_even_zero_at_zero_and_continuous_at_the_series_switch():
    assert cosine_distance_wide_limit(0, 100.0) == 0
    np.testing.assert_allclose(
        cosine_distance_wide_limit([-3.5, 3.5], 100.0)[0],
        cosine_distance_wide_limit(3.5, 100.0),
    )
    # Cin switches from its series to scipy's Ci at x = 1e-3 (offset 1e-3 * base).
    below, above = cosine_distance_wide_limit([0.1 - 1e-12, 0.1 + 1e-12], 100.0)
    assert above == pytest.approx(below, rel=1e-9)


def test_wide_limit_grows_like_the_log_of_the_offset():
    # For 1 << phi << n the limit is close to (ln phi + Euler's gamma) / ln n.
    base = 1e8
    phi = np.array([100.0, 1000.0, 10_000.0])
    estimate = (np.log(phi) + np.euler_gamma) / np.log(base)
    np.testing.assert_allclose(cosine_distance_wide_limit(phi, base), estimate, atol=1e-3)


# --- separation ---------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(d_model=even_widths, base=bases, length=st.integers(1, 80))
def test_separation_profile_is_the_smallest_pairwise_distance(d_model, base, length):
    table = sinusoidal(length, d_model, base)
    profile = separation_profile(length, d_model, base)
    assert profile.shape == (length,)
    assert profile[0] == np.inf
    diffs = np.linalg.norm(table[:, None, :] - table[None, :, :], axis=2)
    for p in range(1, length):
        block = diffs[: p + 1, : p + 1]
        smallest = block[~np.eye(p + 1, dtype=bool)].min()
        assert profile[p] == pytest.approx(smallest, abs=1e-10)


def test_separation_of_two_columns_collapses_at_near_multiples_of_2pi():
    # d = 2: codes are points (sin k, cos k) on a circle; offset 44 is within
    # 0.018 rad of 7 turns, so the separation drops to 2 sin(0.0177 / 2).
    profile = separation_profile(50, 2)
    assert profile[44] == pytest.approx(2 * abs(math.sin((44 - 14 * math.pi) / 2)), rel=1e-12)
    assert profile[43] > 0.1


# --- decoding -----------------------------------------------------------------


def brute_force_first_failure(codes, d_model, base):
    """Smallest max(k, j) over pairs where row k is at least as close to PE_j as to PE_k."""
    table = sinusoidal(codes.shape[0], d_model, base)
    dist_sq = ((codes[:, None, :] - table[None, :, :]) ** 2).sum(axis=2)
    own = np.diag(dist_sq)
    confused = dist_sq <= own[:, None]
    np.fill_diagonal(confused, False)
    k, j = np.nonzero(confused)
    return int(np.maximum(k, j).min()) if k.size else None


@settings(max_examples=60, deadline=None)
@given(
    d_model=st.integers(1, 9),
    base=st.floats(2.0, 1e4),
    length=st.integers(1, 90),
    noise=st.floats(1e-4, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_first_decoding_failure_matches_brute_force(d_model, base, length, noise, seed):
    rng = np.random.default_rng(seed)
    codes = sinusoidal(length, d_model, base) + noise * rng.standard_normal((length, d_model))
    assert first_decoding_failure(codes, d_model, base) == brute_force_first_failure(
        codes, d_model, base
    )


def test_first_decoding_failure_beyond_the_first_prefix():
    # 3000 rows: the search goes through prefixes of 1024 and 2048 rows first.
    rng = np.random.default_rng(1)
    d_model, base, length = 2, 10_000.0, 3000
    codes = sinusoidal(length, d_model, base)
    # Small errors everywhere, then a large one late in the table.
    codes += 1e-7 * rng.standard_normal(codes.shape)
    codes[2500] += 0.05
    expected = brute_force_first_failure(codes, d_model, base)
    assert expected is not None and expected > 2048
    assert first_decoding_failure(codes, d_model, base) == expected


def test_exact_codes_decode_and_copied_codes_fail():
    codes = sinusoidal(2000, 4, 100.0)
    assert first_decoding_failure(codes, 4, 100.0) is None
    codes[1500] = codes[10]
    assert first_decoding_failure(codes, 4, 100.0) == 1500


def test_decode_positions_matches_a_plain_loop():
    rng = np.random.default_rng(2)
    length, d_model = 300, 6
    queries = rng.uniform(-1, 1, size=(40, d_model))
    table = sinusoidal(length, d_model)
    expected = [int(np.argmin(np.linalg.norm(table - q, axis=1))) for q in queries]
    np.testing.assert_array_equal(decode_positions(queries, length, d_model), expected)


def test_decode_positions_uses_blocks_for_long_tables(monkeypatch):
    import posenc.analysis as analysis

    monkeypatch.setattr(analysis, "_DECODE_BLOCK_ELEMENTS", 1000)
    codes = sinusoidal(700, 8) + 1e-3
    np.testing.assert_array_equal(analysis.decode_positions(codes, 700, 8), np.arange(700))


def test_decode_positions_breaks_ties_towards_the_smaller_position():
    # Halfway between PE_0 and PE_1 of a 2-column code, both are equally close.
    table = sinusoidal(2, 2, 10.0)
    assert decode_positions((table[:1] + table[1:]) / 2, 2, 2, 10.0)[0] == 0


def test_code_errors():
    codes = sinusoidal(5, 4)
    codes[3] += [0.3, 0.4, 0.0, 0.0]
    np.testing.assert_allclose(code_errors(codes, 4), [0, 0, 0, 0.5, 0], atol=1e-15)


# --- shift fit ------------------------------------------------------------------


@pytest.mark.parametrize("offset", [1, 5, -7, 40])
def test_shift_fit_recovers_the_rotation(offset):
    fit = shift_fit(sinusoidal(400, 8), offset)
    assert isinstance(fit, ShiftFit)
    assert fit.residual < 1e-12
    np.testing.assert_allclose(fit.matrix, relative_rotation(offset, 8), atol=1e-9)


def test_shift_fit_recovers_a_known_linear_recurrence():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3)) / 2
    rows = [rng.normal(size=3)]
    for _ in range(30):
        rows.append(a @ rows[-1])
    fit = shift_fit(np.array(rows), 1)
    np.testing.assert_allclose(fit.matrix, a, atol=1e-9)
    assert fit.residual < 1e-12


def test_shift_fit_fails_for_sines_alone():
    # Row 0 of the sine columns is zero, and any matrix maps zero to zero,
    # while row phi is not zero: no matrix can shift the sine columns.
    sines = sinusoidal(400, 8)[:, 0::2]
    fit = shift_fit(sines, 1)
    assert fit.residual > 0.1
    np.testing.assert_allclose(fit.matrix @ sines[0], 0.0)


def test_shift_fit_of_zero_rows_has_zero_residual():
    assert shift_fit(np.zeros((5, 2)), 1).residual == 0.0


# --- level crossings ----------------------------------------------------------------


def test_level_crossings_of_binary_counter():
    length = 100
    flips = level_crossings(binary_encoding(length, 7), level=0.5)
    # Bit j flips whenever k passes a multiple of 2**j.
    np.testing.assert_array_equal(flips, [(length - 1) // 2**j for j in range(7)])


def test_level_crossings_of_sine_columns():
    # sin(k w) changes sign each time k w passes a multiple of pi, so over
    # positions 0..L-1 it does floor((L - 1) w / pi) times.
    length = 10_000
    table = sinusoidal(length, 8, 100.0)
    expected = np.floor((length - 1) * 100.0 ** (-2 * np.arange(4) / 8) / np.pi)
    np.testing.assert_array_equal(level_crossings(table[:, 0::2]), expected)


def test_level_crossings_against_a_loop():
    rng = np.random.default_rng(4)
    table = rng.normal(size=(50, 3))
    expected = [
        sum((table[k, j] >= 0.2) != (table[k + 1, j] >= 0.2) for k in range(49)) for j in range(3)
    ]
    np.testing.assert_array_equal(level_crossings(table, 0.2), expected)


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("func", [offset_dot_product, offset_cosine_distance, offset_distance])
def test_offset_functions_bad_input(func):
    with pytest.raises(ValueError, match="d_model must be an even integer >= 2"):
        func([1, 2], 5)
    with pytest.raises(ValueError, match="d_model must be an integer >= 2"):
        func([1, 2], 0)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        func([1, 2], 4.0)
    with pytest.raises(TypeError, match="offsets must be an array of real numbers"):
        func(["a"], 4)
    with pytest.raises(ValueError, match="offsets must contain only finite numbers"):
        func([np.nan], 4)
    with pytest.raises(ValueError, match=r"offsets must be at most 2\*\*53"):
        func([1e17], 4)
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        func([1], 4, -2.0)


def test_wide_limit_bad_input():
    with pytest.raises(ValueError, match="base must be a finite number > 1"):
        cosine_distance_wide_limit([1.0], 1.0)
    with pytest.raises(TypeError, match="base must be a real number"):
        cosine_distance_wide_limit([1.0], "100")
    with pytest.raises(ValueError, match="offsets must contain only finite numbers"):
        cosine_distance_wide_limit([np.inf], 100.0)


def test_separation_profile_bad_input():
    with pytest.raises(ValueError, match="length must be an integer >= 1"):
        separation_profile(0, 4)
    with pytest.raises(ValueError, match="d_model must be an even integer"):
        separation_profile(10, 3)
    with pytest.raises(TypeError, match="length must be an integer"):
        separation_profile(10.0, 4)


def test_decoding_bad_input():
    good = sinusoidal(4, 4)
    with pytest.raises(ValueError, match=r"codes must have shape \(any, 4\)"):
        first_decoding_failure(good[:, :3], 4)
    with pytest.raises(ValueError, match="codes must have 2 dimensions"):
        decode_positions(good.ravel(), 4, 4)
    with pytest.raises(ValueError, match="codes must have at least one row"):
        first_decoding_failure(np.zeros((0, 4)), 4)
    with pytest.raises(ValueError, match="length must be an integer >= 1"):
        decode_positions(good, 0, 4)
    with pytest.raises(ValueError, match="codes must contain only finite numbers"):
        code_errors(np.full((2, 4), np.nan), 4)
    with pytest.raises(ValueError, match="d_model must be an integer >= 1"):
        code_errors(good, 0)


def test_shift_fit_bad_input():
    with pytest.raises(ValueError, match="table must have 2 dimensions"):
        shift_fit(np.ones(5), 1)
    with pytest.raises(ValueError, match="table must have at least 2 rows"):
        shift_fit(np.ones((1, 3)), 0)
    with pytest.raises(ValueError, match=r"offset must be an integer >= -4 and <= 4"):
        shift_fit(np.ones((5, 3)), 5)
    with pytest.raises(TypeError, match="offset must be an integer"):
        shift_fit(np.ones((5, 3)), 1.0)


def test_level_crossings_bad_input():
    with pytest.raises(ValueError, match="table must have 2 dimensions"):
        level_crossings(np.ones(4))
    with pytest.raises(ValueError, match="level must be a finite number"):
        level_crossings(np.ones((4, 2)), np.inf)
