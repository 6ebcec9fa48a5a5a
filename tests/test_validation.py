"""Tests of posenc.validation: what is accepted, what is rejected, and the messages."""

import numpy as np
import pytest

from posenc.validation import check_array, check_choice, check_integer, check_real


@pytest.mark.parametrize("value", [3, np.int8(3), np.int64(3), np.uint16(3)])
def test_integers_accepted(value):
    result = check_integer("n", value, minimum=0, maximum=5)
    assert result == 3 and type(result) is int


@pytest.mark.parametrize("value", [3.0, "3", True, np.bool_(False), None, np.float64(3), [3]])
def test_non_integers_rejected(value):
    with pytest.raises(TypeError, match=r"^n must be an integer, got "):
        check_integer("n", value)


def test_integer_range_messages():
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1 and <= 4, got 0$"):
        check_integer("n", 0, minimum=1, maximum=4)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1 and <= 4, got 9$"):
        check_integer("n", 9, minimum=1, maximum=4)
    with pytest.raises(ValueError, match=r"^n must be an integer <= 4, got 9$"):
        check_integer("n", 9, maximum=4)


@pytest.mark.parametrize("value", [2, 2.5, np.float32(2.5), np.int64(2)])
def test_reals_accepted(value):
    assert check_real("x", value, positive=True) == pytest.approx(float(value))


@pytest.mark.parametrize("value", ["2", True, None, 1j, [1.0]])
def test_non_reals_rejected(value):
    with pytest.raises(TypeError, match=r"^x must be a real number, got "):
        check_real("x", value)


def test_real_range_messages():
    with pytest.raises(ValueError, match=r"x must be a finite number > 0, got 0\.0"):
        check_real("x", 0, positive=True)
    with pytest.raises(ValueError, match="x must be a finite number, got nan"):
        check_real("x", float("nan"))
    with pytest.raises(ValueError, match=r"x must be >= 1\.0, got 0\.5"):
        check_real("x", 0.5, minimum=1.0)
    with pytest.raises(ValueError, match=r"x must be <= 1\.0, got 1\.5"):
        check_real("x", 1.5, maximum=1.0)
    assert check_real("x", float("inf"), finite=False) == float("inf")


def test_choice():
    assert check_choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"mode must be one of \('a', 'b'\), got 'c'"):
        check_choice("mode", "c", ("a", "b"))
    with pytest.raises(TypeError, match="mode must be one of"):
        check_choice("mode", 1, ("a", "b"))


def test_array_checks():
    out = check_array("x", [[1, 2, 3]], shape=(1, None))
    assert out.dtype == np.float64 and out.shape == (1, 3)
    with pytest.raises(ValueError, match=r"x must have 1 or 3 dimensions, got shape \(1, 3\)"):
        check_array("x", [[1, 2, 3]], ndim=(1, 3))
    with pytest.raises(ValueError, match=r"x must have shape \(2, any\), got \(1, 3\)"):
        check_array("x", [[1, 2, 3]], shape=(2, None))
    with pytest.raises(ValueError, match="x must contain only finite numbers"):
        check_array("x", [np.inf])
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        check_array("x", [1 + 2j])
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        check_array("x", [object()])


def test_real_bounds_are_inclusive():
    assert check_real("x", 0.5, minimum=0.5) == 0.5
    assert check_real("x", 2.0, maximum=2.0) == 2.0
    assert check_real("x", 1, minimum=1, maximum=1) == 1.0
    with pytest.raises(ValueError, match=r"x must be >= 0\.5"):
        check_real("x", np.nextafter(0.5, 0.0), minimum=0.5)
    with pytest.raises(ValueError, match=r"x must be <= 2\.0"):
        check_real("x", np.nextafter(2.0, 3.0), maximum=2.0)


def test_integer_bounds_are_inclusive():
    assert check_integer("n", 3, minimum=3) == 3
    assert check_integer("n", 7, maximum=7) == 7
