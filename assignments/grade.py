"""Grade a folder of submitted notebooks into a CSV, with every submission in a sandbox.

Usage (``make grade`` runs the same command)::

    python assignments/grade.py SUBMISSIONS --assignment 01_motivation --out grades.csv \\
        [--source assignments/source] [--dist assignments/dist] [--jobs 2] [--unsafe]

A grade is decided outside the student's process, from answers that leave a sandbox as data:

1. **Reference run** (trusted, once per run): the master notebook's code, solutions included,
   runs in a child process; every check of the autograder zip then runs against it, with each
   function it takes wrapped so that every call is recorded. This gives the inputs each
   function answer will be called on (hidden checks included) and the values of the *given*
   names (code the notebook hands out, such as a data generator), which the checks read from
   the reference run, never from the submission.
2. **Sandbox** (untrusted, one per submission): ``sandbox_runner.py`` runs the submission's
   code cells inside bubblewrap, with a private copy of the cells and of the recorded inputs
   and nothing else of the grading machine (no autograder, no solutions, no other submission,
   no results, no network, no environment variables), the course environment read-only, a
   fresh PID namespace (every process ends with the sandbox), and limits on memory, CPU
   time, processes and output. It writes the answers as data (``answer_codec``, never
   pickle): values, and for each function the outputs on the recorded inputs.
3. **Checks** (trusted, in a worker process of the grader with its own NumPy and posenc):
   the checks, written once in otter's master-notebook format, run against the decoded
   answers; a function answer is replayed from its recorded outputs. Each question's score
   is capped at its points and the total at ``possible``.

Every file of the folder, in sub-folders too, gets a row (names that are not valid UTF-8 are
escaped); files and folders whose names start with a dot are skipped and listed as such.
The CSV (``submission, status, q1, ..., total, possible, reason``) is written atomically.
Without bubblewrap the command refuses to grade unless ``--unsafe`` is given.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import csv
import json
import os
import queue
import re
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "source"
DIST = HERE / "dist"
RUNNER = HERE / "sandbox_runner.py"
CODEC = HERE / "answer_codec.py"

#: Seconds a whole submission may take in its sandbox, a single cell, and all the calls of
#: one function answer on the checks' inputs together.
TIMEOUT = 300.0
CELL_TIMEOUT = 60.0
CALL_TIMEOUT = 10.0
#: Seconds the checks of one submission may take in the grader's worker.
CHECK_TIMEOUT = 60.0
#: Limits inside the sandbox: address space (bytes), processes of its user, bytes one file
#: (standard output included) may reach, size of its private writable folders (bytes).
MEMORY = 3 * 2**30
PROCESSES = 64
OUTPUT = 64 * 2**20
SCRATCH = 128 * 2**20
#: User ids of the sandboxes when grading as root: one per sandbox running at the same time,
#: on the whole machine (a lock file per id), so that a fork bomb exhausts only its own
#: process limit and no two sandboxes share a user.
FIRST_UID = 61000
UID_COUNT = 1000
UID_LOCKS = Path(tempfile.gettempdir()) / "posenc-grading-uids"

#: Largest file read as a notebook, in bytes.
MAX_NOTEBOOK = 64 * 2**20

#: A reason longer than this (characters) is cut, so that the CSV stays readable.
MAX_MESSAGE = 300

#: Environment variables that set the number of threads of the linear algebra libraries.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: The secret from which hidden checks may draw their inputs (see README.md). Only the
#: grader's trusted processes see it; the sandbox gets no environment variables.
SECRET_VARIABLE = "POSENC_GRADING_SECRET"

UNSAFE_WARNING = """\
warning: grading WITHOUT a sandbox (--unsafe). The submissions run as your user, with:
  - read access to every file you can read: the autograder zip, the master notebooks with
    the solutions, the other submissions, your environment variables;
  - write access to every file you can write, this folder and the CSV included;
  - the network, and the right to signal your processes and to leave processes running;
  - no limit on processes, and only the memory, CPU-time and file-size limits of setrlimit.
