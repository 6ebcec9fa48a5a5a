"""Tests of the RoPE explorer of posenc.widgets: each slider redraws the right curves."""

import io

import numpy as np
import pytest
from PIL import Image

from posenc.rotary import rope_decay_bound, rotary_score
from posenc.widgets import ROPE_DEFAULTS, rope_explorer


def pixels(explorer) -> np.ndarray:
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(explorer.image.value)))


def expected(explorer):
    d, n = explorer.d_slider.value, explorer.base_slider.value
    off = explorer.view.offsets
    q = np.full(d, 1 / np.sqrt(d))
    return rotary_score(q, q, off, base=n), rope_decay_bound(off, d, n)


def test_defaults_and_first_picture():
    explorer = rope_explorer()
    assert explorer.d_slider.value == ROPE_DEFAULTS["d"]
    assert explorer.base_slider.value == ROPE_DEFAULTS["base"]
    assert explorer.offset_slider.value == ROPE_DEFAULTS["offset"]
    assert explorer.redraws == 1 and explorer.full_redraws == 1
    assert pixels(explorer).ndim == 3


@pytest.mark.parametrize(
    ("slider", "values"),
    [
        ("d_slider", [2, 64, 256]),
        ("base_slider", [10.0, 500_000.0, 1e6]),
        ("offset_slider", [1, 4000, 8192]),
    ],
)
def test_every_slider_redraws_the_right_curves(slider, values):
    explorer = rope_explorer()
    before = pixels(explorer)
    for count, value in enumerate(values, start=2):
        getattr(explorer, slider).value = value
        score, bound = expected(explorer)
        np.testing.assert_allclose(explorer.view.score, score, atol=1e-12)
        np.testing.assert_array_equal(explorer.view.bound, bound)
        assert explorer.redraws == count
        after = pixels(explorer)
        assert after.shape == before.shape and not np.array_equal(after, before)
        before = after


def test_frame_rendered_once_and_marker_follows_the_offset():
    explorer = rope_explorer()
    explorer.d_slider.value = 64
    explorer.base_slider.value = 1000.0
    explorer.offset_slider.value = 200
    assert explorer.full_redraws == 1 and explorer.redraws == 4
    np.testing.assert_array_equal(explorer.view.marker.get_xdata(), [200, 200])
    assert "offset 200" in explorer.view.title.get_text()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d": 7}, ValueError, "even"),
        ({"d": 512}, ValueError, "d must be"),
        ({"base": 1.0}, ValueError, "base"),
        ({"offset": 0}, ValueError, "offset"),
        ({"offset": 50, "max_offset": 20}, ValueError, "offset"),
        ({"max_offset": 1.5}, TypeError, "max_offset"),
        ({"max_d": 3}, ValueError, "max_d"),
    ],
)
def test_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        rope_explorer(**kwargs)


def test_rope_explorer_falls_back_to_the_one_line_hint():
    explorer = rope_explorer()
    assert repr(explorer) == f"RopeExplorer: {explorer.HINT}"
    assert explorer._repr_mimebundle_()["text/plain"] == repr(explorer)
