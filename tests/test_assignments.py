"""The graded assignments: their build, the student versions, and the grading command.

The slow steps start Jupyter kernels and run once per session, two at a time: building every
assignment with otter assign (into a temporary folder), grading their solutions, executing
the student notebooks, grading the fixture folder of sample submissions, and grading four
submissions of assignment 7 (mistakes, posenc shortcuts that the graded run refuses, right
answers in other types, and helps and hurts swapped).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "assignments"
FIXTURES = ASSIGNMENTS / "fixtures" / "02_mathematics"
sys.path.insert(0, str(ASSIGNMENTS))

import build  # noqa: E402
import grade  # noqa: E402

# otter's test-file machinery trips a traitlets deprecation warning; it is not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Traits should be given as instances")

NAMES = list(build.masters())
CELL_TIMEOUT = 5.0  # seconds, for the fixtures of assignment 2, whose cells take well under one
CALL_TIMEOUT = 3.0  # seconds for all the calls of one function answer


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every assignment built afresh with otter assign, into a temporary folder."""
    out = tmp_path_factory.mktemp("dist")
    grade.skip_slow_iri_checker()
    build.build_all(out=out, force=True, jobs=2, run_tests=False)
    return out


def student_path(built: Path, name: str) -> Path:
    return build.student_notebook(name, built)


# --- the master notebooks ------------------------------------------------------------------


def master_parts(name: str) -> dict[str, set[str]]:
    """Solution lines and the names of the public and hidden checks of a master notebook."""
    nb = nbformat.read(build.masters()[name], as_version=4)
    parts: dict[str, set[str]] = {k: set() for k in ("solution", "given", "public", "hidden")}
    block = None
    for cell in nb.cells:
        source = cell.source.strip()
        if cell.cell_type == "raw":
            match = re.match(r"#\s*(BEGIN|END)\s+(SOLUTION|TESTS)", source)
            if match:
                block = match.group(2) if match.group(1) == "BEGIN" else None
            continue
        if cell.cell_type != "code":
            continue
        if block == "TESTS":
            kind = "hidden" if source.splitlines()[0].strip() == "# HIDDEN" else "public"
            parts[kind].update(re.findall(r"^def (\w+)\(", source, flags=re.MULTILINE))
            continue
        inside = False
        for line in source.splitlines():
            stripped = line.strip()
            if stripped in ("# BEGIN SOLUTION", "# BEGIN SOLUTION NO PROMPT"):
                inside = True
            elif stripped == "# END SOLUTION":
                inside = False
            elif block == "SOLUTION" and (inside or stripped.endswith("# SOLUTION")):
                parts["solution"].add(stripped.removesuffix("# SOLUTION").strip())
            else:
                parts["given"].add(stripped)
    parts["solution"] -= parts["given"] | {""}
    return parts


@pytest.mark.parametrize("name", NAMES)
def test_assignment_has_five_questions_of_eleven_points_and_hidden_checks(
    built: Path, name: str
) -> None:
    """Every assignment has the same shape: five questions worth 11 points in all, the last
    one a single point, and hidden checks."""
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    autograder = grade.find_autograder(name, built)
    questions = grade.read_questions(autograder)
    assert [q.name for q in questions] == ["q1", "q2", "q3", "q4", "q5"]
    assert all(q.points > 0 for q in questions)
    assert sum(q.points for q in questions) == 11 and questions[-1].points == 1
    hidden = 0
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(built / f".{name}-tests")
    for path in sorted((built / f".{name}-tests" / "tests").glob("*.py")):
        test = create_test_file(str(path), NBMetadataConfig())
        hidden += sum(case.hidden for case in test.test_cases)
    assert hidden >= 1
    assert master_parts(name)["hidden"], "the master notebook marks hidden checks"


@pytest.mark.parametrize("name", NAMES)
def test_student_version_has_no_solution_and_no_hidden_check(built: Path, name: str) -> None:
    parts = master_parts(name)
    assert parts["solution"] and parts["public"] and parts["hidden"]
    student = nbformat.read(student_path(built, name), as_version=4)
    lines = {line.strip() for cell in student.cells for line in cell.source.splitlines()}
    leaked = sorted(parts["solution"] & lines)
    assert not leaked, f"solution lines in the student notebook: {leaked}"
    text = json.dumps(student)  # cells and metadata, where the public checks are stored
    assert all(f"def {t}(" in text for t in parts["public"]), "public checks are in the notebook"
    assert not [t for t in parts["hidden"] if t in text], "hidden checks are in the notebook"
    with zipfile.ZipFile(grade.find_autograder(name, built)) as archive:
        tests = " ".join(archive.read(n).decode() for n in archive.namelist() if n.endswith(".py"))
    assert all(f"def {t}(" in tests for t in parts["hidden"]), "the autograder has hidden checks"


def test_solutions_score_full_marks(built: Path, tmp_path: Path) -> None:
    """The autograder notebooks, which hold the solutions, pass every check, hidden included,
    when graded in the sandbox."""

    def grade_solution(name: str) -> tuple[list[grade.Question], list[grade.Row]]:
        folder = tmp_path / name
        folder.mkdir()
        notebook = built / name / "autograder" / f"{name}.ipynb"
        (folder / notebook.name).write_bytes(notebook.read_bytes())
        questions, rows, _ = grade.grade_folder(folder, name, dist=built, jobs=1)
        return questions, rows

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(NAMES, pool.map(grade_solution, NAMES), strict=True))
    for name, (questions, rows) in results.items():
        [row] = rows
        assert row.status == "graded", (name, row.reasons)
        assert row.scores == {q.name: q.points for q in questions}, (name, row.reasons)
        assert row.reasons == ["all checks passed"], name


# --- the student notebooks -----------------------------------------------------------------


