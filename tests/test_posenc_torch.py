"""posenc.torch against posenc's NumPy code and against the executed transformers code.

Two references for each module:

* posenc's NumPy version, at a float32 tolerance stated next to each test;
* the transformers function a practitioner would otherwise call, run here,
  bit for bit (``torch.equal``) unless a test says otherwise.

Cases per reference (parametrized ids give the settings):

===========================================  ===================================
reference                                    cases
===========================================  ===================================
posenc.sinusoidal                            24 tables (widths x bases x lengths)
posenc.alibi_slopes / alibi_bias             128 head counts / 40 bias tensors
posenc.t5_relative_bucket                    988 settings, 806,688 offsets
posenc.rotary.apply_rotary (+ permutation)   96 (layouts x widths x partial x bases
                                             x (L,)/(batch, L) positions)
posenc.scaling.scaled_frequencies            3,920 (the frequency grid), 2 starts
ROPE_INIT_FUNCTIONS, 6 rope types            3,920 + 80 dynamic with tensor length
Llama/GPT-NeoX default frequencies           20 + 40 partial
LlamaRotaryEmbedding + apply_rotary_pos_emb  24 (8 rope settings x 3 widths),
                                             2 (batch, L) shapes each
GPT-J interleaved apply_rotary_pos_emb       9 (widths x rotary_dim)
GPT-NeoX partial rotary                      9 (widths x partial factors)
T5Attention._relative_position_bucket        988 settings, 806,688 offsets
T5Attention.compute_bias                     8 (lengths x directions)
Bloom build_alibi_tensor                     128 head counts (slopes), 40 biases
Gemma3RotaryEmbedding, per layer type        2 (sliding and full attention)
GPT-2 wpe lookup                             2 (default and given position_ids)
rotary modules after .to(torch.bfloat16)     Llama (llama3, dynamic, longrope),
                                             Gemma 3 (both layer types)
===========================================  ===================================

The sizes of the frequency grid and the T5 grid are asserted in
``test_case_counts`` and ``test_t5_case_count``.
"""

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.gpt_neox import modeling_gpt_neox as neox
from transformers.models.gptj import modeling_gptj as gptj
from transformers.models.llama import modeling_llama as llama
from transformers.models.t5.modeling_t5 import T5Attention

import posenc
import posenc.torch as pt
from posenc.rotary import apply_rotary as np_apply_rotary
from posenc.rotary import layout_permutation, rotary_frequencies
from posenc.scaling import scaled_frequencies

transformers.logging.set_verbosity_error()
F32 = 2.0**-24  # unit roundoff of float32


# --------------------------------------------------------------------------
# The frequency grid: every rope type over widths, partial factors, bases,
# factors and current lengths.

HEAD_DIMS = (8, 64, 80, 128, 256)
PARTIALS = (1.0, 0.5, 0.25)
BASES = (100.0, 10_000.0, 500_000.0, 1_000_000.0)
FACTORS = (1.0, 2.0, 4.0, 8.0, 32.5)
MPE = 2048  # max_position_embeddings
ORIGINAL = 512  # original_max_position_embeddings


def _rope_parameters(kind, factor, dim):
    half = dim // 2
    return {
        "linear": {"factor": factor},
        "dynamic": {"factor": factor},
        "yarn": {"factor": factor, "original_max_position_embeddings": ORIGINAL},
        "yarn-notrunc": {
            "factor": factor,
            "original_max_position_embeddings": ORIGINAL,
            "truncate": False,
            "beta_fast": 16.0,
            "beta_slow": 2.0,
        },
        "yarn-mscale": {
            "factor": factor,
            "original_max_position_embeddings": ORIGINAL,
            "mscale": 0.707,
            "mscale_all_dim": 1.0,
        },
        "llama3": {
            "factor": factor,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": ORIGINAL,
        },
        "longrope": {
            "short_factor": [1.0 + 0.1 * i for i in range(half)],
            "long_factor": [factor + 0.37 * i for i in range(half)],
            "original_max_position_embeddings": ORIGINAL,
        },
    }[kind]


