"""Sequence tasks of variable length where order decides the answer (chapter 7).

Every task gives, for a batch of random token sequences, one target per
position and a mask of the positions that are scored, so that a causal model
trained on sequences of length ``L`` can be tested on longer ones. With a
causal model, the prediction at position ``t`` depends on positions ``0..t``
only: training on sequences of length exactly ``L`` with a loss at every
position trains on every length up to ``L`` at once, and testing on a
sequence of length ``4L`` tests every length up to ``4L`` at once.

Two tasks, chosen for this course (neither is taken from a published
suite; the first is a retrieval of the token at a fixed relative offset,
one of the task families the length-generalisation literature uses):

* ``"offset"``: the target at position ``t`` is the token at ``t - k``
  (``k = offset``, default 3); positions ``t < k`` are not scored. A local,
  relative rule: the answer sits at the same distance at every length.
* ``"first"``: the target at every position ``t >= 1`` is the first token of
  the sequence. A global, anchored rule: the answer sits ever further away.

Tokens are uniform over ``vocab_size`` symbols, so the chance accuracy of a
guess is ``1 / vocab_size`` for both tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import check_choice, check_integer

__all__ = ["LENGTH_TASKS", "LengthBatch", "make_length_batch", "order_blind_accuracy"]

LENGTH_TASKS = ("offset", "first")


@dataclass(frozen=True)
class LengthBatch:
    """A batch of sequences of one task.

    Attributes
    ----------
    tokens : numpy.ndarray
        ``(..., batch, length)`` int64 inputs.
    targets : numpy.ndarray
        ``(..., batch, length)`` int64, the answer at every position (0 where
        the position is not scored).
    scored : numpy.ndarray
        ``(length,)`` bool, the positions that count in loss and accuracy.
    """

    tokens: np.ndarray
    targets: np.ndarray
    scored: np.ndarray


def make_length_batch(
    task: str,
    rng: np.random.Generator,
    *,
    batch: int,
    length: int,
    vocab_size: int = 16,
    offset: int = 3,
    copies: int | None = None,
) -> LengthBatch:
    """Draw a batch of ``task`` with the generator ``rng``.

    Parameters
    ----------
    task : {"offset", "first"}
        See the module docstring.
    rng : numpy.random.Generator
        The source of the random tokens.
    batch : int
        Sequences per batch, ``>= 1``.
    length : int
        Positions per sequence, ``> offset`` for ``"offset"``, ``>= 2`` for ``"first"``.
    vocab_size : int
        Number of symbols, ``>= 2``.
    offset : int
        The distance ``k >= 1`` of the ``"offset"`` task.
    copies : int, optional
        If given, a leading axis of that many independent batches (one per
        stacked model).

    Returns
    -------
    LengthBatch

    Examples
    --------
    >>> b = make_length_batch("offset", np.random.default_rng(0), batch=1, length=5, offset=2)
    >>> b.scored.tolist()
    [False, False, True, True, True]
    >>> bool((b.targets[0, 2:] == b.tokens[0, :3]).all())
    True
    """
    task = check_choice("task", task, LENGTH_TASKS)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    batch = check_integer("batch", batch, minimum=1)
    vocab_size = check_integer("vocab_size", vocab_size, minimum=2)
    offset = check_integer("offset", offset, minimum=1)
    minimum = offset + 1 if task == "offset" else 2
    length = check_integer("length", length, minimum=minimum)
    lead = () if copies is None else (check_integer("copies", copies, minimum=1),)
    tokens = rng.integers(0, vocab_size, size=(*lead, batch, length))
    targets = np.zeros_like(tokens)
    scored = np.zeros(length, dtype=bool)
    if task == "offset":
        targets[..., offset:] = tokens[..., :-offset]
        scored[offset:] = True
    else:
        targets[..., 1:] = tokens[..., :1]
        scored[1:] = True
    return LengthBatch(tokens.astype(np.int64), targets.astype(np.int64), scored)


def order_blind_accuracy(batch: LengthBatch) -> np.ndarray:
    """Accuracy per position of the best answer that ignores the order of the tokens.

    At position ``t`` this rule sees only which tokens occurred at positions
    ``0 .. t - 1``, not where, and answers the most frequent of them
    (a tie counts as a uniform guess among the tied tokens). A model that
    has learned nothing about position can still reach this accuracy, so it
    is a fairer floor than chance for a model that fails a positional task:
    the answer is one of the earlier tokens, and early in the sequence there
    are few of them.

    Returns the expected share of correct answers at every position,
    averaged over the sequences of ``batch``, ``(length,)``, NaN where not
    scored.

    Examples
    --------
    >>> b = make_length_batch("offset", np.random.default_rng(0), batch=1, length=5, offset=1)
    >>> b.tokens[0].tolist()
    [13, 10, 8, 4, 4]
    >>> order_blind_accuracy(b).round(3).tolist()  # one earlier token, then two, three, four
    [nan, 1.0, 0.5, 0.333, 0.25]
    """
    if not isinstance(batch, LengthBatch):
        raise TypeError(f"batch must be a LengthBatch, got {type(batch).__name__}")
    tokens = batch.tokens.reshape(-1, batch.tokens.shape[-1])
    targets = batch.targets.reshape(tokens.shape)
    n, length = tokens.shape
    vocab = int(tokens.max()) + 1
    counts = np.zeros((n, vocab), dtype=np.int64)
    rows = np.arange(n)
    out = np.full(length, np.nan)
    for t in range(length):
        if batch.scored[t] and t > 0:
            tied = counts == counts.max(axis=1, keepdims=True)
            hit = tied[rows, targets[:, t]] / tied.sum(axis=1)
            out[t] = hit.mean()
        np.add.at(counts, (rows, tokens[:, t]), 1)
    return out
