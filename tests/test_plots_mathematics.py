"""Tests of posenc.plots.mathematics: every figure draws the right data, labelled and coloured."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc import binary_encoding, frequencies, plots, sinusoidal, wavelengths
from posenc.analysis import (
    cosine_distance_wide_limit,
    offset_cosine_distance,
    offset_dot_product,
    separation_profile,
    shift_fit,
)
from posenc.plots import mathematics


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def labelled(ax):
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def test_exported_from_plots_package():
    for name in mathematics.__all__:
        assert getattr(plots, name) is getattr(mathematics, name)
        assert name in plots.__all__


def test_figures_are_detached_from_pyplot():
    # Closed in pyplot, so a notebook does not show them a second time.
    for fig in (
        plots.frequency_wavelength_figure(8, 100.0),
        plots.separation_figure({"d = 2": separation_profile(20, 2)}),
    ):
        assert isinstance(fig, Figure)
    assert plt.get_fignums() == []


def test_axes_carry_units():
    # Positions in "(positions)", columns as an index, quantities without unit said so.
    freq = plots.frequency_wavelength_figure(8, 100.0)
    binary = plots.binary_sinusoidal_figure(8, 3, 6)
    dots = plots.dot_product_offset_figure(16, 4)
    sep = plots.separation_figure({"d = 2": separation_profile(20, 2)})
    separation = separation_profile(20, 2)
    decoding = plots.decoding_figure(separation, {"a": np.zeros(20)}, {"a": None})
    assert [ax.get_xlabel() for ax in freq.axes] == ["column j (index)"] * 2
    bits_ax, sin_ax, bits_bar, sin_bar = binary.axes
    assert bits_ax.get_xlabel() == "bit j (index, least significant first)"
    assert sin_ax.get_xlabel() == "column j (index)"
    assert bits_ax.get_ylabel() == sin_ax.get_ylabel() == "position k (positions)"
    assert bits_bar.get_ylabel() == "bit value (no unit)"
    assert sin_bar.get_ylabel() == "value of PE[k, j] (no unit)"
    matrix_ax, offset_ax, dots_bar = dots.axes
    assert matrix_ax.get_xlabel() == "position k′ (positions)"
    assert matrix_ax.get_ylabel() == "position k (positions)"
    assert offset_ax.get_xlabel().endswith("(positions)")
    assert dots_bar.get_ylabel() == offset_ax.get_ylabel() == "dot product (no unit)"
    assert sep.axes[0].get_xlabel() == "last position p of the table (positions)"
    assert sep.axes[0].get_ylabel().endswith("(no unit)")
    assert decoding.axes[0].get_xlabel() == "position k (positions)"


def test_frequency_wavelength_figure_data_and_reference_lines():
    d, n = 16, 100.0
    fig = plots.frequency_wavelength_figure(d, n)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert labelled(left) and labelled(right) and left.get_title() and right.get_title()
    assert "positions" in right.get_ylabel() and "radians per position" in left.get_ylabel()
    np.testing.assert_allclose(left.lines[0].get_ydata(), np.repeat(frequencies(d, n), 2))
    np.testing.assert_allclose(right.lines[0].get_ydata(), np.repeat(wavelengths(d, n), 2))
    levels = [line.get_ydata()[0] for line in right.lines[1:]]
    np.testing.assert_allclose(
        levels, [2 * np.pi, 2 * np.pi * n ** ((d - 2) / d), 2 * np.pi * n], rtol=1e-12
    )
    assert right.get_yscale() == "log"


def test_frequency_wavelength_legend_clear_of_the_dots():
    fig = plots.frequency_wavelength_figure(512, 10_000.0)
    right = fig.axes[1]
    fig.canvas.draw()
    box = right.get_legend().get_window_extent()
    dots = right.lines[0].get_xydata()
    inside = [box.contains(*right.transData.transform(xy)) for xy in dots]
    assert not any(inside)


def test_binary_sinusoidal_figure_images():
    fig = plots.binary_sinusoidal_figure(16, 4, 6, 100.0)
    bits_ax, sin_ax = fig.axes[0], fig.axes[1]
    bits_image, sin_image = bits_ax.images[0], sin_ax.images[0]
    np.testing.assert_array_equal(bits_image.get_array(), binary_encoding(16, 4))
    np.testing.assert_allclose(sin_image.get_array(), sinusoidal(16, 6, 100.0))
    assert bits_image.get_cmap().name == plots.CMAP_SEQUENTIAL
    assert sin_image.get_cmap().name == plots.CMAP_DIVERGING
    low, high = sin_image.get_clim()
    assert low == -high  # diverging map centred on zero
    assert labelled(bits_ax) and labelled(sin_ax)


def test_shift_fit_figure_data():
    offsets = [1, 2, 5]
    fig = plots.shift_fit_figure(offsets, 4, 100.0, length=64)
    (ax,) = fig.axes
    full, sines, cosines = ax.lines
    table = sinusoidal(64, 4, 100.0)
    np.testing.assert_allclose(full.get_ydata(), [shift_fit(table, p).residual for p in offsets])
    np.testing.assert_allclose(
        sines.get_ydata(), [shift_fit(table[:, 0::2], p).residual for p in offsets]
    )
    np.testing.assert_allclose(
        cosines.get_ydata(), [shift_fit(table[:, 1::2], p).residual for p in offsets]
    )
    assert labelled(ax) and ax.get_yscale() == "log"


def test_dot_product_offset_figure_data():
    length, d, n = 20, 6, 50.0
    fig = plots.dot_product_offset_figure(length, d, n, position=7)
    matrix_ax, offset_ax = fig.axes[0], fig.axes[1]
    table = sinusoidal(length, d, n)
    np.testing.assert_allclose(matrix_ax.images[0].get_array(), table @ table.T)
    curve, points = offset_ax.lines[0], offset_ax.lines[1]
    np.testing.assert_allclose(points.get_xdata(), np.arange(length) - 7)
    np.testing.assert_allclose(points.get_ydata(), table @ table[7])
    np.testing.assert_allclose(
        curve.get_ydata(), offset_dot_product(curve.get_xdata(), d, n), atol=1e-12
    )
    assert matrix_ax.images[0].get_cmap().name == plots.CMAP_DIVERGING
    assert labelled(matrix_ax) and labelled(offset_ax)


def test_dot_product_offset_figure_bad_position():
    with pytest.raises(ValueError, match="position must be an integer >= 0 and <= 9"):
        plots.dot_product_offset_figure(10, 4, position=10)


def test_cosine_distance_offset_figure_data():
    fig = plots.cosine_distance_offset_figure(500, widths=(8, 32), bases=(100.0,))
    left, right = fig.axes
    offsets = left.lines[0].get_xdata()
    assert offsets[0] == 1 and offsets[-1] == 500
    np.testing.assert_allclose(left.lines[0].get_ydata(), offset_cosine_distance(offsets, 8))
    np.testing.assert_allclose(left.lines[1].get_ydata(), offset_cosine_distance(offsets, 32))
    np.testing.assert_allclose(left.lines[2].get_ydata(), cosine_distance_wide_limit(offsets))
    np.testing.assert_allclose(
        right.lines[0].get_ydata(), offset_cosine_distance(offsets, 512, 100.0)
    )
    # The wide limits: dashed, drawn below the curves (a curve that follows its
    # limit stays visible) and wider than them, named in the legend
    limit = right.lines[-1]
    np.testing.assert_allclose(limit.get_ydata(), cosine_distance_wide_limit(offsets, 100.0))
    assert limit.get_linestyle() == "--" and limit.get_zorder() < right.lines[0].get_zorder()
    assert limit.get_linewidth() > right.lines[0].get_linewidth()
    for ax in (left, right):
        curves = [line for line in ax.lines if line.get_linestyle() != "--"]
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert min(c.get_zorder() for c in curves) > max(c.get_zorder() for c in dashed)
    assert "wide limit, each n" in [t.get_text() for t in right.get_legend().get_texts()]
    assert "n = 100" in [t.get_text() for t in right.get_legend().get_texts()]
    assert left.get_xscale() == "log" and labelled(left) and right.get_xlabel()


def test_separation_figure_data():
    profile = separation_profile(1000, 2)
    fig = plots.separation_figure({"d = 2": profile})
    (line,) = fig.axes[0].lines
    np.testing.assert_allclose(line.get_ydata(), profile[line.get_xdata().astype(int)])
    assert fig.axes[0].get_xscale() == "log" and labelled(fig.axes[0])


def test_separation_figure_bad_profile():
    with pytest.raises(ValueError, match=r"profiles\['x'\] must have 1 dimensions"):
        plots.separation_figure({"x": np.ones((3, 3))})


def test_decoding_figure_marks_failures():
    length = 100
    separation = separation_profile(length, 2)
    errors = {"a": np.linspace(0, 0.5, length), "b": np.full(length, 1e-9)}
    fig = plots.decoding_figure(separation, errors, {"a": 42, "b": None})
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert labels[0] == "half the smallest separation"
    marker = ax.lines[labels.index("a: first failure, k = 42")]
    assert marker.get_xdata()[0] == 42
    assert marker.get_ydata()[0] == pytest.approx(errors["a"][42])
    assert not any(label.startswith("b: first failure") for label in labels)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), separation[ax.lines[0].get_xdata()] / 2)


def test_decoding_figure_bad_errors_shape():
    with pytest.raises(ValueError, match=r"errors\['a'\] must have shape \(10\)"):
        plots.decoding_figure(separation_profile(10, 2), {"a": np.zeros(9)}, {})


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (
            lambda: plots.frequency_wavelength_figure(1),
            ValueError,
            "d_model must be an integer >= 2",
        ),
        (lambda: plots.frequency_wavelength_figure(8, 1.0), ValueError, "base must be a finite"),
        (
            lambda: plots.binary_sinusoidal_figure(40, 5),
            ValueError,
            r"length must be <= 2\*\*d_model",
        ),
        (lambda: plots.binary_sinusoidal_figure(0), ValueError, "length must be an integer >= 1"),
        (lambda: plots.shift_fit_figure([[1]]), ValueError, "offsets must have 1 dimensions"),
        (lambda: plots.cosine_distance_offset_figure(1), ValueError, "max_offset must be"),
        (lambda: plots.dot_product_offset_figure(10, 5), ValueError, "d_model must be an even"),
    ],
)
def test_bad_input(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_turn_direction_figure_draws_both_turns_on_their_side():
    theta = 1.0
    code = np.array([np.cos(theta), -np.sin(theta)])
    rotary = np.array([np.cos(theta), np.sin(theta)])
    fig = plots.turn_direction_figure([1.0, 0.0], code, rotary)
    (ax,) = fig.axes
    assert ax.get_xlabel().endswith("(no unit)") and ax.get_ylabel().endswith("(no unit)")
    assert plt.get_fignums() == []
    # The two arcs end at the two turned points: rotary above the axis, the code below.
    arcs = [line for line in ax.lines if len(line.get_xdata()) == 60]
    ends = [(line.get_xdata()[-1], line.get_ydata()[-1]) for line in arcs]
    np.testing.assert_allclose(ends[0], 1.12 * rotary, atol=1e-12)
    np.testing.assert_allclose(ends[1], 1.12 * code, atol=1e-12)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "counter-clockwise" in texts and "(clockwise" in texts


def test_turn_direction_figure_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match="code_turn"):
        plots.turn_direction_figure([1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0])
