"""Grade a folder of submitted notebooks into a CSV: one row per submission, a score per question.

Usage (``make grade`` runs the same command)::

    python assignments/grade.py SUBMISSIONS --assignment 01_motivation --out grades.csv

Each submission is graded by otter-grader's own non-containerised grader (the code behind
``otter run`` and :func:`otter.api.grade_submission`) with the autograder zip file that
``assignments/build.py`` writes, hidden checks included. This script adds what a folder of real
submissions needs around it:

* **every file gets a row.** Every regular file in ``SUBMISSIONS`` whose name does not start
  with a dot is a submission. An empty file, a file that is not a notebook, or a notebook of
  another assignment gets a row with status ``unreadable`` or ``wrong assignment``, zero in
  every question and the reason; the other submissions are graded as usual.
* **one process per submission, with a time limit.** A cell that runs longer than
  ``--cell-timeout`` seconds is stopped (the question it belongs to fails, the rest of the
  notebook is still graded). A submission that still takes longer than ``--timeout`` seconds in
  all (for example a loop that swallows every exception) is stopped with its kernel, and gets
  status ``timeout``.
* **a reason for every lost point**: the message of the first failing check of each question,
  and every cell that raised an error.

The CSV has the columns ``submission, status, q1, ..., total, possible, reason``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIST = HERE / "dist"

#: Seconds a whole submission may take, and a single cell, by default.
TIMEOUT = 600.0
CELL_TIMEOUT = 60.0

#: A reason longer than this (characters) is cut, so that the CSV stays readable.
MAX_MESSAGE = 300

#: Code cell put in front of each submission. Once a cell has run for ``seconds``, it raises
#: ``CellTimeout`` in it, and again every ``repeat`` seconds until the cell ends: a check that
#: calls a function which never returns then fails with that message, and the next check runs.
TIMER_CELL = '''\
# Added by assignments/grade.py: stop any cell that runs longer than {seconds:g} s.
import signal as _grading_signal


class CellTimeout(TimeoutError):
    """Raised in a cell that runs longer than the grader allows."""


def _grading_alarm(signum, frame):
    raise CellTimeout("this cell ran longer than {seconds:g} s and was stopped")


def _grading_arm(*args):
    _grading_signal.setitimer(_grading_signal.ITIMER_REAL, {seconds!r}, {repeat!r})


def _grading_disarm(*args):
    _grading_signal.setitimer(_grading_signal.ITIMER_REAL, 0)


_grading_signal.signal(_grading_signal.SIGALRM, _grading_alarm)
get_ipython().events.register("pre_run_cell", _grading_arm)
get_ipython().events.register("post_run_cell", _grading_disarm)
'''

#: Environment variables that set the number of threads of the linear algebra libraries.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: Metadata key that numbers the submission's own code cells in the copy that is graded.
CELL_KEY = "grading_cell"


@dataclass(frozen=True)
class Question:
    """A graded question of an assignment: its name and the points it is worth."""

    name: str
    points: float


@dataclass
class Row:
    """The grade of one submission: one row of the CSV."""

    submission: str
    status: str
    scores: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def total(self) -> float:
        """Points earned over every question."""
        return float(sum(self.scores.values()))


def skip_slow_iri_checker() -> None:
    """Keep jsonschema from importing ``rfc3987_syntax`` in this process.

    That optional IRI format checker compiles about 35 grammars when imported, which costs
    about 3 s of CPU in every process that imports nbformat or otter (an upstream issue,
    python-jsonschema/jsonschema#1428). Nothing here needs it: notebooks use no IRI formats and
    nbformat validates without format checkers. jsonschema skips the checker when the import
    fails, which is what a ``None`` entry in ``sys.modules`` makes it do.
    """
    sys.modules.setdefault("rfc3987_syntax", None)


def child_environment(folder: Path) -> dict[str, str]:
    """Environment for a child process that builds or grades, and for the kernels it starts.

    * One thread for the linear algebra libraries: submissions are graded side by side, and
      OpenBLAS's own threads on top of that oversubscribe the cores (a least-squares fit of
      the last assignment took 10 times longer with them on a busy two-core machine).
    * No slow IRI checker (see :func:`skip_slow_iri_checker`): a stand-in ``rfc3987_syntax``
      module that raises ``ImportError`` is written into ``folder``, which goes first on
      ``PYTHONPATH``. This halves the CPU time of grading a notebook.
    """
    (folder / "rfc3987_syntax.py").write_text(
        '"""Stand-in from assignments/grade.py: jsonschema skips its IRI checker."""\n'
        'raise ImportError("rfc3987_syntax is not loaded while building or grading")\n'
    )
    env = dict(os.environ)
    for variable in THREAD_VARIABLES:
        env[variable] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    return env


def _natural_key(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def find_autograder(assignment: str, dist: Path = DIST) -> Path:
    """Path of the autograder zip file that ``build.py`` wrote for ``assignment``.

    Raises
    ------
    FileNotFoundError
        If there is not exactly one such file (the assignment has not been built).
    """
    zips = sorted((dist / assignment / "autograder").glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise FileNotFoundError(
            f"expected one autograder zip file in {dist / assignment / 'autograder'}, found "
            f"{len(zips)}; build the assignments first (make assignments)"
        )
    return zips[0]


def read_questions(autograder: Path) -> list[Question]:
    """The questions of an autograder zip file and their points, hidden checks included.

    Examples
    --------
    >>> [q.name for q in read_questions(find_autograder("01_motivation"))]  # doctest: +SKIP
    ['q1', 'q2', 'q3', 'q4']
    """
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    questions = []
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(autograder) as archive:
        for member in archive.namelist():
            if member.startswith("tests/") and member.endswith(".py"):
                path = Path(archive.extract(member, tmp))
                test = create_test_file(str(path), NBMetadataConfig())
                questions.append(Question(test.name, float(test.possible)))
    if not questions:
        raise ValueError(f"{autograder} contains no tests")
    return sorted(questions, key=lambda q: _natural_key(q.name))


def find_submissions(folder: Path) -> list[Path]:
    """Every regular file of ``folder`` whose name does not start with a dot, sorted by name."""
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder of submissions")
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    return sorted(files, key=lambda p: _natural_key(p.name))


def _describe_bytes(data: bytes) -> str:
    if data.startswith(b"%PDF"):
        return "a PDF file"
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive"
    return "not valid JSON"


def prepare(path: Path, assignment: str, cell_timeout: float):
    """Read a submission and return the copy to grade, or the reason it cannot be graded.

    Returns
    -------
    tuple
        ``(notebook, notes, None)`` for a gradable notebook, where ``notebook`` is the copy
        to grade (kernel set to ``python3``, the cell timer in front, the submission's own code
        cells numbered in their metadata) and ``notes`` a list of remarks for the reason column;
        or ``(None, [], (status, reason))`` for a submission that cannot be graded.
    """
    import nbformat

    data = path.read_bytes()
    if not data.strip():
        return None, [], ("unreadable", f"empty file ({len(data)} bytes)")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, [], ("unreadable", f"not a Jupyter notebook ({_describe_bytes(data)})")
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return None, [], ("unreadable", "not a Jupyter notebook (JSON without a list of cells)")
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as error:  # nbformat raises several kinds of errors on malformed input
        return None, [], ("unreadable", f"not a Jupyter notebook ({_short(error, 200)})")

    notes = []
    if not isinstance(nb.metadata.get("otter"), dict):
        nb.metadata["otter"] = {}
    otter_meta = nb.metadata["otter"]
    name = otter_meta.get("assignment_name")
    if name is None:
        otter_meta["assignment_name"] = assignment
        notes.append(f"no assignment name in the notebook's metadata; graded as {assignment}")
    elif name != assignment:
        return None, [], ("wrong assignment", f"this notebook is assignment {name!r}")
    nb.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3", "language": "python",
    }

    number = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            number += 1
            cell.metadata[CELL_KEY] = number
    seconds = float(cell_timeout)
    timer = nbformat.v4.new_code_cell(TIMER_CELL.format(seconds=seconds, repeat=min(seconds, 5.0)))
    nb.cells.insert(0, timer)
    return nb, notes, None


def _failure_message(message: str | None) -> str:
    """The exception line(s) of an otter failure message, without its preamble and code line."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error at line"):
            return " ".join(lines[i + 2 :]) or "failed"
    return " ".join(line for line in lines if "Test case failed" not in line) or "failed"


