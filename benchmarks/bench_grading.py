"""Time to grade a class with the sandboxed grader, and what the sandbox costs.

Prints
(a) the wall time of ``grade.py`` on a folder of ``--count`` copies (default 300) of the
    honest sample submission of assignment 2, at ``--jobs 2``, and the submissions per
    minute; the target is at most 600 s for 300 submissions on two cores;
(b) the time one submission spends in its sandbox (bubblewrap, a fresh user, PID and
    network namespace, limits) divided by the time the same runner takes without the
    sandbox (``--unsafe``), and their difference: the per-submission overhead of the
    sandbox. Both are timed in turns, ``--repeat`` times each, one at a time, and each keeps
    its median, so that the machine's load falls on both alike;
(c) the start of an empty sandbox (``true`` inside bubblewrap, as the sandbox's user)
    against the start of ``true`` itself: the fixed cost of the walls alone.

Run with ``make bench`` or ``.venv/bin/python benchmarks/bench_grading.py [--count N]``
after ``make assignments``.

With ``BENCH_QUICK=1`` (as the tests run it) the defaults are 4 copies and 2
repetitions: the numbers then only show that the benchmark runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "assignments"
GOOD = ASSIGNMENTS / "fixtures" / "02_mathematics" / "good.ipynb"
sys.path.insert(0, str(ASSIGNMENTS))

import answer_codec  # noqa: E402
import grade  # noqa: E402


def grade_class(count: int, jobs: int) -> tuple[float, int]:
    """Seconds to grade ``count`` copies of the good notebook; how many got full marks."""
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        for i in range(count):
            shutil.copy(GOOD, folder / f"student{i:03d}.ipynb")
        out = Path(tmp) / "grades.csv"
        start = time.monotonic()
        subprocess.run([sys.executable, str(ASSIGNMENTS / "grade.py"), str(folder),
                        "--assignment", "02_mathematics", "--out", str(out),
                        "--jobs", str(jobs), "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        with open(out, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        full = sum(1 for row in rows if row["total"] == row["possible"])
    return seconds, full


def sandbox_overhead(repeat: int) -> tuple[float, float]:
    """Median seconds of one sandboxed run and of one unsandboxed run of the good notebook."""
    cells, _, _ = grade.prepare(GOOD, "02_mathematics")
    plan = answer_codec.pack({"names": ["lambda_min"], "calls": {}, "not_allowed": {},
                              "not_allowed_in_functions": {}, "cell_timeout": 60.0,
                              "call_timeout": 10.0})
    with tempfile.TemporaryDirectory() as tmp:
        safe = grade.Sandbox(grade.sandbox_available(), mpl_cache=grade.matplotlib_cache(
            Path(tmp)))
        unsafe = grade.Sandbox(None)
        times: dict[str, list[float]] = {"sandbox": [], "direct": []}
        for _ in range(repeat):
            for name, sandbox in (("sandbox", safe), ("direct", unsafe)):
                _, status, message, seconds = grade.run_in_sandbox(
                    sandbox, plan, cells, 120)
                assert status == "graded", message
                times[name].append(seconds)
    return statistics.median(times["sandbox"]), statistics.median(times["direct"])


def empty_sandbox(repeat: int) -> tuple[float, float]:
    """Median seconds to run ``true`` in an empty sandbox and directly."""
    sandbox = grade.Sandbox(grade.sandbox_available())
    flags = grade._namespace_flags()
    walls = [sandbox.bwrap, *flags, "--ro-bind", "/usr", "/usr", "--proc", "/proc",
             "--dev", "/dev", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
             "--symlink", "usr/lib64", "/lib64", "--tmpfs", "/tmp"]
    if os.geteuid() == 0:
        walls += ["setpriv", f"--reuid={grade.FIRST_UID}", f"--regid={grade.FIRST_UID}",
                  "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
    times: dict[str, list[float]] = {"sandbox": [], "direct": []}
    for _ in range(repeat):
        for name, command in (("sandbox", [*walls, "/usr/bin/true"]),
                              ("direct", ["/usr/bin/true"])):
            start = time.perf_counter()
            subprocess.run(command, check=True)
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["sandbox"]), statistics.median(times["direct"])


def main() -> None:
    """Print (a), (b) and (c)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    quick = os.environ.get("BENCH_QUICK", "") not in ("", "0")
    parser.add_argument("--count", type=int, default=4 if quick else 300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2 if quick else 15)
    args = parser.parse_args()
    if grade.sandbox_available() is None:
        print("bubblewrap cannot run here: nothing to measure")
        return
    sandboxed, direct = sandbox_overhead(args.repeat)
    print(f"(b) one submission: {sandboxed:.2f} s in the sandbox, {direct:.2f} s without; "
          f"ratio {sandboxed / direct:.2f}, overhead {sandboxed - direct:+.2f} s "
          f"(median of {args.repeat})")
    bare, plain = empty_sandbox(4 * args.repeat)
    print(f"(c) an empty sandbox starts in {bare * 1000:.0f} ms, a process alone in "
          f"{plain * 1000:.0f} ms (median of {4 * args.repeat})")
    seconds, full = grade_class(args.count, args.jobs)
    print(f"(a) {args.count} submissions at --jobs {args.jobs}: {seconds:.0f} s "
          f"({args.count / seconds * 60:.0f} per minute, {full} with full marks); "
          f"target for 300: at most 600 s; load average {os.getloadavg()[0]:.1f}")
    print(json.dumps({"count": args.count, "seconds": round(seconds, 1),
                      "sandbox_s": round(sandboxed, 3), "direct_s": round(direct, 3)}))


if __name__ == "__main__":
    main()
