r"""Addition or concatenation, the analysis that needs no training (chapter 5).

Pure linear algebra and geometry on the small attention model of
:mod:`posenc.model`, and what the designed experiment records of each cell:

* :func:`split_weight`: the two blocks of a linear layer that follows a
  concatenation, :math:`W [x; p] = W_x x + W_p p`;
* :func:`parameter_count`: the trainable parameters of every variant of
  :class:`posenc.model.AttentionClassifier`, in closed form;
* :func:`token_position_cosines`: how close to orthogonal random token
  embeddings are to the sinusoidal position codes, as ``d`` grows;
* :func:`readout_accuracy` and :func:`readout_draws`: how much of the token
  and of the position a least-squares linear read-out recovers from their
  sum, for one random token table or many;
* :func:`score_terms` and :func:`model_score_terms`: the four terms of the
  attention score of a sum (token-token, token-position, position-token,
  position-position), and :func:`term_sizes`, how much each moves the weights;
* :func:`accuracy_with_terms`: the accuracy of a trained model when its
  attention scores keep only some of the four terms (an ablation);
* :func:`token_code_ratio` and :func:`steps_to_threshold`: the length of the
  token vectors against the codes, and the first step at which a learning
  curve reaches an accuracy.

The experiment itself is in :mod:`posenc.experiment`, its verdicts in
:mod:`posenc.experiment_verdicts`, and the statistics in :mod:`posenc.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .encodings import sinusoidal
from .model import AttentionClassifier, _softmax_last
from .similarity import cosine_similarity_matrix
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "READOUT_RATIOS",
    "READOUT_WIDTHS",
    "SCORE_TERMS",
    "accuracy_with_terms",
    "model_score_terms",
    "parameter_count",
    "readout_accuracy",
    "readout_draws",
    "score_terms",
    "split_weight",
    "steps_to_threshold",
    "term_sizes",
    "token_code_ratio",
    "token_position_cosines",
]

SCORE_TERMS = ("token-token", "token-position", "position-token", "position-position")

# -- the analysis ----------------------------------------------------------------------


def split_weight(w: Any, d_token: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Split the weight of a layer that reads :math:`[x;\,p]` into its token and position blocks.

    With row vectors, :math:`[x;\,p]\,W = x\,W_x + p\,W_p`, where :math:`W_x` is
    the first ``d_token`` rows of :math:`W` and :math:`W_p` the rest.

    Parameters
    ----------
    w : array_like
        Shape ``(d_token + d_position, d_out)``.
    d_token : int
        Width of the token part, between 1 and ``w.shape[0] - 1``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``w_x`` of shape ``(d_token, d_out)`` and ``w_p`` of shape
        ``(d_position, d_out)``.

    Examples
    --------
    >>> w_x, w_p = split_weight(np.arange(6.0).reshape(3, 2), 1)
    >>> w_x, w_p
    (array([[0., 1.]]), array([[2., 3.],
           [4., 5.]]))
    """
    w = check_array("w", w, ndim=2)
    if w.shape[0] < 2:
        raise ValueError(f"w must have at least 2 rows to split, got shape {w.shape}")
    d_token = check_integer("d_token", d_token, minimum=1, maximum=w.shape[0] - 1)
    return w[:d_token].copy(), w[d_token:].copy()


def parameter_count(
    *,
    vocab_size: int,
    length: int,
    n_classes: int,
    d_token: int,
    d_position: int,
    position: str,
    combine: str,
    d_k: int,
    d_v: int,
    n_layers: int = 1,
) -> int:
    r"""Trainable parameters of one :class:`~posenc.model.AttentionClassifier`, in closed form.

    .. math::

        V d_x \;+\; [\text{learned}]\,L d_p \;+\; n_\text{layers}(2 w d_k \;+\; w d_v)
        \;+\; d_v C \;+\; C,

    with input width :math:`w = d_x + d_p` for concatenation and
    :math:`w = d_x` otherwise (and :math:`d_v = w` for two layers). The
    sinusoidal table is fixed and costs nothing.

    Examples
    --------
    >>> parameter_count(vocab_size=8, length=8, n_classes=2, d_token=16, d_position=16,
    ...                 position="learned", combine="add", d_k=16, d_v=16)
    1058
    """
    vocab_size = check_integer("vocab_size", vocab_size, minimum=1)
    length = check_integer("length", length, minimum=1)
    n_classes = check_integer("n_classes", n_classes, minimum=2)
    d_token = check_integer("d_token", d_token, minimum=1)
    d_position = check_integer("d_position", d_position, minimum=0)
    position = check_choice("position", position, ("none", "sinusoidal", "learned"))
    combine = check_choice("combine", combine, ("add", "concat"))
    d_k = check_integer("d_k", d_k, minimum=1)
    d_v = check_integer("d_v", d_v, minimum=1)
    n_layers = check_integer("n_layers", n_layers, minimum=1, maximum=2)
    width = d_token + d_position if (position != "none" and combine == "concat") else d_token
    learned = length * d_position if position == "learned" else 0
    layers = n_layers * (2 * width * d_k + width * d_v)
    return vocab_size * d_token + learned + layers + d_v * n_classes + n_classes


