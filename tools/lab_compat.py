"""Make the chapter notebooks read in JupyterLab (with jupyterlab-myst) as they do in the book.

Usage::

    python tools/lab_compat.py [--check] [NOTEBOOK ...]   # default: chapters/*.ipynb

The script is idempotent: running it twice changes nothing the second time,
and ``--check`` exits with status 1 (naming the notebooks) if a run would
change a file. Run it after editing or re-executing a chapter
(``make notebooks`` runs it last). It changes only what JupyterLab reads and
the book ignores:

* **kernelspec**: set to the one ``ipykernel`` installs (``display_name``
  "Python 3 (ipykernel)"), so that JupyterLab does not mark a notebook as
  modified the moment it opens it.
* **Solutions**: a ``{solution-start}`` or ``{solution-end}`` directive that
  shares a markdown cell with text is split into a cell of its own; then
  every cell between a ``{solution-start}`` cell and its
  ``{solution-end}`` cell gets JupyterLab's ``jupyter.source_hidden`` (and, for
  code, ``jupyter.outputs_hidden``) flag, so the solution is collapsed until
  the reader clicks it open, as the book's dropdown is. myst-nb and
  sphinx-exercise ignore these flags. As JupyterLab shows a collapsed cell by
  its first line, each such cell starts with a comment line ``% Solution``
  (Markdown) or ``# Solution`` (code), which neither renders.
* **Evidence**: a code cell tagged ``hide-input``, ``hide-cell`` or
  ``hide-output`` (the book's "How we know: show the ..." toggle) gets the
  matching ``jupyter.source_hidden`` / ``jupyter.outputs_hidden`` flags, and a
  hidden source starts with a ``# How we know`` line, which JupyterLab shows
  on the collapsed cell; the same line, ``# How we know: what it checks``,
  names the book's button for that cell (myst-nb's per-cell
  ``code_prompt_show``), so a run of hidden cells reads as a list of checks.
  The prose of the evidence layer is a dropdown admonition
  (``:class: dropdown``) titled "How we know: ...", which the book and
  jupyterlab-myst both render closed.
* **Explorers**: a stored output that holds a widget view keeps only its
  plain-text hint ("Run this cell to get the sliders ..."), and the saved
  widget state (``metadata.widgets``, PNG bytes of one machine's rendering) is
  dropped. Before the cell runs JupyterLab shows the hint; running it makes
  the live widget. The explorer cells carry ``remove-output`` (the book shows
  static figures instead) and ``nbval-ignore-output``.
* **Maths macros**: a first cell (``remove-cell``) whose front matter gives
  jupyterlab-myst the book's TeX macros (``\\PE``, ...) from ``_config.yml``.
* **References to other chapters**: jupyterlab-myst resolves a reference
  only within its notebook. A last cell (``remove-cell``), "From other
  chapters", holds a stand-in for every label of another chapter that this one
  refers to: the equation itself, the figure's caption, the section's heading,
  each saying which chapter it is from (with a link). In JupyterLab the
  reference resolves to it; numbers are then the notebook's own.
* **Links to pages**: ``{doc}`text <../page>``` becomes ``[text](../page.md)``
  when ``page.md`` exists, a form the book and JupyterLab both follow.
* **Notebooks to download** (the assignment links): JupyterLab would download
  a notebook offered with ``{download}``; after each such cell a markdown
  cell, tagged ``remove-cell``, links to the same notebook in a form that
  JupyterLab opens in a tab.
* **Citations**: jupyterlab-myst resolves no citation role (it has no
  bibliography), so ``{cite:t}`key``` becomes ``[Author (year)](#key)`` and
  ``{cite:p}`a,b``` becomes ``([A, year](#a); [B, year](#b))``, labelled
  as the book's bibliography labels its entries. In the book the link goes
  to the entry on the bibliography page (``_ext/course_book.py`` makes each
  key a label there); in JupyterLab to the work's entry under "Works cited"
  in the last cell. Authors may keep writing ``{cite:p}`` and ``{cite:t}``:
  this script converts them.
* **Figure captions**: the book takes a figure's caption and label from the
  code cell's ``mystnb.figure`` metadata, which JupyterLab does not read.
  After each such cell the script keeps a markdown cell, tagged
  ``remove-cell`` (so the book never parses it), that holds the caption as a
  MyST figure with the same label: in JupyterLab the caption shows under the
  picture and ``{numref}`` to the figure resolves. The cell is regenerated
  from the metadata on every run, so a changed caption is followed.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The kernelspec that ``python -m ipykernel install`` writes (and the venv has).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: Cell metadata key that marks the cells this script generated.
MARK = "lab_compat"

_SOLUTION_START = re.compile(r"^\s*(```+|:::+)\{solution-start\}")
_SOLUTION_END = re.compile(r"^\s*(```+|:::+)\{solution-end\}")


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _set_flag(cell: dict, key: str, value: bool) -> None:
    jupyter = cell.setdefault("metadata", {}).setdefault("jupyter", {})
    jupyter[key] = value


_GATE = re.compile(
    r"((?:```+|:::+)\{solution-(?:start|end)\}[^\n]*\n"  # the directive's first line,
    r"(?::[\w-]+:[^\n]*\n)*"  # its options,
    r"(?:```+|:::+)[ \t]*(?:\n|$))"  # and its closing fence
)


def split_solution_gates(cells: list[dict]) -> list[dict]:
    """Give every ``{solution-start}``/``{solution-end}`` directive a cell of its own.

    JupyterLab hides whole cells: text sharing a cell with the gate would stay
    in view. The book reads the gates the same way in one cell or several.
    """
    out = []
    for cell in cells:
        text = _source(cell)
        markdown = cell["cell_type"] == "markdown"
        parts = [p for p in _GATE.split(text) if p.strip()] if markdown else []
        if len(parts) <= 1:
            out.append(cell)
            continue
        for k, part in enumerate(parts):
            piece = copy.deepcopy(cell)
            piece["id"] = cell["id"] if k == 0 else f"{cell['id'][:56]}-s{k}"
            piece["source"] = part.strip("\n").splitlines(keepends=True)
            out.append(piece)
    return out


def collapse_solutions(cells: list[dict]) -> None:
    """Hide (collapse) every cell strictly between a solution's start and end cells.

    A cell outside every solution loses a collapse flag and a solution first
    line left from an earlier layout (the evidence layer's flags are set again
    by :func:`collapse_evidence`; the generated cells keep theirs).
    """
    inside = False
    for cell in cells:
        text = _source(cell) if cell["cell_type"] == "markdown" else ""
        if _SOLUTION_START.match(text):
            inside = True
            continue
        if _SOLUTION_END.match(text):
            inside = False
            continue
        if not inside and not cell.get("metadata", {}).get(MARK):
            jupyter = cell.get("metadata", {}).get("jupyter", {})
            jupyter.pop("source_hidden", None)
            jupyter.pop("outputs_hidden", None)
            if "jupyter" in cell.get("metadata", {}) and not jupyter:
                del cell["metadata"]["jupyter"]
            line = SOLUTION_LINE.get(cell["cell_type"])
            if line and _source(cell).startswith(line):
                cell["source"] = _source(cell)[len(line):].splitlines(keepends=True)
        if inside:
            _set_flag(cell, "source_hidden", True)
            if cell["cell_type"] == "code":
                _set_flag(cell, "outputs_hidden", True)
            _label_first_line(cell)


#: First line of a hidden solution cell: JupyterLab shows a collapsed cell as its
#: first line, which would otherwise give away the start of the answer. A MyST
#: comment (``%``) in Markdown, a Python comment in code: neither renders.
SOLUTION_LINE = {"markdown": "% Solution\n", "code": "# Solution\n"}


def _label_first_line(cell: dict) -> None:
    line = SOLUTION_LINE.get(cell["cell_type"])
    text = _source(cell)
    if line and not text.startswith(line):
        cell["source"] = (line + text).splitlines(keepends=True)


#: First line of a collapsed evidence cell: JupyterLab shows a collapsed cell by
#: its first line, so the reader sees the layer's name there, as in the book.
EVIDENCE_LINE = "# How we know"


def collapse_evidence(cells: list[dict]) -> None:
    """Collapse the evidence layer's code cells in JupyterLab as the book hides them.

    ``hide-input`` collapses the source, ``hide-output`` the outputs, and
    ``hide-cell`` both (JupyterLab's ``jupyter.source_hidden`` and
    ``jupyter.outputs_hidden``). A hidden source that does not start with a
    ``# How we know`` comment gets one as its first line.
    """
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & {"hide-input", "hide-cell"}:
            _set_flag(cell, "source_hidden", True)
            text = _source(cell)
            if not text.startswith(EVIDENCE_LINE):
                cell["source"] = (EVIDENCE_LINE + "\n" + text).splitlines(keepends=True)
            _label_button(cell)
        if tags & {"hide-output", "hide-cell"}:
            _set_flag(cell, "outputs_hidden", True)


def _label_button(cell: dict) -> None:
    """The book's button names what the hidden cell checks, from its first line.

    ``# How we know: the tie holds`` becomes the button "How we know: the tie
    holds" (myst-nb's per-cell ``code_prompt_show``), so that a run of hidden
    cells reads as a list of checks, not as the same button repeated. A bare
    ``# How we know`` keeps the book's default label.
    """
    first = _source(cell).split("\n", 1)[0]
    mystnb = cell.setdefault("metadata", {}).setdefault("mystnb", {})
    topic = first[len(EVIDENCE_LINE):].lstrip(":").strip()
    if topic:
        mystnb["code_prompt_show"] = f"How we know: {topic}"
        mystnb["code_prompt_hide"] = "Hide the check"
    else:
        mystnb.pop("code_prompt_show", None)
        mystnb.pop("code_prompt_hide", None)
        if not mystnb:
            del cell["metadata"]["mystnb"]


def strip_widget_views(nb: dict) -> None:
    """Keep only the plain-text fallback of outputs that hold a widget view."""
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                data.setdefault("text/plain", "Run this cell to get the widget.")
    nb.get("metadata", {}).pop("widgets", None)


def _caption_cell(figure: dict) -> dict:
    label, caption = figure["name"], figure.get("caption", "").strip()
    text = f":::{{figure}}\n:label: {label}\n\n{caption}\n:::"
    cell_id = re.sub(r"[^A-Za-z0-9_-]", "-", f"caption-{label}")[:64]
    return {
        "cell_type": "markdown",
        "id": cell_id,
        "metadata": {"tags": ["remove-cell"], MARK: "figure-caption"},
        "source": text.splitlines(keepends=True),
    }


def caption_figures(cells: list[dict]) -> list[dict]:
    """Cells with one JupyterLab-only caption cell after each labelled figure cell."""
    kept = [c for c in cells if c.get("metadata", {}).get(MARK) != "figure-caption"]
    out: list[dict] = []
    for cell in kept:
        out.append(cell)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if cell["cell_type"] == "code" and figure.get("name"):
            # Never collapsed, even under a hidden figure: JupyterLab does not render a
            # collapsed Markdown cell, and a reference to the figure's label would then
            # find nothing.
            out.append(_caption_cell(figure))
    return out


_DOC_ROLE = re.compile(r"\{doc\}`([^`<]+?)\s*<([^>`]+)>`")
_DOWNLOAD_NOTEBOOK = re.compile(r"\{download\}`[^`<]*<([^>`]+\.ipynb)>`")


def open_in_lab(cells: list[dict]) -> list[dict]:
    """Cells with a JupyterLab-only link after each cell that offers a notebook to download.

    The book needs MyST's ``{download}`` role (it copies the file into the
    build), but in JupyterLab that role is a link to ``/files/...``, which
    the server sends as an attachment: the student would get a download, not
    the notebook. After each such cell the script keeps a markdown cell,
    tagged ``remove-cell`` (the book never sees it), with a plain link to the
    same notebook, which JupyterLab opens in a tab of its own.
    """
    kept = [c for c in cells if c.get("metadata", {}).get(MARK) != "open-in-lab"]
    out: list[dict] = []
    for cell in kept:
        out.append(cell)
        if cell["cell_type"] != "markdown":
            continue
        targets = list(dict.fromkeys(_DOWNLOAD_NOTEBOOK.findall(_source(cell))))
        if not targets:
            continue
        links = ", ".join(f"[{Path(t).name}]({t})" for t in targets)
        text = f"**In JupyterLab:** open {links} in a tab of its own (run `make lab` first)."
        out.append(
            {
                "cell_type": "markdown",
                "id": re.sub(r"[^A-Za-z0-9_-]", "-", f"open-{cell.get('id', 'cell')}")[:64],
                "metadata": {"tags": ["remove-cell"], MARK: "open-in-lab"},
                "source": text.splitlines(keepends=True),
            }
        )
    return out


def link_pages(cells: list[dict], folder: Path) -> None:
    """``{doc}`text <../page>``` to a Markdown page becomes ``[text](../page.md)``.

    Both the book (myst-parser resolves a link to a source file as a link to
    its page) and JupyterLab (which opens the file) follow the link form; the
    ``{doc}`` role's extensionless target is, in JupyterLab, a folder or nothing.
    """

    def replace(match: re.Match) -> str:
        text, target = match.group(1), match.group(2)
        if (folder / f"{target}.md").is_file():
            return f"[{text}]({target}.md)"
        return match.group(0)

    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = _source(cell)
            new = _DOC_ROLE.sub(replace, text)
            if new != text:
                cell["source"] = new.splitlines(keepends=True)


def book_macros(config: Path = ROOT / "_config.yml") -> dict[str, str]:
    """The book's TeX macros (``\\PE``, ...) from the MathJax settings of ``_config.yml``."""
    import yaml

    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    tex = settings.get("sphinx", {}).get("config", {}).get("mathjax3_config", {}).get("tex", {})
    macros = {}
    for name, value in tex.get("macros", {}).items():
        if isinstance(value, list):  # [definition, number of arguments]
            value = value[0] if len(value) == 1 or value[1] == 0 else None
        if isinstance(value, str):
            macros[f"\\{name}"] = value
    return macros