The scores are still computed outside the notebook, from its answers, so patching the
checks changes nothing; but a hostile submission can harm the others and this machine.
Install bubblewrap (Debian: apt-get install bubblewrap; make system-deps) to grade safely."""


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
    sandbox_seconds: float = 0.0

    def total(self) -> float:
        """Points earned over every question."""
        return float(sum(self.scores.values()))


def skip_slow_iri_checker() -> None:
    """Keep jsonschema from importing ``rfc3987_syntax`` in this process.

    That optional IRI format checker compiles about 35 grammars when imported, which costs
    about 3 s of CPU in every process that imports nbformat or otter (an upstream issue,
    python-jsonschema/jsonschema#1428). Nothing here needs it.
    """
    sys.modules.setdefault("rfc3987_syntax", None)


def child_environment(folder: Path) -> dict[str, str]:
    """Environment for a trusted child process (otter assign, the reference run, the checks).

    One thread for the linear algebra libraries (processes run side by side already), and a
    stand-in ``rfc3987_syntax`` module in ``folder``, first on ``PYTHONPATH``, so that
    jsonschema skips its slow IRI checker (see :func:`skip_slow_iri_checker`).
    """
    (folder / "rfc3987_syntax.py").write_text(
        '"""Stand-in from assignments/grade.py: jsonschema skips its IRI checker."""\n'
        'raise ImportError("rfc3987_syntax is not loaded while building or grading")\n'
    )
    env = dict(os.environ)
    for variable in THREAD_VARIABLES:
        env[variable] = "1"
    # The children may run in another folder: a relative entry of PYTHONPATH is made absolute.
    inherited = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(Path(folder).resolve()), *inherited])
    return env


def _natural_key(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _short(text: object, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _points(value: float) -> str:
    """Points as written in the CSV: at most four decimals, no trailing zeros (1.3333, 2)."""
    return f"{round(value, 4):g}"


# --------------------------------------------------------------------------------------
# The assignment: master notebook, autograder zip, questions
# --------------------------------------------------------------------------------------


@dataclass
class Master:
    """What the grader reads from a master notebook (otter assign's format)."""

    name: str
    questions: list[Question]
    #: dotted posenc name -> question that asks the student to compute it; blocked for
    #: the whole run, or only while the function answers are called
    not_allowed: dict[str, str]
    not_allowed_in_functions: dict[str, str]
    #: code of the cells that are not checks, solutions included, in order
    reference_cells: list[str]
    #: names bound by code the notebook hands out (outside every solution block)
    given: set[str]


def _bound_names(source: str) -> set[str]:
    """Names bound at the top level of a cell (assignments, definitions, imports, loops)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
                targets = [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
    return names


def read_master(path: Path) -> Master:
    """Parse a master notebook: its questions, forbidden functions, reference code, givens.

    A question's configuration (the raw cell ``# BEGIN QUESTION``) may list the ``posenc``
    functions that would answer it, which the sandbox makes raise ``PermissionError``:
    under ``not_allowed:`` for the whole run, under ``not_allowed_in_functions:`` only
    while the function answers that the question's checks take are called (for functions
    that the code handed out with the notebook, or other answers, may use).
    """
    import yaml

    raw = json.loads(path.read_text(encoding="utf-8"))
    name = path.stem
    questions, not_allowed, in_functions, reference, given = [], {}, {}, [], set()
    in_solution = in_tests = False
    for cell in raw["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "raw":
            head = source.strip().splitlines()[0].strip().upper() if source.strip() else ""
            if head == "# BEGIN QUESTION":
                config = yaml.safe_load(source.split("\n", 1)[1]) or {}
                qname = str(config["name"])
                questions.append(Question(qname, float(config.get("points", 1))))
                for dotted in config.get("not_allowed", None) or []:
                    not_allowed[str(dotted)] = qname
                for dotted in config.get("not_allowed_in_functions", None) or []:
                    in_functions[str(dotted)] = qname
            elif head == "# ASSIGNMENT CONFIG":
                config = yaml.safe_load(source.split("\n", 1)[1]) or {}
                name = str(config.get("name", name))
            in_solution = {"# BEGIN SOLUTION": True, "# END SOLUTION": False}.get(
                head, in_solution)
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(head, in_tests)
            continue
        if cell["cell_type"] != "code" or in_tests:
            continue
        reference.append(source)
        if not in_solution:
            given |= _bound_names(source)
    if not questions:
        raise ValueError(f"{path} has no questions (# BEGIN QUESTION)")
    return Master(name, questions, not_allowed, in_functions, reference, given)


def find_master(assignment: str, source: Path = SOURCE) -> Path:
    """Path of the master notebook ``source/<assignment>/<assignment>.ipynb``."""
    path = source / assignment / f"{assignment}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"no master notebook {path}")
    return path


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


def load_tests(autograder: Path, folder: Path) -> list:
    """The otter test files of an autograder zip (hidden checks included), in order."""
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    tests = []
    with zipfile.ZipFile(autograder) as archive:
        for member in archive.namelist():
            if member.startswith("tests/") and member.endswith(".py"):
                path = Path(archive.extract(member, folder))
                tests.append(create_test_file(str(path), NBMetadataConfig()))
    if not tests:
        raise ValueError(f"{autograder} contains no tests")
    return sorted(tests, key=lambda t: _natural_key(t.name))


def test_parameters(tests: list) -> list[str]:
    """Every name that a check takes, in order of first use."""
    names: list[str] = []
    for test in tests:
        for case in test.test_cases:
            for name in case.body._get_func_params():
                if name != "env" and name not in names:
                    names.append(name)
    return names


def read_questions(autograder: Path) -> list[Question]:
    """The questions of an autograder zip file and their points, hidden checks included."""
    with tempfile.TemporaryDirectory() as tmp:
        tests = load_tests(autograder, Path(tmp))
    return [Question(t.name, float(t.possible)) for t in tests]


# --------------------------------------------------------------------------------------
# Recording and replaying the calls that checks make
# --------------------------------------------------------------------------------------


class SubmissionError(Exception):
    """What a function answer raised in the sandbox, raised again where the check calls it."""


class Recorder:
    """Wraps a reference function; records each distinct call and its outcome.

    An outcome is ``{"ok": True, "value": ...}`` or, when the function raised (a check may
    expect a ``ValueError``), ``{"ok": False, "type": ..., "message": ...}``.
    """

    def __init__(self, name: str, function) -> None:
        self.name, self.function, self.calls, self.keys = name, function, [], set()

    def __call__(self, *args, **kwargs):
        import answer_codec

        frozen = copy.deepcopy((args, kwargs))
        key = answer_codec.key(frozen)
        try:
            result = self.function(*args, **kwargs)
        except Exception as error:
            outcome = {"ok": False, "type": type(error).__name__, "message": str(error),
                       "error": f"{type(error).__name__}: {error}"}
            if key not in self.keys:
                self.keys.add(key)
                self.calls.append((frozen, outcome))
            raise
        if key not in self.keys:
            self.keys.add(key)
            self.calls.append((frozen, {"ok": True, "value": copy.deepcopy(result)}))
        return result


class Replay:
    """Stands for a function answer in the checks: returns its recorded outputs.

    A call on inputs that were not recorded (the check's path depends on an earlier wrong
    answer) raises ``LookupError``, so the check fails.
    """

    def __init__(self, name: str, calls: list, outcomes: list) -> None:
        import answer_codec

        self.name = name
        self.table = {}
        self.entries = []
        for (args, kwargs), outcome in zip(calls, outcomes[: len(calls)], strict=False):
            self.table[answer_codec.key((args, kwargs))] = outcome
            self.entries.append(((args, kwargs), outcome))

    def __call__(self, *args, **kwargs):
        import answer_codec

        outcome = self.table.get(answer_codec.key((args, kwargs)))
        if outcome is None:
            for recorded, candidate in self.entries:
                if answer_codec.close(recorded, (args, kwargs)):
                    outcome = candidate
                    break
        if outcome is None:
            raise LookupError(
                f"`{self.name}` was called on inputs the grader did not prepare, because an "
                "earlier answer of this check was wrong"
            )
        if not isinstance(outcome, dict) or "ok" not in outcome:
            raise SubmissionError(f"`{self.name}` returned nothing the grader can read")
        if outcome["ok"]:
            return copy.deepcopy(outcome.get("value"))
        import builtins

        kind = getattr(builtins, str(outcome.get("type")), None)
        if (isinstance(kind, type) and issubclass(kind, Exception)
                and not issubclass(kind, (SystemExit, KeyboardInterrupt))):
            raise kind(str(outcome.get("message", "")))
        raise SubmissionError(f"`{self.name}` raised {outcome.get('error')}")

    def __repr__(self) -> str:
        return f"<function {self.name} of the submission>"


def reference_run(master_path: Path, autograder: Path, out: Path) -> None:
    """Trusted: run the master's code and its checks, record calls, write the plan to ``out``.

    Runs in its own process (``grade.py --reference``). Fails if a check does not pass with
    the solutions, or if a check's inputs are not data the sandbox can receive.
    """
    sys.path.insert(0, str(HERE))
    import answer_codec
    import sandbox_runner

    master = read_master(master_path)
    with tempfile.TemporaryDirectory() as tmp:
        sandbox_runner.write_otter_stand_in(str(Path(tmp) / "stand-in"))
        tests = load_tests(autograder, Path(tmp))
        saved_path = list(sys.path)
        sys.path.insert(0, str(Path(tmp) / "stand-in"))
        saved_otter = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "otter"}
        for key_name in saved_otter:
            del sys.modules[key_name]
        try:
            namespace, errors = sandbox_runner.run_cells(master.reference_cells, 600.0)
        finally:
            sys.path[:] = saved_path
            for key_name in [k for k in sys.modules if k.split(".")[0] == "otter"]:
                del sys.modules[key_name]
            sys.modules.update(saved_otter)
    if errors:
        raise RuntimeError(f"the master notebook raised errors: {errors}")
    names = test_parameters(tests)
    recorders = {n: Recorder(n, namespace[n]) for n in names
                 if n in namespace and callable(namespace[n]) and n != "env"}
    env = dict(namespace)
    env.update(recorders)
    failures = []
    for test in tests:
        test.run(env)
        failures += [f"{test.name}: {r.message}" for r in test.test_case_results if not r.passed]
    if failures:
        raise RuntimeError("the solutions fail checks:\n" + "\n".join(failures))
    plan = {
        "names": [n for n in names if n not in master.given],
        "calls": {n: [c for c, _ in r.calls] for n, r in recorders.items()
                  if n not in master.given},
        "given_values": {n: namespace[n] for n in names
                         if n in master.given and n in namespace and n not in recorders},
        "given_functions": {n: r.calls for n, r in recorders.items() if n in master.given},
        "not_allowed": master.not_allowed,
        "not_allowed_in_functions": master.not_allowed_in_functions,
        "questions_of": {n: [t.name for t in tests if any(
            n in case.body._get_func_params() for case in t.test_cases)] for n in names},
    }
    data = answer_codec.pack(plan)
    check = answer_codec.unpack(data)
    for name, calls in check["calls"].items():
        for args, kwargs in calls:
            if any(isinstance(v, answer_codec.Unsupported) for v in [*args, *kwargs.values()]):
                raise RuntimeError(f"a check calls `{name}` with inputs that are not data")
    out.write_bytes(data)


# --------------------------------------------------------------------------------------
# Reading a submission
# --------------------------------------------------------------------------------------


def display_name(path: Path, folder: Path) -> str:
    """The path of a submission relative to its folder, with bytes that are not UTF-8 escaped."""
    relative = os.fsencode(path.relative_to(folder))
    return relative.decode("utf-8", errors="backslashreplace")


def find_submissions(folder: Path) -> tuple[list[Path], list[Path]]:
    """Every regular file under ``folder`` and the skipped ones (names starting with a dot).

    Returns ``(submissions, skipped)``, both sorted by name; files in sub-folders count, and
    a dot-folder is skipped with everything in it. Symbolic links are not followed.
    """
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder of submissions")
    files, skipped = [], []
    for root, dirs, names in os.walk(folder, followlinks=False):
        base = Path(root)
        for d in list(dirs):
            if d.startswith("."):
                skipped.append(base / d)
                dirs.remove(d)
        for name in names:
            path = base / name
            if name.startswith("."):
                skipped.append(path)
            elif path.is_file() and not path.is_symlink():
                files.append(path)
            else:
                skipped.append(path)
    key = lambda p: _natural_key(display_name(p, folder))  # noqa: E731
    return sorted(files, key=key), sorted(skipped, key=key)


def _describe_bytes(data: bytes) -> str:
    if data.startswith(b"%PDF"):
        return "a PDF file"
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive"
    return "not valid JSON"


def prepare(path: Path, assignment: str) -> tuple[list[str] | None, list[str], tuple | None]:
    """Read a submission; return its code cells, remarks, or the reason it cannot be graded.

    Returns
    -------
    tuple
        ``(cells, notes, None)`` for a gradable notebook, where ``cells`` are the sources of
        its code cells; or ``(None, [], (status, reason))``.
    """
    size = path.stat().st_size
    if size > MAX_NOTEBOOK:
        return None, [], ("unreadable", f"file too large for a notebook ({size} bytes)")
    data = path.read_bytes()
    if not data.strip():
        return None, [], ("unreadable", f"empty file ({len(data)} bytes)")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None, [], ("unreadable", f"not a Jupyter notebook ({_describe_bytes(data)})")
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return None, [], ("unreadable", "not a Jupyter notebook (JSON without a list of cells)")
    notes = []
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    otter_meta = metadata.get("otter") if isinstance(metadata.get("otter"), dict) else {}
    name = otter_meta.get("assignment_name")
    if name is None:
        notes.append(f"no assignment name in the notebook's metadata; graded as {assignment}")
    elif name != assignment:
        return None, [], ("wrong assignment", f"this notebook is assignment {_short(name, 80)!r}")
    cells = []
    for number, cell in enumerate(raw["cells"], start=1):
        if not isinstance(cell, dict):
            return None, [], ("unreadable", f"cell {number} is not a notebook cell")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            kind = type(source).__name__
            return None, [], ("unreadable",
                              f"cell {number}: its source is a {kind}, not text")
        cells.append(source)
    return cells, notes, None


# --------------------------------------------------------------------------------------
# The sandbox
# --------------------------------------------------------------------------------------


def sandbox_available() -> str | None:
    """Path of ``bwrap`` if it can start a sandbox here, else ``None``."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    probe = subprocess.run([bwrap, *_namespace_flags(), "--ro-bind", "/", "/", "true"],
                           capture_output=True, check=False)
    return bwrap if probe.returncode == 0 else None


