"""The properties we want from a position signal, each checked by a measurement.

Chapter 1 lists what we want from a position code and tries the simple
candidates against that list. Each property has a check here that *measures*
one number and compares it with a stated threshold:

====================  ==============================================  =========================
property              measured number                                 passes when
====================  ==============================================  =========================
``bounded``           largest ``|PE[k, j]|``, up to ``4 L`` if defined  ``<= bound``
``distinct``          smallest distance between two positions' codes  ``> tol``
``proximity``         :func:`distance_agreement` of the table         ``>= min_agreement``
``length_invariant``  largest change of a code when ``L`` changes     ``<= tol``
``deterministic``     largest difference between two calls            ``== 0``
``defined_beyond``    positions coded when asked for a longer length  all of them: no error, finite
====================  ==============================================  =========================

A *scheme* is any function ``scheme(length, d_model)`` that returns the code
table, a float array of shape ``(length, d_model)`` whose row ``k`` is the
code of position ``k``: :func:`posenc.sinusoidal` and the naive schemes of
:mod:`posenc.encodings` are schemes. :func:`property_table` runs every check
on several schemes and returns a :class:`PropertyTable` that prints as a
table of ticks.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from .encodings import (
    binary_encoding,
    index_encoding,
    index_over_length_encoding,
    one_hot_encoding,
    sinusoidal,
)
from .validation import check_array, check_integer, check_real

__all__ = [
    "CANDIDATE_SCHEMES",
    "PROPERTIES",
    "PROPERTY_LABELS",
    "PROPERTY_MEASURES",
    "Check",
    "PropertyTable",
    "check_bounded",
    "check_defined_beyond",
    "check_deterministic",
    "check_distinct",
    "check_length_invariant",
    "check_properties",
    "check_proximity",
    "distance_agreement",
    "distance_ties",
    "mean_distance_by_offset",
    "property_table",
]

Scheme = Callable[[int, int], Any]

PROPERTIES = (
    "bounded",
    "distinct",
    "proximity",
    "length_invariant",
    "deterministic",
    "defined_beyond",
)
"""The properties, in the order chapter 1 lists them."""

PROPERTY_LABELS = MappingProxyType(
    {
        "bounded": "bounded",
        "distinct": "distinct codes",
        "proximity": "near close, far far",
        "length_invariant": "same code at any length",
        "deterministic": "deterministic",
        "defined_beyond": "has codes past training length",
    }
)
"""Short human-readable names of :data:`PROPERTIES`, for tables and figures."""

PROPERTY_MEASURES = MappingProxyType(
    {
        "bounded": "max |entry|",
        "distinct": "min distance",
        "proximity": "agreement",
        "length_invariant": "max change",
        "deterministic": "max difference",
        "defined_beyond": "positions coded",
    }
)
"""What :attr:`Check.value` measures for each of :data:`PROPERTIES`, in a few words."""

CANDIDATE_SCHEMES = MappingProxyType(
    {
        "raw index": index_encoding,
        "index / length": index_over_length_encoding,
        "one-hot": one_hot_encoding,
        "binary digits": binary_encoding,
        "sinusoidal": sinusoidal,
    }
)
"""The five schemes chapter 1 tries, by name (read-only)."""


@dataclass(frozen=True)
class Check:
    """The outcome of one check: the verdict, the number it rests on, and a sentence.

    Attributes
    ----------
    passed : bool
        Whether the scheme has the property.
    value : float
        The measured number the verdict compares with its threshold
        (``nan`` when the scheme could not produce the codes to measure).
    detail : str
        The measurement in words, e.g. ``"max |value| = 31 > bound 1"``.
    """

    passed: bool
    value: float
    detail: str

    def __str__(self) -> str:
        return f"{'✓' if self.passed else '✗'} {self.detail}"


# --- helpers --------------------------------------------------------------


def _check_scheme(scheme: Any) -> Scheme:
    if not callable(scheme):
        raise TypeError(
            "scheme must be a callable scheme(length, d_model) returning an array of shape "
            f"(length, d_model), got {type(scheme).__name__}"
        )
    return scheme


def _codes(scheme: Scheme, length: int, d_model: int) -> np.ndarray:
    """Call ``scheme`` and check that it returned a finite ``(length, d_model)`` table."""
    table = check_array(f"scheme({length}, {d_model})", scheme(length, d_model), ndim=2)
    if table.shape != (length, d_model):
        raise ValueError(
            f"scheme({length}, {d_model}) must return shape ({length}, {d_model}), "
            f"got {table.shape}"
        )
    return table


def _check_args(
    scheme: Any, length: Any, d_model: Any, minimum_length: int
) -> tuple[Scheme, int, int]:
    scheme = _check_scheme(scheme)
    length = check_integer("length", length, minimum=minimum_length)
    d_model = check_integer("d_model", d_model, minimum=1)
    return scheme, length, d_model


_COMPARISONS = {  # operator: (test, the operator that holds when the test fails)
    "<=": (operator.le, ">"),
    ">": (operator.gt, "<="),
    ">=": (operator.ge, "<"),
}


def _compare(value: float, op: str, limit: float, template: str) -> Check:
    """The :class:`Check` of ``value op limit``, worded by ``template``."""
    test, negation = _COMPARISONS[op]
    passed = bool(test(value, limit))
    text = template.format(value=_fmt(value), sign=op if passed else negation, limit=_fmt(limit))
    return Check(passed, value, text)


def _pairwise_distances(table: np.ndarray) -> np.ndarray:
    """Euclidean distances between all rows, shape ``(L, L)``, exactly 0 on the diagonal."""
    diff = table[:, None, :] - table[None, :, :]
    return np.sqrt(np.einsum("abj,abj->ab", diff, diff))


def _fmt(value: float) -> str:
    return f"{value:.4g}"


# --- measurements on a table ---------------------------------------------


def mean_distance_by_offset(table: np.ndarray) -> np.ndarray:
    r"""Mean Euclidean distance between codes ``phi`` positions apart, for ``phi = 1 .. L-1``.

    .. math::

        \bar{e}(\phi) = \frac{1}{L - \phi} \sum_{k=0}^{L-\phi-1} \lVert PE_{k+\phi} - PE_k \rVert

    Parameters
    ----------
    table : array_like
        A code table, shape ``(L, d)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(L - 1,)``, float64; entry ``phi - 1`` is :math:`\bar{e}(\phi)`.
        Empty when ``L < 2``.

    Examples
    --------
    >>> mean_distance_by_offset([[0.0], [1.0], [3.0]])
    array([1.5, 3. ])
    """
    table = check_array("table", table, ndim=2)
    length = table.shape[0]
    out = np.empty(max(length - 1, 0))
    for phi in range(1, length):
        diff = table[phi:] - table[:-phi]
        out[phi - 1] = np.sqrt(np.einsum("kj,kj->k", diff, diff)).mean()
    return out


def _triple_counts(table: np.ndarray) -> tuple[int, int, int]:
    """Counts over the triples of :func:`distance_agreement`: (agree, tied, total)."""
    length = table.shape[0]
    dist = _pairwise_distances(table)
    # Distances equal up to the rounding of the entries count as ties.
    tol = 1e-12 * float(np.abs(table).max())
    positions = np.arange(length)
    agree = tied = total = 0
    for k in range(length):
        others = positions != k
        offset = np.abs(positions[others] - k)
        d_k = dist[k, others]
        nearer = offset[:, None] < offset[None, :]
        total += int(nearer.sum())
        agree += int((nearer & (d_k[:, None] < d_k[None, :] - tol)).sum())
        tied += int((nearer & (np.abs(d_k[:, None] - d_k[None, :]) <= tol)).sum())
    return agree, tied, total


def _triple_table(table: Any) -> np.ndarray:
    table = check_array("table", table, ndim=2)
    if table.shape[0] < 3:
        raise ValueError(f"table must have at least 3 rows (positions), got {table.shape[0]}")
    return table


def distance_agreement(table: np.ndarray) -> float:
    """How often "nearer in position" also means "nearer in code", from 0 to 1.

    Over every triple of distinct positions ``(k, a, b)`` with
    ``|a - k| < |b - k|`` (``a`` is the nearer of the two, seen from ``k``),
    the fraction in which the code of ``a`` is also strictly nearer to the
    code of ``k`` than the code of ``b`` is (Euclidean distance). Two
    distances that differ by at most ``1e-12`` times the largest ``|entry|``
    of the table count as a tie, and ties count as failures. A code whose
    distance grows strictly with the offset scores 1; a code whose distances
    ignore position and never tie scores about 0.5 (a coin flip), and one
    whose distances are all equal scores 0. :func:`distance_ties` gives the
    share of tied triples.

    Parameters
    ----------
    table : array_like
        A code table, shape ``(L, d)`` with ``L >= 3``. The work grows as
        ``L**3`` (about 0.1 s at ``L = 256``).

    Returns
    -------
    float
        The fraction, in ``[0, 1]``.

    Raises
    ------
    ValueError
        If the table has fewer than 3 rows (no triple to compare).

    Examples
    --------
    >>> distance_agreement([[0.0], [1.0], [2.0], [3.0]])
    1.0
    >>> distance_agreement(np.eye(4))
    0.0
    """
    agree, _, total = _triple_counts(_triple_table(table))
    return agree / total


def distance_ties(table: np.ndarray) -> float:
    """The share of the triples of :func:`distance_agreement` whose two distances tie.

    Parameters
    ----------
    table : array_like
        A code table, shape ``(L, d)`` with ``L >= 3``.

    Returns
    -------
    float
        The fraction of triples ``(k, a, b)``, ``|a - k| < |b - k|``, whose
        codes are equally far from the code of ``k`` (within ``1e-12`` times
        the largest ``|entry|``), in ``[0, 1]``. The agreement among the
        untied triples is ``distance_agreement(table) / (1 - ties)``.

    Raises
    ------
    ValueError
        If the table has fewer than 3 rows (no triple to compare).

    Examples
    --------
    >>> distance_ties(np.eye(4))
    1.0
    >>> distance_ties([[0.0], [1.0], [2.0], [3.0]])
    0.0
    """
    _, tied, total = _triple_counts(_triple_table(table))
    return tied / total


# --- one check per property ---------------------------------------------


def check_bounded(
    scheme: Scheme,
    length: int,
    d_model: int,
    *,
    bound: float = 1.0,
    extended_length: int | None = None,
) -> Check:
    """Bounded values: every code the scheme gives lies in ``[-bound, bound]``.

    The entries are measured on the table for ``extended_length`` positions
    (``4 * length`` by default) when the scheme can produce it, so a code that
    stays small up to ``length`` but grows beyond it fails; a scheme that has
    no codes past ``length`` (that is :func:`check_defined_beyond`' verdict) is
    measured on its ``(length, d_model)`` table. The bound of 1 is the scale
    of typical token embeddings; a position code much larger than that drowns
    the word it is added to.

    Examples
    --------
    >>> check_bounded(index_encoding, 8, 4)
    Check(passed=False, value=31.0, detail='max |value| = 31 > bound 1 (32 positions)')
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 1)
    bound = check_real("bound", bound, positive=True)
    if extended_length is None:
        extended_length = 4 * length
    extended_length = check_integer("extended_length", extended_length, minimum=length)
    try:
        codes = _codes(scheme, extended_length, d_model)
    except Exception:  # no codes beyond length: measure the seen ones
        codes = _codes(scheme, length, d_model)
    top = float(np.abs(codes).max())
    template = f"max |value| = {{value}} {{sign}} bound {{limit}} ({len(codes)} positions)"
    return _compare(top, "<=", bound, template)


