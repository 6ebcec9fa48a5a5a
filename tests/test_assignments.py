"""The graded assignments: their build, the student versions, and the grading command.

The slow steps start Jupyter kernels and run once per session, two at a time: building the
five assignments with otter assign (into a temporary folder), grading their solutions,
executing the student notebooks, and grading the fixture folder of sample submissions.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
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
            if stripped == "# BEGIN SOLUTION":
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
def test_assignment_has_three_questions_and_hidden_checks(built: Path, name: str) -> None:
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    autograder = grade.find_autograder(name, built)
    questions = grade.read_questions(autograder)
    assert len(questions) >= 3
    assert all(q.points > 0 for q in questions)
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


def test_solutions_score_full_marks(built: Path) -> None:
    """The autograder notebooks, which hold the solutions, pass every check, hidden included."""

    def grade_solution(name: str) -> tuple[list[grade.Question], grade.Row]:
        autograder = grade.find_autograder(name, built)
        questions = grade.read_questions(autograder)
        notebook = built / name / "autograder" / f"{name}.ipynb"
        row = grade.grade_one(notebook, name, autograder, questions)
        return questions, row

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(NAMES, pool.map(grade_solution, NAMES), strict=True))
    for name, (questions, row) in results.items():
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
#: scores (q1..q4, worth 2, 3, 3 and 2 points) for the reasons named (README.md explains each).
EXPECTED = {
    "empty.ipynb": ("unreadable", [0, 0, 0, 0], ["empty file (0 bytes)"]),
    "good.ipynb": ("graded", [2, 3, 3, 2], ["all checks passed"]),
    "kills_kernel.ipynb": ("error", [0, 0, 0, 0], ["the grader failed: DeadKernelError"]),
    "loops.ipynb": ("graded", [2, 1, 0, 2], [
        "q2, check 2: CellTimeout: this cell ran longer than 5 s",
        "q3, check 1: AssertionError: Define a function named `rotation_split`",
        "raised CellTimeout",
    ]),
    "nan.ipynb": ("graded", [2, 1, 2, 2], [
        "q2, check 2: AssertionError: The values contain NaN or infinity",
        "q3, hidden check 3",
    ]),
    "not_a_notebook.ipynb": ("unreadable", [0, 0, 0, 0], ["not a Jupyter notebook (not valid"]),
    "other_assignment.ipynb": ("wrong assignment", [0, 0, 0, 0], ["assignment '01_motivation'"]),
    "partial.ipynb": ("graded", [2, 2, 1, 4 / 3], [
        "q2, hidden check 3",
        "q3, check 1: AssertionError: M(3) @ PE(k) is not PE(k + 3)",
        "q4, check 2: AssertionError: Compare distances[10, 15]",
    ]),
    "raises.ipynb": ("graded", [0, 3, 3, 2], [
        "q1, check 1: AssertionError: Set `lambda_min` to a number",
        "raised NameError: name 'wavelenght' is not defined",
    ]),
    "report.pdf": ("unreadable", [0, 0, 0, 0], ["not a Jupyter notebook (a PDF file)"]),
    "wrong_names_shapes_types.ipynb": ("graded", [1, 0, 0, 2 / 3], [
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
               "--cell-timeout", str(CELL_TIMEOUT), "--jobs", "2"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["submission", "status", "q1", "q2", "q3", "q4", "total", "possible",
                             "reason"]
    assert sorted(r["submission"] for r in rows) == sorted(p.name for p in FIXTURES.iterdir())
    assert set(EXPECTED) == {r["submission"] for r in rows}
    for row in rows:
        status, scores, reasons = EXPECTED[row["submission"]]
        got = [float(row[q]) for q in ("q1", "q2", "q3", "q4")]
        assert row["status"] == status, row
        assert got == pytest.approx(scores, abs=1e-4), row
        assert float(row["total"]) == pytest.approx(sum(scores), abs=1e-4)
        assert float(row["possible"]) == 10
        for reason in reasons:
            assert reason in row["reason"], (row["submission"], row["reason"])


def test_a_submission_that_never_ends_is_stopped_with_its_kernel(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop that swallows the cell timeout is stopped by the submission's time limit."""
    nb = nbformat.read(student_path(built, "02_mathematics"), as_version=4)
    stubborn = "import time\n\nwhile True:\n    try:\n        time.sleep(0.1)\n"
    stubborn += "    except Exception:\n        pass\n"
    nb.cells.insert(3, nbformat.v4.new_code_cell(stubborn))
    submission = tmp_path / "stubborn.ipynb"
    nbformat.write(nb, submission)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    autograder = grade.find_autograder("02_mathematics", built)
    questions = grade.read_questions(autograder)

    def grading_processes() -> list[str]:
        """Command lines of the processes that grade in `work` (worker and kernel)."""
        found = []
        for proc in psutil.process_iter(["cmdline", "environ"]):
            cmdline = " ".join(proc.info["cmdline"] or [])
            if str(work) in cmdline + json.dumps(proc.info["environ"] or {}):
                found.append(cmdline)
        return found

    kernels_seen = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(grade.grade_one, submission, "02_mathematics", autograder,
                             questions, timeout=15, cell_timeout=2)
        while not future.done():
            kernels_seen += [c for c in grading_processes() if "ipykernel" in c]
            time.sleep(0.5)
        row = future.result()
    assert kernels_seen, "the kernel was running before the time limit"
    assert row.status == "timeout"
    assert row.total() == 0 and set(row.scores) == {"q1", "q2", "q3", "q4"}
    assert "grading stopped after 15 s" in row.reasons[0]
    assert grading_processes() == [], "the worker or its kernel is still running"


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
    nb, notes, rejection = grade.prepare(path, "02_mathematics", 10)
    assert nb is None and notes == [] and rejection == (status, reason)


def test_prepare_rejects_another_assignment_and_accepts_missing_metadata(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("y = 2"),
    ])
    nb.metadata["kernelspec"] = {"name": "some-other-kernel", "display_name": "?"}
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, path)
    prepared, notes, rejection = grade.prepare(path, "02_mathematics", 10)
    assert rejection is None
    assert notes == ["no assignment name in the notebook's metadata; graded as 02_mathematics"]
    assert prepared.metadata["otter"]["assignment_name"] == "02_mathematics"
    assert prepared.metadata["kernelspec"]["name"] == "python3"
    assert "longer than 10 s" in prepared.cells[0].source
    numbers = [c.metadata.get(grade.CELL_KEY) for c in prepared.cells[1:]]
    assert numbers == [None, 1, 2]

    nb.metadata["otter"] = "not a dictionary"
    nbformat.write(nb, path)
    assert grade.prepare(path, "02_mathematics", 10)[1] == notes

    nb.metadata["otter"] = {"assignment_name": "01_motivation"}
    nbformat.write(nb, path)
    assert grade.prepare(path, "02_mathematics", 10)[2] == (
        "wrong assignment", "this notebook is assignment '01_motivation'"
    )


def test_failure_message_keeps_the_exception_line() -> None:
    message = ("❌ Test case failed\nError at line 12 in test q2:\n      assert ok, 'msg'\n"
               "AssertionError: The values contain NaN.")
    assert grade._failure_message(message) == "AssertionError: The values contain NaN."
    assert grade._failure_message(None) == "failed"


def test_find_submissions_sorts_naturally_and_skips_hidden_files(tmp_path: Path) -> None:
    for name in ("s10.ipynb", "s2.ipynb", ".DS_Store", "notes.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "folder").mkdir()
    found = [p.name for p in grade.find_submissions(tmp_path)]
    assert found == ["notes.txt", "s2.ipynb", "s10.ipynb"]
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
