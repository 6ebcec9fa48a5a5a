"""Build the student and autograder versions of the assignments with otter assign.

Usage (``make assignments`` runs it)::

    python assignments/build.py [--force] [--jobs N] [--out DIR] [--source DIR] [NAME ...]

For every master notebook ``<source>/<name>/<name>.ipynb`` (``--source``, default
``assignments/source``; a graded offering uses a private copy) it writes

* ``<out>/<name>/student/<name>.ipynb``: the notebook handed out to students, without the
  solutions and without the hidden checks;
* ``<out>/<name>/autograder/``: the notebook with its solutions and the autograder zip file
  that ``grade.py`` grades submissions with.

otter assign also runs every check, hidden ones included, against the solutions and fails if
one of them does not pass: a successful build means that the solutions score full marks.

An assignment is rebuilt only when its master notebook, this script, ``requirements.txt`` or a
file of ``src/posenc`` is newer than its built versions; ``--force`` rebuilds every one.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grade import child_environment, skip_slow_iri_checker

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "source"
DIST = HERE / "dist"


def masters(source: Path = SOURCE) -> dict[str, Path]:
    """Every master notebook, by assignment name (``01_motivation``, ...), in course order."""
    found = {p.parent.name: p for p in sorted(source.glob("*/*.ipynb")) if p.stem == p.parent.name}
    if not found:
        raise FileNotFoundError(f"no master notebooks <name>/<name>.ipynb in {source}")
    return found


def student_notebook(name: str, out: Path = DIST) -> Path:
    """Path of the student version of assignment ``name``."""
    return out / name / "student" / f"{name}.ipynb"


def is_up_to_date(name: str, master: Path, out: Path = DIST) -> bool:
    """True if the built versions of ``name`` are newer than everything they are built from."""
    student = student_notebook(name, out)
    zips = list((out / name / "autograder").glob("*-autograder_*.zip"))
    if not student.exists() or len(zips) != 1:
        return False
    inputs = [master, Path(__file__).resolve(), ROOT / "requirements.txt"]
    inputs += (ROOT / "src" / "posenc").rglob("*.py")
    newest_input = max(p.stat().st_mtime for p in inputs)
    return min(student.stat().st_mtime, zips[0].stat().st_mtime) > newest_input


#: Times otter assign is tried when its kernel lost a race for a port (see lost_kernel_race).
KERNEL_RACE_ATTEMPTS = 3


def lost_kernel_race(output: str) -> bool:
    """Whether a failed otter assign only lost a race for a network port.

    A kernel picks free ports and binds them a moment later; two builds started together
    (``--jobs``) can pick the same port, and the second kernel dies with "Address already
    in use". That failure says nothing about the assignment, so the build is tried again.
    """
    return "Address already in use" in output and "Kernel died" in output


def build_one(name: str, master: Path, out: Path = DIST, *, run_tests: bool = True) -> float:
    """Run otter assign on one master notebook; return the seconds it took.

    With ``run_tests`` (the default) otter assign grades the solutions with every check and
    fails unless they score full marks.

    The versions are written to a temporary folder first and moved into place only when otter
    assign succeeds, so that a failed build never leaves outputs that look up to date.

    Raises
    ------
    RuntimeError
        With otter's output, if otter assign fails (for example because a check does not
        pass with the solutions in place).
    """
    start = time.monotonic()
    staging = out / f".{name}.building"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--assign", str(master), str(staging)]
    command += [] if run_tests else ["--no-run-tests"]
    for _attempt in range(KERNEL_RACE_ATTEMPTS):
        with tempfile.TemporaryDirectory(prefix="assign-") as stub:
            env = child_environment(Path(stub))
            done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        if done.returncode == 0 or not lost_kernel_race(done.stdout + done.stderr):
            break
        shutil.rmtree(staging, ignore_errors=True)  # the failed attempt's partial output
        staging.mkdir(parents=True)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"otter assign failed for {name}:\n{done.stdout}\n{done.stderr}")
    shutil.rmtree(out / name, ignore_errors=True)
    staging.rename(out / name)
    return time.monotonic() - start


def build_all(
    names: list[str] | None = None,
    *,
    out: Path = DIST,
    source: Path = SOURCE,
    force: bool = False,
    jobs: int = 2,
    run_tests: bool = True,
) -> dict[str, float | None]:
    """Build the assignments ``names`` (default: all); return the seconds each took.

    ``None`` marks an assignment that was already up to date and was not rebuilt.
    """
    available = masters(source)
    unknown = sorted(set(names or []) - set(available))
    if unknown:
        raise ValueError(f"unknown assignments {unknown}; available: {sorted(available)}")
    selected = {n: available[n] for n in (names or available)}
    todo = {n: m for n, m in selected.items() if force or not is_up_to_date(n, m, out)}
    seconds: dict[str, float | None] = {n: None for n in selected}
    out.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {
            pool.submit(build_one, n, m, out, run_tests=run_tests): n for n, m in todo.items()
        }
        for future in concurrent.futures.as_completed(futures):
            seconds[futures[future]] = future.result()
    return seconds


def assign(master: Path, result: Path, run_tests: bool = True) -> None:
    """Run otter assign in this process (``build.py --assign MASTER RESULT [--no-run-tests]``)."""
    skip_slow_iri_checker()
    from otter.assign import main as otter_assign

    otter_assign(str(master), str(result), no_pdfs=True, no_run_tests=not run_tests)
    for notebook in (result / "student").glob("*.ipynb"):
        lab_ready(notebook)


#: The kernelspec ``ipykernel`` installs: with it JupyterLab opens a notebook unmodified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def lab_ready(notebook: Path) -> None:
    """Make a student notebook read in JupyterLab as written.

    * otter writes its check-all cell as ``---`` (a rule) followed by a sentence;
      jupyterlab-myst reads a cell that starts with ``---`` as YAML front matter
      and the sentence disappears. ``***`` draws the same rule.
    * The kernelspec becomes the one ``ipykernel`` installs, so that JupyterLab
      does not mark the notebook as modified when it opens it.
    """
    import json

    nb = json.loads(notebook.read_text(encoding="utf-8"))
    nb.setdefault("metadata", {})["kernelspec"] = dict(KERNELSPEC)
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown" and source.startswith("---"):
            cell["source"] = "***" + source[3:]
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    notebook.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--assign"]:
        assign(Path(argv[1]), Path(argv[2]), run_tests="--no-run-tests" not in argv)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="assignments to build (default: all)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--jobs", type=int, default=2, help="assignments built at the same time")
    parser.add_argument("--out", type=Path, default=DIST, help="output folder")
    parser.add_argument("--source", type=Path, default=SOURCE,
                        help="folder of master notebooks (default: assignments/source)")
    args = parser.parse_args(argv)
    # Relative to where the command started, whatever folder a child process runs in.
    args.source, args.out = args.source.resolve(), args.out.resolve()
    start = time.monotonic()
    try:
        seconds = build_all(args.names or None, out=args.out, source=args.source,
                            force=args.force, jobs=args.jobs)
    except (RuntimeError, ValueError, FileNotFoundError) as error:
        print(error, file=sys.stderr)
        return 1
    for name, took in seconds.items():
        state = "up to date" if took is None else f"built in {took:.1f} s"
        student = os.path.relpath(student_notebook(name, args.out))
        print(f"{name}: {state}; student notebook {student}")
    print(f"assignments done in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