def check_distinct(scheme: Scheme, length: int, d_model: int, *, tol: float = 1e-9) -> Check:
    """One code per position: the two closest codes of different positions are ``> tol`` apart.

    Examples
    --------
    >>> check_distinct(lambda length, d: np.zeros((length, d)), 4, 2).passed
    False
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 2)
    tol = check_real("tol", tol, minimum=0.0)
    dist = _pairwise_distances(_codes(scheme, length, d_model))
    closest = float(dist[~np.eye(length, dtype=bool)].min())
    return _compare(closest, ">", tol, "closest two codes {value} apart ({sign} {limit})")


def check_proximity(
    scheme: Scheme, length: int, d_model: int, *, min_agreement: float = 0.75
) -> Check:
    """Nearby positions close, far positions far: :func:`distance_agreement` >= ``min_agreement``.

    The default 0.75 asks for clearly better than the 0.5 of a code whose
    distances say nothing about position, while allowing the small wiggles
    of the sinusoidal code's fastest columns.

    Examples
    --------
    >>> check_proximity(index_encoding, 8, 2)
    Check(passed=True, value=1.0, detail='agreement 1 >= 0.75')
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 3)
    min_agreement = check_real("min_agreement", min_agreement, minimum=0.0, maximum=1.0)
    score = distance_agreement(_codes(scheme, length, d_model))
    return _compare(score, ">=", min_agreement, "agreement {value} {sign} {limit}")


