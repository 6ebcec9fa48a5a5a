"""Addition or concatenation: the analysis and the experiment of chapter 5.

Two groups of functions.

The analysis (pure linear algebra and geometry, no training):

* :func:`split_weight`: the two blocks of a linear layer that follows a
  concatenation, :math:`W [x; p] = W_x x + W_p p`;
* :func:`parameter_count`: the trainable parameters of every variant of
  :class:`posenc.model.AttentionClassifier`, in closed form;
* :func:`token_position_cosines`: how close to orthogonal random token
  embeddings are to the sinusoidal position codes, as ``d`` grows;
* :func:`readout_accuracy`: how much of the token and of the position a
  least-squares linear read-out recovers from their sum;
* :func:`score_terms` and :func:`model_score_terms`: the four terms of the
  attention score of a sum (token-token, token-position, position-token,
  position-position);
* :func:`accuracy_with_terms`: the accuracy of a trained model when its
  attention scores keep only some of the four terms (an ablation).

The experiment (training the small attention model of :mod:`posenc.model`
on the order tasks of :mod:`posenc.tasks`):

* :func:`variant_spec`: the widths of each variant, matched to the added
  model at equal width or at equal parameter count;
* :func:`run_experiment`, :func:`summarise`, :func:`learning_curves`;
* :func:`mean_confidence_interval` (Student t) and :func:`chance_interval`
  (binomial).

The designed experiment (the comparison that chapter 5's verdict rests on):

* :class:`Design`: regimes, models, seeds, budget, learning-rate candidates,
  equivalence margin and error rate, all fixed before any result is seen;
* :func:`run_cell` and :func:`run_design` (``make experiments``, which
  writes ``results/ch5_experiment.json``), and the follow-ups
  :data:`LONG_BUDGET` (four times the budget) and :data:`TOKEN_SCALE`
  (added models with short token vectors), with :func:`token_code_ratio`;
* :func:`welch_test`, :func:`tost`, :func:`holm`, :func:`power_two_sample`,
  :func:`seeds_for_power`: the statistics;
* :func:`compare_design`, :func:`budget_curve`, :func:`steps_to_threshold`:
  the comparisons read from a results file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from .encodings import sinusoidal
from .model import AttentionClassifier, TrainingHistory, _softmax_last, check_seeds, train
from .similarity import cosine_similarity_matrix
from .stats import choose_rate
from .tasks import TaskData
from .validation import check_array, check_choice, check_integer, check_real

__all__ = [
    "CONFIGURATIONS",
    "DESIGN_MODELS",
    "LONG_BUDGET",
    "MATCHINGS",
    "SCORE_TERMS",
    "TOKEN_SCALE",
    "TOKEN_SCALES",
    "TOKEN_SCALE_REFERENCE",
    "VARIANTS",
    "Comparison",
    "Design",
    "ExperimentResult",
    "Run",
    "SummaryRow",
    "VariantSpec",
    "accuracy_with_terms",
    "budget_curve",
    "cell_accuracy",
    "chance_interval",
    "compare_design",
    "design_task",
    "difference_interval",
    "family_tests",
    "format_cells",
    "format_comparisons",
    "format_summary",
    "holm",
    "learning_curves",
    "load_results",
    "mean_confidence_interval",
    "model_score_terms",
    "parameter_count",
    "power_two_sample",
    "readout_accuracy",
    "readout_draws",
    "run_cell",
    "run_design",
    "run_experiment",
    "score_terms",
    "seeds_for_power",
    "split_weight",
    "steps_to_threshold",
    "summarise",
    "term_sizes",
    "token_code_ratio",
    "token_position_cosines",
    "tost",
    "variant_spec",
    "welch_test",
    "with_added_models_of",
]

VARIANTS = ("none", "sinusoidal-add", "sinusoidal-concat", "learned-add", "learned-concat")
MATCHINGS = ("width", "parameters")
# The seven models of the experiment: the reference models (no position,
# added codes) need no matching; each concatenated model comes twice.
CONFIGURATIONS = (
    ("none", "width"),
    ("sinusoidal-add", "width"),
    ("sinusoidal-concat", "width"),
    ("sinusoidal-concat", "parameters"),
    ("learned-add", "width"),
    ("learned-concat", "width"),
    ("learned-concat", "parameters"),
)
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


# -- the experiment ---------------------------------------------------------------------


@dataclass(frozen=True)
class VariantSpec:
    """Widths and size of one model of the experiment.

    Attributes
    ----------
    variant : str
        One of :data:`VARIANTS`.
    matching : str
        ``"width"`` or ``"parameters"`` (for the reference models, no
        position and added codes, both give the same widths).
    position, combine : str
        Arguments of :class:`~posenc.model.AttentionClassifier`.
    d_token, d_position, width, d_k, d_v : int
        The widths; ``width`` is the input width of the attention layer.
    n_parameters : int
        Trainable parameters of one model.
    """

    variant: str
    matching: str
    position: str
    combine: str
    d_token: int
    d_position: int
    width: int
    d_k: int
    d_v: int
    n_parameters: int
    n_layers: int = 1

    @property
    def label(self) -> str:
        """Readable name, e.g. ``"sinusoidal concat, equal parameters"``."""
        if self.variant == "none":
            return "no position"
        name = self.variant.replace("-", " ")
        if self.combine == "add":
            return name
        return f"{name}, equal {'width' if self.matching == 'width' else 'parameters'}"


def variant_spec(
    variant: str,
    matching: str,
    *,
    d_model: int,
    vocab_size: int,
    length: int,
    n_classes: int,
    n_layers: int = 1,
) -> VariantSpec:
    """The widths of one variant, matched to the added model of width ``d_model``.

    Every model has queries and keys of width ``d_k = d_model``, and values
    of width ``d_v = d_model`` with one layer, or of the input width with
    two (the residual stream); only the input of the attention layer differs:

    * ``"none"``: tokens of width ``d_model``, no position signal;
    * ``"*-add"``: tokens and codes of width ``d_model``, added (the reference);
    * ``"*-concat"`` at equal **width**: tokens and codes of ``d_model / 2``
      columns each, concatenated to width ``d_model`` (``d_model`` even);
    * ``"*-concat"`` at equal **parameters**: tokens and codes of ``m``
      columns each (width ``2m``), with ``m`` the integer whose
      :func:`parameter_count` is closest to the added model's (the smaller
      ``m`` on a tie). The counts then differ by less than one step of ``m``;
      the exact numbers are in ``n_parameters``.

    Examples
    --------
    >>> spec = variant_spec("learned-concat", "parameters", d_model=16, vocab_size=8,
    ...                     length=8, n_classes=8)
    >>> spec.d_token, spec.width, spec.n_parameters
    (9, 18, 1144)
    """
    variant = check_choice("variant", variant, VARIANTS)
    matching = check_choice("matching", matching, MATCHINGS)
    d_model = check_integer("d_model", d_model, minimum=2)
    n_layers = check_integer("n_layers", n_layers, minimum=1, maximum=2)
    sizes = {
        "vocab_size": check_integer("vocab_size", vocab_size, minimum=1),
        "length": check_integer("length", length, minimum=1),
        "n_classes": check_integer("n_classes", n_classes, minimum=2),
        "d_k": d_model,
        "n_layers": n_layers,
    }

    def value_width(width: int) -> int:
        return width if n_layers == 2 else d_model

    if variant == "none":
        position, combine, d_token, d_position = "none", "add", d_model, 0
    else:
        position, combine = variant.split("-")
        if combine == "add":
            d_token = d_position = d_model
        elif matching == "width":
            if d_model % 2:
                raise ValueError(f"d_model must be even to split it in two halves, got {d_model}")
            d_token = d_position = d_model // 2
        else:
            target = parameter_count(
                d_token=d_model,
                d_position=d_model,
                position=position,
                combine="add",
                d_v=value_width(d_model),
                **sizes,
            )

            def gap(m: int) -> int:
                count = parameter_count(
                    d_token=m,
                    d_position=m,
                    position=position,
                    combine="concat",
                    d_v=value_width(2 * m),
                    **sizes,
                )
                return abs(count - target)

            d_token = d_position = min(range(1, 2 * d_model + 1), key=lambda m: (gap(m), m))
    concat = position != "none" and combine == "concat"
    width = d_token + d_position if concat else d_token
    count = parameter_count(
        d_token=d_token,
        d_position=d_position,
        position=position,
        combine=combine,
        d_v=value_width(width),
        **sizes,
    )
    return VariantSpec(
        variant=variant,
        matching=matching,
        position=position,
        combine=combine,
        d_token=d_token,
        d_position=d_position,
        width=width,
        d_k=d_model,
        d_v=value_width(width),
        n_parameters=count,
        n_layers=n_layers,
    )


def _build(
    spec: VariantSpec,
    task: TaskData,
    seeds: tuple[int, ...],
    dtype: str,
    embedding_scale: float = 1.0,
) -> AttentionClassifier:
    return AttentionClassifier(
        task.vocab_size,
        task.length,
        task.n_classes,
        d_token=spec.d_token,
        d_position=spec.d_position or None,
        d_k=spec.d_k,
        d_v=spec.d_v,
        position=spec.position,
        combine=spec.combine,
        seeds=seeds,
        n_layers=spec.n_layers,
        dtype=dtype,
        embedding_scale=embedding_scale,
    )


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


@dataclass(frozen=True)
class Run:
    """One configuration trained on one task, for every seed.

    Attributes
    ----------
    task : str
        Task name.
    spec : VariantSpec
    model : AttentionClassifier
        The trained model (one copy per seed).
    history : TrainingHistory
    """

    task: str
    spec: VariantSpec
    model: AttentionClassifier
    history: TrainingHistory

    @property
    def accuracies(self) -> np.ndarray:
        """Final test accuracy of every seed, ``(n_seeds,)``."""
        return self.history.final_accuracy


@dataclass(frozen=True)
class ExperimentResult:
    """Every run of :func:`run_experiment`, in task-major order.

    Attributes
    ----------
    runs : tuple of Run
    seeds : tuple of int
    n_test : dict of str to int
        Test-set size of every task.
    """

    runs: tuple[Run, ...]
    seeds: tuple[int, ...]
    n_test: dict[str, int]

    @property
    def tasks(self) -> tuple[str, ...]:
        """Task names, in the order they were run."""
        return tuple(dict.fromkeys(run.task for run in self.runs))

    def run(self, task: str, label: str) -> Run:
        """The run of configuration ``label`` (see :attr:`VariantSpec.label`) on ``task``."""
        for candidate in self.runs:
            if candidate.task == task and candidate.spec.label == label:
                return candidate
        labels = sorted({r.spec.label for r in self.runs})
        raise KeyError(f"no run for task {task!r} and label {label!r}; labels are {labels}")


def run_experiment(
    tasks: Sequence[TaskData],
    *,
    d_model: int = 16,
    seeds: Iterable[int] = range(5),
    configurations: Sequence[tuple[str, str]] = CONFIGURATIONS,
    steps: int = 300,
    batch_size: int = 32,
    learning_rate: float = 1e-2,
    eval_every: int = 50,
    dtype: str = "float32",
) -> ExperimentResult:
    """Train every configuration on every task, one model per seed.

    Parameters
    ----------
    tasks : sequence of TaskData
    d_model : int
        Width of the reference (added) model.
    seeds : iterable of int
        One independent model per seed (initialisation and mini-batch order).
    configurations : sequence of (variant, matching)
        Defaults to :data:`CONFIGURATIONS`, the seven models of the chapter.
    steps, batch_size, learning_rate, eval_every
        Passed to :func:`posenc.model.train`.
    dtype : {"float32", "float64"}
        Precision of the models; single precision by default, which is faster
        than double (``benchmarks/bench_model.py`` measures by how much).

    Returns
    -------
    ExperimentResult
    """
    tasks = tuple(tasks)
    if not tasks or not all(isinstance(t, TaskData) for t in tasks):
        raise TypeError("tasks must be a non-empty sequence of TaskData")
    seeds = check_seeds(list(seeds))
    if not configurations:
        raise ValueError("configurations must not be empty")
    runs = []
    for task in tasks:
        for variant, matching in configurations:
            spec = variant_spec(
                variant,
                matching,
                d_model=d_model,
                vocab_size=task.vocab_size,
                length=task.length,
                n_classes=task.n_classes,
            )
            model = _build(spec, task, seeds, dtype)
            history = train(
                model,
                task.train_tokens,
                task.train_labels,
                task.test_tokens,
                task.test_labels,
                steps=steps,
                batch_size=batch_size,
                learning_rate=learning_rate,
                eval_every=eval_every,
            )
            runs.append(Run(task.name, spec, model, history))
    n_test = {task.name: int(task.test_labels.size) for task in tasks}
    return ExperimentResult(tuple(runs), seeds, n_test)


def mean_confidence_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of a small sample.

    The half-width is :math:`t_{n-1} \\, s / \\sqrt{n}`, with :math:`s` the
    sample standard deviation and :math:`t_{n-1}` the two-sided quantile of
    Student's t distribution with ``n - 1`` degrees of freedom.

    Returns
    -------
    (float, float, float)
        ``(mean, low, high)``.

    Examples
    --------
    >>> mean, low, high = mean_confidence_interval([1.0, 2.0, 3.0])
    >>> round(high - mean, 4)  # t = 4.3027 for 2 degrees of freedom, s = 1, n = 3
    2.4841
    """
    values = check_array("values", values, ndim=1)
    if values.size < 2:
        raise ValueError(f"values must hold at least 2 numbers, got {values.size}")
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    mean = float(values.mean())
    half = (
        float(stats.t.ppf(0.5 + confidence / 2, values.size - 1))
        * float(values.std(ddof=1))
        / math.sqrt(values.size)
    )
    return mean, mean - half, mean + half


