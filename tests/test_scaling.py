"""Tests for posenc.scaling: the context-extension rules of rotary embeddings."""

import math

import numpy as np
import pytest

from posenc import frequencies
from posenc.rotary import rotary_frequencies
from posenc.scaling import (
    longrope_attention_factor,
    scale_factors,
    scaled_frequencies,
    yarn_attention_factor,
    yarn_correction_range,
)


@pytest.mark.parametrize("method", ["linear", "ntk", "yarn"])
@pytest.mark.parametrize("d", [4, 8, 64])
def test_factor_one_changes_nothing(method, d):
    got = scaled_frequencies(d, 500.0, method=method, factor=1.0, original_length=32)
    np.testing.assert_array_equal(got, frequencies(d, 500.0))
    assert got.dtype == np.float64 and got.shape == (d // 2,)


def test_linear_divides_every_frequency():
    got = scaled_frequencies(8, 10_000.0, method="linear", factor=4.0)
    np.testing.assert_allclose(got, [0.25, 0.025, 0.0025, 0.00025], rtol=1e-15)


def test_ntk_hand_computed_and_end_pairs():
    # d = 4, base 100, factor 2: the new base is 100 * 2**2 = 400, 400**-0.5 = 0.05.
    np.testing.assert_allclose(
        scaled_frequencies(4, 100.0, method="ntk", factor=2.0), [1.0, 0.05], rtol=1e-15
    )
    # In general the fastest pair is untouched and the slowest divided by the factor.
    for d, s in [(8, 3.0), (64, 4.0), (128, 8.0)]:
        ratio = scale_factors(d, 10_000.0, method="ntk", factor=s)
        assert ratio[0] == pytest.approx(1.0, rel=1e-14)
        assert ratio[-1] == pytest.approx(s, rel=1e-12)
        assert np.all(np.diff(ratio) > 0)


def test_yarn_correction_range_hand_computed():
    # Llama-2-like head: 128 * ln(4096 / (64 pi)) / (2 ln 1e4) = 20.94 -> 20;
    # 128 * ln(4096 / (2 pi)) / (2 ln 1e4) = 45.03 -> 46.
    assert yarn_correction_range(128, original_length=4096) == (20, 46)
    # d = 8, L = 16: the fast bound is negative (clamped to 0), the slow one 0.41 -> 1.
    assert yarn_correction_range(8, original_length=16) == (0, 1)
    # Very short context: both bounds clamp to 0.
    assert yarn_correction_range(8, original_length=4) == (0, 0)
    # Upper clamp at d - 1 (as in the reference code), reached for a huge context.
    assert yarn_correction_range(8, 10.0, original_length=10**9)[1] == 7


def test_yarn_hand_computed_values():
    theta = frequencies(128, 10_000.0)
    got = scaled_frequencies(128, method="yarn", factor=8.0, original_length=4096)
    # Pairs up to low = 20 keep their frequency, pairs from high = 46 on are divided by 8,
    # pair 33 is halfway up the ramp: (1 - 0.5) + 0.5 / 8 = 0.5625.
    np.testing.assert_array_equal(got[:21], theta[:21])
    np.testing.assert_allclose(got[46:], theta[46:] / 8.0, rtol=1e-15)
    np.testing.assert_allclose(got[33], theta[33] * 0.5625, rtol=1e-15)
    # d = 8, L = 16, factor 4: ramp (0, 1, 1, 1).
    np.testing.assert_allclose(
        scaled_frequencies(8, method="yarn", factor=4.0, original_length=16),
        [1.0, 0.025, 0.0025, 0.00025],
        rtol=1e-14,
    )
    # low == high == 0: the reference nudges high by 0.001, so pair 0 is kept, the rest divided.
    np.testing.assert_allclose(
        scale_factors(8, method="yarn", factor=2.0, original_length=4), [1.0, 2.0, 2.0, 2.0]
    )


def test_yarn_lies_between_extrapolation_and_interpolation():
    ratio = scale_factors(64, 10_000.0, method="yarn", factor=4.0, original_length=256)
    assert np.all(ratio >= 1.0 - 1e-15) and np.all(ratio <= 4.0 + 1e-12)
    assert np.all(np.diff(ratio) >= -1e-12)


def test_attention_factor():
    assert yarn_attention_factor(1.0) == 1.0
    assert yarn_attention_factor(0.5) == 1.0
    assert yarn_attention_factor(math.e) == pytest.approx(1.1, rel=1e-15)
    assert yarn_attention_factor(16.0) == pytest.approx(0.1 * math.log(16.0) + 1.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "cubic", "factor": 2.0}, ValueError, "method"),
        ({"method": "linear", "factor": 0.5}, ValueError, "factor must be >= 1"),
        ({"method": "linear", "factor": float("nan")}, ValueError, "factor"),
        ({"method": "linear", "factor": "2"}, TypeError, "factor"),
        ({"method": "yarn", "factor": 2.0}, ValueError, "original_length"),
        ({"method": "yarn", "factor": 2.0, "original_length": 0}, ValueError, "original_length"),
        ({"method": "yarn", "factor": 2.0, "original_length": 2.5}, TypeError, "original_length"),
        ({"method": "llama3"}, ValueError, "factor is required"),
        ({"method": "llama3", "factor": 8.0}, ValueError, "original_length is required"),
        (
            {"method": "llama3", "factor": 8.0, "original_length": 64, "low_freq_factor": 4.0},
            ValueError,
            "high_freq_factor must be > low_freq_factor",
        ),
        (
            {"method": "llama3", "factor": 8.0, "original_length": 64, "low_freq_factor": 0.0},
            ValueError,
            "low_freq_factor must be a finite number > 0",
        ),
        ({"method": "dynamic", "factor": 2.0}, ValueError, "original_length"),
        (
            {"method": "dynamic", "factor": 2.0, "original_length": 8, "current_length": 0},
            ValueError,
            "current_length",
        ),
        ({"method": "longrope", "original_length": 8}, ValueError, "short_factor is required"),
        (
            {"method": "longrope", "original_length": 8, "short_factor": [1] * 4,
             "long_factor": [1] * 3},
            ValueError,
            r"long_factor must have shape \(4\)",
        ),
        (
            {"method": "longrope", "original_length": 8, "short_factor": [1, 1, 0, 1],
             "long_factor": [1] * 4},
            ValueError,
            "short_factor must hold numbers > 0",
        ),
        (
            {"method": "yarn", "factor": 2.0, "original_length": 8, "beta_fast": 1.0},
            ValueError,
            "beta_fast must be > beta_slow",
        ),
        (
            {"method": "yarn", "factor": 2.0, "original_length": 8, "truncate": 0},
            TypeError,
            "truncate",
        ),
        ({"method": "linear", "factor": 2.0, "frequencies": "torch"}, ValueError, "frequencies"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        scaled_frequencies(8, **kwargs)


def test_bad_width_and_base():
    with pytest.raises(ValueError, match="d must be even"):
        scaled_frequencies(7, method="linear", factor=2.0)
    with pytest.raises(ValueError, match="d must be >= 4"):
        scaled_frequencies(2, method="ntk", factor=2.0)
    with pytest.raises(ValueError, match="base"):
        scaled_frequencies(8, 1.0, method="linear", factor=2.0)
    with pytest.raises(ValueError, match="factor"):
        yarn_attention_factor(0.0)


def test_dynamic_is_ntk_at_the_stretched_factor_and_unscaled_up_to_the_training_length():
    theta = frequencies(64, 10_000.0)
    for current in (None, 1, 100, 1000):
        got = scaled_frequencies(
            64, method="dynamic", factor=4.0, original_length=1000, current_length=current
        )
        np.testing.assert_array_equal(got, theta)
    # L' = 3000: 4 * 3 - 3 = 9, the static NTK rule at factor 9.
    got = scaled_frequencies(
        64, method="dynamic", factor=4.0, original_length=1000, current_length=3000
    )
    np.testing.assert_allclose(
        got, scaled_frequencies(64, method="ntk", factor=9.0), rtol=1e-14
    )


def test_llama3_three_bands_hand_computed():
    # d = 8, base 100: wavelengths 2 pi * (1, 3.16, 10, 31.6) = 6.3, 19.9, 62.8, 199;
    # L = 40, l = 1, h = 4: kept below L/h = 10, divided above L/l = 40, blended between.
    theta = frequencies(8, 100.0)
    got = scaled_frequencies(
        8, 100.0, method="llama3", factor=8.0, original_length=40,
        low_freq_factor=1.0, high_freq_factor=4.0,
    )
    g = (40 * theta[1] / (2 * math.pi) - 1.0) / 3.0
    assert 0 < g < 1
    assert got[0] == theta[0]
    assert got[1] == pytest.approx((1 - g) * theta[1] / 8 + g * theta[1], rel=1e-15)
    np.testing.assert_allclose(got[2:], theta[2:] / 8, rtol=1e-15)
    # With L = 8192 (Llama 3.1) the slowest pairs are divided by the factor exactly.
    ratio = scale_factors(128, 500_000.0, method="llama3", factor=8.0, original_length=8192)
    assert ratio[0] == 1.0 and ratio[-1] == pytest.approx(8.0, rel=1e-15)
    assert np.all(np.diff(ratio) >= 0)


def test_longrope_picks_the_list_by_the_current_length():
    short, long = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 8.0, 16.0]
    theta = frequencies(8, 100.0)
    kwargs = {"method": "longrope", "original_length": 64, "short_factor": short,
              "long_factor": long}
    for current, want in [(None, short), (64, short), (65, long)]:
        got = scaled_frequencies(8, 100.0, current_length=current, **kwargs)
        np.testing.assert_allclose(got, theta / np.array(want), rtol=1e-15)


