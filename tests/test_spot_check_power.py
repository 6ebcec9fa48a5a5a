"""The spot checks' rule catches real bugs: each test plants one and re-trains a stored cell.

Every test trains one fixed cell of a committed results file, every stored
seed at the stored rate, twice: as the code is, and with one bug planted by
``monkeypatch``. It asserts that the spot checks' rule
(:func:`posenc.stats.paired_rerun_test` at ``LEVEL``, ``tests/spot_checks.py``)
accepts the first run and rejects the second against the stored numbers. The
cells are the cheap ones where the bug shows: a bug that leaves every
stored number as it was (in distribution) cannot be caught by comparing
numbers, and some cannot be caught here at all:

* A training loop of chapter 5 that never reshuffles (each copy reads the
  2,000 training examples in one random order, the same every epoch) is not
  caught: over the 4.8 epochs of the design a fixed random order trains as
  well as a fresh one per epoch. Measured on the 42 cells with ``L = 8`` and
  ``L = 32`` of ``ch5_experiment.json`` and ``ch5_token_scale.json``: 12 to 20
  of the 20 seeds end elsewhere, but the smallest p-value is 0.028. The data
  stream of chapter 7 that repeats is caught
  (:func:`test_a_training_stream_that_repeats_in_the_same_order_is_caught`).
* A constant factor on the whole gradient of one parameter tensor is invisible
  by design: Adam divides the running mean of the gradient by the root of its
  running square, so the factor cancels (up to Adam's epsilon). Measured with
  a factor 10 on the key weights' gradient: at most 14 of 20 seeds end
  elsewhere, and p >= 0.013 in all 21 cells with ``L = 8``.
"""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import posenc.transformer
from posenc.experiment import Design
from posenc.experiment import run_cell as run_ch5_cell
from posenc.experiment_verdicts import load_results
from posenc.extrapolation import config_from_dict
from posenc.extrapolation import run_cell as run_ch7_cell
from posenc.model import AttentionClassifier
from posenc.stats import paired_rerun_test

from .spot_checks import LEVEL, ch5_features, ch7_features, describe

RESULTS = Path(__file__).resolve().parents[1] / "results"

# One cell of chapter 7 that learns within the first checkpoint: the token three
# places back is copied at every position, with the sinusoidal code added.
CH7_CELL = ("offset", "sinusoidal")
# One cell of chapter 5 where the token embeddings carry the position, and train fast.
CH5_CELL = (8, 32, 1, "learned-add", "width")


def _ch7_cell():
    payload = json.loads((RESULTS / "ch7_extrapolation.json").read_text())
    config = config_from_dict(payload["config"])
    cell = next(c for c in payload["cells"] if (c["task"], c["method"]) == CH7_CELL)
    return config, cell


def _ch7_run(config, cell):
    """Every stored seed of the cell, at its rate, up to the first checkpoint, against the file."""
    first = config.budget[0]
    fresh = run_ch7_cell(
        replace(config, steps=first, checkpoints=(first,)),
        *CH7_CELL,
        learning_rate=cell["learning_rate"],
        extras=False,
    )
    again, tolerance, names = ch7_features(fresh["accuracy"], config)
    before, _, _ = ch7_features(cell["budget"][str(first)], config)
    result = paired_rerun_test(again, before, tolerance=tolerance)
    print(f"{'/'.join(CH7_CELL)}: {describe(result, names)}")
    return result, names


@pytest.fixture(scope="module")
def ch7_unmutated():
    """The chapter-7 cell as the code is (one run shared by the tests of this cell)."""
    return _ch7_run(*_ch7_cell())


def test_a_position_code_that_ignores_its_base_is_caught(monkeypatch, ch7_unmutated):
    """The sinusoidal (and rotary) code built with base 100 whatever base the model is given.

    The design's base is 10,000. With base 100 every pair of dimensions turns
    faster with the position, and the seeds learn to copy the token three places
    back at another pace. Measured in this cell: base 100 is caught at both rates
    the cell has had (0.01 and 0.003; p at its floor, :math:`2^{-19}`), base 1,000
    only at 0.003 (p = 4e-6; 0.003 at 0.01), base 100,000 at neither (p = 0.4).
    """
    result, names = ch7_unmutated
    assert result.pvalue > LEVEL, describe(result, names)
    config, cell = _ch7_cell()
    assert config.base == 10_000.0
    table, frequencies = posenc.transformer.sinusoidal, posenc.transformer.rotary_frequencies

    def table_ignoring_base(length, d_model, base=10_000.0, **kwargs):
        return table(length, d_model, 100.0, **kwargs)

    def frequencies_ignoring_base(d_model, base=10_000.0):
        return frequencies(d_model, 100.0)

    monkeypatch.setattr(posenc.transformer, "sinusoidal", table_ignoring_base)
    monkeypatch.setattr(posenc.transformer, "rotary_frequencies", frequencies_ignoring_base)
    mutated, names = _ch7_run(config, cell)
    assert mutated.differing == mutated.seeds
    assert mutated.pvalue <= LEVEL, describe(mutated, names)