def difference_interval(a: Any, b: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    r"""Difference of two means, ``mean(a) - mean(b)``, with Welch's confidence interval.

    The standard error is :math:`\sqrt{s_a^2/n_a + s_b^2/n_b}` and the
    degrees of freedom follow Welch and Satterthwaite. If both samples have
    zero spread the interval is the single point of the difference.

    Returns
    -------
    (float, float, float)
        ``(difference, low, high)``.

    Examples
    --------
    >>> difference_interval([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    (0.0, 0.0, 0.0)
    >>> diff, low, high = difference_interval([0.9, 1.0, 0.8], [0.5, 0.6, 0.4])
    >>> round(diff, 4), bool(low > 0)
    (0.4, True)
    """
    a = check_array("a", a, ndim=1)
    b = check_array("b", b, ndim=1)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"a and b must hold at least 2 numbers each, got {a.size} and {b.size}")
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0.0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * math.sqrt(va + vb)
    return diff, diff - half, diff + half


def chance_interval(n_test: int, chance: float, confidence: float = 0.95) -> tuple[float, float]:
    """Range of accuracies a constant guess reaches on ``n_test`` examples, with ``confidence``.

    A model that answers one class whose share of the test set is
    ``chance`` in expectation gets a binomial number of answers right; the
    interval is the central binomial interval divided by ``n_test``.

    Examples
    --------
    >>> chance_interval(500, 0.5)
    (0.456, 0.544)
    """
    n_test = check_integer("n_test", n_test, minimum=1)
    chance = check_real("chance", chance, minimum=0.0, maximum=1.0)
    confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    low, high = stats.binom.interval(confidence, n_test, chance)
    return float(low) / n_test, float(high) / n_test