def front_matter(cells: list[dict], macros: dict[str, str]) -> list[dict]:
    """Cells with a JupyterLab-only first cell whose front matter gives jupyterlab-myst the macros.

    jupyterlab-myst reads front matter from the first markdown cell only; the
    book ignores the cell (``remove-cell``) and takes the macros from
    ``_config.yml``.
    """
    kept = [c for c in cells if c.get("metadata", {}).get(MARK) != "front-matter"]
    if not macros:
        return kept
    lines = ["---\n", "math:\n"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}\n" for k, v in sorted(macros.items())]
    lines.append("---")
    cell = {
        "cell_type": "markdown",
        "id": "lab-front-matter",
        "metadata": {"tags": ["remove-cell"], MARK: "front-matter"},
        "source": lines,
    }
    return [cell, *kept]


_ROLE_REF = re.compile(r"\{(?:numref|ref|eq)\}`(?:[^`<]*<)?([\w-]+)>?`")
_MATH = re.compile(r"\$\$((?:(?!\$\$).)*?)\$\$ *\(([\w-]+)\)", re.S)
_MATH_DIRECTIVE = re.compile(r"```\{math\}\n:label: *([\w-]+)\n(.*?)\n```", re.S)
_SECTION = re.compile(r"^\(([\w-]+)\)=\s*\n+#+\s*(.+)$", re.M)
_EXERCISE = re.compile(r"\{exercise\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*?:label: *([\w-]+)")
#: A label before a box (``{warning}``, ``{admonition} Title``, ...), or before anything else.
_BOX = re.compile(r"^\(([\w-]+)\)=\s*\n+(?:```+|:::+)\{([\w-]+)\} *([^\n]*)$", re.M)
_ANY_LABEL = re.compile(r"^\(([\w-]+)\)=", re.M)