KINDS = ("linear", "dynamic", "yarn", "yarn-notrunc", "yarn-mscale", "llama3", "longrope")
SEQ_LENS = {
    "dynamic": (None, 1, MPE, MPE + 1, 3 * MPE, 10 * MPE),
    "longrope": (None, ORIGINAL, ORIGINAL + 1),
}
_FREQ_CASES = [
    (kind, head_dim, partial, base, factor, seq_len)
    for kind in KINDS
    for head_dim, partial, base, factor in itertools.product(HEAD_DIMS, PARTIALS, BASES, FACTORS)
    for seq_len in SEQ_LENS.get(kind, (None,))
    if int(head_dim * partial) >= 4
]


def _config(kind, head_dim, partial, base, factor, mpe=MPE):
    dim = int(head_dim * partial)
    params = {"rope_type": kind.split("-")[0], "rope_theta": base, "partial_rotary_factor": partial}
    params |= _rope_parameters(kind, factor, dim)
    return transformers.LlamaConfig(
        hidden_size=head_dim * 4,
        num_attention_heads=4,
        head_dim=head_dim,
        max_position_embeddings=mpe,
        rope_parameters=params,
    )


def _ours(config, seq_len=None):
    params = dict(config.rope_parameters)
    base = params.pop("rope_theta")
    partial = params.pop("partial_rotary_factor")
    params["max_position_embeddings"] = config.max_position_embeddings
    return pt.rope_inv_freq(
        config.head_dim, base, partial_rotary_factor=partial, scaling=params, seq_len=seq_len
    )


def test_case_counts():
    assert len(_FREQ_CASES) == 3_920
    assert sum(kind == "dynamic" for kind, *_ in _FREQ_CASES) == 1_680


def test_rope_inv_freq_equals_rope_init_functions_bit_for_bit():
    """Every rope type of ROPE_INIT_FUNCTIONS, 3,920 cases: inv_freq and attention factor."""
    for kind, head_dim, partial, base, factor, seq_len in _FREQ_CASES:
        config = _config(kind, head_dim, partial, base, factor)
        ref, ref_scale = ROPE_INIT_FUNCTIONS[kind.split("-")[0]](config, None, seq_len=seq_len)
        ours, scale = _ours(config, seq_len)
        case = (kind, head_dim, partial, base, factor, seq_len)
        assert ours.dtype == torch.float32 and torch.equal(ours, ref), case
        assert scale == ref_scale, case


@pytest.mark.parametrize("seq_len", [1, MPE, MPE + 1, 3 * MPE + 7, 10 * MPE])
def test_dynamic_with_a_tensor_length_follows_the_forward_pass(seq_len):
    """A 0-d tensor seq_len (as dynamic_rope_update passes) gives transformers' float32 base."""
    for head_dim, base, factor in itertools.product((64, 128), BASES, (2.0, 8.0)):
        config = _config("dynamic", head_dim, 1.0, base, factor)
        length = torch.tensor(seq_len)
        ref, _ = ROPE_INIT_FUNCTIONS["dynamic"](config, None, seq_len=length)
        assert torch.equal(_ours(config, length)[0], ref)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
def test_default_frequencies_equal_llama_and_neox_defaults(head_dim, base):
    config = transformers.LlamaConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    ref, _ = llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    assert torch.equal(pt.rope_inv_freq(head_dim, base)[0], ref)
    for partial in (0.25, 0.5):
        neox_config = transformers.GPTNeoXConfig(
            hidden_size=head_dim * 2, num_attention_heads=2,
            rope_parameters={"rope_type": "default", "rope_theta": base,
                             "partial_rotary_factor": partial},
        )
        ref, _ = neox.GPTNeoXRotaryEmbedding.compute_default_rope_parameters(neox_config)
        ours, _ = pt.rope_inv_freq(head_dim, base, partial_rotary_factor=partial)
        assert torch.equal(ours, ref)


# --------------------------------------------------------------------------
# Scaled frequencies against posenc.scaling.scaled_frequencies (float64).

_NUMPY_METHOD = {"linear": "linear", "dynamic": "dynamic", "yarn": "yarn",
                 "yarn-notrunc": "yarn", "yarn-mscale": "yarn", "llama3": "llama3",
                 "longrope": "longrope"}