def worker(autograder: Path, notebook: Path, out: Path) -> None:
    """Grade one prepared notebook with otter and write the result as JSON to ``out``.

    Runs in its own process (``grade.py --worker``), so that the parent can stop it, and the
    kernel it starts, after a time limit.
    """
    import nbformat
    from otter.api import grade_submission

    result: dict[str, object] = {"questions": {}, "cell_errors": [], "error": None}
    try:
        results = grade_submission(str(notebook), str(autograder), quiet=True)
    except BaseException as error:  # anything that stops otter is reported, never raised
        result["error"] = f"the grader failed: {type(error).__name__}: {_short(error, 200)}"
        out.write_text(json.dumps(result))
        return
    if results.catastrophic_error is not None:
        error = results.catastrophic_error
        result["error"] = f"the grader failed: {type(error).__name__}: {_short(error, 200)}"
    for name, test_file in results.results.items():
        failures = [
            {
                "check": tcr.test_case.name,
                "hidden": bool(tcr.test_case.hidden),
                "message": _failure_message(tcr.message),
            }
            for tcr in test_file.test_case_results
            if not tcr.passed
        ]
        result["questions"][name] = {"score": float(test_file.score), "failures": failures}
    executed = results.notebook or nbformat.v4.new_notebook()
    for cell in executed.cells:
        number = cell.get("metadata", {}).get(CELL_KEY)
        for output in cell.get("outputs", []):
            if number is not None and output.get("output_type") == "error":
                result["cell_errors"].append(
                    {"cell": number, "error": f"{output.get('ename')}: {output.get('evalue')}"}
                )
    out.write_text(json.dumps(result))


