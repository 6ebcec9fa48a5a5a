"""Tests of posenc.properties: checks against independent computations, the table, bad input."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posenc import (
    binary_encoding,
    index_encoding,
    index_over_length_encoding,
    one_hot_encoding,
    sinusoidal,
)
from posenc.layers import LearnedPositionalEmbedding
from posenc.properties import (
    CANDIDATE_SCHEMES,
    PROPERTIES,
    PROPERTY_LABELS,
    PROPERTY_MEASURES,
    Check,
    PropertyTable,
    check_bounded,
    check_defined_beyond,
    check_deterministic,
    check_distinct,
    check_length_invariant,
    check_properties,
    check_proximity,
    distance_agreement,
    distance_ties,
    mean_distance_by_offset,
    property_table,
)

# --- independent references -------------------------------------------------


def brute_agreement(table):
    """Triple loop over (anchor, nearer, farther), written without posenc."""
    rows = [list(map(float, r)) for r in np.asarray(table)]
    n = len(rows)
    agree = total = 0
    for k, a, b in itertools.permutations(range(n), 3):
        if abs(a - k) < abs(b - k):
            total += 1
            agree += math.dist(rows[a], rows[k]) < math.dist(rows[b], rows[k]) - 1e-9
    return agree / total


def brute_ties(table):
    """Share of the triples of brute_agreement whose two distances tie."""
    rows = [list(map(float, r)) for r in np.asarray(table)]
    tied = total = 0
    for k, a, b in itertools.permutations(range(len(rows)), 3):
        if abs(a - k) < abs(b - k):
            total += 1
            tied += abs(math.dist(rows[a], rows[k]) - math.dist(rows[b], rows[k])) < 1e-9
    return tied / total


def brute_mean_distance(table):
    rows = np.asarray(table, dtype=float)
    n = len(rows)
    return np.array(
        [
            sum(math.dist(rows[k], rows[k + phi]) for k in range(n - phi)) / (n - phi)
            for phi in range(1, n)
        ]
    )


def constant_scheme(value):
    return lambda length, d_model: np.full((length, d_model), float(value))


def repeating_scheme(period):
    """Position k gets the code of k mod period: distinct only while length <= period."""
    return lambda length, d_model: index_encoding(length, d_model) % period


# --- mean_distance_by_offset and distance_agreement ---------------------------


@pytest.mark.parametrize("scheme", list(CANDIDATE_SCHEMES.values()))
def test_mean_distance_matches_loop(scheme):
    table = scheme(12, 16)
    np.testing.assert_allclose(mean_distance_by_offset(table), brute_mean_distance(table))


@pytest.mark.parametrize(("d_model", "base"), [(8, 10_000.0), (16, 100.0), (64, 10_000.0)])
def test_sinusoidal_mean_distance_has_closed_form(d_model, base):
    # |PE(k + phi) - PE(k)|^2 = sum over pairs of 2 - 2 cos(omega_i phi), for every k.
    phi = np.arange(1, 40)
    omega = base ** (-2.0 * np.arange(d_model // 2) / d_model)
    expected = np.sqrt(2 * (1 - np.cos(np.outer(phi, omega))).sum(axis=1))
    np.testing.assert_allclose(
        mean_distance_by_offset(sinusoidal(40, d_model, base)), expected, rtol=1e-10
    )


def test_mean_distance_of_short_tables_is_empty():
    assert mean_distance_by_offset(np.zeros((1, 3))).shape == (0,)
    assert mean_distance_by_offset(np.zeros((0, 3))).shape == (0,)


@pytest.mark.parametrize(
    "table",
    [
        binary_encoding(12, 4),
        sinusoidal(10, 4),
        sinusoidal(9, 6, base=10.0),
        one_hot_encoding(6, 6),
        np.array([[0.0], [2.0], [1.0], [5.0], [3.0]]),
    ],
    ids=["binary", "sinusoidal", "sinusoidal-base10", "one-hot", "shuffled-line"],
)
def test_agreement_matches_triple_loop(table):
    assert distance_agreement(table) == pytest.approx(brute_agreement(table), abs=1e-15)


@pytest.mark.parametrize(
    "table",
    [
        binary_encoding(12, 4),
        sinusoidal(10, 4),
        one_hot_encoding(6, 6),
        np.array([[0.0], [2.0], [1.0], [5.0], [3.0]]),
        index_encoding(7, 2),
    ],
    ids=["binary", "sinusoidal", "one-hot", "shuffled-line", "line"],
)
def test_ties_match_triple_loop(table):
    ties = distance_ties(table)
    assert ties == pytest.approx(brute_ties(table), abs=1e-15)
    # Agreeing and tied triples never overlap.
    assert distance_agreement(table) + ties <= 1.0


def test_ties_extremes():
    assert distance_ties(one_hot_encoding(10, 10)) == 1.0
    assert distance_ties(index_encoding(20, 3)) == 0.0
    # Binary digits: Hamming distances take few values, so many triples tie.
    assert 0.1 < distance_ties(binary_encoding(32, 6)) < 0.4
    with pytest.raises(ValueError, match="at least 3 rows"):
        distance_ties(np.zeros((2, 3)))


def test_agreement_extremes():
    assert distance_agreement(index_encoding(20, 3)) == 1.0
    # Every pair of one-hot codes is sqrt(2) apart: all ties, so nothing agrees.
    assert distance_agreement(one_hot_encoding(10, 10)) == 0.0
    # Only distances matter: a code that decreases along a line agrees fully too.
    assert distance_agreement(-index_encoding(20, 1)) == 1.0


def test_binary_agreement_is_a_coin_flip():
    # Bit patterns know nothing of distance: about half the comparisons agree.
    assert abs(distance_agreement(binary_encoding(64, 6)) - 0.5) < 0.05


@settings(max_examples=40, deadline=None)
@given(
    table=arrays(
        np.int64, st.tuples(st.integers(3, 9), st.integers(1, 4)), elements=st.integers(-5, 5)
    ),
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(0.1, 10.0),
)
def test_agreement_is_a_fraction_invariant_under_rigid_motion(table, seed, scale):
    # Integer entries: distances are square roots of integers, so ties are exact
    # and other distances differ by far more than rounding.
    score = distance_agreement(table)
    assert 0.0 <= score <= 1.0
    assert score == pytest.approx(brute_agreement(table), abs=1e-15)
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(table.shape[1], table.shape[1])))
    moved = scale * table @ q + rng.normal(size=table.shape[1])
    assert distance_agreement(moved) == score


@settings(max_examples=30, deadline=None)
@given(
    length=st.integers(3, 30),
    d_model=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_evenly_spaced_codes_agree_fully(length, d_model, seed):
    # Codes k * v + w along any line, equally spaced: distance = |offset| * |v|.
    rng = np.random.default_rng(seed)
    v = rng.normal(size=d_model) + 0.1
    table = np.outer(np.arange(length), v) + rng.normal(size=d_model)
    assert distance_agreement(table) == 1.0


def test_unevenly_spaced_line_can_disagree():
    # Seen from position 2 (code 3), position 3 (offset 1, code 5) is as far as
    # position 0 (offset 2, code 1): a tie, which counts as disagreement.
    table = np.array([[1.0], [2.0], [3.0], [5.0]])
    assert distance_agreement(table) == pytest.approx(brute_agreement(table))
    assert distance_agreement(table) < 1.0


# --- the six checks ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "passed"), [(0.5, True), (1.0, True), (-1.0, True), (1.5, False)]
)
def test_bounded_measures_largest_magnitude(value, passed):
    check = check_bounded(constant_scheme(value), 5, 3)
    assert check == Check(passed, abs(value), check.detail)
    assert check_bounded(constant_scheme(value), 5, 3, bound=2.0).passed


def test_raw_index_is_unbounded():
    check = check_bounded(index_encoding, 32, 4)
    assert not check.passed
    assert check.value == 127.0  # measured on the 4 L = 128 positions
    assert "127" in check.detail and "128 positions" in check.detail
    assert check_bounded(index_encoding, 32, 4, extended_length=32).value == 31.0


def test_bounded_looks_beyond_the_seen_length():
    # Index over a fixed training length: below 1 up to L, far above beyond it.
    def over_train_length(length, d_model):
        return index_encoding(length, d_model) / 32

    assert check_bounded(over_train_length, 32, 4, extended_length=32).passed
    check = check_bounded(over_train_length, 32, 4)
    assert not check.passed
    assert check.value == 127 / 32
    # A scheme with no codes past L is measured on the L rows it has.
    one_hot = check_bounded(one_hot_encoding, 8, 8)
    assert one_hot.passed and "(8 positions)" in one_hot.detail


def test_distinct_measures_closest_pair():
    assert not check_distinct(repeating_scheme(3), 6, 2).passed
    assert check_distinct(repeating_scheme(3), 6, 2).value == 0.0
    check = check_distinct(repeating_scheme(10), 6, 2)
    assert check.passed
    assert check.value == pytest.approx(math.sqrt(2))  # neighbours differ by 1 in 2 columns
    # index / length: neighbours are 1/L apart in each of d columns
    assert check_distinct(index_over_length_encoding, 8, 4).value == pytest.approx(2 / 8)


def test_proximity_threshold():
    assert check_proximity(index_encoding, 10, 2).passed
    assert not check_proximity(binary_encoding, 32, 8).passed
    score = brute_agreement(binary_encoding(16, 8))
    assert check_proximity(binary_encoding, 16, 8, min_agreement=score).passed
    assert not check_proximity(binary_encoding, 16, 8, min_agreement=score + 1e-9).passed


def test_narrow_sinusoidal_code_fails_proximity():
    # Two columns repeat every 2*pi positions: position 6 is nearly back at position 0.
    check = check_proximity(sinusoidal, 32, 2)
    assert not check.passed
    assert check.value == pytest.approx(brute_agreement(sinusoidal(32, 2)))


def test_index_over_length_changes_with_length():
    # Position k is k/m in a sequence of m and k/L in one of L; largest gap by brute force.
    length = 12
    expected = max(k / m - k / length for m in range(1, length) for k in range(m))
    check = check_length_invariant(index_over_length_encoding, length, 3)
    assert not check.passed
    assert check.value == pytest.approx(expected)


@pytest.mark.parametrize(
    "scheme",
    [index_encoding, one_hot_encoding, binary_encoding, sinusoidal],
    ids=lambda f: f.__name__,
)
def test_length_invariant_schemes(scheme):
    assert check_length_invariant(scheme, 16, 16).passed


def test_zero_change_reads_plainly():
    # A change of exactly 0 is said in words, not as "up to 0".
    assert str(check_length_invariant(index_encoding, 8, 4)) == "✓ no code changes with the length"
    assert str(check_deterministic(sinusoidal, 8, 4)) == "✓ two calls agree exactly"
    moved = check_length_invariant(index_over_length_encoding, 4, 1)
    assert moved.detail == "a code changes by up to 0.25 with the length"


def test_deterministic():
    rng = np.random.default_rng(3)
    fresh_random = check_deterministic(lambda length, d: rng.normal(size=(length, d)), 6, 4)
    assert not fresh_random.passed
    assert fresh_random.value > 0
    seeded = check_deterministic(
        lambda length, d: np.random.default_rng(0).normal(size=(length, d)), 6, 4
    )
    assert seeded == Check(True, 0.0, seeded.detail)


def test_defined_beyond():
    sin = check_defined_beyond(sinusoidal, 16, 8)
    assert sin.passed
    assert sin.value == 4 * 16  # default extended length 4 L: every position coded
    # Existence only: the raw index is defined at every length, however large its values
    # (boundedness is check_bounded's verdict, not counted a second time here).
    raw = check_defined_beyond(index_encoding, 16, 8)
    assert raw.passed
    assert raw.value == 64.0
    assert not check_bounded(index_encoding, 16, 8).passed
    assert check_defined_beyond(index_encoding, 16, 8, extended_length=17).value == 17.0
    one_hot = check_defined_beyond(one_hot_encoding, 8, 8)
    assert not one_hot.passed
    assert math.isnan(one_hot.value)
    assert "length must be <= d_model" in one_hot.detail
    # Three binary digits run out after 2**3 = 8 positions.
    assert not check_defined_beyond(binary_encoding, 8, 3, extended_length=9).passed
    assert check_defined_beyond(binary_encoding, 4, 3, extended_length=8).passed


def test_defined_beyond_rejects_non_finite_codes():
    def overflowing(length, d_model):  # finite up to 16 positions, infinite beyond
        with np.errstate(over="ignore"):
            return np.tile(np.exp(np.arange(length) * 50.0), (d_model, 1)).T

    assert check_defined_beyond(overflowing, 4, 2, extended_length=14).passed
    check = check_defined_beyond(overflowing, 4, 2, extended_length=16)
    assert not check.passed
    assert math.isnan(check.value)
    assert "only finite numbers" in check.detail


def test_defined_beyond_takes_no_bound():
    with pytest.raises(TypeError, match="bound"):
        check_defined_beyond(sinusoidal, 4, 4, bound=1.0)


def test_defined_beyond_rejects_a_table_that_is_too_short():
    learned = np.random.default_rng(0).uniform(-1, 1, size=(20, 4))  # a table of 20 rows

    def lookup(length, d_model):
        return learned[:length, :d_model]

    check = check_defined_beyond(lookup, 16, 4, extended_length=32)
    assert not check.passed
    assert "shape (32, 4)" in check.detail


def test_a_learned_table_is_defined_only_up_to_its_last_row():
    layer = LearnedPositionalEmbedding(32, 16, rng=0)  # one row per position seen

    def learned(length, d_model):
        return layer.codes(length)

    checks = check_properties(learned, 32, 16)
    assert not checks["defined_beyond"].passed
    assert "max_length=32" in checks["defined_beyond"].detail
    assert checks["bounded"].passed and checks["bounded"].detail.endswith("(32 positions)")
    assert not checks["proximity"].passed  # random rows: no notion of nearness
    assert checks["length_invariant"].passed and checks["deterministic"].passed
    assert check_properties(learned, 8, 16)["defined_beyond"].passed  # 4 * 8 rows exist


# --- all checks together ----------------------------------------------------

EXPECTED = {  # the verdicts the chapter explains, property by property
    "raw index": dict.fromkeys(PROPERTIES, True) | {"bounded": False},
    "index / length": dict.fromkeys(PROPERTIES, True) | {"length_invariant": False},
    "one-hot": dict.fromkeys(PROPERTIES, True) | {"proximity": False, "defined_beyond": False},
    "binary digits": dict.fromkeys(PROPERTIES, True) | {"proximity": False},
    "sinusoidal": dict.fromkeys(PROPERTIES, True),
}


@pytest.mark.parametrize(("length", "d_model"), [(16, 32), (32, 64), (64, 64), (40, 128)])
def test_candidate_table(length, d_model):
    table = property_table(length=length, d_model=d_model)
    assert table.schemes == tuple(CANDIDATE_SCHEMES)
    assert table.properties == PROPERTIES
    expected = np.array([[EXPECTED[s][p] for p in PROPERTIES] for s in table.schemes])
    np.testing.assert_array_equal(table.passed, expected)
    assert table.values.shape == expected.shape
    assert (table.length, table.d_model) == (length, d_model)


def test_check_properties_keys_and_values():
    checks = check_properties(index_encoding, 8, 2)
    assert tuple(checks) == PROPERTIES
    assert checks["bounded"].value == 31.0  # at 4 L = 32 positions
    assert checks["defined_beyond"] == Check(True, 32.0, "finite codes for all 32 positions")


def test_table_lookup_and_text():
    table = property_table({"raw": index_encoding, "sin": sinusoidal}, length=8, d_model=8)
    assert table.check("raw", "bounded").value == 31.0
    assert table.check("sin", "proximity") == check_proximity(sinusoidal, 8, 8)
    text = table.format()
    lines = text.splitlines()
    assert lines[0].split(" | ")[0].strip() == "scheme"
    assert [PROPERTY_LABELS[p] for p in PROPERTIES] == [
        c.strip() for c in lines[0].split(" | ")[1:]
    ]
    assert lines[2].startswith("raw ") and lines[3].startswith("sin ")
    assert text.count("✓") == table.passed.sum()
    assert text.count("✗") == (~table.passed).sum()
    assert str(table) == text
    details = table.format(details=True)
    assert len(details.splitlines()) == len(lines) + 1 + 2 * len(PROPERTIES)
    assert "raw, bounded: ✗ max |value| = 31 > bound 1 (32 positions)" in details
    with pytest.raises(ValueError, match="scheme must be one of"):
        table.check("cosine", "bounded")
    with pytest.raises(ValueError, match="prop must be one of"):
        table.check("raw", "pretty")


def test_every_property_names_what_its_value_measures():
    assert set(PROPERTY_MEASURES) == set(PROPERTIES) == set(PROPERTY_LABELS)
    assert all(PROPERTY_MEASURES[p] for p in PROPERTIES)


def test_table_is_frozen():
    table = property_table(length=4, d_model=4)
    assert isinstance(table, PropertyTable)
    with pytest.raises(AttributeError):
        table.length = 5


# --- bad input ---------------------------------------------------------------

CHECKS = [
    check_bounded,
    check_distinct,
    check_proximity,
    check_length_invariant,
    check_deterministic,
    check_defined_beyond,
    check_properties,
]


@pytest.mark.parametrize("check", CHECKS)
def test_scheme_must_be_callable(check):
    with pytest.raises(TypeError, match="scheme must be a callable"):
        check(np.zeros((4, 4)), 4, 4)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    ("length", "d_model", "error", "pattern"),
    [
        (4.0, 4, TypeError, "length must be an integer"),
        (4, "4", TypeError, "d_model must be an integer"),
        (True, 4, TypeError, "length must be an integer"),
        (4, 0, ValueError, "d_model must be an integer >= 1"),
        (-1, 4, ValueError, "length must be an integer >= "),
    ],
)
def test_sizes_are_validated(check, length, d_model, error, pattern):
    with pytest.raises(error, match=pattern):
        check(index_encoding, length, d_model)


@pytest.mark.parametrize(
    ("check", "minimum"),
    [(check_distinct, 2), (check_proximity, 3), (check_length_invariant, 2), (check_properties, 3)],
)
def test_length_minimum(check, minimum):
    with pytest.raises(ValueError, match=f"length must be an integer >= {minimum}"):
        check(index_encoding, minimum - 1, 4)


@pytest.mark.parametrize(
    ("scheme", "error", "pattern"),
    [
        (lambda length, d: np.zeros((length + 1, d)), ValueError, r"must return shape \(5, 3\)"),
        (lambda length, d: np.zeros(length), ValueError, "must have 2 dimensions"),
        (lambda length, d: np.full((length, d), np.nan), ValueError, "only finite numbers"),
        (lambda length, d: [["a"] * d] * length, TypeError, "array of real numbers"),
    ],
)
def test_scheme_output_is_validated(scheme, error, pattern):
    with pytest.raises(error, match=pattern):
        check_bounded(scheme, 5, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"bound": 0.0}, ValueError, "bound must be a finite number > 0"),
        ({"bound": "1"}, TypeError, "bound must be a real number"),
        ({"min_agreement": 1.5}, ValueError, "min_agreement must be <= 1.0"),
        ({"min_agreement": -0.1}, ValueError, "min_agreement must be >= 0.0"),
        ({"extended_length": 8}, ValueError, "extended_length must be an integer >= 9"),
        ({"extended_length": 9.5}, TypeError, "extended_length must be an integer"),
    ],
)
def test_thresholds_are_validated(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        check_properties(sinusoidal, 8, 8, **kwargs)


def test_tolerances_are_validated():
    with pytest.raises(ValueError, match=r"tol must be >= 0\.0"):
        check_distinct(sinusoidal, 4, 4, tol=-1.0)
    with pytest.raises(TypeError, match="tol must be a real number"):
        check_length_invariant(sinusoidal, 4, 4, tol=None)


def test_table_input_is_validated():
    with pytest.raises(ValueError, match="at least 3 rows"):
        distance_agreement(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="table must have 2 dimensions"):
        distance_agreement(np.zeros(5))
    with pytest.raises(ValueError, match="table must have 2 dimensions"):
        mean_distance_by_offset(np.zeros(5))
    with pytest.raises(TypeError, match="table must be an array of real numbers"):
        mean_distance_by_offset("abc")


@pytest.mark.parametrize(
    ("schemes", "pattern"),
    [
        ({}, "non-empty mapping"),
        ([sinusoidal], "non-empty mapping"),
        ({1: sinusoidal}, "keyed by str names"),
    ],
)
def test_property_table_schemes_are_validated(schemes, pattern):
    with pytest.raises(TypeError, match=pattern):
        property_table(schemes, length=4, d_model=4)
