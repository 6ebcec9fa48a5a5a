r"""The results files on other processors: which rates, means and verdicts move.

Training magnifies the last bits of every floating-point sum, so the same
seed trained with another SIMD path or BLAS kernel can end elsewhere, and a
cell's mean accuracy moves with it. ``make experiments-cpus`` re-runs the
grids of chapters 5 and 7 under each CPU setting that ``make test`` uses
(``tests/cpu_settings.py`` checks that the setting is in force) into
``results/cpus/<setting>/``; this module reduces every run to what the
chapters state (the chosen rate and the mean of each cell, the verdict of
each test) and writes the comparison to ``results/cpu_settings.json``::

    python -m posenc.reproduce results results/cpus/X86_V3-Sandybridge ... --record

The first folder is the reference (the committed files); every other one is
a CPU setting. For each cell the file records the rate and the final mean
under every setting and their *spread*, the largest minus the smallest mean
(in accuracy, 0 to 1), and for every family of tests the verdict under every
setting; a verdict that differs between settings is listed as
machine-dependent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import experiment_verdicts as verdicts
from . import extrapolation as xp
from .experiment import Design
from .stats import difference_interval

__all__ = [
    "cell_key",
    "ch5_summary",
    "ch7_summary",
    "compare_runs",
    "format_comparison",
    "load_comparison",
    "load_run",
    "record_spreads",
]

CH5_FILES = ("ch5_experiment.json", "ch5_token_scale.json", "ch5_long_budget.json")
CH7_FILES = ("ch7_extrapolation.json", "ch7_rate_by_loss.json")


def _regime(key: Sequence[Any]) -> str:
    length, d_model, n_layers = key[:3]
    rest = " ".join(str(k) for k in key[3:])
    return f"L={length} d={d_model} layers={n_layers}" + (f" {rest}" if rest else "")


def cell_key(cell: Mapping[str, Any], part: str) -> str:
    """The name of one chapter-5 cell in the comparison, e.g. ``"main: L=8 d=16 layers=1 ..."``.

    ``part`` is ``"main"``, ``"arm"`` or ``"long"``; a concatenated model is
    named with its matching, an added one is not.
    """
    key = (cell["length"], cell["d_model"], cell["n_layers"], cell["variant"])
    key = (*key, cell["matching"]) if "concat" in cell["variant"] else key
    return f"{part}: {_regime(key)}"


def _verdict(verdict: str, ceiling: bool) -> str:
    return f"{verdict} (ceiling)" if ceiling else verdict


def _interval_verdict(low: float, high: float, positive: str, negative: str) -> str:
    return positive if low > 0 else negative if high < 0 else "undecided"


def _curve(results: Mapping[str, Any], key: Sequence[int], variant: str):
    """Recorded steps and test accuracy ``(n_eval, seeds)`` of one model (equal parameters)."""
    for cell in results["cells"]:
        if (cell["length"], cell["d_model"], cell["n_layers"]) == tuple(key) and (
            (cell["variant"] == variant and cell.get("matching", "parameters") == "parameters")
            or (variant.endswith("-add") and cell["variant"] == variant)
        ):
            return list(cell["steps"]), np.asarray(cell["test_accuracy"], dtype=float)
    raise KeyError(f"no cell {variant} in regime {tuple(key)}")


def ch5_summary(
    main: Mapping[str, Any],
    arm: Mapping[str, Any] | None = None,
    long: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Rates, final means and verdicts of chapter 5's results files.

    Families: ``primary`` and ``width`` (:func:`posenc.experiment_verdicts.compare_design`
    at equal parameters and at equal width), with the token-scale arm
    ``arm_a`` (short tokens minus the design's), ``arm_b`` (concatenated at
    equal parameters minus short tokens) and ``arm_c`` (the same at equal
    width), and with the follow-up ``long_final`` (concatenated minus added
    after the long budget, interval simultaneous over its regimes) and
    ``long_change`` (the change of that difference since the main budget).
    A verdict at the ceiling carries ``(ceiling)``.
    """
    out: dict[str, Any] = {"cells": {}, "verdicts": {}}
    files = {"main": main, "arm": arm, "long": long}
    for name, results in files.items():
        if results is None:
            continue
        for cell in results["cells"]:
            out["cells"][cell_key(cell, name)] = {
                "learning_rate": cell["learning_rate"],
                "mean": float(np.mean(cell["test_accuracy"][-1])),
            }
    design = Design.from_dict(main["design"])
    for family, matching in (("primary", "parameters"), ("width", "width")):
        out["verdicts"][family] = {
            _regime((c.length, c.d_model, c.n_layers, c.code)): _verdict(c.verdict, c.ceiling)
            for c in verdicts.compare_design(dict(main), matching=matching)
        }
    if arm is not None:
        acc = verdicts.cell_accuracy(dict(main))
        width = verdicts.cell_accuracy(dict(main), matching="width")
        short = {
            (c["length"], c["d_model"], c["n_layers"]): np.asarray(c["test_accuracy"][-1])
            for c in arm["cells"]
        }
        pairs = {
            "arm_a": {k: (short[k], acc[(*k, "sinusoidal-add")]) for k in short},
            "arm_b": {k: (acc[(*k, "sinusoidal-concat")], short[k]) for k in short},
            "arm_c": {k: (width[(*k, "sinusoidal-concat")], short[k]) for k in short},
        }
        for family, family_pairs in pairs.items():
            out["verdicts"][family] = {
                _regime(k): _verdict(t["verdict"], t["ceiling"])
                for k, t in verdicts.family_tests(family_pairs, design).items()
            }
    if long is not None:
        long_design = Design.from_dict(long["design"])
        confidence = 1 - design.alpha / len(long_design.regimes)  # Bonferroni, as chapter 5
        finals, changes = {}, {}
        for key in long_design.regimes:
            steps, c = _curve(long, key, "sinusoidal-concat")
            _, a = _curve(long, key, "sinusoidal-add")
            at = steps.index(design.steps)
            _, low, high = difference_interval(c[-1], a[-1], confidence)
            finals[_regime(key)] = _interval_verdict(low, high, "concat better", "add better")
            _, low, high = difference_interval(c[-1] - c[at], a[-1] - a[at], confidence)
            changes[_regime(key)] = _interval_verdict(low, high, "grows", "shrinks")
        out["verdicts"]["long_final"] = finals
        out["verdicts"]["long_change"] = changes
    return out