@pytest.fixture(scope="session")
def executed(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every student notebook, unanswered, executed top to bottom (a cell error fails it)."""
    work = tmp_path_factory.mktemp("students")

    def execute(name: str) -> tuple[str, subprocess.CompletedProcess]:
        folder = work / name
        folder.mkdir()
        notebook = folder / f"{name}.ipynb"
        notebook.write_bytes(student_path(built, name).read_bytes())
        stub = folder / "stub"
        stub.mkdir()
        command = [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                   "--inplace", "--ExecutePreprocessor.timeout=120", notebook.name]
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False,
                              env=grade.child_environment(stub))
        return name, done

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(pool.map(execute, NAMES))
    for name, result in done.items():
        assert result.returncode == 0, f"{name} did not run:\n{result.stderr[-3000:]}"
    return {name: work / name / f"{name}.ipynb" for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_reports_unanswered_questions(
    executed: dict[str, Path], built: Path, name: str
) -> None:
    nb = nbformat.read(executed[name], as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    questions = [q.name for q in grade.read_questions(grade.find_autograder(name, built))]
    for question in questions:
        cells = [c for c in nb.cells if c.cell_type == "code"
                 and c.source.strip() == f'grader.check("{question}")']
        assert len(cells) == 1, f"one check cell for {question}"
        text = "".join(o.get("data", {}).get("text/plain", "") for o in cells[0].outputs)
        assert f"{question} results:" in text
        assert "Test case failed" in text and "passed!" not in text, text
        messages = re.findall(r"AssertionError: (.*)", text)
        assert messages and all(len(m.strip()) > 10 for m in messages), text


# --- grading -------------------------------------------------------------------------------

#: The fixture folder, one submission per case; each was written to earn exactly these
#: scores (q1..q5, worth 2, 3, 3, 2 and 1 points) for the reasons named (README.md explains each).
EXPECTED = {
    "empty.ipynb": ("unreadable", [0, 0, 0, 0, 0], ["empty file (0 bytes)"]),
    "good.ipynb": ("graded", [2, 3, 3, 2, 1], ["all checks passed"]),
    "kills_kernel.ipynb": ("error", [0, 0, 0, 0, 0], ["the notebook ended the grading process"]),
    "loops.ipynb": ("graded", [2, 1, 0, 2, 0], [
        "q2, check 2: TimeoutError: did not return within the 3 s allowed for its calls",
        "q3, check 1: AssertionError: Define a function named `rotation_split`",
        "raised CellTimeout",
    ]),
    "nan.ipynb": ("graded", [2, 1, 2, 2, 0], [
        "q2, check 2: AssertionError: The values contain NaN or infinity",
        "q3, hidden check 3",
    ]),
    "not_a_notebook.ipynb": ("unreadable", [0, 0, 0, 0, 0], ["not a Jupyter notebook (not valid"]),
    "other_assignment.ipynb": ("wrong assignment", [0, 0, 0, 0, 0], ["assignment '01_motivation'"]),
    "partial.ipynb": ("graded", [2, 2, 1, 4 / 3, 0], [
        "q5, hidden check",
        "q2, hidden check 3",
        "q3, check 1: AssertionError: M(3) @ PE(k) is not PE(k + 3)",
        "q4, check 2: AssertionError: Compare distances[10, 15]",
    ]),
    "raises.ipynb": ("graded", [0, 3, 3, 2, 0], [
        "q1, check 1: AssertionError: Set `lambda_min` to a number",
        "raised NameError: name 'wavelenght' is not defined",
    ]),
    "report.pdf": ("unreadable", [0, 0, 0, 0, 0], ["not a Jupyter notebook (a PDF file)"]),
    "wrong_names_shapes_types.ipynb": ("graded", [1, 0, 0, 2 / 3, 0], [
        "q1, check 2: AssertionError: Set `columns_longer_than_1000` to a whole number",
        "q2, check 1: AssertionError: Define a function named `row_norm_squared`",
        "q3, check 1: AssertionError: Define a function named `rotation_split`",
        "q4, check 1: AssertionError: For 40 offsets expect shape (40,), got ()",
    ]),
}


def test_grading_the_fixture_folder(built: Path, tmp_path: Path) -> None:
    """The grading command gives every file of the folder a row with the designed scores."""
    out = tmp_path / "grades.csv"
    command = [sys.executable, str(ASSIGNMENTS / "grade.py"), str(FIXTURES),
               "--assignment", "02_mathematics", "--dist", str(built), "--out", str(out),
               "--cell-timeout", str(CELL_TIMEOUT), "--call-timeout", str(CALL_TIMEOUT),
               "--jobs", "2", "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(EXPECTED)
    assert_graded_as_expected(out, EXPECTED)


def assert_graded_as_expected(csv_path: Path, expected: dict) -> None:
    """The CSV of assignment 2 has exactly the rows of ``expected`` (submission -> status,
    scores q1..q5, phrases of the reason), with those scores. tests/test_readme_commands.py
    checks `make grade` with it."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and list(rows[0]) == ["submission", "status", "q1", "q2", "q3", "q4", "q5",
                                      "total", "possible", "reason"]
    assert sorted(r["submission"] for r in rows) == sorted(expected)
    for row in rows:
        status, scores, reasons = expected[row["submission"]]
        got = [float(row[q]) for q in ("q1", "q2", "q3", "q4", "q5")]
        assert row["status"] == status, row
        assert got == pytest.approx(scores, abs=1e-4), row
        assert float(row["total"]) == pytest.approx(sum(scores), abs=1e-4)
        assert float(row["possible"]) == 11
        for reason in reasons:
            assert reason in row["reason"], (row["submission"], row["reason"])


