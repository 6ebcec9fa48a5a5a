"""Numbers glued into the prose of the chapters read as numbers.

myst-nb formats ``{glue:text}`name:.2f``` from the stored ``text/plain`` of
the glued value. A NumPy scalar stores its repr (``np.float64(2.11...)`` under
NumPy 2), which the format cannot read: the book then shows nothing where the
number should be. Every glued value must therefore be stored as a plain
Python number or string (glue ``float(x)``, ``int(x)`` or a formatted string), and
a float rounded (``round(x, 10)``): its last digits depend on the CPU and would
make the stored output differ from a re-run on another machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
GLUED = "application/papermill.record/text/plain"


def glued_values(path: Path) -> dict[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name and GLUED in output.get("data", {}):
                found[name] = "".join(output["data"][GLUED])
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glued_values_are_plain(path: Path) -> None:
    numpy_reprs = {k: v for k, v in glued_values(path).items() if v.startswith("np.")}
    assert numpy_reprs == {}, f"glue float(x) or int(x), not a NumPy scalar: {numpy_reprs}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glued_floats_are_rounded(path: Path) -> None:
    # All 17 digits of a float depend on the order of its sums, which another CPU or
    # BLAS kernel changes: the stored value would then differ from a re-run (nbval).
    long = {
        k: v
        for k, v in glued_values(path).items()
        if re.fullmatch(r"-?\d+\.\d+", v) and len(v.lstrip("-").replace(".", "").lstrip("0")) > 12
    }
    assert long == {}, f"glue round(x, 10) (or a formatted string), not a full float: {long}"


def test_the_check_sees_glued_values() -> None:
    assert sum(len(glued_values(p)) for p in CHAPTERS) > 50
