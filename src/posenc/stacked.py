"""What the models that stack one copy per seed share (chapters 5 and 7).

:class:`posenc.model.AttentionClassifier` and
:class:`posenc.transformer.CausalTransformer` both hold several independent
copies of one network, one per seed, along a leading axis of every
parameter array, and both write their gradients out by hand. This module
holds what follows from that alone:

* :class:`StackedModel`, the base class: the number of copies, the
  parameters of one copy;
* :func:`gradient_check`, the check of both models' gradients against
  central finite differences (``posenc.model.gradient_check`` and
  ``posenc.transformer.gradient_check`` are this function).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .validation import check_integer, check_real

__all__ = ["StackedModel", "gradient_check"]


class StackedModel:
    """What every model of the course that stacks one copy per seed shares.

    A subclass holds ``seeds`` (one per copy) and ``params``, a dict of
    arrays each with a leading axis of length ``n_models``; the copies share
    no parameter. For :func:`gradient_check` it says how to read its data
    (:meth:`_gradient_parts`) and how many entries to check by default.
    """

    seeds: tuple[int, ...]
    params: dict[str, np.ndarray]
    #: Entries of every parameter that :func:`gradient_check` compares by default.
    gradient_check_entries: int = 3

    @property
    def n_models(self) -> int:
        """Number of independent copies (seeds) held side by side."""
        return len(self.seeds)

    @property
    def n_parameters(self) -> int:
        """Trainable scalars of one copy (a fixed table, as the sinusoidal one, is not counted)."""
        return int(sum(p[0].size for p in self.params.values()))

    def _gradient_parts(
        self, *data: Any
    ) -> tuple[dict[str, np.ndarray], Callable[[], float]]:  # pragma: no cover - abstract
        """The analytic gradients on ``data`` (checked), and the summed loss as a function."""
        raise NotImplementedError


def gradient_check(
    model: StackedModel,
    *data: Any,
    n_entries: int | None = None,
    eps: float = 1e-6,
    seed: int = 0,
) -> dict[str, float]:
    """Compare analytic gradients with central finite differences on a few entries.

    ``data`` is what the model's loss reads: ``tokens, labels`` for an
    :class:`~posenc.model.AttentionClassifier` (which must compute in
    float64), a :class:`~posenc.lengthtasks.LengthBatch` for a
    :class:`~posenc.transformer.CausalTransformer`. For ``n_entries``
    entries of every parameter (by default 4 and 3 for these models), drawn
    at random with ``seed`` (``>= 0``), the derivative of the loss summed
    over the copies is estimated as ``(loss(theta + eps) - loss(theta - eps))
    / (2 eps)`` and compared with the model's own gradient. Each entry is
    changed in place and set back, so the parameters are left as they were.

    Returns
    -------
    dict of str to float
        For every parameter, the largest difference ``|analytic - numeric|``
        over the checked entries, relative to the largest analytic gradient
        entry of that parameter (an entry whose gradient is nearly zero would
        make a plain relative error meaningless).

    Examples
    --------
    >>> from posenc.model import AttentionClassifier
    >>> model = AttentionClassifier(4, 4, 3, d_token=4, position="learned", combine="concat")
    >>> tokens, labels = np.array([[0, 1, 2, 3], [3, 2, 1, 0]]), np.array([0, 2])
    >>> errors = gradient_check(model, tokens, labels)
    >>> max(errors.values()) < 1e-6
    True
    """
    if not isinstance(model, StackedModel):
        raise TypeError(
            "model must be an AttentionClassifier or a CausalTransformer, "
            f"got {type(model).__name__}"
        )
    if n_entries is None:
        n_entries = model.gradient_check_entries
    n_entries = check_integer("n_entries", n_entries, minimum=1)
    eps = check_real("eps", eps, positive=True)
    rng = np.random.default_rng(check_integer("seed", seed, minimum=0))
    grads, loss = model._gradient_parts(*data)
    errors = {}
    for name, value in model.params.items():
        flat = value.reshape(-1)
        scale = max(float(np.abs(grads[name]).max()), 1e-12)
        worst = 0.0
        for index in rng.choice(flat.size, size=min(n_entries, flat.size), replace=False):
            saved = flat[index]
            flat[index] = saved + eps
            up = loss()
            flat[index] = saved - eps
            down = loss()
            flat[index] = saved
            numeric = (up - down) / (2 * eps)
            analytic = grads[name].reshape(-1)[index]
            worst = max(worst, abs(analytic - numeric) / scale)
        errors[name] = float(worst)
    return errors