def check_length_invariant(
    scheme: Scheme, length: int, d_model: int, *, tol: float = 1e-12
) -> Check:
    """The same code for a position whatever the sequence length.

    Compares the first ``m`` rows of the ``(length, d_model)`` table with the
    table of a sequence of ``m`` positions, for every ``m = 1 .. length - 1``;
    the measured number is the largest absolute difference.

    Examples
    --------
    >>> check_length_invariant(index_over_length_encoding, 4, 1)
    Check(passed=False, value=0.25, detail='a code changes by up to 0.25 with the length')
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 2)
    tol = check_real("tol", tol, minimum=0.0)
    full = _codes(scheme, length, d_model)
    change = max(
        float(np.abs(_codes(scheme, m, d_model) - full[:m]).max()) for m in range(1, length)
    )
    detail = (
        "no code changes with the length"
        if change == 0
        else f"a code changes by up to {_fmt(change)} with the length"
    )
    return Check(change <= tol, change, detail)


def check_deterministic(scheme: Scheme, length: int, d_model: int) -> Check:
    """Deterministic: two calls with the same arguments return identical tables.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> check_deterministic(lambda length, d: rng.normal(size=(length, d)), 4, 2).passed
    False
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 1)
    first = _codes(scheme, length, d_model)
    second = _codes(scheme, length, d_model)
    change = float(np.abs(first - second).max())
    same = bool(np.array_equal(first, second))
    detail = "two calls agree exactly" if same else f"two calls differ by up to {_fmt(change)}"
    return Check(same, change, detail)


