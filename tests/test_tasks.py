"""Tests of posenc.tasks: the sequences, the labels, the splits, and the bag-of-words baseline."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from posenc.tasks import TASKS, bag_of_words, bag_of_words_accuracy, make_task


@pytest.mark.parametrize("name", TASKS)
def test_rows_are_permutations_and_splits_are_disjoint(name):
    task = make_task(name, length=6, n_train=300, n_test=200, seed=3)
    assert task.train_tokens.shape == (300, 6) and task.test_tokens.shape == (200, 6)
    for rows in (task.train_tokens, task.test_tokens):
        np.testing.assert_array_equal(np.sort(rows, axis=1), np.tile(np.arange(6), (len(rows), 1)))
    seen = {tuple(row) for row in task.train_tokens}
    assert len(seen) == 300
    assert not seen & {tuple(row) for row in task.test_tokens}
    assert len({tuple(row) for row in task.test_tokens}) == 200


def test_absolute_labels_are_the_token_at_the_query_position():
    task = make_task("absolute", length=5, n_train=50, n_test=20, query_position=3, seed=1)
    for tokens, label in zip(task.train_tokens, task.train_labels, strict=True):
        assert label == tokens[3]
    assert task.n_classes == 5 and task.chance == pytest.approx(0.2)


def test_relative_labels_say_which_marker_comes_first():
    task = make_task(
        "relative", length=7, n_train=80, n_test=30, first_marker=4, second_marker=2, seed=2
    )
    for tokens, label in zip(task.test_tokens, task.test_labels, strict=True):
        row = list(tokens)
        assert label == int(row.index(4) < row.index(2))
    assert task.n_classes == 2 and task.vocab_size == 7


def test_same_seed_same_data_other_seed_other_data():
    a = make_task("relative", seed=5)
    b = make_task("relative", seed=5)
    c = make_task("relative", seed=6)
    np.testing.assert_array_equal(a.train_tokens, b.train_tokens)
    assert not np.array_equal(a.train_tokens, c.train_tokens)


def test_answers_are_balanced():
    task = make_task("relative", length=8, n_train=2000, n_test=500, seed=0)
    # Under the null of a fair coin, the share of "first" lies in this interval 99.9% of the time.
    low, high = stats.binom.interval(0.999, 2000, 0.5)
    assert low <= task.train_labels.sum() <= high
    counts = np.bincount(make_task("absolute", seed=0).train_labels, minlength=8)
    assert stats.chisquare(counts).pvalue > 0.001


def test_the_whole_space_can_be_drawn():
    task = make_task("absolute", length=4, n_train=20, n_test=4, seed=0)
    rows = np.vstack([task.train_tokens, task.test_tokens])
    assert len({tuple(r) for r in rows}) == 24  # every permutation of 4 tokens, once


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(1, 6), vocab=st.integers(1, 5))
def test_bag_of_words_counts(seed, n, vocab):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, size=(n, 7))
    counts = bag_of_words(tokens, vocab)
    for row, count in zip(tokens, counts, strict=True):
        assert count.tolist() == [list(row).count(t) for t in range(vocab)]


@pytest.mark.parametrize("name", TASKS)
def test_bag_of_words_sees_one_input_and_stays_at_chance(name):
    task = make_task(name, seed=4)
    counts = bag_of_words(task.train_tokens, task.vocab_size)
    assert np.all(counts == 1)  # the same features for every sequence
    accuracy = bag_of_words_accuracy(task)
    majority = np.bincount(task.train_labels).argmax()
    assert accuracy == pytest.approx(np.mean(task.test_labels == majority))
    low, high = stats.binom.interval(0.999, task.test_labels.size, task.chance)
    assert low / task.test_labels.size <= accuracy <= high / task.test_labels.size


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"name": "middle"}, ValueError, r"name must be one of \('absolute', 'relative'\)"),
        ({"length": 2}, ValueError, "length must be an integer >= 3 and <= 256"),
        ({"length": 4, "n_train": 20, "n_test": 5}, ValueError, r"at most 4! = 24"),
        ({"n_test": 0}, ValueError, "n_test must be an integer >= 1"),
        ({"query_position": 8}, ValueError, "query_position must be an integer >= 0 and <= 7"),
        ({"first_marker": 3, "second_marker": 3}, ValueError, "must differ, both are 3"),
        ({"second_marker": -1}, ValueError, "second_marker must be an integer >= 0"),
        ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ],
)
def test_make_task_bad_input(kwargs, error, pattern):
    options = {"name": "relative"}
    options.update(kwargs)
    with pytest.raises(error, match=pattern):
        make_task(**options)


def test_bag_of_words_bad_input():
    with pytest.raises(ValueError, match=r"tokens must hold integers in \[0, 3\)"):
        bag_of_words(np.array([[0, 3]]), 3)
    with pytest.raises(TypeError, match="tokens must be an array of integers"):
        bag_of_words(np.array([[0.0, 1.0]]), 3)
    with pytest.raises(TypeError, match="task must be a TaskData"):
        bag_of_words_accuracy("absolute")


def test_validation_split_is_disjoint_and_leaves_the_other_sets_alone():
    plain = make_task("absolute", length=7, n_train=300, n_test=100, seed=4)
    task = make_task("absolute", length=7, n_train=300, n_test=100, n_validation=150, seed=4)
    np.testing.assert_array_equal(task.train_tokens, plain.train_tokens)
    np.testing.assert_array_equal(task.test_tokens, plain.test_tokens)
    assert task.validation_tokens.shape == (150, 7) and task.validation_labels.shape == (150,)
    np.testing.assert_array_equal(task.validation_labels, task.validation_tokens[:, 2])
    sets = [
        {tuple(r) for r in rows}
        for rows in (task.train_tokens, task.test_tokens, task.validation_tokens)
    ]
    assert sum(map(len, sets)) == len(set().union(*sets)) == 550
    assert plain.validation_tokens.shape[0] == 0
    with pytest.raises(ValueError, match="n_validation must be an integer >= 0"):
        make_task("absolute", n_validation=-1)
    with pytest.raises(ValueError, match=r"n_train \+ n_test \+ n_validation must be at most"):
        make_task("absolute", length=4, n_train=20, n_test=4, n_validation=1)


def test_long_sequences_are_allowed():
    task = make_task("absolute", length=64, n_train=50, n_test=20, seed=0)
    assert task.train_tokens.shape == (50, 64) and task.n_classes == 64
    with pytest.raises(ValueError, match="length must be an integer >= 3 and <= 256"):
        make_task("absolute", length=257)
