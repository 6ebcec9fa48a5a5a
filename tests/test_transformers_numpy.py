"""posenc's NumPy functions against the executed Hugging Face transformers code.

Each test builds the reference with transformers (5.23, PyTorch CPU) and
compares at the reference's own precision. Float32 references: the
tolerance is a stated number of float32 units in the last place (ulps,
``EPS32 = 2**-24`` relative), plus, where posenc's float64 maths starts from
exact values and the reference from rounded ones, the propagated rounding of
the reference (stated per test).
"""

import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

from posenc import alibi_slopes, sinusoidal  # noqa: E402
from posenc.biases import t5_relative_bucket  # noqa: E402
from posenc.rotary import apply_rotary, rotary_frequencies  # noqa: E402
from posenc.scaling import (  # noqa: E402
    longrope_attention_factor,
    scaled_frequencies,
    yarn_attention_factor,
)
from posenc.transformer import t5_causal_bucket  # noqa: E402

EPS32 = 2.0**-24
WIDTHS = (8, 32, 64, 80, 96, 128, 256)
BASES = (10_000.0, 500_000.0, 1_000_000.0, 150_000.0, 12_345.6)


def ulps32(a, b):
    """Distance in float32 ulps between two float32 arrays of one sign."""
    a = np.asarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
    b = np.asarray(b, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.abs(a - b)


def llama_config(head_dim, base, rope=None, **extra):
    params = {"rope_type": "default", "rope_theta": base} if rope is None else dict(rope)
    params.setdefault("rope_theta", base)
    return transformers.LlamaConfig(
        hidden_size=head_dim * 2,
        num_attention_heads=2,
        head_dim=head_dim,
        rope_parameters=params,
        **extra,
    )


def test_default_frequencies_within_two_ulps_and_mostly_bit_for_bit():
    # The float32 power of posenc is the float32 nearest the float64 power;
    # PyTorch's float32 pow (vectorised) is not always correctly rounded, so a
    # few frequencies differ by 1 or 2 ulps (measured: 1.5 % over 10 million).
    total = differ = 0
    for d in range(2, 258, 2):
        for base in BASES:
            config = llama_config(d, base)
            want, scaling = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding\
                .compute_default_rope_parameters(config)
            assert scaling == 1.0
            got = rotary_frequencies(d, base, frequencies="transformers")
            distance = ulps32(got, want.numpy())
            assert distance.max() <= 2, (d, base)
            total += distance.size
            differ += int((distance > 0).sum())
    assert differ <= 0.05 * total, (differ, total)
    # The nearest frequencies are a different convention: many pairs differ.
    want = rotary_frequencies(128, 500_000.0, frequencies="transformers").astype(np.float32)
    assert (want != rotary_frequencies(128, 500_000.0).astype(np.float32)).sum() == 18


# (rope_parameters, posenc keywords) for each rule; the width and base come from the loop.
def _longrope_lists(half, seed):
    rng = np.random.default_rng(seed)
    short = (1.0 + rng.uniform(0, 0.2, half)).round(4).tolist()
    long = np.sort(1.0 + rng.uniform(0, 40, half)).round(4).tolist()
    return short, long


def _rule_cases():
    for factor in (1.0, 2.0, 4.0, 8.0, 32.0):
        yield {"rope_type": "linear", "factor": factor}, {"method": "linear"}, {}
        for seq_len in (None, 512, 2048, 5000, 40_000):
            yield (
                {"rope_type": "dynamic", "factor": factor},
                {"method": "dynamic", "original_length": 2048, "current_length": seq_len},
                {"max_position_embeddings": 2048, "seq_len": seq_len},
            )
        for original in (2048, 4096, 8192):
            yield (
                {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": original},
                {"method": "llama3", "original_length": original},
                {},
            )
            yield (
                {"rope_type": "llama3", "factor": factor, "low_freq_factor": 2.0,
                 "high_freq_factor": 8.0, "original_max_position_embeddings": original},
                {"method": "llama3", "original_length": original, "low_freq_factor": 2.0,
                 "high_freq_factor": 8.0},
                {},
            )
            for truncate in (True, False):
                for betas in ((32, 1), (64, 2)):
                    yield (
                        {"rope_type": "yarn", "factor": factor, "truncate": truncate,
                         "beta_fast": betas[0], "beta_slow": betas[1],
                         "original_max_position_embeddings": original},
                        {"method": "yarn", "original_length": original, "truncate": truncate,
                         "beta_fast": betas[0], "beta_slow": betas[1]},
                        {},
                    )


def _rope_init(rope, head_dim, base, extra):
    extra = dict(extra)
    seq_len = extra.pop("seq_len", None)
    config = llama_config(head_dim, base, rope, **extra)
    inv_freq, scaling = ROPE_INIT_FUNCTIONS[rope["rope_type"]](config, "cpu", seq_len=seq_len)
    return inv_freq.numpy().astype(np.float64), scaling


def test_rope_init_functions_linear_dynamic_llama3_yarn():
    # Starting from transformers' float32 frequencies, the rules agree within a
    # few float32 ulps: the reference rounds each of its float32 steps, posenc
    # rounds once in float64. Bound: 4 ulps for linear and dynamic; 4 + s ulps
    # for llama3 and yarn, whose float32 ramp (or blend) weight is rounded and
    # the rounding is amplified up to s times where the result is near
    # theta/s (measured worst: 31.7 ulps, yarn at s = 32 without truncation).
    # From the nearest frequencies the reference's own rounding of the power
    # adds up to (2 + ln b) ulps (rotary_frequencies).
    cases = 0
    for rope, ours, extra in _rule_cases():
        if "original_max_position_embeddings" in rope:  # a consistent config
            extra = dict(extra, max_position_embeddings=int(
                rope["original_max_position_embeddings"] * max(rope["factor"], 2)))
        blended = rope["rope_type"] in ("llama3", "yarn")
        ulps = 4 + (rope["factor"] if blended else 0)
        for d in (32, 64, 128):
            for base in (10_000.0, 500_000.0):
                want, scaling = _rope_init(rope, d, base, extra)
                kwargs = dict(ours, factor=rope["factor"])
                got = scaled_frequencies(d, base, frequencies="transformers", **kwargs)
                error = np.abs(got / want - 1).max() / EPS32
                assert error <= ulps, (rope, d, base, error)
                nearest = scaled_frequencies(d, base, **kwargs)
                bound = ulps + 2 + math.log(base)
                assert np.abs(nearest / want - 1).max() <= bound * EPS32, (rope, d, base)
                if rope["rope_type"] == "yarn":
                    assert scaling == yarn_attention_factor(rope["factor"])
                else:
                    assert scaling == 1.0
                cases += 1
    assert cases == 5 * (1 + 5 + 3 * (2 + 4)) * 6


def test_yarn_attention_factor_with_mscale_and_partial_rotary():
    for factor in (1.0, 4.0, 40.0):
        for mscale, mscale_all_dim in ((None, None), (1.0, 1.0), (0.707, 1.0), (1.0, 0.0)):
            rope = {"rope_type": "yarn", "factor": factor,
                    "original_max_position_embeddings": 4096}
            if mscale is not None:
                rope.update(mscale=mscale, mscale_all_dim=mscale_all_dim)
            config = llama_config(128, 10_000.0, rope, partial_rotary_factor=0.5)
            inv_freq, scaling = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
            assert inv_freq.shape == (32,)  # rotary width 64
            assert scaling == pytest.approx(
                yarn_attention_factor(factor, mscale=mscale, mscale_all_dim=mscale_all_dim),
                rel=1e-15,
            )
            got = scaled_frequencies(64, 10_000.0, method="yarn", factor=factor,
                                     original_length=4096, frequencies="transformers")
            np.testing.assert_allclose(got, inv_freq.numpy(), rtol=8 * EPS32)


def test_longrope_frequencies_and_attention_factor():
    cases = 0
    for d in (32, 96, 128):
        short, long = _longrope_lists(d // 2, d)
        for original, max_len, factor in ((4096, 131_072, None), (4096, 131_072, 8.0),
                                          (2048, 2048, None), (8192, 65_536, None)):
            rope = {"rope_type": "longrope", "short_factor": short, "long_factor": long,
                    "original_max_position_embeddings": original}
            if factor is not None:
                rope["factor"] = factor
            for seq_len in (None, original // 2, original, original + 1, 4 * original):
                config = llama_config(d, 10_000.0, rope, max_position_embeddings=max_len)
                want, scaling = ROPE_INIT_FUNCTIONS["longrope"](config, "cpu", seq_len=seq_len)
                got = scaled_frequencies(
                    d, 10_000.0, method="longrope", original_length=original,
                    current_length=seq_len, short_factor=short, long_factor=long,
                    frequencies="transformers",
                )
                np.testing.assert_allclose(got, want.numpy(), rtol=4 * EPS32)
                s = factor if factor is not None else max_len / original
                assert scaling == pytest.approx(longrope_attention_factor(s, original), rel=1e-15)
                cases += 1
    assert cases == 60


def test_proportional_is_linear_on_the_leading_pairs_then_zero():
    for head_dim in (64, 128, 256):
        for proportion in (0.25, 0.5, 1.0):
            for factor in (1.0, 8.0):
                rope = {"rope_type": "proportional", "factor": factor,
                        "partial_rotary_factor": proportion}
                config = llama_config(head_dim, 1_000_000.0, rope)
                want, scaling = ROPE_INIT_FUNCTIONS["proportional"](config, "cpu")
                kept = int(proportion * head_dim // 2)
                got = np.zeros(head_dim // 2)
                got[:kept] = scaled_frequencies(
                    head_dim, 1_000_000.0, method="linear", factor=factor,
                    frequencies="transformers",
                )[:kept]
                assert ulps32(got, want.numpy()).max() <= 2
                assert scaling == 1.0


def _llama_reference(q, position_ids, head_dim, base):
    from transformers.models.llama import modeling_llama

    config = llama_config(head_dim, base)
    rotary = modeling_llama.LlamaRotaryEmbedding(config)
    cos, sin = rotary(torch.from_numpy(q), torch.from_numpy(position_ids))
    out, _ = modeling_llama.apply_rotary_pos_emb(
        torch.from_numpy(q), torch.from_numpy(q), cos, sin
    )
    return out.numpy()


def test_llama_apply_rotary_pos_emb_batched_and_after_a_cache():
    # Bound: the reference's float32 cos/sin (1 ulp each) and its float32
    # products and sum (3 roundings) move an output by at most about
    # 5 ulps of max |x|; stated bound 8 * EPS32 * max |x| per head row.
    rng = np.random.default_rng(0)
    cases = 0
    for head_dim in (32, 64, 128):
        for base in (10_000.0, 500_000.0):
            for start in (0, 7, 4000):
                batch, heads, length = 2, 3, 9
                q = rng.normal(size=(batch, heads, length, head_dim)).astype(np.float32)
                positions = start + np.stack([np.arange(length), np.arange(length) * 3 + 11])
                want = _llama_reference(q, positions, head_dim, base)
                got = apply_rotary(q, positions, base=base, layout="split",
                                   angle_dtype="float32", frequencies="transformers")
                bound = 8 * EPS32 * np.abs(q).max(axis=-1, keepdims=True)
                assert np.all(np.abs(got - want) <= bound), (head_dim, base, start)
                cases += 1
    assert cases == 18


def test_gptj_interleaved_partial_rotary():
    from transformers.models.gptj import modeling_gptj

    rng = np.random.default_rng(1)
    for head_dim, rotary_dim in ((64, 16), (256, 64), (32, 32)):
        length, heads = 40, 2
        x = rng.normal(size=(1, length, heads, head_dim)).astype(np.float32)  # GPT-J layout
        sincos = modeling_gptj.create_sinusoidal_positions(2048, rotary_dim)
        positions = np.arange(1000, 1000 + length)
        sin, cos = torch.split(sincos[torch.from_numpy(positions)][None], rotary_dim // 2, dim=-1)
        xt = torch.from_numpy(x)
        rotated = modeling_gptj.apply_rotary_pos_emb(xt[..., :rotary_dim], sin, cos)
        want = torch.cat([rotated, xt[..., rotary_dim:]], dim=-1).numpy().transpose(0, 2, 1, 3)
        got = apply_rotary(x.transpose(0, 2, 1, 3), positions, layout="interleaved",
                           rotary_dim=rotary_dim, angle_dtype="float32",
                           frequencies="transformers")
        bound = 8 * EPS32 * np.abs(x).max()
        assert np.abs(got - want).max() <= bound, (head_dim, rotary_dim)
        np.testing.assert_array_equal(got[..., rotary_dim:], want[..., rotary_dim:])


def test_gpt_neox_split_partial_rotary():
    from transformers.models.gpt_neox import modeling_gpt_neox

    rng = np.random.default_rng(2)
    for head_dim, pct, base in ((64, 0.25, 10_000.0), (128, 0.5, 10_000.0), (80, 1.0, 1e6)):
        config = transformers.GPTNeoXConfig(
            hidden_size=head_dim * 2, num_attention_heads=2,
            rope_parameters={"rope_type": "default", "rope_theta": base,
                             "partial_rotary_factor": pct},
        )
        rotary = modeling_gpt_neox.GPTNeoXRotaryEmbedding(config)
        q = rng.normal(size=(2, 2, 12, head_dim)).astype(np.float32)
        positions = np.stack([np.arange(12), np.arange(300, 312)])
        cos, sin = rotary(torch.from_numpy(q), torch.from_numpy(positions))
        want, _ = modeling_gpt_neox.apply_rotary_pos_emb(
            torch.from_numpy(q), torch.from_numpy(q), cos, sin
        )
        rotary_dim = int(head_dim * pct)
        assert cos.shape[-1] == rotary_dim
        got = apply_rotary(q, positions, base=base, layout="split", rotary_dim=rotary_dim,
                           angle_dtype="float32", frequencies="transformers")
        assert np.abs(got - want.numpy()).max() <= 8 * EPS32 * np.abs(q).max()


def _t5_grid():
    for bidirectional in (True, False):
        for num_buckets in range(4 if bidirectional else 2, 65):
            half = num_buckets // 2 if bidirectional else num_buckets
            max_exact = half // 2
            for max_distance in [*range(max_exact + 1, max_exact + 40), 128, 333, 1000]:
                yield bidirectional, num_buckets, max_distance


def test_t5_bucket_agrees_except_at_exact_boundaries():
    # NumPy's and PyTorch's float32 log round differently in the last bit;
    # where the exact log ratio times the bucket count is an integer that bit
    # decides the bucket. Measured: 11 of 1.9 million offsets (the docstring).
    from transformers.models.t5.modeling_t5 import T5Attention

    offsets_compared = disagreements = settings = 0
    for bidirectional, num_buckets, max_distance in _t5_grid():
        offsets = np.arange(-2 * max_distance, 2 * max_distance + 1)
        want = T5Attention._relative_position_bucket(
            torch.from_numpy(offsets), bidirectional=bidirectional,
            num_buckets=num_buckets, max_distance=max_distance,
        ).numpy()
        got = t5_relative_bucket(offsets, bidirectional=bidirectional,
                                 num_buckets=num_buckets, max_distance=max_distance)
        settings += 1
        offsets_compared += offsets.size
        for offset in offsets[got != want]:
            disagreements += 1
            half = num_buckets // 2 if bidirectional else num_buckets
            exact = half // 2
            n = abs(int(offset))
            value = math.log(n / exact) / math.log(max_distance / exact) * (half - exact)
            assert abs(value - round(value)) < 1e-9, (bidirectional, num_buckets, max_distance)
        assert np.abs(got - want).max() <= 1
    assert settings == (61 + 63) * 42
    assert disagreements <= 20, (disagreements, offsets_compared)
    # The case once reported: transformers gives [5, 6, 8].
    np.testing.assert_array_equal(
        t5_causal_bucket([8, 16, 64], num_buckets=9, max_distance=128), [5, 6, 8]
    )


def test_bloom_alibi_tensor():
    # Bloom raises a float32 base to integer powers, so slope k (exponent k)
    # carries up to about (k + 2) float32 ulps; posenc's slopes are exact
    # powers of two. Bound: (k + 3) * EPS32 relative, k the exponent.
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    length = 50
    mask = torch.ones(2, length, dtype=torch.long)
    mask[1, :7] = 0  # left padding: positions restart after it
    for heads in range(1, 129):
        want = build_alibi_tensor(mask, heads, torch.float32).reshape(2, heads, length).numpy()
        slopes = alibi_slopes(heads)
        positions = np.stack([np.arange(length), np.r_[np.zeros(7), np.arange(length - 7)]])
        got = slopes[None, :, None] * positions[:, None, :]
        p = 1 << (heads.bit_length() - 1)
        exponent = np.r_[np.arange(1, p + 1), np.arange(1, 2 * (heads - p), 2)]
        bound = (exponent + 3)[None, :, None] * EPS32 * np.abs(got)
        assert np.all(np.abs(got - want) <= bound), heads


def test_sinusoidal_tables_of_distilbert_marian_and_m2m100():
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    for n_pos, dim in ((64, 16), (512, 128), (1024, 512)):
        # DistilBERT (interleaved) and Marian (split): float64 NumPy rounded to
        # float32, so within 1 float32 ulp of 1 plus the float64 angle error.
        out = torch.empty(n_pos, dim)
        create_sinusoidal_embeddings(n_pos, dim, out)
        np.testing.assert_allclose(out.numpy(), sinusoidal(n_pos, dim), rtol=0, atol=2 * EPS32)
        marian = MarianSinusoidalPositionalEmbedding(n_pos, dim).create_weight().numpy()
        np.testing.assert_allclose(
            marian, sinusoidal(n_pos, dim, layout="split"), rtol=0, atol=2 * EPS32
        )
        # M2M100 (fairseq): frequencies 10000**(-i/(h-1)), h = dim/2, that is the
        # base 10000**(h/(h-1)); rows numbered from padding_idx + 1. The table is
        # float32 arithmetic: angle errors up to (angle * (i * c + 4) + 1) EPS32,
        # c = ln(10000)/(h - 1).
        half = dim // 2
        module = M2M100SinusoidalPositionalEmbedding(n_pos, dim, padding_idx=1)
        ids = torch.full((1, n_pos), 5)
        want = module(ids).numpy()[0]
        base = 10_000.0 ** (half / (half - 1))
        rows = np.arange(2, 2 + n_pos)
        table = sinusoidal(2 + n_pos, dim, base, layout="split")[rows]
        angles = rows[:, None] * base ** (-2 * np.arange(half) / dim)
        c = math.log(10_000) / (half - 1)
        slack = (angles * (np.arange(half) * c + 4) + 2) * EPS32
        assert np.all(np.abs(table - want) <= np.hstack([slack, slack]))


def test_importing_posenc_loads_neither_torch_nor_transformers():
    import pkgutil

    import posenc

    names = [
        m.name for m in pkgutil.walk_packages(posenc.__path__, "posenc.")
        if m.name != "posenc.torch"
    ]
    code = (
        "import importlib, sys\n"
        "import posenc\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))\n"
        "print(len(bad))\n"
        "assert not bad, bad[:5]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0"
    assert len(names) > 10
