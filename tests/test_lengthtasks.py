"""The order-blind floor of chapter 7's tasks (posenc.lengthtasks)."""

import numpy as np
import pytest

from posenc.lengthtasks import make_length_batch, order_blind_accuracy


def _brute_force(tokens, target, t):
    """The same rule for one sequence, counted in plain Python."""
    earlier = list(tokens[:t])
    counts = {v: earlier.count(v) for v in set(earlier)}
    top = max(counts.values())
    tied = [v for v, c in counts.items() if c == top]
    return (target in tied) / len(tied)


@pytest.mark.parametrize("task", ["offset", "first"])
def test_order_blind_accuracy_matches_a_direct_count(task):
    batch = make_length_batch(task, np.random.default_rng(3), batch=40, length=12, vocab_size=4)
    got = order_blind_accuracy(batch)
    assert np.isnan(got[~batch.scored]).all()
    for t in np.flatnonzero(batch.scored):
        expected = np.mean(
            [_brute_force(s, g[t], t) for s, g in zip(batch.tokens, batch.targets, strict=True)]
        )
        assert got[t] == pytest.approx(expected, rel=1e-12)


def test_order_blind_accuracy_lies_between_chance_and_one():
    batch = make_length_batch("offset", np.random.default_rng(0), batch=2000, length=40)
    got = order_blind_accuracy(batch)[3:]
    assert (got > 1 / 16).all() and (got <= 1).all()
    assert got[0] > got[-1]  # fewer earlier tokens, better odds
    with pytest.raises(TypeError, match="batch"):
        order_blind_accuracy(batch.tokens)
