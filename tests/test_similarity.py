"""Tests of posenc.similarity against plain per-pair formulas."""

import numpy as np
import pytest

from posenc import cosine_distance_matrix, cosine_similarity_matrix, dot_product_matrix, sinusoidal


def test_against_per_pair_formulas():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 6)), rng.normal(size=(3, 6))
    dots = np.array([[x @ y for y in b] for x in a])
    cos = np.array([[x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) for y in b] for x in a])
    np.testing.assert_allclose(dot_product_matrix(a, b), dots)
    np.testing.assert_allclose(cosine_similarity_matrix(a, b), cos)
    np.testing.assert_allclose(cosine_distance_matrix(a, b), 1 - cos)


def test_self_similarity_of_sinusoidal_codes():
    pe = sinusoidal(50, 16)
    dist = cosine_distance_matrix(pe)
    np.testing.assert_allclose(np.diag(dist), 0.0, atol=1e-15)
    np.testing.assert_allclose(dist, dist.T)
    assert np.all((dist >= 0) & (dist <= 2))
    # Equal norms, so the dot product is (d/2) times the cosine similarity.
    np.testing.assert_allclose(dot_product_matrix(pe), 8 * cosine_similarity_matrix(pe), atol=1e-12)


def test_cosine_of_parallel_rows_is_clipped_into_range():
    a = np.array([[1e-3, 3e-3, 7e-3]])
    assert cosine_similarity_matrix(a, 5 * a)[0, 0] <= 1.0


@pytest.mark.parametrize(
    "func", [dot_product_matrix, cosine_similarity_matrix, cosine_distance_matrix]
)
def test_bad_input(func):
    with pytest.raises(ValueError, match="a must have 2 dimensions"):
        func(np.ones(3))
    with pytest.raises(ValueError, match=r"b must have shape \(any, 3\)"):
        func(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(TypeError, match="a must be an array of real numbers"):
        func([["x"]])


def test_zero_row_has_no_cosine():
    with pytest.raises(ValueError, match="a has a row of norm zero"):
        cosine_similarity_matrix(np.zeros((2, 3)))
