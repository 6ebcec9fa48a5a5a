"""Tests of posenc.plots.encoding: each figure shows the numbers it claims to show."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc import (
    cosine_distance_matrix,
    dot_product_matrix,
    frequencies,
    plots,
    sinusoidal,
    wavelengths,
)
from posenc.plots.encoding import EncodingView, ProjectionView, SimilarityView
from posenc.projection import offset_profile, pca_projection


def all_text(fig):
    """Every title, axis label and colour-bar label of a figure, as one string."""
    parts = [fig.get_suptitle()]
    for ax in fig.axes:
        parts += [ax.get_title(loc) for loc in ("left", "center", "right")]
        parts += [ax.get_xlabel(), ax.get_ylabel()]
    return " | ".join(parts)


def assert_symmetric(limits):
    low, high = limits
    assert high > 0 and low == -high


def test_figures_are_not_kept_by_pyplot():
    before = plt.get_fignums()
    fig = plots.plot_encoding_heatmap(5, 4)
    assert isinstance(fig, Figure)
    assert plt.get_fignums() == before


def test_heatmap_shows_the_table():
    fig = plots.plot_encoding_heatmap(30, 12, base=100.0)
    ax = fig.axes[0]
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), sinusoidal(30, 12, base=100.0))
    assert image.get_cmap().name == "RdBu_r"
    assert_symmetric(image.get_clim())
    assert image.get_clim()[1] == np.abs(sinusoidal(30, 12, base=100.0)).max()
    assert ax.get_xlabel() == "column $j$ (feature index)"
    assert ax.get_ylabel() == "position $k$ (tokens)"
    assert "$L$ = 30" in ax.get_title() and "$n$ = 100" in ax.get_title()
    assert ax.get_ylim() == (29.5, -0.5)  # position 0 at the top, like a table
    assert fig.axes[1].get_ylabel() == r"$\mathrm{PE}_{k,j}$ (no unit)"  # the colour bar


def test_heatmap_with_a_position_draws_that_row():
    fig = plots.plot_encoding_heatmap(40, 7, position=13)
    pe = sinusoidal(40, 7)
    row_ax = fig.axes[2]
    sin_line, cos_line = row_ax.lines[:2]
    np.testing.assert_array_equal(sin_line.get_xdata(), [0, 2, 4, 6])  # odd d: 4 sine columns
    np.testing.assert_array_equal(sin_line.get_ydata(), pe[13, 0::2])
    np.testing.assert_array_equal(cos_line.get_ydata(), pe[13, 1::2])
    marker = fig.axes[0].lines[0]
    np.testing.assert_array_equal(marker.get_ydata(), [13, 13])
    assert row_ax.get_xlabel() == "column $j$ (feature index)"


def test_encoding_view_update_equals_a_fresh_figure():
    view = EncodingView(50, 16, position=45)
    view.update(20, 6, 300.0)
    fresh = EncodingView(20, 6, 300.0, position=19)
    np.testing.assert_array_equal(view.image.get_array(), fresh.image.get_array())
    assert view.position == 19  # beyond the new end: moved to the last row
    assert view.ax.get_title() == fresh.ax.get_title()
    assert view.ax.get_xlim() == fresh.ax.get_xlim()
    np.testing.assert_array_equal(view.sin_line.get_ydata(), fresh.sin_line.get_ydata())


def test_columns_against_position():
    fig = plots.plot_columns_against_position(60, 16, base=50.0, columns=(0, 5, 15))
    pe = sinusoidal(60, 16, base=50.0)
    assert len(fig.axes) == 3
    for ax, j in zip(fig.axes, (0, 5, 15), strict=True):
        np.testing.assert_array_equal(ax.lines[0].get_xdata(), np.arange(60))
        np.testing.assert_array_equal(ax.lines[0].get_ydata(), pe[:, j])
        assert ax.get_ylim() == (-1.15, 1.15)
    assert "column $j$ = 5: cosine of pair $i$ = 2" in fig.axes[1].get_title(loc="left")
    lam = wavelengths(16, 50.0)[7]
    assert f"{lam:,.1f} positions" in fig.axes[2].get_title(loc="left")
    assert fig.axes[-1].get_xlabel() == "position $k$ (tokens)"
    assert "$L$ = 60" in fig.get_suptitle()


def test_positions_against_column():
    fig = plots.plot_positions_against_column(9, base=10.0, positions=(0, 4))
    pe = sinusoidal(5, 9, base=10.0)
    for ax, k in zip(fig.axes, (0, 4), strict=True):
        np.testing.assert_array_equal(ax.lines[0].get_ydata(), pe[k, 0::2])
        np.testing.assert_array_equal(ax.lines[1].get_ydata(), pe[k, 1::2])
    assert fig.axes[-1].get_xlabel() == "column $j$ (feature index)"
    # d = 1 has no cosine column and no second line.
    single = plots.plot_positions_against_column(1, positions=(2,))
    assert len([line for line in single.axes[0].lines if line.get_label()[0] != "_"]) == 1


def test_dot_product_matrix_is_centred_on_zero():
    fig = plots.plot_similarity(25, 10, base=20.0, measure="dot")
    image = fig.axes[0].images[0]
    expected = dot_product_matrix(sinusoidal(25, 10, base=20.0))
    np.testing.assert_array_equal(image.get_array(), expected)
    assert image.get_cmap().name == "RdBu_r"
    assert_symmetric(image.get_clim())
    assert image.get_clim()[1] == np.abs(expected).max()
    assert fig.axes[1].get_ylabel().startswith("dot product")
    assert fig.axes[0].get_xlabel() == "position $k'$ (tokens)"


def test_cosine_distance_matrix_and_its_profile():
    fig = plots.plot_similarity(25, 10, measure="cosine", position=7)
    matrix = cosine_distance_matrix(sinusoidal(25, 10))
    image = fig.axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), matrix)
    assert image.get_cmap().name == "viridis"
    low, high = image.get_clim()  # from zero to the largest distance, rounded up to 0.05
    assert low == 0.0 and matrix.max() <= high < matrix.max() + 0.05
    assert round(high / 0.05, 9) == round(high / 0.05)
    profile = fig.axes[2].lines[0]
    offsets, values = offset_profile(matrix, 7)
    np.testing.assert_array_equal(profile.get_xdata(), offsets)
    np.testing.assert_array_equal(profile.get_ydata(), values)
    assert fig.axes[2].get_xlabel() == r"offset $\phi = k' - k$ (positions)"
    assert fig.axes[2].get_ylabel() == "cosine distance (no unit)"
    # the static figure trims the offset axis to the row: offsets -7 to 17
    assert fig.axes[2].get_xlim() == (-7.5, 17.5)
    # a row at either end keeps offset 0 off the panel's edge
    assert plots.plot_similarity(5, 4, position=0).axes[2].get_xlim() == (-1.5, 4.5)


def test_similarity_view_switches_measure_and_colour_map():
    view = SimilarityView(12, 8, measure="cosine", position=3)
    view.update(12, 8, measure="dot")
    assert view.image.get_cmap().name == "RdBu_r"
    assert_symmetric(view.image.get_clim())
    assert view.colorbar.ax.get_ylim() == view.image.get_clim()  # the bar follows at once


def test_cosine_of_a_zero_code_is_reported_not_raised():
    view = SimilarityView(6, 1, position=2)  # d = 1: position 0 has the code sin 0 = 0
    assert view.matrix is None
    assert np.ma.getmaskarray(view.image.get_array()).all()  # nothing drawn
    assert "undefined" in view.ax.get_title()
    assert len(view.profile.get_xdata()) == 0
    view.update(6, 2)  # defined again
    np.testing.assert_array_equal(view.image.get_array(), cosine_distance_matrix(sinusoidal(6, 2)))


def test_distance_against_offset_curves_coincide():
    fig = plots.plot_distance_against_offset(50, 16, positions=(0, 20, 49))
    ax = fig.axes[0]
    matrix = cosine_distance_matrix(sinusoidal(50, 16))
    curves = {}
    for line, k in zip(ax.lines[:3], (0, 20, 49), strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(50) - k)
        np.testing.assert_array_equal(line.get_ydata(), matrix[k])
        curves[k] = dict(zip(line.get_xdata().tolist(), line.get_ydata(), strict=True))
    for phi in range(-20, 30):
        np.testing.assert_allclose(curves[20][phi], curves[0][abs(phi)], atol=1e-12)
    assert ax.get_xlabel() == r"offset $\phi = k' - k$ (positions)"
    assert ax.get_ylabel() == "cosine distance (no unit)"


def test_pca_projection_figure():
    fig = plots.plot_pca_projection(60, 16, base=500.0, position=10)
    ax = fig.axes[0]
    result = pca_projection(sinusoidal(60, 16, base=500.0), n_components=2)
    points = ax.collections[0]
    np.testing.assert_array_equal(points.get_offsets(), result.coordinates)
    np.testing.assert_array_equal(points.get_array(), np.arange(60))
    assert points.get_cmap().name == "viridis"
    assert points.get_clim() == (0.0, 59.0)
    ratio = 100 * result.explained_variance_ratio
    assert ax.get_xlabel() == "principal axis 1 (no unit)"
    assert f"axis 1 holds {ratio[0]:.1f}% of the variance, axis 2 {ratio[1]:.1f}%" in ax.get_title()
    half = ax.get_xlim()[1]
    assert ax.get_xlim() == ax.get_ylim() == (-half, half)  # centred, equal, and every point in
    assert np.abs(result.coordinates).max() < half
    assert fig.axes[1].get_ylabel() == "position $k$ (tokens)"
    ring = ax.lines[1]
    np.testing.assert_array_equal(ring.get_xdata(), [result.coordinates[10, 0]])


def test_pca_projection_with_one_column():
    view = ProjectionView(8, 1, position=3)
    np.testing.assert_array_equal(view.points.get_offsets()[:, 1], 0.0)
    assert "none" in view.ax.get_ylabel()


def test_wavelengths_on_a_log_scale():
    fig = plots.plot_wavelengths(32, bases=(100.0, 10_000.0), length=64)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    curves = [line for line in ax.lines if line.get_marker() == "o"]
    for line, base in zip(curves, (100.0, 10_000.0), strict=True):
        np.testing.assert_array_equal(line.get_ydata(), wavelengths(32, base))
        assert line.get_ydata().max() < 2 * np.pi * base  # 2 pi n is never reached
    levels = sorted(line.get_ydata()[0] for line in ax.lines if line.get_marker() != "o")
    np.testing.assert_allclose(levels, [2 * np.pi, 64, 200 * np.pi, 20_000 * np.pi])
    assert ax.get_xlabel() == r"pair index $i$ (columns $2i$ and $2i+1$)"
    assert ax.get_ylabel() == r"wavelength $\lambda_i$ (positions, log scale)"


def test_wavelengths_with_several_lengths_and_no_limits():
    fig = plots.plot_wavelengths(
        32, bases=(100.0, 10_000.0, 500_000.0), length=(64, 4_096), limits=False
    )
    ax = fig.axes[0]
    curves = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(curves) == 3
    marks = [line for line in ax.lines if line.get_marker() != "o"]
    levels = sorted(line.get_ydata()[0] for line in marks)
    np.testing.assert_allclose(levels, [2 * np.pi, 64, 4_096])  # no 2 pi n
    styles = {line.get_linestyle() for line in marks if line.get_ydata()[0] > 10}
    assert len(styles) == 2  # the two lengths are told apart by their lines
    labels = ax.get_legend_handles_labels()[1]
    assert "sequence length $L$ = 4,096" in labels
    with pytest.raises(ValueError, match="length"):
        plots.plot_wavelengths(8, length=(1, 2, 3, 4, 5))
    with pytest.raises(ValueError):
        plots.plot_wavelengths(8, length=(4, 0))


def test_wavelengths_with_a_margin_in_turns():
    fig = plots.plot_wavelengths(
        32, bases=(100.0, 10_000.0), length=(64, 4_096), limits=False, turns=0.25
    )
    ax = fig.axes[0]
    marks = [line for line in ax.lines if line.get_marker() != "o"]
    levels = sorted(line.get_ydata()[0] for line in marks)
    np.testing.assert_allclose(levels, [2 * np.pi, 4 * 64, 4 * 4_096])
    labels = ax.get_legend_handles_labels()[1]
    # the label names the line's height, L / turns, as well as L
    assert "0.25 turn over $L$ = 4,096 ($\\lambda$ = 16,384)" in labels
    with pytest.raises(ValueError):
        plots.plot_wavelengths(8, length=4, turns=0.0)


def test_wavelengths_with_a_verdict_on_the_last_pair():
    bases, lengths = (100.0, 10_000.0, 500_000.0), (8_192, 131_072)
    fig = plots.plot_wavelengths(
        128, bases=bases, length=lengths, limits=False, turns=0.1, verdict=True
    )
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    # each base names where its last pair keeps the margin and where not
    assert labels[:3] == [
        "$n$ = 100: misses it at 8,192 and 131,072",
        "$n$ = 10,000: misses it at 8,192 and 131,072",
        "$n$ = 500,000: keeps the margin at 8,192 and 131,072",
    ]
    for base, label in zip(bases, labels, strict=False):
        last = wavelengths(128, base)[-1]
        kept = [m for m in lengths if last > m / 0.1]
        assert ("keeps the margin" in label) == bool(kept)
    # one ring per base, on its last pair; no line at 2 pi
    rings = [line for line in ax.lines if line.get_markersize() > 10]
    assert len(rings) == 3
    for ring, base in zip(rings, bases, strict=True):
        assert ring.get_xdata()[0] == 127 // 2
        np.testing.assert_allclose(ring.get_ydata()[0], wavelengths(128, base)[-1])
    levels = [line.get_ydata()[0] for line in ax.lines if line.get_marker() != "o"]
    np.testing.assert_allclose(sorted(levels), [81_920, 1_310_720])
    mixed = plots.plot_wavelengths(
        128, bases=(10_000.0,), length=(4_096, 8_192), turns=0.1, verdict=True
    )
    assert mixed.axes[0].get_legend_handles_labels()[1][0] == (
        "$n$ = 10,000: keeps the margin at 4,096; misses it at 8,192"
    )
    with pytest.raises(ValueError, match="verdict"):
        plots.plot_wavelengths(8, verdict=True)


def test_pair_circles():
    fig = plots.plot_pair_circles(10, 8, base=100.0, pairs=(0, 3))
    pe = sinusoidal(10, 8, base=100.0)
    for ax, i in zip(fig.axes[:2], (0, 3), strict=True):
        np.testing.assert_array_equal(ax.collections[0].get_offsets(), pe[:, [2 * i + 1, 2 * i]])
        assert f"{frequencies(8, 100.0)[i]:.3g} rad/position" in ax.get_title()
    assert fig.axes[0].collections[0].get_cmap().name == "viridis"
    assert fig.axes[2].get_ylabel() == "position $k$ (tokens)"


@pytest.mark.parametrize(
    "call",
    [
        lambda: plots.plot_encoding_heatmap(30, 8),
        lambda: plots.plot_encoding_heatmap(30, 8, position=2),
        lambda: plots.plot_columns_against_position(30, 8, columns=(0,)),
        lambda: plots.plot_positions_against_column(8, positions=(1,)),
        lambda: plots.plot_similarity(30, 8, measure="dot", position=2),
        lambda: plots.plot_distance_against_offset(30, 8, positions=(0,)),
        lambda: plots.plot_pca_projection(30, 8),
        lambda: plots.plot_wavelengths(8),
        lambda: plots.plot_pair_circles(30, 8, pairs=(0,)),
        lambda: plots.plot_distance_from_start(30, 8, window=5),
    ],
)
def test_every_figure_has_a_title_and_units(call):
    fig = call()
    text = all_text(fig)
    assert fig.get_suptitle() or any(ax.get_title() for ax in fig.axes)
    # Every labelled axis says what it measures in: tokens, positions, or no unit.
    labels = [label for ax in fig.axes for label in (ax.get_xlabel(), ax.get_ylabel()) if label]
    assert labels, text
    for label in labels:
        assert any(
            unit in label
            for unit in (
                "(tokens)",
                "(positions",
                "(no unit)",
                "(feature index)",
                "(columns",
                "no unit)",
                "(sin)",
                "(cos)",
                r"\mathrm{PE}",
            )
        ), label


def test_bad_arguments():
    with pytest.raises(ValueError, match="length must be an integer >= 1"):
        plots.plot_encoding_heatmap(0, 4)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        plots.plot_encoding_heatmap(4, 4.0)
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        plots.plot_similarity(4, 4, base=0.0)
    with pytest.raises(ValueError, match=r"position must be an integer >= 0 and <= 3"):
        plots.plot_encoding_heatmap(4, 4, position=4)
    with pytest.raises(ValueError, match="measure must be one of"):
        plots.plot_similarity(4, 4, measure="euclidean")
    with pytest.raises(ValueError, match=r"columns\[1\] must be an integer >= 0 and <= 7"):
        plots.plot_columns_against_position(4, 8, columns=(0, 8))
    with pytest.raises(TypeError, match="columns must be a sequence of integers"):
        plots.plot_columns_against_position(4, 8, columns="01")
    with pytest.raises(ValueError, match="columns must hold between 1 and 8 values"):
        plots.plot_columns_against_position(4, 8, columns=tuple(range(9)))
    with pytest.raises(ValueError, match="positions must hold between 1 and 8 values"):
        plots.plot_positions_against_column(8, positions=())
    with pytest.raises(ValueError, match="cosine distance is undefined for d_model = 1"):
        plots.plot_distance_against_offset(5, 1, positions=(0,))
    with pytest.raises(ValueError, match=r"positions\[0\] must be an integer >= 0 and <= 4"):
        plots.plot_distance_against_offset(5, 4, positions=(5,))
    with pytest.raises(ValueError, match=r"bases\[0\] must be a finite number > 0"):
        plots.plot_wavelengths(8, bases=(-1.0,))
    with pytest.raises(TypeError, match="bases must be a sequence of numbers"):
        plots.plot_wavelengths(8, bases=100.0)
    with pytest.raises(ValueError, match="length must be an integer >= 1"):
        plots.plot_wavelengths(8, length=0)
    with pytest.raises(ValueError, match="d_model must be >= 2 to have a sine/cosine pair"):
        plots.plot_pair_circles(5, 1)
    with pytest.raises(ValueError, match=r"pairs\[0\] must be an integer >= 0 and <= 1"):
        plots.plot_pair_circles(5, 5, pairs=(2,))


def test_a_view_without_a_position_cannot_mark_one():
    view = EncodingView(5, 4)
    with pytest.raises(ValueError, match="built without a position"):
        view.set_position(1)


def test_frozen_layout_keeps_the_axes_and_the_settings():
    view = SimilarityView(30, 8, base=100.0, measure="cosine", position=5)
    view.freeze_layout(200, 64)
    assert view.figure.get_layout_engine() is not None
    boxes = [ax.get_position().bounds for ax in view.figure.axes]
    assert view.settings == {"length": 30, "d_model": 8, "base": 100.0, "measure": "cosine"}
    assert view.position == 5
    np.testing.assert_array_equal(
        view.image.get_array(), cosine_distance_matrix(sinusoidal(30, 8, 100.0))
    )
    view.update(200, 64, measure="dot")
    view.figure.draw_without_rendering()
    assert [ax.get_position().bounds for ax in view.figure.axes] == boxes


def test_cvd_heatmaps_show_the_simulated_table():
    from posenc.colour import CVD_TYPES, DICHROMACY, simulate_cvd

    fig = plots.plot_cvd_heatmaps(12, 8, 100.0)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "normal vision"
    assert titles[1:] == [f"{DICHROMACY[kind]} (simulated)" for kind in CVD_TYPES]
    assert titles[1:] == [
        f"{name} (simulated)" for name in ("deuteranopia", "protanopia", "tritanopia")
    ]
    expected = plt.get_cmap("RdBu_r")((sinusoidal(12, 8, 100.0) + 1) / 2)[..., :3]
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), expected)
    np.testing.assert_allclose(
        fig.axes[2].images[0].get_array(), simulate_cvd(expected, CVD_TYPES[1])
    )
    assert "column j" in all_text(fig) and "position k" in all_text(fig)
    with pytest.raises(ValueError, match="length"):
        plots.plot_cvd_heatmaps(0, 8)


def test_distance_from_start_marks_each_average_at_its_highest_point():
    bases = (100.0, 10_000.0, 1e6)
    fig = plots.plot_distance_from_start(200, 16, bases=bases, window=21, mark_peaks=True)
    ax = fig.axes[0]
    assert len(ax.lines) == 2 * len(bases) + len(bases)
    for b in range(len(bases)):
        mean, dot = ax.lines[2 * b + 1], ax.lines[2 * len(bases) + b]
        top = int(np.argmax(mean.get_ydata()))
        np.testing.assert_array_equal(dot.get_xdata(), [mean.get_xdata()[top]])
        np.testing.assert_allclose(dot.get_ydata(), [mean.get_ydata().max()], atol=1e-12)
        assert dot.get_marker() == "o" and dot.get_markersize() >= 10
        assert dot.get_markerfacecolor() == mean.get_color()
    # the legend is unchanged: one entry per base
    assert len(ax.get_legend_handles_labels()[1]) == len(bases)


def test_distance_from_start_draws_the_distance_and_its_average():
    bases = (100.0, 10_000.0)
    fig = plots.plot_distance_from_start(200, 16, bases=bases, window=21)
    ax = fig.axes[0]
    assert len(ax.lines) == 4
    for b, base in enumerate(bases):
        raw, mean = ax.lines[2 * b], ax.lines[2 * b + 1]
        dist = cosine_distance_matrix(sinusoidal(200, 16, base))[0]
        np.testing.assert_allclose(raw.get_ydata(), dist, atol=1e-12)
        np.testing.assert_array_equal(mean.get_xdata(), np.arange(10, 190))
        # the bold line at k is the mean of the distances at k - 10 .. k + 10
        expected = [dist[k - 10 : k + 11].mean() for k in range(10, 190)]
        np.testing.assert_allclose(mean.get_ydata(), expected, atol=1e-12)
        assert mean.get_linewidth() > raw.get_linewidth()
    # the legend names each base and the turns of its slowest pair
    turns = [199 / wavelengths(16, base)[-1] for base in bases]
    assert ax.get_legend_handles_labels()[1] == [
        f"$n$ = 100: slowest pair turns {turns[0]:.2g} times",
        f"$n$ = 10,000: slowest pair turns {turns[1]:.2g} times",
    ]
    styles = {ax.lines[2 * b + 1].get_linestyle() for b in range(2)}
    assert len(styles) == 2  # told apart by more than colour
    assert ax.get_xlabel() == "position $k$ (tokens)"
    assert ax.get_ylabel() == "cosine distance from position 0 (no unit)"
    assert all(line.get_marker() in (None, "None") for line in ax.lines)  # no dots by default
    with pytest.raises(ValueError, match="window"):
        plots.plot_distance_from_start(20, 8, window=4)
    with pytest.raises(ValueError, match="window"):
        plots.plot_distance_from_start(20, 8, window=21)
    with pytest.raises(ValueError, match="even"):
        plots.plot_distance_from_start(20, 7, window=3)
    with pytest.raises(ValueError, match="bases"):
        plots.plot_distance_from_start(20, 8, bases=(1.0,) * 5, window=3)


def test_distance_from_start_draws_the_mean_of_each_part():
    bases = (100.0, 10_000.0)
    fig = plots.plot_distance_from_start(200, 16, bases=bases, window=21, parts=4)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4  # first axes unchanged
    ax = fig.axes[1]
    assert len(ax.lines) == len(bases)
    for b, base in enumerate(bases):
        dist = cosine_distance_matrix(sinusoidal(200, 16, base))[0]
        expected = [dist[k : k + 50].mean() for k in range(0, 200, 50)]
        np.testing.assert_array_equal(ax.lines[b].get_xdata(), [1, 2, 3, 4])
        np.testing.assert_allclose(ax.lines[b].get_ydata(), expected, atol=1e-12)
        assert ax.lines[b].get_color() == fig.axes[0].lines[2 * b + 1].get_color()
        assert ax.lines[b].get_linestyle() == fig.axes[0].lines[2 * b + 1].get_linestyle()
    assert "part" in ax.get_xlabel() and "no unit" in ax.get_ylabel()
    assert len(plots.plot_distance_from_start(200, 16, window=21).axes) == 1
    for bad in (1, 201, -1):
        with pytest.raises(ValueError, match="parts"):
            plots.plot_distance_from_start(200, 16, window=21, parts=bad)
