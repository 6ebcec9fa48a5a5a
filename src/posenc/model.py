"""A small attention classifier in NumPy, with analytic gradients and Adam.

The model of chapter 5, small enough to read in one sitting and fast enough
to train dozens of times in a few seconds. For a batch of token sequences,
shape ``(batch, L)``, it computes

1. token embeddings :math:`X = s\\,E[\\text{tokens}]`, width :math:`d_x`, with
   a fixed ``embedding_scale`` :math:`s`;
2. the input :math:`Z` of the attention layer, one of

   * ``position="none"``: :math:`Z = X` (no position signal);
   * ``combine="add"``: :math:`Z = X + P`, with :math:`d_p = d_x`;
   * ``combine="concat"``: :math:`Z = [X;\\,P]`, width :math:`d_x + d_p`;

   where :math:`P` (shape ``(L, d_p)``) is the sinusoidal table (fixed) or a
   learned table (trained);
3. single-head self-attention :math:`A = \\softmax(Q K^\\top / \\sqrt{d_k})`,
   :math:`H = A V`, with :math:`Q, K, V = Z W_Q, Z W_K, Z W_V`;
4. mean pooling over positions, :math:`h = \\frac1L \\sum_k H_k`;
5. a linear read-out, ``logits = h @ w_out + b_out``, trained with the mean
   softmax cross-entropy.

With ``n_layers=2`` the model has a residual stream instead: two attention
layers, each adding its output to its input, :math:`Z_1 = Z + A_1 Z W_{V1}`
and :math:`Z_2 = Z_1 + A_2 Z_1 W_{V2}`, then mean pooling of :math:`Z_2`
and the read-out. The position signal enters once, at the bottom, and must
survive the first layer to be used by the second.

Several independent copies of the model (one per seed) are held side by
side along a leading axis and trained together: each copy has its own
initialisation, its own mini-batches and its own optimiser state, and the
copies never exchange anything. Stacking them only lets one NumPy call do
the work of several. The copies are run in groups small enough for the
processor's cache (all of them at once on short sequences, one or two at a
time at 64 positions), because a stack whose arrays outgrow the cache is
slower per copy than separate models; grouped, the stack is about as fast
as separate models at 64 positions and much faster on short sequences
(``benchmarks/bench_model.py`` measures both). Copy ``m`` of a stack gives
the same numbers, up to rounding, as a model built with that seed alone.

Every gradient is written out by hand (:meth:`AttentionClassifier.loss_and_gradients`)
and checked against central finite differences in ``tests/test_model.py``.
The optimiser is Adam (Kingma and Ba, 2015). Training runs with one BLAS
thread, so that on one machine the same seed gives the same numbers bit for
bit. Another processor or BLAS kernel sums in another order and gives
slightly different numbers, which training can amplify: compare trained
results across machines within their seed-to-seed spread, never digit by digit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .encodings import sinusoidal
from .stacked import StackedModel, gradient_check
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "COMBINES",
    "DTYPES",
    "POSITIONS",
    "Adam",
    "AttentionClassifier",
    "TrainingHistory",
    "check_index_array",
    "check_seeds",
    "gradient_check",
    "train",
]

POSITIONS = ("none", "sinusoidal", "learned")
COMBINES = ("add", "concat")
DTYPES = ("float64", "float32")


def check_index_array(
    name: str, value: Any, *, ndim: int | tuple[int, ...], upper: int
) -> np.ndarray:
    """Return ``value`` as an ``int64`` array with entries in ``[0, upper)``.

    ``ndim`` is the accepted number of dimensions (or a tuple of them).
    Integer arrays (and lists of integers) are accepted; floats, booleans and
    strings are rejected with :class:`TypeError`, a wrong number of
    dimensions or an entry out of range with :class:`ValueError`.

    Examples
    --------
    >>> check_index_array("tokens", [[0, 2, 1]], ndim=2, upper=3)
    array([[0, 2, 1]])
    """
    array = np.asarray(value)
    if array.dtype == bool or array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers, got dtype {array.dtype}")
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if array.ndim not in allowed:
        wanted = " or ".join(str(n) for n in allowed)
        raise ValueError(f"{name} must have {wanted} dimensions, got shape {array.shape}")
    if array.size and (array.min() < 0 or array.max() >= upper):
        raise ValueError(
            f"{name} must hold integers in [0, {upper}), got values in "
            f"[{array.min()}, {array.max()}]"
        )
    return array.astype(np.int64, copy=False)


def check_seeds(seeds: Any) -> tuple[int, ...]:
    """Return ``seeds`` (an int, or a non-empty sequence of distinct ints >= 0) as a tuple.

    Examples
    --------
    >>> check_seeds(3), check_seeds([0, 1])
    ((3,), (0, 1))
    """
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, (bool, np.bool_)):
        seeds = (seeds,)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence | np.ndarray):
        raise TypeError(f"seeds must be an int or a sequence of ints, got {type(seeds).__name__}")
    seeds = tuple(check_integer("seeds[...]", s, minimum=0) for s in seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    return seeds


# Copies of a stack are run in groups of about this many attention weights
# (copies x sequences x L x L; 256 KiB in float32), so that one group's
# arrays stay in the processor's cache: a stack that outgrows it runs
# slower per copy than separate models. The copies never interact, so the
# grouping changes no number.
_GROUP_ENTRIES = 2**16

# NumPy reduces a short last axis (a few entries per row) slowly, one row at a
# time; these functions reduce over the rows of a 2-D view instead: the maximum
# column by column, the sum as a matrix-vector product. The same maximum, the
# same sum up to rounding, several times faster at the sizes of this model.


def _row_max(rows: np.ndarray) -> np.ndarray:
    if rows.shape[1] > 32:  # long rows: NumPy's own reduction is faster
        return rows.max(axis=1)
    top = rows[:, 0].copy()
    for j in range(1, rows.shape[1]):
        np.maximum(top, rows[:, j], out=top)
    return top


def _row_sum(rows: np.ndarray) -> np.ndarray:
    return rows @ np.ones(rows.shape[1], dtype=rows.dtype)


def _softmax_inplace(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis of a finite C-contiguous array, overwriting it."""
    rows = scores.reshape(-1, scores.shape[-1])
    rows -= _row_max(rows)[:, None]
    np.exp(rows, out=rows)
    rows /= _row_sum(rows)[:, None]
    return scores