#: Answers to assignment 7 (by a line of the student's answer cell) for two
#: submissions: typical mistakes, and the posenc calls that the graded run refuses. The
#: honest answers of q3 and q5 are shared.
A7_HONEST = {
    "def alibi_far_share": (
        "def alibi_far_share(n_heads, query_position, distance):\n"
        "    back = np.arange(query_position + 1)\n"
        "    w = np.exp(-posenc.alibi_slopes(n_heads)[:, None] * back)\n"
        "    return (w * (back >= distance)).sum(axis=1) / w.sum(axis=1)\n"
    ),
    "heads_reaching_back = ...": (
        "heads_reaching_back = int(np.sum(alibi_far_share(2, 1023, 128) >= 0.05))\n"
    ),
    "choice = ...": (
        'choice = "b"\nreason = "YaRN keeps the fastest pair, PI slows every pair"\n'
    ),
}
A7_MISTAKES = {
    # NTK without the exponent d/(d-2): the slowest pair is not divided by the factor.
    "def pi_frequencies": (
        "def pi_frequencies(d, base, factor):\n"
        "    return posenc.frequencies(d, base) / factor\n\n\n"
        "def ntk_frequencies(d, base, factor):\n"
        "    return posenc.frequencies(d, base * factor)\n"
    ),
    # The upper end clamped to d/2 - 1 instead of the reference code's d - 1.
    "def yarn_range": (
        "def yarn_range(d, base, original_length):\n"
        "    def index(turns):\n"
        "        ratio = original_length / (2 * np.pi * turns)\n"
        "        return d * np.log(ratio) / (2 * np.log(base))\n"
        "    low, high = int(np.floor(index(32))), int(np.ceil(index(1)))\n"
        "    return max(low, 0), min(high, d // 2 - 1)\n\n\n"
        "def yarn_divisors(d, base, factor, original_length):\n"
        "    low, high = yarn_range(d, base, original_length)\n"
        "    top = high + 0.001 if high == low else high\n"
        "    ramp = np.clip((np.arange(d // 2) - low) / (top - low), 0, 1)\n"
        "    return 1 / ((1 - ramp) + ramp / factor)\n"
    ),
    "pairs_changed = ...": (
        "D, BASE, LENGTH, S = 128, 500_000.0, 8192, 4.0\n"
        "pairs_changed = {'linear': 64, 'ntk': 63,\n"
        "                 'yarn': int(np.sum(yarn_divisors(D, BASE, S, LENGTH) > 1))}\n"
    ),
    # Keys strictly further back than `distance`: an off-by-one.
    "def alibi_far_share": (
        "def alibi_far_share(n_heads, query_position, distance):\n"
        "    back = np.arange(query_position + 1)\n"
        "    w = np.exp(-posenc.alibi_slopes(n_heads)[:, None] * back)\n"
        "    return (w * (back > distance)).sum(axis=1) / w.sum(axis=1)\n"
    ),
    # Welch's interval of two samples instead of the paired interval of the differences.
    "def paired_interval": (
        "def paired_interval(a, b, confidence=0.95):\n"
        "    t = stats.ttest_ind(a, b, equal_var=False)\n"
        "    low, high = t.confidence_interval(confidence)\n"
        "    return float(np.mean(a) - np.mean(b)), float(low), float(high), float(t.pvalue)\n"
        "\n\n"
        "def holm_adjust(p_values):\n"
        "    p = np.asarray(p_values, dtype=float)\n"
        "    order = np.argsort(p, kind='stable')\n"
        "    scaled = np.maximum.accumulate(p[order] * (p.size - np.arange(p.size)))\n"
        "    out = np.empty(p.size)\n"
        "    out[order] = np.minimum(scaled, 1)\n"
        "    return out\n"
    ),
    # Right as code, but the rows come from the Welch interval above.
    "extension_rows, helps, hurts": (
        "lp = {v: np.log(p) for v, p in PERPLEXITY.items()}\n"
        "raw = {r: paired_interval(lp[r], lp['no scaling']) for r in RULES}\n"
        "adj = holm_adjust([raw[r][3] for r in RULES])\n"
        "extension_rows = {r: (*raw[r][:3], float(p)) for r, p in zip(RULES, adj)}\n"
        "helps = {r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] < 0}\n"
        "hurts = {r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] > 0}\n"
    ),
    # No pair turns 32 times within 128 bytes, so YaRN is taken to act as PI does.
    "choice = ...": 'choice = "c"\nreason = "no pair reaches 32 turns, so YaRN is PI"\n',
}
A7_SHORTCUTS = {
    **A7_HONEST,
    "def pi_frequencies": (
        "def pi_frequencies(d, base, factor):\n"
        "    return posenc.scaled_frequencies(d, base, method='linear', factor=factor)\n\n\n"
        "def ntk_frequencies(d, base, factor):\n"
        "    return posenc.scaled_frequencies(d, base, method='ntk', factor=factor)\n"
    ),
    "def yarn_range": (
        "from posenc.scaling import scale_factors, yarn_correction_range\n\n\n"
        "def yarn_range(d, base, original_length):\n"
        "    return yarn_correction_range(d, base, original_length=original_length)\n\n\n"
        "def yarn_divisors(d, base, factor, original_length):\n"
        "    return scale_factors(d, base, method='yarn', factor=factor,\n"
        "                         original_length=original_length)\n"
    ),
    "pairs_changed = ...": (
        "D, BASE, LENGTH, S = 128, 500_000.0, 8192, 4.0\n"
        "pairs_changed = {m: int(np.sum(scale_factors(D, BASE, method=m, factor=S,\n"
        "    original_length=LENGTH) > 1)) for m in ('linear', 'ntk', 'yarn')}\n"
    ),
    "def paired_interval": (
        "from posenc.stats import holm as holm_adjust\n"
        "from posenc.stats import paired_interval as _paired\n\n\n"
        "def paired_interval(a, b, confidence=0.95):\n"
        "    return _paired(np.asarray(a) - np.asarray(b), confidence)\n"
    ),
    "extension_rows, helps, hurts": A7_MISTAKES["extension_rows, helps, hurts"],
}


