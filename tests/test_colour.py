"""Tests of posenc.colour: the colour-vision-deficiency simulation and the measures built on it."""

import matplotlib
import numpy as np
import pytest

from posenc.colour import CVD_TYPES, colour_difference, sign_separation, simulate_cvd

RED, GREEN, BLUE = [0.8, 0.1, 0.1], [0.1, 0.6, 0.1], [0.1, 0.2, 0.8]


@pytest.mark.parametrize("kind", CVD_TYPES)
def test_severity_zero_is_normal_vision(kind):
    rgb = np.random.default_rng(0).uniform(0.05, 0.95, size=(20, 3))
    np.testing.assert_allclose(simulate_cvd(rgb, kind, severity=0), rgb, atol=1e-6)


@pytest.mark.parametrize("kind", CVD_TYPES)
def test_greys_stay_grey(kind):
    # The Machado matrices map the achromatic axis (nearly) to itself.
    greys = np.linspace(0.1, 0.9, 5)[:, None].repeat(3, axis=1)
    simulated = simulate_cvd(greys, kind)
    assert np.ptp(simulated, axis=1).max() < 0.02
    np.testing.assert_allclose(simulated.mean(axis=1), greys[:, 0], atol=0.02)


def test_red_green_confusion_and_blue_yellow_confusion():
    # Red and green look alike without M or L cones, not without S cones;
    # tritanomaly confuses what deuteranomaly keeps apart, and the other way round.
    normal = colour_difference(RED, GREEN)
    for kind in ("deuteranomaly", "protanomaly"):
        seen = colour_difference(simulate_cvd(RED, kind), simulate_cvd(GREEN, kind))
        assert seen < 0.5 * normal, kind
    tritan = colour_difference(simulate_cvd(RED, "tritanomaly"), simulate_cvd(GREEN, "tritanomaly"))
    assert tritan > 0.7 * normal


def test_simulation_keeps_shape_and_range():
    rgb = np.random.default_rng(1).uniform(0, 1, size=(4, 5, 3))
    for kind in CVD_TYPES:
        out = simulate_cvd(rgb, kind)
        assert out.shape == rgb.shape and out.min() >= 0 and out.max() <= 1


def test_colour_difference_scale():
    assert colour_difference(BLUE, BLUE) == pytest.approx(0.0, abs=1e-9)
    assert 90 < colour_difference([0, 0, 0], [1, 1, 1]) < 110


def test_sign_separation_of_diverging_and_sequential_maps():
    values = np.linspace(0, 1, 5)
    rdbu = sign_separation("RdBu_r", values)
    assert rdbu[0] == pytest.approx(0.0, abs=1e-9) and np.all(rdbu[1:] > 20)
    # A map that runs red to green (RdYlGn) loses its sign for deuteranomaly,
    # while RdBu_r keeps most of it: the measure tells the two apart.
    rdylgn = sign_separation("RdYlGn", [1.0], kind="deuteranomaly")[0]
    normal = sign_separation("RdYlGn", [1.0])[0]
    assert rdylgn < 0.5 * normal
    assert sign_separation("RdBu_r", [1.0], kind="deuteranomaly")[0] > 20
    assert "RdBu_r" in matplotlib.colormaps


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: simulate_cvd([[0.5, 0.5]], "deuteranomaly"), ValueError, r"shape \(\.\.\., 3\)"),
        (lambda: simulate_cvd([[0.5, 0.5, 1.5]], "protanomaly"), ValueError, r"\[0, 1\]"),
        (lambda: simulate_cvd(RED, "red-green"), ValueError, "kind must be one of"),
        (lambda: simulate_cvd(RED, "tritanomaly", severity=101), ValueError, "severity"),
        (lambda: simulate_cvd(RED, "tritanomaly", severity="full"), TypeError, "severity"),
        (lambda: simulate_cvd("red", "tritanomaly"), TypeError, "rgb"),
        (lambda: sign_separation("NoSuchMap", [0.5]), ValueError, "cmap"),
        (lambda: sign_separation("RdBu_r", [1.5]), ValueError, r"values must lie in \[0, 1\]"),
        (lambda: sign_separation("RdBu_r", [0.5], kind="blue"), ValueError, "kind"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