def _namespace_flags() -> list[str]:
    """Every namespace bubblewrap can unshare.

    As root, the user namespace is left out (``--unshare-all`` would map the sandbox's user
    to root again, which ignores process limits); the sandbox instead drops to an
    unprivileged user id of its own with ``setpriv``, with no capabilities at all.
    """
    if os.geteuid() == 0:
        return ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    return ["--unshare-all", "--die-with-parent", "--new-session"]


def _environment_paths() -> list[str]:
    """Folders the sandbox needs read-only: Python, the course environment, posenc's source."""
    import posenc

    paths = {sys.prefix, sys.base_prefix, str(Path(posenc.__file__).resolve().parent)}
    executable = Path(sys.executable).resolve()
    paths.add(str(executable.parent.parent))
    return sorted(p for p in paths if p and Path(p).exists())


@dataclass
class Sandbox:
    """How submissions are run: inside bubblewrap, or (``--unsafe``) directly."""

    bwrap: str | None
    memory: int = MEMORY
    processes: int = PROCESSES
    output: int = OUTPUT
    mpl_cache: Path | None = None

    def command(self, work: Path, uid: int | None) -> list[str]:
        """The command that runs the runner on ``work/plan.npz`` and ``work/cells.npz``."""
        python = str(Path(sys.executable))
        if self.bwrap is None:
            return [python, "-I", str(work / "runner" / RUNNER.name),
                    str(work / "plan.npz"), str(work / "cells.npz")]
        cmd = [self.bwrap, *_namespace_flags(),
               "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
        for link in ("bin", "lib", "lib64", "lib32", "sbin"):
            target = Path("/") / link
            if target.is_symlink():
                cmd += ["--symlink", os.readlink(target), str(target)]
            elif target.is_dir():
                cmd += ["--ro-bind", str(target), str(target)]
        # The scratch folders first: a later mount would hide a course environment that lives
        # below /tmp (a clone in /tmp, as CI may make) behind an empty tmpfs.
        cmd += ["--perms", "01777", "--size", str(SCRATCH), "--tmpfs", "/tmp"]
        # Folders that bubblewrap creates for mount points would be private to root (0700),
        # which the sandbox's user could not enter: create them readable first.
        destinations = [*_environment_paths(), "/home/student", "/grader-data/plan.npz"]
        parents = {str(p) for d in destinations for p in Path(d).parents if str(p) != "/"}
        for parent in sorted(parents, key=lambda p: p.count("/")):
            cmd += ["--perms", "0755", "--dir", parent]
        for path in _environment_paths():
            cmd += ["--ro-bind", path, path]
        cmd += ["--perms", "01777", "--size", str(SCRATCH), "--tmpfs", "/home/student",
                "--ro-bind", str(work / "runner"), "/grader",
                "--ro-bind", str(work / "plan.npz"), "/grader-data/plan.npz",
                "--ro-bind", str(work / "cells.npz"), "/grader-data/cells.npz"]
        if self.mpl_cache is not None:
            cmd += ["--ro-bind", str(self.mpl_cache), "/grader-data/matplotlib"]
        cmd += ["--chdir", "/home/student", "--clearenv"]
        env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": "/home/student",
               "TMPDIR": "/tmp", "USER": "student", "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
               "MPLCONFIGDIR": "/grader-data/matplotlib" if self.mpl_cache else "/tmp/mpl",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        env.update({v: "1" for v in THREAD_VARIABLES})
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        if uid is not None:
            cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        cmd += [python, "-I", f"/grader/{RUNNER.name}",
                "/grader-data/plan.npz", "/grader-data/cells.npz"]
        return cmd

    def limits(self, cpu_seconds: float):
        """``preexec_fn`` that sets the sandbox's resource limits (inherited by all in it)."""
        def apply() -> None:
            cpu = int(cpu_seconds) + 1
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.output, self.output))
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if self.bwrap is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (self.processes, self.processes))
        return apply