@dataclass(frozen=True)
class SummaryRow:
    """Test accuracy of one configuration on one task, over the seeds."""

    task: str
    label: str
    d_token: int
    d_position: int
    width: int
    n_parameters: int
    accuracies: np.ndarray
    mean: float
    low: float
    high: float


def summarise(result: ExperimentResult, confidence: float = 0.95) -> list[SummaryRow]:
    """Mean test accuracy and its Student-t interval for every run.

    The interval is cut to ``[0, 1]``, the range an accuracy can take (with
    five seeds near 100 %, the symmetric t interval would reach past it).
    """
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    rows = []
    for run in result.runs:
        mean, low, high = mean_confidence_interval(run.accuracies, confidence)
        low, high = max(low, 0.0), min(high, 1.0)  # an accuracy lies in [0, 1]
        spec = run.spec
        rows.append(
            SummaryRow(
                run.task,
                spec.label,
                spec.d_token,
                spec.d_position,
                spec.width,
                spec.n_parameters,
                run.accuracies.copy(),
                mean,
                low,
                high,
            )
        )
    return rows


def format_summary(rows: Sequence[SummaryRow]) -> str:
    """The summary as a text table, one block per task, accuracies in percent with one decimal.

    Examples
    --------
    >>> row = SummaryRow("relative", "learned add", 16, 16, 16, 1058,
    ...                  np.array([0.97, 0.99]), 0.98, 0.853, 1.0)
    >>> print(format_summary([row]))
    relative task                        width  params   mean %   95% interval %
      learned add                           16    1058     98.0   [ 85.3, 100.0]
    """
    lines = []
    task = None
    for r in rows:
        if r.task != task:
            task = r.task
            lines.append(
                f"{task + ' task':<36} {'width':>5}  {'params':>6}  {'mean %':>7}   95% interval %"
            )
        lines.append(
            f"  {r.label:<35} {r.width:>4}  {r.n_parameters:>6}  {100 * r.mean:7.1f}"
            f"   [{100 * r.low:5.1f}, {100 * r.high:5.1f}]"
        )
    return "\n".join(lines)