def token_position_cosines(
    d_model: int,
    *,
    n_tokens: int = 256,
    length: int = 256,
    base: float = 10_000.0,
    seed: int = 0,
) -> np.ndarray:
    """Cosines between random token embeddings and the sinusoidal position codes.

    The token embeddings are standard normal vectors of width ``d_model``;
    the codes are ``sinusoidal(length, d_model, base)``. Every pair is
    compared. For a normal vector the cosine with any fixed direction has
    mean 0 and standard deviation :math:`1/\\sqrt{d}`, whatever the direction.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_tokens * length,)``, values in ``[-1, 1]``.

    Examples
    --------
    >>> c = token_position_cosines(512, n_tokens=64, length=64)
    >>> bool(abs(c.std() * np.sqrt(512) - 1) < 0.1)
    True
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    n_tokens = check_integer("n_tokens", n_tokens, minimum=1)
    length = check_integer("length", length, minimum=2)
    seed = check_integer("seed", seed, minimum=0)
    tokens = np.random.default_rng(seed).normal(size=(n_tokens, d_model))
    return cosine_similarity_matrix(tokens, sinusoidal(length, d_model, base)).ravel()


def readout_accuracy(
    d_model: int,
    *,
    vocab_size: int = 64,
    length: int = 64,
    scale: float = 1.0,
    base: float = 10_000.0,
    seed: int = 0,
) -> tuple[float, float]:
    r"""How well a linear read-out recovers the token and the position from their sum.

    Token embeddings have normal entries of standard deviation
    ``scale / sqrt(d_model)`` (so ``scale`` is about the length of a token
    vector; the position codes have length :math:`\sqrt{d/2}`). Every one of
    the ``vocab_size * length`` sums :math:`z = x_t + \PE_k` is formed, and two
    least-squares read-outs (with a constant term) are fitted on all of them:
    one maps :math:`z` to the one-hot code of the token :math:`t`, the other
    to the one-hot code of the position :math:`k`. A sum counts as recovered
    when the largest output is at the right place.

    Because every combination is used to fit and to score, this measures how
    much of each signal survives the addition for a linear layer, not how a
    read-out generalises.

    Returns
    -------
    (float, float)
        Share of sums whose token, and whose position, is recovered.

    Examples
    --------
    >>> readout_accuracy(256, vocab_size=16, length=16)  # wide enough: exact
    (1.0, 1.0)
    """
    d_model = check_integer("d_model", d_model, minimum=1)
    vocab_size = check_integer("vocab_size", vocab_size, minimum=2)
    length = check_integer("length", length, minimum=2)
    scale = check_real("scale", scale, positive=True)
    seed = check_integer("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    tokens = rng.normal(scale=scale / math.sqrt(d_model), size=(vocab_size, d_model))
    codes = sinusoidal(length, d_model, base)
    sums = (tokens[:, None, :] + codes[None, :, :]).reshape(-1, d_model)
    features = np.hstack([sums, np.ones((sums.shape[0], 1))])
    token_of = np.repeat(np.arange(vocab_size), length)
    position_of = np.tile(np.arange(length), vocab_size)
    targets = np.hstack([np.eye(vocab_size)[token_of], np.eye(length)[position_of]])
    with threadpool_limits(limits=1, user_api="blas"):
        weights, *_ = np.linalg.lstsq(features, targets, rcond=None)
        outputs = features @ weights
    token_ok = outputs[:, :vocab_size].argmax(axis=1) == token_of
    position_ok = outputs[:, vocab_size:].argmax(axis=1) == position_of
    return float(token_ok.mean()), float(position_ok.mean())


def score_terms(x: Any, p: Any, w_q: Any, w_k: Any) -> np.ndarray:
    r"""The four terms of the attention score of :math:`Z = X + P`.

    With :math:`Q = Z W_Q` and :math:`K = Z W_K`, the scaled score matrix
    :math:`Q K^\top / \sqrt{d_k}` splits into

    .. math::

        \frac{1}{\sqrt{d_k}}\left(X W_Q W_K^\top X^\top + X W_Q W_K^\top P^\top
        + P W_Q W_K^\top X^\top + P W_Q W_K^\top P^\top\right),

    the token-token, token-position, position-token and position-position
    terms (query first, key second).

    Parameters
    ----------
    x, p : array_like
        Token and position parts, shape ``(L, w)`` each.
    w_q, w_k : array_like
        Shape ``(w, d_k)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(4, L, L)``, in the order of :data:`SCORE_TERMS`; the sum over
        the first axis is the full score matrix.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, p, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    >>> terms = score_terms(x, p, w, w)
    >>> full = (x + p) @ w @ ((x + p) @ w).T / np.sqrt(2)
    >>> bool(np.allclose(terms.sum(axis=0), full))
    True
    """
    x = check_array("x", x, ndim=2)
    p = check_array("p", p, shape=x.shape)
    w_q = check_array("w_q", w_q, shape=(x.shape[1], None))
    w_k = check_array("w_k", w_k, shape=w_q.shape)
    scale = math.sqrt(w_q.shape[1])
    qx, qp, kx, kp = x @ w_q, p @ w_q, x @ w_k, p @ w_k
    return np.stack([qx @ kx.T, qx @ kp.T, qp @ kx.T, qp @ kp.T]) / scale


def model_score_terms(model: AttentionClassifier, tokens: Any) -> np.ndarray:
    """The four score terms of a model with a position signal, for a batch of sequences.

    For ``combine="add"`` the token part is :math:`s\\,E[\\text{tokens}]` and the
    position part the position table. For ``combine="concat"`` the two parts
    are padded with zeros to the full width, :math:`[X; 0]` and :math:`[0; P]`,
    so that their sum is the concatenation and the same expansion holds
    (with the token and position blocks of :math:`W_Q, W_K` doing the work).

    Returns
    -------
    numpy.ndarray
        Shape ``(4, n_models, batch, L, L)``, in the order of
        :data:`SCORE_TERMS`; the sum over the first axis is the model's own
        score matrix.
    """
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__}")
    if model.position == "none":
        raise ValueError("model must have a position signal (position is 'none')")
    tokens = model._check_tokens(tokens)
    n, batch, length = model.n_models, tokens.shape[-2], model.length
    x = (
        model.embedding_scale
        * model.params["token_embedding"][np.arange(n).reshape(n, 1, 1), tokens]
    )  # (n, batch, L, d_x)
    codes = np.broadcast_to(model.position_codes()[:, None], (n, batch, length, model.d_position))
    if model.combine == "concat":
        x = np.concatenate([x, np.zeros((n, batch, length, model.d_position))], axis=-1)
        codes = np.concatenate([np.zeros((n, batch, length, model.d_token)), codes], axis=-1)
    w_q = model.params["w_q"][:, None]
    w_k = model.params["w_k"][:, None]
    qx, qp, kx, kp = x @ w_q, codes @ w_q, x @ w_k, codes @ w_k
    tr = (0, 1, 3, 2)
    terms = [qx @ kx.transpose(tr), qx @ kp.transpose(tr), qp @ kx.transpose(tr)]
    terms.append(qp @ kp.transpose(tr))
    return np.stack(terms) / math.sqrt(model.d_k)


def accuracy_with_terms(
    model: AttentionClassifier,
    tokens: Any,
    labels: Any,
    keep: Sequence[str],
    ablation: str = "zero",
) -> np.ndarray:
    """Accuracy of every copy when the attention scores keep only the terms in ``keep``.

    An ablation at inference time: the score matrix is rebuilt from the
    chosen terms of :func:`model_score_terms`, and the rest of the forward
    pass (values, mean pooling, read-out) is the model's own. Nothing is
    retrained. With all four terms kept the result is
    :meth:`~posenc.model.AttentionClassifier.accuracy`. A dropped term is

    * ``ablation="zero"``: set to zero, which removes both what it says
      about the tokens and its average over the sequences (for a cross
      term, a bias that depends on the query and key positions only);
    * ``ablation="mean"``: replaced by its mean over the sequences of the
      batch, for every query and key position (and every copy), which
      removes only what varies with the tokens.

    Parameters
    ----------
    model : AttentionClassifier
        A model with a position signal.
    tokens : array_like of int
        Shape ``(batch, L)``, or ``(n_models, batch, L)``.
    labels : array_like of int
        Shape ``(batch,)``, or ``(n_models, batch)``, matching ``tokens``.
    keep : sequence of str
        Names from :data:`SCORE_TERMS`, at least one, each at most once.
    ablation : {"zero", "mean"}
        What a dropped term becomes.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_models,)``, in ``[0, 1]``.

    Examples
    --------
    >>> model = AttentionClassifier(4, 4, 2, d_token=4, position="learned", seeds=(0, 1))
    >>> tokens, labels = np.array([[0, 1, 2, 3], [3, 2, 1, 0]]), np.array([0, 1])
    >>> bool(np.all(accuracy_with_terms(model, tokens, labels, SCORE_TERMS)
    ...             == model.accuracy(tokens, labels)))
    True
    """
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__}")
    if isinstance(keep, str) or not isinstance(keep, Iterable):
        raise TypeError(f"keep must be a sequence of names from {SCORE_TERMS}, got {keep!r}")
    keep = [check_choice("keep", name, SCORE_TERMS) for name in keep]
    if not keep or len(set(keep)) != len(keep):
        raise ValueError(
            f"keep must name at least one of {SCORE_TERMS}, each at most once, got {keep}"
        )
    ablation = check_choice("ablation", ablation, ("zero", "mean"))
    if model.n_layers != 1:
        raise ValueError(f"model must have one layer for this ablation, got {model.n_layers}")
    terms = model_score_terms(model, tokens)  # checks model and tokens
    tokens = model._check_tokens(tokens)
    labels = model._check_labels(labels, tokens)
    scores = terms[[SCORE_TERMS.index(name) for name in keep]].sum(axis=0)
    if ablation == "mean":
        dropped = [SCORE_TERMS.index(name) for name in SCORE_TERMS if name not in keep]
        if dropped:
            scores = scores + terms[dropped].sum(axis=0).mean(axis=1, keepdims=True)
    weights = _softmax_last(scores)  # (n, batch, L, L), the model's own softmax
    values = model.attention_input(tokens) @ model.params["w_v"][:, None]
    pooled = (weights @ values).mean(axis=-2)  # (n, batch, d_v)
    logits = pooled @ model.params["w_out"] + model.params["b_out"][:, None, :]
    return (logits.argmax(axis=-1) == labels).mean(axis=-1)


def term_sizes(terms: Any) -> np.ndarray:
    """How much each score term moves the attention weights: its spread over the keys.

    Softmax ignores any number added to a whole row of scores (the same for
    every key), so each term is first centred, row by row, on its mean over
    the keys; the size is the root-mean-square of what is left.

    Parameters
    ----------
    terms : array_like
        Shape ``(4, L, L)`` from :func:`score_terms`, or
        ``(4, n_models, ..., L, L)`` from :func:`model_score_terms`.

    Returns
    -------
    numpy.ndarray
        Shape ``(4,)`` or ``(4, n_models)``.

    Examples
    --------
    >>> rows_only = np.broadcast_to(np.arange(3.0)[:, None], (4, 3, 3))  # constant along rows
    >>> term_sizes(rows_only)
    array([0., 0., 0., 0.])
    """
    terms = check_array("terms", terms)
    if terms.ndim < 3 or terms.shape[0] != len(SCORE_TERMS) or terms.shape[-1] != terms.shape[-2]:
        raise ValueError(f"terms must have shape (4, ..., L, L), got {terms.shape}")
    centred = terms - terms.mean(axis=-1, keepdims=True)
    axes = tuple(range(1, terms.ndim)) if terms.ndim == 3 else tuple(range(2, terms.ndim))
    return np.sqrt(np.mean(np.square(centred), axis=axes))


def token_code_ratio(model: AttentionClassifier) -> np.ndarray:
    """Mean length of the token vectors over mean length of the position codes.

    The token vectors are the rows of the token table times the model's
    ``embedding_scale`` (what enters the sum or the concatenation); the
    codes are the sinusoidal table or the learned table. One ratio per
    copy of the model.

    Returns
    -------
    numpy.ndarray
        ``(n_models,)``, float.

    Examples
    --------
    >>> model = AttentionClassifier(8, 8, 8, d_token=16, seeds=range(3))
    >>> bool(np.all((1.2 < token_code_ratio(model)) & (token_code_ratio(model) < 1.6)))
    True
    """
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__}")
    codes = model.position_codes()
    if codes is None:
        raise ValueError("model has no position codes (position='none')")
    tokens = model.embedding_scale * model.params["token_embedding"].astype(float)
    token_length = np.linalg.norm(tokens, axis=-1).mean(axis=-1)
    code_length = np.linalg.norm(codes.astype(float), axis=-1).mean(axis=-1)
    return token_length / code_length


def steps_to_threshold(steps: Any, accuracy: Any, threshold: float) -> np.ndarray:
    """First recorded step at which each seed's accuracy reaches ``threshold``.

    Parameters
    ----------
    steps : array_like of int
        ``(n_eval,)``.
    accuracy : array_like
        ``(n_eval, n_seeds)``.

    Returns
    -------
    numpy.ndarray
        ``(n_seeds,)``, float; ``inf`` for a seed that never reaches it.

    Examples
    --------
    >>> steps_to_threshold([0, 10, 20], [[0.1, 0.1], [0.6, 0.2], [0.9, 0.3]], 0.5)
    array([10., inf])
    """
    steps = check_array("steps", steps, ndim=1)
    accuracy = check_array("accuracy", accuracy, ndim=2)
    if accuracy.shape[0] != steps.size:
        raise ValueError(
            f"accuracy must have {steps.size} rows (one per step), got {accuracy.shape}"
        )
    threshold = check_real("threshold", threshold, minimum=0.0, maximum=1.0)
    reached = accuracy >= threshold
    first = np.where(reached.any(axis=0), steps[reached.argmax(axis=0)], np.inf)
    return first.astype(float)


# -- the read-out over many random token tables ----------------------------------------


def _progress(done: int, total: int, started: float, out: Any, unit: str = "cells") -> None:
    import time

    elapsed = time.perf_counter() - started
    eta = elapsed / done * (total - done) if done else float("nan")
    filled = int(30 * done / total)
    out.write(
        f"\r[{'#' * filled}{' ' * (30 - filled)}] {done}/{total} {unit}"
        f"  {elapsed / 60:5.1f} min elapsed, about {eta / 60:5.1f} min left"
    )
    out.flush()


#: The grids of :func:`readout_draws`: widths (at two token scales) and
#: token-to-code length ratios at ``d = 64``.
READOUT_WIDTHS = (8, 16, 32, 64, 96, 128)
READOUT_RATIOS = tuple(2.0**k for k in range(-4, 5))


def _readout_job(job: tuple[int, float, int]) -> tuple[float, float]:
    d, scale, seed = job
    return readout_accuracy(d, scale=scale, seed=seed)


def readout_draws(
    n_draws: int = 20,
    *,
    d_values: Sequence[int] = READOUT_WIDTHS,
    ratios: Sequence[float] = READOUT_RATIOS,
    d_fixed: int = 64,
    processes: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """:func:`readout_accuracy` over ``n_draws`` random token tables (seeds ``0 ..``).

    The draws are independent, so ``processes`` worker processes give the
    same numbers as one; ``progress`` draws a bar on standard error.

    Returns
    -------
    dict
        JSON-ready: the grids, and the token and position recovery of every
        draw, ``"by_width"`` ``{"x1" | "x sqrt(d)": (n_d, n_draws, 2)}`` and
        ``"by_ratio"`` ``(n_ratios, n_draws, 2)``.
    """
    import sys
    import time

    n_draws = check_integer("n_draws", n_draws, minimum=1)
    processes = check_integer("processes", processes, minimum=1)
    code_length = math.sqrt(d_fixed / 2)
    factors = (("x1", lambda d: 1.0), ("x sqrt(d)", math.sqrt))
    jobs = [(d, factor(d), s) for _, factor in factors for d in d_values for s in range(n_draws)]
    jobs += [(d_fixed, r * code_length, s) for r in ratios for s in range(n_draws)]
    started = time.perf_counter()
    answers: list[tuple[float, float]] = []

    def collect(results: Iterable[tuple[float, float]]) -> None:
        for answer in results:
            answers.append(answer)
            if progress and (len(answers) % n_draws == 0 or len(answers) == len(jobs)):
                _progress(len(answers), len(jobs), started, sys.stderr, "draws")

    if processes == 1:
        collect(map(_readout_job, jobs))
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            collect(pool.imap(_readout_job, jobs, chunksize=4))
    if progress:
        sys.stderr.write("\n")
    n_width = len(d_values) * n_draws
    by_width = {
        name: [
            answers[k * n_width + i * n_draws : k * n_width + (i + 1) * n_draws]
            for i in range(len(d_values))
        ]
        for k, (name, _) in enumerate(factors)
    }
    rest = answers[len(factors) * n_width :]
    by_ratio = [rest[i * n_draws : (i + 1) * n_draws] for i in range(len(ratios))]
    return {
        "n_draws": n_draws,
        "d_values": list(d_values),
        "ratios": list(ratios),
        "d_fixed": d_fixed,
        "by_width": by_width,
        "by_ratio": by_ratio,
    }
