"""The code and the notebooks follow the project's ruff configuration (pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff():
    exe = Path(sys.executable).with_name("ruff")
    return str(exe) if exe.exists() else shutil.which("ruff")


@pytest.mark.skipif(ruff() is None, reason="ruff is not installed")
def test_ruff_check_is_clean():
    paths = [
        p
        for p in ("src", "tests", "benchmarks", "chapters", "assignments", "tools")
        if (ROOT / p).exists()
    ]
    result = subprocess.run(
        [ruff(), "check", "--no-cache", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
