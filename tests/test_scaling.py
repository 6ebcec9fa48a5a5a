"""Tests for posenc.scaling: the context-extension rules of rotary embeddings."""

import math

import numpy as np
import pytest

from posenc import frequencies
from posenc.scaling import (
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