def _title(nb: dict) -> str:
    for cell in nb["cells"]:
        match = re.search(r"^# +(.+)$", _source(cell), re.M)
        if cell["cell_type"] == "markdown" and match:
            return match.group(1).strip()
    return "another chapter"


def targets(nb: dict, link: str) -> dict[str, str]:
    """Every label the notebook defines, with a JupyterLab-only stand-in for it.

    The stand-in, placed in another notebook, defines the same label (so that a
    reference to it resolves there) and says where the original is.
    """
    where = f"[{_title(nb)}]({link})"
    found: dict[str, str] = {}
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get(MARK):
            continue
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if cell["cell_type"] == "code" and figure.get("name"):
            caption = figure.get("caption", "").strip()
            found[figure["name"]] = (
                f":::{{figure}}\n:label: {figure['name']}\n\n{caption} (In {where}.)\n:::"
            )
        if cell["cell_type"] != "markdown":
            continue
        text = _source(cell)
        for body, label in _MATH.findall(text):
            found[label] = f"$${body}$$ ({label})\n\nIn {where}."
        for label, body in _MATH_DIRECTIVE.findall(text):
            found[label] = f"```{{math}}\n:label: {label}\n{body}\n```\n\nIn {where}."
        for label, heading in _SECTION.findall(text):
            found[label] = f"({label})=\n#### {heading.strip()}\n\nIn {where}."
        for label in _EXERCISE.findall(text):
            found.setdefault(label, f"({label})=\n#### An exercise\n\nIn {where}.")
        for label, kind, title in _BOX.findall(text):
            name = title.strip() or kind.capitalize()
            found.setdefault(label, f"({label})=\n#### {name}\n\nIn {where}.")
        for label in _ANY_LABEL.findall(text):
            found.setdefault(label, f"({label})=\n#### A passage\n\nIn {where}.")
    return found