def _numpy_frequencies(kind, head_dim, partial, base, factor, seq_len, frequencies):
    dim = int(head_dim * partial)
    params = _rope_parameters(kind, factor, dim)
    kwargs = {"factor": None if kind == "longrope" else factor}
    if kind == "dynamic":
        kwargs |= {"original_length": MPE, "current_length": seq_len}
    elif kind == "longrope":
        kwargs |= {"original_length": ORIGINAL, "current_length": seq_len,
                   "short_factor": params["short_factor"], "long_factor": params["long_factor"]}
    elif kind != "linear":
        kwargs["original_length"] = ORIGINAL
    if kind == "yarn-notrunc":
        kwargs |= {"truncate": False, "beta_fast": 16.0, "beta_slow": 2.0}
    return scaled_frequencies(dim, base, method=_NUMPY_METHOD[kind],
                              frequencies=frequencies, **kwargs)


def test_scaled_frequencies_match_numpy():
    """The frequency grid against posenc.scaling (float64), relative error.

    From the float32 start values (frequencies="transformers"): the float32
    rule rounds a few times, and a blend weight (YaRN's ramp, Llama 3's
    smoothing) rounded by one ulp moves a pair between theta and theta / s,
    which is up to s ulps of the result: bound 2 (1 + s) 2**-24. From the
    nearest float64 values: the float32 exponent 2i/r, rounded by half an
    ulp, moves base ** (2i/r) by up to ln(base) / 2 ulps, torch's pow adds
    up to 2: bound (ln(base) + s) 2**-24 (s >= 1). Measured: at most 0.73 of
    the second bound, 0.70 of the first.
    """
    for kind, head_dim, partial, base, factor, seq_len in _FREQ_CASES:
        config = _config(kind, head_dim, partial, base, factor)
        ours = _ours(config, seq_len)[0].double().numpy()
        start = _numpy_frequencies(kind, head_dim, partial, base, factor, seq_len, "transformers")
        rel = np.max(np.abs(ours - start) / start)
        assert rel <= 2 * (1 + factor) * F32, (kind, head_dim, partial, base, factor, seq_len)
        nearest = _numpy_frequencies(kind, head_dim, partial, base, factor, seq_len, "nearest")
        rel_nearest = np.max(np.abs(ours - nearest) / nearest)
        bound = (math.log(base) + factor) * F32
        assert rel_nearest <= bound, (kind, head_dim, partial, base, factor, seq_len)


# --------------------------------------------------------------------------
# Rotation: transformers' Llama, GPT-J and GPT-NeoX code, and posenc.rotary.


def _positions(batch, length, generator):
    starts = torch.randint(0, 3 * MPE, (batch, 1), generator=generator)
    return starts + torch.arange(length)  # (batch, length), a different offset per row


ROTARY_CONFIGS = [(kind, head_dim) for kind in ("default", *KINDS) for head_dim in (64, 80, 128)]


@pytest.mark.parametrize(("kind", "head_dim"), ROTARY_CONFIGS, ids=str)
def test_rotary_module_equals_llama_rotary_embedding(kind, head_dim):
    """cos, sin and rotated q, k with position_ids (batch, L): bit for bit."""
    generator = torch.Generator().manual_seed(head_dim)
    if kind == "default":
        config = transformers.LlamaConfig(
            hidden_size=head_dim * 4, num_attention_heads=4, head_dim=head_dim,
            max_position_embeddings=MPE, rope_parameters={"rope_type": "default",
                                                          "rope_theta": 500_000.0},
        )
    else:
        config = _config(kind, head_dim, 1.0, 500_000.0, 8.0)
    ours = pt.RotaryEmbedding.from_config(config)
    for batch, length in ((1, 7), (3, 40)):
        ref = llama.LlamaRotaryEmbedding(config)  # fresh: dynamic rope keeps a cache
        q, k = torch.randn(2, batch, 4, length, head_dim, generator=generator)
        position_ids = _positions(batch, length, generator)
        cos, sin = ref(q, position_ids)
        our_cos, our_sin = ours.cos_sin(position_ids)
        assert torch.equal(our_cos, cos) and torch.equal(our_sin, sin)
        ref_q, ref_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
        our_q, our_k = ours(q, k, position_ids)
        assert torch.equal(our_q, ref_q) and torch.equal(our_k, ref_k)


