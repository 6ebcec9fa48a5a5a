r"""Chapter 7's experiment on real text: perplexity and passkey retrieval past the training length.

A small byte-level language model (:class:`posenc.torch.CausalLM`, heads of
width 32, so 16 rotary pairs) is trained on the Python source of NumPy at
``L`` bytes with every position method of the course, then read at ``L``,
``2L``, ``4L`` and ``8L``:

* **perplexity by position** on held-out files, the figure of the ALiBi, PI
  and YaRN papers;
* the rotary model **extended** with each rule of :mod:`posenc.scaling`
  (as transformers computes them, :func:`posenc.torch.rope_inv_freq`),
  without training and after a short fine-tune at ``4L``;
* **passkey retrieval**: a five-digit number hidden at a chosen depth in
  real text and asked for at the end, to tell whether flat perplexity means
  that the far tokens are used.

The corpus comes from a pinned PyPI package (``numpy``, BSD-3-Clause),
installed by ``requirements.txt``; nothing is fetched at run time. NumPy-only
code (the corpus, the batches, the summaries) is importable without torch;
the training functions import :mod:`posenc.torch` when called.

``python -m posenc.longcontext results/ch7_longcontext.json`` (``make
experiments-ch7``) runs the grid in two processes with a progress bar.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .stats import mean_interval_or_nan
from .validation import check_choice, check_integer, check_real

__all__ = [
    "CORPUS_PACKAGE",
    "METHODS",
    "RULES",
    "LongTextConfig",
    "bin_centres",
    "compare",
    "corpus_files",
    "corpus_fingerprint",
    "load_corpus",
    "load_results",
    "local_summary",
    "loss_curves",
    "passkey_batch",
    "passkey_summary",
    "perplexity_rows",
    "perplexity_summary",
    "recall_at_train_length",
    "rope_for_rule",
    "run_grid",
    "running_loss",
    "training_batch",
]

#: The package whose Python source is the corpus, and the version it is pinned at.
CORPUS_PACKAGE = "numpy"
#: Files a build writes differently on each platform: left out of the corpus.
_BUILD_FILES = {"__config__.py", "version.py", "_distributor_init.py", "_version.py"}

METHODS = ("nope", "sinusoidal", "learned", "rope", "alibi", "t5")
#: RoPE extension rules: none, position interpolation, NTK-aware (alpha = s),
#: dynamic NTK, YaRN with and without its temperature, Llama 3's rule.
RULES = ("none", "pi", "ntk", "dynamic", "yarn", "yarn_no_temp", "llama3")
#: The rules fine-tuned at the longer length (dynamic is an inference-time rule).
FINETUNED_RULES = ("none", "pi", "ntk", "yarn", "llama3")

PASSKEY_LINE = "PASSKEY = {}\n"
PASSKEY_QUERY = "\nassert PASSKEY == "


# --------------------------------------------------------------------- corpus


def corpus_files() -> list[Path]:
    """The corpus files: every ``.py`` of the installed ``numpy`` outside ``tests`` folders.

    Sorted by path relative to the package, build-specific files left out.
    """
    import numpy as package

    root = Path(package.__file__).parent
    files = [
        p
        for p in root.rglob("*.py")
        if "tests" not in p.relative_to(root).parts and p.name not in _BUILD_FILES
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def load_corpus() -> dict[str, np.ndarray]:
    """Bytes of the train / validation / test splits, ``uint8`` arrays.

    The split is by file, fixed by the sorted order: file ``i`` goes to
    validation when ``i % 20 == 18``, to test when ``i % 20 == 19``, to
    training otherwise. Files are joined with a blank line.
    """
    parts: dict[str, list[bytes]] = {"train": [], "validation": [], "test": []}
    for i, path in enumerate(corpus_files()):
        split = {18: "validation", 19: "test"}.get(i % 20, "train")
        parts[split].append(path.read_bytes())
    return {k: np.frombuffer(b"\n\n".join(v), dtype=np.uint8).copy() for k, v in parts.items()}


def corpus_fingerprint(corpus: dict[str, np.ndarray]) -> dict[str, Any]:
    """Sizes and SHA-256 of each split, and the package version they came from."""
    return {
        "package": CORPUS_PACKAGE,
        "version": metadata.version(CORPUS_PACKAGE),
        **{
            k: {"bytes": int(v.size), "sha256": hashlib.sha256(v.tobytes()).hexdigest()}
            for k, v in corpus.items()
        },
    }


# -------------------------------------------------------------------- batches


def _digits(rng: np.random.Generator) -> str:
    return f"{int(rng.integers(10_000, 100_000))}"


def _passkey_sequence(
    rng: np.random.Generator, text: np.ndarray, length: int, depth: float
) -> tuple[np.ndarray, int]:
    """One window of ``length`` bytes: real text with the key at ``depth``, the query at the end.

    Returns the bytes and the index of the first answer digit.
    """
    key = _digits(rng)
    line = np.frombuffer(PASSKEY_LINE.format(key).encode(), dtype=np.uint8)
    tail = np.frombuffer((PASSKEY_QUERY + key).encode(), dtype=np.uint8)
    filler = length - line.size - tail.size
    if filler < 1:
        raise ValueError(f"length must exceed {line.size + tail.size}, got {length}")
    start = int(rng.integers(0, text.size - filler))
    chunk = text[start : start + filler]
    cut = round(depth * filler)
    newlines = np.flatnonzero(chunk[:cut] == 10)  # put the key at the start of a line
    if newlines.size and cut - newlines[-1] < 80:
        cut = int(newlines[-1]) + 1
    sequence = np.concatenate([chunk[:cut], line, chunk[cut:], tail])
    return sequence, length - len(key)


def training_batch(
    rng: np.random.Generator,
    text: np.ndarray,
    batch: int,
    length: int,
    passkey_fraction: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Windows of ``text`` to train on; a fraction carry a passkey drill.

    Returns ``(windows, first)``: int64 ``(batch, length + 1)``, and per row
    the index of the first answer digit (``-1`` for plain text).
    """
    batch = check_integer("batch", batch, minimum=1)
    length = check_integer("length", length, minimum=2)
    passkey_fraction = check_real("passkey_fraction", passkey_fraction, minimum=0.0, maximum=1.0)
    rows, first = [], []
    for _ in range(batch):
        if rng.random() < passkey_fraction:
            row, at = _passkey_sequence(rng, text, length + 1, float(rng.random()))
        else:
            start = int(rng.integers(0, text.size - length - 1))
            row, at = text[start : start + length + 1], -1
        rows.append(row)
        first.append(at)
    return np.stack(rows).astype(np.int64), np.array(first)