_TERM = re.compile(r"\{term\}`(?:[^`<]*<)?([^`<>]+?)>?`")
_CITE = re.compile(r"\{cite(?::(\w+))?\}`([^`]+)`")
#: A converted citation: a link whose target is a key of ``references.bib``.
_CITE_LINK = re.compile(r"\]\(#([\w:-]+)\)")


def _latex_text(text: str) -> str:
    """A BibTeX field as plain text: braces and accent commands decoded."""
    from pybtex.richtext import Text

    return Text.from_latex(text).render_as("text")


def citation_labels(path: Path = ROOT / "references.bib") -> dict[str, tuple[str, str]]:
    """``key -> (who, year)`` for every work: "Surname", "A and B" or "A et al.".

    The same rule as the book's bibliography labels (``AuthorYearLabels`` in
    ``_ext/course_book.py``), so a citation reads as the entry it links to.
    """
    from pybtex.database import parse_file

    labels = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_latex_text(" ".join(p.last_names)) for p in people]
        if not names:
            who = _latex_text(entry.fields.get("organization", key))
        elif len(names) <= 2:
            who = " and ".join(names)
        else:
            who = f"{names[0]} et al."
        labels[key] = (who, entry.fields.get("year", "n.d."))
    counts: dict[tuple[str, str], int] = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    twins = sorted(f"{who}, {year}" for (who, year), n in counts.items() if n > 1)
    if twins:  # the book would label them 1990a, 1990b: not handled here
        raise ValueError(f"references.bib: two works share the label {twins[0]!r}")
    return labels


