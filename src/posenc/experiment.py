r"""Addition or concatenation: the experiment of chapter 5, and its command line.

Training the small attention model of :mod:`posenc.model` on the order
tasks of :mod:`posenc.tasks`:

* :func:`variant_spec`: the widths of each variant, matched to the added
  model at equal width or at equal parameter count;
* :func:`run_experiment`: the first experiment, every configuration on every
  task (:mod:`posenc.experiment_verdicts` turns it into a table);
* :class:`Design`: regimes, models, seeds, budget, learning-rate candidates,
  equivalence margin and error rate of the designed experiment, all fixed
  before any result is seen, with the follow-ups :data:`LONG_BUDGET` (four
  times the budget) and :data:`TOKEN_SCALE` (added models with short token
  vectors);
* :func:`run_cell` and :func:`run_design`: one cell of a design, and all of
  them in worker processes;
* :func:`main`, the command line of ``make experiments``
  (``python -m posenc.experiment --out results/ch5_experiment.json``).

The analysis that needs no training is in :mod:`posenc.experiment_analysis`,
the verdicts read from a results file in :mod:`posenc.experiment_verdicts`,
and every test and interval in :mod:`posenc.stats`. The names that lived here
before are still found here (:data:`MOVED` says where each lives now).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .experiment_analysis import (
    _progress,
    parameter_count,
    readout_draws,
    steps_to_threshold,
    token_code_ratio,
)
from .model import AttentionClassifier, TrainingHistory, check_seeds, train
from .stats import choose_rate
from .tasks import TaskData
from .validation import check_choice, check_integer, check_real

__all__ = [
    "CONFIGURATIONS",
    "DESIGN_MODELS",
    "LONG_BUDGET",
    "MATCHINGS",
    "MOVED",
    "TOKEN_SCALE",
    "TOKEN_SCALES",
    "TOKEN_SCALE_REFERENCE",
    "VARIANTS",
    "Design",
    "ExperimentResult",
    "Run",
    "VariantSpec",
    "design_task",
    "main",
    "run_cell",
    "run_design",
    "run_experiment",
    "variant_spec",
]

#: Where each name that chapter 5 and the assignments import from this module
#: lives now: a name not defined here is looked up in its module on first use,
#: so ``from posenc.experiment import holm`` gives :func:`posenc.stats.holm` itself.
MOVED = {
    **dict.fromkeys(
        (
            "READOUT_RATIOS READOUT_WIDTHS SCORE_TERMS accuracy_with_terms model_score_terms "
            "parameter_count readout_accuracy readout_draws score_terms split_weight "
            "steps_to_threshold term_sizes token_code_ratio token_position_cosines"
        ).split(),
        "posenc.experiment_analysis",
    ),
    **dict.fromkeys(
        (
            "Comparison SummaryRow budget_curve cell_accuracy compare_design family_tests "
            "format_cells format_comparisons format_summary learning_curves load_results "
            "summarise with_added_models_of"
        ).split(),
        "posenc.experiment_verdicts",
    ),
    **dict.fromkeys(
        (
            "chance_interval difference_interval holm mean_confidence_interval "
            "power_two_sample seeds_for_power tost welch_test"
        ).split(),
        "posenc.stats",
    ),
}


def __getattr__(name: str) -> Any:
    """A name of :data:`MOVED`, from its module (imported then, not before: the verdicts
    import this module)."""
    if name in MOVED:
        return getattr(importlib.import_module(MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