@pytest.mark.parametrize("head_dim", (16, 64, 256))
@pytest.mark.parametrize("rotary_dim", (None, 8, 16))
def test_interleaved_equals_gptj(head_dim, rotary_dim):
    """GPT-J's interleaved rotation (rotary_dim of head_dim columns): bit for bit."""
    generator = torch.Generator().manual_seed(head_dim + (rotary_dim or 0))
    rotated = rotary_dim or head_dim
    batch, length, heads = 2, 33, 3
    q = torch.randn(batch, length, heads, head_dim, generator=generator)  # GPT-J's axis order
    position_ids = _positions(batch, length, generator)
    table = gptj.create_sinusoidal_positions(int(position_ids.max()) + 1, rotated)
    sin, cos = torch.split(table[position_ids], rotated // 2, dim=-1)  # (batch, length, r/2)
    ref = torch.cat((gptj.apply_rotary_pos_emb(q[..., :rotated], sin, cos), q[..., rotated:]), -1)
    rope = pt.RotaryEmbedding(head_dim, layout="interleaved",
                              partial_rotary_factor=rotated / head_dim)
    ours, _ = rope(q.transpose(1, 2), q.transpose(1, 2), position_ids)
    assert torch.equal(ours.transpose(1, 2), ref)


@pytest.mark.parametrize("head_dim", (32, 64, 96))
@pytest.mark.parametrize("partial", (0.25, 0.5, 1.0))
def test_partial_rotary_equals_gpt_neox(head_dim, partial):
    config = transformers.GPTNeoXConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, max_position_embeddings=MPE,
        rope_parameters={"rope_type": "default", "rope_theta": 10_000.0,
                         "partial_rotary_factor": partial},
    )
    generator = torch.Generator().manual_seed(head_dim)
    q, k = torch.randn(2, 2, 2, 25, head_dim, generator=generator)
    position_ids = _positions(2, 25, generator)
    cos, sin = neox.GPTNeoXRotaryEmbedding(config)(q, position_ids)
    ref_q, ref_k = neox.apply_rotary_pos_emb(q, k, cos, sin)
    rope = pt.RotaryEmbedding.from_config(config)
    assert rope.rotary_dim == int(head_dim * partial)
    our_q, our_k = rope(q, k, position_ids)
    assert torch.equal(our_q, ref_q) and torch.equal(our_k, ref_k)


@pytest.mark.parametrize("layout", pt.ROPE_LAYOUTS)
@pytest.mark.parametrize("head_dim", (8, 64, 128, 200))
@pytest.mark.parametrize("partial", (1.0, 0.5))
@pytest.mark.parametrize("base", (100.0, 10_000.0, 500_000.0))
@pytest.mark.parametrize("batched", (False, True))
def test_rotation_matches_numpy_apply_rotary(layout, head_dim, partial, base, batched):
    """posenc.rotary.apply_rotary from transformers' float32 frequencies, angles in float32.

    NumPy's float32 frequencies may differ from torch's pow by 2 ulps
    (posenc.rotary.rotary_frequencies says where), so the float32 angles
    m * theta_i may differ by 4 ulps of theta_i times m plus one rounding
    each: <= 6 * 2**-24 * |m| * theta_i. torch's float32 cos/sin and the two
    products and the sum add at most 8 ulps. Bound per pair (x_a, x_b):
    (|x_a| + |x_b|) * 2**-24 * (8 + 6 |m| theta_i). The NumPy "interleaved"
    layout is "interleaved" here; its "split" layout ("halves" here) is
    compared through layout_permutation: rotating x[..., p] in halves equals
    rotating x interleaved, then taking [..., p].
    """
    generator = torch.Generator().manual_seed(head_dim)
    rotated = int(head_dim * partial)
    x = torch.randn(2, 3, 50, head_dim, generator=generator)
    positions = _positions(2, 50, generator) if batched else torch.arange(1000, 1050)
    rope = pt.RotaryEmbedding(head_dim, base, layout=layout, partial_rotary_factor=partial)
    ours = rope(x, x, positions)[0].double().numpy()
    perm = np.concatenate([layout_permutation(rotated), np.arange(rotated, head_dim)])
    x64 = x.double().numpy()
    interleaved = x64[..., np.argsort(perm)] if layout == "halves" else x64
    ref = np_apply_rotary(
        interleaved, positions.numpy(), base=base, layout="interleaved", rotary_dim=rotated,
        angle_dtype="float32", frequencies="transformers",
    )
    theta = rotary_frequencies(rotated, base, frequencies="transformers")
    m = np.abs(positions.numpy())
    m = m[:, None, :, None] if batched else m[:, None]  # broadcasts with theta
    pair = np.abs(interleaved[..., 0:rotated:2]) + np.abs(interleaved[..., 1:rotated:2])
    bound = pair * F32 * (8 + 6 * m * theta)  # (..., length, rotated / 2)
    err = np.abs(ours - ref[..., perm]) if layout == "halves" else np.abs(ours - ref)
    err = err[..., perm] if layout == "interleaved" else err  # pairs as (i, i + r/2)
    half = rotated // 2
    assert np.all(err[..., :half] <= bound) and np.all(err[..., half:rotated] <= bound)
    assert np.array_equal(ours[..., rotated:], x64[..., rotated:])


