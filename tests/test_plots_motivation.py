"""Tests of posenc.plots.motivation: what each figure shows, its labels and colour limits."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from posenc import index_encoding, sinusoidal
from posenc.plots import QUALITATIVE, distance_by_offset, pooled_vectors, property_grid
from posenc.properties import PROPERTIES, PROPERTY_LABELS, PROPERTY_MEASURES, property_table


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def table():
    return property_table(length=8, d_model=8)


# --- property_grid -------------------------------------------------------------


def test_grid_shows_the_verdicts(table):
    fig = property_grid(table)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), table.passed.astype(float))
    assert image.get_clim() == (0.0, 1.0)
    viridis = plt.get_cmap("viridis")
    np.testing.assert_allclose(image.cmap(0.0), viridis(0.0))
    np.testing.assert_allclose(image.cmap(1.0), viridis(1.0))


def test_grid_labels_rows_columns_and_sizes(table):
    ax = property_grid(table).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(table.schemes)
    # each column names its property and what the number under the mark measures
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        f"{PROPERTY_LABELS[p]}\n({PROPERTY_MEASURES[p]})" for p in PROPERTIES
    ]
    assert "L_train = 8" in ax.get_xlabel()
    assert "d = 8 columns" in ax.get_xlabel()
    assert ax.get_ylabel()
    assert ax.get_title()


def test_grid_cells_carry_mark_and_measured_value(table):
    ax = property_grid(table).axes[0]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert len(texts) == table.passed.size
    for (r, c), text in texts.items():
        mark, value = text.get_text().split("\n")
        assert mark == ("✓" if table.passed[r, c] else "✗")
        measured = table.values[r, c]
        assert value == ("no code" if np.isnan(measured) else f"{measured:.3g}")
    raw_bounded = texts[(0, 0)].get_text()
    assert raw_bounded == "✗\n31"  # raw index reaches 31 at 4 L = 32
    one_hot_beyond = texts[(2, PROPERTIES.index("defined_beyond"))].get_text()
    assert one_hot_beyond == "✗\nno code"
    raw_beyond = texts[(0, PROPERTIES.index("defined_beyond"))].get_text()
    assert raw_beyond == f"✓\n{4 * table.length}"  # coded at every one of 4 L positions


def test_grid_marks_cells_that_do_not_apply(table):
    scheme, prop = table.schemes[3], "proximity"
    ax = property_grid(table, not_applicable={(scheme, prop): "training"}).axes[0]
    r, c = table.schemes.index(scheme), table.properties.index(prop)
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert len(texts) == table.passed.size
    assert texts[(r, c)].get_text() == "n/a\ntraining"
    grey = [p for p in ax.patches if p.get_xy() == (c - 0.5, r - 0.5)]
    assert len(grey) == 1 and grey[0].get_width() == grey[0].get_height() == 1
    # the image and every other cell keep the table's verdicts
    np.testing.assert_array_equal(ax.images[0].get_array(), table.passed.astype(float))
    other = texts[(r, c - 1)].get_text().split("\n")[0]
    assert other == ("✓" if table.passed[r, c - 1] else "✗")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1].startswith("n/a")
    assert len(property_grid(table).axes[0].get_legend().get_texts()) == 2


def test_grid_labels_carry_the_pass_lines_asked_for(table):
    rules = {"proximity": "≥ 0.75", "bounded": "≤ 1"}
    ax = property_grid(table, pass_rules=rules).axes[0]
    labels = dict(zip(PROPERTIES, (t.get_text() for t in ax.get_xticklabels()), strict=True))
    assert labels["proximity"] == "near close, far far\n(agreement, ✓ if ≥ 0.75)"
    assert labels["bounded"] == "bounded\n(max |entry|, ✓ if ≤ 1)"
    assert labels["distinct"] == f"{PROPERTY_LABELS['distinct']}\n({PROPERTY_MEASURES['distinct']})"
    assert "when it earns ✓" in ax.get_xlabel()
    assert "when it earns" not in property_grid(table).axes[0].get_xlabel()
    with pytest.raises(ValueError, match="does not have"):
        property_grid(table, pass_rules={"no such property": "≥ 1"})


def test_grid_can_show_marks_and_notes_without_numbers(table):
    scheme, prop = table.schemes[0], table.properties[0]
    ax = property_grid(table, show_values=False, notes={(scheme, prop): "grows"}).axes[0]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert len(texts) == table.passed.size
    for (r, c), text in texts.items():
        mark = "✓" if table.passed[r, c] else "✗"
        assert text.get_text() == (f"{mark}\ngrows" if (r, c) == (0, 0) else mark)
    labels = ax.get_xticklabels()
    assert [t.get_text().replace("\n", " ") for t in labels] == [
        PROPERTY_LABELS[p] for p in table.properties
    ]  # the names, wrapped onto short upright lines
    assert all(t.get_rotation() == 0 for t in labels)
    assert max(len(line) for t in labels for line in t.get_text().split("\n")) <= 16
    assert "number" not in ax.get_xlabel() and "L_train" in ax.get_xlabel()
    with pytest.raises(ValueError, match="does not have"):
        property_grid(table, notes={("no such code", prop): "x"})


def test_grid_rejects_an_unknown_not_applicable_cell(table):
    with pytest.raises(ValueError, match="does not have"):
        property_grid(table, not_applicable={("no such code", "proximity"): "x"})


def test_grid_rejects_other_input():
    with pytest.raises(TypeError, match="table must be a PropertyTable"):
        property_grid(np.ones((5, 6), dtype=bool))


# --- pooled_vectors --------------------------------------------------------------


def test_pooled_vectors_plot_the_rows():
    rng = np.random.default_rng(0)
    without = rng.normal(size=(2, 5))
    with_code = rng.normal(size=(2, 5))
    sentences = ["dog bites man", "man bites dog"]
    fig = pooled_vectors(without, with_code, sentences)
    left, right = fig.axes
    for ax, data in ((left, without), (right, with_code)):
        lines = [line for line in ax.lines if line.get_label().startswith("“")]
        assert len(lines) == 2
        for s, line in enumerate(lines):
            np.testing.assert_array_equal(line.get_xdata(), np.arange(5))
            np.testing.assert_array_equal(line.get_ydata(), data[s])
            assert line.get_label() == f"“{sentences[s]}”"
            assert to_rgba(line.get_color()) == to_rgba(QUALITATIVE[s])
        assert ax.get_xlabel() == "column j of the pooled vector (index)"
    assert left.get_ylabel() == "value (no unit)"
    assert left.get_title() == "attention only"
    assert right.get_title() == "attention after adding position codes"
    assert fig.get_suptitle()
    assert left.get_shared_y_axes().joined(left, right)


def test_pooled_vectors_custom_titles():
    fig = pooled_vectors(np.zeros((1, 2)), np.ones((1, 2)), ["a"], titles=("no PE", "PE"))
    assert [ax.get_title() for ax in fig.axes] == ["no PE", "PE"]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((np.zeros((2, 3)), np.zeros((2, 4)), ["a", "b"]), {}, ValueError, r"shape \(2, 3\)"),
        ((np.zeros((2, 3)), np.zeros((2, 3)), ["a"]), {}, ValueError, "sentences must be 2 str"),
        ((np.zeros((2, 3)), np.zeros((2, 3)), ["a", 1]), {}, ValueError, "sentences must be 2"),
        ((np.zeros(3), np.zeros(3), ["a"]), {}, ValueError, "without_code must have 2 dim"),
        ((np.zeros((9, 3)), np.zeros((9, 3)), list("abcdefghi")), {}, ValueError, "1 to 8 rows"),
        ((np.zeros((1, 3)), np.zeros((1, 3)), ["a"]), {"titles": ("x",)}, ValueError, "titles"),
    ],
)
def test_pooled_vectors_bad_input(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        pooled_vectors(*args, **kwargs)


# --- distance_by_offset ----------------------------------------------------------


def test_distance_by_offset_plots_each_curve_from_offset_one():
    curves = {"raw": 3.0 * np.arange(1, 6), "sin": np.linspace(1, 2, 9)}
    fig = distance_by_offset(curves)
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    for s, (line, (name, curve)) in enumerate(zip(ax.lines, curves.items(), strict=True)):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, curve.size + 1))
        np.testing.assert_array_equal(line.get_ydata(), curve)
        assert line.get_label() == name
        assert to_rgba(line.get_color()) == to_rgba(QUALITATIVE[s])
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "offset φ between the two positions (positions)"
    assert ax.get_ylabel().replace("\n", " ").endswith("(no unit, log scale)")
    assert ax.get_title()


def test_distance_by_offset_linear_scale_accepts_zero():
    ax = distance_by_offset({"flat": np.zeros(4)}, log=False).axes[0]
    assert ax.get_yscale() == "linear"
    assert "log" not in ax.get_ylabel()
    assert ax.get_ylabel().endswith("(no unit)")


@pytest.mark.parametrize(
    ("curves", "kwargs", "error", "pattern"),
    [
        ({}, {}, TypeError, "non-empty mapping"),
        ([np.ones(3)], {}, TypeError, "non-empty mapping"),
        ({"a": np.ones((2, 2))}, {}, ValueError, r"curves\['a'\] must have 1 dim"),
        ({"a": np.array([1.0, 0.0])}, {}, ValueError, "must be > 0 everywhere on a log scale"),
        ({"a": np.ones(3)}, {"log": "yes"}, TypeError, "log must be True or False"),
        ({str(i): np.ones(2) for i in range(9)}, {}, ValueError, "at most 8 schemes"),
    ],
)
def test_distance_by_offset_bad_input(curves, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        distance_by_offset(curves, **kwargs)


def test_figures_draw_what_the_package_computes():
    # End to end: the curve of the raw index grows by sqrt(d) per position of offset.
    from posenc.properties import mean_distance_by_offset

    curves = {"raw": mean_distance_by_offset(index_encoding(6, 4))}
    line = distance_by_offset(curves).axes[0].lines[0]
    np.testing.assert_allclose(line.get_ydata(), 2.0 * np.arange(1, 6))
    pe = sinusoidal(3, 4)
    fig = pooled_vectors(pe[:1], pe[1:2], ["x"])
    np.testing.assert_array_equal(fig.axes[1].lines[0].get_ydata(), pe[1])


def test_figures_stay_out_of_pyplot(table):
    # A notebook cell ending with the figure then shows it once, not twice.
    before = plt.get_fignums()
    property_grid(table)
    pooled_vectors(np.zeros((1, 2)), np.ones((1, 2)), ["a"])
    distance_by_offset({"a": np.ones(3)})
    assert plt.get_fignums() == before
