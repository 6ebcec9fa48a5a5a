r"""PyTorch modules for every position method of the course (chapter 8).

One function or module per method, each computed with the same float32
arithmetic as the Hugging Face ``transformers`` code a practitioner would
otherwise call, so that the two agree bit for bit (``tests/test_posenc_torch.py``
runs both). The references, read in ``transformers`` 5.x and re-written here:

* rotary frequencies: ``modeling_rope_utils.py``, ``ROPE_INIT_FUNCTIONS`` and
  ``dynamic_rope_update``; the default rule of
  ``LlamaRotaryEmbedding.compute_default_rope_parameters``
  (``models/llama/modeling_llama.py``);
* rotation: ``rotate_half``/``apply_rotary_pos_emb`` (Llama, GPT-NeoX's
  partial rotary) and ``rotate_every_two``/``apply_rotary_pos_emb`` (GPT-J);
* T5's buckets: ``T5Attention._relative_position_bucket`` (``models/t5``);
* ALiBi's slopes: ``_get_alibi_slopes``/``build_alibi_tensor`` (``models/bloom``).

``import posenc`` never imports this module; ``import posenc.torch`` does.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .encodings import sinusoidal
from .validation import check_choice, check_integer, check_real

__all__ = [
    "ROPE_LAYOUTS",
    "ROPE_TYPES",
    "ALiBiBias",
    "CausalLM",
    "CausalSelfAttention",
    "LearnedPositionalEmbedding",
    "NoPE",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "T5RelativeBias",
    "alibi_slopes",
    "apply_rotary",
    "restore_float32_rotary",
    "rope_inv_freq",
    "t5_relative_bucket",
]

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")
ROPE_LAYOUTS = ("halves", "interleaved")


def _key(scaling: dict, key: str, rope_type: str, default: Any = None, **bounds: Any) -> Any:
    # One entry of a rope_parameters dict, checked; `default` None means required.
    value = scaling.get(key)
    if value is None:
        if default is None:
            raise ValueError(f"scaling[{key!r}] is required for rope_type {rope_type!r}")
        return default
    return check_real(f"scaling[{key!r}]", value, **bounds)


def rope_inv_freq(
    head_dim: int,
    base: float = 10_000.0,
    *,
    partial_rotary_factor: float = 1.0,
    scaling: dict | None = None,
    seq_len: int | torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, float]:
    r"""Rotary inverse frequencies and attention scaling, as ``transformers`` computes them.

    ``inv_freq[i] = 1 / base ** (2i / r)`` in float32, with
    ``r = int(head_dim * partial_rotary_factor)`` the rotary width, then
    changed by the rule ``scaling["rope_type"]`` exactly as the function of
    that name in ``ROPE_INIT_FUNCTIONS`` (``transformers/modeling_rope_utils.py``).

    Parameters
    ----------
    head_dim : int
        Width of a head, ``>= 2``.
    base : float
        The rotary base ``rope_theta``, ``> 1``.
    partial_rotary_factor : float
        Fraction of the head that is rotated, in ``(0, 1]``; ``r`` must be even.
    scaling : dict, optional
        transformers' ``rope_parameters`` form: ``rope_type`` one of
        :data:`ROPE_TYPES`, and the keys that rule reads: ``factor`` (all but
        ``"default"``), ``max_position_embeddings`` (``"dynamic"``),
        ``original_max_position_embeddings`` (``"yarn"``, ``"llama3"``,
        ``"longrope"``), ``low_freq_factor``/``high_freq_factor``
        (``"llama3"``), ``beta_fast``, ``beta_slow``, ``mscale``,
        ``mscale_all_dim``, ``truncate`` (``"yarn"``), ``attention_factor``,
        ``short_factor``/``long_factor`` (``"longrope"``, ``r // 2`` each).
    seq_len : int or 0-d tensor, optional
        Current length, read by ``"dynamic"`` and ``"longrope"``. A tensor
        follows transformers' forward pass (float32 base), an int its init.
    device : torch.device or str, optional

    Returns
    -------
    (torch.Tensor, float)
        ``inv_freq`` of shape ``(r // 2,)``, float32, and the factor that
        multiplies cos and sin (1 except for ``"yarn"`` and ``"longrope"``).

    Examples
    --------
    >>> inv_freq, scale = rope_inv_freq(8, 100.0, scaling={"rope_type": "linear", "factor": 2.0})
    >>> inv_freq, scale
    (tensor([0.5000, 0.1581, 0.0500, 0.0158]), 1.0)
    """
    head_dim = check_integer("head_dim", head_dim, minimum=2)
    base = check_real("base", base, minimum=1.0)
    if base == 1.0:
        raise ValueError("base must be > 1, got 1.0")
    prf = check_real("partial_rotary_factor", partial_rotary_factor, positive=True, maximum=1.0)
    dim = int(head_dim * prf)
    if dim < 2 or dim % 2:
        raise ValueError(
            "int(head_dim * partial_rotary_factor) must be an even integer >= 2, "
            f"got int({head_dim} * {prf}) = {dim}"
        )
    scaling = {} if scaling is None else dict(scaling)
    kind = check_choice("scaling['rope_type']", scaling.get("rope_type", "default"), ROPE_TYPES)
    exponent = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim  # (r/2,)
    factor = 1.0
    if kind in ("yarn", "longrope") and scaling.get("factor") is None:  # DeepSeek, Phi-3
        mpe = _key(scaling, "max_position_embeddings", kind, minimum=1)
        factor = mpe / _key(scaling, "original_max_position_embeddings", kind, minimum=1)
    elif kind != "default":
        factor = _key(scaling, "factor", kind, minimum=1.0)
    if kind == "dynamic":
        if dim < 4:
            raise ValueError(f"the rotary width must be >= 4 for rope_type 'dynamic', got {dim}")
        mpe = int(_key(scaling, "max_position_embeddings", kind, minimum=1))
        if seq_len is None:
            seq_len = mpe
        elif isinstance(seq_len, torch.Tensor):
            seq_len = torch.maximum(seq_len, torch.tensor(mpe, dtype=seq_len.dtype))
        else:
            seq_len = max(check_integer("seq_len", seq_len, minimum=1), mpe)
        base = base * ((factor * seq_len / mpe) - (factor - 1)) ** (dim / (dim - 2))
    powers = base**exponent  # (r/2,), float32: base ** (2i / r)
    inv_freq = 1.0 / powers
    if kind == "linear":
        return inv_freq / factor, 1.0
    if kind == "llama3":
        old = _key(scaling, "original_max_position_embeddings", kind, minimum=1)
        low = _key(scaling, "low_freq_factor", kind, positive=True)
        high = _key(scaling, "high_freq_factor", kind, positive=True)
        if not high > low:
            raise ValueError(f"scaling['high_freq_factor'] must be > low_freq_factor, got {high}")
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) * ~(wavelen > old / low)
        return torch.where(medium, smoothed, scaled), 1.0
    if kind == "yarn":
        return _yarn(scaling, powers, dim, base, factor, device)
    if kind == "longrope":
        old = _key(scaling, "original_max_position_embeddings", kind, minimum=1)
        attention = scaling.get("attention_factor")
        if attention is None:
            attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(old))
        long = bool(seq_len) and seq_len > old
        name = "long_factor" if long else "short_factor"
        ext = torch.tensor(scaling.get(name, ()), dtype=torch.float32, device=device)
        if ext.shape != inv_freq.shape:
            raise ValueError(f"scaling[{name!r}] must hold {dim // 2} numbers, got {ext.shape}")
        return 1.0 / (ext * powers), float(attention)
    return inv_freq, 1.0


def _yarn(scaling, powers, dim, base, factor, device):
    # transformers' _compute_yarn_parameters: a linear ramp over the pair index
    # blends extrapolation (inv_freq) and interpolation (inv_freq / factor).
    original = _key(scaling, "original_max_position_embeddings", "yarn", minimum=1)

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = scaling.get("attention_factor")
    if attention is None:
        m, m_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        attention = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)
    fast, slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

    def pair(rotations):  # the pair index that turns `rotations` times in `original`
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair(fast), pair(slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    keep = 1 - ramp.to(device=device)  # (r/2,): 1 keeps inv_freq, 0 divides it by factor
    blended = 1.0 / (factor * powers) * (1 - keep) + 1.0 / powers * keep
    return blended, float(attention)


def apply_rotary(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str = "halves"
) -> torch.Tensor:
    r"""Rotate the first ``r = cos.shape[-1]`` columns of ``x``; the rest pass through.

    ``x * cos + rotated(x) * sin``, the arithmetic of transformers'
    ``apply_rotary_pos_emb``: with ``layout="halves"`` pair ``i`` is columns
    ``(i, i + r/2)`` (``rotate_half``, Llama and GPT-NeoX), with
    ``"interleaved"`` columns ``(2i, 2i + 1)`` (``rotate_every_two``, GPT-J).

    Parameters
    ----------
    x : torch.Tensor
        ``(..., length, head_dim)``.
    cos, sin : torch.Tensor
        ``(..., length, r)`` broadcastable to ``x[..., :r]``, ``r <= head_dim``
        even, in ``layout`` (as :meth:`RotaryEmbedding.cos_sin` returns them).
    layout : {"halves", "interleaved"}

    Returns
    -------
    torch.Tensor
        Shape and dtype of ``x``.
    """
    layout = check_choice("layout", layout, ROPE_LAYOUTS)
    r = cos.shape[-1]
    if cos.shape != sin.shape or r % 2 or r > x.shape[-1]:
        raise ValueError(
            f"cos and sin must have one shape (..., length, r) with r even and <= {x.shape[-1]}"
            f" (the last axis of x), got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    x_rot, x_pass = x[..., :r], x[..., r:]
    if layout == "halves":
        rotated = torch.cat((-x_rot[..., r // 2 :], x_rot[..., : r // 2]), dim=-1)
    else:
        rotated = torch.stack((-x_rot[..., 1::2], x_rot[..., 0::2]), dim=-1).flatten(-2)
    return torch.cat(((x_rot * cos) + (rotated * sin), x_pass), dim=-1)


def _check_positions(position_ids: Any) -> torch.Tensor:
    if not isinstance(position_ids, torch.Tensor) or position_ids.is_floating_point():
        raise TypeError(f"position_ids must be an integer tensor, got {position_ids!r:.60}")
    if position_ids.ndim not in (1, 2):
        shape = tuple(position_ids.shape)
        raise ValueError(f"position_ids must have shape (length,) or (batch, length), got {shape}")
    return position_ids


class RotaryEmbedding(nn.Module):
    r"""Rotary position embedding of queries and keys, any scaling rule, either layout.

    The frequencies come from :func:`rope_inv_freq`; ``"dynamic"`` and
    ``"longrope"`` pick theirs from ``seq_len = max(position_ids) + 1`` at
    each call, as transformers' ``dynamic_rope_update``, but without its
    cache: a call's result depends on that call's positions only (the same
    as transformers for a fresh module or lengths that only grow).

    Parameters
    ----------
    head_dim : int
        Width of a head.
    base : float
        The rotary base.
    layout : {"halves", "interleaved"}
        ``"halves"``: pairs ``(i, i + r/2)`` (transformers, GPT-NeoX, Llama on
        the Hub); ``"interleaved"``: pairs ``(2i, 2i + 1)`` (Meta's Llama,
        GPT-J, RoFormer).
    partial_rotary_factor : float
        Fraction of the head that is rotated, as GPT-NeoX.
    scaling : dict, optional
        As :func:`rope_inv_freq`.
    max_position_embeddings : int, optional
        Added to ``scaling`` (``"dynamic"`` needs it).

    Examples
    --------
    >>> rope = RotaryEmbedding(8)
    >>> q = k = torch.ones(1, 2, 5, 8)  # (batch, heads, length, head_dim)
    >>> q_rot, k_rot = rope(q, k, torch.arange(5))
    >>> q_rot.shape
    torch.Size([1, 2, 5, 8])
    """

    def __init__(
        self,
        head_dim: int,
        base: float = 10_000.0,
        *,
        layout: str = "halves",
        partial_rotary_factor: float = 1.0,
        scaling: dict | None = None,
        max_position_embeddings: int | None = None,
    ) -> None:
        super().__init__()
        self.layout = check_choice("layout", layout, ROPE_LAYOUTS)
        self.head_dim, self.base, self.partial_rotary_factor = head_dim, base, partial_rotary_factor
        self.scaling = None if scaling is None else dict(scaling)
        if self.scaling is not None and max_position_embeddings is not None:
            self.scaling.setdefault("max_position_embeddings", max_position_embeddings)
        inv_freq, self.attention_scaling = self._inv_freq(None)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (r/2,)
        self.rotary_dim = 2 * inv_freq.numel()

    def _inv_freq(self, seq_len):
        return rope_inv_freq(
            self.head_dim,
            self.base,
            partial_rotary_factor=self.partial_rotary_factor,
            scaling=self.scaling,
            seq_len=seq_len,
        )

    @classmethod
    def from_config(
        cls, config: Any, *, layout: str = "halves", layer_type: str | None = None
    ) -> RotaryEmbedding:
        """The rotary embedding of a transformers config (``LlamaConfig``, ``GPTNeoXConfig``...).

        Configs that hold one ``rope_parameters`` dict per layer type (Gemma 3:
        ``"sliding_attention"`` and ``"full_attention"``) need ``layer_type``,
        the key of the dict to use; a ``ValueError`` names the keys otherwise.
        """
        params = dict(getattr(config, "rope_parameters", None) or {})
        per_type = sorted(k for k, v in params.items() if isinstance(v, dict))
        if per_type:
            if layer_type not in per_type:
                raise ValueError(
                    "this config holds one rope_parameters dict per layer type "
                    f"({', '.join(per_type)}): pass layer_type= one of them, "
                    f"got {layer_type!r}"
                )
            params = dict(params[layer_type])
        elif layer_type is not None:
            raise ValueError(
                f"layer_type={layer_type!r} given, but this config holds a single "
                "rope_parameters dict: leave layer_type out"
            )
        base = params.pop("rope_theta", getattr(config, "rope_theta", 10_000.0))
        prf = params.pop("partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0))
        head_dim = getattr(config, "head_dim", None)
        head_dim = head_dim or config.hidden_size // config.num_attention_heads
        scaling = None if params.get("rope_type", "default") == "default" else params
        return cls(
            head_dim,
            base,
            layout=layout,
            partial_rotary_factor=prf,
            scaling=scaling,
            max_position_embeddings=getattr(config, "max_position_embeddings", None),
        )

    def cos_sin(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cos, sin)``, each ``(..., length, r)`` float32, in the module's layout.

        ``position_ids``: ``(length,)`` or ``(batch, length)`` integers.
        Both are multiplied by the attention scaling, as in transformers.
        """
        position_ids = _check_positions(position_ids)
        inv_freq, scale = self.inv_freq, self.attention_scaling
        kind = (self.scaling or {}).get("rope_type")
        if kind in ("dynamic", "longrope") and position_ids.numel():
            seq_len = position_ids.max() + 1
            prefix = "" if kind == "dynamic" else "original_"
            limit = self.scaling.get(prefix + "max_position_embeddings")
            if seq_len > limit:
                inv_freq, _ = self._inv_freq(seq_len if kind == "dynamic" else limit + 1)
                inv_freq = inv_freq.to(self.inv_freq.device)
        freqs = position_ids[..., None].float() * inv_freq.float()  # (..., length, r/2)
        if self.layout == "halves":
            emb = torch.cat((freqs, freqs), dim=-1)
        else:
            emb = freqs.repeat_interleave(2, dim=-1)  # (..., length, r)
        return emb.cos() * scale, emb.sin() * scale

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, position_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate ``q`` and ``k``, ``(batch, heads, length, head_dim)``, by their positions."""
        cos, sin = self.cos_sin(position_ids)
        cos, sin = cos.unsqueeze(-3).to(q.dtype), sin.unsqueeze(-3).to(q.dtype)  # heads axis
        return apply_rotary(q, cos, sin, layout=self.layout), apply_rotary(
            k, cos, sin, layout=self.layout
        )


def restore_float32_rotary(model: nn.Module) -> list[str]:
    """Rebuild every ``transformers`` rotary module of ``model`` in float32; return their names.

    ``model.to(torch.bfloat16)`` (or ``.half()``, ``.bfloat16()``) casts every
    floating buffer, the rotary ``inv_freq`` and ``original_inv_freq``
    included; ``from_pretrained(..., dtype=...)`` does not. Each module whose
    class name ends in ``RotaryEmbedding`` and that keeps a ``config`` is
    replaced by ``type(module)(module.config)`` on the same device: its own
    rule (any ``rope_type``, partial rotary, one set per layer type as Gemma 3)
    computes every ``*inv_freq`` buffer again in float32. Overwriting
    ``inv_freq`` alone would not last: ``dynamic`` and ``longrope`` copy the
    cast ``original_inv_freq`` back into it.

    The module is built from the config as it is now: edit a config before
    building the model, not after.
    """
    rebuilt = []
    for name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if not (type(child).__name__.endswith("RotaryEmbedding") and hasattr(child, "config")):
                continue
            fresh = type(child)(child.config)
            device = next(child.buffers(), None)
            if device is not None:
                fresh = fresh.to(device.device)
            setattr(parent, child_name, fresh)
            rebuilt.append(f"{name}.{child_name}" if name else child_name)
    return rebuilt


class _AddedPosition(nn.Module):
    # Shared forward of the codes added to the input: dropout(x + code[positions]).
    def __init__(self, max_len: int, dropout: float) -> None:
        super().__init__()
        self.max_len = check_integer("max_len", max_len, minimum=1)
        self.dropout = nn.Dropout(check_real("dropout", dropout, minimum=0.0, maximum=1.0))

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: ``(batch, length, d_model)``; positions ``(length,)`` or ``(batch, length)``."""
        if position_ids is None:
            position_ids = torch.arange(x.shape[-2], device=x.device)
        position_ids = _check_positions(position_ids)
        low, high = (position_ids.min(), position_ids.max()) if position_ids.numel() else (0, 0)
        if not 0 <= low <= high < self.max_len:
            raise ValueError(f"position_ids must lie in [0, {self.max_len - 1}] (max_len - 1)")
        return self.dropout(x + self.code(position_ids))


class SinusoidalPositionalEncoding(_AddedPosition):
    """The sinusoidal code of Vaswani et al. added to the input (sin at even, cos at odd columns).

    The buffer ``table`` ``(max_len, d_model)`` is :func:`posenc.sinusoidal`
    (float64) cast to float32; it follows ``.to()``.

    Examples
    --------
    >>> pe = SinusoidalPositionalEncoding(4, max_len=16)
    >>> pe(torch.zeros(2, 3, 4))[0, 1]  # row 1 of the table
    tensor([0.8415, 0.5403, 0.0100, 0.9999])
    """

    def __init__(self, d_model: int, max_len: int, base: float = 10_000.0, dropout: float = 0.0):
        super().__init__(max_len, dropout)
        table = sinusoidal(self.max_len, d_model, base)  # (max_len, d_model), float64
        self.register_buffer("table", torch.from_numpy(table).float())

    def code(self, position_ids: torch.Tensor) -> torch.Tensor:
        return self.table[position_ids]


class LearnedPositionalEmbedding(_AddedPosition):
    """A learned vector per position (``nn.Embedding(max_len, d_model)``) added to the input."""

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0):
        super().__init__(max_len, dropout)
        self.code = nn.Embedding(self.max_len, check_integer("d_model", d_model, minimum=1))


def alibi_slopes(n_heads: int) -> torch.Tensor:
    r"""ALiBi's slope per head, ``(n_heads,)`` float32, as Bloom computes them.

    For ``p`` the largest power of two ``<= n_heads``: the powers
    :math:`(2^{-8/p})^h`, ``h = 1..p``, then the odd powers
    :math:`(2^{-4/p})^h`, ``h = 1, 3, ...``, for the remaining heads; each a
    float32 ``torch.pow`` of a float32 base (transformers,
    ``models/bloom/modeling_bloom.py``, ``_get_alibi_slopes``).

    Examples
    --------
    >>> alibi_slopes(4) * 256
    tensor([64., 16.,  4.,  1.])
    """
    n_heads = check_integer("n_heads", n_heads, minimum=1)
    p = 1 << (n_heads.bit_length() - 1)
    first = torch.tensor(2.0 ** (-8.0 / p), dtype=torch.float32)
    extra = torch.tensor(2.0 ** (-4.0 / p), dtype=torch.float32)
    return torch.cat(
        (
            torch.pow(first, torch.arange(1, p + 1, dtype=torch.int32)),
            torch.pow(extra, torch.arange(1, 1 + 2 * (n_heads - p), 2, dtype=torch.int32)),
        )
    )


def _query_key_offsets(query_len: int, key_len: int | None) -> torch.Tensor:
    # (query_len, key_len) offsets j - i, the queries being the last query_len keys.
    query_len = check_integer("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_integer("key_len", key_len, minimum=query_len)
    keys = torch.arange(key_len)
    return keys[None, :] - keys[key_len - query_len :, None]


class ALiBiBias(nn.Module):
    """ALiBi's bias ``-slope * |i - j|``, ``(n_heads, query_len, key_len)``.

    Add it to the scores, then mask keys after the query (the entries there
    are mirrored, not masked). Bloom adds ``slope * j`` instead, which differs
    by ``slope * i`` within row ``i``: the same softmax.

    Examples
    --------
    >>> ALiBiBias(1)(2, 3) * 2**8  # queries at positions 1 and 2 of 3 keys
    tensor([[[-1.,  0., -1.],
             [-2., -1.,  0.]]])
    """

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)  # (n_heads,)

    def forward(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        distance = _query_key_offsets(query_len, key_len).abs().to(self.slopes)
        return -self.slopes[:, None, None] * distance  # (n_heads, query_len, key_len)


def t5_relative_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    r"""T5's bucket of each offset ``key - query``, a LongTensor of the same shape.

    The float32 arithmetic of transformers' ``T5Attention._relative_position_bucket``
    (``models/t5/modeling_t5.py``): exact buckets for distances below
    ``max_exact = half // 2`` (``half = num_buckets // 2`` if bidirectional,
    else ``num_buckets``), logarithmic ones up to ``max_distance``.
    ``num_buckets >= 4`` if bidirectional (else ``>= 2``);
    ``max_distance > max_exact``.

    Examples
    --------
    >>> t5_relative_bucket(torch.tensor([-1, 0, 1, 8, 16, 127, 128, 1000]))
    tensor([ 1,  0, 17, 24, 26, 31, 31, 31])
    """
    if not isinstance(relative_position, torch.Tensor) or relative_position.is_floating_point():
        raise TypeError("relative_position must be an integer tensor")
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be True or False, got {bidirectional!r}")
    num_buckets = check_integer("num_buckets", num_buckets, minimum=4 if bidirectional else 2)
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    max_distance = check_integer("max_distance", max_distance, minimum=max_exact + 1)
    relative_position = relative_position.long()
    if bidirectional:
        buckets = (relative_position > 0).long() * half
        distance = relative_position.abs()
    else:
        buckets = torch.zeros_like(relative_position)
        distance = -torch.clamp(relative_position, max=0)
    scaled = (
        torch.log(distance.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (half - max_exact)
    )
    large = torch.clamp(max_exact + scaled.to(torch.long), max=half - 1)
    return buckets + torch.where(distance < max_exact, distance, large)


class T5RelativeBias(nn.Module):
    """T5's learned bias per head and bucket, ``(n_heads, query_len, key_len)``.

    The queries are the last ``query_len`` of ``key_len`` positions; the bias
    table is ``self.relative_attention_bias``, ``nn.Embedding(num_buckets, n_heads)``.
    """

    def __init__(
        self,
        n_heads: int,
        *,
        num_buckets: int = 32,
        max_distance: int = 128,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        self.bucket_args = dict(
            bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
        )
        t5_relative_bucket(torch.zeros(1, dtype=torch.long), **self.bucket_args)  # checks them
        n_heads = check_integer("n_heads", n_heads, minimum=1)
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def forward(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        offsets = _query_key_offsets(query_len, key_len)
        offsets = offsets.to(self.relative_attention_bias.weight.device)
        buckets = t5_relative_bucket(offsets, **self.bucket_args)  # (query_len, key_len)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)


class NoPE(nn.Module):
    """No position information: the identity (a causal mask still leaks position)."""

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        return x


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with the position method plugged in.

    Parameters
    ----------
    d_model, n_heads : int
        ``d_model`` a multiple of ``n_heads``.
    position : {"rope", "alibi", "t5", "nope"}
        RoPE rotates queries and keys; ALiBi and T5 (causal buckets) add a
        bias to the scores; NoPE does nothing. Every method keeps the
        ``1/sqrt(head_dim)`` of scaled dot-product attention, so ``"t5"`` is
        T5's bias, not T5's unscaled score.
    rope : RotaryEmbedding or dict, optional
        The rotary module, or keyword arguments for one of width
        ``d_model // n_heads``.

    Examples
    --------
    >>> attn = CausalSelfAttention(16, 4, position="alibi")
    >>> attn(torch.randn(2, 5, 16)).shape  # (batch, length, d_model)
    torch.Size([2, 5, 16])
    """

    POSITIONS = ("rope", "alibi", "t5", "nope")

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        position: str = "rope",
        rope: RotaryEmbedding | dict | None = None,
    ) -> None:
        super().__init__()
        d_model = check_integer("d_model", d_model, minimum=1)
        self.n_heads = check_integer("n_heads", n_heads, minimum=1, maximum=d_model)
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads ({n_heads}), got {d_model}")
        self.position = check_choice("position", position, self.POSITIONS)
        head_dim = d_model // n_heads
        if position == "rope" and not isinstance(rope, RotaryEmbedding):
            rope = RotaryEmbedding(head_dim, **(rope or {}))
        if position == "rope" and rope.head_dim != head_dim:
            raise ValueError(f"rope.head_dim must be d_model // n_heads = {head_dim}")
        self.pe = {  # the position method
            "rope": lambda: rope,
            "alibi": lambda: ALiBiBias(n_heads),
            "t5": lambda: T5RelativeBias(n_heads, bidirectional=False),
            "nope": NoPE,
        }[position]()
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: ``(batch, length, d_model)``; ``position_ids`` (read by RoPE only) as in it."""
        batch, length, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        mask = None  # (batch, heads, length, length) after broadcasting
        if self.position == "rope":
            if position_ids is None:
                position_ids = torch.arange(length, device=x.device)
            q, k = self.pe(q, k, position_ids)
        elif self.position in ("alibi", "t5"):
            future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
            mask = self.pe(length).to(q.dtype).masked_fill(future, float("-inf"))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        return self.out(y.transpose(1, 2).reshape(batch, length, d_model))


class _Block(nn.Module):
    # A pre-norm transformer block: x + attention(norm(x)), then x + MLP(norm(x)).
    def __init__(self, d_model: int, n_heads: int, position: str, rope: dict) -> None:
        super().__init__()
        attention_position = position if position in CausalSelfAttention.POSITIONS else "nope"
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, position=attention_position, rope=rope)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), position_ids)
        return x + self.mlp(self.norm2(x))


class CausalLM(nn.Module):
    """A small decoder-only language model with any position method of the course.

    Token embedding, ``n_layers`` pre-norm blocks (causal self-attention, then
    a 4x GELU MLP), a final layer norm and an untied output layer.

    Parameters
    ----------
    vocab_size, d_model, n_heads, n_layers : int
        ``d_model`` a multiple of ``n_heads``.
    position : {"nope", "sinusoidal", "learned", "rope", "alibi", "t5"}
        Sinusoidal and learned codes are added to the token embeddings (at
        most ``max_len`` positions); the others act inside every attention
        layer (:class:`CausalSelfAttention`).
    max_len : int
        Rows of the sinusoidal or learned table; ignored by the others.
    base : float
        The rotary base.

    Examples
    --------
    >>> model = CausalLM(256, 32, 2, 2, position="alibi")
    >>> model(torch.zeros(3, 10, dtype=torch.long)).shape  # (batch, length, vocab)
    torch.Size([3, 10, 256])
    """

    POSITIONS = ("nope", "sinusoidal", "learned", "rope", "alibi", "t5")

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        *,
        position: str = "rope",
        max_len: int = 1024,
        base: float = 10_000.0,
    ) -> None:
        super().__init__()
        self.position = check_choice("position", position, self.POSITIONS)
        self.vocab_size = check_integer("vocab_size", vocab_size, minimum=1)
        n_layers = check_integer("n_layers", n_layers, minimum=1)
        self.embed = nn.Embedding(vocab_size, check_integer("d_model", d_model, minimum=1))
        self.added = {
            "sinusoidal": lambda: SinusoidalPositionalEncoding(d_model, max_len, base),
            "learned": lambda: LearnedPositionalEmbedding(max_len, d_model),
        }.get(position, NoPE)()
        rope = {"base": check_real("base", base, minimum=1.0)}
        self.blocks = nn.ModuleList(
            _Block(d_model, n_heads, position, rope) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def set_rotary(self, rope: RotaryEmbedding) -> None:
        """Use ``rope`` (for example a scaled :class:`RotaryEmbedding`) in every layer."""
        if self.position != "rope":
            raise ValueError(f"set_rotary needs position='rope', this model has {self.position!r}")
        if not isinstance(rope, RotaryEmbedding):
            raise TypeError(f"rope must be a RotaryEmbedding, got {type(rope).__name__}")
        for block in self.blocks:
            if rope.head_dim != block.attn.pe.head_dim:
                raise ValueError(f"rope.head_dim must be {block.attn.pe.head_dim}")
            block.attn.pe = rope

    def forward(self, ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, length, vocab_size)`` for token ids ``(batch, length)``."""
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (batch, length), got {tuple(ids.shape)}")
        x = self.added(self.embed(ids), position_ids)
        for block in self.blocks:
            x = block(x, position_ids)
        return self.head(self.norm(x))