def test_rotation_is_relative_and_passes_the_rest_through():
    generator = torch.Generator().manual_seed(0)
    rope = pt.RotaryEmbedding(32, partial_rotary_factor=0.5)
    q, k = torch.randn(2, 1, 1, 2, 32, generator=generator, dtype=torch.float64)
    rope = rope.double()
    a, b = rope(q, k, torch.tensor([3, 10]))
    c, d = rope(q, k, torch.tensor([103, 110]))
    assert torch.allclose((a[..., 0, :] * b[..., 1, :]).sum(), (c[..., 0, :] * d[..., 1, :]).sum())
    assert torch.equal(a[..., 16:], q[..., 16:]) and not torch.equal(a[..., :16], q[..., :16])


# --------------------------------------------------------------------------
# Codes added to the input.


@pytest.mark.parametrize("d_model", (1, 4, 7, 64, 129, 512))
@pytest.mark.parametrize("base", (100.0, 10_000.0))
@pytest.mark.parametrize("max_len", (1, 300))
def test_sinusoidal_table_is_numpy_table_rounded_to_float32(d_model, base, max_len):
    """|table - posenc.sinusoidal| <= 2**-24 * |value| (one float32 rounding), and forward."""
    pe = pt.SinusoidalPositionalEncoding(d_model, max_len, base).eval()
    ref = posenc.sinusoidal(max_len, d_model, base)
    table = pe.table.double().numpy()
    assert pe.table.dtype == torch.float32 and table.shape == ref.shape
    assert np.all(np.abs(table - ref) <= F32 * np.abs(ref))
    positions = torch.tensor([[0, max_len - 1], [max_len // 2, 0]])
    x = torch.randn(2, 2, d_model)
    assert torch.equal(pe(x, positions), x + pe.table[positions])
    pe64 = pe.to(torch.float64)
    assert pe64(x.double(), positions).dtype == torch.float64


def test_learned_embedding_adds_its_rows_and_rejects_far_positions():
    emb = pt.LearnedPositionalEmbedding(10, 6)
    x = torch.randn(2, 4, 6)
    assert torch.equal(emb(x), x + emb.code.weight[:4])
    with pytest.raises(ValueError, match=r"position_ids must lie in \[0, 9\]"):
        emb(x, torch.tensor([0, 1, 2, 10]))


# --------------------------------------------------------------------------
# ALiBi: Bloom's build_alibi_tensor and posenc.biases.


def test_alibi_slopes_equal_bloom_bit_for_bit_and_numpy_closely():
    """1..128 heads. Bloom: equal. NumPy (one exact power of two per slope):
    Bloom raises a float32-rounded base to the power k <= 128, so the relative
    error is at most (k + 2) * 2**-24 (base rounding times k, pow, result)."""
    mask = torch.ones(1, 2)
    for n_heads in range(1, 129):
        ours = pt.alibi_slopes(n_heads)
        bloom = build_alibi_tensor(mask, n_heads, torch.float32)[:, 0, 1]  # slope * key 1
        assert torch.equal(ours, bloom), n_heads
        ref = posenc.alibi_slopes(n_heads)
        p = 1 << (n_heads.bit_length() - 1)
        k = np.concatenate([np.arange(1, p + 1), np.arange(1, 2 * (n_heads - p), 2)])
        assert np.all(np.abs(ours.double().numpy() - ref) <= (k + 2) * F32 * ref), n_heads


@pytest.mark.parametrize("n_heads", (1, 2, 3, 8, 12, 16, 24, 32, 64, 128))
@pytest.mark.parametrize(("query_len", "key_len"), [(1, 1), (9, 9), (3, 9), (1, 40)])
def test_alibi_bias_matches_numpy_and_bloom(n_heads, query_len, key_len):
    """NumPy: float32 slopes as above plus one rounding of the product.
    Bloom: exactly, in float64 (every value s * n is exact there): Bloom's
    s * j minus our -s * (i - j) is s * i, the same in every key of row i,
    so the softmax over the keys j <= i is the same; checked in float32 too."""
    bias = pt.ALiBiBias(n_heads)(query_len, key_len)
    assert bias.shape == (n_heads, query_len, key_len)
    ref = posenc.alibi_bias(key_len, n_heads)[:, key_len - query_len :]
    assert np.allclose(bias.double().numpy(), ref, rtol=132 * F32, atol=0)
    exact = pt.ALiBiBias(n_heads).double()(query_len, key_len)  # (heads, q, k)
    bloom = build_alibi_tensor(torch.ones(1, key_len, dtype=torch.float64), n_heads,
                               torch.float64)[:, 0, :]  # (heads, k): s * j
    slopes = pt.alibi_slopes(n_heads).double()[:, None, None]
    rows = torch.arange(key_len - query_len, key_len, dtype=torch.float64)[None, :, None]
    causal = torch.arange(key_len)[None, :] <= rows[0]
    assert torch.equal(torch.where(causal, bloom[:, None, :] - slopes * rows, 0.0),
                       torch.where(causal, exact, 0.0))
    scores = torch.randn(n_heads, query_len, key_len)
    ours = torch.softmax((scores + bias).masked_fill(~causal, -torch.inf), -1)
    theirs = scores + bloom[:, None, :].float()
    theirs = torch.softmax(theirs.masked_fill(~causal, -torch.inf), -1)
    assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# T5 buckets.

_T5_SETTINGS = [
    (bidirectional, num_buckets, max_distance)
    for bidirectional in (True, False)
    for num_buckets in range(4 if bidirectional else 2, 65)
    for max_distance in sorted({(num_buckets // 2 if bidirectional else num_buckets) // 2 + 1,
                                20, 27, 64, 128, 300, 1000, 77, 8})
    if max_distance > (num_buckets // 2 if bidirectional else num_buckets) // 2
]


def test_t5_case_count():
    assert len(_T5_SETTINGS) == 988


def test_t5_buckets_equal_transformers_and_match_numpy_off_boundaries():
    """Offsets -2 max_distance .. 2 max_distance per setting. transformers: equal.
    NumPy's float32 log rounds differently from torch's by one ulp, so a
    bucket may differ by one exactly where the float64 value of
    log(n / max_exact) / log(max_distance / max_exact) * (half - max_exact)
    is within 1e-5 of an integer; nowhere else."""
    offsets_total = differ = 0
    for bidirectional, num_buckets, max_distance in _T5_SETTINGS:
        rel = torch.arange(-2 * max_distance, 2 * max_distance + 1)
        kwargs = dict(bidirectional=bidirectional, num_buckets=num_buckets,
                      max_distance=max_distance)
        ours = pt.t5_relative_bucket(rel, **kwargs)
        assert torch.equal(ours, T5Attention._relative_position_bucket(rel, **kwargs)), kwargs
        ref = posenc.t5_relative_bucket(rel.numpy(), **kwargs)
        off = np.flatnonzero(ours.numpy() != ref)
        if off.size:
            half = num_buckets // 2 if bidirectional else num_buckets
            exact = half // 2
            n = np.abs(rel.numpy()[off])
            value = np.log(n / exact) / np.log(max_distance / exact) * (half - exact)
            assert np.all(np.abs(ours.numpy()[off] - ref[off]) == 1), kwargs
            assert np.all(np.abs(value - np.round(value)) < 1e-5), kwargs
        offsets_total += rel.numel()
        differ += off.size
    assert offsets_total == 806_688 and differ < 20


@pytest.mark.parametrize("bidirectional", (True, False))
@pytest.mark.parametrize(("query_len", "key_len"), [(1, 1), (17, 17), (5, 300), (1, 200)])
def test_t5_relative_bias_equals_compute_bias(bidirectional, query_len, key_len):
    config = transformers.T5Config(num_heads=6, relative_attention_num_buckets=32,
                                   relative_attention_max_distance=128, d_model=48, d_kv=8,
                                   is_decoder=not bidirectional)
    ref = T5Attention(config, has_relative_attention_bias=True)
    ours = pt.T5RelativeBias(6, bidirectional=bidirectional)
    ours.relative_attention_bias.weight.data.copy_(ref.relative_attention_bias.weight.data)
    expected = ref.compute_bias(query_len, key_len, past_seen_tokens=key_len - query_len)[0]
    assert torch.equal(ours(query_len, key_len), expected)


# --------------------------------------------------------------------------
# The attention module, errors, and the import promise.


@pytest.mark.parametrize("position", pt.CausalSelfAttention.POSITIONS)
def test_attention_is_causal_and_uses_its_position_method(position):
    torch.manual_seed(0)
    attn = pt.CausalSelfAttention(32, 4, position=position)
    x = torch.randn(2, 12, 32)
    y = attn(x)
    assert y.shape == x.shape
    x2 = x.clone()
    x2[:, 8:] = torch.randn(2, 4, 32)
    assert torch.allclose(attn(x2)[:, :8], y[:, :8], atol=1e-6)  # the future is unseen
    swapped = x[:, [1, 0, *range(2, 12)]]  # the first two tokens swapped
    change = (attn(swapped)[:, 2:] - y[:, 2:]).abs().max()  # later rows see both
    assert (change < 1e-5) == (position == "nope")  # only NoPE cannot tell the order


def test_attention_rope_positions_shift_invariance():
    torch.manual_seed(1)
    attn = pt.CausalSelfAttention(16, 2, position="rope", rope={"base": 100.0})
    x = torch.randn(1, 5, 16)
    y = attn(x, torch.arange(5))
    assert torch.allclose(attn(x, torch.arange(5) + 40), y, atol=1e-5)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: pt.rope_inv_freq(64, 0.5), ValueError, "base must be >= 1"),
        (lambda: pt.rope_inv_freq(6, partial_rotary_factor=0.5), ValueError, "even integer >= 2"),
        (lambda: pt.rope_inv_freq(64, scaling={"rope_type": "ntk2"}), ValueError,
         r"scaling\['rope_type'\] must be one of"),
        (lambda: pt.rope_inv_freq(64, scaling={"rope_type": "yarn", "factor": 4.0}), ValueError,
         r"scaling\['original_max_position_embeddings'\] is required"),
        (lambda: pt.rope_inv_freq(64, scaling={"rope_type": "linear", "factor": 0.5}),
         ValueError, r"scaling\['factor'\] must be >= 1"),
        (lambda: pt.RotaryEmbedding(8, layout="split"), ValueError, "layout must be one of"),
        (lambda: pt.RotaryEmbedding(8).cos_sin(torch.zeros(3)), TypeError, "position_ids must"),
        (lambda: pt.alibi_slopes(0), ValueError, "n_heads must be an integer >= 1"),
        (lambda: pt.ALiBiBias(2)(5, 3), ValueError, "key_len must be an integer >= 5"),
        (lambda: pt.t5_relative_bucket(torch.zeros(2, dtype=torch.long), num_buckets=8,
                                       max_distance=2), ValueError, "max_distance must be"),
        (lambda: pt.CausalSelfAttention(30, 4), ValueError, "multiple of n_heads"),
        (lambda: pt.CausalSelfAttention(32, 4, position="shaw"), ValueError, "position must"),
    ],
)
def test_errors_name_the_argument_and_range(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_importing_posenc_does_not_import_torch():
    code = "import posenc; import sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# Configs with one rope_parameters dict per layer type (Gemma 3).


def _tiny_gemma3():
    return transformers.Gemma3TextConfig(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=128, rope_local_base_freq=20_000.0,
        rope_scaling={"rope_type": "linear", "factor": 8.0},
    )


@pytest.mark.parametrize("layer_type", ("sliding_attention", "full_attention"))
def test_from_config_per_layer_type_equals_gemma3(layer_type):
    """Gemma 3's rotary module, run for each layer type: bit for bit."""
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    config = _tiny_gemma3()
    positions = torch.arange(300)[None]
    ref = Gemma3RotaryEmbedding(config)(torch.zeros(1, 300, 16), positions, layer_type)
    ours = pt.RotaryEmbedding.from_config(config, layer_type=layer_type)
    assert all(map(torch.equal, ours.cos_sin(positions), ref))
    expected_base = {"sliding_attention": 20_000.0, "full_attention": 1e6}[layer_type]
    assert ours.base == expected_base


def test_from_config_asks_for_the_layer_type():
    config = _tiny_gemma3()
    with pytest.raises(ValueError, match="full_attention, sliding_attention"):
        pt.RotaryEmbedding.from_config(config)
    with pytest.raises(ValueError, match="got 'global'"):
        pt.RotaryEmbedding.from_config(config, layer_type="global")
    with pytest.raises(ValueError, match="single rope_parameters dict"):
        pt.RotaryEmbedding.from_config(transformers.LlamaConfig(), layer_type="x")


def test_learned_embedding_equals_a_gpt2_wpe_lookup():
    """GPT-2 adds wpe(position_ids) to the token embeddings: same weights, same sums."""
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=50, n_positions=32, n_embd=24, n_layer=1, n_head=2))
    learned = pt.LearnedPositionalEmbedding(32, 24)
    with torch.no_grad():
        learned.code.weight.copy_(gpt2.wpe.weight)
    tokens = torch.randint(0, 50, (2, 9))
    x = gpt2.wte(tokens)
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 1, 2, 3, 4, 5]])
    for position_ids in (None, ids):
        ref = x + gpt2.wpe(torch.arange(9)[None] if position_ids is None else position_ids)
        assert torch.equal(learned(x, position_ids), ref)


