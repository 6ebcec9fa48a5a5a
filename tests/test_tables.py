"""Tests of posenc.tables: the same numbers in the text and in the HTML of a table."""

import numpy as np
import pytest

from posenc.tables import Table


def test_text_is_right_aligned_and_rounded():
    table = Table(["word", "k", "value"], [["dogs", 0, 0.123456], ["sleep", 12, -1.0]])
    assert repr(table).splitlines() == [
        " word   k    value",
        " dogs   0   0.1235",
        "sleep  12  -1.0000",
    ]


def test_html_holds_the_same_cells_escaped():
    html = Table(["a<b", "x"], [["<i>", 0.5]], precision=2)._repr_html_()
    assert html.startswith('<table class="table">')
    assert "<th>a&lt;b</th>" in html and "<td>&lt;i&gt;</td>" in html and "<td>0.50</td>" in html


def test_numpy_values_and_rows():
    table = Table(["i", "w", "ok"], np.array([[0, 1.0, 1]], dtype=object))
    assert repr(table).splitlines()[1].split() == ["0", "1.0000", "1"]
    table = Table(["i", "w", "ok"], [np.array([np.int64(3), np.float64(0.25), np.True_], object)])
    assert repr(table).splitlines()[1].split() == ["3", "0.2500", "True"]


def test_negative_zero_is_shown_as_zero():
    assert repr(Table(["x"], [[-1e-9]])).splitlines()[1].strip() == "0.0000"


def test_empty_table_shows_its_header():
    assert repr(Table(["a", "bb"], [])) == "a  bb"


def test_bad_input():
    with pytest.raises(ValueError, match="row 1 must have 2 entries"):
        Table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(TypeError, match="columns must be a sequence of strings"):
        Table("ab", [])
    with pytest.raises(TypeError, match="columns must be a sequence of strings"):
        Table([1, 2], [])
    with pytest.raises(TypeError, match="row 0 must be a sequence"):
        Table(["a"], [5])
    with pytest.raises(TypeError, match="rows must be a sequence of rows"):
        Table(["a"], 5)
    with pytest.raises(ValueError, match="precision must be an integer >= 0 and <= 16"):
        Table(["a"], [], precision=20)