def passkey_batch(
    rng: np.random.Generator, text: np.ndarray, n: int, length: int, depth: float
) -> tuple[np.ndarray, int]:
    """``n`` passkey windows of ``length`` bytes with the key at ``depth`` in ``[0, 1]``.

    Returns ``(windows, first)``: int64 ``(n, length)`` and the index of the
    first of the five answer digits (the last five bytes).
    """
    depth = check_real("depth", depth, minimum=0.0, maximum=1.0)
    rows = [_passkey_sequence(rng, text, length, depth)[0] for _ in range(n)]
    return np.stack(rows).astype(np.int64), length - 5


# --------------------------------------------------------------------- design


@dataclass(frozen=True)
class LongTextConfig:
    """Every parameter of the design, stored with the results."""

    d_model: int = 64
    n_heads: int = 2
    n_layers: int = 4
    base: float = 10_000.0
    train_length: int = 128
    factors: tuple[int, ...] = (1, 2, 4, 8)
    methods: tuple[str, ...] = METHODS
    seeds: tuple[int, ...] = (0, 1, 2)
    #: RoPE, whose extension rules are compared seed by seed, gets more seeds.
    rope_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    batch: int = 16
    steps: int = 1200
    warmup: int = 60
    learning_rates: tuple[float, ...] = (2e-3, 4e-3)
    tune_steps: int = 200
    passkey_fraction: float = 0.5
    answer_weight: float = 2.0
    eval_windows: int = 24
    bin_width: int = 32
    finetune_factor: int = 4
    finetune_checkpoints: tuple[int, ...] = (25, 50, 100)
    finetune_batch: int = 4
    finetune_rate_ratio: float = 0.25
    passkey_depths: tuple[float, ...] = (0.1, 0.5, 0.9)
    passkey_trials: int = 16
    threads: int = 1
    rules: tuple[str, ...] = RULES
    finetuned_rules: tuple[str, ...] = FINETUNED_RULES
    #: Rules read with passkeys (dynamic NTK over a whole input is NTK with alpha = s;
    #: YaRN's temperature barely changes which byte is most likely).
    passkey_rules: tuple[str, ...] = ("none", "pi", "ntk", "yarn", "llama3")
    data_seed: int = 1234

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def eval_length(self) -> int:
        return self.train_length * max(self.factors)

    def lengths(self) -> list[int]:
        return [self.train_length * f for f in self.factors]