# --------------------------------------------------------------------------
# restore_float32_rotary: a model cast to bfloat16 gets its own float32 rule back.


def _llama(rope_parameters, mpe=16):
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, max_position_embeddings=mpe,
        rope_parameters={"rope_theta": 10_000.0, **rope_parameters},
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def test_construction_in_bfloat16_keeps_float32_frequencies_and_to_casts_them():
    config = _llama({"rope_type": "default"}).config
    built = transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    assert built.model.embed_tokens.weight.dtype == torch.bfloat16
    assert built.model.rotary_emb.inv_freq.dtype == torch.float32
    cast = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    assert cast.model.rotary_emb.inv_freq.dtype == torch.bfloat16
    assert cast.model.rotary_emb.original_inv_freq.dtype == torch.bfloat16


def test_restore_keeps_the_scaling_rule():
    rule = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    model = _llama(rule, mpe=128)
    reference = model.model.rotary_emb.inv_freq.clone()
    model.to(torch.bfloat16)
    assert pt.restore_float32_rotary(model) == ["model.rotary_emb"]
    assert torch.equal(model.model.rotary_emb.inv_freq, reference)
    default = pt.rope_inv_freq(16)[0]
    assert not torch.equal(reference, default)  # the llama3 rule, not the default


@pytest.mark.parametrize("rule", (
    {"rope_type": "dynamic", "factor": 4.0},
    {"rope_type": "longrope", "short_factor": [1.0] * 8,
     "long_factor": [1.0 + i for i in range(8)], "original_max_position_embeddings": 16},
))
def test_restore_survives_dynamic_updates(rule):
    """40 tokens then 8: dynamic resets to, longrope copies from, original_inv_freq."""
    model = _llama(rule)
    reference = model.model.rotary_emb.original_inv_freq.clone()
    model.to(torch.bfloat16)
    rot = model.model.rotary_emb
    rot.inv_freq = reference.clone()  # overwriting inv_freq alone does not last
    with torch.no_grad():
        model(torch.zeros(1, 40, dtype=torch.long))
        model(torch.zeros(1, 8, dtype=torch.long))
    assert not torch.equal(rot.inv_freq.float(), reference)
    pt.restore_float32_rotary(model)
    rot = model.model.rotary_emb
    with torch.no_grad():
        model(torch.zeros(1, 40, dtype=torch.long))
        model(torch.zeros(1, 8, dtype=torch.long))
    assert rot.inv_freq.dtype == torch.float32
    assert torch.equal(rot.inv_freq, reference)


def test_restore_rebuilds_every_layer_type_of_gemma3():
    torch.manual_seed(0)
    model = transformers.Gemma3ForCausalLM(_tiny_gemma3()).eval()
    names = [n for n, _ in model.model.rotary_emb.named_buffers()]
    reference = dict(model.model.rotary_emb.named_buffers())
    model.to(torch.bfloat16)
    assert all(b.dtype == torch.bfloat16 for b in model.model.rotary_emb.buffers())
    assert pt.restore_float32_rotary(model) == ["model.rotary_emb"]
    restored = dict(model.model.rotary_emb.named_buffers())
    assert sorted(restored) == sorted(names)
    assert "full_attention_inv_freq" in restored
    assert all(torch.equal(restored[n], reference[n]) for n in names)
