"""Tests for posenc.transformer (the causal model of chapter 7) and posenc.lengthtasks."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc.biases import alibi_slopes
from posenc.extrapolation import ExtrapolationConfig, config_from_dict
from posenc.lengthtasks import LengthBatch, make_length_batch
from posenc.rotary import rotate_pairs
from posenc.scaling import scaled_frequencies
from posenc.transformer import (
    POSITION_METHODS,
    CausalTransformer,
    gradient_check,
    t5_causal_bucket,
    train_causal,
)

RESULTS = Path(__file__).resolve().parents[1] / "results"


def small(position, seeds=(0, 1), **kwargs):
    extra = {"max_length": 8} if position == "learned" else {}
    return CausalTransformer(
        6, d_model=8, n_heads=2, n_layers=2, position=position, seeds=seeds, **extra, **kwargs
    )


@pytest.mark.parametrize("position", POSITION_METHODS)
def test_gradients_match_finite_differences(position):
    model = small(position)
    rng = np.random.default_rng(5)
    for params in model.params.values():  # move off the zero start of the T5 table
        params += rng.normal(scale=0.3, size=params.shape)
    batch = make_length_batch("offset", np.random.default_rng(1), batch=3, length=6, vocab_size=6)
    errors = gradient_check(model, batch, n_entries=10_000)  # every entry of every parameter
    # Central differences with eps = 1e-6 in float64 are good to about 1e-8 relative.
    assert max(errors.values()) < 1e-6, errors


@pytest.mark.parametrize("position", POSITION_METHODS)
def test_causal_prefix_gives_the_same_answers(position):
    """The answer at position t does not depend on later tokens."""
    model = small(position)
    tokens = np.random.default_rng(2).integers(0, 6, size=(4, 8))
    full = model.logits(tokens)
    prefix = model.logits(tokens[:, :5])
    np.testing.assert_allclose(full[:, :, :5], prefix, rtol=1e-12, atol=1e-12)
    changed = tokens.copy()
    changed[:, 6:] = (changed[:, 6:] + 1) % 6
    np.testing.assert_allclose(model.logits(changed)[:, :, :6], full[:, :, :6], atol=1e-12)


def test_copies_are_independent_of_their_neighbours():
    pair = small("rope", seeds=(3, 4))
    alone = small("rope", seeds=(4,))
    tokens = np.random.default_rng(0).integers(0, 6, size=(2, 7))
    np.testing.assert_allclose(pair.logits(tokens)[1], alone.logits(tokens)[0], rtol=1e-12)


@pytest.mark.parametrize("position", POSITION_METHODS)
def test_stacked_training_gives_each_copy_its_lone_training(position):
    """Three copies trained as one stack, each at its own learning rate, end where the
    middle copy ends when trained alone: same parameters, same losses.

    Each copy does the same arithmetic on the same numbers in both runs (its own
    initialisation and data come from its seed; Adam updates every entry on its own),
    so on one machine the results are identical bit for bit. The tolerance, 1e-12 of
    each parameter's largest entry, only allows a BLAS kernel to sum a differently
    placed operand in another order: a one-ulp change of every initial weight moves
    the parameters after these 100 updates by about 1e-15 of their size (measured for
    NoPE, RoPE and T5), a thousand times less.
    """
    extra = {"max_length": 8} if position == "learned" else {}
    kw = dict(d_model=8, n_heads=2, position=position, t5_max_distance=12, **extra)
    run = dict(length=8, steps=100, batch_size=4, vocab_size=6, offset=2)
    stack = CausalTransformer(6, seeds=(0, 1, 2), **kw)
    alone = CausalTransformer(6, seeds=(1,), **kw)
    both = train_causal(stack, "offset", learning_rate=np.array([1e-2, 3e-3, 1e-3]), **run)
    one = train_causal(alone, "offset", learning_rate=3e-3, **run)
    for name, value in stack.params.items():
        scale = np.abs(alone.params[name]).max()
        np.testing.assert_allclose(value[1], alone.params[name][0], rtol=0, atol=1e-12 * scale)
    assert not np.allclose(stack.params["w_out"][0], alone.params["w_out"][0])
    np.testing.assert_allclose(both.copy_loss[:, 1], one.copy_loss[:, 0], rtol=1e-12)


@pytest.mark.parametrize("position", POSITION_METHODS)
def test_float32_computes_the_float64_gradients_to_its_precision(position):
    """float32 (the experiment's type) gives the float64 loss and gradients to about 1e-6.

    Each number passes through a few dozen roundings of relative size 6e-8 (float32's
    unit roundoff) on its way, so 1e-4 of each parameter's largest gradient entry leaves
    a margin of about a hundred; a wrong cast or a missed term would be of order 1.
    """
    extra = {"max_length": 8} if position == "learned" else {}
    kw = dict(d_model=8, n_heads=2, position=position, seeds=(0, 1), t5_max_distance=12, **extra)
    wide, narrow = CausalTransformer(6, **kw), CausalTransformer(6, dtype="float32", **kw)
    rng = np.random.default_rng(5)
    for name, params in wide.params.items():  # move off the zero start of the T5 table
        params += rng.normal(scale=0.3, size=params.shape)
        narrow.params[name][...] = params
    batch = make_length_batch("offset", np.random.default_rng(1), batch=3, length=8, vocab_size=6)
    loss64, grads64 = wide.loss_and_gradients(batch)
    loss32, grads32 = narrow.loss_and_gradients(batch)
    assert loss32.dtype == np.float32
    np.testing.assert_allclose(loss32, loss64, rtol=1e-5)
    for name, g in grads64.items():
        assert grads32[name].dtype == np.float32, name
        np.testing.assert_allclose(grads32[name], g, rtol=0, atol=1e-4 * np.abs(g).max())
    train_causal(narrow, "offset", length=8, steps=3, batch_size=2, vocab_size=6)
    assert all(p.dtype == np.float32 for p in narrow.params.values())
    with pytest.raises(ValueError, match="dtype"):
        CausalTransformer(6, dtype="float16")


def test_nope_is_equivariant_only_through_the_mask():
    """One NoPE layer: a later position sees its prefix as a set, so swapping positions
    0 and 1 leaves it alone; the first answer sees one token only, so the swap changes it."""
    model = CausalTransformer(6, d_model=8, n_heads=2, n_layers=1, position="nope")
    tokens = np.array([[1, 2, 3, 4]])
    swapped = np.array([[2, 1, 3, 4]])
    a, b = model.logits(tokens), model.logits(swapped)
    np.testing.assert_allclose(a[0, 0, 2:], b[0, 0, 2:], atol=1e-12)  # same multiset of prefix
    assert not np.allclose(a[0, 0, 0], b[0, 0, 0])


def test_rope_scores_depend_on_offset_only_and_scaling_changes_them():
    model = small("rope", seeds=(0,))
    cos, sin = model._rope_tables(10, None)
    x = np.random.default_rng(1).normal(size=(1, 4))
    q = rotate_pairs(np.repeat(x, 10, axis=0), cos, sin)
    scores = q @ q.T
    # positions (2, 5) and (6, 9) are 3 apart.
    assert scores[2, 5] == pytest.approx(scores[6, 9], rel=1e-12)
    tokens = np.random.default_rng(3).integers(0, 6, size=(2, 8))
    freqs = scaled_frequencies(4, method="linear", factor=2.0)
    assert not np.allclose(model.logits(tokens), model.logits(tokens, frequencies=freqs))
    ones = scaled_frequencies(4, method="linear", factor=1.0)
    np.testing.assert_array_equal(model.logits(tokens), model.logits(tokens, frequencies=ones))


def test_learned_table_cannot_run_past_its_rows():
    model = small("learned")
    model.logits(np.zeros((1, 8), dtype=int))
    with pytest.raises(ValueError, match="learned position table has 8 rows"):
        model.logits(np.zeros((1, 9), dtype=int))


def test_alibi_model_uses_chapter_6_slopes():
    """The model's slopes are posenc.biases.alibi_slopes; for the 4 heads of chapter 7 they
    are exact powers of two, as the authors' get_slopes (products of 2**-2) gives them."""
    for heads in (1, 2, 4, 6):
        model = CausalTransformer(6, d_model=2 * heads, n_heads=heads, position="alibi")
        np.testing.assert_array_equal(model.slopes, alibi_slopes(heads))
    start = 2.0 ** (-8.0 / 4)
    np.testing.assert_array_equal(alibi_slopes(4), [start ** (k + 1) for k in range(4)])


def test_t5_causal_buckets_hand_computed():
    # 16 buckets, max distance 64: 0..7 exact, then 8 + int(ln(n/8) / ln 8 * 8).
    got = t5_causal_bucket(np.array([0, 7, 8, 12, 16, 32, 63, 64, 500, -3]))
    assert got.tolist() == [0, 7, 8, 9, 10, 13, 15, 15, 15, 0]
    assert np.all(np.diff(t5_causal_bucket(np.arange(200))) >= 0)


def test_training_learns_the_offset_task_within_length():
    model = CausalTransformer(8, d_model=16, n_heads=2, n_layers=1, position="rope", seeds=(0, 1))
    history = train_causal(
        model, "offset", length=8, steps=300, batch_size=16, learning_rate=1e-2, offset=1
    )
    assert history.train_loss.shape == (300,)
    assert history.train_loss[-20:].mean() < history.train_loss[:20].mean() / 4
    test = make_length_batch(
        "offset", np.random.default_rng(9), batch=64, length=8, vocab_size=8, offset=1
    )
    accuracy = np.nanmean(model.accuracy_by_position(test), axis=1)
    assert np.all(accuracy > 0.9), accuracy


def test_tasks():
    b = make_length_batch("first", np.random.default_rng(0), batch=2, length=5, copies=3)
    assert b.tokens.shape == (3, 2, 5) and b.scored.tolist() == [False] + [True] * 4
    assert np.all(b.targets[..., 1:] == b.tokens[..., :1])
    b = make_length_batch("offset", np.random.default_rng(0), batch=2, length=6, offset=2)
    assert np.all(b.targets[:, 2:] == b.tokens[:, :4])
    with pytest.raises(ValueError, match="task"):
        make_length_batch("sort", np.random.default_rng(0), batch=2, length=6)
    with pytest.raises(ValueError, match="length"):
        make_length_batch("offset", np.random.default_rng(0), batch=2, length=3, offset=3)
    with pytest.raises(TypeError, match="rng"):
        make_length_batch("offset", 0, batch=2, length=6)


def test_bad_model_arguments():
    with pytest.raises(ValueError, match="position"):
        CausalTransformer(6, position="xpos")
    with pytest.raises(ValueError, match="max_length"):
        CausalTransformer(6, position="learned")
    with pytest.raises(ValueError, match="multiple of n_heads"):
        CausalTransformer(6, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="even for rope"):
        CausalTransformer(6, d_model=6, n_heads=2, position="rope")
    with pytest.raises(ValueError, match="only be given for position 'rope'"):
        small("alibi").logits(np.zeros((1, 4), dtype=int), frequencies=np.ones(2))
    with pytest.raises(TypeError, match="batch"):
        small("nope").accuracy_by_position(np.zeros((1, 4), dtype=int))
    with pytest.raises(ValueError, match="tokens"):
        small("nope").logits(np.full((1, 4), 6))
    assert isinstance(LengthBatch, type)


def _t5_causal_bucket_float64(distance, num_buckets, max_distance):
    """The model's own T5 bucket before it used posenc.biases: the logarithm in float64."""
    max_exact = num_buckets // 2
    n = np.maximum(np.asarray(distance, dtype=np.int64), 0)
    safe = np.maximum(n, 1).astype(np.float64)
    large = max_exact + (
        np.log(safe / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).astype(np.int64)
    return np.where(n < max_exact, n, np.minimum(large, num_buckets - 1))


def _chapter_7_t5_settings():
    """(buckets, max distance, longest test length) of every design chapter 7 ran or runs."""
    configs = [ExtrapolationConfig()]
    synthetic = ("ch7_extrapolation*.json", "ch7_rate_by_loss*.json")  # not ch7_longcontext
    paths = [p for g in synthetic for p in (*RESULTS.glob(g), *RESULTS.glob(f"cpus/*/{g}"))]
    for path in sorted(paths):
        configs.append(config_from_dict(json.loads(path.read_text())["config"]))
    # build_model: 16 buckets reaching the training length; the chapter's own call too.
    settings = {(16, c.train_length, c.max_test_length) for c in configs}
    return sorted(settings | {(16, 16, 64), (16, 64, 200)})


def test_t5_buckets_of_chapter_7_are_unchanged_by_the_shared_function():
    """The float32 logarithm of posenc.biases (T5's own) lands one bucket off the float64
    one at some exact boundaries of some settings (9 buckets reaching 128, at distances 8,
    16 and 64): none of them is a setting chapter 7 or its results use, where every
    distance a test length reaches falls in the same bucket either way."""
    settings = _chapter_7_t5_settings()
    assert (16, 16, 64) in settings
    for buckets, reach, longest in settings:
        distance = np.arange(-4, longest)
        shared = t5_causal_bucket(distance, num_buckets=buckets, max_distance=reach)
        np.testing.assert_array_equal(
            shared, _t5_causal_bucket_float64(distance, buckets, reach), err_msg=str(settings)
        )
        model = CausalTransformer(
            6, d_model=8, n_heads=2, position="t5", t5_buckets=buckets, t5_max_distance=reach
        )
        rows, cols = np.arange(longest)[:, None], np.arange(longest)[None, :]
        expected = _t5_causal_bucket_float64(rows - cols, buckets, reach).reshape(-1)
        np.testing.assert_array_equal(model._bucket_one_hot(longest).argmax(axis=0), expected)
    off = t5_causal_bucket([8, 16, 64], num_buckets=9, max_distance=128)
    np.testing.assert_array_equal(off - _t5_causal_bucket_float64([8, 16, 64], 9, 128), 1)


def test_the_rotation_is_chapter_6s_and_keeps_float32():
    """rotate_pairs with the model's tables is apply_rotary, and in float32 it stays there."""
    from posenc import apply_rotary
    from posenc.encodings import frequencies

    x = np.random.default_rng(0).normal(size=(3, 12, 8))
    angles = np.arange(12)[:, None] * frequencies(8, 10_000.0)[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    np.testing.assert_array_equal(rotate_pairs(x, cos, sin), apply_rotary(x))
    back = rotate_pairs(rotate_pairs(x, cos, sin), cos, -sin)  # the opposite angle undoes it
    np.testing.assert_allclose(back, x, atol=1e-14)
    x32, cos32, sin32 = x.astype(np.float32), cos.astype(np.float32), sin.astype(np.float32)
    assert rotate_pairs(x32, cos32, sin32).dtype == np.float32
    with pytest.raises(ValueError, match="cos and sin must have the same shape"):
        rotate_pairs(x, cos[:, :3], sin[:, :3])
    with pytest.raises(ValueError, match="x must be a floating-point array"):
        rotate_pairs(np.ones((2, 3)), cos[:2, :1], sin[:2, :1])