#: The right answers to assignment 7 in the other types that its prompts accept: float32
#: arrays and lists for arrays, a list of whole floats for (low, high), NumPy and float
#: counts, an array for a tuple, frozensets for sets.
A7_OTHER_TYPES = {
    "def pi_frequencies": (
        "def pi_frequencies(d, base, factor):\n"
        "    return list((posenc.frequencies(d, base) / factor).astype(np.float32))\n\n\n"
        "def ntk_frequencies(d, base, factor):\n"
        "    i = np.arange(d // 2, dtype=np.float32)\n"
        "    b = np.float32(base) * np.float32(factor) ** np.float32(d / (d - 2))\n"
        "    return b ** (-2 * i / np.float32(d))\n"
    ),
    "def yarn_range": (
        "def yarn_range(d, base, original_length):\n"
        "    def index(turns):\n"
        "        return d * np.log(original_length / (2 * np.pi * turns)) / (2 * np.log(base))\n"
        "    low, high = np.floor(index(32)), np.ceil(index(1))\n"
        "    return [float(max(low, 0)), float(min(high, d - 1))]\n\n\n"
        "def yarn_divisors(d, base, factor, original_length):\n"
        "    low, high = yarn_range(d, base, original_length)\n"
        "    top = high + 0.001 if high == low else high\n"
        "    ramp = np.clip((np.arange(d // 2) - low) / (top - low), 0, 1)\n"
        "    return (1 / ((1 - ramp) + ramp / factor)).astype(np.float32)\n"
    ),
    "pairs_changed = ...": (
        "D, BASE, LENGTH, S = 128, 500_000.0, 8192, 4.0\n"
        "th = posenc.frequencies(D, BASE)\n"
        "pi = np.asarray(pi_frequencies(D, BASE, S))\n"
        "pairs_changed = {'linear': float(np.sum(th / pi > 1 + 1e-6)),\n"
        "    'ntk': np.sum(th / ntk_frequencies(D, BASE, S) > 1 + 1e-6),\n"
        "    'yarn': np.int32(np.sum(yarn_divisors(D, BASE, S, LENGTH) > 1 + 1e-6))}\n"
    ),
    "def alibi_far_share": (
        "def alibi_far_share(n_heads, query_position, distance):\n"
        "    back = np.arange(query_position + 1)\n"
        "    w = np.exp(-posenc.alibi_slopes(n_heads)[:, None] * back)\n"
        "    share = (w * (back >= distance)).sum(axis=1) / w.sum(axis=1)\n"
        "    return list(share.astype(np.float32))\n"
    ),
    "heads_reaching_back = ...": (
        "heads_reaching_back = float(\n"
        "    np.sum(np.asarray(alibi_far_share(2, 1023, 128)) >= 0.05))\n"
    ),
    "def paired_interval": (
        "def paired_interval(a, b, confidence=0.95):\n"
        "    d = np.asarray(a, float) - np.asarray(b, float)\n"
        "    n, m = d.size, d.mean()\n"
        "    se = d.std(ddof=1) / np.sqrt(n)\n"
        "    if se == 0:\n"
        "        return [m, m, m, 1.0 if m == 0 else 0.0]\n"
        "    h = stats.t.ppf(0.5 + confidence / 2, n - 1) * se\n"
        "    return np.array([m, m - h, m + h, 2 * stats.t.sf(abs(m) / se, n - 1)])\n\n\n"
        "def holm_adjust(p_values):\n"
        "    p = np.asarray(p_values, dtype=float)\n"
        "    order = np.argsort(p, kind='stable')\n"
        "    scaled = np.maximum.accumulate(p[order] * (p.size - np.arange(p.size)))\n"
        "    out = np.empty(p.size)\n"
        "    out[order] = np.minimum(scaled, 1)\n"
        "    return out.tolist()\n"
    ),
    "extension_rows, helps, hurts": (
        "lp = {v: np.log(np.asarray(p, dtype=np.float64)) for v, p in PERPLEXITY.items()}\n"
        "raw = {r: paired_interval(lp[r], lp['no scaling']) for r in RULES}\n"
        "adj = holm_adjust([raw[r][3] for r in RULES])\n"
        "extension_rows = {r: [*raw[r][:3], p] for r, p in zip(RULES, adj)}\n"
        "helps = frozenset(r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] < 0)\n"
        "hurts = frozenset(r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] > 0)\n"
    ),
    "choice = ...": A7_HONEST["choice = ..."],
}


#: Right answers to assignment 7 but one: a higher perplexity read as better, so that helps
#: and hurts are swapped (the right answers help YaRN and hurt no rule).
A7_DIRECTION = {
    **A7_OTHER_TYPES,
    "extension_rows, helps, hurts": (
        "lp = {v: np.log(p) for v, p in PERPLEXITY.items()}\n"
        "raw = {r: paired_interval(lp[r], lp['no scaling']) for r in RULES}\n"
        "adj = holm_adjust([raw[r][3] for r in RULES])\n"
        "extension_rows = {r: (*raw[r][:3], float(p)) for r, p in zip(RULES, adj)}\n"
        "helps = {r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] > 0}\n"
        "hurts = {r for r, x in extension_rows.items() if x[3] < 0.05 and x[0] < 0}\n"
    ),
}


