"""A quick count, without a browser, of what each chapter shows on first load.

Usage::

    python tools/page_budget.py [NOTEBOOK ...]     # default: chapters/*.ipynb

For each notebook it prints the words of prose a reader sees before clicking
anything (Markdown outside the "How we know" dropdowns and the solutions,
plus figure captions), the words one click away, and the number of
``assert`` statements (plain ``assert`` and ``np.testing.assert_*`` calls).

It is an estimate to write by: the browser test
(``tests/browser/test_book.py::test_prose_budget``) counts the built page and
is the one that holds the budget of 2,500 words.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 2500

_FENCE = re.compile(r"^(`{3,}|:{3,})(.*)$")
_ASSERT = re.compile(r"^\s*assert\b|\bassert_(?:allclose|array_equal|equal|array_less|"
                     r"almost_equal|array_almost_equal|raises)\b|\bpytest\.raises\b", re.M)


def _words(text: str) -> int:
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)  # display maths
    text = re.sub(r"\$[^$\n]+\$", " x ", text)  # inline maths: one word
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)  # roles: their text
    text = re.sub(r"`[^`]*`", " x ", text)  # inline code: one word
    text = re.sub(r"^\s*%.*$", " ", text, flags=re.M)  # MyST comments
    text = re.sub(r"^\s*:[\w-]+:.*$", " ", text, flags=re.M)  # directive options
    return sum(1 for w in text.split() if re.search(r"[A-Za-z0-9]", w))


def split_markdown(text: str) -> tuple[str, str]:
    """The shown and the hidden part of one Markdown cell."""
    shown, hidden = [], []
    stack: list[tuple[str, bool]] = []  # open fences: (marker, hides its body)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line.strip())
        hiding = any(h for _, h in stack)
        if m and stack and m.group(1)[0] == stack[-1][0][0] and len(m.group(1)) >= len(
            stack[-1][0]
        ) and not m.group(2).strip():
            stack.pop()
        elif m and m.group(2).strip():
            head = m.group(2).strip()
            opts = []
            j = i + 1
            while j < len(lines) and re.match(r"^\s*:[\w-]+:", lines[j]):
                opts.append(lines[j])
                j += 1
            dropdown = any("dropdown" in o for o in opts if o.strip().startswith(":class:"))
            code = not head.startswith("{") or head.startswith(("{code", "{math"))
            hides = dropdown or head.startswith(("{dropdown", "{toggle")) or code
            (hidden if hiding or dropdown else shown).append(head if not code else "")
            stack.append((m.group(1), hides))
            i = j
            continue
        else:
            (hidden if hiding else shown).append(line)
        i += 1
    return "\n".join(shown), "\n".join(hidden)


def count(path: Path) -> dict[str, int]:
    """Shown words, hidden words and asserts of one notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    shown = hidden = asserts = 0
    in_solution = False
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code":
            asserts += len(_ASSERT.findall(text))
            caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption")
            if caption and "remove-cell" not in tags:
                n = _words(caption)
                if in_solution or "hide-cell" in tags or "hide-output" in tags:
                    hidden += n
                else:
                    shown += n
            continue
        if cell["cell_type"] != "markdown" or "remove-cell" in tags:
            continue
        if re.match(r"\s*(```+|:::+)\{solution-start\}", text):
            in_solution = True
        if in_solution:
            hidden += _words(text)
        else:
            a, b = split_markdown(text)
            shown += _words(a)
            hidden += _words(b)
        if re.match(r"\s*(```+|:::+)\{solution-end\}", text):
            in_solution = False
    return {"shown": shown, "hidden": hidden, "asserts": asserts}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or sorted((ROOT / "chapters").glob("*.ipynb"))
    print(f"{'notebook':45} {'shown':>6} {'hidden':>7} {'asserts':>8}")
    over = 0
    for path in paths:
        c = count(path)
        flag = "  over budget" if c["shown"] > BUDGET else ""
        over += bool(flag)
        print(f"{path.name:45} {c['shown']:6} {c['hidden']:7} {c['asserts']:8}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
