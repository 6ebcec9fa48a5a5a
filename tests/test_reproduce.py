"""posenc.reproduce, and the committed comparison of the grids under other CPU settings."""

import copy
import json
import subprocess
from pathlib import Path

import pytest

from posenc.experiment import LONG_BUDGET, Design
from posenc.extrapolation import ExtrapolationConfig
from posenc.reproduce import cell_key, compare_runs, format_comparison, load_run

from .fresh_checkout import fresh_checkout, make_env

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
COMPARISON = RESULTS / "cpu_settings.json"


@pytest.fixture(scope="module")
def committed():
    return load_run(RESULTS)


def test_the_summary_holds_every_family_the_chapters_test(committed):
    ch5 = committed["ch5"]["verdicts"]
    n_regimes = len(Design().regimes)
    assert {k: len(v) for k, v in ch5.items()} == {
        "primary": 2 * n_regimes,
        "width": 2 * n_regimes,
        "arm_a": n_regimes,
        "arm_b": n_regimes,
        "arm_c": n_regimes,
        "long_final": len(LONG_BUDGET.regimes),
        "long_change": len(LONG_BUDGET.regimes),
    }
    config = ExtrapolationConfig()
    for part in ("ch7_extrapolation", "ch7_rate_by_loss"):
        table = committed[part]
        assert len(table["cells"]) == len(config.tasks) * len(config.methods)
        assert set(table["verdicts"]) == {"drop", "drop_new", "extensions"}


def test_a_run_against_itself_moves_nothing(committed):
    same = compare_runs({"a": committed, "b": committed})
    for part in committed:
        assert same[part]["rate_differs"] == [] and same[part]["verdict_differs"] == []
        assert same[part]["largest_spread"] == 0


def test_a_moved_rate_mean_or_verdict_is_reported(committed):
    other = copy.deepcopy(committed)
    cell = next(iter(other["ch5"]["cells"]))
    other["ch5"]["cells"][cell]["learning_rate"] *= 3
    other["ch5"]["cells"][cell]["mean"] -= 0.25
    family, table = next(iter(other["ch7_extrapolation"]["verdicts"].items()))
    row = next(iter(table))
    table[row] = "inconclusive" if table[row] != "inconclusive" else "no change"
    moved = compare_runs({"here": committed, "there": other})
    assert moved["ch5"]["rate_differs"] == [cell]
    assert moved["ch5"]["cells"][cell]["spread"] == pytest.approx(0.25)
    assert moved["ch5"]["largest_spread"] >= 0.25
    assert moved["ch7_extrapolation"]["verdict_differs"] == [f"{family}: {row}"]
    report = format_comparison(moved)
    assert cell in report and row in report
    with pytest.raises(ValueError, match="at least two"):
        compare_runs({"here": committed})


def test_load_run_names_a_wrong_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results file"):
        load_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="folder"):
        load_run(tmp_path / "missing")


def test_the_committed_comparison_is_of_the_committed_files(committed):
    """results/cpu_settings.json was made from the results files as they are now."""
    comparison = json.loads(COMPARISON.read_text())
    settings = [s for s in comparison["settings"] if s != "reference"]
    assert len(settings) >= 2
    for part, table in committed.items():
        for key, cell in table["cells"].items():
            stored = comparison[part]["cells"][key]
            assert stored["learning_rate"]["reference"] == cell["learning_rate"]
            assert stored["mean"]["reference"] == cell["mean"]
        for family, rows in table["verdicts"].items():
            for key, verdict in rows.items():
                assert comparison[part]["verdicts"][family][key]["reference"] == verdict


def test_make_cpu_comparison_reproduces_the_committed_comparison(tmp_path):
    """The committed comparison and spreads follow from the committed runs, as the README's
    `make experiments-cpus` ends: its last step, `make cpu-comparison`, run in a fresh
    checkout (the grids themselves take about an hour per setting; `make -n` shows that
    the command trains every grid under every CPU setting of `make test`)."""
    checkout = fresh_checkout(tmp_path / "course")
    done = subprocess.run(
        ["make", "cpu-comparison"], cwd=checkout, env=make_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("cpu_settings.json", "ch5_experiment.json", "ch7_extrapolation.json"):
        made = json.loads((checkout / "results" / name).read_text())
        assert made == json.loads((RESULTS / name).read_text()), name
    plan = subprocess.run(
        ["make", "-n", "experiments-cpus"],
        cwd=checkout,
        env=make_env(),
        capture_output=True,
        text=True,
    ).stdout
    settings = [s for s in json.loads(COMPARISON.read_text())["settings"] if s != "reference"]
    assert len(settings) >= 2
    for setting in settings:
        assert f"results/cpus/{setting}" in plan
    for module in (
        "posenc.experiment --out",
        "posenc.experiment --long-budget",
        "posenc.experiment --token-scale",
        "posenc.extrapolation",
    ):
        assert module in plan


def test_every_compared_cell_carries_its_spread_in_the_results_file():
    comparison = json.loads(COMPARISON.read_text())
    main = json.loads((RESULTS / "ch5_experiment.json").read_text())
    for cell in main["cells"]:
        row = comparison["ch5"]["cells"][cell_key(cell, "main")]
        assert cell["cpu_spread"] == row["spread"] and cell["cpu_rates"] == row["learning_rate"]
    for part in ("ch7_extrapolation", "ch7_rate_by_loss"):
        if part not in comparison:
            continue
        for cell in json.loads((RESULTS / f"{part}.json").read_text())["cells"]:
            row = comparison[part]["cells"][f"{cell['task']} {cell['method']}"]
            assert cell["cpu_spread"] == row["spread"]
