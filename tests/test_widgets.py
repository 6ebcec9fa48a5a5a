"""Tests of posenc.widgets: every slider, to both ends of its range, redraws the right picture.

Values are set from code (``slider.value = ...``), exactly as a drag in
JupyterLab sets them, and the explorer's picture and view are then checked.
"""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from posenc import cosine_distance_matrix, dot_product_matrix, sinusoidal
from posenc.projection import pca_projection
from posenc.widgets import (
    BASE_RANGE,
    DEFAULTS,
    encoding_explorer,
    projection_explorer,
    similarity_explorer,
)

BUILDERS = {
    "encoding": encoding_explorer,
    "similarity": similarity_explorer,
    "projection": projection_explorer,
}
SMALL = {"max_length": 64, "max_d_model": 32, "length": 20, "d_model": 8, "position": 5}


def pixels(explorer) -> np.ndarray:
    """The explorer's picture, decoded from its PNG bytes."""
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(explorer.image.value)))


def expected_data(explorer):
    """What the view must show for the explorer's current slider values, computed afresh."""
    length, d, n = (
        explorer.length_slider.value,
        explorer.d_slider.value,
        explorer.base_slider.value,
    )
    table = sinusoidal(length, d, n)
    name = type(explorer).__name__
    if name == "EncodingExplorer":
        return explorer.view.image.get_array(), table
    if name == "SimilarityExplorer":
        if explorer.measure_dropdown.value == "dot":
            return explorer.view.image.get_array(), dot_product_matrix(table)
        if d == 1:  # undefined: nothing is drawn
            return np.ma.getmaskarray(explorer.view.image.get_array()), True
        return explorer.view.image.get_array(), cosine_distance_matrix(table)
    coords = pca_projection(table, n_components=min(2, d)).coordinates
    shown = explorer.view.points.get_offsets()[:, : coords.shape[1]]
    return shown, coords


def check_picture(explorer):
    shown, expected = expected_data(explorer)
    np.testing.assert_array_equal(shown, expected)
    width, height = explorer.view.figure.canvas.get_width_height()
    assert pixels(explorer).shape == (height, width, 3)
    assert explorer.position_slider.max == explorer.length_slider.value - 1
    assert explorer.view.position == explorer.position_slider.value


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def explorer(request):
    """One explorer of each kind at the default sizes, shared by the tests of this module."""
    return BUILDERS[request.param]()


def test_starts_with_one_picture_at_the_defaults():
    for build in BUILDERS.values():
        fresh = build()
        assert fresh.redraws == 1 and fresh.full_redraws == 1
        assert fresh.length_slider.value == DEFAULTS["length"]
        assert fresh.d_slider.value == DEFAULTS["d_model"]
        assert fresh.base_slider.value == DEFAULTS["base"]
        assert fresh.position_slider.value == DEFAULTS["position"]
        check_picture(fresh)


def test_picture_is_a_lossless_copy_of_the_canvas(explorer):
    """The hand-written PNG decodes, in an independent decoder, to the canvas's exact pixels."""
    canvas = explorer.view.figure.canvas
    rgb = np.asarray(canvas.buffer_rgba())[..., :3]
    decoded = Image.open(io.BytesIO(explorer.image.value))
    assert decoded.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(decoded), rgb)


def test_slider_ranges_and_update_modes(explorer):
    assert (explorer.d_slider.min, explorer.d_slider.max) == (1, 512)
    assert (explorer.length_slider.min, explorer.length_slider.max) == (1, 512)
    assert explorer.base_slider.base == 10
    assert 10**explorer.base_slider.min == BASE_RANGE[0] == 1.0
    assert 10**explorer.base_slider.max == BASE_RANGE[1]
    assert explorer.position_slider.min == 0
    # Heavy redraws wait for the release, the light one follows the drag.
    assert not explorer.d_slider.continuous_update
    assert not explorer.base_slider.continuous_update
    assert not explorer.length_slider.continuous_update
    assert explorer.position_slider.continuous_update


@pytest.mark.parametrize(
    ("slider", "values"),
    [
        ("d_slider", [1, 2, 3, 512, 127]),
        ("length_slider", [1, 2, 512, 37]),
        ("base_slider", [1.0, 1.001, 1e6, 10_000.0]),
        ("position_slider", [0, "max", 3]),
    ],
)
def test_every_slider_to_its_ends(explorer, slider, values):
    control = getattr(explorer, slider)
    for value in values:
        before = explorer.redraws
        value = control.max if value == "max" else value
        if control.value == value:
            continue
        control.value = value
        assert control.value == value
        assert explorer.redraws == before + 1, f"{slider} = {value} did not redraw once"
        check_picture(explorer)


def test_smallest_table_everywhere(explorer):
    explorer.length_slider.value = 1
    explorer.d_slider.value = 1
    explorer.base_slider.value = 10**explorer.base_slider.min
    assert explorer.position_slider.value == 0
    check_picture(explorer)
    explorer.length_slider.value = 512
    explorer.d_slider.value = 512
    explorer.base_slider.value = 1e6
    explorer.position_slider.value = 511
    check_picture(explorer)


