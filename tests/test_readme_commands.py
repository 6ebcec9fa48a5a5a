"""The commands that README.md and assignments/README.md show, run through make as shown.

They run in a fresh checkout of the working tree in a temporary folder
(``tests/fresh_checkout.py``: the files a new clone holds, uncommitted edits included, with
this checkout's ``.venv`` through a symbolic link), rather than in the repository itself or
in a ``git clone``:

* it starts as a new clone does, without ``assignments/dist``, so ``make assignments`` and
  ``make grade`` must work from nothing, as they must for a new instructor;
* the README's relative ``OUT=grades.csv`` is written inside that copy, never over a
  ``grades.csv`` of the checkout people work in, and two runs share no file;
* a clone would test the last commit, not the code being tested, and its new file times
  would make make reinstall the shared ``.venv`` (the copy keeps the times; it never does).

Copying takes about a second; building every assignment from nothing about 15 s; each
grading run takes the reference run plus the submissions' sandboxes (two at a time).

Not run here: ``make test`` (it runs this file) and ``make book`` (CI runs it before
``make browser-test``); ``make lab`` is started by ``tests/browser/test_lab.py``, in a fresh
checkout too, which then opens every chapter and its assignment link in it. ``make bench``
runs with ``BENCH_QUICK=1`` (about 20 s instead of 70): the same scripts and make target,
with few repetitions.

Grading needs bubblewrap. Where it cannot start a sandbox, the grading tests fail and say
so rather than skip (``make system-deps`` installs it; CI does, with ``.ci/system-deps``).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .fresh_checkout import ROOT, fresh_checkout, make_env
from .test_assignments import EXPECTED as FIXTURE_ROWS
from .test_assignments import FIXTURES, assert_graded_as_expected
from .test_grade_hostile import EXPECTED as HOSTILE_SCORES
from .test_grade_hostile import HOSTILE

sys.path.insert(0, str(ROOT / "assignments"))

import build
import grade

pytestmark = pytest.mark.filterwarnings("ignore:Traits should be given as instances")

NAMES = list(build.masters())
#: Seconds within which an up-to-date `make assignments` must return.
UP_TO_DATE_LIMIT = 10.0


def readme_block_line(path: Path, pattern: str) -> str:
    """The command of a ``bash`` block of ``path`` that matches ``pattern`` (regex).

    Continued lines (ending in a backslash) are joined and a trailing comment dropped, so
    that the command can be run as it stands.
    """
    text = path.read_text(encoding="utf-8")
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", command).strip()
            if re.search(pattern, command):
                return " ".join(command.split())
    pytest.fail(f"{path.name} no longer shows a command matching {pattern!r}")


def make(checkout: Path, command: str | list[str], timeout: float = 900, **env: str):
    """Run a make command line (as typed in a shell, or as a list) in ``checkout``."""
    args = ["bash", "-c", command] if isinstance(command, str) else command
    start = time.monotonic()
    done = subprocess.run(args, cwd=checkout, env=make_env(**env), capture_output=True,
                          text=True, timeout=timeout, check=False)
    done.seconds = time.monotonic() - start
    return done


def require_sandbox() -> None:
    if grade.sandbox_available() is None:
        pytest.fail("bubblewrap cannot start a sandbox here, and `make grade` refuses to "
                    "grade without one: run `make system-deps` (CI runs .ci/system-deps)")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    start = time.monotonic()
    path = fresh_checkout(tmp_path_factory.mktemp("readme") / "course")
    print(f"\nfresh checkout in {time.monotonic() - start:.1f} s")
    return path


@pytest.fixture(scope="module")
def assignments_built(checkout: Path) -> Path:
    """`make assignments` as README.md shows it, from a checkout without assignments/dist."""
    assert not (checkout / "assignments" / "dist").exists()
    done = make(checkout, readme_block_line(ROOT / "README.md", r"^make assignments$"))
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"\nmake assignments from nothing: {done.seconds:.1f} s")
    return checkout


def test_make_assignments_builds_every_assignment_then_skips_them(assignments_built) -> None:
    dist = assignments_built / "assignments" / "dist"
    for name in NAMES:
        assert build.student_notebook(name, dist).is_file(), name
        assert len(list((dist / name / "autograder").glob("*-autograder_*.zip"))) == 1, name
    again = make(assignments_built, "make assignments")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count(": up to date;") == len(NAMES), again.stdout
    assert again.seconds < UP_TO_DATE_LIMIT
    print(f"\nmake assignments when up to date: {again.seconds:.2f} s")


def test_make_grade_without_arguments_prints_its_usage(assignments_built) -> None:
    done = make(assignments_built, ["make", "grade"])
    assert done.returncode == 2, done.stdout + done.stderr
    assert "usage: make grade SUBMISSIONS=folder ASSIGNMENT=" in done.stdout


def test_make_grade_with_relative_paths_as_the_guide_shows(assignments_built) -> None:
    """The sample command of assignments/README.md, verbatim: relative SUBMISSIONS and OUT,
    the default (relative) SOURCE, the fixture folder of assignment 2."""
    require_sandbox()
    command = readme_block_line(ROOT / "assignments" / "README.md",
                                r"^make grade SUBMISSIONS=assignments/fixtures/02_mathematics ")
    out = dict(a.split("=", 1) for a in shlex.split(command)[2:] if "=" in a)["OUT"]
    assert not Path(out).is_absolute()
    done = make(assignments_built, command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_graded_as_expected(assignments_built / out, FIXTURE_ROWS)
    print(f"\n{command}: {done.seconds:.1f} s")


def test_make_grade_with_absolute_paths_and_a_private_source(
    assignments_built, tmp_path: Path
) -> None:
    """README.md's `make grade` line with absolute SUBMISSIONS and OUT outside the checkout
    (with spaces in their names), and an absolute SOURCE: a private copy of the masters, as
    a graded offering keeps (assignments/README.md). The folder mixes fixtures of both
    sample folders, one in a sub-folder; the notebook that loops (which waits for the time
    limits) is left out, since this line sets none."""
    require_sandbox()
    line = readme_block_line(ROOT / "README.md", r"^make grade SUBMISSIONS=")
    folder = tmp_path / "submitted notebooks"
    folder.mkdir()
    mine = [n for n in FIXTURE_ROWS if n != "loops.ipynb"]
    for name in mine:
        shutil.copy(FIXTURES / name, folder / name)
    hostile = ["late/good_in_subfolder.ipynb", "wrong_answers.ipynb"]
    for name in hostile:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HOSTILE / name, folder / name)
    source = tmp_path / "private masters"
    shutil.copytree(ROOT / "assignments" / "source" / "02_mathematics",
                    source / "02_mathematics")
    out = tmp_path / "grades out" / "grades.csv"
    values = {"SUBMISSIONS": str(folder), "ASSIGNMENT": "02_mathematics", "OUT": str(out)}
    words = shlex.split(line)
    assert [w.split("=", 1)[0] for w in words[2:]] == list(values), line
    args = ["make", "grade", *(f"{k}={v}" for k, v in values.items()), f"SOURCE={source}"]
    done = make(assignments_built, args)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = {name: FIXTURE_ROWS[name] for name in mine}
    expected.update({name: ("graded", HOSTILE_SCORES[name], []) for name in hostile})
    assert_graded_as_expected(out, expected)
    assert str(source) in done.stdout  # graded with the private masters
    assert not (assignments_built / "grades.csv").exists()
    print(f"\nmake grade with absolute paths, {len(expected)} submissions: {done.seconds:.1f} s")


def test_make_bench_runs_every_benchmark(assignments_built) -> None:
    """`make bench` (README.md's layout table) with BENCH_QUICK=1: every benchmark runs to
    the end; the grading one grades its copies in the sandbox, all with full marks."""
    require_sandbox()
    assert "`make bench`" in (ROOT / "README.md").read_text(encoding="utf-8")
    done = make(assignments_built, ["make", "bench"], BENCH_QUICK="1")
    assert done.returncode == 0, done.stdout + done.stderr
    for script in sorted((assignments_built / "benchmarks").glob("bench_*.py")):
        assert f"== benchmarks/{script.name}" in done.stdout
    assert re.search(r"\(a\) (\d+) submissions .*\(\d+ per minute, \1 with full marks\)",
                     done.stdout), done.stdout
    print(f"\nBENCH_QUICK=1 make bench: {done.seconds:.1f} s")
