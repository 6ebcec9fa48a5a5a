"""Synthetic tasks in which word order alone decides the answer.

Every input sequence is a random ordering (permutation) of the same ``L``
tokens ``0, 1, ..., L - 1``: all sentences are anagrams of one another, as
"dog bites man" is of "man bites dog". A model that sees only which tokens
occur (a bag of words) therefore sees the same input every time and cannot
beat chance; :func:`bag_of_words_accuracy` checks that.

Two questions are asked about each sequence:

* ``"absolute"``: which token stands at position ``query_position``? The
  answer is one of ``L`` classes; it needs the absolute position.
* ``"relative"``: does token ``first_marker`` come before token
  ``second_marker``? Two classes (1 = yes); it needs only their relative
  order ("who bites whom").

Training, test and (optional) validation sets are drawn from a seeded
generator and never share a sequence. The validation set is for choices made
before the test (such as a learning rate), so that the test set judges
nothing it helped to choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import check_index_array
from .validation import check_choice, check_integer

__all__ = ["TASKS", "TaskData", "bag_of_words", "bag_of_words_accuracy", "make_task"]

TASKS = ("absolute", "relative")


@dataclass(frozen=True)
class TaskData:
    """A task's training and test sets.

    Attributes
    ----------
    name : str
        ``"absolute"`` or ``"relative"``.
    length : int
        Sequence length ``L`` (also the vocabulary size).
    n_classes : int
        Number of answers (``L`` for ``"absolute"``, 2 for ``"relative"``).
    train_tokens, test_tokens : numpy.ndarray
        Shape ``(n_train, L)`` and ``(n_test, L)``, int64; each row a permutation.
    train_labels, test_labels : numpy.ndarray
        Shape ``(n_train,)`` and ``(n_test,)``, int64, in ``[0, n_classes)``.
    validation_tokens, validation_labels : numpy.ndarray
        Shape ``(n_validation, L)`` and ``(n_validation,)``; empty unless
        ``n_validation`` was asked for.
    """

    name: str
    length: int
    n_classes: int
    train_tokens: np.ndarray
    train_labels: np.ndarray
    test_tokens: np.ndarray
    test_labels: np.ndarray
    validation_tokens: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    validation_labels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens, equal to ``length``."""
        return self.length

    @property
    def chance(self) -> float:
        """Accuracy of always answering the same class: ``1 / n_classes`` in expectation."""
        return 1.0 / self.n_classes


def _labels(name: str, tokens: np.ndarray, query_position: int, markers: tuple[int, int]):
    if name == "absolute":
        return tokens[:, query_position].copy()
    where = np.argsort(tokens, axis=1)  # where[r, t] is the position of token t in row r
    return (where[:, markers[0]] < where[:, markers[1]]).astype(np.int64)