def ch7_summary(config: xp.ExtrapolationConfig, cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rates, mean accuracy at every test length, and verdicts of one chapter-7 file.

    Families, as chapter 7 tests them (:func:`posenc.extrapolation.classify`):
    ``drop`` (accuracy lost from ``L`` to each longer length), ``drop_new``
    (the same on the positions beyond ``L`` only) and ``extensions`` (the
    RoPE extension rules, paired).
    """
    out: dict[str, Any] = {"cells": {}, "verdicts": {}}
    for cell in cells:
        acc = cell["accuracy"]
        means = []
        for factor in config.factors:
            values = xp.accuracy_at(acc, config.train_length * factor)
            means.append(None if np.isnan(values).any() else float(values.mean()))
        out["cells"][f"{cell['task']} {cell['method']}"] = {
            "learning_rate": cell["learning_rate"],
            "mean": means[0],
            "means_by_factor": means,
        }
    for family, beyond in (("drop", False), ("drop_new", True)):
        out["verdicts"][family] = {
            f"{r['task']} {r['method']} {r['factor']}L": xp.classify(r, config.margin)
            for r in xp.drop_tests(config, cells, beyond_train=beyond)
        }
    out["verdicts"]["extensions"] = {
        f"{r['task']} {r['factor']}L {r['variant']} vs {r['against']}": xp.classify(
            r, config.margin
        )
        for r in xp.extension_tests(config, cells)
    }
    return out


def load_comparison(path: str | Path | None = None) -> dict[str, Any]:
    """The committed comparison: ``results/cpu_settings.json`` (found as the results
    files are, :func:`posenc.experiment_verdicts.load_results`), or the file ``path``."""
    if path is None:
        return verdicts.load_results("cpu_settings.json")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be a comparison file (make cpu-comparison), got {path}")
    return json.loads(path.read_text())


def load_run(folder: str | Path) -> dict[str, Any]:
    """The summaries of every results file in ``folder`` (those present)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"folder must be a folder of results files, got {folder}")
    read = {}
    for name in (*CH5_FILES, *CH7_FILES):
        path = folder / name
        if path.is_file():
            read[name] = json.loads(path.read_text())
    if "ch5_experiment.json" not in read and not any(n in read for n in CH7_FILES):
        raise FileNotFoundError(f"no results file of chapter 5 or 7 in {folder}")
    out: dict[str, Any] = {}
    if "ch5_experiment.json" in read:
        out["ch5"] = ch5_summary(
            read["ch5_experiment.json"],
            read.get("ch5_token_scale.json"),
            read.get("ch5_long_budget.json"),
        )
    for name in CH7_FILES:
        if name in read:
            config = xp.config_from_dict(read[name]["config"])
            out[name.removesuffix(".json")] = ch7_summary(config, read[name]["cells"])
    return out