def _softmax_last(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis of a finite array of any shape."""
    return _softmax_inplace(np.array(scores, order="C"))


def _log_softmax_last(logits: np.ndarray) -> np.ndarray:
    rows = logits.reshape(-1, logits.shape[-1])
    shifted = rows - _row_max(rows)[:, None]
    return (shifted - np.log(_row_sum(np.exp(shifted)))[:, None]).reshape(logits.shape)


class AttentionClassifier(StackedModel):
    r"""Token embedding, position signal, one attention head, mean pooling, linear read-out.

    Parameters
    ----------
    vocab_size : int
        Number of distinct tokens ``V``, ``>= 1``.
    length : int
        Sequence length ``L``, ``>= 1`` (every input has exactly this length).
    n_classes : int
        Number of output classes ``C``, ``>= 2``.
    d_token : int
        Width ``d_x`` of the token embeddings, ``>= 1``.
    d_position : int, optional
        Width ``d_p`` of the position codes: 0 (the default) for
        ``position="none"``; equal to ``d_token`` (the default) for
        ``combine="add"``; ``>= 1`` (default ``d_token``) for ``"concat"``.
    d_k, d_v : int, optional
        Width of queries and keys, and of values; both default to the input
        width of the attention layer.
    position : {"none", "sinusoidal", "learned"}
        The position signal.
    combine : {"add", "concat"}
        How the position signal meets the token embedding; must stay
        ``"add"`` (the default) when ``position="none"``.
    embedding_scale : float
        Fixed factor ``s > 0`` applied to the token embeddings (the original
        transformer used :math:`\sqrt{d}`).
    base : float
        Base ``n`` of the sinusoidal table.
    seeds : int or sequence of int
        One seed per independent copy of the model (see the module docstring).
    n_layers : {1, 2}
        One attention layer pooled directly (the default), or two attention
        layers on a residual stream; with 2, ``d_v`` must equal the input
        width (its default) so that each layer's output can be added to its
        input, and the layers' projections are ``w_q``, ``w_k``, ``w_v`` and
        ``w_q2``, ``w_k2``, ``w_v2``.
    dtype : {"float64", "float32"}
        Floating-point type of the parameters and of every computation.
        ``"float32"`` (single precision) is faster (``benchmarks/bench_model.py``
        measures by how much); keep ``"float64"`` to check gradients against
        finite differences. The initial values are drawn in float64 and rounded, and
        the sinusoidal table is computed in float64 and then rounded.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        The trainable parameters, each with a leading axis of length
        ``n_models``: ``token_embedding`` ``(n_models, V, d_x)``,
        ``position_embedding`` ``(n_models, L, d_p)`` (learned positions
        only), ``w_q`` and ``w_k`` ``(n_models, width, d_k)``, ``w_v``
        ``(n_models, width, d_v)``, ``w_out`` ``(n_models, d_v, C)``, ``b_out``
        ``(n_models, C)``.
    width : int
        Width of the attention input ``Z``: ``d_x + d_p`` for ``"concat"``,
        ``d_x`` otherwise.

    Notes
    -----
    Initialisation, from ``numpy.random.default_rng([0, seed])`` for each
    copy: token embeddings are standard normal; learned position codes are
    normal with standard deviation :math:`1/\sqrt2`, the root-mean-square entry
    of the sinusoidal code; the projections are normal with variance
    ``1 / fan_in``; the bias starts at zero.

    Examples
    --------
    >>> model = AttentionClassifier(8, 8, 8, d_token=16, position="sinusoidal", seeds=(0, 1))
    >>> model.n_models, model.width, model.n_parameters
    (2, 16, 1032)
    >>> model.predict(np.zeros((3, 8), dtype=int)).shape  # (n_models, batch)
    (2, 3)
    """

    def __init__(
        self,
        vocab_size: int,
        length: int,
        n_classes: int,
        *,
        d_token: int,
        d_position: int | None = None,
        d_k: int | None = None,
        d_v: int | None = None,
        position: str = "sinusoidal",
        combine: str = "add",
        embedding_scale: float = 1.0,
        base: float = 10_000.0,
        seeds: int | Sequence[int] = 0,
        n_layers: int = 1,
        dtype: str = "float64",
    ) -> None:
        self.vocab_size = check_integer("vocab_size", vocab_size, minimum=1)
        self.length = check_integer("length", length, minimum=1)
        self.n_classes = check_integer("n_classes", n_classes, minimum=2)
        self.d_token = check_integer("d_token", d_token, minimum=1)
        self.position = check_choice("position", position, POSITIONS)
        self.combine = check_choice("combine", combine, COMBINES)
        self.embedding_scale = check_real("embedding_scale", embedding_scale, positive=True)
        self.base = check_real("base", base, positive=True)
        self.seeds = check_seeds(seeds)
        self.n_layers = check_integer("n_layers", n_layers, minimum=1, maximum=2)
        self.dtype = np.dtype(check_choice("dtype", dtype, DTYPES))

        if self.position == "none":
            if self.combine != "add":
                raise ValueError("combine must be 'add' (the default) when position is 'none'")
            if d_position not in (None, 0):
                raise ValueError(f"d_position must be 0 when position is 'none', got {d_position}")
            self.d_position = 0
        else:
            dp = self.d_token if d_position is None else d_position
            self.d_position = check_integer("d_position", dp, minimum=1)
            if self.combine == "add" and self.d_position != self.d_token:
                raise ValueError(
                    f"d_position must equal d_token ({self.d_token}) when combine is 'add', "
                    f"got {self.d_position}"
                )

        concat = self.position != "none" and self.combine == "concat"
        self.width = self.d_token + self.d_position if concat else self.d_token
        self.d_k = check_integer("d_k", self.width if d_k is None else d_k, minimum=1)
        self.d_v = check_integer("d_v", self.width if d_v is None else d_v, minimum=1)
        if self.n_layers == 2 and self.d_v != self.width:
            raise ValueError(
                f"d_v must equal the input width ({self.width}) when n_layers is 2 "
                f"(each layer adds its output to its input), got {self.d_v}"
            )
        self._table = (
            sinusoidal(self.length, self.d_position, self.base).astype(self.dtype)
            if self.position == "sinusoidal"
            else None
        )
        members = [self._init_one(np.random.default_rng([0, s])) for s in self.seeds]
        self.params = {
            name: np.stack([m[name] for m in members]).astype(self.dtype) for name in members[0]
        }

    def _init_one(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        w = self.width
        params = {"token_embedding": rng.normal(size=(self.vocab_size, self.d_token))}
        if self.position == "learned":
            params["position_embedding"] = rng.normal(
                scale=1 / math.sqrt(2), size=(self.length, self.d_position)
            )
        params["w_q"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_k))
        params["w_k"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_k))
        params["w_v"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_v))
        if self.n_layers == 2:
            params["w_q2"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_k))
            params["w_k2"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_k))
            params["w_v2"] = rng.normal(scale=1 / math.sqrt(w), size=(w, self.d_v))
        params["w_out"] = rng.normal(scale=1 / math.sqrt(self.d_v), size=(self.d_v, self.n_classes))
        params["b_out"] = np.zeros(self.n_classes)
        return params

    # -- description -----------------------------------------------------------------

    gradient_check_entries = 4  # entries per parameter that gradient_check compares

    def _gradient_parts(self, tokens: Any, labels: Any) -> tuple[dict[str, np.ndarray], Any]:
        """For :func:`gradient_check`: the gradients on a batch, and the summed loss."""
        if self.dtype != np.float64:
            raise ValueError(
                f"model must compute in float64 for a gradient check, got {self.dtype}"
            )
        tokens = self._check_tokens(tokens)
        labels = self._check_labels(labels, tokens)
        _, grads = self._loss_and_gradients(tokens, labels)
        return grads, lambda: self._loss_and_gradients(tokens, labels)[0].sum()

    def position_codes(self) -> np.ndarray | None:
        """The position codes in use, ``(n_models, L, d_p)`` (a copy), or ``None`` without."""
        if self.position == "sinusoidal":
            return np.broadcast_to(self._table, (self.n_models, *self._table.shape)).copy()
        if self.position == "learned":
            return self.params["position_embedding"].copy()
        return None

    def __repr__(self) -> str:
        how = "" if self.position == "none" else f", combine={self.combine!r}"
        return (
            f"AttentionClassifier(position={self.position!r}{how}, d_token={self.d_token}, "
            f"d_position={self.d_position}, width={self.width}, d_k={self.d_k}, "
            f"d_v={self.d_v}, n_layers={self.n_layers}, n_parameters={self.n_parameters}, "
            f"n_models={self.n_models}, "
            f"dtype={self.dtype.name!r})"
        )

    # -- input checks ------------------------------------------------------------------

    def _check_tokens(self, tokens: Any) -> np.ndarray:
        """Tokens ``(batch, L)`` shared by every copy, or ``(n_models, batch, L)`` per copy."""
        tokens = check_index_array("tokens", tokens, ndim=(2, 3), upper=self.vocab_size)
        if tokens.shape[-1] != self.length or (
            tokens.ndim == 3 and tokens.shape[0] != self.n_models
        ):
            raise ValueError(
                f"tokens must have shape (batch, {self.length}) or "
                f"({self.n_models}, batch, {self.length}), got {tokens.shape}"
            )
        if tokens.shape[-2] == 0:
            raise ValueError("tokens must hold at least one sequence")
        return tokens

    def _check_labels(self, labels: Any, tokens: np.ndarray) -> np.ndarray:
        labels = check_index_array("labels", labels, ndim=(1, 2), upper=self.n_classes)
        if labels.shape != tokens.shape[:-1]:
            raise ValueError(
                f"labels must have shape {tokens.shape[:-1]} to match tokens, got {labels.shape}"
            )
        return labels

    # -- forward -----------------------------------------------------------------------

    def _groups(self, n_sequences: int) -> list[slice]:
        """The copies in groups whose attention weights fit in the processor's cache.

        One group holds ``copies * n_sequences * L * L`` attention weights,
        kept at about ``_GROUP_ENTRIES``; a stack whose arrays outgrow the cache
        runs slower per copy than separate models (``benchmarks/bench_model.py``).
        """
        per_copy = max(1, n_sequences * self.length * self.length)
        size = max(1, _GROUP_ENTRIES // per_copy)
        n = self.n_models
        return [slice(i, min(i + size, n)) for i in range(0, n, size)]

    def _forward(
        self, tokens: np.ndarray, p: dict[str, np.ndarray] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Logits ``(copies, batch, C)`` and the intermediates the backward pass needs.

        ``p`` holds the parameters of the copies to run (all of them by
        default); ``tokens`` is ``(batch, L)`` or ``(copies, batch, L)``.
        """
        p = self.params if p is None else p
        n, length = p["w_out"].shape[0], self.length
        batch = tokens.shape[-2]
        member = np.arange(n).reshape(n, 1, 1)
        x = p["token_embedding"][member, tokens]  # (n, batch, L, d_x)
        if self.embedding_scale != 1.0:
            x = self.embedding_scale * x
        if self.position == "none":
            z = x
        else:
            table = (
                self._table if self.position == "sinusoidal" else p["position_embedding"][:, None]
            )
            if self.combine == "add":
                z = x + table
            else:
                shape = (n, batch, length, self.d_position)
                z = np.concatenate([x, np.broadcast_to(table, shape)], axis=-1)
        z2 = z.reshape(n, batch * length, self.width)
        if self.n_layers == 2:
            return self._forward_deep(z2, batch, p)
        q, k, v, w_qkv = self._project(z2, p, "", batch)
        a = _softmax_inplace(q @ k.transpose(0, 2, 1))
        # Mean pooling of A V equals the column means of A applied to V.
        a_bar = np.add.reduce(a, axis=1)  # (n * batch, L)
        a_bar /= length
        h = (a_bar[:, None, :] @ v).reshape(n, batch, self.d_v)
        logits = h @ p["w_out"] + p["b_out"][:, None, :]
        cache = {"z2": z2, "q": q, "k": k, "v": v, "a": a, "a_bar": a_bar, "h": h, "w_qkv": w_qkv}
        return logits, cache

    def _project(
        self, z2: np.ndarray, p: dict[str, np.ndarray], suffix: str, batch: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Queries (already divided by :math:`\\sqrt{d_k}`), keys and values of one layer.

        The three projections are applied in one product, side by side;
        each comes back ``(copies * batch, L, width)``, with the joint weight.
        """
        n, length, dk = z2.shape[0], self.length, self.d_k
        w_qkv = np.concatenate([p["w_q" + suffix], p["w_k" + suffix], p["w_v" + suffix]], -1)
        qkv = (z2 @ w_qkv).reshape(n * batch, length, w_qkv.shape[-1])
        q = qkv[:, :, :dk] * np.asarray(1.0 / math.sqrt(dk), dtype=qkv.dtype)
        return q, qkv[:, :, dk : 2 * dk], qkv[:, :, 2 * dk :], w_qkv

    def _layer(
        self, z2: np.ndarray, p: dict[str, np.ndarray], suffix: str, batch: int
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One attention layer of the residual stream: ``A (z W_V)``, ``(n, batch * L, d_v)``."""
        n = z2.shape[0]
        q, k, v, w_qkv = self._project(z2, p, suffix, batch)
        a = _softmax_inplace(q @ k.transpose(0, 2, 1))
        h = (a @ v).reshape(n, batch * self.length, self.d_v)
        return h, {"z2": z2, "q": q, "k": k, "v": v, "a": a, "w_qkv": w_qkv}

    def _projection_backward(
        self,
        d_s: np.ndarray,
        d_values: Any,
        c: dict[str, np.ndarray],
        suffix: str,
        batch: int,
        grads: dict,
    ) -> np.ndarray:
        """From ``d loss / d scores`` and a writer of ``d loss / d V`` to the layer's input.

        Writes the gradients of the three projections into ``grads`` and
        returns ``d loss / d z``, ``(n, batch * L, width)``. ``d_values(out)``
        fills ``out`` (a view, ``(n * batch, L, d_v)``) with ``d loss / d V``.
        """
        n, length, dk = c["z2"].shape[0], self.length, self.d_k
        w_qkv = c["w_qkv"]
        d_qkv = np.empty((n, batch * length, w_qkv.shape[-1]), dtype=d_s.dtype)
        d3 = d_qkv.reshape(n * batch, length, -1)
        # S = (Q / sqrt(d_k)) K^T, so dQ = dS K / sqrt(d_k) and dK = dS^T (Q / sqrt(d_k)).
        np.matmul(d_s, c["k"], out=d3[:, :, :dk])
        d3[:, :, :dk] *= np.asarray(1.0 / math.sqrt(dk), dtype=d_s.dtype)
        np.matmul(d_s.transpose(0, 2, 1), c["q"], out=d3[:, :, dk : 2 * dk])
        d_values(d3[:, :, 2 * dk :])
        g_qkv = c["z2"].transpose(0, 2, 1) @ d_qkv
        grads["w_q" + suffix] = g_qkv[:, :, :dk]
        grads["w_k" + suffix] = g_qkv[:, :, dk : 2 * dk]
        grads["w_v" + suffix] = g_qkv[:, :, 2 * dk :]
        return d_qkv @ w_qkv.transpose(0, 2, 1)

    def _layer_backward(
        self, d_h: np.ndarray, c: dict[str, np.ndarray], suffix: str, batch: int, grads: dict
    ) -> np.ndarray:
        """Gradients of one layer's projections (into ``grads``) and ``d loss / d z``."""
        n, length = c["z2"].shape[0], self.length
        d_h = d_h.reshape(n * batch, length, self.d_v)
        a = c["a"]
        # Softmax rows: dS = A * (dA - sum_m A dA), computed in place in dA.
        d_s = d_h @ c["v"].transpose(0, 2, 1)
        d_s -= _row_sum((a * d_s).reshape(-1, length)).reshape(n * batch, length, 1)
        d_s *= a
        return self._projection_backward(
            d_s, lambda out: np.matmul(a.transpose(0, 2, 1), d_h, out=out), c, suffix, batch, grads
        )

    def _forward_deep(
        self, z2: np.ndarray, batch: int, p: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Two layers on a residual stream, mean pooling of the stream, read-out."""
        n, length = z2.shape[0], self.length
        h1, c1 = self._layer(z2, p, "", batch)
        z_mid = z2 + h1
        h2, c2 = self._layer(z_mid, p, "2", batch)
        top = (z_mid + h2).reshape(n * batch, length, self.width)
        pooled = (np.full((1, length), 1.0 / length, dtype=top.dtype) @ top).reshape(
            n, batch, self.width
        )
        logits = pooled @ p["w_out"] + p["b_out"][:, None, :]
        cache = {"z2": z2, "a": c1["a"], "h": pooled, "layer1": c1, "layer2": c2}
        return logits, cache

    def logits(self, tokens: Any) -> np.ndarray:
        """Class scores ``(n_models, batch, C)``.

        ``tokens`` is ``(batch, L)`` (the same batch for every copy) or
        ``(n_models, batch, L)``.
        """
        return self._forward(self._check_tokens(tokens))[0]

    def attention_weights(self, tokens: Any) -> np.ndarray:
        """Attention weights ``(n_models, batch, L, L)``; each row sums to 1."""
        tokens = self._check_tokens(tokens)
        a = self._forward(tokens)[1]["a"]
        return a.reshape(self.n_models, tokens.shape[-2], self.length, self.length)

    def attention_input(self, tokens: Any) -> np.ndarray:
        """The input ``Z`` of the attention layer, ``(n_models, batch, L, width)``."""
        tokens = self._check_tokens(tokens)
        z2 = self._forward(tokens)[1]["z2"]
        return z2.reshape(self.n_models, tokens.shape[-2], self.length, self.width)

    def predict(self, tokens: Any) -> np.ndarray:
        """Predicted class of every sequence for every copy, ``(n_models, batch)``."""
        return self.logits(tokens).argmax(axis=-1)

    def accuracy(self, tokens: Any, labels: Any) -> np.ndarray:
        """Share of correctly classified sequences for every copy, ``(n_models,)`` in ``[0, 1]``."""
        tokens = self._check_tokens(tokens)
        return self._accuracy(tokens, self._check_labels(labels, tokens))

    def _accuracy(self, tokens: np.ndarray, labels: np.ndarray) -> np.ndarray:
        # In groups of copies and chunks of sequences, so that every pass stays
        # in the processor's cache and long sequences fit in memory.
        n, length = self.n_models, self.length
        batch = tokens.shape[-2]
        tokens = np.broadcast_to(tokens, (n, batch, length))
        labels = np.broadcast_to(labels, (n, batch))
        chunk = min(batch, max(1, _GROUP_ENTRIES // (length * length)))
        copies = max(1, min(n, _GROUP_ENTRIES // (chunk * length * length)))
        correct = np.zeros(n)
        for first in range(0, n, copies):
            group = slice(first, first + copies)
            p = {name: value[group] for name, value in self.params.items()}
            for start in range(0, batch, chunk):
                rows = slice(start, start + chunk)
                predicted = self._forward(tokens[group, rows], p)[0].argmax(axis=-1)
                correct[group] += (predicted == labels[group, rows]).sum(axis=-1)
        return correct / batch

    def loss(self, tokens: Any, labels: Any) -> np.ndarray:
        """Mean softmax cross-entropy (natural log) of every copy, ``(n_models,)``."""
        tokens = self._check_tokens(tokens)
        labels = self._check_labels(labels, tokens)
        log_probs = _log_softmax_last(self._forward(tokens)[0])
        picked = np.take_along_axis(
            log_probs, np.broadcast_to(labels, log_probs.shape[:-1])[..., None], -1
        )
        return -picked[..., 0].mean(axis=-1)

    # -- backward ----------------------------------------------------------------------

    def loss_and_gradients(
        self, tokens: Any, labels: Any
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Loss of every copy and the gradient of each copy's loss with respect to its parameters.

        Parameters
        ----------
        tokens : array_like of int
            ``(batch, L)`` for the same batch in every copy, or
            ``(n_models, batch, L)`` for a batch per copy.
        labels : array_like of int
            ``(batch,)`` or ``(n_models, batch)``, matching ``tokens``.

        Returns
        -------
        (numpy.ndarray, dict of str to numpy.ndarray)
            The mean cross-entropy of every copy, ``(n_models,)``, and a
            dictionary with the same keys and shapes as ``params``; entry ``m``
            of each gradient is the derivative of copy ``m``'s loss.
        """
        tokens = self._check_tokens(tokens)
        return self._loss_and_gradients(tokens, self._check_labels(labels, tokens))

    def _loss_and_gradients(
        self, tokens: np.ndarray, labels: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        n, length = self.n_models, self.length
        batch = tokens.shape[-2]
        tokens = np.broadcast_to(tokens, (n, batch, length))
        labels = np.broadcast_to(labels, (n, batch))
        groups = self._groups(batch)
        if len(groups) == 1:
            loss, grads = self._group_gradients(self.params, tokens, labels)
            return loss, {name: grads[name] for name in self.params}
        # Each group of copies on its own (the copies never interact), into
        # arrays for the whole stack.
        loss = np.empty(n, dtype=self.dtype)
        grads = {name: np.empty_like(value) for name, value in self.params.items()}
        for group in groups:
            p = {name: value[group] for name, value in self.params.items()}
            loss[group], part = self._group_gradients(p, tokens[group], labels[group])
            for name, value in part.items():
                grads[name][group] = value
        return loss, grads

    def _group_gradients(
        self, p: dict[str, np.ndarray], tokens: np.ndarray, labels: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Loss and every gradient of the copies in ``p``."""
        n, length = p["w_out"].shape[0], self.length
        batch = tokens.shape[-2]
        logits, c = self._forward(tokens, p)
        log_probs = _log_softmax_last(logits)
        picked = (np.arange(n)[:, None], np.arange(batch)[None, :], labels)
        loss = -log_probs[picked].mean(axis=-1)

        # Read-out: d loss / d logits = (softmax - one-hot) / batch.
        d_logits = np.exp(log_probs)
        d_logits[picked] -= 1.0
        d_logits /= batch
        h = c["h"]
        grads = {
            "w_out": h.transpose(0, 2, 1) @ d_logits,
            "b_out": (np.ones(batch, dtype=d_logits.dtype) @ d_logits),
        }
        if self.n_layers == 2:
            d_pooled = d_logits @ p["w_out"].transpose(0, 2, 1)  # (n, batch, width)
            d_top = np.broadcast_to(
                d_pooled[:, :, None, :] / length, (n, batch, length, self.width)
            ).reshape(n, batch * length, self.width)
            d_mid = d_top + self._layer_backward(d_top, c["layer2"], "2", batch, grads)
            d_z = d_mid + self._layer_backward(d_mid, c["layer1"], "", batch, grads)
            self._embedding_gradients(d_z, tokens, grads)
            return loss, grads
        d_h = (d_logits @ p["w_out"].transpose(0, 2, 1)).reshape(n * batch, self.d_v, 1)

        # Pooling: h = a_bar @ v, with a_bar the column means of A; every query
        # row of A receives the same d loss / d A, the row d_a.
        a = c["a"]
        d_a = (c["v"] @ d_h)[:, :, 0]  # (n * batch, L)
        d_a /= length
        # Softmax rows: dS = A * (dA - sum_m A dA); the sum is a matrix-vector product.
        d_s = d_a[:, None, :] - a @ d_a[:, :, None]
        d_s *= a

        def d_values(out: np.ndarray) -> None:
            np.multiply(c["a_bar"][:, :, None], d_h.transpose(0, 2, 1), out=out)

        d_z = self._projection_backward(d_s, d_values, c, "", batch, grads)
        self._embedding_gradients(d_z, tokens, grads)
        return loss, grads

    def _embedding_gradients(self, d_z: np.ndarray, tokens: np.ndarray, grads: dict) -> None:
        """Gradients of the token (and learned position) tables from ``d loss / d Z``.

        The token gradient sums the rows of ``d loss / d X`` that belong to
        each token, copy by copy: one weighted count (``numpy.bincount``, which
        adds in float64, in the order of the rows) over every copy, token and column.
        """
        n, length, width = d_z.shape[0], self.length, self.d_token
        batch = tokens.shape[-2]
        rows = tokens.reshape(n, batch * length) + (np.arange(n) * self.vocab_size)[:, None]
        index = (rows[:, :, None] * width + np.arange(width)).reshape(-1)
        d_x = d_z[:, :, :width].reshape(-1)
        total = np.bincount(index, weights=d_x, minlength=n * self.vocab_size * width)
        grads["token_embedding"] = total.reshape(n, self.vocab_size, width).astype(d_z.dtype)
        if self.embedding_scale != 1.0:
            grads["token_embedding"] *= self.embedding_scale
        if self.position == "learned":
            d_pos = d_z if self.combine == "add" else d_z[:, :, self.d_token :]
            d_pos = d_pos.reshape(n, batch, length * self.d_position)
            grads["position_embedding"] = (np.ones(batch, dtype=d_pos.dtype) @ d_pos).reshape(
                n, length, self.d_position
            )


class Adam:
    r"""The Adam optimiser (Kingma and Ba, 2015), updating a parameter dictionary in place.

    With gradient :math:`g`, step :math:`t`, and moments :math:`m, v` (zero at the start):
    :math:`m \leftarrow \beta_1 m + (1 - \beta_1) g`,
    :math:`v \leftarrow \beta_2 v + (1 - \beta_2) g^2`,
    :math:`\theta \leftarrow \theta - \eta\,\hat m / (\sqrt{\hat v} + \epsilon)` with the
    bias-corrected :math:`\hat m = m / (1 - \beta_1^t)`, :math:`\hat v = v / (1 - \beta_2^t)`.
    Every entry is updated on its own, so independent copies stacked along an
    axis stay independent.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        The float arrays to optimise; they are updated in place.
    learning_rate : float or array_like of float
        Step size :math:`\eta > 0`; or one step size per copy, shape
        ``(n_models,)``, applied along the leading axis of every parameter
        (so one stack can try several learning rates at once).
    beta1, beta2 : float
        Decay rates of the moment estimates, in ``[0, 1)``.
    eps : float
        Small constant ``> 0`` in the denominator.

    Examples
    --------
    >>> params = {"w": np.array([1.0, -2.0])}
    >>> opt = Adam(params, learning_rate=0.1)
    >>> opt.step({"w": np.array([3.0, -0.5])})
    >>> params["w"]  # the first step moves each entry by the learning rate
    array([ 0.9, -1.9])
    """

    def __init__(
        self,
        params: dict[str, np.ndarray],
        *,
        learning_rate: float = 1e-2,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
    ) -> None:
        if not isinstance(params, dict) or not params:
            raise TypeError("params must be a non-empty dict of name -> NumPy float array")
        for name, value in params.items():
            if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
                raise TypeError(
                    f"params[{name!r}] must be a NumPy float array, got {type(value).__name__}"
                )
        self.params = params
        if np.ndim(learning_rate) == 0:
            self.learning_rate = check_real("learning_rate", learning_rate, positive=True)
            self._rates = {name: self.learning_rate for name in params}
        else:
            rates = check_array("learning_rate", learning_rate, ndim=1)
            if rates.size == 0 or not np.all(rates > 0):
                raise ValueError(
                    f"learning_rate must hold numbers > 0, one per copy, got {rates.tolist()}"
                )
            for name, value in params.items():
                if value.ndim == 0 or value.shape[0] != rates.size:
                    raise ValueError(
                        f"learning_rate holds {rates.size} rates (one per copy), but "
                        f"params[{name!r}] has shape {value.shape}"
                    )
            self.learning_rate = rates
            self._rates = {
                name: rates.reshape(-1, *([1] * (value.ndim - 1))).astype(value.dtype)
                for name, value in params.items()
            }
        self.beta1 = check_real("beta1", beta1, minimum=0.0)
        self.beta2 = check_real("beta2", beta2, minimum=0.0)
        for name, beta in (("beta1", self.beta1), ("beta2", self.beta2)):
            if beta >= 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {beta}")
        self.eps = check_real("eps", eps, positive=True)
        self.t = 0
        self.m = {name: np.zeros_like(value) for name, value in params.items()}
        self.v = {name: np.zeros_like(value) for name, value in params.items()}

    def step(self, grads: dict[str, np.ndarray]) -> None:
        """Apply one update with ``grads`` (same keys and shapes as ``params``)."""
        if not isinstance(grads, dict) or set(grads) != set(self.params):
            raise ValueError(f"grads must have exactly the keys {sorted(self.params)}")
        for name, g in grads.items():
            if np.shape(g) != self.params[name].shape:
                raise ValueError(
                    f"grads[{name!r}] must have shape {self.params[name].shape}, got {np.shape(g)}"
                )
        self.t += 1
        c1 = 1.0 - self.beta1**self.t
        c2 = 1.0 - self.beta2**self.t
        for name, g in grads.items():
            m, v = self.m[name], self.v[name]
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * np.square(g)
            self.params[name] -= self._rates[name] * (m / c1) / (np.sqrt(v / c2) + self.eps)


@dataclass(frozen=True)
class TrainingHistory:
    """What :func:`train` records, for every copy of the model.

    Attributes
    ----------
    steps : numpy.ndarray
        Updates done when the test accuracy was measured, ``(n_eval,)``; 0 is
        before the first update.
    test_accuracy : numpy.ndarray
        Test accuracy at those steps, ``(n_eval, n_models)``, in ``[0, 1]``.
    train_loss : numpy.ndarray
        Mini-batch loss of every update, ``(n_steps, n_models)``.
    """

    steps: np.ndarray
    test_accuracy: np.ndarray
    train_loss: np.ndarray

    @property
    def final_accuracy(self) -> np.ndarray:
        """Test accuracy after the last update, ``(n_models,)``."""
        return self.test_accuracy[-1]


def train(
    model: AttentionClassifier,
    train_tokens: Any,
    train_labels: Any,
    test_tokens: Any,
    test_labels: Any,
    *,
    steps: int = 300,
    batch_size: int = 64,
    learning_rate: float = 1e-2,
    eval_every: int = 50,
) -> TrainingHistory:
    """Train every copy of ``model`` in place with Adam on mini-batches.

    Each copy visits the training set in its own random order (from
    ``numpy.random.default_rng([1, seed])``), a fresh order per epoch; a final
    partial batch is dropped so that every update sees ``batch_size``
    sequences. BLAS runs on one thread: at these sizes more threads gain
    little and, on a busy machine, lose a lot (``benchmarks/bench_model.py``),
    and a fixed thread count keeps every result bit for bit the same from run
    to run on one machine (not across processors or BLAS kernels).

    Parameters
    ----------
    model : AttentionClassifier
    train_tokens, test_tokens : array_like of int
        Shape ``(n, L)``.
    train_labels, test_labels : array_like of int
        Shape ``(n,)``.
    steps : int
        Number of updates, ``>= 1``.
    batch_size : int
        Sequences per update, between 1 and the training-set size.
    learning_rate : float or array_like of float
        Adam step size, ``> 0``, or one per copy (see :class:`Adam`).
    eval_every : int
        Measure the test accuracy every this many steps (and after the last).

    Returns
    -------
    TrainingHistory

    Examples
    --------
    >>> tokens = np.array([[0, 1], [1, 0]] * 8)
    >>> labels = np.array([0, 1] * 8)
    >>> model = AttentionClassifier(2, 2, 2, d_token=4, position="learned", seeds=(1, 2))
    >>> history = train(model, tokens, labels, tokens, labels, steps=60, batch_size=8)
    >>> history.final_accuracy
    array([1., 1.])
    """
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__}")
    train_tokens = check_index_array("train_tokens", train_tokens, ndim=2, upper=model.vocab_size)
    test_tokens = check_index_array("test_tokens", test_tokens, ndim=2, upper=model.vocab_size)
    train_tokens = model._check_tokens(train_tokens)
    test_tokens = model._check_tokens(test_tokens)
    train_labels = model._check_labels(train_labels, train_tokens)
    test_labels = model._check_labels(test_labels, test_tokens)
    n_train = train_tokens.shape[0]
    steps = check_integer("steps", steps, minimum=1)
    batch_size = check_integer("batch_size", batch_size, minimum=1, maximum=n_train)
    eval_every = check_integer("eval_every", eval_every, minimum=1)
    optimiser = Adam(model.params, learning_rate=learning_rate)

    with threadpool_limits(limits=1, user_api="blas"):
        rngs = [np.random.default_rng([1, s]) for s in model.seeds]
        per_epoch = n_train // batch_size
        order = np.stack([rng.permutation(n_train) for rng in rngs])
        eval_steps = [0]
        accuracies = [model._accuracy(test_tokens, test_labels)]
        losses = []
        for step in range(1, steps + 1):
            slot = (step - 1) % per_epoch
            if slot == 0 and step > 1:
                order = np.stack([rng.permutation(n_train) for rng in rngs])
            batch = order[:, slot * batch_size : (slot + 1) * batch_size]  # (n_models, batch)
            loss, grads = model._loss_and_gradients(train_tokens[batch], train_labels[batch])
            optimiser.step(grads)
            losses.append(loss)
            if step % eval_every == 0 or step == steps:
                eval_steps.append(step)
                accuracies.append(model._accuracy(test_tokens, test_labels))
    return TrainingHistory(np.array(eval_steps), np.array(accuracies), np.array(losses))