def learning_curves(
    result: ExperimentResult, task: str
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Test accuracy during training on ``task``, per configuration, over the seeds.

    Returns
    -------
    (numpy.ndarray, dict of str to numpy.ndarray)
        The steps ``(n_eval,)`` and, for every configuration label, an array
        ``(3, n_eval)``: the mean, the lowest and the highest accuracy over
        the seeds.
    """
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    task = check_choice("task", task, result.tasks)
    curves = {}
    steps = None
    for run in result.runs:
        if run.task != task:
            continue
        acc = run.history.test_accuracy
        steps = run.history.steps
        curves[run.spec.label] = np.stack([acc.mean(axis=1), acc.min(axis=1), acc.max(axis=1)])
    return steps, curves


# -- the designed experiment: regimes, learning-rate sweep, many seeds ------------------

#: The token scales a :class:`Design` can train with (see ``Design.token_scale``).
TOKEN_SCALES = ("1", "1/sqrt(d)")

#: The six models of the designed experiment: each code added; concatenated
#: at (as nearly as the integer widths allow) equal parameters, the primary
#: comparison; and concatenated at equal width, the secondary one.
DESIGN_MODELS = (
    ("sinusoidal-add", "width"),
    ("sinusoidal-concat", "parameters"),
    ("sinusoidal-concat", "width"),
    ("learned-add", "width"),
    ("learned-concat", "parameters"),
    ("learned-concat", "width"),
)


@dataclass(frozen=True)
class Design:
    r"""Everything fixed before the designed experiment is run.

    The defaults are the design of chapter 5; :func:`run_design` trains it
    and ``make experiments`` writes the result to ``results/ch5_experiment.json``.

    Attributes
    ----------
    regimes : tuple of (int, int, int)
        ``(L, d_model, n_layers)`` of every regime.
    models : tuple of (str, str)
        ``(variant, matching)`` of every model, see :func:`variant_spec`.
    task : str
        The task of :func:`posenc.tasks.make_task`.
    n_train, n_validation, n_test : int
        Sizes of the three sets (the validation set chooses the learning rate).
    seeds : int
        Independent models per cell (seeds ``0 .. seeds - 1``).
    steps, batch_size, eval_every : int
        Training budget, mini-batch size, and how often the test accuracy is recorded.
    learning_rates : tuple of float
        Candidates of the sweep; each model keeps the one with the best
        mean validation score at the end of the budget (see ``selection``).
    lower_rates, higher_rates : tuple of float
        Where the best rate is the smallest (largest) tried so far, the
        sweep goes on with the next of these, one at a time, while any is
        left: the grid is extended past an edge that it chose.
    sweep_seeds : int
        Seeds per candidate in the sweep (seeds ``1000, 1001, ...``: none is
        a seed of the main runs).
    tie_band, tie_tolerance : float
        Rates whose mean validation score lies within ``tie_tolerance`` of
        the best (or within ``tie_band`` standard errors of the difference)
        are tied, and the smallest of them is kept
        (:func:`posenc.stats.choose_rate`), so that a few roundings do not
        decide between rates that score the same (a seed that rounding tips
        still can: it moves a four-seed mean by up to 0.25). Files from before these fields
        (both 0) kept the best mean alone, with the ties described under
        ``selection``.
    margin : float
        Equivalence margin of the TOST, as a difference of accuracies.
    alpha : float
        Family-wise error rate of the tests (Holm's correction).
    threshold : float
        Accuracy whose first crossing gives the steps-to-threshold.
    ceiling : float
        A comparison whose two means both reach this accuracy is at the ceiling.
    dtype : str
        Precision of training.
    token_scale : {"1", "1/sqrt(d)"}
        The fixed factor ``embedding_scale`` of every model's token
        embeddings: ``"1"`` (the main design: token vectors start about
        :math:`\sqrt 2` times as long as the sinusoidal code) or
        ``"1/sqrt(d)"`` with ``d`` the regime's ``d_model`` (token vectors
        start with length about 1, the scale of a table initialised with
        standard deviation :math:`1/\sqrt d` and used without the
        :math:`\sqrt{d_{\mathrm{model}}}` factor). A fixed factor also scales every
        update of the token vectors, so they stay short throughout training.
    selection : {"loss", "accuracy"}
        The validation score of the sweep: ``"accuracy"``, the mean accuracy
        of each rate over its sweep seeds, or ``"loss"``, the mean
        cross-entropy. With ``tie_tolerance = 0.01`` (the design) every rate
        within one point of the best accuracy ties with it and the smallest
        is kept: among rates that saturate, the smallest that does. History,
        numbered as in chapter 5: the first and second runs chose by accuracy
        with exact ties broken by the mean at half the budget, then the
        smaller rate (a results file without this field was made so); the
        third by the lowest mean loss, which does not saturate but leaned to
        larger rates and, over two seeds, let a single failed seed or the
        last bits decide; the fourth tied every rate within two standard
        errors of the best loss (``tie_band``) and kept the smallest, which
        kept rates too small to train, so it was rejected and its results
        were not kept; the fifth (this design) by accuracy with the
        tolerance, over four seeds per rate.
    """

    regimes: tuple[tuple[int, int, int], ...] = (
        (8, 16, 1),
        (8, 32, 1),
        (32, 16, 1),
        (32, 32, 1),
        (64, 16, 1),
        (64, 32, 1),
        (8, 16, 2),
        (32, 16, 2),
        (64, 16, 2),
    )
    models: tuple[tuple[str, str], ...] = DESIGN_MODELS
    task: str = "absolute"
    n_train: int = 2000
    n_validation: int = 500
    n_test: int = 500
    seeds: int = 20
    steps: int = 600
    batch_size: int = 16
    eval_every: int = 50
    learning_rates: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1)
    lower_rates: tuple[float, ...] = (0.001, 0.0003)
    higher_rates: tuple[float, ...] = (0.3,)
    sweep_seeds: int = 4
    tie_band: float = 0.0
    tie_tolerance: float = 0.01
    margin: float = 0.03
    alpha: float = 0.05
    threshold: float = 0.5
    ceiling: float = 0.97
    dtype: str = "float32"
    selection: str = "accuracy"
    token_scale: str = "1"

    def __post_init__(self) -> None:
        check_choice("selection", self.selection, ("loss", "accuracy"))
        check_choice("token_scale", self.token_scale, TOKEN_SCALES)

    def embedding_scale(self, d_model: int) -> float:
        """The factor on the token embeddings in a regime of width ``d_model``."""
        d_model = check_integer("d_model", d_model, minimum=1)
        return 1.0 if self.token_scale == "1" else 1.0 / math.sqrt(d_model)

    def jobs(self) -> list[tuple[int, int, int, str, str]]:
        """Every cell of the design: ``(L, d_model, n_layers, variant, matching)``."""
        return [(*regime, *model) for regime in self.regimes for model in self.models]

    def as_dict(self) -> dict[str, Any]:
        """The design as plain JSON-ready values."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["regimes"] = [list(r) for r in self.regimes]
        out["models"] = [list(m) for m in self.models]
        for name in ("learning_rates", "lower_rates", "higher_rates"):
            out[name] = list(getattr(self, name))
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Design:
        """Inverse of :meth:`as_dict`."""
        values = dict(values)
        values.setdefault("selection", "accuracy")  # files from before the field existed
        values.setdefault("token_scale", "1")
        values.setdefault("tie_band", 0.0)  # files from before the tie rule
        values.setdefault("tie_tolerance", 0.0)
        values["regimes"] = tuple(tuple(int(v) for v in r) for r in values["regimes"])
        values["models"] = tuple(tuple(m) for m in values["models"])
        for name in ("learning_rates", "lower_rates", "higher_rates"):
            if name in values:
                values[name] = tuple(float(r) for r in values[name])
        return cls(**values)


def design_task(design: Design, length: int) -> TaskData:
    """The task of one regime: training, validation and test sets (seed 0)."""
    from .tasks import make_task

    return make_task(
        design.task,
        length=length,
        n_train=design.n_train,
        n_test=design.n_test,
        n_validation=design.n_validation,
        seed=0,
    )


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


def run_cell(
    design: Design,
    job: tuple[int, int, int, str, str],
    *,
    learning_rate: float | None = None,
    seeds: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Train one cell of the design: the learning-rate sweep, then every seed.

    The sweep trains ``sweep_seeds`` copies per candidate rate, all stacked in
    one model with a learning rate per copy, and scores each rate on the
    validation set after the full budget: each copy's accuracy
    (``design.selection == "accuracy"``) or cross-entropy (``"loss"``; a
    diverged copy makes its rate ineligible). :func:`posenc.stats.choose_rate`
    keeps the smallest rate whose mean lies within ``design.tie_tolerance``
    (or ``design.tie_band`` standard errors) of the best mean, so that
    a few roundings do not decide between rates that score the same. A design with
    neither (the files of the first runs) keeps the best mean alone; by
    accuracy its exact ties go to the mean at half the budget, then to the
    smaller rate. Both scores are recorded whichever chooses. While the
    smallest rate tried is tied with the best (the best is the largest
    tried), the next of ``lower_rates`` (``higher_rates``) is tried too,
    until none is left. The main run then trains seeds ``0 .. seeds - 1``
    with the chosen rate and records the test accuracy every ``eval_every``
    updates.

    ``learning_rate`` skips the sweep and trains at that rate (a spot check
    of a stored cell); ``seeds`` trains those seeds instead of the design's.

    Returns
    -------
    dict
        JSON-ready: the cell, its widths and parameter count, the sweep's
        validation accuracies and losses, the chosen rate, the recorded steps, the test
        accuracy ``(n_eval, seeds)``, the steps-to-threshold, the factor on the
        token embeddings and, for models with a position code, the
        :func:`token_code_ratio` of every seed before and after training.
    """
    if not isinstance(design, Design):
        raise TypeError(f"design must be a Design, got {type(design).__name__}")
    length, d_model, n_layers, variant, matching = job
    task = design_task(design, length)
    spec = variant_spec(
        variant,
        matching,
        d_model=d_model,
        vocab_size=task.vocab_size,
        length=length,
        n_classes=task.n_classes,
        n_layers=n_layers,
    )
    reference = variant_spec(
        variant.split("-")[0] + "-add" if variant != "none" else "none",
        "width",
        d_model=d_model,
        vocab_size=task.vocab_size,
        length=length,
        n_classes=task.n_classes,
        n_layers=n_layers,
    )
    half = max(1, design.steps // 2)
    scale = design.embedding_scale(d_model)
    tried: list[float] = []
    final: list[float] = []
    middle: list[float] = []
    losses: list[float] = []
    per_seed: list[list[float]] = []
    per_seed_accuracy: list[list[float]] = []

    def sweep(candidates: Sequence[float]) -> None:
        # Seeds 1000, 1001, ... in the order the rates are tried: none is a main seed.
        first = 1000 + len(tried) * design.sweep_seeds
        rates = np.repeat(np.array(candidates, dtype=float), design.sweep_seeds)
        model = _build(spec, task, tuple(range(first, first + rates.size)), design.dtype, scale)
        history = train(
            model,
            task.train_tokens,
            task.train_labels,
            task.validation_tokens,
            task.validation_labels,
            steps=design.steps,
            batch_size=design.batch_size,
            learning_rate=rates,
            eval_every=half,
        )
        shape = (len(candidates), design.sweep_seeds)
        tried.extend(float(r) for r in candidates)
        final.extend(history.final_accuracy.reshape(shape).mean(axis=1).tolist())
        per_seed_accuracy.extend(history.final_accuracy.reshape(shape).tolist())
        middle.extend(history.test_accuracy[1].reshape(shape).mean(axis=1).tolist())
        with threadpool_limits(limits=1, user_api="blas"):
            loss = model.loss(task.validation_tokens, task.validation_labels).astype(float)
        loss[~np.isfinite(loss)] = np.inf
        losses.extend(loss.reshape(shape).mean(axis=1).tolist())
        per_seed.extend(loss.reshape(shape).tolist())

    def best() -> tuple[float, list[float], float]:
        """The chosen rate, the rates tied with the best, and the best-scoring rate."""
        by_accuracy = design.selection == "accuracy"
        if by_accuracy and design.tie_band == 0 and design.tie_tolerance == 0:
            i = min(range(len(tried)), key=lambda i: (-final[i], -middle[i], tried[i]))
            return tried[i], [tried[i]], tried[i]
        i, tied = choose_rate(
            tried,
            per_seed_accuracy if by_accuracy else per_seed,
            higher_is_better=by_accuracy,
            band=design.tie_band,
            tolerance=design.tie_tolerance,
        )
        score = [-a for a in final] if by_accuracy else losses
        top = min(range(len(tried)), key=lambda i: (score[i], tried[i]))
        return tried[i], [tried[j] for j in tied], tried[top]

    if learning_rate is None:
        sweep(design.learning_rates)
        lower = [r for r in design.lower_rates if r not in tried]
        higher = [r for r in design.higher_rates if r not in tried]
        while True:
            rate, tied, top = best()
            if min(tried) in tied and lower:
                sweep([lower.pop(0)])
            elif top == max(tried) and higher:
                sweep([higher.pop(0)])
            else:
                break
    else:
        rate = check_real("learning_rate", learning_rate, positive=True)
        tied = [rate]
    seeds = tuple(range(design.seeds)) if seeds is None else tuple(int(s) for s in seeds)
    model = _build(spec, task, seeds, design.dtype, scale)
    ratio_start = token_code_ratio(model) if spec.position != "none" else None
    history = train(
        model,
        task.train_tokens,
        task.train_labels,
        task.test_tokens,
        task.test_labels,
        steps=design.steps,
        batch_size=design.batch_size,
        learning_rate=rate,
        eval_every=design.eval_every,
    )
    reach = steps_to_threshold(history.steps, history.test_accuracy, design.threshold)
    ratios = {}
    if ratio_start is not None:
        ratios = {
            "token_code_ratio": [
                np.round(ratio_start, 4).tolist(),
                np.round(token_code_ratio(model), 4).tolist(),
            ]
        }
    return {
        "length": length,
        "d_model": d_model,
        "n_layers": n_layers,
        "variant": variant,
        "matching": matching,
        "label": spec.label,
        "d_token": spec.d_token,
        "d_position": spec.d_position,
        "width": spec.width,
        "n_parameters": spec.n_parameters,
        "reference_parameters": reference.n_parameters,
        "sweep_rates": tried,
        "sweep_validation": [round(float(a), 6) for a in final],
        "sweep_validation_loss": [round(float(x), 6) if math.isfinite(x) else None for x in losses],
        "sweep_validation_per_seed": [
            [round(float(x), 6) for x in row] for row in per_seed_accuracy
        ],
        "sweep_validation_loss_per_seed": [
            [round(float(x), 6) if math.isfinite(x) else None for x in row] for row in per_seed
        ],
        "sweep_tied": tied,
        "learning_rate": rate,
        "steps": history.steps.tolist(),
        "test_accuracy": np.round(history.test_accuracy, 6).tolist(),
        "steps_to_threshold": [None if not np.isfinite(s) else int(s) for s in reach],
        "final_train_loss": np.round(history.train_loss[-20:].mean(axis=0), 6).tolist(),
        "embedding_scale": scale,
        **ratios,
    }


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


def run_design(
    design: Design | None = None,
    *,
    jobs: Sequence[tuple[int, int, int, str, str]] | None = None,
    processes: int = 1,
    progress: bool = True,
    cache: str | None = None,
) -> dict[str, Any]:
    """Run every cell of ``design`` (or only ``jobs``), in ``processes`` worker processes.

    Each cell is independent of every other and of the order in which they
    run, so the result does not depend on ``processes``. A progress bar goes
    to standard error. With ``cache`` (a folder), every finished cell is also
    written there, and cells already there (for the same design) are read
    instead of trained, so an interrupted run resumes.

    Returns
    -------
    dict
        ``{"design": design.as_dict(), "cells": [run_cell(...), ...]}``, the
        cells in the order of :meth:`Design.jobs`.
    """
    import sys
    import time

    design = Design() if design is None else design
    if not isinstance(design, Design):
        raise TypeError(f"design must be a Design, got {type(design).__name__}")
    todo = design.jobs() if jobs is None else [tuple(j) for j in jobs]
    processes = check_integer("processes", processes, minimum=1)
    # The slowest cells first, so that the workers finish together.
    order = sorted(range(len(todo)), key=lambda i: -(todo[i][0] ** 2) * todo[i][2] * todo[i][1])
    started = time.perf_counter()
    cells: list[dict[str, Any] | None] = [None] * len(todo)
    folder = None
    if cache is not None:
        import hashlib
        import json
        from pathlib import Path

        key = hashlib.sha256(json.dumps(design.as_dict(), sort_keys=True).encode()).hexdigest()
        folder = Path(cache) / key[:16]
        folder.mkdir(parents=True, exist_ok=True)

    def cached(i: int) -> Any:
        return None if folder is None else folder / ("_".join(map(str, todo[i])) + ".json")

    def keep(i: int, cell: dict[str, Any]) -> None:
        cells[i] = cell
        if folder is not None:
            cached(i).write_text(json.dumps(cell))

    for i in order:
        if folder is not None and cached(i).is_file():
            cells[i] = json.loads(cached(i).read_text())
    order = [i for i in order if cells[i] is None]
    done = len(todo) - len(order)
    if progress:
        _progress(done, len(todo), started, sys.stderr)
    if processes == 1:
        for n, i in enumerate(order, done + 1):
            keep(i, run_cell(design, todo[i]))
            if progress:
                _progress(n, len(todo), started, sys.stderr)
    elif order:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            pending = {i: pool.apply_async(run_cell, (design, todo[i])) for i in order}
            for n, i in enumerate(order, done + 1):
                keep(i, pending[i].get())
                if progress:
                    _progress(n, len(todo), started, sys.stderr)
    if progress:
        sys.stderr.write("\n")
    return {"design": design.as_dict(), "cells": cells}


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


#: The follow-up of the main design: the sinusoidal pair (added, and
#: concatenated at equal parameters) of every regime in which the main design
#: found concatenation better after the correction, trained four times as
#: long, to see whether each difference survives more training. The first
#: follow-up held only ``(64, 16, 1)``, chosen from a first look; the others
#: were added after the main results had been seen.
LONG_BUDGET = Design(
    regimes=((32, 32, 1), (64, 16, 1), (64, 32, 1), (64, 16, 2)),
    models=(("sinusoidal-add", "width"), ("sinusoidal-concat", "parameters")),
    steps=2400,
    eval_every=100,
)


#: The token-scale arm, added after the main results had been seen: the added
#: sinusoidal model of every regime with token vectors that start with length
#: about 1 instead of about :math:`\sqrt{d}` and stay short (a fixed factor
#: :math:`1/\sqrt d`), with the same seeds, data, budget and sweep rule as
#: :class:`Design`. It asks whether the concatenated models won because the
#: long token vectors of the added ones blurred the position in the sum.
TOKEN_SCALE = Design(models=(("sinusoidal-add", "width"),), token_scale="1/sqrt(d)")
#: The added sinusoidal models of the main design alone, the reference of
#: :data:`TOKEN_SCALE` (``make experiments`` retrains them beside it).
TOKEN_SCALE_REFERENCE = Design(models=(("sinusoidal-add", "width"),))


def main(argv: Sequence[str] | None = None) -> None:
    """Command line of ``make experiments``: run the design, write the results file."""
    import argparse
    import json
    import os
    import platform
    import resource
    import time
    from pathlib import Path

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", default="results/ch5_experiment.json")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--readout", help="write readout_draws() to this file instead")
    parser.add_argument("--cache", help="folder for finished cells (an interrupted run resumes)")
    parser.add_argument("--long-budget", action="store_true", help="run LONG_BUDGET instead")
    parser.add_argument("--token-scale", action="store_true", help="run TOKEN_SCALE instead")
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="with --token-scale: skip the retrain of the main design's added models",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.readout:
        draws = readout_draws(processes=args.processes, progress=True)
        draws["elapsed_seconds"] = round(time.perf_counter() - started, 1)
        draws["cpu_seconds"] = round(
            sum(
                u.ru_utime + u.ru_stime
                for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
            ),
            1,
        )
        Path(args.readout).parent.mkdir(parents=True, exist_ok=True)
        Path(args.readout).write_text(json.dumps(draws) + "\n")
        print(f"wrote {args.readout} in {draws['elapsed_seconds'] / 60:.1f} min")
        return
    if args.long_budget and args.token_scale:
        parser.error("--long-budget and --token-scale run different designs: choose one")
    design = LONG_BUDGET if args.long_budget else TOKEN_SCALE if args.token_scale else Design()
    result = run_design(design, processes=args.processes, cache=args.cache)
    if args.token_scale and not args.no_reference:
        # The same added models at the main design's scale, retrained to record
        # their token-to-code ratios (the main file predates that record); their
        # accuracies repeat the main run's, up to the order of floating-point sums.
        result["reference"] = run_design(
            TOKEN_SCALE_REFERENCE, processes=args.processes, cache=args.cache
        )
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    result["run"] = {
        "elapsed_seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(sum(u.ru_utime + u.ru_stime for u in (own, children)), 1),
        "processes": args.processes,
        "cpu_count": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} in {result['run']['elapsed_seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()


# -- statistics of the designed experiment ---------------------------------------------


def welch_test(a: Any, b: Any) -> tuple[float, float, float]:
    r"""Welch's t statistic for ``mean(a) - mean(b)``, its degrees of freedom and two-sided p.

    The standard error is :math:`\sqrt{s_a^2/n_a + s_b^2/n_b}`, the degrees of
    freedom those of Welch and Satterthwaite. If both samples have zero
    spread, the statistic is 0 with p = 1 when the means agree, and infinite
    with p = 0 when they do not.

    Returns
    -------
    (float, float, float)
        ``(t, dof, p)``.

    Examples
    --------
    >>> t, dof, p = welch_test([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    >>> float(t), float(p)
    (0.0, 1.0)
    """
    a = check_array("a", a, ndim=1)
    b = check_array("b", b, ndim=1)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"a and b must hold at least 2 numbers each, got {a.size} and {b.size}")
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0.0:
        return (
            (0.0, math.inf, 1.0) if diff == 0.0 else (math.copysign(math.inf, diff), math.inf, 0.0)
        )
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    t = diff / math.sqrt(va + vb)
    return t, float(dof), float(2 * stats.t.sf(abs(t), dof))


def tost(a: Any, b: Any, margin: float) -> tuple[float, float, float]:
    r"""Two one-sided tests (TOST) that ``mean(a) - mean(b)`` lies within ``±margin``.

    The null hypothesis is that the difference is at least ``margin`` away
    from zero, :math:`|\Delta| \ge m`; it is rejected at level :math:`\alpha`
    when both one-sided Welch tests, :math:`\Delta > -m` and :math:`\Delta < m`,
    reject it, which is the same as the :math:`1 - 2\alpha` Welch interval
    lying inside :math:`(-m, m)`. The p-value is the larger of the two
    one-sided p-values.

    Returns
    -------
    (float, float, float)
        ``(p, low, high)``: the TOST p-value and the 90 % Welch interval of
        the difference (the interval that matches a TOST at 5 %).

    Examples
    --------
    >>> p, low, high = tost([0.50, 0.51, 0.49, 0.50], [0.50, 0.49, 0.51, 0.50], 0.05)
    >>> bool(p < 0.05), bool(-0.05 < low < high < 0.05)
    (True, True)
    """
    a = check_array("a", a, ndim=1)
    b = check_array("b", b, ndim=1)
    margin = check_real("margin", margin, positive=True)
    diff, low, high = difference_interval(a, b, 0.90)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0.0:
        return (0.0 if abs(diff) < margin else 1.0), low, high
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    se = math.sqrt(va + vb)
    p_lower = float(stats.t.sf((diff + margin) / se, dof))  # H0: diff <= -margin
    p_upper = float(stats.t.cdf((diff - margin) / se, dof))  # H0: diff >= +margin
    return max(p_lower, p_upper), low, high


def holm(p_values: Any) -> np.ndarray:
    """Holm's step-down adjustment of several p-values (family-wise error control).

    Sort the m p-values, multiply the k-th smallest by ``m - k + 1`` (k from
    1), make the sequence non-decreasing and cap it at 1. Rejecting every
    hypothesis whose adjusted p-value is below :math:`\\alpha` keeps the
    chance of any false rejection in the family at most :math:`\\alpha`,
    whatever the dependence between the tests.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03])
    array([0.03, 0.06, 0.06])
    """
    p = check_array("p_values", p_values, ndim=1)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p_values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(scaled, 1.0)
    return adjusted


def power_two_sample(delta: float, sd: float, n: int, alpha: float = 0.05) -> float:
    r"""Power of a two-sided two-sample t test with ``n`` seeds per group.

    The chance that the test rejects "no difference" when the true
    difference of the means is ``delta`` and each group has standard
    deviation ``sd``: the non-central t distribution with
    :math:`2n - 2` degrees of freedom and non-centrality
    :math:`\delta / (\mathrm{sd}\sqrt{2/n})`.

    Examples
    --------
    >>> round(power_two_sample(1.0, 1.0, 17), 2)  # the textbook 80 % at 17 per group
    0.81
    """
    delta = check_real("delta", delta, minimum=0.0)
    sd = check_real("sd", sd, positive=True)
    n = check_integer("n", n, minimum=2)
    alpha = check_real("alpha", alpha, positive=True, maximum=0.5)
    dof = 2 * n - 2
    critical = stats.t.ppf(1 - alpha / 2, dof)
    shift = delta / (sd * math.sqrt(2 / n))
    upper = float(stats.nct.sf(critical, dof, shift))
    lower = float(stats.nct.cdf(-critical, dof, shift))
    # SciPy's non-central t returns NaN far out in a tail; there the tail is 0 (or 1).
    if not math.isfinite(upper):
        upper = 1.0 if shift > critical else 0.0
    if not math.isfinite(lower):
        lower = 0.0
    return min(1.0, upper + lower)


def seeds_for_power(
    delta: float, sd: float, power: float = 0.8, alpha: float = 0.05, limit: int = 10_000
) -> int:
    """Smallest number of seeds per group that gives ``power`` (see :func:`power_two_sample`).

    Examples
    --------
    >>> seeds_for_power(1.0, 1.0)
    17
    """
    power = check_real("power", power, positive=True, maximum=0.999)
    for n in range(2, check_integer("limit", limit, minimum=2) + 1):
        if power_two_sample(delta, sd, n, alpha) >= power:
            return n
    raise ValueError(f"more than {limit} seeds per group would be needed")


@dataclass(frozen=True)
class Comparison:
    """One comparison of the designed experiment: a concatenated model minus its added twin.

    Attributes
    ----------
    length, d_model, n_layers : int
        The regime.
    code : str
        ``"sinusoidal"`` or ``"learned"``.
    concat, added : numpy.ndarray
        Final test accuracy of every seed, ``(seeds,)`` each.
    difference, low, high : float
        ``mean(concat) - mean(added)`` and its 95 % Welch interval.
    p : float
        Two-sided Welch p-value of "no difference".
    p_holm : float
        ``p`` after Holm's correction over the family.
    p_tost : float
        TOST p-value of "the difference is at least the margin".
    p_tost_holm : float
        ``p_tost`` after Holm's correction over the family.
    ceiling : bool
        Both means at or above the design's ceiling.
    verdict : str
        ``"concat better"``, ``"add better"``, ``"equivalent"`` or
        ``"undecided"``, from the corrected tests at level ``alpha``.
    matching : str
        How the concatenated model was matched to the added one:
        ``"parameters"`` (the primary family) or ``"width"`` (the secondary).
    """

    length: int
    d_model: int
    n_layers: int
    code: str
    concat: np.ndarray
    added: np.ndarray
    difference: float
    low: float
    high: float
    p: float
    p_holm: float
    p_tost: float
    p_tost_holm: float
    ceiling: bool
    verdict: str
    matching: str = "parameters"

    @property
    def regime(self) -> str:
        """E.g. ``"L=32, d=16, 1 layer"``."""
        layers = "1 layer" if self.n_layers == 1 else f"{self.n_layers} layers"
        return f"L={self.length}, d={self.d_model}, {layers}"


def _matched(cell: dict[str, Any], matching: str) -> bool:
    """Whether ``cell`` belongs to the comparisons at ``matching`` (added models always do)."""
    if "concat" not in cell["variant"]:
        return True
    return cell.get("matching", "parameters") == matching


def cell_accuracy(
    results: dict[str, Any], step: int | None = None, matching: str = "parameters"
) -> dict[tuple, np.ndarray]:
    """Test accuracy of every seed of every cell, keyed ``(L, d, n_layers, variant)``.

    ``step`` picks a recorded step (the default: the last one, the full
    budget); ``matching`` picks the concatenated models, matched to the added
    ones in ``"parameters"`` (the default) or in ``"width"``.
    """
    matching = check_choice("matching", matching, MATCHINGS)
    out = {}
    for cell in results["cells"]:
        if not _matched(cell, matching):
            continue
        steps = list(cell["steps"])
        row = len(steps) - 1 if step is None else steps.index(step)
        key = (cell["length"], cell["d_model"], cell["n_layers"], cell["variant"])
        out[key] = np.asarray(cell["test_accuracy"][row], dtype=float)
    return out


def family_tests(pairs: Mapping[Any, tuple[Any, Any]], design: Design) -> dict[Any, dict[str, Any]]:
    """The design's tests and verdict rule for one family of ``first - second`` pairs.

    For every key, Welch's interval and test of ``mean(first) - mean(second)``,
    the TOST against ``design.margin``, and whether both means reach
    ``design.ceiling``; both sets of p-values are corrected with :func:`holm`
    over the whole family. The verdict at ``design.alpha``: ``"first
    better"`` or ``"second better"`` if the corrected difference test
    rejects, else ``"equivalent"`` if the corrected TOST rejects, else
    ``"undecided"`` (the ceiling is reported beside it, not as a verdict).

    Examples
    --------
    >>> tests = family_tests({"x": ([0.9, 0.8, 0.85], [0.5, 0.4, 0.45])}, Design())
    >>> tests["x"]["verdict"], round(tests["x"]["difference"], 2)
    ('first better', 0.4)
    """
    if not isinstance(design, Design):
        raise TypeError(f"design must be a Design, got {type(design).__name__}")
    if not pairs:
        raise ValueError("pairs must hold at least one (first, second) pair")
    rows = {}
    for key, (first, second) in pairs.items():
        first = check_array(f"pairs[{key!r}][0]", first, ndim=1)
        second = check_array(f"pairs[{key!r}][1]", second, ndim=1)
        diff, low, high = difference_interval(first, second)
        rows[key] = {
            "first": first,
            "second": second,
            "difference": diff,
            "low": low,
            "high": high,
            "p": welch_test(first, second)[2],
            "p_tost": tost(first, second, design.margin)[0],
            "ceiling": bool(min(first.mean(), second.mean()) >= design.ceiling),
        }
    p_holm = holm([r["p"] for r in rows.values()])
    p_tost_holm = holm([r["p_tost"] for r in rows.values()])
    for r, ph, pth in zip(rows.values(), p_holm, p_tost_holm, strict=True):
        r["p_holm"], r["p_tost_holm"] = float(ph), float(pth)
        if ph < design.alpha:
            r["verdict"] = "first better" if r["difference"] > 0 else "second better"
        elif pth < design.alpha:
            r["verdict"] = "equivalent"
        else:
            r["verdict"] = "undecided"
    return rows


def compare_design(
    results: dict[str, Any], step: int | None = None, matching: str = "parameters"
) -> list[Comparison]:
    """One family of comparisons of a results file, with Holm-corrected tests.

    For every regime and every code, concatenated minus added, with the
    concatenated models matched in ``matching``: ``"parameters"``, the
    primary family, or ``"width"``, the secondary one. The family is every
    comparison returned; both the difference tests and the TOSTs are
    corrected over it with :func:`holm`. The verdict at level ``alpha``
    (:func:`family_tests`): "concat better" or "add better" if the
    corrected difference test rejects, else "equivalent" if the corrected
    TOST rejects (the difference lies within ``±margin``), else "undecided".
    """
    design = Design.from_dict(results["design"])
    acc = cell_accuracy(results, step, matching)
    pairs = {}
    for length, d_model, n_layers in design.regimes:
        for code in ("sinusoidal", "learned"):
            key_c = (length, d_model, n_layers, f"{code}-concat")
            key_a = (length, d_model, n_layers, f"{code}-add")
            if key_c in acc and key_a in acc:
                pairs[length, d_model, n_layers, code] = acc[key_c], acc[key_a]
    if not pairs:
        raise ValueError("results hold no pair of concatenated and added models")
    names = {"first better": "concat better", "second better": "add better"}
    return [
        Comparison(
            *key,
            r["first"],
            r["second"],
            r["difference"],
            r["low"],
            r["high"],
            r["p"],
            r["p_holm"],
            r["p_tost"],
            r["p_tost_holm"],
            r["ceiling"],
            names.get(r["verdict"], r["verdict"]),
            matching,
        )
        for key, r in family_tests(pairs, design).items()
    ]


def with_added_models_of(results: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    """``results`` with its added models replaced by those of another run, ``arm``.

    The concatenated models of ``results`` whose code ``arm`` also trains
    are kept, and the added models are taken from ``arm`` (the same regimes,
    seeds and data, trained another way, e.g. :data:`TOKEN_SCALE`), so that
    :func:`compare_design` of the result compares the two, in a family of its
    own: every regime and matching of the codes ``arm`` holds.

    Examples
    --------
    >>> main = {"design": {}, "cells": [
    ...     {"variant": "sinusoidal-concat", "length": 8},
    ...     {"variant": "sinusoidal-add", "length": 8},
    ...     {"variant": "learned-concat", "length": 8}]}
    >>> arm = {"cells": [{"variant": "sinusoidal-add", "length": 8, "embedding_scale": 0.25}]}
    >>> [c["variant"] for c in with_added_models_of(main, arm)["cells"]]
    ['sinusoidal-concat', 'sinusoidal-add']
    """
    for name, value in (("results", results), ("arm", arm)):
        if not isinstance(value, dict) or "cells" not in value:
            raise TypeError(
                f"{name} must be a results dict with 'cells', got {type(value).__name__}"
            )
    added = [c for c in arm["cells"] if c["variant"].endswith("-add")]
    if not added:
        raise ValueError("arm holds no added models")
    codes = {c["variant"].split("-")[0] for c in added}
    kept = [
        c
        for c in results["cells"]
        if c["variant"].endswith("-concat") and c["variant"].split("-")[0] in codes
    ]
    return {"design": results["design"], "cells": kept + added}


def budget_curve(
    results: dict[str, Any],
    length: int,
    d_model: int,
    n_layers: int,
    code: str,
    matching: str = "parameters",
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated minus added, with its 95 % Welch interval, at every recorded budget.

    ``matching`` picks the concatenated model (see :func:`cell_accuracy`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The steps ``(n_eval,)`` and ``(3, n_eval)``: difference, low, high
        (steps where both models have no spread give a zero-width interval).
    """
    code = check_choice("code", code, ("sinusoidal", "learned"))
    matching = check_choice("matching", matching, MATCHINGS)
    cells = {
        c["variant"]: c
        for c in results["cells"]
        if (c["length"], c["d_model"], c["n_layers"]) == (length, d_model, n_layers)
        and _matched(c, matching)
    }
    if f"{code}-concat" not in cells or f"{code}-add" not in cells:
        raise ValueError(f"no {code} pair for L={length}, d={d_model}, {n_layers} layer(s)")
    concat = np.asarray(cells[f"{code}-concat"]["test_accuracy"], dtype=float)
    added = np.asarray(cells[f"{code}-add"]["test_accuracy"], dtype=float)
    steps = np.asarray(cells[f"{code}-add"]["steps"])
    curve = np.array([difference_interval(c, a) for c, a in zip(concat, added, strict=True)]).T
    return steps, curve


def format_comparisons(comparisons: Sequence[Comparison]) -> str:
    """The comparisons as a text table, differences in points (percent of the test set)."""
    lines = [
        f"{'regime':<24}{'code':<11}{'concat-add':>10}  {'95% interval':>16}"
        f"  {'p Holm':>7}  {'TOST Holm':>9}  verdict"
    ]
    for c in comparisons:
        flag = " (ceiling)" if c.ceiling else ""
        lines.append(
            f"{c.regime:<24}{c.code:<11}{100 * c.difference:+10.1f}  "
            f"[{100 * c.low:+6.1f}, {100 * c.high:+6.1f}]  {c.p_holm:7.3f}  "
            f"{c.p_tost_holm:9.3f}  {c.verdict}{flag}"
        )
    return "\n".join(lines)


def load_results(name: str = "ch5_experiment.json") -> dict[str, Any]:
    """Read a results file from ``results/`` in the working directory or the nearest parent.

    Examples
    --------
    >>> load_results("no_such_file.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: results/no_such_file.json not found here or in any parent; ...
    """
    import json
    from pathlib import Path

    for folder in (Path.cwd(), *Path.cwd().parents):
        path = folder / "results" / name
        if path.is_file():
            return json.loads(path.read_text())
    raise FileNotFoundError(
        f"results/{name} not found here or in any parent; run `make experiments`"
    )


def format_cells(results: dict[str, Any], confidence: float = 0.95) -> str:
    """Every cell of a results file as a text table: rate, parameters, accuracy, steps-to-threshold.

    Accuracy in percent: the mean over seeds with its Student-t interval
    (cut to [0, 100]) and the worst seed; steps-to-threshold as the median
    over seeds (">budget" when more than half never reach it).
    """
    design = Design.from_dict(results["design"])
    reach_label = f"to {100 * design.threshold:.0f}%"
    lines = [
        f"{'regime':<22}{'model':<37}{'rate':>6}{'params':>7}{'gap':>7}"
        f"{'mean %':>8}{'95% interval':>16}{'worst':>7}{reach_label:>8}"
    ]
    for c in results["cells"]:
        acc = np.asarray(c["test_accuracy"][-1], dtype=float)
        mean, low, high = mean_confidence_interval(acc, confidence)
        low, high = max(low, 0.0), min(high, 1.0)
        reach = np.array([np.inf if s is None else s for s in c["steps_to_threshold"]])
        median = np.median(reach)
        to = f">{design.steps}" if not np.isfinite(median) else f"{median:.0f}"
        gap = c["n_parameters"] / c["reference_parameters"] - 1
        layers = "1 layer" if c["n_layers"] == 1 else "2 layers"
        lines.append(
            f"{'L=' + str(c['length']) + ', d=' + str(c['d_model']) + ', ' + layers:<22}"
            f"{c['label']:<37}{c['learning_rate']:>6g}{c['n_parameters']:>7}"
            f"{100 * gap:>+6.1f}%{100 * mean:>8.1f}   [{100 * low:5.1f}, {100 * high:5.1f}]"
            f"{100 * acc.min():>7.1f}{to:>8}"
        )
    return "\n".join(lines)