def link_citations(cells: list[dict], labels: dict[str, tuple[str, str]]) -> None:
    """Rewrite ``{cite:t}`` and ``{cite:p}`` (or ``{cite}``) roles as links (see above)."""

    def replace(match: re.Match) -> str:
        kind = match.group(1) or "p"
        keys = [k.strip() for k in match.group(2).split(",") if k.strip()]
        missing = [k for k in keys if k not in labels]
        if missing:
            raise ValueError(f"citation key {missing[0]!r} is not in references.bib")
        if kind == "t":
            return "; ".join(f"[{labels[k][0]} ({labels[k][1]})](#{k})" for k in keys)
        if kind == "p":
            return "(" + "; ".join(f"[{labels[k][0]}, {labels[k][1]}](#{k})" for k in keys) + ")"
        raise ValueError(f"{match.group(0)}: only {{cite:t}} and {{cite:p}} are converted")

    for cell in cells:
        if cell["cell_type"] == "markdown" and cell.get("metadata", {}).get(MARK) is None:
            text = _source(cell)
            new = _CITE.sub(replace, text)
            if new != text:
                cell["source"] = new.splitlines(keepends=True)


def glossary_entries(path: Path = ROOT / "glossary.md") -> dict[str, str]:
    """The entries of the book's glossary: term -> its block (term line and indented text)."""
    if not path.is_file():
        return {}
    match = re.search(r"```\{glossary\}\n(.*?)\n```", path.read_text(encoding="utf-8"), re.S)
    entries: dict[str, str] = {}
    for block in re.split(r"\n(?=\S)", match.group(1).strip()) if match else []:
        entries[block.splitlines()[0].strip()] = block.rstrip()
    return entries


def _glossary_for(cells: list[dict]) -> str:
    entries = {k.lower(): v for k, v in glossary_entries().items()}
    used: list[str] = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for term in _TERM.findall(_source(cell)):
                block = entries.get(term.strip().lower())
                if block and block not in used:
                    used.append(block)
    # jupyterlab-myst wants a definition list ("Term" then ": definition").
    return "\n\n".join(
        b.splitlines()[0] + "\n: " + " ".join(line.strip() for line in b.splitlines()[1:])
        for b in used
    )