def test_shortening_moves_the_position_and_redraws_once():
    explorer = encoding_explorer(**SMALL)
    explorer.position_slider.value = 19
    before = explorer.redraws
    explorer.length_slider.value = 10
    assert explorer.position_slider.value == 9
    assert explorer.redraws == before + 1
    check_picture(explorer)


def test_a_position_change_only_blits():
    explorer = similarity_explorer(**SMALL)
    full = explorer.full_redraws
    for k in range(8):
        explorer.position_slider.value = k
    assert explorer.full_redraws == full
    np.testing.assert_array_equal(explorer.view.profile.get_ydata(), explorer.view.matrix[7])


@pytest.mark.parametrize("build", list(BUILDERS.values()), ids=list(BUILDERS))
def test_blitted_pictures_equal_fresh_ones(build):
    # The layered redraw must give the very pixels a new explorer draws from scratch.
    moved = build(**SMALL)
    moved.position_slider.value = 12
    moved.base_slider.value = 300.0
    moved.position_slider.value = 17
    fresh = build(**{**SMALL, "position": 17, "base": 300.0})
    np.testing.assert_array_equal(pixels(moved), pixels(fresh))


def test_unchanged_frame_is_not_rendered_again():
    explorer = encoding_explorer(**SMALL)
    full = explorer.full_redraws
    explorer.base_slider.value = 50.0  # same limits, same labels: the frame is reused
    assert explorer.full_redraws == full
    explorer.d_slider.value = 9  # new column axis: the frame is rendered again
    assert explorer.full_redraws == full + 1
    check_picture(explorer)


def test_measure_menu():
    explorer = similarity_explorer(**SMALL, measure="dot")
    before = explorer.redraws
    explorer.measure_dropdown.value = "cosine"
    assert explorer.redraws == before + 1
    assert explorer.view.image.get_cmap().name == "viridis"
    check_picture(explorer)
    explorer.d_slider.value = 1  # the cosine distance is undefined, but nothing fails
    assert explorer.view.matrix is None
    assert "undefined" in explorer.view.ax.get_title()
    check_picture(explorer)


@settings(max_examples=12, deadline=None)
@given(
    length=st.integers(1, 64),
    d_model=st.integers(1, 32),
    exponent=st.floats(0.0, 6.0),
    position=st.integers(0, 63),
)
def test_random_settings(length, d_model, exponent, position):
    explorer = _shared_projection()
    explorer.length_slider.value = length
    explorer.d_slider.value = d_model
    explorer.base_slider.value = 10.0**exponent
    explorer.position_slider.value = min(position, length - 1)
    check_picture(explorer)


_SHARED = {}


def _shared_projection():
    if "projection" not in _SHARED:
        _SHARED["projection"] = projection_explorer(**SMALL)
    return _SHARED["projection"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"length": 0}, ValueError, "length must be an integer >= 1 and <= 512"),
        ({"length": 600}, ValueError, "length must be an integer >= 1 and <= 512"),
        ({"d_model": 0}, ValueError, "d_model must be an integer >= 1 and <= 512"),
        ({"d_model": 64, "max_d_model": 32}, ValueError, "d_model must be an integer >= 1"),
        ({"d_model": 8.0}, TypeError, "d_model must be an integer"),
        ({"base": 0.5}, ValueError, "base must be >= 1.0"),
        ({"base": 2e6}, ValueError, "base must be <= 1000000.0"),
        ({"base": "10000"}, TypeError, "base must be a real number"),
        ({"position": 100}, ValueError, "position must be an integer >= 0 and <= 99"),
        ({"position": -1}, ValueError, "position must be an integer >= 0"),
        ({"max_length": 0}, ValueError, "max_length must be an integer >= 1 and <= 2048"),
        ({"max_d_model": 4096}, ValueError, "max_d_model must be an integer >= 1 and <= 2048"),
    ],
)
@pytest.mark.parametrize("build", list(BUILDERS.values()), ids=list(BUILDERS))
def test_bad_arguments(build, kwargs, error, message):
    with pytest.raises(error, match=message):
        build(**kwargs)


def test_bad_measure():
    with pytest.raises(ValueError, match="measure must be one of"):
        similarity_explorer(measure="euclidean")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_plain_text_fallback_is_a_one_line_hint(name):
    """Before its cell runs, a stored explorer shows a hint, not the repr of its children."""
    explorer = BUILDERS[name](**SMALL)
    bundle = explorer._repr_mimebundle_()
    text = bundle["text/plain"]
    assert "\n" not in text and "children" not in text
    assert text == f"{type(explorer).__name__}: {explorer.HINT}"
    assert "run this cell" in text.lower()
    # The live view is still offered to front ends that render widgets.
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == explorer.model_id