def test_a_training_stream_that_repeats_in_the_same_order_is_caught(monkeypatch, ch7_unmutated):
    """Each copy's first 10 batches (160 sequences) read again and again in the same order.

    Chapter 7 trains on a fresh batch at every update. The bug makes the stream a
    small training set that is never reshuffled: every epoch of 10 updates shows
    each copy the same batches in the same order (as a data generator created
    anew every epoch from a fixed seed would). The copies fit their 160 sequences
    and copy the token three places back less well on fresh test sequences.
    Measured on this cell: a set of 10 or 20 batches is caught (p at its floor),
    one of 50 batches (800 sequences) is not (p = 0.002).
    """
    result, names = ch7_unmutated
    assert result.pvalue > LEVEL, describe(result, names)
    config, cell = _ch7_cell()
    make = posenc.transformer.make_length_batch
    streams = {}  # id of a copy's generator -> [generator, its batches, draws so far]

    def repeating(task, rng, **kwargs):
        stream = streams.setdefault(id(rng), [rng, [], 0])  # keeps rng alive: ids stay unique
        if len(stream[1]) < 10:
            stream[1].append(make(task, rng, **kwargs))
        stream[2] += 1
        return stream[1][(stream[2] - 1) % 10]

    monkeypatch.setattr(posenc.transformer, "make_length_batch", repeating)
    mutated, names = _ch7_run(config, cell)
    assert len(streams) == len(config.seeds)  # one stream per copy, each cut to 10 batches
    assert mutated.differing == mutated.seeds
    assert mutated.pvalue <= LEVEL, describe(mutated, names)


def test_a_factor_on_one_path_of_the_gradient_is_caught(monkeypatch):
    """The query path of the backward pass misses its :math:`1/\\sqrt{d_k}`.

    With :math:`S = (Q/\\sqrt{d_k}) K^\\top`, the gradient of the queries is
    :math:`dS\\,K/\\sqrt{d_k}`; the bug leaves out the division. The gradient of
    :math:`W_Q` is then :math:`\\sqrt{d_k}` times too large as a whole, which
    Adam cancels (it divides by the root of the running square), so that alone
    would change nothing. But the gradient of the attention input :math:`Z` is
    the sum of three paths, :math:`dQ\\,W_Q^\\top + dK\\,W_K^\\top + dV\\,W_V^\\top`,
    and a factor on one of them turns the gradient of the token and position
    embeddings: the embeddings train differently (their lengths after training,
    the loss and the learning curve move), and the rule sees it.
    """
    results = load_results("ch5_experiment.json")
    design = Design.from_dict(results["design"])
    stored = next(
        c
        for c in results["cells"]
        if (c["length"], c["d_model"], c["n_layers"], c["variant"], c["matching"]) == CH5_CELL
    )

    def compare():
        fresh = run_ch5_cell(design, CH5_CELL, learning_rate=stored["learning_rate"])
        again, before, tolerance, names = ch5_features(fresh, stored, design.n_test)
        result = paired_rerun_test(again, before, tolerance=tolerance)
        print(f"{CH5_CELL}: {describe(result, names)}")
        return result, names

    result, names = compare()
    assert result.pvalue > LEVEL, describe(result, names)
    backward = AttentionClassifier._projection_backward

    def unscaled_queries(self, d_s, d_values, c, suffix, batch, grads):
        root = np.sqrt(self.d_k)
        w_qkv = c["w_qkv"].copy()
        w_qkv[:, :, : self.d_k] *= root  # the query path of dZ, sqrt(d_k) too large
        d_z = backward(self, d_s, d_values, {**c, "w_qkv": w_qkv}, suffix, batch, grads)
        grads["w_q" + suffix] = grads["w_q" + suffix] * root  # and dW_Q (Adam cancels this)
        return d_z

    monkeypatch.setattr(AttentionClassifier, "_projection_backward", unscaled_queries)
    mutated, names = compare()
    assert mutated.differing == mutated.seeds
    assert mutated.pvalue <= LEVEL, describe(mutated, names)
