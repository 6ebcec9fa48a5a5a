r"""A small causal transformer with six ways to supply position (chapter 7).

This module extends the model of :mod:`posenc.model` from one bidirectional
attention head that classifies a whole sequence to a causal language-model
style network that answers at every position, so that a model trained on
sequences of length ``L`` can be run on longer ones. It keeps the habits of
:mod:`posenc.model` and imports its pieces rather than copying them:

* independent copies of the model (one per seed) are stacked along a leading
  axis and trained together, each with its own initialisation
  (``numpy.random.default_rng([0, seed])``), its own data and its own
  optimiser state (:class:`posenc.model.Adam`, which updates every entry on
  its own);
* the seeds and token arrays are checked by :func:`posenc.model.check_seeds`
  and :func:`posenc.model.check_index_array`, every other argument by
  :mod:`posenc.validation`;
* gradients are checked against central finite differences
  (:func:`gradient_check`, the one of :mod:`posenc.model`, from
  :mod:`posenc.stacked`);
* the ALiBi slopes, the T5 buckets and the rotation are chapter 6's
  (:func:`posenc.biases.alibi_slopes`, :func:`posenc.biases.t5_relative_bucket`,
  :func:`posenc.rotary.rotate_pairs`).

What is new is the depth and the position methods; the gradients are still
written out by hand (:meth:`CausalTransformer._loss_and_gradients`): one
backward pass for the shared attention block, with a small step for each
method's own parameters (the added table, the rotation, the T5 table). A
first version differentiated the same forward pass with the ``autograd``
package; its bookkeeping cost three times the arithmetic at this size, and
the hand-written pass, checked against finite differences on every entry of
every parameter (``tests/test_transformer.py``), replaced it.

The network, for tokens ``(batch, L)`` and model width :math:`d`:

1. :math:`x_t = E[\text{token}_t]` (+ :math:`p_t`, the sinusoidal or learned
   code, for ``position="sinusoidal"`` / ``"learned"``);
2. ``n_layers`` times, a residual block
   :math:`x \leftarrow x + W_O\,\mathrm{concat}_h(\mathrm{softmax}(S_h + M) V_h)`
   with ``n_heads`` heads of width :math:`d_h = d / H`, scores
   :math:`S_h = c\,Q_h K_h^\top / \sqrt{d_h} + B_h`, and the causal mask
   :math:`M` (:math:`-\infty` above the diagonal);
3. a linear read-out at every position, trained with the mean softmax
   cross-entropy over the scored positions.

Position enters in one of six ways (``POSITION_METHODS``):

* ``"nope"``: nowhere; only the causal mask breaks the symmetry;
* ``"sinusoidal"`` / ``"learned"``: added to the input (the learned table has
  ``max_length`` rows, so the model cannot run on longer sequences);
* ``"rope"``: queries and keys of every head rotated pair by pair
  (interleaved pairs ``(2i, 2i+1)``, angle :math:`t\,\theta_i`); the
  frequencies can be replaced at run time (:mod:`posenc.scaling`) and
  :math:`c` is YaRN's temperature;
* ``"alibi"``: :math:`B_h[i, j] = -m_h (i - j)` with the geometric slopes of
  Press et al. (2022);
* ``"t5"``: :math:`B_h[i, j]` a learned scalar per head and causal T5 bucket
  of the offset :math:`i - j` (the score keeps the :math:`1/\sqrt{d_h}` of the
  other methods, which T5 itself leaves out).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .biases import alibi_slopes, t5_relative_bucket
from .encodings import frequencies as rotary_frequencies
from .encodings import sinusoidal
from .lengthtasks import LengthBatch, make_length_batch
from .model import Adam, _log_softmax_last, _softmax_last, check_index_array, check_seeds
from .rotary import rotate_pairs
from .stacked import StackedModel, gradient_check
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "POSITION_METHODS",
    "CausalTransformer",
    "gradient_check",
    "t5_causal_bucket",
    "train_causal",
]

POSITION_METHODS = ("nope", "sinusoidal", "learned", "rope", "alibi", "t5")


def t5_causal_bucket(distance: Any, *, num_buckets: int = 16, max_distance: int = 64) -> np.ndarray:
    """T5's unidirectional bucket of a causal distance ``i - j >= 0``.

    :func:`posenc.biases.t5_relative_bucket` of the offset ``j - i`` with
    ``bidirectional=False``: half the buckets are exact (distances
    ``0 .. num_buckets/2 - 1``), the other half log-spaced up to
    ``max_distance``; every larger distance shares the last bucket, and
    negative distances (future keys, masked anyway) fall into bucket 0.

    Examples
    --------
    >>> t5_causal_bucket(np.array([0, 1, 7, 8, 15, 16, 63, 64, 1000]))
    array([ 0,  1,  7,  8, 10, 10, 15, 15, 15])
    """
    return t5_relative_bucket(
        -np.asarray(distance),
        bidirectional=False,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )


class CausalTransformer(StackedModel):
    r"""Embedding, causal multi-head attention layers with residuals, a read-out per position.

    Parameters
    ----------
    vocab_size : int
        Number of input symbols ``V``, ``>= 2``.
    n_classes : int, optional
        Number of answers per position ``C`` (default ``vocab_size``).
    d_model : int
        Width :math:`d` of the residual stream, a multiple of ``n_heads``.
    n_heads : int
        Heads per layer, ``>= 1``; the head width ``d_model / n_heads`` must
        be even for ``"rope"``.
    n_layers : int
        Attention layers, ``>= 1``.
    position : {"nope", "sinusoidal", "learned", "rope", "alibi", "t5"}
        How position enters (module docstring).
    max_length : int, optional
        Rows of the learned table (``position="learned"`` only, required there).
    base : float
        Base of the sinusoidal code and of the rotary frequencies.
    t5_buckets, t5_max_distance : int
        The causal T5 buckets (:func:`t5_causal_bucket`).
    seeds : int or sequence of int
        One seed per stacked copy.
    dtype : {"float64", "float32"}
        Floating-point type of the parameters and of every computation. The
        default, float64, is the one the gradient check needs; float32 trains
        about twice as fast (the experiment of chapter 7 uses it). The
        initial weights are drawn in float64 and rounded, so both start
        from the same numbers.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        Every array has a leading axis of length ``n_models``:
        ``token_embedding`` ``(M, V, d)``, ``position_embedding``
        ``(M, max_length, d)`` (learned only), per layer ``l``
        ``w_q_l``, ``w_k_l``, ``w_v_l`` and ``w_o_l`` ``(M, d, d)`` and ``t5_bias_l``
        ``(M, H, buckets)`` (T5 only), ``w_out`` ``(M, d, C)``, ``b_out`` ``(M, C)``.

    Examples
    --------
    >>> model = CausalTransformer(8, d_model=16, n_heads=2, position="rope", seeds=(0, 1))
    >>> model.logits(np.zeros((3, 5), dtype=int)).shape  # (n_models, batch, L, C)
    (2, 3, 5, 8)
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        n_classes: int | None = None,
        d_model: int = 32,
        n_heads: int = 4,
        n_layers: int = 2,
        position: str = "rope",
        max_length: int | None = None,
        base: float = 10_000.0,
        t5_buckets: int = 16,
        t5_max_distance: int = 64,
        seeds: int | Sequence[int] = 0,
        dtype: str = "float64",
    ) -> None:
        self.vocab_size = check_integer("vocab_size", vocab_size, minimum=2)
        self.n_classes = check_integer(
            "n_classes", self.vocab_size if n_classes is None else n_classes, minimum=2
        )
        self.n_heads = check_integer("n_heads", n_heads, minimum=1)
        self.d_model = check_integer("d_model", d_model, minimum=self.n_heads)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be a multiple of n_heads ({self.n_heads}), got {self.d_model}"
            )
        self.d_head = self.d_model // self.n_heads
        self.n_layers = check_integer("n_layers", n_layers, minimum=1)
        self.position = check_choice("position", position, POSITION_METHODS)
        self.base = check_real("base", base, positive=True)
        if self.position == "rope" and self.d_head % 2:
            raise ValueError(
                f"the head width d_model / n_heads must be even for rope, got {self.d_head}"
            )
        if self.position == "learned":
            if max_length is None:
                raise ValueError("max_length (an int >= 1) is required for position 'learned'")
            self.max_length: int | None = check_integer("max_length", max_length, minimum=1)
        elif max_length is not None:
            raise ValueError("max_length is only used by position 'learned'")
        else:
            self.max_length = None
        self.t5_buckets = check_integer("t5_buckets", t5_buckets, minimum=2)
        self.t5_max_distance = check_integer(
            "t5_max_distance", t5_max_distance, minimum=self.t5_buckets // 2 + 1
        )
        self.seeds = check_seeds(seeds)
        self.dtype = np.dtype(check_choice("dtype", str(dtype), ("float64", "float32")))
        self.slopes = alibi_slopes(self.n_heads)
        members = [self._init_one(np.random.default_rng([0, s])) for s in self.seeds]
        self.params = {
            name: np.stack([m[name] for m in members]).astype(self.dtype) for name in members[0]
        }

    def _init_one(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        d = self.d_model
        params = {"token_embedding": rng.normal(size=(self.vocab_size, d))}
        if self.position == "learned":
            params["position_embedding"] = rng.normal(
                scale=1 / math.sqrt(2), size=(self.max_length, d)
            )
        for layer in range(self.n_layers):
            for name in "qkv":
                params[f"w_{name}_{layer}"] = rng.normal(scale=1 / math.sqrt(d), size=(d, d))
            params[f"w_o_{layer}"] = rng.normal(scale=1 / math.sqrt(d), size=(d, d))
            if self.position == "t5":
                params[f"t5_bias_{layer}"] = np.zeros((self.n_heads, self.t5_buckets))
        params["w_out"] = rng.normal(scale=1 / math.sqrt(d), size=(d, self.n_classes))
        params["b_out"] = np.zeros(self.n_classes)
        return params

    def _gradient_parts(self, batch: LengthBatch) -> tuple[dict[str, np.ndarray], Any]:
        """For :func:`gradient_check`: the gradients on ``batch``, and the summed loss."""
        if not isinstance(batch, LengthBatch):
            raise TypeError(f"batch must be a LengthBatch, got {type(batch).__name__}")
        self._check_tokens(batch.tokens)
        _, grads = self.loss_and_gradients(batch)
        return grads, lambda: float(self.losses(batch).sum())

    def subset(self, copies: Sequence[int], *, seeds: Sequence[int] | None = None):
        """A new model made of copies ``copies`` of this one, parameters copied.

        A copy may be taken more than once (to try several learning rates
        from the same trained weights); ``seeds`` then gives each new copy its
        own label, which :func:`train_causal` uses to seed its data (distinct
        integers ``>= 0``, one per entry of ``copies``; default the copies'
        own seeds).

        Examples
        --------
        >>> model = CausalTransformer(8, d_model=8, n_heads=2, seeds=(0, 1))
        >>> twice = model.subset([1, 1], seeds=(10, 11))
        >>> twice.seeds, bool((twice.params["w_out"][0] == model.params["w_out"][1]).all())
        ((10, 11), True)
        """
        if isinstance(copies, (str, bytes)) or not isinstance(copies, Sequence | np.ndarray):
            raise TypeError(f"copies must be a sequence of ints, got {type(copies).__name__}")
        index = [
            check_integer("copies[...]", c, minimum=0, maximum=self.n_models - 1) for c in copies
        ]
        if not index:
            raise ValueError("copies must name at least one copy")
        labels = check_seeds(tuple(self.seeds[i] for i in index) if seeds is None else seeds)
        if len(labels) != len(index):
            raise ValueError(f"seeds must hold one seed per copy ({len(index)}), got {len(labels)}")
        new = copy.copy(self)
        new.params = {name: value[index].copy() for name, value in self.params.items()}
        new.seeds = labels
        return new

    def __repr__(self) -> str:
        return (
            f"CausalTransformer(position={self.position!r}, d_model={self.d_model}, "
            f"n_heads={self.n_heads}, n_layers={self.n_layers}, "
            f"n_parameters={self.n_parameters}, n_models={self.n_models})"
        )

    # -- forward -----------------------------------------------------------------------

    def _check_tokens(self, tokens: Any) -> np.ndarray:
        tokens = check_index_array("tokens", tokens, ndim=(2, 3), upper=self.vocab_size)
        if tokens.ndim == 3 and tokens.shape[0] != self.n_models:
            raise ValueError(
                f"tokens must have shape (batch, L) or ({self.n_models}, batch, L), "
                f"got {tokens.shape}"
            )
        if tokens.shape[-1] < 1 or tokens.shape[-2] < 1:
            raise ValueError(
                f"tokens must hold at least one position and sequence, got {tokens.shape}"
            )
        length = tokens.shape[-1]
        if self.position == "learned" and length > self.max_length:
            raise ValueError(
                f"a learned position table has {self.max_length} rows, so tokens can have at "
                f"most {self.max_length} positions, got {length}: there is no code to add "
                "at the later positions"
            )
        return np.broadcast_to(tokens, (self.n_models, *tokens.shape[-2:]))

    def _rope_tables(self, length: int, freqs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if freqs is None:
            freqs = rotary_frequencies(self.d_head, self.base)
        freqs = check_array("frequencies", freqs, ndim=1)
        if freqs.shape != (self.d_head // 2,):
            raise ValueError(
                f"frequencies must have shape ({self.d_head // 2},), got {freqs.shape}"
            )
        angles = np.arange(length, dtype=np.float64)[:, None] * freqs[None, :]
        return np.cos(angles), np.sin(angles)

    def _forward(
        self,
        params: dict[str, np.ndarray],
        tokens: np.ndarray,
        freqs: np.ndarray | None = None,
        logit_scale: float = 1.0,
        keep: list | None = None,
    ) -> np.ndarray:
        """Logits ``(M, batch, L, C)`` for checked tokens ``(M, batch, L)``.

        With ``keep`` (a list), what the backward pass needs is appended to it.
        Every product with a weight matrix is one matmul per copy over all
        ``batch * L`` positions, ``(M, batch * L, d) @ (M, d, d)``.
        """
        m, batch, length = tokens.shape
        h, dh, n = self.n_heads, self.d_head, batch * length
        x = np.take_along_axis(
            params["token_embedding"], tokens.reshape(m, n, 1), axis=1
        )  # (M, batch * L, d), a gather: each position's token row
        if self.position == "sinusoidal":
            table = sinusoidal(length, self.d_model, self.base).astype(self.dtype)
            x = x + np.tile(table, (batch, 1))
        elif self.position == "learned":
            x = x + np.tile(params["position_embedding"][:, :length], (1, batch, 1))
        bias = self._score_bias(length)
        cos = sin = None
        if self.position == "rope":
            cos, sin = (t.astype(self.dtype) for t in self._rope_tables(length, freqs))
        scale = self.dtype.type(logit_scale / math.sqrt(dh))

        def heads(flat: np.ndarray) -> np.ndarray:  # (M, batch*L, d) -> (M, batch, H, L, d_h)
            return flat.reshape(m, batch, length, h, dh).transpose(0, 1, 3, 2, 4)

        for layer in range(self.n_layers):
            q, k, v = (heads(x @ params[f"w_{c}_{layer}"]) for c in "qkv")
            if cos is not None:
                q, k = rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)
            scores = q @ k.swapaxes(-1, -2)
            scores *= scale
            if self.position == "t5":
                table = params[f"t5_bias_{layer}"] @ self._bucket_one_hot(length)
                scores += table.reshape(m, 1, h, length, length)
            scores += bias
            weights = _softmax_last(scores)
            merged = (weights @ v).transpose(0, 1, 3, 2, 4).reshape(m, n, h * dh)
            if keep is not None:
                keep.append((x, q, k, v, weights, merged))
            x = x + merged @ params[f"w_o_{layer}"]
        if keep is not None:
            keep.append((x, cos, sin, scale))
        logits = x @ params["w_out"] + params["b_out"][:, None, :]
        return logits.reshape(m, batch, length, self.n_classes)

    def _score_bias(self, length: int) -> np.ndarray:
        """The causal mask, plus ALiBi's distance bias ``(H, L, L)`` for ``"alibi"``."""
        rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]
        mask = np.where(cols > rows, -1e9, 0.0)
        if self.position == "alibi":
            mask = mask - self.slopes[:, None, None] * np.maximum(rows - cols, 0)
        return mask.astype(self.dtype)

    def _bucket_one_hot(self, length: int) -> np.ndarray:
        """``(buckets, L * L)``: which T5 bucket each (query, key) pair falls into."""
        rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]
        buckets = t5_relative_bucket(
            cols - rows,
            bidirectional=False,
            num_buckets=self.t5_buckets,
            max_distance=self.t5_max_distance,
        )
        return np.eye(self.t5_buckets, dtype=self.dtype)[buckets.reshape(-1)].T

    def logits(
        self,
        tokens: Any,
        *,
        frequencies: Any = None,
        logit_scale: float = 1.0,
    ) -> np.ndarray:
        """The answer scores at every position, ``(n_models, batch, L, C)``.

        Parameters
        ----------
        tokens : array_like of int
            ``(batch, L)`` shared by every copy or ``(n_models, batch, L)``.
        frequencies : array_like, optional
            Rotary frequencies ``(d_head / 2,)`` to use instead of the
            training ones (``position="rope"`` only), e.g. from
            :func:`posenc.scaled_frequencies`.
        logit_scale : float
            Factor ``c > 0`` on the attention logits (YaRN's temperature
            enters squared, :func:`posenc.yarn_attention_factor`).
        """
        tokens = self._check_tokens(tokens)
        if frequencies is not None and self.position != "rope":
            raise ValueError("frequencies can only be given for position 'rope'")
        logit_scale = check_real("logit_scale", logit_scale, positive=True)
        return self._forward(self.params, tokens, frequencies, logit_scale)

    def accuracy_by_position(
        self,
        batch: LengthBatch,
        *,
        frequencies: Any = None,
        logit_scale: float = 1.0,
        chunk: int = 32,
    ) -> np.ndarray:
        """Share of correct answers at every position, ``(n_models, L)`` (NaN where not scored).

        The batch is run ``chunk`` sequences at a time to bound memory.
        """
        if not isinstance(batch, LengthBatch):
            raise TypeError(f"batch must be a LengthBatch, got {type(batch).__name__}")
        chunk = check_integer("chunk", chunk, minimum=1)
        tokens = self._check_tokens(batch.tokens)
        targets = np.broadcast_to(batch.targets, tokens.shape)
        correct = np.zeros(tokens.shape[0::2])
        with threadpool_limits(limits=1, user_api="blas"):
            for start in range(0, tokens.shape[1], chunk):
                part = slice(start, start + chunk)
                logits = self.logits(
                    tokens[:, part], frequencies=frequencies, logit_scale=logit_scale
                )
                correct += (logits.argmax(-1) == targets[:, part]).sum(axis=1)
        accuracy = correct / tokens.shape[1]
        accuracy[:, ~batch.scored] = np.nan
        return accuracy

    # -- loss and gradients ------------------------------------------------------------

    def _loss_and_gradients(
        self,
        tokens: np.ndarray,
        targets: np.ndarray,
        scored: np.ndarray,
        freqs: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        r"""Each copy's mean cross-entropy ``(M,)`` and its gradient, by hand.

        The backward pass of the forward above, step by step in reverse: the
        read-out, then per layer (last first) the output projection, the
        attention weights (softmax: :math:`dS = P \odot (dP - \sum_j dP\,P)`),
        the T5 table (the score gradient summed over the batch and collected
        per bucket), the rotation (by the opposite angle), the three
        projections; finally the added position table and the embedding rows.
        The gradient of the sum over copies of each copy's loss is the stack of
        the copies' own gradients, as the copies share no parameter.
        """
        params = self.params
        m, batch, length = tokens.shape
        h, dh, n = self.n_heads, self.d_head, batch * length
        keep: list = []
        logits = self._forward(params, tokens, freqs, 1.0, keep).reshape(m, n, self.n_classes)
        x_last, cos, sin, scale = keep.pop()
        log_probs = _log_softmax_last(logits)
        flat_targets = targets.reshape(m, n, 1)
        weight = np.tile(scored / (batch * scored.sum()), batch)[None, :].astype(self.dtype)
        picked = np.take_along_axis(log_probs, flat_targets, axis=-1)[..., 0]
        losses = -(picked * weight).sum(axis=1)
        d_logits = np.exp(log_probs)
        np.put_along_axis(
            d_logits, flat_targets, np.take_along_axis(d_logits, flat_targets, -1) - 1.0, -1
        )
        d_logits *= weight[..., None]
        grads: dict[str, np.ndarray] = {
            "w_out": x_last.swapaxes(1, 2) @ d_logits,
            "b_out": d_logits.sum(axis=1),
        }
        dx = d_logits @ params["w_out"].swapaxes(1, 2)  # (M, batch * L, d)

        def flat(g: np.ndarray) -> np.ndarray:  # (M, batch, H, L, d_h) -> (M, batch*L, d)
            return g.transpose(0, 1, 3, 2, 4).reshape(m, n, h * dh)

        for layer in reversed(range(self.n_layers)):
            x, q, k, v, weights, merged = keep[layer]
            grads[f"w_o_{layer}"] = merged.swapaxes(1, 2) @ dx
            d_heads = (
                (dx @ params[f"w_o_{layer}"].swapaxes(1, 2))
                .reshape(m, batch, length, h, dh)
                .transpose(0, 1, 3, 2, 4)
            )
            d_weights = d_heads @ v.swapaxes(-1, -2)
            d_v = weights.swapaxes(-1, -2) @ d_heads
            d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))
            if self.position == "t5":
                per_pair = d_scores.sum(axis=1).reshape(m, h, length * length)
                grads[f"t5_bias_{layer}"] = per_pair @ self._bucket_one_hot(length).T
            d_scores *= scale
            d_q = d_scores @ k
            d_k = d_scores.swapaxes(-1, -2) @ q
            if cos is not None:  # the transpose of a rotation: the opposite angle
                d_q, d_k = rotate_pairs(d_q, cos, -sin), rotate_pairs(d_k, cos, -sin)
            x_t = x.swapaxes(1, 2)
            for name, g in (("q", d_q), ("k", d_k), ("v", d_v)):
                g = flat(g)
                grads[f"w_{name}_{layer}"] = x_t @ g
                dx = dx + g @ params[f"w_{name}_{layer}"].swapaxes(1, 2)
        if self.position == "learned":
            table = np.zeros_like(params["position_embedding"])
            table[:, :length] = dx.reshape(m, batch, length, -1).sum(axis=1)
            grads["position_embedding"] = table
        one_hot = np.eye(self.vocab_size, dtype=self.dtype)[tokens.reshape(m, n)]  # (M, B L, V)
        grads["token_embedding"] = one_hot.swapaxes(1, 2) @ dx
        return losses, {name: grads[name] for name in params}

    def loss_and_gradients(
        self, batch: LengthBatch, *, frequencies: Any = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each copy's loss ``(n_models,)`` and the gradient of each copy's loss.

        The gradient of the summed loss is the stack of every copy's own
        gradient, because the copies share no parameter.
        """
        if not isinstance(batch, LengthBatch):
            raise TypeError(f"batch must be a LengthBatch, got {type(batch).__name__}")
        tokens = self._check_tokens(batch.tokens)
        targets = np.broadcast_to(batch.targets, tokens.shape)
        freqs = None if frequencies is None else check_array("frequencies", frequencies, ndim=1)
        return self._loss_and_gradients(tokens, targets, batch.scored, freqs)

    def losses(self, batch: LengthBatch, *, frequencies: Any = None) -> np.ndarray:
        """Mean cross-entropy over the scored positions, per copy, ``(n_models,)``."""
        tokens = self._check_tokens(batch.tokens)
        targets = np.broadcast_to(batch.targets, tokens.shape)
        log_probs = _log_softmax_last(self._forward(self.params, tokens, frequencies))
        picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
        return -picked[:, :, batch.scored].mean(axis=(1, 2))


@dataclass(frozen=True)
class CausalHistory:
    """What :func:`train_causal` records.

    Attributes
    ----------
    train_loss : numpy.ndarray
        Mini-batch loss of every update, averaged over the copies, ``(steps,)``.
    copy_loss : numpy.ndarray
        The same per copy, ``(steps, n_models)``.
    seconds : float
        Wall-clock seconds of training.
    """

    train_loss: np.ndarray
    copy_loss: np.ndarray
    seconds: float


def train_causal(
    model: CausalTransformer,
    task: str,
    *,
    length: int,
    vocab_size: int | None = None,
    offset: int = 3,
    data_seed: int = 1,
    frequencies: Any = None,
    steps: int = 1500,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    progress: Callable[[int], None] | None = None,
) -> CausalHistory:
    """Train every copy in place with Adam on fresh batches of ``task`` of length ``length``.

    Copy ``m`` draws its own batches from ``numpy.random.default_rng([data_seed,
    seed_m])``: no two copies see the same data, and a copy's data do not
    depend on which other copies are stacked with it. With a causal model, a
    loss at every position of length-``length`` sequences trains every
    length up to ``length`` (:mod:`posenc.lengthtasks`).

    Parameters
    ----------
    model : CausalTransformer
    task : {"offset", "first"}
    length : int
        Training length ``L >= 2``.
    steps, batch_size : int
        Updates and sequences per update, ``>= 1``.
    learning_rate : float or array_like of float
        Adam step size ``> 0``, or one per copy ``(n_models,)`` (so that one
        stack tries several rates at once, :class:`posenc.model.Adam`).
    vocab_size : int, optional
        Defaults to the model's.
    offset : int
        Distance of the ``"offset"`` task.
    frequencies : array_like, optional
        Rotary frequencies for training (e.g. a fine-tune with position
        interpolation); ``None`` keeps the model's own.
    data_seed : int
        First entry of every copy's data generator seed.
    progress : callable, optional
        Called with the step number after every update.

    Returns
    -------
    CausalHistory
    """
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
    steps = check_integer("steps", steps, minimum=1)
    batch_size = check_integer("batch_size", batch_size, minimum=1)
    length = check_integer("length", length, minimum=2)
    data_seed = check_integer("data_seed", data_seed, minimum=0)
    vocab = model.vocab_size if vocab_size is None else vocab_size
    optimiser = Adam(model.params, learning_rate=learning_rate)
    rngs = [np.random.default_rng([data_seed, s]) for s in model.seeds]
    losses = []
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        for step in range(1, steps + 1):
            parts = [
                make_length_batch(
                    task, rng, batch=batch_size, length=length, vocab_size=vocab, offset=offset
                )
                for rng in rngs
            ]
            batch = LengthBatch(
                np.stack([p.tokens for p in parts]),
                np.stack([p.targets for p in parts]),
                parts[0].scored,
            )
            tokens = model._check_tokens(batch.tokens)
            loss, grads = model._loss_and_gradients(
                tokens, batch.targets, batch.scored, frequencies
            )
            optimiser.step(grads)
            losses.append(loss)
            if progress is not None:
                progress(step)
    per_copy = np.array(losses).reshape(steps, model.n_models)
    return CausalHistory(per_copy.mean(axis=1), per_copy, time.perf_counter() - start)