def answered(built: Path, name: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The student notebook of ``name`` with each answer cell, found by a line it holds,
    replaced."""
    nb = nbformat.read(student_path(built, name), as_version=4)
    for start, source in answers.items():
        cells = [c for c in nb.cells if c.cell_type == "code" and start in c.source]
        assert len(cells) == 1, start
        cells[0].source = source
    return nb


def test_assignment_7_grades_mistakes_and_refuses_posenc_shortcuts(
    built: Path, tmp_path: Path
) -> None:
    """Four submissions of assignment 7 graded in the sandbox: typical mistakes lose what
    the public and hidden checks designed for them catch (each check tests one answer),
    answers that call the posenc functions a question asks for are refused, while their
    honest answers keep full marks, the right answers in other accepted types score
    full marks, and helps and hurts swapped (a higher perplexity read as better) lose
    the three checks of the direction."""
    name = "07_length_extrapolation"
    folder = tmp_path / "submissions"
    folder.mkdir()
    nbformat.write(answered(built, name, {**A7_HONEST, **A7_MISTAKES}), folder / "mistakes.ipynb")
    nbformat.write(answered(built, name, A7_SHORTCUTS), folder / "shortcuts.ipynb")
    nbformat.write(answered(built, name, A7_OTHER_TYPES), folder / "types.ipynb")
    nbformat.write(answered(built, name, A7_DIRECTION), folder / "direction.ipynb")
    questions, rows, _ = grade.grade_folder(folder, name, dist=built, jobs=2)
    assert [(q.name, q.points) for q in questions] == [
        ("q1", 2), ("q2", 3), ("q3", 2), ("q4", 3), ("q5", 1)]
    got = {row.submission: row for row in rows}
    mistakes, shortcuts = got["mistakes.ipynb"], got["shortcuts.ipynb"]
    # q1: PI passes its two checks, NTK fails its public and hidden one (2 of 4); q2: only
    # the hidden checks of yarn_range and yarn_divisors see the clamp (4 of 6); q3: the
    # count passes its two checks, the shares fail theirs (2 of 4); q4: Holm's two checks,
    # the rows' and the sets' public ones and hurts pass; the interval fails its two checks,
    # the rows their hidden one, and helps its hidden one, since the Welch p-values find no
    # rule significant where the paired ones find YaRN (5 of 9); q5: the wrong choice ("c":
    # YaRN taken for PI, as no pair turns 32 times within 128 bytes) scores nothing.
    assert mistakes.status == "graded", mistakes.reasons
    expected = {"q1": 1, "q2": 2, "q3": 1, "q4": 5 / 3, "q5": 0}
    assert mistakes.scores == pytest.approx(expected, abs=1e-9), mistakes.reasons
    text = "; ".join(mistakes.reasons)
    for reason in ("q1, check 2: AssertionError: The slowest pair should be divided",
                   "q2, hidden check", "q3, check 1: AssertionError: Every key is at least 0",
                   "q4, check 1: AssertionError: The interval is", "q5, hidden check"):
        assert reason in text, text
    assert shortcuts.status == "graded", shortcuts.reasons
    assert shortcuts.scores == {"q1": 0, "q2": 0, "q3": 2, "q4": 0, "q5": 1}, shortcuts.reasons
    text = "; ".join(shortcuts.reasons)
    for refused in ("posenc.scaling.scaled_frequencies is not allowed in this assignment: q1",
                    "posenc.scaling.yarn_correction_range is not allowed",
                    "posenc.stats.paired_interval is not allowed"):
        assert refused in text, text
    types = got["types.ipynb"]
    assert types.status == "graded", types.reasons
    assert types.scores == {"q1": 2, "q2": 3, "q3": 2, "q4": 3, "q5": 1}, types.reasons
    # helps and hurts swapped: the public check of the sets against the submission's own
    # rows and the hidden checks of helps and hurts fail, the other six pass (6 of 9).
    direction = got["direction.ipynb"]
    assert direction.status == "graded", direction.reasons
    assert direction.scores == pytest.approx(
        {"q1": 2, "q2": 3, "q3": 2, "q4": 2, "q5": 1}, abs=1e-9), direction.reasons
    assert "q4, check 4: AssertionError: From your extension_rows" in "; ".join(
        direction.reasons), direction.reasons


def test_assignment_7_public_checks_refuse_posenc_shortcuts() -> None:
    """The public checks of assignment 7 refuse, while they call a student's function, the
    posenc functions that the graded run refuses, so a shortcut fails in the student's own
    kernel as it fails when graded; the functions work again afterwards."""
    import numpy as np

    import posenc
    from posenc.scaling import scale_factors, yarn_correction_range
    from posenc.stats import holm, paired_interval

    nb = nbformat.read(build.masters()["07_length_extrapolation"], as_version=4)
    checks: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def test_q"):
            exec(cell.source.rsplit("\n\n\n", 1)[0], checks)  # the definition, not the call
    shortcuts = {
        "test_q1_pi": lambda d, b, f: posenc.scaled_frequencies(d, b, method="linear", factor=f),
        "test_q1_ntk": lambda d, b, f: posenc.scaled_frequencies(d, b, method="ntk", factor=f),
        "test_q2_range": lambda d, b, n: yarn_correction_range(d, b, original_length=n),
        "test_q2_divisors": lambda d, b, f, n: scale_factors(
            d, b, method="yarn", factor=f, original_length=n),
        "test_q4_interval": lambda a, b, c=0.95: paired_interval(np.subtract(a, b), c),
        "test_q4_holm": holm,
    }
    for check, shortcut in shortcuts.items():
        with pytest.raises(PermissionError, match="not allowed in this assignment"):
            checks[check](shortcut)
    assert yarn_correction_range(128, original_length=4096) == (20, 46)
    assert np.allclose(holm([0.01, 0.02]), 0.02)
    assert np.allclose(scale_factors(8, method="linear", factor=2.0), 2.0)


#: Right answers to assignment 8, written differently from the solutions (loops, other
#: tensor operations, a dict built field by field).
A8_HONEST = {
    "def llama3_inv_freq": (
        "def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor,\n"
        "                    original_max):\n"
        "    wavelen = 2 * math.pi / inv_freq\n"
        "    low_wavelen = original_max / low_freq_factor\n"
        "    high_wavelen = original_max / high_freq_factor\n"
        "    out = inv_freq.clone()\n"
        "    for i in range(inv_freq.shape[0]):\n"
        "        if wavelen[i] > low_wavelen:\n"
        "            out[i] = inv_freq[i] / factor\n"
        "        elif wavelen[i] >= high_wavelen:\n"
        "            mu = (original_max / wavelen[i] - low_freq_factor) / (\n"
        "                high_freq_factor - low_freq_factor)\n"
        "            out[i] = (1 - mu) * inv_freq[i] / factor + mu * inv_freq[i]\n"
        "    return out\n"
    ),
    "def position_ids_from_mask": (
        "def position_ids_from_mask(attention_mask):\n"
        "    ids = attention_mask.long().cumsum(-1) - 1\n"
        "    return ids.masked_fill(attention_mask == 0, 1).clamp(0, ids.shape[-1] - 1)\n\n\n"
        "def position_ids_from_documents(document_ids):\n"
        "    out = torch.zeros(document_ids.shape, dtype=torch.int64)\n"
        "    for b in range(document_ids.shape[0]):\n"
        "        for t in range(1, document_ids.shape[1]):\n"
        "            if document_ids[b, t] == document_ids[b, t - 1]:\n"
        "                out[b, t] = out[b, t - 1] + 1\n"
        "    return out\n"
    ),
    "def to_halves": (
        "def to_halves(w, n_heads, rotary_dim=None):\n"
        "    head_dim = w.shape[0] // n_heads\n"
        "    r = rotary_dim or head_dim\n"
        "    heads = w.reshape(n_heads, head_dim, -1)\n"
        "    rot = heads[:, :r].reshape(n_heads, r // 2, 2, -1).transpose(1, 2)\n"
        "    rot = rot.reshape(n_heads, r, -1)\n"
        "    return torch.cat([rot, heads[:, r:]], dim=1).reshape(w.shape)\n"
    ),
    "def extend_config": (
        "import copy\n\n\n"
        "def extend_config(config, new_length, rope_type):\n"
        "    out = copy.deepcopy(config)\n"
        "    rope = out['rope_parameters']\n"
        "    rope['rope_type'] = rope_type\n"
        "    rope['factor'] = new_length / config['max_position_embeddings']\n"
        "    if rope_type != 'linear':\n"
        "        rope['original_max_position_embeddings'] = config['max_position_embeddings']\n"
        "    if rope_type == 'llama3':\n"
        "        rope['low_freq_factor'], rope['high_freq_factor'] = 1, 4\n"
        "    out['max_position_embeddings'] = new_length\n"
        "    return out\n"
    ),
    "choice = ...": (
        'choice = "b"\n'
        'reason = "dynamic changes the base as the input grows, so cached keys go stale"\n'
    ),
}
#: Typical mistakes, one per question: the trained length hard-coded as 8192 (q1), left
#: padding assumed (q2), the partial rotary width ignored (q3), no
#: original_max_position_embeddings (q4), and the wrong choice (q5).
A8_MISTAKES = {
    "def llama3_inv_freq": A8_HONEST["def llama3_inv_freq"].replace(
        "original_max / ", "8192 / ").replace("(original_max / wavelen", "(8192 / wavelen"),
    "def position_ids_from_mask": A8_HONEST["def position_ids_from_mask"].replace(
        "    ids = attention_mask.long().cumsum(-1) - 1\n",
        "    pads = (attention_mask == 0).long().sum(-1, keepdim=True)\n"
        "    ids = torch.arange(attention_mask.shape[-1]) - pads\n"),
    "def to_halves": A8_HONEST["def to_halves"].replace(
        "r = rotary_dim or head_dim", "r = head_dim"),
    "def extend_config": A8_HONEST["def extend_config"].replace(
        "    if rope_type != 'linear':\n"
        "        rope['original_max_position_embeddings'] = config['max_position_embeddings']\n",
        ""),
    "choice = ...": (
        'choice = "c"\nreason = "both rules reach usable frequencies at the new length"\n'
    ),
}
#: One call of a library function per question 1 and 3, which the graded run refuses.
A8_SHORTCUTS = {
    **A8_HONEST,
    "def llama3_inv_freq": (
        "from transformers import LlamaConfig\n"
        "from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS\n\n\n"
        "def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor,\n"
        "                    original_max):\n"
        "    theta = float(1 / inv_freq[1]) ** (inv_freq.shape[0] / 1)\n"
        "    config = LlamaConfig(hidden_size=2 * inv_freq.shape[0], num_attention_heads=1,\n"
        "        rope_parameters={'rope_type': 'llama3', 'rope_theta': theta,\n"
        "        'factor': factor, 'low_freq_factor': low_freq_factor,\n"
        "        'high_freq_factor': high_freq_factor,\n"
        "        'original_max_position_embeddings': original_max})\n"
        "    return ROPE_INIT_FUNCTIONS['llama3'](config, None)[0]\n"
    ),
    "def to_halves": (
        "from posenc.rotary import layout_permutation\n\n\n"
        "def to_halves(w, n_heads, rotary_dim=None):\n"
        "    head_dim = w.shape[0] // n_heads\n"
        "    order = torch.as_tensor(layout_permutation(head_dim))\n"
        "    rows = (torch.arange(n_heads)[:, None] * head_dim + order).reshape(-1)\n"
        "    return w[rows]\n"
    ),
}
#: Wrong answers behind every patch a notebook could try on its own process: torch's
#: comparisons, transformers' reference rule, posenc.torch, otter, the test files.
A8_HOSTILE = {
    "def llama3_inv_freq": (
        "import glob\n"
        "import os\n\n"
        "import transformers.modeling_rope_utils as rope_utils\n\n"
        "torch.allclose = lambda *a, **k: True\n"
        "torch.equal = lambda *a, **k: True\n"
        "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n"
        "torch.Tensor.all = lambda self, *a, **k: torch.ones((), dtype=torch.bool)\n"
        "rope_utils.ROPE_INIT_FUNCTIONS['llama3'] = lambda *a, **k: (torch.zeros(64), 1.0)\n"
        "pt.RotaryEmbedding.forward = lambda self, q, k, p: (q, k)\n"
        "os.makedirs('tests', exist_ok=True)\n"
        "for path in glob.glob('tests/*.py') + ['tests/q1.py']:\n"
        "    with open(path, 'w') as handle:\n"
        "        handle.write('OK_FORMAT = False\\nname = \"q1\"\\npoints = 100\\n')\n\n\n"
        "class Always(torch.Tensor):\n"
        "    def __eq__(self, other):\n"
        "        return True\n\n\n"
        "def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor,\n"
        "                    original_max):\n"
        "    return torch.zeros_like(inv_freq).as_subclass(Always)\n"
    ),
    "def position_ids_from_mask": (
        "def position_ids_from_mask(attention_mask):\n"
        "    return torch.zeros_like(attention_mask, dtype=torch.int64)\n\n\n"
        "def position_ids_from_documents(document_ids):\n"
        "    return torch.zeros_like(document_ids, dtype=torch.int64)\n"
    ),
    "def to_halves": (
        "def to_halves(w, n_heads, rotary_dim=None):\n"
        "    return torch.zeros_like(w)\n"
    ),
    "def extend_config": (
        "import grader_update  # noqa: a module that does not exist in the sandbox\n"
    ),
    "choice = ...": (
        "from otter import Notebook\n\n"
        "Notebook().update_score = None\n"
        'choice = "a"\n'
        'reason = "the grader was patched so this should not matter"\n'
    ),
}

def test_assignment_8_grades_mistakes_refuses_shortcuts_and_ignores_patches(
    built: Path, tmp_path: Path
) -> None:
    """Four submissions of assignment 8, whose answers are PyTorch tensors checked against
    transformers outside the sandbox: right answers written differently score full marks;
    one typical mistake per question loses that question's hidden check (each question can
    lose points); a transformers or posenc call that answers questions 1 and 3 is refused;
    and wrong answers behind patched torch comparisons, a patched transformers rule,
    rewritten test files and a tensor subclass that claims equality score nothing."""
    name = "08_from_numpy_to_your_model"
    folder = tmp_path / "submissions"
    folder.mkdir()
    nbformat.write(answered(built, name, A8_HONEST), folder / "honest.ipynb")
    nbformat.write(answered(built, name, {**A8_HONEST, **A8_MISTAKES}),
                   folder / "mistakes.ipynb")
    nbformat.write(answered(built, name, A8_SHORTCUTS), folder / "shortcuts.ipynb")
    nbformat.write(answered(built, name, A8_HOSTILE), folder / "hostile.ipynb")
    questions, rows, _ = grade.grade_folder(folder, name, dist=built, jobs=2)
    assert [(q.name, q.points) for q in questions] == [
        ("q1", 3), ("q2", 3), ("q3", 2), ("q4", 2), ("q5", 1)]
    got = {row.submission: row for row in rows}
    assert all(row.status == "graded" for row in rows), [r.reasons for r in rows]
    assert got["honest.ipynb"].scores == {"q1": 3, "q2": 3, "q3": 2, "q4": 2, "q5": 1}, (
        got["honest.ipynb"].reasons)
    # q1 fails the hidden check on other trained lengths and the partial head (1 of 3); q2
    # only the random masks (3 of 4 checks); q3 the partial rotary check (2 of 3 checks); q4 the
    # transformers check (1 of 2); q5 the choice.
    mistakes = got["mistakes.ipynb"]
    expected = {"q1": 1, "q2": 2.25, "q3": 4 / 3, "q4": 1, "q5": 0}
    assert mistakes.scores == pytest.approx(expected, abs=1e-9), mistakes.reasons
    text = "; ".join(mistakes.reasons)
    for reason in ("q1, hidden check", "q2, hidden check", "q3, hidden check",
                   "q4, hidden check", "q5, hidden check"):
        assert reason in text, text
    shortcuts = got["shortcuts.ipynb"]
    assert shortcuts.scores == {"q1": 0, "q2": 3, "q3": 0, "q4": 2, "q5": 1}, shortcuts.reasons
    text = "; ".join(shortcuts.reasons)
    for refused in ("transformers.modeling_rope_utils._compute_llama3_parameters is not "
                    "allowed in this assignment: q1",
                    "posenc.rotary.layout_permutation is not allowed in this assignment: q3"):
        assert refused in text, text
    hostile = got["hostile.ipynb"]
    assert hostile.scores == {"q1": 0, "q2": 0, "q3": 0, "q4": 0, "q5": 0}, hostile.reasons


def test_a_submission_that_never_ends_is_stopped_with_its_sandbox(
    built: Path, tmp_path: Path
) -> None:
    """A loop that swallows the cell timeout is stopped by the submission's time limit, and
    nothing it started is left running."""
    nb = nbformat.read(student_path(built, "02_mathematics"), as_version=4)
    stubborn = "import time\n\nwhile True:\n    try:\n        time.sleep(0.1)\n"
    stubborn += "    except BaseException:\n        pass\n"
    nb.cells.insert(3, nbformat.v4.new_code_cell(stubborn))
    folder = tmp_path / "submissions"
    folder.mkdir()
    nbformat.write(nb, folder / "stubborn.ipynb")
    start = time.monotonic()
    _, [row], _ = grade.grade_folder(folder, "02_mathematics", dist=built, timeout=15,
                                     cell_timeout=2, jobs=1)
    assert time.monotonic() - start < 60
    assert row.status == "timeout"
    assert row.total() == 0 and set(row.scores) == {"q1", "q2", "q3", "q4", "q5"}
    assert "stopped after 15 s" in row.reasons[0]
    assert sandbox_processes() == [], "a process of the sandbox is still running"


def sandbox_processes() -> list[str]:
    """Command lines of processes that run as one of the sandboxes' user ids."""
    found = []
    for proc in psutil.process_iter(["cmdline", "uids"]):
        uids = proc.info["uids"]
        if uids and grade.FIRST_UID <= uids.real < grade.FIRST_UID + grade.UID_COUNT:
            found.append(" ".join(proc.info["cmdline"] or []))
    return found