def bibliography(path: Path = ROOT / "references.bib") -> dict[str, str]:
    """One line per work of ``references.bib``: authors (year). *Title*. Venue."""
    from pybtex.database import parse_file

    def plain(text: str) -> str:
        return re.sub(r"[{}]", "", text).replace("\\&", "&").strip()

    works = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = [plain(" ".join(p.last_names)) for p in entry.persons.get("author", [])]
        if len(people) > 2:
            authors = f"{people[0]} et al."
        else:
            authors = " and ".join(people) or plain(entry.fields.get("organization", ""))
        fields = entry.fields
        venue = fields.get("journal") or fields.get("booktitle") or fields.get("publisher", "")
        line = (
            f"{authors} ({plain(fields.get('year', 'n.d.'))}). *{plain(fields.get('title', ''))}*"
        )
        line += "" if line.endswith(("?*", "!*", ".*")) else "."
        works[key] = line + (f" {plain(venue)}." if venue else "")
    return works


def _works_cited(cells: list[dict]) -> str:
    works = bibliography()
    keys: list[str] = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            keys += [k for k in _CITE_LINK.findall(_source(cell)) if k in works]
    # Each work a paragraph with the key as its label: the citation links resolve to it.
    return "\n\n".join(f"({k})=\n{works[k]}" for k in dict.fromkeys(keys))


def elsewhere(nb: dict, others: dict[str, str]) -> list[dict]:
    """Cells ending with a JupyterLab-only cell of stand-ins for the labels of other chapters.

    jupyterlab-myst resolves references within one notebook only; the book
    resolves them across chapters and never sees this cell (``remove-cell``).
    """
    cells = [c for c in nb["cells"] if c.get("metadata", {}).get(MARK) != "elsewhere"]
    local = targets({"cells": cells}, "")
    wanted: list[str] = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for label in _ROLE_REF.findall(_source(cell)):
                if label not in local and label in others and label not in wanted:
                    wanted.append(label)
    sections = []
    if wanted:
        sections.append("### From other chapters\n\n" + "\n\n".join(others[lb] for lb in wanted))
    glossary = _glossary_for(cells)
    if glossary:
        sections.append(f"### Terms\n\n```{{glossary}}\n{glossary}\n```")
    works = _works_cited(cells)
    if works:
        sections.append(
            "### Works cited\n\nEvery work this chapter cites, in the order of first "
            "citation; the book lists them all in its bibliography.\n\n" + works
        )
    if not sections:
        return cells
    text = "\n\n".join(sections)
    cell = {
        "cell_type": "markdown",
        "id": "lab-elsewhere",
        "metadata": {"tags": ["remove-cell"], MARK: "elsewhere"},
        "source": text.splitlines(keepends=True),
    }
    return [*cells, cell]


def transform(
    nb: dict,
    folder: Path = ROOT / "chapters",
    macros: dict | None = None,
    others: dict[str, str] | None = None,
) -> dict:
    """Apply every change to the notebook ``nb`` (in place) and return it."""
    nb.setdefault("metadata", {})["kernelspec"] = dict(KERNELSPEC)
    nb["cells"] = caption_figures(nb["cells"])
    nb["cells"] = front_matter(nb["cells"], book_macros() if macros is None else macros)
    nb["cells"] = split_solution_gates(nb["cells"])
    collapse_solutions(nb["cells"])
    collapse_evidence(nb["cells"])
    link_pages(nb["cells"], folder)
    nb["cells"] = open_in_lab(nb["cells"])
    link_citations(nb["cells"], citation_labels())
    nb["cells"] = elsewhere(nb, others or {})
    strip_widget_views(nb)
    return nb


def _dump(nb: dict) -> str:
    # The layout nbformat writes (indent 1, sorted keys, non-ASCII kept, final newline).
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def labels_of_others(path: Path) -> dict[str, str]:
    """Stand-ins for the labels of every other notebook in the folder of ``path``."""
    found: dict[str, str] = {}
    for other in sorted(path.resolve().parent.glob("*.ipynb")):
        if other != path.resolve():
            nb = json.loads(other.read_text(encoding="utf-8"))
            found.update(targets(nb, other.name))
    return found


def process(path: Path, *, check: bool = False) -> bool:
    """Transform one notebook file; return True if it changed (or would change)."""
    before = path.read_text(encoding="utf-8")
    nb = json.loads(before)
    after = _dump(transform(nb, path.resolve().parent, others=labels_of_others(path)))
    changed = after != before
    if changed and not check:
        path.write_text(after, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: chapters/*.ipynb")
    parser.add_argument("--check", action="store_true", help="change nothing, fail if needed")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    changed = [p for p in paths if process(p, check=args.check)]
    for p in changed:
        print(f"{'would change' if args.check else 'changed'}: {p}")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
