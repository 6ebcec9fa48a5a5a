"""Tests of tools/lab_compat.py: each change, idempotence, and the chapters as committed."""

import copy
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("lab_compat", ROOT / "tools" / "lab_compat.py")
lab_compat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_compat)


def md(text, **metadata):
    return {
        "cell_type": "markdown",
        "id": f"m{abs(hash(text)) % 10**8}",
        "metadata": metadata,
        "source": text,
    }


def code(text, outputs=(), **metadata):
    return {
        "cell_type": "code",
        "id": f"c{abs(hash(text)) % 10**8}",
        "metadata": metadata,
        "source": text,
        "outputs": list(outputs),
        "execution_count": 1,
    }


def notebook():
    widget = {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {
            "text/plain": "EncodingExplorer: Run this cell to get the sliders.",
            lab_compat.WIDGET_VIEW: {"model_id": "abc", "version_major": 2},
        },
    }
    figure = {"figure": {"name": "fig-x", "caption": "What to look at."}}
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "name": "python3", "language": "python"},
            "widgets": {"state": {}},
        },
        "cells": [
            md("See the [assignments page](../assignments.md) and {doc}`x <../nowhere>`."),
            code("plot()", mystnb=figure),
            md("```{solution-start} ex-1\n:class: dropdown\n```"),
            md("The answer."),
            code("answer = 42"),
            md("```{solution-end}\n```"),
            code("explorer()", outputs=[widget]),
            md("{doc}`the page <../page>`"),
        ],
    }


def test_each_change(tmp_path):
    (tmp_path / "page.md").write_text("# Page\n")
    (tmp_path / "chapters").mkdir()
    nb = lab_compat.transform(notebook(), tmp_path / "chapters", macros={})
    assert nb["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert "widgets" not in nb["metadata"]
    cells = nb["cells"]
    caption = cells[2]
    assert caption["metadata"]["tags"] == ["remove-cell"]
    assert ":label: fig-x" in "".join(caption["source"])
    assert "What to look at." in "".join(caption["source"])
    hidden = [c for c in cells if c["metadata"].get("jupyter", {}).get("source_hidden")]
    assert ["".join(c["source"]) for c in hidden] == [
        "% Solution\nThe answer.",
        "# Solution\nanswer = 42",
    ]
    assert cells[5]["metadata"]["jupyter"]["outputs_hidden"] is True
    assert "source_hidden" not in cells[3]["metadata"].get("jupyter", {})  # the start cell
    out = cells[7]["outputs"][0]["data"]
    assert list(out) == ["text/plain"]
    assert "".join(cells[8]["source"]) == "[the page](../page.md)"
    assert "{doc}`x <../nowhere>`" in "".join(cells[0]["source"])  # no such page: unchanged


def test_idempotent(tmp_path):
    once = lab_compat.transform(notebook(), tmp_path)
    twice = lab_compat.transform(copy.deepcopy(once), tmp_path)
    assert twice == once
    assert sum(c["metadata"].get(lab_compat.MARK) == "figure-caption" for c in twice["cells"]) == 1


def test_caption_follows_the_metadata(tmp_path):
    nb = lab_compat.transform(notebook(), tmp_path, macros={})
    nb["cells"][1]["metadata"]["mystnb"]["figure"]["caption"] = "New caption."
    nb = lab_compat.transform(nb, tmp_path, macros={})
    assert "New caption." in "".join(nb["cells"][2]["source"])


def test_committed_chapters_are_up_to_date():
    stale = [
        p.name
        for p in sorted((ROOT / "chapters").glob("*.ipynb"))
        if lab_compat.process(p, check=True)
    ]
    assert stale == [], "run: python tools/lab_compat.py"


def test_check_mode_changes_nothing(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook()))
    before = path.read_text()
    assert lab_compat.main(["--check", str(path)]) == 1
    assert path.read_text() == before
    assert lab_compat.main([str(path)]) == 0
    assert lab_compat.main(["--check", str(path)]) == 0


def test_front_matter_gives_the_book_macros(tmp_path):
    macros = lab_compat.book_macros()
    assert macros["\\PE"] == "\\mathrm{PE}"
    nb = lab_compat.transform(notebook(), tmp_path, macros=macros)
    first = nb["cells"][0]
    assert first["metadata"]["tags"] == ["remove-cell"]
    text = "".join(first["source"])
    assert text.startswith("---\nmath:\n") and text.endswith("---")
    assert '"\\\\PE": "\\\\mathrm{PE}"' in text  # JSON strings are valid YAML
    again = lab_compat.transform(copy.deepcopy(nb), tmp_path, macros=macros)
    assert again == nb