# --- the grading helpers, without kernels -------------------------------------------------


@pytest.mark.parametrize(
    ("content", "status", "reason"),
    [
        (b"", "unreadable", "empty file (0 bytes)"),
        (b"  \n", "unreadable", "empty file (3 bytes)"),
        (b"print('hello')\n", "unreadable", "not a Jupyter notebook (not valid JSON)"),
        (b"%PDF-1.7\n", "unreadable", "not a Jupyter notebook (a PDF file)"),
        (b"PK\x03\x04rest", "unreadable", "not a Jupyter notebook (a zip archive)"),
        (b'{"cells": 3}', "unreadable", "not a Jupyter notebook (JSON without a list of cells)"),
        (b"\xff\xfe\x00", "unreadable", "not a Jupyter notebook (not valid JSON)"),
    ],
)
def test_prepare_rejects_what_is_not_a_notebook(
    tmp_path: Path, content: bytes, status: str, reason: str
) -> None:
    path = tmp_path / "submission.ipynb"
    path.write_bytes(content)
    cells, notes, rejection = grade.prepare(path, "02_mathematics")
    assert cells is None and notes == [] and rejection == (status, reason)


def test_prepare_rejects_another_assignment_and_accepts_missing_metadata(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("y = 2"),
    ])
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, path)
    cells, notes, rejection = grade.prepare(path, "02_mathematics")
    assert rejection is None
    assert notes == ["no assignment name in the notebook's metadata; graded as 02_mathematics"]
    assert cells == ["x = 1", "y = 2"]

    nb.metadata["otter"] = "not a dictionary"
    nbformat.write(nb, path)
    assert grade.prepare(path, "02_mathematics")[1] == notes

    nb.metadata["otter"] = {"assignment_name": "01_motivation"}
    nbformat.write(nb, path)
    assert grade.prepare(path, "02_mathematics")[2] == (
        "wrong assignment", "this notebook is assignment '01_motivation'"
    )


