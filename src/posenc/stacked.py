"""What the models that stack one copy per seed share (chapters 5 and 7).

:class:`posenc.model.AttentionClassifier` and
:class:`posenc.transformer.CausalTransformer` both hold several independent
copies of one network, one per seed, along a leading axis of every
parameter array. This module holds what follows from that alone:

* :class:`StackedModel`, the base class: the number of copies and the
  parameters of one copy;
* :func:`finite_difference_errors`, the gradient check of both models
  (:func:`posenc.model.gradient_check`, :func:`posenc.transformer.gradient_check`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .validation import check_integer, check_real

__all__ = ["StackedModel", "finite_difference_errors"]


class StackedModel:
    """What every model of the course that stacks one copy per seed shares.

    A subclass holds ``seeds`` (one per copy) and ``params``, a dict of
    arrays each with a leading axis of length ``n_models``; the copies share
    no parameter. :class:`posenc.model.AttentionClassifier` (chapter 5) and
    :class:`posenc.transformer.CausalTransformer` (chapter 7) are two.
    """

    seeds: tuple[int, ...]
    params: dict[str, np.ndarray]

    @property
    def n_models(self) -> int:
        """Number of independent copies (seeds) held side by side."""
        return len(self.seeds)

    @property
    def n_parameters(self) -> int:
        """Trainable scalars of one copy (a fixed table, as the sinusoidal one, is not counted)."""
        return int(sum(p[0].size for p in self.params.values()))


def finite_difference_errors(
    params: dict[str, np.ndarray],
    grads: dict[str, np.ndarray],
    loss: Any,
    *,
    n_entries: int,
    eps: float = 1e-6,
    seed: int = 0,
) -> dict[str, float]:
    """How far analytic gradients lie from central finite differences, per parameter.

    The check behind :func:`gradient_check` and
    :func:`posenc.transformer.gradient_check`: for ``n_entries`` entries of
    every array of ``params``, drawn at random (``seed``, ``>= 0``), the
    derivative of ``loss()`` (a callable that returns the summed loss of
    the current parameters) is estimated as ``(loss(theta + eps) -
    loss(theta - eps)) / (2 eps)`` and compared with ``grads``. Each entry
    is changed in place and set back, so the parameters are left as they were.

    Returns
    -------
    dict of str to float
        For every parameter, the largest difference ``|analytic - numeric|``
        over the checked entries, relative to the largest analytic gradient
        entry of that parameter (an entry whose gradient is nearly zero would
        make a plain relative error meaningless).
    """
    n_entries = check_integer("n_entries", n_entries, minimum=1)
    eps = check_real("eps", eps, positive=True)
    rng = np.random.default_rng(check_integer("seed", seed, minimum=0))
    errors = {}
    for name, value in params.items():
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