def test_yarn_without_truncation_uses_the_fractional_ramp():
    low, high = yarn_correction_range(64, 150_000.0, original_length=4096, truncate=False)
    assert yarn_correction_range(64, 150_000.0, original_length=4096) == (
        math.floor(low), math.ceil(high))
    assert 0 < low < high < 32 and low != int(low)
    got = scale_factors(
        64, 150_000.0, method="yarn", factor=32.0, original_length=4096, truncate=False
    )
    ramp = np.clip((np.arange(32) - low) / (high - low), 0, 1)
    np.testing.assert_allclose(1 / got, 1 - ramp + ramp / 32, rtol=1e-14)
    # Other betas move the range: a larger beta_fast starts the ramp earlier.
    assert yarn_correction_range(64, original_length=4096, beta_fast=64.0)[0] < low


def test_transformers_frequencies_scale_the_float32_start():
    start = rotary_frequencies(64, 500_000.0, frequencies="transformers")
    got = scaled_frequencies(64, 500_000.0, method="linear", factor=4.0, frequencies="transformers")
    np.testing.assert_array_equal(got, start / 4.0)


def test_attention_factors():
    assert yarn_attention_factor(40.0, mscale=1.0, mscale_all_dim=1.0) == 1.0
    want = (0.1 * 0.707 * math.log(40) + 1) / (0.1 * math.log(40) + 1)
    assert yarn_attention_factor(40.0, mscale=0.707, mscale_all_dim=1.0) == pytest.approx(
        want, rel=1e-15)
    # Only one of them, or a zero: the plain rule, as transformers.
    assert yarn_attention_factor(40.0, mscale=0.5) == yarn_attention_factor(40.0)
    plain = yarn_attention_factor(40.0)
    assert yarn_attention_factor(40.0, mscale=0.0, mscale_all_dim=1.0) == plain
    assert longrope_attention_factor(1.0, 4096) == 1.0
    assert longrope_attention_factor(32.0, 4096) == pytest.approx(
        math.sqrt(1 + math.log(32) / math.log(4096)), rel=1e-15)
    with pytest.raises(ValueError, match="mscale must be >= 0"):
        yarn_attention_factor(4.0, mscale=-1.0)
    with pytest.raises(ValueError, match="original_length must be an integer >= 2"):
        longrope_attention_factor(4.0, 1)