def _spread(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Largest minus smallest mean over the settings (at every test length, the largest)."""
    columns = [r.get("means_by_factor", [r["mean"]]) for r in rows]
    spreads = []
    for values in zip(*columns, strict=True):
        known = [v for v in values if v is not None]
        if known:
            spreads.append(max(known) - min(known))
    return float(max(spreads)) if spreads else None


def compare_runs(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Line up summaries of the same grids run under several CPU settings.

    ``runs`` maps a setting's name to :func:`load_run` of its folder (the
    first is the reference). For every part (``ch5``, ``ch7_extrapolation``,
    ...) of the reference that at least one other setting has run: per cell
    the rate and mean under each setting that ran it and the spread of the
    mean (largest minus smallest), the cells whose rate differs, and per
    family the verdicts under each setting, with those that differ, and
    ``covered``, the settings that ran each family (a follow-up may have been
    run under fewer settings than the main grid).

    Examples
    --------
    >>> one = {"p": {"cells": {"c": {"learning_rate": 0.01, "mean": 0.9}},
    ...              "verdicts": {"f": {"x": "undecided"}}}}
    >>> two = {"p": {"cells": {"c": {"learning_rate": 0.03, "mean": 0.8}},
    ...              "verdicts": {"f": {"x": "undecided"}}}}
    >>> out = compare_runs({"here": one, "there": two})["p"]
    >>> round(out["cells"]["c"]["spread"], 3), out["rate_differs"], out["verdict_differs"]
    (0.1, ['c'], [])
    """
    if len(runs) < 2:
        raise ValueError(f"runs must hold at least two settings, got {len(runs)}")
    names = list(runs)
    reference = runs[names[0]]
    out: dict[str, Any] = {}
    for part in reference:
        having = [n for n in names if part in runs[n]]
        if len(having) < 2:
            continue
        cells, rate_differs = {}, []
        for key in reference[part]["cells"]:
            row = {n: runs[n][part]["cells"][key] for n in having if key in runs[n][part]["cells"]}
            if len(row) < 2:
                continue
            cells[key] = {
                "learning_rate": {n: r["learning_rate"] for n, r in row.items()},
                "mean": {n: r["mean"] for n, r in row.items()},
                "spread": _spread(list(row.values())),
            }
            if len({r["learning_rate"] for r in row.values()}) > 1:
                rate_differs.append(key)
        verdicts, verdict_differs, covered = {}, [], {}
        for family, table in reference[part]["verdicts"].items():
            by_setting = [n for n in having if family in runs[n][part]["verdicts"]]
            if len(by_setting) < 2:
                continue  # a follow-up not (yet) run under another setting
            covered[family] = by_setting
            verdicts[family] = {}
            for key in table:
                by = {n: runs[n][part]["verdicts"][family][key] for n in by_setting}
                verdicts[family][key] = by
                if len(set(by.values())) > 1:
                    verdict_differs.append(f"{family}: {key}")
        spreads = [c["spread"] for c in cells.values() if c["spread"] is not None]
        out[part] = {
            "cells": cells,
            "rate_differs": rate_differs,
            "largest_spread": max(spreads) if spreads else None,
            "verdicts": verdicts,
            "verdict_differs": verdict_differs,
            "covered": covered,
        }
    return out


def format_comparison(comparison: Mapping[str, Any]) -> str:
    """A short report of :func:`compare_runs`: counts, and every rate and verdict that moved."""
    lines = []
    for part, table in comparison.items():
        if not isinstance(table, dict) or "cells" not in table:
            continue
        n_verdicts = sum(len(v) for v in table["verdicts"].values())
        lines.append(
            f"{part}: {len(table['rate_differs'])} of {len(table['cells'])} cells with another "
            f"rate; {len(table['verdict_differs'])} of {n_verdicts} verdicts differ; largest "
            f"spread of a cell mean {100 * (table['largest_spread'] or 0):.1f} points"
        )
        for family, settings in table.get("covered", {}).items():
            lines.append(
                f"  {family}: {len(table['verdicts'][family])} verdicts, run under "
                + ", ".join(settings)
            )
        for key in table["rate_differs"]:
            cell = table["cells"][key]
            rates = ", ".join(f"{r:g}" for r in cell["learning_rate"].values())
            means = ", ".join("-" if m is None else f"{100 * m:.1f}" for m in cell["mean"].values())
            lines.append(f"  rate  {key}: {rates} (means {means})")
        for key in table["verdict_differs"]:
            family, row = key.split(": ", 1)
            lines.append(
                f"  verdict  {key}: " + " | ".join(table["verdicts"][family][row].values())
            )
    return "\n".join(lines)


def record_spreads(folder: str | Path, comparison: Mapping[str, Any]) -> list[Path]:
    """Write every cell's spread over the settings into the results files themselves.

    Each cell of the files in ``folder`` that :func:`compare_runs` covered
    gets ``cpu_spread``, the largest minus the smallest mean accuracy over
    the settings (chapter 7: at any test length), and ``cpu_rates``, the
    rate chosen under each. Returns the files written.
    """
    folder = Path(folder)
    written = []
    parts = {
        "ch5_experiment.json": ("ch5", "main"),
        "ch5_token_scale.json": ("ch5", "arm"),
        "ch5_long_budget.json": ("ch5", "long"),
        "ch7_extrapolation.json": ("ch7_extrapolation", None),
        "ch7_rate_by_loss.json": ("ch7_rate_by_loss", None),
    }
    for name, (part, prefix) in parts.items():
        path = folder / name
        if part not in comparison or not path.is_file():
            continue
        results = json.loads(path.read_text())
        for cell in results["cells"]:
            cell.pop("cpu_spread", None)
            cell.pop("cpu_rates", None)
            if prefix is None:
                key = f"{cell['task']} {cell['method']}"
            else:
                key = cell_key(cell, prefix)
            row = comparison[part]["cells"].get(key)
            if row is None:
                continue  # not run under every setting
            cell["cpu_spread"] = row["spread"]
            cell["cpu_rates"] = row["learning_rate"]
        path.write_text(json.dumps(results, indent=1) + "\n")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m posenc.reproduce REFERENCE SETTING... [--out results/cpu_settings.json]``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("reference", type=Path, help="folder of the committed results")
    parser.add_argument("settings", type=Path, nargs="+", help="a folder per CPU setting")
    parser.add_argument("--out", type=Path, default=Path("results/cpu_settings.json"))
    parser.add_argument(
        "--record",
        action="store_true",
        help="also write each cell's spread into the reference folder's results files",
    )
    args = parser.parse_args(argv)
    runs = {"reference": load_run(args.reference)}
    for folder in args.settings:
        try:
            runs[folder.name] = load_run(folder)
        except FileNotFoundError as missing:  # a setting not run yet
            print(f"left out: {missing}")
    comparison = compare_runs(runs)
    kernels = {}
    for folder in args.settings:
        note = folder / "cpu_setting.txt"
        if folder.name in runs and note.is_file():
            kernels[folder.name] = note.read_text().strip()
    comparison["settings"] = {"reference": "this machine's own", **kernels}
    args.out.write_text(json.dumps(comparison, indent=1, sort_keys=False) + "\n")
    if args.record:
        record_spreads(args.reference, comparison)
    print(format_comparison(comparison))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