def _kill_tree(process: subprocess.Popen) -> None:
    """Stop a worker and every process it started (its kernel runs in a session of its own)."""
    import psutil

    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for proc in [*children]:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    process.kill()
    process.wait()
    psutil.wait_procs(children, timeout=10)


def _run_worker(nb, assignment: str, autograder: Path, timeout: float):
    """Grade a prepared notebook in a worker process; return ``(result, stderr)``.

    ``result`` is the worker's JSON as a dict, or ``None`` if the worker wrote none, or the
    string ``"timeout"`` if it was stopped after ``timeout`` seconds.
    """
    import nbformat

    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        stub = Path(tmp) / "stub"
        stub.mkdir()
        notebook = Path(tmp) / f"{assignment}.ipynb"
        nbformat.write(nb, notebook)
        out = Path(tmp) / "result.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        command += [str(autograder), str(notebook), str(out)]
        process = subprocess.Popen(
            command,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env=child_environment(stub),
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(process)
            return "timeout", ""
        if not out.exists():
            last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["no output"]
            return None, f"the grader stopped (exit code {process.returncode}): {last[0]}"
        return json.loads(out.read_text()), stderr


def grade_one(
    path: Path,
    assignment: str,
    autograder: Path,
    questions: list[Question],
    *,
    timeout: float = TIMEOUT,
    cell_timeout: float = CELL_TIMEOUT,
) -> Row:
    """Grade one submission. Never raises: whatever happens, it returns the submission's row."""
    start = time.monotonic()
    row = Row(path.name, "graded", {q.name: 0.0 for q in questions})
    try:
        nb, notes, rejection = prepare(path, assignment, cell_timeout)
    except Exception as error:  # an unreadable file or a notebook too malformed to prepare
        nb, notes, rejection = None, [], ("unreadable", f"cannot read the notebook: {error}")
    if rejection is not None:
        row.status, reason = rejection
        row.reasons.append(_short(reason))
        row.seconds = time.monotonic() - start
        return row

    try:
        result, stderr = _run_worker(nb, assignment, autograder, timeout)
    except Exception as error:  # the grading machinery itself failed for this submission
        result, stderr = None, f"the grader failed: {type(error).__name__}: {_short(error, 200)}"
    if result == "timeout":
        row.status = "timeout"
        row.reasons.append(
            f"grading stopped after {timeout:g} s: the notebook did not finish "
            "(every question scored 0)"
        )
    elif result is None:
        row.status = "error"
        row.reasons.append(stderr)
    else:
        if result["error"]:
            row.status = "error"
            row.reasons.append(result["error"])
        for question in questions:
            graded = result["questions"].get(question.name)
            if graded is None:
                continue
            row.scores[question.name] = graded["score"]
            if graded["failures"]:
                first = graded["failures"][0]
                number = first["check"].rsplit("-", 1)[-1].strip()
                kind = "hidden check" if first["hidden"] else "check"
                label = f"{question.name}, {kind} {number}"
                row.reasons.append(f"{label}: {_short(first['message'])}")
        for error in result["cell_errors"]:
            row.reasons.append(f"code cell {error['cell']} raised {_short(error['error'], 200)}")
    row.reasons.extend(notes)
    if row.status == "graded" and not row.reasons:
        row.reasons.append("all checks passed")
    row.seconds = time.monotonic() - start
    return row


def grade_folder(
    folder: Path,
    assignment: str,
    *,
    autograder: Path | None = None,
    dist: Path = DIST,
    timeout: float = TIMEOUT,
    cell_timeout: float = CELL_TIMEOUT,
    jobs: int = 2,
    progress: bool = False,
) -> tuple[list[Question], list[Row]]:
    """Grade every submission in ``folder``; return the questions and one row per submission."""
    autograder = autograder or find_autograder(assignment, dist)
    questions = read_questions(autograder)
    submissions = find_submissions(folder)
    rows: list[Row] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {
            pool.submit(
                grade_one,
                path,
                assignment,
                autograder,
                questions,
                timeout=timeout,
                cell_timeout=cell_timeout,
            ): path
            for path in submissions
        }
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            rows.append(row)
            if progress:
                possible = sum(q.points for q in questions)
                print(
                    f"[{len(rows)}/{len(submissions)}] {row.submission}: "
                    f"{_points(row.total())}/{_points(possible)} ({row.status}, "
                    f"{row.seconds:.1f} s)",
                    flush=True,
                )
    rows.sort(key=lambda r: _natural_key(r.submission))
    return questions, rows


def _points(value: float) -> str:
    """Points as written in the CSV: at most four decimals, no trailing zeros (1.3333, 2)."""
    return f"{round(value, 4):g}"


def write_csv(questions: list[Question], rows: list[Row], out: Path) -> None:
    """Write the CSV: ``submission, status, <a column per question>, total, possible, reason``."""
    possible = sum(q.points for q in questions)
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "status", *(q.name for q in questions), "total", "possible",
                         "reason"])
        for row in rows:
            scores = [_points(row.scores.get(q.name, 0.0)) for q in questions]
            writer.writerow([row.submission, row.status, *scores, _points(row.total()),
                             _points(possible), "; ".join(row.reasons)])


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    skip_slow_iri_checker()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker(*(Path(a) for a in argv[1:4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    parser.add_argument("--assignment", required=True, help="assignment name, e.g. 01_motivation")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV file to write")
    parser.add_argument("--dist", type=Path, default=DIST, help="folder that build.py wrote")
    parser.add_argument("--autograder", type=Path, help="autograder zip (default: from --dist)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds per submission (default {TIMEOUT:g})")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                        help=f"seconds per cell (default {CELL_TIMEOUT:g})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="submissions graded at the same time")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        questions, rows = grade_folder(
            args.submissions,
            args.assignment,
            autograder=args.autograder,
            dist=args.dist,
            timeout=args.timeout,
            cell_timeout=args.cell_timeout,
            jobs=args.jobs,
            progress=True,
        )
    except (FileNotFoundError, NotADirectoryError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_csv(questions, rows, args.out)
    print(f"graded {len(rows)} submissions in {time.monotonic() - start:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