def run_in_sandbox(sandbox: Sandbox, plan_bytes: bytes, cells: list[str], timeout: float):
    """Run one submission; return ``(result dict or None, status, message, seconds)``."""
    import answer_codec
    import sandbox_runner

    start = time.monotonic()
    uid, lock = acquire_uid() if os.geteuid() == 0 and sandbox.bwrap else (None, None)
    try:
        with tempfile.TemporaryDirectory(prefix="sandbox-") as tmp:
            work = Path(tmp)
            os.chmod(work, 0o711)
            (work / "runner").mkdir()
            shutil.copy(RUNNER, work / "runner" / RUNNER.name)
            shutil.copy(CODEC, work / "runner" / CODEC.name)
            (work / "plan.npz").write_bytes(plan_bytes)
            (work / "cells.npz").write_bytes(answer_codec.pack(cells))
            for path in (work / "runner", *(work / "runner").iterdir(), work / "plan.npz",
                         work / "cells.npz"):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            stdout_path, stderr_path = work / "stdout", work / "stderr"
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                process = subprocess.Popen(
                    sandbox.command(work, uid), stdin=subprocess.DEVNULL, stdout=out,
                    stderr=err, cwd=tmp, preexec_fn=sandbox.limits(timeout),
                    start_new_session=True,
                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                         **{v: "1" for v in THREAD_VARIABLES}},
                )
                try:
                    process.wait(timeout=timeout)
                    timed_out = False
                except subprocess.TimeoutExpired:
                    process.kill()  # bwrap's death ends its PID namespace and all in it
                    process.wait()
                    timed_out = True
            if sandbox.bwrap is None:
                _kill_session(process.pid)
            seconds = time.monotonic() - start
            if timed_out:
                return None, "timeout", (f"stopped after {timeout:g} s: the notebook did not "
                                         "finish (every question scored 0)"), seconds
            data = stdout_path.read_bytes()
            at = data.rfind(sandbox_runner.MAGIC)
            if at < 0:
                tail = stderr_path.read_bytes()[-2000:].decode("utf-8", "replace").strip()
                signal_note = (f"killed by signal {-process.returncode}"
                               if process.returncode < 0 else f"exit code {process.returncode}")
                detail = f" ({_short(tail.splitlines()[-1], 150)})" if tail else ""
                return None, "error", (
                    f"the notebook ended the grading process ({signal_note}) before its "
                    f"answers were read{detail}; every question scored 0"), seconds
            start_data = at + len(sandbox_runner.MAGIC) + 8
            length = int.from_bytes(data[at + len(sandbox_runner.MAGIC):start_data], "big")
            try:
                result = answer_codec.unpack(data[start_data:start_data + length])
                if not isinstance(result, dict):
                    raise answer_codec.CodecError("the answers are not a dictionary")
            except (answer_codec.CodecError, RecursionError) as error:
                return None, "error", f"the answers could not be read: {_short(error)}", seconds
            return result, "graded", "", seconds
    finally:
        if uid is not None:
            _reap(uid)
            os.close(lock)  # releases the lock on the user id