def config_from_dict(d: dict[str, Any]) -> LongTextConfig:
    names = {f.name for f in fields(LongTextConfig)}
    return LongTextConfig(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in d.items() if k in names})


def rope_for_rule(config: LongTextConfig, rule: str, factor: float):
    """The :class:`posenc.torch.RotaryEmbedding` of ``rule`` at extension ``factor``.

    ``"ntk"`` raises the base by ``factor ** (d / (d - 2))`` (alpha = s);
    the others are transformers' ``rope_type`` of the same name with
    ``original_max_position_embeddings = L`` (``"yarn_no_temp"``: YaRN with
    ``attention_factor = 1``; ``"dynamic"``: factor 1, so alpha = current
    length / L).
    """
    from .torch import RotaryEmbedding

    rule = check_choice("rule", rule, RULES)
    factor = check_real("factor", factor, minimum=1.0)
    d, base, L = config.head_dim, config.base, config.train_length
    if rule == "none" or (factor == 1.0 and rule != "dynamic"):
        return RotaryEmbedding(d, base)
    if rule == "ntk":
        return RotaryEmbedding(d, base * factor ** (d / (d - 2)))
    original = {"original_max_position_embeddings": L}
    scaling = {
        "pi": {"rope_type": "linear", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": 1.0, "max_position_embeddings": L},
        "yarn": {"rope_type": "yarn", "factor": factor, **original},
        "yarn_no_temp": {"rope_type": "yarn", "factor": factor, "attention_factor": 1.0,
                         **original},
        "llama3": {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, **original},
    }[rule]
    return RotaryEmbedding(d, base, scaling=scaling)


# ------------------------------------------------------------------- training


def _model(config: LongTextConfig, method: str, seed: int):
    import torch

    from .torch import CausalLM

    torch.manual_seed(seed)
    max_len = config.train_length if method == "learned" else config.eval_length
    return CausalLM(256, config.d_model, config.n_heads, config.n_layers,
                    position=method, max_len=max_len, base=config.base)


def _train(model, text, config, *, rate, steps, batch, length, seed, schedule=True,
           checkpoints=(), on_checkpoint=None, tick=None):
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng([config.data_seed, seed, length])
    opt = torch.optim.AdamW(model.parameters(), lr=rate, weight_decay=0.01)
    losses = []
    model.train()
    for step in range(1, steps + 1):
        if schedule:  # linear warm-up, then cosine to a tenth
            if step <= config.warmup:
                lr = rate * step / config.warmup
            else:
                t = (step - config.warmup) / max(1, steps - config.warmup)
                lr = rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))
            for g in opt.param_groups:
                g["lr"] = lr
        x, first = training_batch(rng, text, batch, length, config.passkey_fraction)
        x = torch.from_numpy(x)
        logits = model(x[:, :-1])
        token_loss = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        loss = token_loss.mean()
        drills = np.flatnonzero(first >= 0)
        if drills.size and config.answer_weight:  # the answer digits count extra
            answers = torch.stack([token_loss[i, first[i] - 1 :] for i in drills])
            loss = loss + config.answer_weight * answers.mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if tick is not None:
            tick(batch * length)
        if step in checkpoints:
            model.eval()
            on_checkpoint(step)
            model.train()
    model.eval()
    return losses


