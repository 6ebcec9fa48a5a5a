"""A fresh checkout of this working tree in a temporary folder, for tests that run ``make``.

It holds what a new clone holds, as the working tree has it: every file that git tracks or
would add (untracked files that no ``.gitignore`` excludes), copied with its modification
time, and nothing that is generated or ignored (no ``assignments/dist``, ``_build``,
``grades.csv``). The course environment is not copied: ``.venv`` is a symbolic link to this
checkout's. Because ``requirements.txt`` and ``pyproject.toml`` keep their times, make finds
that environment up to date exactly when it is up to date here, and :func:`fresh_checkout`
checks that it is, so that a test never reinstalls the environment other tests are using.

Why a copy and not ``git clone``: a clone holds the last commit, so it would test what was
committed rather than the code being tested (a fix not committed yet), and its files all
get the time of the clone, newer than ``.venv/.installed``, so its first ``make`` would
reinstall the shared environment. Why not the repository itself: a test there would write
into the checkout people work in (``OUT=grades.csv`` of the README is a real file name), and
could not start from a state without ``assignments/dist``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Variables through which a calling make (``make test``) would hand its job server and
#: options to the make that a test runs; that make is a separate command, as a user runs it.
MAKE_VARIABLES = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT",
                  "MAKE_TERMERR")


def make_env(**extra: str) -> dict[str, str]:
    """This process's environment without a calling make's variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    env.update(extra)
    return env


def fresh_checkout(dest: Path) -> Path:
    """Copy the working tree into ``dest`` (which must not exist) as described above."""
    venv = ROOT / ".venv"
    if not (venv / ".installed").exists():
        pytest.fail(f"{venv} is not installed: run `make venv` first")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout
    dest.mkdir(parents=True)
    for name in sorted(set(os.fsdecode(n) for n in listed.split(b"\0") if n)):
        source = ROOT / name
        if not os.path.lexists(source):  # deleted in the working tree, not yet in git
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    (dest / ".venv").symlink_to(venv, target_is_directory=True)
    stale = subprocess.run(["make", "-q", "venv"], cwd=dest, env=make_env(),
                           capture_output=True, check=False)
    if stale.returncode != 0:
        pytest.fail("the course environment .venv is older than requirements.txt or "
                    "pyproject.toml: run `make venv` first (a test never reinstalls it)")
    return dest
