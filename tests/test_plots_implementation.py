"""Tests of posenc.plots.implementation: each figure draws the data it is given, labelled."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc import plots, sinusoidal
from posenc.plots.implementation import (
    plot_float_precision,
    plot_layouts,
    plot_learned_vs_fixed,
    plot_signal_ratio,
    plot_spacings,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def assert_labelled(fig):
    assert isinstance(fig, Figure)
    data_axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert data_axes
    for ax in data_axes:
        assert ax.get_xlabel() and ax.get_title()
    assert any(ax.get_ylabel() for ax in data_axes)


def test_figures_are_closed_in_pyplot_so_a_notebook_shows_them_once():
    plt.close("all")
    figures = [
        plot_layouts(np.zeros((3, 2)), np.zeros((3, 2))),
        plot_spacings([0.0], [0.0, 0.0]),
        plot_float_precision([1.0], {"a": [1.0]}),
        plot_signal_ratio([1.0], {"a": [1.0]}),
        plot_learned_vs_fixed(np.zeros((3, 2)), np.zeros((3, 2)), 1),
    ]
    assert plt.get_fignums() == []
    for fig in figures:
        fig.canvas.draw()  # a closed figure still renders


def test_functions_are_reexported_from_the_package():
    for name in (
        "plot_float_precision",
        "plot_layouts",
        "plot_learned_vs_fixed",
        "plot_signal_ratio",
        "plot_spacings",
    ):
        assert getattr(plots, name) is globals()[name]
        assert name in plots.__all__


def test_layouts_draws_both_tables_on_one_zero_centred_scale():
    interleaved = sinusoidal(30, 8)
    split = sinusoidal(30, 8, layout="split")
    fig = plot_layouts(interleaved, split)
    assert_labelled(fig)
    left, right = fig.axes[0].images[0], fig.axes[1].images[0]
    np.testing.assert_array_equal(left.get_array(), interleaved)
    np.testing.assert_array_equal(right.get_array(), split)
    assert left.get_clim() == right.get_clim() == (-1.0, 1.0)
    assert left.get_cmap().name == plots.CMAP_DIVERGING
    # the boundary between the sine and the cosine half is marked
    assert fig.axes[1].lines[0].get_xdata()[0] == pytest.approx(3.5)
    assert fig.axes[0].get_ylabel() == "position k (positions)"
    assert fig.axes[0].get_xlabel() == "column j (no unit)"
    assert fig.axes[2].get_ylabel() == "code value (no unit)"


def test_spacings_draws_the_frequency_drift_and_the_differences():
    drift = np.array([0.0, 0.002, 0.001])
    diff = np.array([0.0, 0.5, 1.0, 0.0, 0.5, 0.25])
    fig = plot_spacings(drift, diff)
    assert_labelled(fig)
    left, right = fig.axes
    np.testing.assert_array_equal(left.lines[0].get_ydata(), drift)
    np.testing.assert_array_equal(right.lines[0].get_ydata(), diff)
    assert right.lines[1].get_xdata()[0] == pytest.approx(2.5)
    assert "radians per position" in left.get_ylabel()
    assert left.get_xlabel().endswith("(no unit)") and right.get_ylabel().endswith("(no unit)")


def test_spacings_without_the_drift_panel_draws_the_differences_alone():
    drift = np.array([0.0, 0.002, 0.001])
    diff = np.array([0.0, 0.5, 1.0, 0.0, 0.5, 0.25])
    fig = plot_spacings(drift, diff, show_drift=False)
    assert_labelled(fig)
    (ax,) = fig.axes
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), diff)
    assert ax.lines[1].get_xdata()[0] == pytest.approx(2.5)
    assert ax.get_xlabel() == "column j (no unit)"
    with pytest.raises(ValueError, match="column_difference must have shape"):
        plot_spacings(drift, diff[:4], show_drift=False)


def test_float_precision_draws_one_line_per_method():
    positions = np.array([10, 100, 1000])
    errors = {"float32 angles": [1e-6, 1e-5, 1e-4], "float64 angles": [1e-15, 1e-14, 1e-13]}
    fig = plot_float_precision(positions, errors)
    assert_labelled(fig)
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert [line.get_label() for line in ax.lines] == list(errors)
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), errors["float64 angles"])
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), positions)
    assert ax.get_xlabel().endswith("(positions)")
    # the reference is the float64 code with exact angles, not an exact value
    assert "float64" in ax.get_title() and "exact value" not in ax.get_title()


def test_signal_ratio_draws_the_ratios_and_the_line_of_equal_size():
    fig = plot_signal_ratio([16, 64, 256], {"a": [0.3, 0.17, 0.09], "b": [1.4, 1.4, 1.4]})
    assert_labelled(fig)
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [0.3, 0.17, 0.09])
    assert ax.lines[-1].get_ydata()[0] == 1.0
    assert ax.get_xscale() == "log"
    # the scaled settings plot the norm of sqrt(d) * x, so the label must say so
    assert r"\sqrt{d}" in ax.get_ylabel() and ax.get_ylabel().endswith("(no unit)")


def test_signal_ratio_keeps_coinciding_series_visible():
    same = [1.4, 1.4, 1.4]
    fig = plot_signal_ratio([16, 64, 256], {"a": same, "b": same, "c": same})
    first, second, third = fig.axes[0].lines[:3]
    # the second line is dashed, hollow and on top of the solid ones
    assert first.get_linestyle() == "-" and third.get_linestyle() == "-"
    assert second.get_linestyle() == "--"
    assert second.get_markerfacecolor() == "none"
    assert second.get_zorder() > max(first.get_zorder(), third.get_zorder())


def test_learned_vs_fixed_marks_the_trained_rows():
    learned, fixed = np.zeros((10, 4)), sinusoidal(10, 4)
    fig = plot_learned_vs_fixed(learned, fixed, 6)
    assert_labelled(fig)
    for ax in fig.axes[:2]:
        assert ax.lines[0].get_ydata()[0] == pytest.approx(5.5)
    np.testing.assert_array_equal(fig.axes[1].images[0].get_array(), fixed)
    assert "positions >= 6" in fig.get_suptitle()
    # the figure says the toy's target was the sinusoid
    assert "sinusoid" in fig.axes[0].get_title()
    assert "reproduce the sinusoid" in fig.get_suptitle()
    assert fig.axes[0].get_ylabel() == "position k (positions)"


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: plot_layouts(np.zeros((3, 4)), np.zeros((3, 5))), ValueError, "split must have"),
        (lambda: plot_layouts(np.zeros(4), np.zeros(4)), ValueError, "interleaved must have 2"),
        (lambda: plot_spacings([[0.1]], [0, 0]), ValueError, "frequency_difference must have 1"),
        (lambda: plot_spacings([0, 0.1], [0, 0]), ValueError, "column_difference must have shape"),
        (lambda: plot_spacings([0, 0.1], [0, -1, 0, 0]), ValueError, "must be >= 0"),
        (lambda: plot_spacings([0, np.nan], [0] * 4), ValueError, "only finite numbers"),
        (lambda: plot_float_precision([1, 2], {"a": [1e-3]}), ValueError, "series 'a' must have"),
        (lambda: plot_float_precision([1, 2], {"a": [0, 1e-3]}), ValueError, "must be > 0"),
        (lambda: plot_float_precision([0, 2], {"a": [1, 1]}), ValueError, "positions must be > 0"),
        (lambda: plot_float_precision([1, 2], {}), TypeError, "non-empty mapping"),
        (lambda: plot_float_precision([1, 2], [1, 2]), TypeError, "non-empty mapping"),
        (
            lambda: plot_signal_ratio([1], {str(i): [1.0] for i in range(9)}),
            ValueError,
            "at most 8 series",
        ),
        (
            lambda: plot_learned_vs_fixed(np.zeros((4, 2)), np.zeros((4, 2)), 5),
            ValueError,
            "trained_length must be an integer >= 0 and <= 4",
        ),
        (
            lambda: plot_learned_vs_fixed(np.zeros((4, 2)), np.zeros((4, 3)), 2),
            ValueError,
            "fixed must have shape",
        ),
    ],
)
def test_bad_input(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
