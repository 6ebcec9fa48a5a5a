"""Tests for the chapter 7 figures (posenc.plots.extrapolation)."""

import numpy as np
import pytest

from posenc import plots
from posenc.scaling import scale_factors


def test_extrapolation_figure_skips_methods_that_cannot_run():
    nan = float("nan")
    results = {
        "offset": {"rope": [[1, 1, 1], [0.5, 0.4, 0.6]], "learned": [[1, 1, 1], [nan] * 3]},
        "first": {"rope": [[1, 1, 1], [0.9, 0.8, 1.0]], "learned": [[1, 1, 1], [nan] * 3]},
    }
    fig = plots.extrapolation_figure(results, [16, 32], train_length=16, chance=1 / 16)
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert "test length" in ax.get_xlabel() and "accuracy" in ax.get_ylabel()
    # The learned line has one point only (no value at 32).
    learned = [c for c in ax.containers if c.get_label() == "learned"]
    assert len(learned) == 1 and len(learned[0].lines[0].get_xdata()) == 1


def test_scale_factor_figure_draws_each_rule():
    factors = {
        m: scale_factors(16, method=m, factor=4.0, original_length=64)
        for m in ("linear", "ntk", "yarn")
    }
    fig = plots.scale_factor_figure(factors, factor=4.0)
    ax = fig.axes[0]
    drawn = {line.get_label(): line.get_ydata() for line in ax.lines}
    np.testing.assert_allclose(drawn["linear"], 4.0)
    assert "pair" in ax.get_xlabel()


def test_extension_figure_and_bad_input():
    fig = plots.extension_figure(
        {"offset": {"none": [[0.5, 0.4, 0.6], [0.3, 0.2, 0.4]]}}, [2, 4], chance=0.1
    )
    assert len(fig.axes[0].patches) == 2
    with pytest.raises(ValueError, match="rows"):
        plots.extension_figure({"offset": {"none": [[0.5, 0.4]]}}, [2], chance=0.1)
    with pytest.raises(ValueError, match="at least one"):
        plots.extrapolation_figure({}, [16], train_length=16, chance=0.1)


def test_per_position_figure_leaves_out_unscored_positions():
    from posenc.plots.extrapolation import per_position_figure

    nan = float("nan")
    curves = {
        "offset": {"rope": [nan, nan, 1.0, 0.8, 0.5], "learned": [nan, nan, 1.0, nan, nan]},
    }
    fig = per_position_figure(curves, train_length=3, chance=1 / 16)
    ax = fig.axes[0]
    drawn = {line.get_label(): line for line in ax.lines}
    np.testing.assert_array_equal(drawn["rope"].get_xdata(), [2, 3, 4])
    np.testing.assert_array_equal(drawn["learned"].get_xdata(), [2])
    np.testing.assert_allclose(drawn["rope"].get_ydata(), [1.0, 0.8, 0.5])
    assert "position" in ax.get_xlabel() and "accuracy" in ax.get_ylabel()
    # A method keeps its colour in every panel, and the legend names each once.
    two = {"a": {"x": [1.0, 0.5], "y": [1.0, 0.9]}, "b": {"y": [1.0, 0.2]}}
    fig = per_position_figure(two, train_length=1, chance=0.1)
    first, second = ({ln.get_label(): ln for ln in a.lines} for a in fig.axes)
    assert first["y"].get_color() == second["y"].get_color() != first["x"].get_color()
    legend = fig.axes[1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["x", "y"]
    with pytest.raises(ValueError, match="curves"):
        per_position_figure({}, train_length=3, chance=0.1)
    with pytest.raises(ValueError, match="curves"):
        per_position_figure({"t": {"a": [[1.0]]}}, train_length=3, chance=0.1)


def test_budget_figure_one_line_per_method_and_hides_spare_panels():
    from posenc.plots.extrapolation import budget_figure

    nan = float("nan")
    panels = {
        "offset at 16": {"rope": [[0.5, 0.4, 0.6], [0.9, 0.8, 1.0]], "learned": [[1, 1, 1]] * 2},
        "offset at 64": {"rope": [[0.2, 0.1, 0.3], [0.3, 0.2, 0.4]], "learned": [[nan] * 3] * 2},
        "first at 16": {"rope": [[1, 1, 1]] * 2},
    }
    fig = budget_figure(panels, [250, 500], chance=1 / 16)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 3
    ax = visible[1]
    assert [c.get_label() for c in ax.containers] == ["rope"]  # learned cannot run
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), [0.2, 0.3])
    assert "updates" in ax.get_xlabel() and "accuracy" in ax.get_ylabel()
    with pytest.raises(ValueError, match="panels"):
        budget_figure({}, [1], chance=0.1)


def test_ntk_sweep_figure_circles_alpha_equal_to_the_factor():
    from posenc.plots.extrapolation import ntk_sweep_figure

    rows = [[0.1, 0.0, 0.2], [0.5, 0.4, 0.6], [0.7, 0.6, 0.8]]
    fig = ntk_sweep_figure({"offset": {2: rows, 4: rows}}, [1, 2, 4], chance=0.1)
    ax = fig.axes[0]
    circles = [ln for ln in ax.lines if ln.get_marker() == "o" and ln.get_linestyle() == "None"]
    xs = sorted(float(ln.get_xdata()[0]) for ln in circles if len(ln.get_xdata()))
    assert xs == [2.0, 4.0]
    assert "α" in ax.get_xlabel()
    with pytest.raises(ValueError, match="one row per alpha"):
        ntk_sweep_figure({"offset": {2: rows[:2]}}, [1, 2, 4], chance=0.1)


def test_extension_figure_tells_seven_variants_apart():
    rows = [[0.5, 0.4, 0.6]]
    variants = {f"v{i}": rows for i in range(7)}
    fig = plots.extension_figure({"offset": variants}, [2], chance=0.1)
    looks = {(tuple(p.get_facecolor()), p.get_hatch()) for p in fig.axes[0].patches}
    assert len(looks) == 7
