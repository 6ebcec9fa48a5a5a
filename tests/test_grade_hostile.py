"""Hostile submissions: no attack changes a score but the attacker's own, raises it above
what its honest answers earn, reads what the grader hides, or leaves a process behind.

The folder ``assignments/fixtures/02_hostile`` holds one notebook per attack (written by
``assignments/fixtures/make_hostile.py``) beside honest ones; this test adds the files that
git should not hold (a name that is not UTF-8, a dot-file) and grades it once.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "assignments"
HOSTILE = ASSIGNMENTS / "fixtures" / "02_hostile"
sys.path.insert(0, str(ASSIGNMENTS))

import build  # noqa: E402
import grade  # noqa: E402

# No skip when bubblewrap is missing: grading refuses to run without it, and so does this
# test (make system-deps installs it).
pytestmark = pytest.mark.filterwarnings("ignore:Traits should be given as instances")

#: Put in the grader's environment; a submission that could read it would echo it.
CANARY = "canary-7b1f0c-not-for-students"
FULL = [2, 3, 3, 2, 1]
WRONG = [0, 0, 1, 2 / 3, 1]  # wrong_answers.ipynb, honest: the same answers without an attack
NOTHING = [0, 0, 0, 0, 0]

#: Scores (q1..q5) each file must get: honest ones full marks, attacks what their honest
#: answers earn. ``None`` marks an attack whose own row may be an error (it wrecked its
#: own output channel), bounded by its honest answers' score.
EXPECTED = {
    "good.ipynb": FULL,
    "late/good_in_subfolder.ipynb": FULL,
    "caf\\xe9.ipynb": FULL,
    "wrong_answers.ipynb": WRONG,
    "patch_otter.ipynb": NOTHING,
    "update_score.ipynb": NOTHING,
    "rewrite_tests.ipynb": NOTHING,
    "read_secrets.ipynb": NOTHING,
    "patch_posenc.ipynb": WRONG,
    "patch_numpy.ipynb": WRONG,
    "overwrite_files.ipynb": FULL,
    "kill_others.ipynb": FULL,
    "detached.ipynb": FULL,
    "memory_hog.ipynb": FULL,
    "fork_bomb.ipynb": None,
    "output_flood.ipynb": None,
    "posenc_shortcut.ipynb": [0, 3, 0, 2 / 3, 1],
    "non_string_source.ipynb": NOTHING,
}


def digest(paths: list[Path]) -> dict[str, str]:
    """SHA-256 of every file under ``paths``."""
    found = {}
    for top in paths:
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def leftover_processes() -> list[str]:
    """Processes of the sandboxes' users, or started by the detached-process attack."""
    found = []
    for proc in psutil.process_iter(["cmdline", "uids"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        uids = proc.info["uids"]
        if "hostile-fixture-detached-process" in cmdline or (
            uids and grade.FIRST_UID <= uids.real < grade.FIRST_UID + grade.UID_COUNT
        ):
            found.append(cmdline)
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    """The hostile folder graded once: its rows, the command's output, and what changed."""
    build.build_all(["02_mathematics"])
    work = tmp_path_factory.mktemp("hostile")
    folder = work / "submissions"
    shutil.copytree(HOSTILE, folder)
    shutil.copy(HOSTILE / "good.ipynb", folder / os.fsdecode(b"caf\xe9.ipynb"))
    shutil.copy(HOSTILE / "good.ipynb", folder / ".hidden.ipynb")
    protected = [folder, build.DIST / "02_mathematics", build.SOURCE / "02_mathematics"]
    before = digest(protected)
    out = work / "grades.csv"
    command = [sys.executable, str(ASSIGNMENTS / "grade.py"), str(folder),
               "--assignment", "02_mathematics", "--out", str(out),
               "--cell-timeout", "10", "--call-timeout", "5", "--timeout", "120",
               "--jobs", "2"]
    env = {**os.environ, "GRADING_CANARY": CANARY}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env,
                          cwd=work)
    assert done.returncode == 0, done.stderr
    csv_digest = hashlib.sha256(out.read_bytes()).hexdigest()
    time.sleep(5)  # the detached attack would rewrite results 3 s after it started
    with open(out, newline="", encoding="utf-8") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    return {"rows": rows, "stdout": done.stdout, "stderr": done.stderr, "out": out,
            "csv_digest": csv_digest, "before": before, "after": digest(protected),
            "work": work}


def scores(row: dict) -> list[float]:
    return [float(row[q]) for q in ("q1", "q2", "q3", "q4", "q5")]


def test_every_file_gets_a_row_and_dot_files_are_listed_as_skipped(graded) -> None:
    assert set(graded["rows"]) == set(EXPECTED)
    assert ".hidden.ipynb: skipped" in graded["stdout"]
    assert graded["rows"]["non_string_source.ipynb"]["status"] == "unreadable"
    assert "cell 7: its source is a int" in graded["rows"]["non_string_source.ipynb"]["reason"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_attack_earns_only_what_its_honest_answers_earn(graded, name: str) -> None:
    row = graded["rows"][name]
    assert float(row["total"]) <= 11 and float(row["possible"]) == 11
    if EXPECTED[name] is None:
        assert row["status"] in ("graded", "error"), row
        assert all(s <= f for s, f in zip(scores(row), FULL, strict=True)), row
    else:
        assert scores(row) == pytest.approx(EXPECTED[name], abs=1e-4), row


def test_posenc_shortcuts_are_refused_with_a_clear_reason(graded) -> None:
    reason = graded["rows"]["posenc_shortcut.ipynb"]["reason"]
    assert "posenc.wavelengths is not allowed in this assignment" in reason
    assert "posenc.variants.split_permutation is not allowed" in reason
    assert "posenc.analysis.offset_cosine_distance is not allowed" in reason


def test_memory_is_limited(graded) -> None:
    assert "MemoryError" in graded["rows"]["memory_hog.ipynb"]["reason"]


def test_nothing_hidden_reaches_the_results(graded) -> None:
    text = graded["out"].read_text(encoding="utf-8") + graded["stdout"] + graded["stderr"]
    assert CANARY not in text and "GRADING_CANARY" not in text
    assert "test_q2_other" not in text, "a hidden check's source"
    assert "BEGIN SOLUTION" not in text and "# SOLUTION" not in text, "the solutions"


def test_no_file_outside_the_sandbox_was_changed(graded) -> None:
    assert graded["after"] == graded["before"]
    assert hashlib.sha256(graded["out"].read_bytes()).hexdigest() == graded["csv_digest"]
    assert not (graded["work"] / "grades.csv.tmp").exists()


def test_no_process_outlives_grading(graded) -> None:
    assert leftover_processes() == []