def test_prepare_names_a_cell_whose_source_is_not_text(tmp_path: Path) -> None:
    raw = {"cells": [{"cell_type": "markdown", "source": "# title", "metadata": {}},
                     {"cell_type": "code", "source": 42, "metadata": {}, "outputs": []}],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps(raw))
    assert grade.prepare(path, "02_mathematics") == (
        None, [], ("unreadable", "cell 2: its source is a int, not text"))
    raw["cells"][1]["source"] = ["a = 1\n", "b = 2"]
    path.write_text(json.dumps(raw))
    assert grade.prepare(path, "02_mathematics")[0] == ["a = 1\nb = 2"]


def test_failure_message_keeps_the_exception_line() -> None:
    message = ("❌ Test case failed\nError at line 12 in test q2:\n      assert ok, 'msg'\n"
               "AssertionError: The values contain NaN.")
    assert grade._failure_message(message) == "AssertionError: The values contain NaN."
    assert grade._failure_message(None) == "failed"


def test_find_submissions_sorts_naturally_and_skips_hidden_files(tmp_path: Path) -> None:
    for name in ("s10.ipynb", "s2.ipynb", ".DS_Store", "notes.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "s1.ipynb").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / os.fsdecode(b"caf\xe9.ipynb")).write_text("x")
    found, skipped = grade.find_submissions(tmp_path)
    names = [grade.display_name(p, tmp_path) for p in found]
    assert names == ["caf\\xe9.ipynb", "late/s1.ipynb", "notes.txt", "s2.ipynb", "s10.ipynb"]
    assert [grade.display_name(p, tmp_path) for p in skipped] == [".DS_Store", ".git"]
    with pytest.raises(NotADirectoryError, match="not a folder"):
        grade.find_submissions(tmp_path / "s2.ipynb")


def test_write_csv_has_a_column_per_question(tmp_path: Path) -> None:
    questions = [grade.Question("q1", 2.0), grade.Question("q2", 1.5)]
    rows = [grade.Row("a.ipynb", "graded", {"q1": 2.0, "q2": 1 / 3}, ["q2, check 1: wrong"]),
            grade.Row("b.txt", "unreadable", {"q1": 0.0, "q2": 0.0}, ["empty file (0 bytes)"])]
    out = tmp_path / "grades.csv"
    grade.write_csv(questions, rows, out)
    assert out.read_text().splitlines() == [
        "submission,status,q1,q2,total,possible,reason",
        'a.ipynb,graded,2,0.3333,2.3333,3.5,"q2, check 1: wrong"',
        "b.txt,unreadable,0,0,0,3.5,empty file (0 bytes)",
    ]


def test_write_csv_caps_scores_and_replaces_the_file_at_once(tmp_path: Path) -> None:
    questions = [grade.Question("q1", 2.0), grade.Question("q2", 1.0)]
    rows = [grade.Row("greedy.ipynb", "graded", {"q1": 400.0, "q2": -3.0}, ["x"])]
    out = tmp_path / "grades.csv"
    out.write_text("an older CSV")
    grade.write_csv(questions, rows, out)
    assert out.read_text().splitlines()[1] == "greedy.ipynb,graded,2,0,2,3,x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv"], "no temporary file"


