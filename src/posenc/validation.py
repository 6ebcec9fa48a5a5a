"""Argument checks shared by every public function of :mod:`posenc`.

Each checker takes the argument's *name* as its first parameter so that the
error message can name it, and returns the value converted to a plain Python
or NumPy type. A bad value raises :class:`TypeError` (wrong kind of object) or
:class:`ValueError` (right kind, outside the accepted range), with a message
that says what was accepted and what was received.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "check_array",
    "check_choice",
    "check_integer",
    "check_real",
]


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def check_integer(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """Return ``value`` as a Python ``int`` after checking its type and range.

    Python and NumPy integers are accepted; floats (even ``3.0``), strings and
    booleans are rejected with :class:`TypeError`.

    Examples
    --------
    >>> check_integer("length", np.int64(5), minimum=0)
    5
    """
    if _is_bool(value) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value}")
    if maximum is not None and value > maximum:
        lower = f">= {minimum} and " if minimum is not None else ""
        raise ValueError(f"{name} must be an integer {lower}<= {maximum}, got {value}")
    return value


def check_real(
    name: str,
    value: Any,
    *,
    positive: bool = False,
    minimum: float | None = None,
    maximum: float | None = None,
    finite: bool = True,
) -> float:
    """Return ``value`` as a Python ``float`` after checking its type and range.

    Python and NumPy integers and floats are accepted; booleans, strings and
    complex numbers are rejected with :class:`TypeError`. ``positive`` asks for
    a value strictly greater than zero, ``minimum``/``maximum`` for inclusive
    bounds, and ``finite`` (the default) rejects NaN and infinities.

    Examples
    --------
    >>> check_real("base", 10_000, positive=True)
    10000.0
    """
    if _is_bool(value) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    value = float(value)
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if positive and not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise.

    Examples
    --------
    >>> check_choice("layout", "split", ("interleaved", "split"))
    'split'
    """
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {choices}, got {_describe(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    finite: bool = True,
) -> np.ndarray:
    """Return ``value`` as a float64 NumPy array after checking it.

    ``ndim`` is the accepted number of dimensions (or a tuple of them);
    ``shape`` gives the expected size of each axis, ``None`` for any size.
    Non-numeric input raises :class:`TypeError`; a wrong number of dimensions,
    a wrong shape or non-finite entries raise :class:`ValueError`.

    Examples
    --------
    >>> check_array("x", [[1, 2], [3, 4]], ndim=2).shape
    (2, 2)
    """
    try:
        array = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic array-likes
        raise TypeError(f"{name} must be an array of real numbers, got {_describe(value)}") from exc
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must be an array of real numbers, "
            f"got dtype {array.dtype} from {_describe(value)}"
        )
    array = array.astype(np.float64, copy=False)
    if shape is not None and ndim is None:
        ndim = len(shape)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if array.ndim not in allowed:
            wanted = " or ".join(str(n) for n in allowed)
            raise ValueError(f"{name} must have {wanted} dimensions, got shape {array.shape}")
    if shape is not None:
        expected = tuple(shape)
        if array.ndim != len(expected) or any(
            e is not None and e != s for e, s in zip(expected, array.shape, strict=True)
        ):
            wanted = "(" + ", ".join("any" if e is None else str(e) for e in expected) + ")"
            raise ValueError(f"{name} must have shape {wanted}, got {array.shape}")
    if finite and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite numbers (no NaN or infinity)")
    return array