def make_task(
    name: str,
    *,
    length: int = 8,
    n_train: int = 2000,
    n_test: int = 500,
    n_validation: int = 0,
    query_position: int = 2,
    first_marker: int = 0,
    second_marker: int = 1,
    seed: int = 0,
) -> TaskData:
    """Draw the training and test sets of an order task.

    Parameters
    ----------
    name : {"absolute", "relative"}
        Which question is asked (see the module docstring).
    length : int
        Sequence length and vocabulary size ``L``, between 3 and 256.
    n_train, n_test : int
        Sizes of the two sets, ``>= 1``.
    n_validation : int
        Size of a third set, ``>= 0``, drawn after the other two (so the
        training and test sets do not depend on it); all three together at
        most ``L!``.
    query_position : int
        Position asked about by ``"absolute"``, in ``[0, L)``.
    first_marker, second_marker : int
        The two distinct tokens compared by ``"relative"``, in ``[0, L)``.
    seed : int
        Seed of the generator; the same seed gives the same sets.

    Returns
    -------
    TaskData

    Examples
    --------
    >>> task = make_task("relative", length=4, n_train=6, n_test=3, seed=1)
    >>> task.train_tokens.shape, task.n_classes
    ((6, 4), 2)
    >>> bool(np.all(np.sort(task.test_tokens, axis=1) == np.arange(4)))
    True
    """
    name = check_choice("name", name, TASKS)
    length = check_integer("length", length, minimum=3, maximum=256)
    n_train = check_integer("n_train", n_train, minimum=1)
    n_test = check_integer("n_test", n_test, minimum=1)
    n_validation = check_integer("n_validation", n_validation, minimum=0)
    total = 1
    for j in range(2, length + 1):
        total *= j
    if n_train + n_test + n_validation > total:
        raise ValueError(
            f"n_train + n_test + n_validation must be at most {length}! = {total} "
            f"(distinct sequences), got {n_train + n_test + n_validation}"
        )
    query_position = check_integer("query_position", query_position, minimum=0, maximum=length - 1)
    first = check_integer("first_marker", first_marker, minimum=0, maximum=length - 1)
    second = check_integer("second_marker", second_marker, minimum=0, maximum=length - 1)
    if first == second:
        raise ValueError(f"first_marker and second_marker must differ, both are {first}")
    seed = check_integer("seed", seed, minimum=0)

    rng = np.random.default_rng(seed)
    wanted = n_train + n_test + n_validation
    rows = np.empty((0, length), dtype=np.int64)
    while rows.shape[0] < wanted:
        draw = rng.permuted(np.tile(np.arange(length), (2 * wanted, 1)), axis=1)
        stacked = np.concatenate([rows, draw])
        # Keep the first occurrence of every sequence, in drawing order.
        _, first_seen = np.unique(stacked, axis=0, return_index=True)
        rows = stacked[np.sort(first_seen)]
    rows = rows[:wanted]
    labels = _labels(name, rows, query_position, (first, second))
    n_classes = length if name == "absolute" else 2
    return TaskData(
        name=name,
        length=length,
        n_classes=n_classes,
        train_tokens=rows[:n_train],
        train_labels=labels[:n_train],
        test_tokens=rows[n_train : n_train + n_test],
        test_labels=labels[n_train : n_train + n_test],
        validation_tokens=rows[n_train + n_test :],
        validation_labels=labels[n_train + n_test :],
    )


def bag_of_words(tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    """Count of every token in every sequence, shape ``(n, vocab_size)``.

    Examples
    --------
    >>> bag_of_words(np.array([[2, 0, 2]]), 3)
    array([[1, 0, 2]])
    """
    vocab_size = check_integer("vocab_size", vocab_size, minimum=1)
    tokens = check_index_array("tokens", tokens, ndim=2, upper=vocab_size)
    counts = np.zeros((tokens.shape[0], vocab_size), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(tokens.shape[0]), tokens.shape[1]), tokens.ravel()), 1)
    return counts


def bag_of_words_accuracy(task: TaskData) -> float:
    """Test accuracy of the best linear classifier on word counts (least squares, one-hot targets).

    The classifier is fitted on the training set's counts (plus a constant
    column) and evaluated on the test set. Because every sequence holds every
    token once, the counts are the same for every input and the classifier can
    only learn the most frequent training answer.

    Examples
    --------
    >>> task = make_task("relative", length=6, n_train=200, n_test=100, seed=0)
    >>> majority = np.bincount(task.train_labels).argmax()  # the most frequent training answer
    >>> bool(bag_of_words_accuracy(task) == np.mean(task.test_labels == majority))
    True
    """
    if not isinstance(task, TaskData):
        raise TypeError(f"task must be a TaskData, got {type(task).__name__}")

    def features(tokens):
        counts = bag_of_words(tokens, task.vocab_size).astype(float)
        return np.hstack([counts, np.ones((tokens.shape[0], 1))])

    targets = np.eye(task.n_classes)[task.train_labels]
    weights, *_ = np.linalg.lstsq(features(task.train_tokens), targets, rcond=None)
    predicted = (features(task.test_tokens) @ weights).argmax(axis=1)
    return float(np.mean(predicted == task.test_labels))