def acquire_uid() -> tuple[int, int]:
    """A user id no other sandbox on this machine uses now, and the lock that holds it.

    Closing the returned file descriptor releases the id.
    """
    import fcntl

    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for _ in range(600):
        for uid in range(FIRST_UID, FIRST_UID + UID_COUNT):
            fd = os.open(UID_LOCKS / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            return uid, fd
        time.sleep(0.1)
    raise RuntimeError(f"every sandbox user id {FIRST_UID}+ is in use")


def _reap(uid: int, seconds: float = 10.0) -> None:
    """Wait until no process of a sandbox's user id is left, killing any that linger.

    The kernel ends every process of a sandbox when its first process dies, but not in
    the same instant; the user id is handed to the next sandbox only once they are gone,
    so that no process counts against another sandbox's process limit.
    """
    import psutil

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = []
        for proc in psutil.process_iter(["uids"]):
            uids = proc.info["uids"]
            if uids is not None and uid in (uids.real, uids.effective):
                left.append(proc)
        if not left:
            return
        for proc in left:
            try:
                proc.kill()
            except psutil.Error:
                pass
        time.sleep(0.05)


def _kill_session(pid: int) -> None:
    """Without a sandbox: end every process left in the submission's session."""
    import psutil

    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getsid(proc.pid) == pid:
                proc.kill()
        except (OSError, psutil.Error):
            pass


def matplotlib_cache(folder: Path) -> Path | None:
    """Build matplotlib's font cache once, for the sandboxes to read (saves ~1 s each)."""
    cache = folder / "matplotlib"
    cache.mkdir()
    env = {**os.environ, "MPLCONFIGDIR": str(cache), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"],
                          env=env, capture_output=True, check=False)
    if done.returncode != 0:
        return None
    for path in (cache, *cache.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return cache


# --------------------------------------------------------------------------------------
# The checks, in a trusted worker process
# --------------------------------------------------------------------------------------


def _failure_message(message: str | None) -> str:
    """The exception line(s) of an otter failure message, without its preamble and code line."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error at line"):
            return " ".join(lines[i + 2 :]) or "failed"
    return " ".join(line for line in lines if "Test case failed" not in line) or "failed"


def check_answers(tests: list, plan: dict, answers: dict) -> dict:
    """Run every check on a submission's decoded answers; scores and failures per question."""
    env: dict[str, Any] = {}
    for name, value in plan["given_values"].items():
        env[name] = copy.deepcopy(value)
    for name, calls in plan["given_functions"].items():
        env[name] = Replay(name, [c for c, _ in calls], [o for _, o in calls])
    for name, value in answers.get("values", {}).items():
        if name in plan["names"]:
            env[name] = value
    for name, outcomes in answers.get("functions", {}).items():
        if name in plan["names"] and isinstance(outcomes, list):
            env[name] = Replay(name, plan["calls"].get(name, []), outcomes)
    questions = {}
    for test in tests:
        test.run(env)
        failures = [
            {"check": r.test_case.name, "hidden": bool(r.test_case.hidden),
             "message": _failure_message(r.message)}
            for r in test.test_case_results if not r.passed
        ]
        score = min(max(float(test.score), 0.0), float(test.possible))
        questions[test.name] = {"score": score, "failures": failures}
    return questions


def check_worker(autograder: Path, plan_path: Path) -> None:
    """Trusted worker (``grade.py --check-worker``): read result files, answer with scores.

    Reads one path per line on standard input (a packed sandbox result), writes one JSON
    line per path. Runs as a process of its own so that the grader can stop it if a check
    never ends on some answer, and so that the checks see a clean NumPy and posenc.
    """
    sys.path.insert(0, str(HERE))
    import answer_codec

    plan = answer_codec.unpack(plan_path.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        for line in sys.stdin:
            path = Path(line.strip())
            try:
                answers = answer_codec.unpack(path.read_bytes())
                tests = load_tests(autograder, Path(tmp))
                reply = {"questions": check_answers(tests, plan, answers)}
            except Exception as error:  # malformed answers: this submission only
                reply = {"error": f"the answers could not be checked: {_short(error)}"}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


class Checker:
    """One trusted worker process per grading thread, restarted if a check hangs."""

    def __init__(self, autograder: Path, plan_path: Path, env: dict[str, str]) -> None:
        self.command = [sys.executable, str(Path(__file__).resolve()), "--check-worker",
                        str(autograder), str(plan_path)]
        self.env = env
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True, env=self.env)
        return self.process

    def check(self, answers_path: Path, timeout: float) -> dict:
        """Scores for the packed answers in ``answers_path``."""
        process = self._start()
        process.stdin.write(f"{answers_path}\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else ""
        if not line:
            self.close()
            return {"error": f"the checks did not finish within {timeout:g} s"}
        return json.loads(line)

    def close(self) -> None:
        """Stop the worker."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


# --------------------------------------------------------------------------------------
# Grading a folder
# --------------------------------------------------------------------------------------


def make_plan(master_path: Path, autograder: Path, folder: Path) -> Path:
    """Run the reference run in a trusted child process; return the path of the plan."""
    out = folder / "plan.npz"
    stub = folder / "stub"
    stub.mkdir(exist_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--reference",
               str(master_path), str(autograder), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=child_environment(stub), cwd=folder)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"the reference run failed:\n{done.stdout}\n{done.stderr}")
    return out


def grade_one(path: Path, name: str, master: Master, plan_bytes: bytes, sandbox: Sandbox,
              checker: Checker, *, timeout: float, check_timeout: float,
              questions: list[Question]) -> Row:
    """Grade one submission. Never raises: whatever happens, it returns the submission's row."""
    import answer_codec

    start = time.monotonic()
    row = Row(name, "graded", {q.name: 0.0 for q in questions})
    try:
        cells, notes, rejection = prepare(path, master.name)
    except Exception as error:  # a file that cannot even be read
        cells, notes, rejection = None, [], ("unreadable", f"cannot read the file: {error}")
    if rejection is not None:
        row.status, reason = rejection
        row.reasons.append(_short(reason))
        row.seconds = time.monotonic() - start
        return row
    try:
        result, status, message, row.sandbox_seconds = run_in_sandbox(
            sandbox, plan_bytes, cells, timeout)
    except Exception as error:  # the sandbox machinery itself failed for this submission
        result, status, message = None, "error", f"the sandbox failed: {_short(error, 200)}"
    if result is None:
        row.status = status
        row.reasons.append(message)
    elif "error" in result:
        row.status = "error"
        row.reasons.append(_short(result["error"]))
    else:
        with tempfile.NamedTemporaryFile(suffix=".npz") as handle:
            handle.write(answer_codec.pack(result))
            handle.flush()
            checked = checker.check(Path(handle.name), check_timeout)
        if "error" in checked:
            row.status = "error"
            row.reasons.append(checked["error"])
        for question in questions:
            graded = checked.get("questions", {}).get(question.name)
            if graded is None:
                continue
            row.scores[question.name] = min(max(graded["score"], 0.0), question.points)
            if graded["failures"]:
                first = graded["failures"][0]
                number = first["check"].rsplit("-", 1)[-1].strip()
                kind = "hidden check" if first["hidden"] else "check"
                row.reasons.append(f"{question.name}, {kind} {number}: "
                                   f"{_short(first['message'])}")
        for number, error in result.get("cell_errors", [])[:20]:
            row.reasons.append(f"code cell {number} raised {_short(error, 200)}")
        for note in result.get("notes", [])[:5]:
            row.reasons.append(_short(note))
    row.reasons.extend(notes)
    if row.status == "graded" and not row.reasons:
        row.reasons.append("all checks passed")
    row.seconds = time.monotonic() - start
    return row


class Progress:
    """A progress bar on standard error: submissions done, their rate, the time left."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.done = total, enabled, 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def update(self, row: Row) -> None:
        """Count one more submission and redraw."""
        self.done += 1
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        text = (f"[{bar}] {self.done}/{self.total} submissions, {rate * 60:.1f}/min, "
                f"{int(left // 60)}:{int(left % 60):02d} left")
        if self.tty:
            sys.stderr.write("\r" + text + ("\n" if self.done == self.total else ""))
        elif self.done == self.total or time.monotonic() - self.last > 5:
            sys.stderr.write(text + "\n")
            self.last = time.monotonic()
        sys.stderr.flush()


def grade_folder(
    folder: Path,
    assignment: str,
    *,
    source: Path = SOURCE,
    dist: Path = DIST,
    autograder: Path | None = None,
    timeout: float = TIMEOUT,
    cell_timeout: float = CELL_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
    check_timeout: float = CHECK_TIMEOUT,
    jobs: int = 2,
    unsafe: bool = False,
    memory: int = MEMORY,
    progress: bool = False,
) -> tuple[list[Question], list[Row], list[str]]:
    """Grade every submission under ``folder``.

    Returns the questions, one row per submission, and the names of the skipped files.

    Raises
    ------
    RuntimeError
        If no sandbox can be started and ``unsafe`` is false.
    """
    sys.path.insert(0, str(HERE))
    import answer_codec

    bwrap = sandbox_available()
    if bwrap is None and not unsafe:
        raise RuntimeError(
            "bubblewrap (bwrap) is not installed or cannot start a sandbox here, so "
            "submissions cannot be isolated. Install it (apt-get install bubblewrap, or "
            "make system-deps), or pass --unsafe to grade without a sandbox after reading "
            "what that gives up (grade.py --help)."
        )
    if bwrap is None:
        print(UNSAFE_WARNING, file=sys.stderr)
    # Absolute from here on: the reference run and the checks run with another working folder.
    folder, source, dist = Path(folder).resolve(), Path(source).resolve(), Path(dist).resolve()
    master_path = find_master(assignment, source)
    master = read_master(master_path)
    autograder = Path(autograder or find_autograder(assignment, dist)).resolve()
    questions = read_questions(autograder)
    submissions, skipped = find_submissions(folder)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o711)
        plan_path = make_plan(master_path, autograder, work)
        plan = answer_codec.unpack(plan_path.read_bytes())
        sandbox_plan = {"names": plan["names"], "calls": plan["calls"],
                        "not_allowed": plan["not_allowed"],
                        "not_allowed_in_functions": plan["not_allowed_in_functions"],
                        "questions_of": plan["questions_of"],
                        "cell_timeout": cell_timeout,
                        "call_timeout": call_timeout}
        plan_bytes = answer_codec.pack(sandbox_plan)
        sandbox = Sandbox(bwrap, memory=memory, mpl_cache=matplotlib_cache(work))
        stub = work / "stub"
        env = child_environment(stub)
        checkers: queue.Queue = queue.Queue()
        all_checkers = [Checker(autograder, plan_path, env) for _ in range(max(1, jobs))]
        for checker in all_checkers:
            checker._start()
            checkers.put(checker)
        bar = Progress(len(submissions), progress)
        lock = threading.Lock()

        def task(path: Path) -> Row:
            checker = checkers.get()
            try:
                row = grade_one(path, display_name(path, folder), master, plan_bytes,
                                sandbox, checker, timeout=timeout,
                                check_timeout=check_timeout, questions=questions)
            finally:
                checkers.put(checker)
            with lock:
                bar.update(row)
            return row

        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                rows = list(pool.map(task, submissions))
        finally:
            for checker in all_checkers:
                checker.close()
    rows.sort(key=lambda r: _natural_key(r.submission))
    return questions, rows, [display_name(p, folder) for p in skipped]


def write_csv(questions: list[Question], rows: list[Row], out: Path) -> None:
    """Write the CSV atomically: ``submission, status, <a column per question>, total,
    possible, reason``. The total is capped at ``possible``."""
    possible = sum(q.points for q in questions)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", dir=out.parent, prefix=f".{out.name}.",
                                         suffix=".tmp", delete=False, newline="",
                                         encoding="utf-8")
    try:
        with handle:
            writer = csv.writer(handle)
            writer.writerow(["submission", "status", *(q.name for q in questions), "total",
                             "possible", "reason"])
            for row in rows:
                scores = [min(max(row.scores.get(q.name, 0.0), 0.0), q.points)
                          for q in questions]
                total = min(sum(scores), possible)
                writer.writerow([row.submission, row.status, *map(_points, scores),
                                 _points(total), _points(possible), "; ".join(row.reasons)])
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, out)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    skip_slow_iri_checker()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--reference"]:
        reference_run(*(Path(a) for a in argv[1:4]))
        return 0
    if argv[:1] == ["--check-worker"]:
        check_worker(Path(argv[1]), Path(argv[2]))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], epilog=UNSAFE_WARNING.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    parser.add_argument("--assignment", required=True, help="assignment name, e.g. 01_motivation")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV file to write")
    parser.add_argument("--source", type=Path, default=SOURCE,
                        help="folder of master notebooks (default: assignments/source)")
    parser.add_argument("--dist", type=Path, default=DIST, help="folder that build.py wrote")
    parser.add_argument("--autograder", type=Path, help="autograder zip (default: from --dist)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds per submission (default {TIMEOUT:g})")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                        help=f"seconds per cell (default {CELL_TIMEOUT:g})")
    parser.add_argument("--call-timeout", type=float, default=CALL_TIMEOUT,
                        help="seconds for all calls of one function answer "
                        f"(default {CALL_TIMEOUT:g})")
    parser.add_argument("--memory", type=float, default=MEMORY / 2**30,
                        help=f"GiB of address space per submission (default {MEMORY / 2**30:g})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="submissions graded at the same time")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade without a sandbox when bubblewrap is missing (see below)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    # A relative path is relative to where the command started (the repository, for `make
    # grade`): made absolute at once, since the reference run works in a temporary folder.
    for name in ("submissions", "source", "dist", "autograder"):
        if getattr(args, name) is not None:
            setattr(args, name, getattr(args, name).resolve())
    args.out = Path(os.path.abspath(args.out))
    start = time.monotonic()
    try:
        questions, rows, skipped = grade_folder(
            args.submissions, args.assignment, source=args.source, dist=args.dist,
            autograder=args.autograder, timeout=args.timeout, cell_timeout=args.cell_timeout,
            call_timeout=args.call_timeout, jobs=args.jobs, unsafe=args.unsafe,
            memory=int(args.memory * 2**30), progress=not args.quiet,
        )
    except (FileNotFoundError, NotADirectoryError, ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_csv(questions, rows, args.out)
    possible = sum(q.points for q in questions)
    for row in rows:
        print(f"{row.submission}: {_points(min(row.total(), possible))}/{_points(possible)} "
              f"({row.status})")
    for name in skipped:
        print(f"{name}: skipped (name starts with a dot, or not a regular file)")
    elapsed = time.monotonic() - start
    print(f"graded {len(rows)} submissions in {elapsed:.1f} s, skipped {len(skipped)}; "
          f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