def test_references_to_other_chapters_get_stand_ins(tmp_path):
    other = {
        "cells": [
            md("# Other chapter\n\n(sec-x)=\n## Mistakes\n\n$$\na = b\n$$ (eq-x)"),
            code("plot()", mystnb={"figure": {"name": "fig-y", "caption": "Cap."}}),
        ]
    }
    found = lab_compat.targets(other, "02_other.ipynb")
    assert set(found) == {"sec-x", "eq-x", "fig-y"}
    nb = notebook()
    nb["cells"].append(md("See {eq}`eq-x`, {numref}`fig-y`, {ref}`sec-x` and {numref}`fig-x`."))
    nb = lab_compat.transform(nb, tmp_path, macros={}, others=found)
    last = nb["cells"][-1]
    assert last["metadata"]["tags"] == ["remove-cell"]
    text = "".join(last["source"])
    assert "$$\na = b\n$$ (eq-x)" in text and "(sec-x)=\n#### Mistakes" in text
    assert ":label: fig-y" in text and "[Other chapter](02_other.ipynb)" in text
    assert "fig-x" not in text  # defined in this notebook: no stand-in
    again = lab_compat.transform(copy.deepcopy(nb), tmp_path, macros={}, others=found)
    assert again == nb


def test_terms_and_works_cited_for_jupyterlab(tmp_path):
    nb = notebook()
    nb["cells"].append(
        md(
            "A {term}`mixing layer <Attention>`, {cite:p}`vaswani2017attention`; "
            "{cite:t}`hochreiter1997long` and {cite}`elman1990finding, vaswani2017attention`."
        )
    )
    nb = lab_compat.transform(nb, tmp_path, macros={}, others={})
    cited = "".join(nb["cells"][-2]["source"])
    assert "{cite" not in cited
    assert "([Vaswani et al., 2017](#vaswani2017attention))" in cited
    assert "[Hochreiter and Schmidhuber (1997)](#hochreiter1997long)" in cited
    assert "([Elman, 1990](#elman1990finding); [Vaswani et al., 2017](#vaswani2017attention))" in (
        cited
    )
    text = "".join(nb["cells"][-1]["source"])
    assert "```{glossary}\nAttention\n: A layer that mixes the rows of its input:" in text
    # Each work once, in order of first citation, labelled by its key.
    works = text.split("### Works cited")[1]
    assert works.count("(vaswani2017attention)=\nVaswani et al. (2017). *Attention Is All") == 1
    assert works.index("(vaswani2017attention)=") < works.index("(hochreiter1997long)=")
    assert works.index("(hochreiter1997long)=") < works.index("(elman1990finding)=")
    assert lab_compat.transform(copy.deepcopy(nb), tmp_path, macros={}, others={}) == nb
    works = lab_compat.bibliography()
    assert all(line.endswith((".", "?", "!")) for line in works.values())


def test_citation_labels_follow_the_bibliography():
    labels = lab_compat.citation_labels()
    assert set(labels) == set(lab_compat.bibliography())
    assert labels["hochreiter1997long"] == ("Hochreiter and Schmidhuber", "1997")
    assert labels["vaswani2017attention"] == ("Vaswani et al.", "2017")
    # The book's bibliography labels its entries by the same rule.
    sys.path.insert(0, str(ROOT / "_ext"))
    from course_book import AuthorYearLabels

    entries = parse_file(str(ROOT / "references.bib")).entries
    for key, (who, year) in labels.items():
        assert AuthorYearLabels.label(entries[key]) == f"{who}, {year}", key


def test_unknown_citations_are_refused(tmp_path):
    for text, match in [
        ("{cite:p}`nobody1999`", "nobody1999"),
        ("{cite:ps}`vaswani2017attention`", "only"),
    ]:
        nb = notebook()
        nb["cells"].append(md(text))
        with pytest.raises(ValueError, match=match):
            lab_compat.transform(nb, tmp_path, macros={}, others={})


def test_solution_directives_stand_alone_so_jupyterlab_can_collapse_the_solution():
    """A solution shares no cell with its gate, or JupyterLab could not hide it alone."""
    shared = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            text = "".join(cell["source"])
            if "{solution-start}" in text or "{solution-end}" in text:
                rest = [
                    line
                    for line in text.splitlines()
                    if line.strip() and not line.startswith(("```", ":class:", ":label:"))
                ]
                if rest:
                    shared.append(f"{path.name} cell {i}")
    assert shared == []


def test_a_notebook_offered_for_download_gets_a_link_that_opens_it_in_lab(tmp_path):
    target = "../assignments/dist/01_x/student/01_x.ipynb"
    nb = notebook()
    nb["cells"].insert(1, md(f"Get {{download}}`the student notebook <{target}>`, then work."))
    out = lab_compat.transform(nb, tmp_path, macros={})
    sources = ["".join(c["source"]) for c in out["cells"]]
    at = next(i for i, s in enumerate(sources) if "{download}" in s)
    extra = out["cells"][at + 1]
    assert extra["metadata"]["tags"] == ["remove-cell"]  # the book never sees it
    assert extra["metadata"][lab_compat.MARK] == "open-in-lab"
    assert f"[01_x.ipynb]({target})" in "".join(extra["source"])
    # idempotent, and a cell without a notebook to download gets none
    again = lab_compat.transform(copy.deepcopy(out), tmp_path, macros={})
    assert again == out
    marks = [c["metadata"].get(lab_compat.MARK) for c in out["cells"]]
    assert marks.count("open-in-lab") == 1