def check_defined_beyond(
    scheme: Scheme,
    length: int,
    d_model: int,
    *,
    extended_length: int | None = None,
) -> Check:
    """Defined beyond seen lengths: a finite code for ``extended_length > length`` positions.

    ``length`` plays the longest sequence seen in training; the scheme must
    produce a finite ``(extended_length, d_model)`` table without error. Any
    error the scheme raises, a wrong shape or a non-finite entry counts as
    "not defined". The size of the codes is not looked at: that is
    :func:`check_bounded`'s job (it measures the same longer table), so an
    unbounded scheme such as the raw index passes here and fails there. The
    measured number is the count of positions coded (``extended_length`` on
    success, ``nan`` on failure). The default ``extended_length`` is
    ``4 * length``.

    The check is about existence only, not about use: that a code exists for
    a position says nothing about whether a model trained up to ``length``
    can use it (the sinusoidal code passes here, yet language models that
    use it degrade past their training length; chapter 7 tests this).
    Hence the name: defined beyond, not "extrapolates".

    Examples
    --------
    >>> check_defined_beyond(one_hot_encoding, 4, 4).passed
    False
    >>> check_defined_beyond(index_encoding, 4, 4)
    Check(passed=True, value=16.0, detail='finite codes for all 16 positions')
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 1)
    if extended_length is None:
        extended_length = 4 * length
    extended_length = check_integer("extended_length", extended_length, minimum=length + 1)
    try:
        _codes(scheme, extended_length, d_model)
    except Exception as exc:  # any failure means: no code for those positions
        return Check(False, math.nan, f"no codes at length {extended_length}: {exc}")
    return Check(True, float(extended_length), f"finite codes for all {extended_length} positions")


def check_properties(
    scheme: Scheme,
    length: int = 32,
    d_model: int = 64,
    *,
    bound: float = 1.0,
    min_agreement: float = 0.75,
    extended_length: int | None = None,
) -> dict[str, Check]:
    """Run every check of :data:`PROPERTIES` on one scheme.

    Parameters
    ----------
    scheme : callable
        ``scheme(length, d_model)`` returns the code table, shape ``(length, d_model)``.
    length : int
        Reference length ``L >= 3`` (the longest sequence "seen").
    d_model : int
        Width ``d >= 1`` of the codes.
    bound : float
        Largest accepted ``|value|`` (``bounded``).
    min_agreement : float
        Threshold of :func:`check_proximity`, in ``[0, 1]``.
    extended_length : int, optional
        Length for :func:`check_defined_beyond` and :func:`check_bounded`;
        ``4 * length`` by default.

    Returns
    -------
    dict of str to Check
        One :class:`Check` per property, keyed and ordered as :data:`PROPERTIES`.

    Examples
    --------
    >>> checks = check_properties(sinusoidal, 16, 32)
    >>> all(check.passed for check in checks.values())
    True
    """
    scheme, length, d_model = _check_args(scheme, length, d_model, 3)
    return {
        "bounded": check_bounded(
            scheme, length, d_model, bound=bound, extended_length=extended_length
        ),
        "distinct": check_distinct(scheme, length, d_model),
        "proximity": check_proximity(scheme, length, d_model, min_agreement=min_agreement),
        "length_invariant": check_length_invariant(scheme, length, d_model),
        "deterministic": check_deterministic(scheme, length, d_model),
        "defined_beyond": check_defined_beyond(
            scheme, length, d_model, extended_length=extended_length
        ),
    }


@dataclass(frozen=True)
class PropertyTable:
    """Every check of every scheme: rows are schemes, columns are :data:`PROPERTIES`.

    Attributes
    ----------
    schemes : tuple of str
        Row names.
    properties : tuple of str
        Column names (keys of :data:`PROPERTY_LABELS`).
    checks : tuple of tuple of Check
        ``checks[r][c]`` is the check of property ``c`` on scheme ``r``.
    length, d_model : int
        The reference sizes the checks ran at.
    """

    schemes: tuple[str, ...]
    properties: tuple[str, ...]
    checks: tuple[tuple[Check, ...], ...]
    length: int
    d_model: int

    @property
    def passed(self) -> np.ndarray:
        """Verdicts, bool array of shape ``(n_schemes, n_properties)``."""
        return np.array([[c.passed for c in row] for row in self.checks], dtype=bool)

    @property
    def values(self) -> np.ndarray:
        """Measured numbers, float array of shape ``(n_schemes, n_properties)``."""
        return np.array([[c.value for c in row] for row in self.checks], dtype=float)

    def check(self, scheme: str, prop: str) -> Check:
        """The :class:`Check` of property ``prop`` on scheme ``scheme``."""
        if scheme not in self.schemes:
            raise ValueError(f"scheme must be one of {self.schemes}, got {scheme!r}")
        if prop not in self.properties:
            raise ValueError(f"prop must be one of {self.properties}, got {prop!r}")
        return self.checks[self.schemes.index(scheme)][self.properties.index(prop)]

    def format(self, *, details: bool = False) -> str:
        """The table as aligned plain text with ✓ and ✗; ``details`` adds one line per check."""
        header = ["scheme", *(PROPERTY_LABELS.get(p, p) for p in self.properties)]
        rows = [
            [name, *("✓" if c.passed else "✗" for c in row)]
            for name, row in zip(self.schemes, self.checks, strict=True)
        ]
        widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
        lines = [
            " | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in [header, *rows]
        ]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        if details:
            lines.append("")
            for name, row in zip(self.schemes, self.checks, strict=True):
                for prop, c in zip(self.properties, row, strict=True):
                    lines.append(f"{name}, {PROPERTY_LABELS.get(prop, prop)}: {c}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def property_table(
    schemes: Mapping[str, Scheme] | None = None,
    length: int = 32,
    d_model: int = 64,
    *,
    bound: float = 1.0,
    min_agreement: float = 0.75,
    extended_length: int | None = None,
) -> PropertyTable:
    """Check every scheme against every property (chapter 1's table of ticks).

    Parameters
    ----------
    schemes : mapping of str to callable, optional
        Name to scheme; :data:`CANDIDATE_SCHEMES` by default.
    length, d_model, bound, min_agreement, extended_length
        As in :func:`check_properties`. With the defaults the one-hot code
        exists at the reference length (``length <= d_model``) but not at the
        extended one.

    Returns
    -------
    PropertyTable
        Prints as a plain-text table of ticks; ``.passed`` and ``.values``
        hold the verdicts and the measured numbers.

    Examples
    --------
    >>> table = property_table(length=16, d_model=32)
    >>> table.schemes
    ('raw index', 'index / length', 'one-hot', 'binary digits', 'sinusoidal')
    >>> table.passed.astype(int)
    array([[0, 1, 1, 1, 1, 1],
           [1, 1, 1, 0, 1, 1],
           [1, 1, 0, 1, 1, 0],
           [1, 1, 0, 1, 1, 1],
           [1, 1, 1, 1, 1, 1]])
    """
    if schemes is None:
        schemes = CANDIDATE_SCHEMES
    if not isinstance(schemes, Mapping) or not schemes:
        raise TypeError(
            f"schemes must be a non-empty mapping of names to schemes, got {type(schemes).__name__}"
        )
    for name in schemes:
        if not isinstance(name, str):
            raise TypeError(f"schemes must be keyed by str names, got key {name!r}")
    checks = tuple(
        tuple(
            check_properties(
                scheme,
                length,
                d_model,
                bound=bound,
                min_agreement=min_agreement,
                extended_length=extended_length,
            ).values()
        )
        for scheme in schemes.values()
    )
    return PropertyTable(
        schemes=tuple(schemes),
        properties=PROPERTIES,
        checks=checks,
        length=int(length),
        d_model=int(d_model),
    )
