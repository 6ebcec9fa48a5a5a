"""Tests of posenc.projection: PCA by SVD against an eigen-decomposition, and offset profiles."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posenc import cosine_distance_matrix, dot_product_matrix, sinusoidal
from posenc.projection import SIGN_TOLERANCE, offset_profile, pca_projection


def covariance_pca(x, c):
    """PCA the other way round: eigenvectors of the scatter matrix, largest first."""
    centred = x - x.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred)
    order = np.argsort(values)[::-1][:c]
    return values[order] / values.sum(), vectors[:, order].T


def test_matches_an_eigen_decomposition_of_the_scatter_matrix():
    x = np.random.default_rng(3).normal(size=(40, 6)) * [5, 4, 3, 2, 1, 0.5]
    result = pca_projection(x, n_components=3)
    ratios, axes = covariance_pca(x, 3)
    np.testing.assert_allclose(result.explained_variance_ratio, ratios, rtol=1e-10)
    # Each axis agrees up to its sign.
    for ours, theirs in zip(result.components, axes, strict=True):
        np.testing.assert_allclose(abs(ours @ theirs), 1.0, rtol=1e-10)
    np.testing.assert_allclose(result.mean, x.mean(axis=0))
    np.testing.assert_allclose(result.coordinates, (x - x.mean(axis=0)) @ result.components.T)


def test_keeping_every_axis_is_a_rigid_motion():
    # With c = d the projection only rotates (and shifts) the codes: distances survive.
    pe = sinusoidal(30, 6, base=100.0)
    coords = pca_projection(pe, n_components=6).coordinates
    np.testing.assert_allclose(
        dot_product_matrix(coords - coords[0]), dot_product_matrix(pe - pe[0]), atol=1e-12
    )


def test_two_columns_are_a_circle_explained_in_full():
    # d = 2: every code lies on the unit circle, and two axes hold all the variance.
    result = pca_projection(sinusoidal(50, 2), n_components=2)
    np.testing.assert_allclose(result.explained_variance_ratio.sum(), 1.0)
    radii = np.linalg.norm(result.coordinates + result.mean @ result.components.T, axis=1)
    np.testing.assert_allclose(radii, 1.0)


def test_points_on_a_line():
    x = np.outer(np.arange(5.0), [3.0, 4.0])  # along (0.6, 0.8)
    result = pca_projection(x, n_components=2)
    np.testing.assert_allclose(result.explained_variance_ratio, [1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(np.abs(result.components[0]), [0.6, 0.8])
    # The two ends tie for the largest magnitude; the first row decides the sign.
    np.testing.assert_allclose(result.components[0], [0.6, 0.8])
    np.testing.assert_allclose(result.coordinates[:, 0], 5.0 * (np.arange(5) - 2), atol=1e-12)


@pytest.mark.parametrize("nudge", [0.0, 1e-13, -1e-13])
def test_sign_of_an_exact_tie_does_not_depend_on_rounding(nudge):
    # Symmetric points: the largest magnitudes tie with opposite signs, so a rule
    # based on the largest coordinate would let the last bits pick the sign.
    x = np.outer(np.arange(-2.0, 3.0), [3.0, 4.0])
    x[-1] += nudge
    assert pca_projection(x, n_components=1).coordinates[0, 0] < 0


def test_code_path_starts_on_the_negative_side():
    # The chapter's table: axis 1 is exactly antisymmetric along the sequence
    # (x_{99-k} = -x_k), axis 2 symmetric; position 0 is drawn lower left.
    coords = pca_projection(sinusoidal(100, 128), n_components=2).coordinates
    assert np.all(coords[0] < 0)
    assert coords[-1, 0] > 0 and coords[-1, 1] < 0
    np.testing.assert_allclose(coords[::-1, 0], -coords[:, 0], atol=1e-12)


def test_a_row_at_the_mean_does_not_decide_the_sign():
    # Row 0 sits on the mean (coordinate zero up to rounding); row 1 decides.
    x = np.array([[0.0, 0.0], [-1.0, -1.0], [1.0, 1.0], [2.0, 2.0], [-2.0, -2.0]])
    coords = pca_projection(x, n_components=1).coordinates[:, 0]
    assert abs(coords[0]) < 1e-12 and coords[1] < 0


def test_identical_rows_have_no_variance():
    result = pca_projection(np.ones((4, 3)), n_components=2)
    np.testing.assert_array_equal(result.explained_variance_ratio, [0.0, 0.0])
    np.testing.assert_array_equal(result.coordinates, np.zeros((4, 2)))


def test_more_axes_than_rows():
    # One row, two axes asked for in three columns: orthonormal axes, zero coordinates.
    result = pca_projection([[1.0, 2.0, 3.0]], n_components=2)
    assert result.coordinates.shape == (1, 2)
    np.testing.assert_allclose(result.components @ result.components.T, np.eye(2), atol=1e-15)
    np.testing.assert_array_equal(result.coordinates, 0.0)
    np.testing.assert_array_equal(result.explained_variance_ratio, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 12), st.integers(1, 6)),
        elements=st.floats(-100, 100, allow_nan=False),
    ),
    st.integers(1, 6),
)
def test_properties(x, c):
    c = min(c, x.shape[1])
    result = pca_projection(x, n_components=c)
    assert result.coordinates.shape == (x.shape[0], c)
    assert result.components.shape == (c, x.shape[1])
    np.testing.assert_allclose(result.components @ result.components.T, np.eye(c), atol=1e-9)
    ratio = result.explained_variance_ratio
    assert np.all(ratio >= 0) and ratio.sum() <= 1 + 1e-12
    assert np.all(np.diff(ratio) <= 1e-12)  # largest first
    np.testing.assert_allclose(
        result.coordinates, (x - x.mean(axis=0)) @ result.components.T, atol=1e-9
    )
    # Sign convention: the first row clearly off the mean is negative on each axis.
    magnitude = np.abs(result.coordinates)
    off_mean = magnitude > SIGN_TOLERANCE * magnitude.max(axis=0)
    for axis in range(c):
        rows = np.flatnonzero(off_mean[:, axis])
        if rows.size:
            assert result.coordinates[rows[0], axis] < 0


def test_bad_input():
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        pca_projection(np.ones(3))
    with pytest.raises(ValueError, match="at least one row and one column"):
        pca_projection(np.ones((0, 3)))
    with pytest.raises(ValueError, match="x must contain only finite numbers"):
        pca_projection([[1.0, np.nan]], n_components=1)
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        pca_projection([["a", "b"]])
    with pytest.raises(ValueError, match=r"n_components must be an integer >= 1 and <= 3"):
        pca_projection(np.ones((4, 3)), n_components=4)
    with pytest.raises(ValueError, match=r"n_components must be an integer >= 1"):
        pca_projection(np.ones((4, 3)), n_components=0)
    with pytest.raises(TypeError, match="n_components must be an integer"):
        pca_projection(np.ones((4, 3)), n_components=2.0)


def test_offset_profile_reads_one_row():
    matrix = np.random.default_rng(0).normal(size=(6, 6))
    offsets, values = offset_profile(matrix, 4)
    np.testing.assert_array_equal(offsets, [-4, -3, -2, -1, 0, 1])
    np.testing.assert_array_equal(values, matrix[4])
    values[0] = 99.0  # a copy: the matrix is untouched
    assert matrix[4, 0] != 99.0


def test_sinusoidal_profiles_depend_on_the_offset_only():
    dist = cosine_distance_matrix(sinusoidal(80, 32))
    by_offset = {}
    for k in (0, 17, 79):
        for phi, value in zip(*offset_profile(dist, k), strict=True):
            by_offset.setdefault(int(phi), []).append(value)
    for phi, values in by_offset.items():
        np.testing.assert_allclose(values, values[0], atol=1e-12, err_msg=f"offset {phi}")
        np.testing.assert_allclose(by_offset[-phi][0], values[0], atol=1e-12)  # symmetric


def test_offset_profile_bad_input():
    with pytest.raises(ValueError, match="matrix must be square"):
        offset_profile(np.ones((2, 3)), 0)
    with pytest.raises(ValueError, match="matrix must be square"):
        offset_profile(np.ones((0, 0)), 0)
    with pytest.raises(ValueError, match="matrix must have 2 dimensions"):
        offset_profile(np.ones(3), 0)
    with pytest.raises(ValueError, match=r"position must be an integer >= 0 and <= 2"):
        offset_profile(np.ones((3, 3)), 3)
    with pytest.raises(TypeError, match="position must be an integer"):
        offset_profile(np.ones((3, 3)), True)