def _eval_windows(config: LongTextConfig, text: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng([config.data_seed, 7])
    n, length = config.eval_windows, config.eval_length + 1
    starts = rng.choice(text.size - length, size=n, replace=False)
    return np.stack([text[s : s + length] for s in np.sort(starts)]).astype(np.int64)


def _position_loss(model, windows: np.ndarray, length: int, chunk: int = 8, *,
                   start: int = 0, keep: int = 0) -> np.ndarray:
    """Mean cross-entropy (nats per byte) at positions ``keep..length-1`` over the windows.

    The model reads bytes ``start..length-1`` at their own positions (``start
    > 0`` hides what lies further back); ``keep`` must be at least ``start``.
    """
    import torch
    import torch.nn.functional as F

    total = np.zeros(length - keep)
    positions = torch.arange(start, length)
    with torch.no_grad():
        for i in range(0, len(windows), chunk):
            x = torch.from_numpy(windows[i : i + chunk, start : length + 1])
            logits = model(x[:, :-1], positions)
            loss = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
            total += loss[:, keep - start :].sum(0).double().numpy()
    return total / len(windows)


def _dynamic_loss(model, config: LongTextConfig, windows: np.ndarray) -> np.ndarray:
    """Loss at every position to ``8L`` under dynamic NTK, as a server without a cache runs it.

    Each bin of ``bin_width`` positions is read with the frequencies of the
    input up to its end (alpha = that length / L, at least 1).
    """
    w = config.bin_width
    model.set_rotary(rope_for_rule(config, "dynamic", 1.0))
    return np.concatenate([_position_loss(model, windows, end, keep=end - w)
                           for end in range(w, config.eval_length + 1, w)])


def _binned(loss: np.ndarray, width: int) -> list[float]:
    return [float(v) for v in loss.reshape(-1, width).mean(1)]


def _passkey_accuracy(model, config: LongTextConfig, text: np.ndarray, seed: int,
                      lengths: Sequence[int]) -> dict[str, list[float]]:
    """Share of keys with all five digits right (greedy, each digit given the true previous)."""
    import torch

    out = {}
    for length in lengths:
        row = []
        for depth in config.passkey_depths:
            rng = np.random.default_rng([config.data_seed, 99, length, int(depth * 100)])
            x, first = passkey_batch(rng, text, config.passkey_trials, length, depth)
            with torch.no_grad():
                logits = model(torch.from_numpy(x[:, :-1]))
            guess = logits[:, first - 1 :, :].argmax(-1).numpy()
            row.append(float((guess == x[:, first:]).all(1).mean()))
        out[str(length)] = row
    return out


def _local_loss(model, config, windows, lengths) -> dict[str, list[float]]:
    """Binned loss on the last ``L`` positions of each length when only ``2L`` bytes are read.

    The same positions as the full reading, with every byte further than
    ``L`` to ``2L`` back hidden: if the loss is the same, the far bytes were
    not used.
    """
    L = config.train_length
    return {str(n): _binned(_position_loss(model, windows, n, start=n - 2 * L, keep=n - L),
                            config.bin_width) for n in lengths if n >= 2 * L}


def _read_model(model, config, windows, text_test, seed, *, rules=None, passkey=True):
    """Binned loss (whole input, and the last L with 2L read), passkey recall; per rule for RoPE."""
    lengths = config.lengths()
    w = config.bin_width
    result: dict[str, Any] = {}
    if model.position == "learned":
        result["loss"] = _binned(_position_loss(model, windows, config.train_length), w)
        if passkey:
            result["passkey"] = _passkey_accuracy(model, config, text_test, seed, lengths[:1])
        return result
    if rules is None:
        result["loss"] = _binned(_position_loss(model, windows, config.eval_length), w)
        result["local"] = _local_loss(model, config, windows, lengths)
        if passkey:
            result["passkey"] = _passkey_accuracy(model, config, text_test, seed, lengths)
        return result
    for rule in rules:  # a rotary model read at each length with each rule
        per_length, local, keys = {}, {}, {}
        if rule == "dynamic":
            dynamic = _binned(_dynamic_loss(model, config, windows), w)
        for factor, length in zip(config.factors, lengths, strict=False):
            model.set_rotary(rope_for_rule(config, rule, float(factor)))
            if rule == "dynamic":
                per_length[str(length)] = dynamic[: length // w]
            else:
                per_length[str(length)] = _binned(_position_loss(model, windows, length), w)
            local.update(_local_loss(model, config, windows, [length]))
            if passkey and rule in config.passkey_rules:
                keys[str(length)] = _passkey_accuracy(model, config, text_test, seed,
                                                      [length])[str(length)]
        result[rule] = {"loss": per_length, "local": local, **({"passkey": keys} if keys else {})}
    model.set_rotary(rope_for_rule(config, "none", 1.0))
    return result


# --------------------------------------------------------------------- grid


def _seeds(config: LongTextConfig, method: str) -> tuple[int, ...]:
    return config.rope_seeds if method == "rope" else config.seeds


def _set_threads(config):
    import torch

    torch.set_num_threads(config.threads)


def _tune_job(args):
    config, method, rate, corpus = args
    _set_threads(config)
    model = _model(config, method, 0)
    _train(model, corpus["train"], config, rate=rate, steps=config.tune_steps,
           batch=config.batch, length=config.train_length, seed=10_000, tick=_tick)
    windows = _eval_windows(config, corpus["validation"])
    loss = _position_loss(model, windows, config.train_length)
    return method, rate, float(loss.mean())


def _train_job(args, save=True):
    config, method, seed, rate, corpus, state_dir = args
    import torch

    _set_threads(config)
    model = _model(config, method, seed)
    losses = _train(model, corpus["train"], config, rate=rate, steps=config.steps,
                    batch=config.batch, length=config.train_length, seed=seed, tick=_tick)
    windows = _eval_windows(config, corpus["test"])
    read = _read_model(model, config, windows, corpus["test"], seed,
                       rules=config.rules if method == "rope" else None)
    if method == "rope" and save:
        torch.save(model.state_dict(), Path(state_dir) / f"rope-{seed}.pt")
    return {"method": method, "seed": seed, "rate": rate,
            "train_loss_last20": float(np.mean(losses[-20:])), **(
                {"rules": read} if method == "rope" else read)}


def _finetune_job(args):
    config, rule, seed, rate, corpus, state_dir = args
    import torch

    _set_threads(config)
    model = _model(config, "rope", seed)
    model.load_state_dict(torch.load(Path(state_dir) / f"rope-{seed}.pt"))
    s = config.finetune_factor
    model.set_rotary(rope_for_rule(config, rule, float(s)))
    windows = _eval_windows(config, corpus["test"])
    length = config.train_length * s
    checkpoints: dict[str, Any] = {}

    def read(step):
        checkpoints[str(step)] = {
            "loss": _binned(_position_loss(model, windows, config.eval_length), config.bin_width)
        }
        if step == max(config.finetune_checkpoints):
            checkpoints[str(step)]["passkey"] = _passkey_accuracy(
                model, config, corpus["test"], seed, config.lengths())

    _train(model, corpus["train"], config, rate=rate * config.finetune_rate_ratio,
           steps=max(config.finetune_checkpoints), batch=config.finetune_batch, length=length,
           seed=20_000 + seed, schedule=False, checkpoints=set(config.finetune_checkpoints),
           on_checkpoint=read, tick=_tick)
    return {"rule": rule, "seed": seed, "checkpoints": checkpoints}


_COUNTER = None


def _init_worker(counter):
    global _COUNTER
    _COUNTER = counter


def _tick(tokens):
    if _COUNTER is not None:
        with _COUNTER.get_lock():
            _COUNTER.value += tokens


def _run_phase(pool, func, jobs, counter, done_before, total, bar):
    result = pool.map_async(func, jobs, chunksize=1)
    while not result.ready():
        result.wait(1.0)
        bar(done_before + counter.value, total)
    return result.get()


def run_grid(config: LongTextConfig, path: str | Path | None = None, *, processes: int = 2,
             progress: bool = True) -> dict[str, Any]:
    """Tune, train, read and fine-tune every cell of the design; write the results as JSON."""
    import multiprocessing as mp
    import tempfile

    start = time.time()
    corpus = load_corpus()
    L = config.train_length
    tune_tokens = len(config.methods) * len(config.learning_rates) * config.tune_steps
    trained = sum(len(_seeds(config, m)) for m in config.methods)
    total = config.batch * L * (tune_tokens + trained * config.steps)
    total += (len(config.finetuned_rules) * len(config.rope_seeds)
              * max(config.finetune_checkpoints) * config.finetune_batch * L
              * config.finetune_factor)

    def bar(done, total):
        if not progress:
            return
        frac = min(1.0, done / total)
        mins = (time.time() - start) / 60
        sys.stderr.write(f"\r[{'#' * int(40 * frac):<40}] {100 * frac:5.1f}%  {mins:5.1f} min")
        sys.stderr.flush()

    context = mp.get_context("spawn")
    counter = context.Value("q", 0)
    with tempfile.TemporaryDirectory() as state_dir, context.Pool(
        processes, initializer=_init_worker, initargs=(counter,)
    ) as pool:
        tune = _run_phase(pool, _tune_job, [
            (config, m, r, corpus) for m in config.methods for r in config.learning_rates
        ], counter, 0, total, bar)
        rates = {}
        for method in config.methods:
            scores = {r: v for m, r, v in tune if m == method}
            rates[method] = min(scores, key=lambda r: (scores[r], r))
        runs = _run_phase(pool, _train_job, [
            (config, m, s, rates[m], corpus, state_dir)
            for m in sorted(config.methods, key=lambda m: m != "rope") for s in _seeds(config, m)
        ], counter, 0, total, bar)
        finetunes = _run_phase(pool, _finetune_job, [
            (config, rule, s, rates["rope"], corpus, state_dir)
            for rule in config.finetuned_rules for s in config.rope_seeds
        ], counter, 0, total, bar)
    bar(total, total)
    if progress:
        sys.stderr.write("\n")
    import torch

    payload = {
        "config": asdict(config),
        "corpus": corpus_fingerprint(corpus),
        "tuning": [{"method": m, "rate": r, "validation_loss": v} for m, r, v in tune],
        "rates": rates,
        "runs": runs,
        "finetunes": finetunes,
        "seconds": time.time() - start,
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_threads": config.threads,
            "processes": processes,
        },
    }
    if path is not None:
        Path(path).write_text(json.dumps(payload, indent=1) + "\n")
    return payload


# ------------------------------------------------------------------ summaries


def load_results(path: str | Path) -> tuple[LongTextConfig, dict[str, Any]]:
    payload = json.loads(Path(path).read_text())
    stored = dict(payload["config"])
    if "rope_seeds" not in stored:  # written before RoPE had seeds of its own
        stored["rope_seeds"] = sorted({run["seed"] for run in payload["runs"]
                                       if run["method"] == "rope"})
    return config_from_dict(stored), payload


def _interval(log_values) -> dict[str, Any]:
    """Mean of per-seed log-perplexities and its 95% t interval, as perplexities."""
    log_values = np.asarray(log_values, dtype=float)
    mean, low, high = mean_interval_or_nan(log_values)
    return {"seeds": [math.exp(v) for v in log_values], "mean": math.exp(mean),
            "low": math.exp(low), "high": math.exp(high)}


def _seed_runs(payload, method):
    return sorted((r for r in payload["runs"] if r["method"] == method), key=lambda r: r["seed"])


def _finetune_runs(payload, rule):
    return sorted((f for f in payload["finetunes"] if f["rule"] == rule), key=lambda f: f["seed"])


def loss_curves(config: LongTextConfig, payload: dict[str, Any], name: str,
                length: int | None = None, *, width: int | None = None) -> np.ndarray:
    """Per-seed loss (nats per byte) in each bin of positions, ``(seeds, bins)``.

    ``name``: a method (RoPE unscaled for ``"rope"``), ``"rope+<rule>"`` (read
    at ``length``, default ``8L``) or ``"ft+<rule>@<step>"``. A learned table
    has bins up to ``L`` only. ``width``: a multiple of ``bin_width`` to
    average neighbouring bins into wider ones.
    """
    if width is not None:
        k = check_integer("width", width, minimum=config.bin_width) // config.bin_width
        if width % config.bin_width:
            raise ValueError(f"width must be a multiple of {config.bin_width}, got {width}")
        loss = loss_curves(config, payload, name, length)
        return loss.reshape(loss.shape[0], -1, k).mean(axis=2)
    length = config.eval_length if length is None else length
    if name.startswith("ft+"):
        rule, step = name[3:].split("@")
        rows = [f["checkpoints"][step]["loss"] for f in _finetune_runs(payload, rule)]
        return np.array(rows)[:, : length // config.bin_width]
    method, _, rule = name.partition("+")
    runs = _seed_runs(payload, method)
    if method == "rope":
        return np.array([r["rules"][rule or "none"]["loss"][str(length)] for r in runs])
    return np.array([r["loss"] for r in runs])[:, : length // config.bin_width]


def bin_centres(config: LongTextConfig, width: int | None = None) -> np.ndarray:
    """The centre of each bin of ``width`` positions to ``8L`` (default: the stored bins)."""
    w = config.bin_width if width is None else width
    return np.arange(config.eval_length // w) * w + (w - 1) / 2


def running_loss(loss: np.ndarray) -> np.ndarray:
    """Mean loss over the first ``k`` bins, for every ``k``: ``(seeds, bins)`` as ``loss``.

    Bins of equal width, so the running mean of the bins is the mean over
    every position of the prefix: ``exp`` of it is the perplexity of the
    first ``k`` bins' bytes.
    """
    loss = np.asarray(loss, dtype=float)
    return loss.cumsum(axis=-1) / np.arange(1, loss.shape[-1] + 1)


def perplexity_rows(loss: np.ndarray) -> np.ndarray:
    """Rows ``(mean, low, high)`` of perplexity per column of per-seed losses ``(seeds, n)``.

    The t interval of the mean loss over seeds (95%), exponentiated.
    """
    loss = np.asarray(loss, dtype=float)
    rows = [mean_interval_or_nan(loss[:, j]) for j in range(loss.shape[1])]
    return np.exp(np.array(rows, dtype=float))


def local_summary(config: LongTextConfig, payload: dict[str, Any], name: str,
                  length: int) -> dict[str, Any]:
    """Perplexity on the last ``L`` bytes of ``length``: whole input read, and only ``2L`` read.

    Returns per-seed perplexities of both readings and the interval of the
    mean log-ratio (whole / local; below 1: the far bytes helped).
    """
    w, L = config.bin_width, config.train_length
    method, _, rule = name.partition("+")
    runs = _seed_runs(payload, method)
    full, local = [], []
    for r in runs:
        read = r["rules"][rule or "none"] if method == "rope" else r
        loss = read["loss"][str(length)] if method == "rope" else read["loss"][: length // w]
        full.append(float(np.mean(loss[(length - L) // w :])))
        local.append(float(np.mean(read["local"][str(length)])))
    full, local = np.array(full), np.array(local)
    mean, low, high = mean_interval_or_nan(full - local)
    return {"whole": np.exp(full), "local": np.exp(local),
            "ratio": math.exp(mean), "low": math.exp(low), "high": math.exp(high)}


def recall_at_train_length(config: LongTextConfig, payload: dict[str, Any],
                           method: str) -> np.ndarray:
    """Share of passkeys recalled at ``L`` by each seed of ``method`` (RoPE unscaled)."""
    runs = _seed_runs(payload, method)
    key = str(config.train_length)
    if method == "rope":
        return np.array([np.mean(r["rules"]["none"]["passkey"][key]) for r in runs])
    return np.array([np.mean(r["passkey"][key]) for r in runs])


def perplexity_summary(config: LongTextConfig, payload: dict[str, Any]) -> dict[tuple, dict]:
    """Perplexity over the first ``sL`` bytes, for every reading of the results.

    Keys ``(name, length)``, ``name`` as in :func:`loss_curves`; values: the
    per-seed perplexities (``"seeds"``) and the 95% interval of their
    geometric mean (``"mean"``, ``"low"``, ``"high"``; the t interval of the
    mean log-perplexity, exponentiated).
    """
    names = [m for m in config.methods if m != "rope"]
    names += [f"rope+{r}" for r in config.rules]
    names += [f"ft+{r}@{s}" for r in config.finetuned_rules for s in config.finetune_checkpoints]
    out = {}
    for name in names:
        for length in config.lengths():
            curves = loss_curves(config, payload, name, length)
            if curves.shape[1] * config.bin_width < length:
                continue  # a learned table cannot run there
            out[(name, length)] = _interval(curves.mean(axis=1))
    return out


def passkey_summary(config: LongTextConfig, payload: dict[str, Any]) -> dict[tuple, np.ndarray]:
    """Share of keys recalled, ``(seeds, depths)``, by ``(name, length)``.

    ``name``: a method, ``"rope+<rule>"`` (zero-shot) or ``"ft+<rule>"``
    (after the last fine-tuning checkpoint).
    """
    out = {}
    for method in config.methods:
        runs = _seed_runs(payload, method)
        if method == "rope":
            for rule in config.passkey_rules:
                for length in runs[0]["rules"][rule]["passkey"]:
                    out[(f"rope+{rule}", int(length))] = np.array(
                        [r["rules"][rule]["passkey"][length] for r in runs])
            continue
        for length in runs[0]["passkey"]:
            out[(method, int(length))] = np.array([r["passkey"][length] for r in runs])
    last = str(max(config.finetune_checkpoints))
    for rule in config.finetuned_rules:
        runs = _finetune_runs(payload, rule)
        for length in runs[0]["checkpoints"][last]["passkey"]:
            out[(f"ft+{rule}", int(length))] = np.array(
                [f["checkpoints"][last]["passkey"][length] for f in runs])
    return out


def compare(config: LongTextConfig, payload: dict[str, Any],
            pairs: Sequence[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """Paired comparisons of perplexity over seeds, Holm-corrected together.

    Each ``(name, against, length)`` compares the perplexity over ``length``
    bytes of two readings of the same trained models (names as in
    :func:`perplexity_summary`), seed by seed: the mean log-ratio, its 95%
    t interval and p-value (:func:`posenc.stats.paired_interval`), reported
    as ratios, and the p-value after Holm's correction over all ``pairs``.
    """
    from .stats import holm, paired_interval

    summary = perplexity_summary(config, payload)
    rows = []
    for name, against, length in pairs:
        a = np.log(summary[(name, length)]["seeds"])
        b = np.log(summary[(against, length)]["seeds"])
        mean, low, high, p = paired_interval(a - b)
        rows.append({"name": name, "against": against, "length": length,
                     "ratio": math.exp(mean), "low": math.exp(low), "high": math.exp(high),
                     "p": p})
    for row, adjusted in zip(rows, holm([r["p"] for r in rows]), strict=False):
        row["p_holm"] = float(adjusted)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the results file to write (JSON)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a tiny grid, to try the code")
    args = parser.parse_args(argv)
    config = LongTextConfig()
    if args.quick:
        config = LongTextConfig(steps=20, tune_steps=5, seeds=(0,), rope_seeds=(0,),
                                learning_rates=(2e-3,),
                                eval_windows=4, finetune_checkpoints=(2, 4), passkey_trials=4)
    run_grid(config, args.out, processes=args.processes)


if __name__ == "__main__":
    main()
