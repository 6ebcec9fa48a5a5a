"""Tests for posenc.longcontext (chapter 7 on real text) and its committed results."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from posenc import longcontext as lc
from posenc.scaling import scaled_frequencies

from .spot_checks import COMPARISONS, LEVEL, SEED_VARIABLE, spot_seed

torch = pytest.importorskip("torch")

RESULTS = Path(__file__).resolve().parents[1] / "results" / "ch7_longcontext.json"


@pytest.fixture(scope="module")
def corpus():
    return lc.load_corpus()


def test_the_corpus_is_the_pinned_package_split_by_file(corpus):
    payload = json.loads(RESULTS.read_text())
    assert lc.corpus_fingerprint(corpus) == payload["corpus"]
    assert payload["corpus"]["version"] == "2.4.6"  # requirements.txt pins numpy
    files = lc.corpus_files()
    assert all("tests" not in p.parts[-3:-1] for p in files)
    assert [p.name for p in files if p.name in lc._BUILD_FILES] == []
    sizes = {k: v.size for k, v in corpus.items()}
    assert sizes["train"] > 8 * (sizes["validation"] + sizes["test"]) / 2
    # no file of the test split is in the training split
    test_file = next(p for i, p in enumerate(files) if i % 20 == 19).read_bytes()
    assert test_file[:2000] in corpus["test"].tobytes()
    assert test_file[:2000] not in corpus["train"].tobytes()


def test_a_passkey_window_hides_the_key_at_its_depth_and_asks_at_the_end(corpus):
    rng = np.random.default_rng(3)
    for length in (128, 512):
        for depth in (0.0, 0.5, 1.0):
            windows, first = lc.passkey_batch(rng, corpus["test"], 4, length, depth)
            assert windows.shape == (4, length) and first == length - 5
            for row in windows:
                text = bytes(row.astype(np.uint8)).decode("latin-1")
                key = text[-5:]
                assert key.isdigit() and text[:-5].endswith(lc.PASSKEY_QUERY)
                at = text.index(lc.PASSKEY_LINE.format(key))
                filler = length - len(lc.PASSKEY_LINE.format(key)) - len(lc.PASSKEY_QUERY) - 5
                assert abs(at - depth * filler) <= 80  # moved to a line start at most 80 back
    with pytest.raises(ValueError, match="depth"):
        lc.passkey_batch(rng, corpus["test"], 1, 128, 1.5)
    with pytest.raises(ValueError, match="length must exceed"):
        lc.passkey_batch(rng, corpus["test"], 1, 30, 0.5)


def test_training_batches_mix_text_and_drills(corpus):
    rng = np.random.default_rng(0)
    x, first = lc.training_batch(rng, corpus["train"], 400, 128, 0.5)
    assert x.shape == (400, 129) and x.dtype == np.int64
    drills = first >= 0
    assert 0.4 < drills.mean() < 0.6  # a binomial share around one half
    assert set(first[drills]) == {124}
    with pytest.raises(ValueError, match="passkey_fraction"):
        lc.training_batch(rng, corpus["train"], 2, 128, 2.0)


@pytest.mark.parametrize("factor", [2.0, 4.0, 8.0])
def test_each_rule_is_posencs_or_transformers_rule(factor):
    config = lc.LongTextConfig()
    d, base, L = config.head_dim, config.base, config.train_length
    theta = 1 / base ** (np.arange(0, d, 2) / d)
    inv = {rule: lc.rope_for_rule(config, rule, factor).inv_freq.double().numpy()
           for rule in lc.RULES}
    np.testing.assert_allclose(inv["none"], theta, rtol=1e-6)
    np.testing.assert_allclose(inv["pi"], theta / factor, rtol=1e-6)
    ntk = scaled_frequencies(d, base, method="ntk", factor=factor)
    np.testing.assert_allclose(inv["ntk"], ntk, rtol=1e-6)
    yarn = scaled_frequencies(d, base, method="yarn", factor=factor, original_length=L)
    np.testing.assert_allclose(inv["yarn"], yarn, rtol=1e-6)
    np.testing.assert_array_equal(inv["yarn"], inv["yarn_no_temp"])
    assert lc.rope_for_rule(config, "yarn", factor).attention_scaling == pytest.approx(
        0.1 * math.log(factor) + 1)
    assert lc.rope_for_rule(config, "yarn_no_temp", factor).attention_scaling == 1.0
    llama3 = scaled_frequencies(d, base, method="llama3", factor=factor, original_length=L)
    np.testing.assert_allclose(inv["llama3"], llama3, rtol=1e-6)
    # dynamic NTK: alpha = current length / L, so unchanged up to L
    dyn = lc.rope_for_rule(config, "dynamic", factor)
    inv_long, _ = dyn._inv_freq(int(factor * L))
    np.testing.assert_allclose(inv_long.double().numpy(), ntk, rtol=1e-5)
    short = lc.rope_for_rule(config, "none", 1.0).cos_sin(torch.arange(L))
    for got, want in zip(dyn.cos_sin(torch.arange(L)), short, strict=False):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    longer = dyn.cos_sin(torch.arange(int(factor * L)))[0][: L]
    assert not torch.equal(longer, short[0])  # the whole input gets the new frequencies
    with pytest.raises(ValueError, match="rule"):
        lc.rope_for_rule(config, "ntk-by-parts", factor)


def test_the_model_refuses_what_it_cannot_do():
    from posenc.torch import CausalLM, RotaryEmbedding

    learned = CausalLM(256, 64, 2, 1, position="learned", max_len=16)
    with pytest.raises(ValueError, match=r"position_ids must lie in \[0, 15\]"):
        learned(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="position='rope'"):
        learned.set_rotary(RotaryEmbedding(32))
    rope = CausalLM(256, 64, 2, 1, position="rope")
    with pytest.raises(ValueError, match="head_dim must be 32"):
        rope.set_rotary(RotaryEmbedding(16))
    with pytest.raises(ValueError, match="position must be one of"):
        CausalLM(256, 64, 2, 1, position="xpos")
    with pytest.raises(ValueError, match=r"ids must have shape \(batch, length\)"):
        rope(torch.zeros(5, dtype=torch.long))


def test_the_model_is_causal_for_every_method():
    from posenc.torch import CausalLM

    x = torch.randint(0, 256, (2, 24))
    for method in CausalLM.POSITIONS:
        torch.manual_seed(0)
        model = CausalLM(256, 64, 2, 2, position=method, max_len=32).eval()
        y = x.clone()
        y[:, 16:] = torch.randint(0, 256, (2, 8))
        with torch.no_grad():
            a, b = model(x), model(y)
        torch.testing.assert_close(a[:, :16], b[:, :16], rtol=0, atol=1e-5)
        assert (a[:, 16:] - b[:, 16:]).abs().max() > 1e-3, method


def test_committed_results_follow_the_design():
    config, payload = lc.load_results(RESULTS)
    assert config == lc.LongTextConfig()
    runs = {(r["method"], r["seed"]) for r in payload["runs"]}
    assert runs == {(m, s) for m in config.methods for s in lc._seeds(config, m)}
    assert len(config.rope_seeds) > len(config.seeds) >= 3
    fts = {(f["rule"], f["seed"]) for f in payload["finetunes"]}
    assert fts == {(r, s) for r in config.finetuned_rules for s in config.rope_seeds}
    # each method's rate is the lowest validation loss of its tuning runs
    for method in config.methods:
        tuned = {t["rate"]: t["validation_loss"] for t in payload["tuning"]
                 if t["method"] == method}
        assert set(tuned) == set(config.learning_rates)
        assert payload["rates"][method] == min(tuned, key=tuned.get)
    assert payload["seconds"] < 20 * 60  # make experiments-ch7's budget


def _features(run, config):
    """Log-perplexity over the first sL bytes at each length, and passkey recall at L."""
    w = config.bin_width
    if run["method"] == "rope":
        loss = [np.mean(run["rules"]["none"]["loss"][str(n)]) for n in config.lengths()]
        keys = np.mean(run["rules"]["none"]["passkey"][str(config.train_length)])
    else:
        loss = [np.mean(run["loss"][: n // w]) for n in config.lengths() if n // w <= len(
            run["loss"])]
        keys = np.mean(run["passkey"][str(config.train_length)])
    return np.array([*loss, keys])


def test_spot_check_a_random_run_of_the_committed_results():
    """Re-train one random (method, seed) of the file and compare it with the stored seeds.

    On this machine the run repeats exactly. On another processor a run may
    end elsewhere; we assume it then behaves like one more seed of the same
    cell (no further from the stored run than a new seed would be). Under that
    assumption and normal spread, each feature of the fresh run lies in the
    prediction interval of the stored seeds (Student t with n - 1 degrees of
    freedom) at level ``LEVEL / features``: a correct code fails this test
    with probability at most ``LEVEL`` (``tests/spot_checks.py``).
    """
    config, payload = lc.load_results(RESULTS)
    seed = spot_seed()
    rng = np.random.default_rng(seed)
    run = payload["runs"][int(rng.integers(len(payload["runs"])))]
    corpus = lc.load_corpus()
    fresh = lc._train_job((replace(config, rules=("none",)), run["method"], run["seed"],
                           run["rate"], corpus, str(Path("/nonexistent"))), save=False)
    again = _features(fresh, config)
    stored = np.array([_features(r, config) for r in payload["runs"]
                       if r["method"] == run["method"]])
    own = _features(run, config)
    label = f"{run['method']} seed {run['seed']}"
    print(f"{label}: fresh {np.round(again, 4)} stored {np.round(own, 4)}")
    if np.array_equal(again, own):
        return  # repeated exactly
    n = len(stored)
    # a floor under each spread: 0.001 in log-perplexity, and for the share of keys
    # recalled, the largest binomial SD of a share of its keys, 0.5 / sqrt(keys)
    keys = len(config.passkey_depths) * config.passkey_trials
    floor = np.r_[np.full(again.size - 1, 1e-3), 0.5 / math.sqrt(keys)]
    spread = np.maximum(stored.std(axis=0, ddof=1), floor) * math.sqrt(1 + 1 / n)
    t = stats.t.ppf(1 - LEVEL / (2 * again.size), n - 1)
    off = np.abs(again - stored.mean(axis=0)) > t * spread + 1e-9
    assert not off.any(), (
        f"{SEED_VARIABLE}={seed}: {label} is outside the prediction interval of its stored "
        f"seeds in features {np.flatnonzero(off)}: fresh {again}, stored mean "
        f"{stored.mean(axis=0)}, half-width {t * spread}"
    )
    assert COMPARISONS["ch7 text run"] == 1


def _answer_snippet():
    """The transformers code of chapter 7's answer box, as the page prints it."""
    import textwrap

    path = Path(__file__).parents[1] / "chapters" / "07_length_extrapolation.ipynb"
    cells = json.loads(path.read_text())["cells"]
    box = next("".join(c["source"]) for c in cells
               if "{admonition} The answer" in "".join(c["source"]))
    code = box.split("```python\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(code)


@pytest.mark.parametrize("rule", ["yarn", "llama3"])
def test_the_answer_box_config_runs_and_sets_the_rule(tmp_path, rule):
    # The snippet runs as printed on a saved random Llama (nothing downloaded),
    # with "# or yarn" taken at its word, and the model it loads rotates by
    # the frequencies of the rule: posenc's, to float32 rounding.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    base, head = 10_000.0, 128
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=2 * head, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=2, head_dim=head,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": base})
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    code = _answer_snippet()
    assert "update(llama3)  # or yarn" in code
    if rule == "yarn":
        code = code.replace("update(llama3)", "update(yarn)")
    scope = {"AutoConfig": transformers.AutoConfig, "name": str(tmp_path),
             "AutoModelForCausalLM": transformers.AutoModelForCausalLM}
    exec(code, scope)
    model = scope["model"]
    assert model.config.max_position_embeddings == 8 * 4096
    assert model.config.rope_parameters["rope_type"] == rule
    got = model.model.rotary_emb.inv_freq.double().numpy()
    want = scaled_frequencies(head, base, method=rule, factor=8.0,
                              original_length=4096)
    np.testing.assert_allclose(got, want, rtol=4 * 2.0**-24)
    # and the other rule would have given other frequencies
    other = scaled_frequencies(head, base, factor=8.0, original_length=4096,
                               method={"yarn": "llama3", "llama3": "yarn"}[rule])
    assert np.abs(got / other - 1).max() > 0.1


def test_the_ntk_snippet_raises_the_base_by_the_rule():
    # Chapter 7's NTK-aware snippet, as printed, on a config with a
    # partial rotary factor: the base rises by alpha^(d / (d - 2)), with d
    # the rotated width, not the head width.
    transformers = pytest.importorskip("transformers")
    path = Path(__file__).parents[1] / "chapters" / "07_length_extrapolation.ipynb"
    cells = json.loads(path.read_text())["cells"]
    text = next("".join(c["source"]) for c in cells
                if "Instead of cfg.rope_parameters.update(llama3)"
                in "".join(c["source"]))
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    for partial, rotated in ((None, 128), (0.5, 64)):
        cfg = transformers.LlamaConfig(
            hidden_size=256, num_attention_heads=2, head_dim=128,
            rope_parameters={"rope_type": "default", "rope_theta": 1e4})
        if partial is not None:
            cfg.partial_rotary_factor = partial
        scope = {"cfg": cfg, "factor": 8.0}
        exec(code, scope)
        want = 1e4 * 8.0 ** (rotated / (rotated - 2))
        assert cfg.rope_parameters["rope_theta"] == pytest.approx(want)
