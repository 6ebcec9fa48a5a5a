"""Tests of posenc.plots.inside: each figure of chapter 6 draws the data it is given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from posenc import alibi_slopes, plots, t5_relative_bucket
from posenc.plots import inside
from posenc.rotary import rope_decay_bound, rotary_score


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_exported_from_plots_package():
    for name in inside.__all__:
        assert getattr(plots, name) is getattr(inside, name)
        assert name in plots.__all__


def test_shaw_clip_draws_each_table_on_its_own_centred_scale():
    off = np.arange(10)[None, :] - np.arange(10)[:, None]
    fig = plots.shaw_clip_figure(off, np.clip(off, -3, 3), 3)
    left, right = (ax.images[0] for ax in fig.axes[:2])
    np.testing.assert_array_equal(left.get_array(), off)
    np.testing.assert_array_equal(right.get_array(), np.clip(off, -3, 3))
    assert left.get_clim() == (-9.0, 9.0)
    # the clipped map spans only -3..3: one discrete colour per value
    assert right.get_clim() == (-3.5, 3.5) and right.get_cmap().N == 7
    colours = {tuple(right.to_rgba(v)) for v in range(-3, 4)}
    assert len(colours) == 7
    assert len(fig.axes) == 4  # a colour bar for each map
    assert all(ax.get_xlabel() for ax in fig.axes[:2]) and fig.axes[0].get_ylabel()
    assert plt.get_fignums() == []


def test_t5_figure_draws_buckets():
    off = np.arange(-150, 151)
    enc = t5_relative_bucket(off)
    fig = plots.t5_bucket_figure(off, {"enc": enc}, 128)
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_label() == "enc"]
    np.testing.assert_array_equal(line.get_xdata(), off)
    np.testing.assert_array_equal(line.get_ydata(), enc)
    assert sorted(ln.get_xdata()[0] for ln in fig.axes[0].lines if ln.get_linestyle() == ":") == [
        -128,
        128,
    ]


def test_decay_figure_draws_bounds():
    off = np.arange(0, 300)
    b = {"a": rope_decay_bound(off, 64), "b": rope_decay_bound(off, 64, 5e5)}
    fig = plots.decay_bound_figure(off, b)
    lines = fig.axes[0].lines
    for line, values in zip(lines, b.values(), strict=True):
        np.testing.assert_array_equal(line.get_ydata(), values)
    assert "(positions)" in fig.axes[0].get_xlabel()


def test_angle_error_figure_floors_zeros_on_log_axes():
    fig = plots.angle_error_figure(np.arange(1, 5), {"f16": np.array([0.0, 1e-3, 0.5, 2.0])})
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [1e-9, 1e-3, 0.5, 2.0])
    assert "radians" in ax.get_ylabel()
    assert "drawn at" not in ax.get_title()  # the floor is no news to a reader


def test_angle_error_figure_reference_line_is_one_radian():
    # the caption gives where each format passes a radian: the line must agree
    fig = plots.angle_error_figure(np.arange(1, 5), {"f16": np.array([0.1, 0.5, 2.0, 3.0])})
    ax = fig.axes[0]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and set(dashed[0].get_ydata()) == {1.0}
    assert any(t.get_text().startswith("1 rad") for t in ax.texts)
    fig = plots.angle_error_figure(np.arange(1, 3), {"f": [0.1, 4.0]}, threshold=np.pi)
    dashed = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert set(dashed[0].get_ydata()) == {np.pi}


def test_alibi_figure_one_line_per_head_on_log_distance():
    distance, slopes = np.arange(1, 1001), alibi_slopes(6)
    fig = plots.alibi_figure(distance, slopes)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith("head")]
    assert len(lines) == 6 and ax.get_xscale() == "log"
    for m, line in zip(slopes, lines, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), distance)
        np.testing.assert_allclose(line.get_ydata(), np.exp(-m * distance))
    assert "2^{-1}" in lines[4].get_label()
    assert len({line.get_color() for line in lines}) == 6
    # the legend runs from the steepest head to the flattest
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    by_slope = [lines[h].get_label() for h in np.argsort(-slopes)]
    assert legend == by_slope and legend[0].startswith("head 4")


def test_rope_view_draws_score_and_bound():
    view = plots.RopeView(32, 10_000.0, 150, max_offset=2000, max_d=64)
    off = view.offsets
    assert np.array_equal(off[:256], np.arange(1, 257)) and off[-1] == 2000
    q = np.full(32, 1 / np.sqrt(32))
    np.testing.assert_allclose(view.score, rotary_score(q, q, off))
    np.testing.assert_array_equal(view.bound, rope_decay_bound(off, 32))
    np.testing.assert_array_equal(
        view.score_line.get_ydata(), np.maximum(np.abs(view.score), inside.FLOOR)
    )
    # for this pair the RoFormer bound is the relative bound itself
    assert np.all(np.abs(view.score) <= view.bound + 1e-12)
    at_150 = rotary_score(q, q, [150])[0], rope_decay_bound([150], 32)[0]
    assert f"offset 150: score {at_150[0]:.3f}, bound {at_150[1]:.2f}" in view.title.get_text()
    limits = view.ax.get_xlim(), view.ax.get_ylim()
    view.update(64, 500_000.0)
    view.set_offset(2000)
    assert (view.ax.get_xlim(), view.ax.get_ylim()) == limits  # the frame never moves
    np.testing.assert_array_equal(view.marker.get_xdata(), [2000, 2000])
    with pytest.raises(ValueError, match="even"):
        view.update(33, 1e4)
    with pytest.raises(ValueError, match="d must be"):
        view.update(66, 1e4)
    with pytest.raises(ValueError, match="offset"):
        view.set_offset(2001)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: plots.shaw_clip_figure(np.zeros((3, 3)), np.zeros((3, 4)), 1), ValueError),
        (lambda: plots.t5_bucket_figure(np.arange(3), {}, 8), TypeError),
        (lambda: plots.decay_bound_figure(np.arange(3), {"a": np.ones(4)}), ValueError),
        (lambda: plots.alibi_figure(np.zeros((2, 3)), np.ones(3)), ValueError),
        (lambda: plots.alibi_figure(np.arange(1, 4), -np.ones(3)), ValueError),
    ],
)
def test_bad_input(call, error):
    with pytest.raises(error):
        call()


def test_angle_error_figure_per_step_marks_the_share_and_the_rule_of_thumb():
    # chapter 6 draws the share of a step with a 5% line and position * u
    at = np.array([1.0, 10.0, 100.0, 1000.0])
    share = {"f16": np.array([0.0, 0.005, 0.05, np.inf]), "f32": at * 1e-7}
    fig = plots.angle_error_figure(at, share, 0.05, per_step=True, guides={"f16": 2.0**-11})
    ax = fig.axes[0]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and set(dashed[0].get_ydata()) == {0.05}
    assert any(t.get_text().startswith("5% of a step") for t in ax.texts)
    assert "share of a step" in ax.get_ylabel()
    dotted = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert len(dotted) == 1
    np.testing.assert_allclose(dotted[0].get_ydata(), at * 2.0**-11)
    assert dotted[0].get_color() == ax.lines[0].get_color()
    assert np.isnan(ax.lines[0].get_ydata()[-1])  # an overflow is not drawn
    with pytest.raises(ValueError, match="guides"):
        plots.angle_error_figure(at, share, per_step=True, guides={"bf16": 0.004})
