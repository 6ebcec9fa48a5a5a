"""Position layers in the style of the deep-learning frameworks, in plain NumPy.

Both layers hold a table with one row per position up to ``max_length`` and,
applied to token embeddings ``x`` of shape ``(batch, length, d_model)``,
return ``x + table[:length]`` (the table broadcast over the batch):

* :class:`SinusoidalPositionalEncoding` computes its table once, from the
  formula, and can be rebuilt for any longer length (:meth:`resized`); it can
  also multiply the embeddings by ``sqrt(d_model)`` first, as the original
  model does;
* :class:`LearnedPositionalEmbedding` holds a trainable table initialised at
  random; :meth:`~LearnedPositionalEmbedding.gradient` and
  :meth:`~LearnedPositionalEmbedding.step` train it. It has no row at all for
  a position ``>= max_length``.

A sequence longer than the table, or embeddings of the wrong width, raise a
:class:`ValueError` that names the sizes involved.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .encodings import LAYOUTS, sinusoidal
from .validation import check_array, check_choice, check_integer, check_real

__all__ = ["LearnedPositionalEmbedding", "SinusoidalPositionalEncoding"]


class _AdditivePositions:
    """What both layers share: the table, its checks, and ``x + table[:length]``."""

    max_length: int
    d_model: int
    table: np.ndarray
    _too_long_advice = ""

    def _check_length(self, length: int) -> None:
        if length > self.max_length:
            raise ValueError(
                f"sequence length {length} exceeds max_length={self.max_length} of "
                f"{type(self).__name__}; {self._too_long_advice}"
            )

    def _check_input(self, x: Any, name: str = "x") -> np.ndarray:
        x = check_array(name, x)
        if x.ndim != 3 or x.shape[2] != self.d_model:
            raise ValueError(
                f"{name} must have shape (batch, length, d_model={self.d_model}), got {x.shape}"
            )
        self._check_length(x.shape[1])
        return x

    def codes(self, length: int) -> np.ndarray:
        """The first ``length`` rows of the table.

        Returns
        -------
        numpy.ndarray
            Shape ``(length, d_model)``, float64, a copy.

        Raises
        ------
        ValueError
            If ``length > max_length``.
        """
        length = check_integer("length", length, minimum=0)
        self._check_length(length)
        return self.table[:length].copy()

    def _embed(self, x: np.ndarray) -> np.ndarray:
        """The token signal that the table is added to (``x`` itself unless overridden)."""
        return x

    def __call__(self, x: Any) -> np.ndarray:
        """Add the code of positions ``0 .. length - 1`` to the embeddings ``x``.

        Parameters
        ----------
        x : array_like
            Token embeddings, shape ``(batch, length, d_model)``, finite.

        Returns
        -------
        numpy.ndarray
            Shape ``(batch, length, d_model)``, float64: ``x + table[:length]``
            for every sequence of the batch (with ``x`` scaled first where
            the layer says so).

        Raises
        ------
        ValueError
            If ``x`` does not have shape ``(batch, length, d_model)`` or
            ``length > max_length``.
        """
        x = self._check_input(x)
        return self._embed(x) + self.table[None, : x.shape[1]]


class SinusoidalPositionalEncoding(_AdditivePositions):
    r"""Adds the sinusoidal code of each position to token embeddings.

    The table ``sinusoidal(max_length, d_model, base, layout=layout)`` is
    computed once, at construction. Calling the layer on ``x`` of shape
    ``(batch, length, d_model)`` returns

    * ``x + table[:length]`` if ``scale_embeddings`` is false,
    * ``sqrt(d_model) * x + table[:length]`` if it is true (the original
      model multiplies its embedding weights by :math:`\sqrt{d}`).

    Parameters
    ----------
    max_length : int
        Number of positions the table holds, ``>= 1``.
    d_model : int
        Width of the embeddings and of the code, ``>= 1``.
    base : float
        The base ``n``, finite and ``> 0``.
    layout : {"interleaved", "split"}
        Column order of the table (see :func:`posenc.sinusoidal`).
    scale_embeddings : bool
        Multiply the embeddings by ``sqrt(d_model)`` before adding.

    Attributes
    ----------
    table : numpy.ndarray
        Shape ``(max_length, d_model)``, float64, read-only.

    Examples
    --------
    >>> layer = SinusoidalPositionalEncoding(16, 4, base=100.0)
    >>> out = layer(np.zeros((2, 3, 4)))
    >>> out.shape
    (2, 3, 4)
    >>> bool(np.array_equal(out[1], layer.table[:3]))
    True
    >>> layer(np.zeros((1, 20, 4)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sequence length 20 exceeds max_length=16 of ...
    """

    _too_long_advice = (
        "build the layer with a larger max_length (or call .resized()): "
        "the sinusoidal table can be computed for any length"
    )

    def __init__(
        self,
        max_length: int,
        d_model: int,
        base: float = 10_000.0,
        *,
        layout: str = "interleaved",
        scale_embeddings: bool = False,
    ) -> None:
        self.max_length = check_integer("max_length", max_length, minimum=1)
        self.d_model = check_integer("d_model", d_model, minimum=1)
        self.base = check_real("base", base, positive=True)
        self.layout = check_choice("layout", layout, LAYOUTS)
        if not isinstance(scale_embeddings, (bool, np.bool_)):
            raise TypeError(
                f"scale_embeddings must be True or False, got {scale_embeddings!r} "
                f"({type(scale_embeddings).__name__})"
            )
        self.scale_embeddings = bool(scale_embeddings)
        self.table = sinusoidal(self.max_length, self.d_model, self.base, layout=self.layout)
        self.table.flags.writeable = False

    def _embed(self, x: np.ndarray) -> np.ndarray:
        return math.sqrt(self.d_model) * x if self.scale_embeddings else x

    def resized(self, max_length: int) -> SinusoidalPositionalEncoding:
        """A layer with the same settings and a table of ``max_length`` rows.

        The rows both tables share are identical, bit for bit: the code of a
        position does not depend on the length of the table.

        Examples
        --------
        >>> layer = SinusoidalPositionalEncoding(8, 4).resized(100)
        >>> layer.table.shape
        (100, 4)
        """
        return SinusoidalPositionalEncoding(
            max_length,
            self.d_model,
            self.base,
            layout=self.layout,
            scale_embeddings=self.scale_embeddings,
        )

    def __repr__(self) -> str:
        return (
            f"SinusoidalPositionalEncoding(max_length={self.max_length}, "
            f"d_model={self.d_model}, base={self.base:g}, layout={self.layout!r}, "
            f"scale_embeddings={self.scale_embeddings})"
        )


class LearnedPositionalEmbedding(_AdditivePositions):
    r"""A trainable lookup table of position codes, added to token embeddings.

    Row ``k`` of :attr:`table` is the code of position ``k``; it starts as
    independent :math:`\mathcal{N}(0, \sigma^2)` entries and changes only
    through :meth:`step`. Positions ``>= max_length`` have no row, so a longer
    sequence raises :class:`ValueError`.

    Parameters
    ----------
    max_length : int
        Number of positions, ``>= 1``.
    d_model : int
        Width of the embeddings, ``>= 1``.
    rng : numpy.random.Generator or int or None
        Source of the initial values, or a seed for ``np.random.default_rng``.
    std : float or None
        Standard deviation :math:`\sigma` of the initial entries, ``> 0``;
        ``None`` means ``d_model ** -0.5`` (fairseq's choice), which gives each
        row a norm close to 1.

    Attributes
    ----------
    table : numpy.ndarray
        Shape ``(max_length, d_model)``, float64: the trainable parameter.

    Examples
    --------
    >>> layer = LearnedPositionalEmbedding(4, 3, rng=0)
    >>> x = np.zeros((2, 4, 3))
    >>> bool(np.array_equal(layer(x)[0], layer.table))
    True
    >>> layer.gradient(np.ones((2, 2, 3)))
    array([[2., 2., 2.],
           [2., 2., 2.],
           [0., 0., 0.],
           [0., 0., 0.]])
    """

    _too_long_advice = (
        "a learned table has no row for positions >= max_length and cannot be "
        "extended without new training"
    )

    def __init__(
        self,
        max_length: int,
        d_model: int,
        *,
        rng: np.random.Generator | int | None = None,
        std: float | None = None,
    ) -> None:
        self.max_length = check_integer("max_length", max_length, minimum=1)
        self.d_model = check_integer("d_model", d_model, minimum=1)
        if std is None:
            std = self.d_model**-0.5
        self.std = check_real("std", std, positive=True)
        if not (rng is None or isinstance(rng, np.random.Generator)):
            rng = check_integer("rng", rng, minimum=0)
        generator = np.random.default_rng(rng)
        self.table = generator.normal(0.0, self.std, size=(self.max_length, self.d_model))

    def gradient(self, upstream: Any) -> np.ndarray:
        """Gradient of a loss with respect to :attr:`table`.

        The output is ``x + table[:length]``, so the derivative of the loss
        with respect to row ``k < length`` is the sum over the batch of the
        upstream gradient at position ``k``; rows ``>= length`` get zero.

        Parameters
        ----------
        upstream : array_like
            Gradient of the loss with respect to the layer's output, shape
            ``(batch, length, d_model)``.

        Returns
        -------
        numpy.ndarray
            Shape ``(max_length, d_model)``, float64.
        """
        upstream = self._check_input(upstream, "upstream")
        grad = np.zeros_like(self.table)
        grad[: upstream.shape[1]] = upstream.sum(axis=0)
        return grad

    def step(self, upstream: Any, learning_rate: float) -> None:
        """One step of gradient descent: ``table -= learning_rate * gradient(upstream)``.

        Parameters
        ----------
        upstream : array_like
            Shape ``(batch, length, d_model)``, as for :meth:`gradient`.
        learning_rate : float
            Step size, finite and ``> 0``.
        """
        learning_rate = check_real("learning_rate", learning_rate, positive=True)
        self.table -= learning_rate * self.gradient(upstream)

    def __repr__(self) -> str:
        return (
            f"LearnedPositionalEmbedding(max_length={self.max_length}, "
            f"d_model={self.d_model}, std={self.std:g})"
        )
