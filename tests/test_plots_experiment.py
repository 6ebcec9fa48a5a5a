"""Tests of posenc.plots.experiment: each figure draws exactly the numbers it is given."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc import plots
from posenc.experiment_analysis import SCORE_TERMS
from posenc.experiment_verdicts import SummaryRow


def labelled(ax):
    return ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


def test_cosine_figure_one_histogram_per_width():
    data = {64: np.linspace(-0.2, 0.2, 101), 16: np.linspace(-0.5, 0.5, 101)}
    fig = plots.cosine_figure(data)
    assert isinstance(fig, Figure) and fig.number not in plt.get_fignums()
    ax = fig.axes[0]
    assert labelled(ax) and "dimensionless" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["d = 16", "d = 64"]
    assert len(ax.patches) == 2
    with pytest.raises(ValueError, match="cosines must hold at least one width"):
        plots.cosine_figure({})
    with pytest.raises(ValueError, match=r"cosines\[8\] must have 1 dimensions"):
        plots.cosine_figure({8: np.ones((2, 2))})


def test_readout_figure_draws_percentages():
    d_values = [8, 16, 32]
    acc = np.array([[0.5, 0.25], [0.75, 0.5], [1.0, 1.0]])
    ratios = [0.5, 1.0, 2.0]
    by_ratio = np.array([[1.0, 0.9], [1.0, 0.8], [1.0, 0.6]])
    fig = plots.readout_figure(d_values, {"x1": acc}, ratios, by_ratio, 32)
    left, right = fig.axes
    assert labelled(left) and labelled(right) and "32" in right.get_title()
    lines = left.get_lines()
    np.testing.assert_allclose(lines[0].get_ydata(), [50, 75, 100])
    np.testing.assert_allclose(lines[1].get_ydata(), [25, 50, 100])
    np.testing.assert_allclose(right.get_lines()[1].get_ydata(), [90, 80, 60])
    with pytest.raises(ValueError, match=r"by_ratio must have shape \(3, 2\)"):
        plots.readout_figure(d_values, {"x1": acc}, ratios, by_ratio[:2], 32)
    with pytest.raises(ValueError, match=r"by_width\['x1'\] must have shape \(3, 2\)"):
        plots.readout_figure(d_values, {"x1": acc[:2]}, ratios, by_ratio, 32)


def test_readout_figure_marks_the_ratios_it_is_given():
    acc = np.ones((2, 2))
    default = plots.readout_figure([8, 16], {"x1": acc}, [0.5, 2.0], acc, 16)
    marked = plots.readout_figure(
        [8, 16], {"x1": acc}, [0.5, 2.0], acc, 16, marks={"a": 1.4, "b": 0.3}
    )

    def vertical(fig):
        return {
            line.get_label(): line.get_xdata()[0]
            for line in fig.axes[1].get_lines()
            if line.get_label() not in ("token", "position")
        }

    np.testing.assert_allclose(list(vertical(default).values()), [np.sqrt(2)])
    assert vertical(marked) == {"a": 1.4, "b": 0.3}
    with pytest.raises(ValueError, match="marks"):
        plots.readout_figure([8, 16], {"x1": acc}, [0.5, 2.0], acc, 16, marks={"c": -1.0})


def test_readout_figure_gives_each_scaling_the_colour_it_is_given():
    acc = np.ones((2, 2))
    by_width = {"small": acc, "large": acc}
    fig = plots.readout_figure([8, 16], by_width, [0.5, 2.0], acc, 16, colours={"large": "#E69F00"})
    left, right = fig.axes
    colours = [line.get_color() for line in left.get_lines()]
    assert colours[2:] == ["#E69F00", "#E69F00"]  # token and position, large
    assert colours[0] == colours[1] != "#E69F00"  # small keeps the palette
    token, position = right.get_lines()[:2]
    assert token.get_color() == position.get_color() == "0.2"
    assert (token.get_marker(), position.get_marker()) == ("o", "s")


def test_score_term_figure_bars_are_means_with_min_max_errors():
    sizes = {"a": np.array([[1.0, 3.0]] * 4), "b": np.arange(8.0).reshape(4, 2)}
    fig = plots.score_term_figure(sizes, "terms")
    ax = fig.axes[0]
    assert labelled(ax) and ax.get_title() == "terms"
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, [2, 2, 2, 2, 0.5, 2.5, 4.5, 6.5])
    assert [t.get_text() for t in ax.get_xticklabels()] == list(SCORE_TERMS)
    with pytest.raises(ValueError, match="must have 4 rows"):
        plots.score_term_figure({"a": np.ones((3, 2))}, "t")
    with pytest.raises(ValueError, match="sizes must hold at least one case"):
        plots.score_term_figure({}, "t")


def rows():
    out = []
    for task in ("absolute", "relative"):
        for label, mean in (("no position", 0.5), ("learned add", 0.9)):
            acc = np.array([mean - 0.1, mean, mean + 0.1])
            out.append(SummaryRow(task, label, 4, 4, 4, 10, acc, mean, mean - 0.2, mean + 0.05))
    return out


def test_accuracy_figure_one_panel_per_task_with_intervals():
    chance = {"absolute": (0.5, 0.4, 0.6), "relative": (0.5, 0.45, 0.55)}
    fig = plots.accuracy_figure(rows(), chance)
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert ax.get_title() == "absolute task" and "%" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["no position", "learned add"]
    points = [line for line in ax.get_lines() if line.get_marker() == "o"]
    np.testing.assert_allclose(sorted(p.get_xdata()[0] for p in points), [50, 90])
    # The legend sits below the panels, never on the data.
    assert all(a.get_legend() is None for a in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["chance interval"]
    fig.draw_without_rendering()
    box = legend.get_window_extent()
    assert all(not box.overlaps(a.get_window_extent()) for a in fig.axes)
    with pytest.raises(ValueError, match="rows must not be empty"):
        plots.accuracy_figure([], chance)


def test_learning_curve_figure_draws_the_means():
    steps = np.array([0, 10, 20])
    band = np.array([[0.5, 0.7, 0.9], [0.4, 0.6, 0.8], [0.6, 0.8, 1.0]])
    fig = plots.learning_curve_figure({"relative": (steps, {"learned concat, x": band})})
    ax = fig.axes[0]
    assert labelled(ax) and ax.get_title() == "relative task"
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), [50, 70, 90])
    assert line.get_linestyle() == "--"  # concatenated models are dashed
    fig = plots.learning_curve_figure({"t": (steps, {"no position": band, "other": band})})
    baseline, other = fig.axes[0].get_lines()
    assert baseline.get_color() == "#000000" and other.get_color() != "#000000"
    with pytest.raises(ValueError, match="curves must hold at least one task"):
        plots.learning_curve_figure({})
    with pytest.raises(ValueError, match=r"must have shape \(3, 3\)"):
        plots.learning_curve_figure({"t": (steps, {"a": band[:2]})})


def _comparisons():
    from posenc.experiment_verdicts import Comparison

    rows = []
    for i, (code, diff) in enumerate(
        [("sinusoidal", 0.05), ("learned", 0.0), ("sinusoidal", -0.02)]
    ):
        rows.append(
            Comparison(
                8 * (i + 1),
                16,
                1,
                code,
                np.array([0.5, 0.6, 0.7]) + diff,
                np.array([0.5, 0.6, 0.7]),
                diff,
                diff - 0.01,
                diff + 0.02,
                0.5,
                0.5,
                0.5,
                0.5,
                i == 1,
                "undecided",
            )
        )
    return rows


def test_comparison_figure_draws_each_difference_with_its_interval():
    fig = plots.comparison_figure(_comparisons(), 0.03)
    assert len(fig.axes) == 2 and all(labelled(ax) for ax in fig.axes[:1])
    sinusoidal = fig.axes[0]
    xs = sorted(line.get_xdata()[0] for line in sinusoidal.get_lines() if line.get_marker() == "o")
    np.testing.assert_allclose(xs, [-2.0, 5.0])
    with pytest.raises(ValueError, match="comparisons must not be empty"):
        plots.comparison_figure([], 0.03)


def test_comparison_figure_widens_with_confidence_and_labels_verdicts():
    def widths(fig):
        return sorted(
            float(np.ptp(seg[:, 0]))
            for coll in fig.axes[0].collections
            for seg in getattr(coll, "get_segments", lambda: [])()
        )

    narrow = plots.comparison_figure(_comparisons(), 0.03)
    wide = plots.comparison_figure(_comparisons(), 0.03, confidence=0.99)
    assert widths(narrow) and all(w > n for w, n in zip(widths(wide), widths(narrow), strict=True))
    texts = [t.get_text() for t in narrow.axes[0].texts]
    assert texts.count("undecided") == 2
    assert [t.get_text() for t in narrow.axes[1].texts] == ["ceiling"]
    assert "99% interval for each comparison alone" in wide.texts[0].get_text()
    together = plots.comparison_figure(_comparisons(), 0.03, confidence=0.9, family=10)
    assert "90% intervals for all 10 comparisons together" in together.texts[0].get_text()
    assert widths(together) == pytest.approx(widths(wide))  # each at 1 - 0.1/10
    with pytest.raises(ValueError, match="family"):
        plots.comparison_figure(_comparisons(), 0.03, family=0)
    with pytest.raises(ValueError, match="confidence"):
        plots.comparison_figure(_comparisons(), 0.03, confidence=1.0)


def test_comparison_figure_takes_a_family_per_panel_and_one_scale():
    codes = list(dict.fromkeys(c.code for c in _comparisons()))
    each = plots.comparison_figure(_comparisons(), 0.03, family=dict.fromkeys(codes, 10))
    alike = plots.comparison_figure(_comparisons(), 0.03, family=10)
    assert "for each panel's comparisons together" in each.texts[0].get_text()
    for a, b in zip(each.axes, alike.axes, strict=True):
        assert a.get_xlim() == pytest.approx(b.get_xlim())
    shared = plots.comparison_figure(_comparisons(), 0.03, sharex=True)
    assert shared.axes[0].get_xlim() == pytest.approx(shared.axes[1].get_xlim())
    with pytest.raises(ValueError, match="family must give a size"):
        plots.comparison_figure(_comparisons(), 0.03, family={codes[0]: 10})


def test_comparison_figure_colours_each_panel_as_asked():
    def colours(ax):
        return {line.get_color() for line in ax.get_lines() if line.get_marker() == "o"}

    fig = plots.comparison_figure(
        _comparisons(), 0.03, colours={"sinusoidal": "#E69F00", "learned": "#E69F00"}
    )
    assert colours(fig.axes[0]) == colours(fig.axes[1]) == {"#E69F00"}
    default = plots.comparison_figure(_comparisons(), 0.03)
    assert colours(default.axes[0]) != colours(default.axes[1])
    with pytest.raises(ValueError, match="colours must give a colour"):
        plots.comparison_figure(_comparisons(), 0.03, colours={"sinusoidal": "k"})


def test_budget_figure_draws_points():
    steps = np.array([0, 100, 200])
    curve = np.array([[0.0, 0.05, 0.02], [0.0, 0.01, -0.01], [0.0, 0.09, 0.05]])
    fig = plots.budget_figure({"a": (steps, curve)}, 0.03)
    ax = fig.axes[0]
    assert labelled(ax) and "updates" in ax.get_xlabel()
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "a")
    np.testing.assert_allclose(line.get_ydata(), [0, 5, 2])
    with pytest.raises(ValueError, match=r"curves\['a'\] must have shape"):
        plots.budget_figure({"a": (steps, curve[:, :2])}, 0.03)


def test_power_figure_draws_percentages():
    fig = plots.power_figure([0.0, 0.1], {20: [0.05, 0.8], 5: [0.05, 0.3]}, 0.1)
    ax = fig.axes[0]
    assert labelled(ax)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [5, 30])
    with pytest.raises(ValueError, match="powers must hold at least one seed count"):
        plots.power_figure([0.0], {}, 0.1)