def _flags(cell):
    return cell.get("metadata", {}).get("jupyter", {})


def test_the_evidence_layer_is_collapsed_as_in_the_book():
    figure = {"figure": {"name": "fig-e", "caption": "A check of a check."}}
    cells = [
        code("assert 1 + 1 == 2", tags=["hide-input"]),
        code("# How we know: the plot\nplot()", tags=["hide-cell"], mystnb=figure),
        code("print(3)", tags=["hide-output"]),
        code("print(4)"),
    ]
    cells = lab_compat.caption_figures(cells)
    lab_compat.collapse_evidence(cells)
    check, plot, caption, out, plain = cells
    assert _flags(check) == {"source_hidden": True}
    assert "".join(check["source"]).startswith("# How we know\nassert")
    assert _flags(plot) == {"source_hidden": True, "outputs_hidden": True}
    assert "".join(plot["source"]).count("# How we know") == 1  # not added twice
    # The caption of a hidden figure stays rendered: references to its label need it.
    assert _flags(caption) == {}
    assert _flags(out) == {"outputs_hidden": True}
    assert _flags(plain) == {}
    # The book's button names the check; a bare first line keeps the default label.
    assert plot["metadata"]["mystnb"]["code_prompt_show"] == "How we know: the plot"
    assert "code_prompt_show" not in check["metadata"].get("mystnb", {})


def test_stale_collapse_flags_are_cleared_outside_solutions():
    stale = md("% Solution\nWhere to go next.", jupyter={"source_hidden": True})
    cells = [
        md("```{solution-start} ex-1\n:class: dropdown\n```"),
        md("The answer."),
        md("```{solution-end}\n```"),
        stale,
    ]
    lab_compat.collapse_solutions(cells)
    assert _flags(cells[1]) == {"source_hidden": True}
    assert _flags(stale) == {} and "".join(stale["source"]) == "Where to go next."


def test_a_label_before_a_box_gets_a_stand_in():
    nb = {
        "cells": [
            md("# Chapter two"),
            md("(range-mistake)=\n:::{warning} Values between 0 and 1\nNo.\n:::"),
            md("(loose-label)=\nSome passage."),
        ]
    }
    found = lab_compat.targets(nb, "02_mathematics.ipynb")
    assert "#### Values between 0 and 1" in found["range-mistake"]
    assert found["range-mistake"].startswith("(range-mistake)=")
    assert "#### A passage" in found["loose-label"]


def test_no_role_spans_a_line_break():
    """jupyterlab-myst leaves a role such as {ref}`text <label>` unresolved when its text
    runs over a line break (the book resolves it): keep each role on one line."""
    split = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                pattern = r"\{(?:ref|numref|eq|doc|term|cite:[pt])\}`[^`]*\n[^`]*`"
                split += [f"{path.name} {cell['id']}" for _ in re.findall(pattern, text)]
    assert split == []


GLUED = "application/papermill.record/text/plain"


def figure_cells_with_extra_outputs(nb: dict) -> list[tuple[int, str, int]]:
    """Code cells with a figure label that show more than one rich output.

    myst-nb wraps every display output of such a cell in the figure (label and
    caption), so a table shown beside the plot becomes a second figure with the
    same label: the book build fails on a duplicate target. Glued values are not
    shown and do not count; printed text is a stream and is not wrapped.
    """
    found = []
    for k, cell in enumerate(nb["cells"]):
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if cell["cell_type"] != "code" or not name:
            continue
        shown = [
            o
            for o in cell.get("outputs", [])
            if o["output_type"] in ("display_data", "execute_result")
            and GLUED not in o.get("data", {})
        ]
        if len(shown) != 1:
            found.append((k, name, len(shown)))
    return found


def test_a_figure_cell_shows_exactly_one_rich_output():
    plot = {"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}
    table = {"output_type": "display_data", "data": {"text/html": "", "text/plain": ""}}
    glued = {"output_type": "display_data", "data": {GLUED: "1"}}
    figure = {"mystnb": {"figure": {"name": "fig-x"}}}
    ok = {"cells": [code("fig", outputs=[glued, plot], **figure)]}
    bad = {"cells": [code("fig", outputs=[table, plot], **figure)]}
    assert figure_cells_with_extra_outputs(ok) == []
    assert figure_cells_with_extra_outputs(bad) == [(0, "fig-x", 2)]
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert figure_cells_with_extra_outputs(nb) == [], path.name