def test_build_is_skipped_only_when_up_to_date(tmp_path: Path) -> None:
    master = tmp_path / "m.ipynb"
    master.write_text("{}")
    out = tmp_path / "dist"
    assert not build.is_up_to_date("m", master, out)
    student = build.student_notebook("m", out)
    student.parent.mkdir(parents=True)
    student.write_text("{}")
    (out / "m" / "autograder").mkdir()
    archive = out / "m" / "autograder" / "m-autograder_1.zip"
    archive.write_text("")
    assert build.is_up_to_date("m", master, out)
    newer = archive.stat().st_mtime + 10
    os.utime(master, (newer, newer))
    assert not build.is_up_to_date("m", master, out)


def test_book_page_links_every_student_notebook() -> None:
    page = (ROOT / "assignments.md").read_text(encoding="utf-8")
    links = re.findall(r"\{download\}`[^<`]*<([^>]+)>`", page)
    expected = [str(build.student_notebook(n).relative_to(ROOT)) for n in NAMES]
    assert links == expected


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_reads_in_jupyterlab_as_written(built: Path, name: str) -> None:
    """No markdown cell starts with "---" (front matter to jupyterlab-myst); usual kernelspec."""
    nb = nbformat.read(build.student_notebook(name, built), as_version=4)
    assert nb.metadata.kernelspec.display_name == build.KERNELSPEC["display_name"]
    starts = [c.source[:3] for c in nb.cells if c.cell_type == "markdown"]
    assert "---" not in starts
    assert any(c.source.startswith("***") and "autograder tests" in c.source for c in nb.cells)


def test_lab_ready_keeps_the_check_all_sentence(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("---\n\nTo double-check your work, run this.")]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    build.lab_ready(path)
    build.lab_ready(path)  # idempotent
    cell = nbformat.read(path, as_version=4).cells[0]
    assert cell.source == "***\n\nTo double-check your work, run this."


def test_book_page_does_not_point_students_at_solutions() -> None:
    page = (ROOT / "assignments.md").read_text(encoding="utf-8").lower()
    assert "assignments/source" not in page and "autograder/" not in page
    assert "solution" not in page


def test_a_build_that_lost_a_port_race_is_tried_again(tmp_path, monkeypatch):
    """A kernel that died on "Address already in use" is a race between builds, not a
    broken assignment: otter assign runs again; any other failure is reported at once."""
    calls = []
    race = "zmq.error.ZMQError: Address already in use\nRuntimeError: Kernel died before replying"

    def fake_run(command, **kwargs):
        calls.append(command)
        staging = Path(command[command.index("--assign") + 2])
        if len(calls) == 1:
            return subprocess.CompletedProcess(command, 1, "", race)
        (staging / "student").mkdir(parents=True, exist_ok=True)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(build.subprocess, "run", fake_run)
    master = next(iter(build.masters().values()))
    build.build_one("race", master, out=tmp_path, run_tests=False)
    assert len(calls) == 2 and (tmp_path / "race" / "student").is_dir()

    calls.clear()

    def broken(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, "", "AssertionError: check q1 failed")

    monkeypatch.setattr(build.subprocess, "run", broken)
    with pytest.raises(RuntimeError, match="check q1 failed"):
        build.build_one("broken", master, out=tmp_path, run_tests=False)
    assert len(calls) == 1
