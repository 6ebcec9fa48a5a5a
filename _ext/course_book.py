"""Sphinx extension for the built book: what a reader sees in the browser.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). It does seven things,
each one a fix that the book's browser test (``tests/browser/test_book.py``)
checks:

* **Repository and launch buttons only with a real address.** The address
  comes from ``repository.url`` in ``_config.yml``, else from the environment
  variable ``BOOK_REPOSITORY_URL``, else from the ``origin`` remote of the git
  checkout when it is a public web address. Without one, the repository, issues
  and launch (Binder, JupyterHub, Colab) buttons are all hidden, since each
  of them would lead nowhere.
* **No doubled header.** The theme's extra header band with a second Search
  button is switched off (the sidebar has one).
* **Each script once.** A script that is registered twice (sphinx-thebe's
  ``THEBE_JS_URL`` declaration) is written to the page once.
* **Widget code only with a live widget.** A notebook whose widget outputs are
  all removed from the page ships neither the widget state nor the widget
  JavaScript.
* **Bibliography labels as the citations read.** The text cites author and
  year, so each bibliography entry is labelled the same way ("Vaswani et al.,
  2017") by the pybtex style ``plain_author_year``, instead of a number.
* **Citations as links to the bibliography.** The chapters cite with plain
  links, ``[Vaswani et al. (2017)](#vaswani2017attention)``, a form that
  JupyterLab renders as well (``tools/lab_compat.py`` writes them from
  ``{cite:t}``/``{cite:p}``). Every key of ``references.bib`` is made a label
  of its entry on the bibliography page (whose entries carry the key as their
  id: ``bibtex_cite_id`` in ``_config.yml``), so each link resolves there.
* **Setup magics hidden.** A code cell that only sets IPython's display mode
  (``%xmode``), which says nothing about the course, is left out of the page.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Keys of launch_buttons that build a link from the repository address.
LAUNCH_KEYS = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "thebe")
SETUP_MAGIC = re.compile(r"^%xmode\b")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def public_url(remote: str) -> str | None:
    """The web address of a git remote, or None when it is not a public one.

    >>> public_url("git@github.com:someone/course.git")
    'https://github.com/someone/course'
    >>> public_url("https://user:token@gitlab.com/someone/course.git")
    'https://gitlab.com/someone/course'
    >>> public_url("/srv/git/course") is None
    True
    """
    remote = remote.strip()
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):(.+?)(?:\.git)?/?", remote)
    if scp:
        return f"https://{scp[1]}/{scp[2]}"
    web = re.fullmatch(
        r"(?:https?|git|ssh)://(?:[^@/]+@)?([\w.-]+)(?::\d+)?/(.+?)(?:\.git)?/?", remote
    )
    if web:
        return f"https://{web[1]}/{web[2]}"
    return None


def git_remote_url(root: Path) -> str | None:
    """The public address of the checkout's ``origin`` remote, if it has one."""
    try:
        out = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return public_url(out.stdout) if out.returncode == 0 else None


def configure_buttons(app: Sphinx, config: Config) -> None:
    """Show repository and launch buttons only when the repository address is known."""
    options: dict[str, Any] = dict(config.html_theme_options or {})
    url = (
        (options.get("repository_url") or "").strip()
        or os.environ.get("BOOK_REPOSITORY_URL", "").strip()
        or git_remote_url(Path(app.srcdir))
        or ""
    )
    launch = dict(options.get("launch_buttons") or {})
    if url:
        options["repository_url"] = url
        options["use_repository_button"] = True
        host = url.split("/")[2] if url.count("/") >= 2 else ""
        options["use_issues_button"] = host in {"github.com", "gitlab.com"}
    else:
        options["repository_url"] = ""
        for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
            options[key] = False
        for key in LAUNCH_KEYS:
            if launch.get(key):
                launch[key] = "" if key != "thebe" else False
        options["launch_buttons"] = launch
    # The theme's header band repeats the sidebar's Search button; keep it empty.
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options
    # Light/dark follows the reader's system; an empty mode logs a console error.
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}


def trim_doctree(app: Sphinx, doctree: nodes.document) -> None:
    """Drop setup-magic cells, and widget code from a page that shows no widget."""
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code":
            continue
        source = "".join(
            block.astext()
            for block in cell.findall(nodes.literal_block)
            if block.parent.get("nb_element") == "cell_code_source"
        )
        lines = [ln for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if lines and all(SETUP_MAGIC.match(ln.strip()) for ln in lines):
            cell.parent.remove(cell)

    shows_widget = any(WIDGET_VIEW in node.astext() for node in doctree.findall(nodes.raw))
    if not shows_widget:
        meta = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {})
        js_files = meta.get("js_files", {})
        for key in [k for k in js_files if k.startswith("ipywidgets")]:
            del js_files[key]


def dedupe_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Write every script to the page once (sphinx-thebe registers its config twice)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        # An inline script is registered with filename None or "": the same script.
        key = (str(script.filename or ""), tuple(sorted(script.attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    scripts[:] = unique


class AuthorYearLabels(BaseLabelStyle):
    """Labels "Surname, year", "A and B, year" or "A et al., year", as cited in the text."""

    def format_labels(self, sorted_entries: list) -> Iterator[str]:
        labels = [self.label(entry) for entry in sorted_entries]
        total = {label: labels.count(label) for label in labels}
        seen: dict[str, int] = {}
        for label in labels:
            if total[label] == 1:
                yield label
            else:  # two works by the same authors in one year: 1990a, 1990b
                seen[label] = seen.get(label, 0) + 1
                yield f"{label}{chr(ord('a') + seen[label] - 1)}"

    @staticmethod
    def label(entry: Entry) -> str:
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.last_names) for p in people]
        if not names:
            who = entry.fields.get("organization", entry.key)
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{latex_to_text(who)}, {entry.fields.get('year', 'n.d.')}"


class PlainAuthorYear(PlainStyle):
    """pybtex's plain style with author-year labels."""

    default_label_style = "author_year_labels"


def latex_to_text(text: str) -> str:
    """A name from BibTeX as plain text, braces and accent commands decoded."""
    return Text.from_latex(text).render_as("text")


def label_citations(app: Sphinx, env: Any) -> None:
    """Make every bibliography entry's key a label of its entry (``[text](#key)`` resolves).

    Runs when all pages are read, after sphinxcontrib-bibtex has given every
    entry of a ``{bibliography}`` directive its id; a key that is already a
    label elsewhere is reported, not overwritten.
    """
    std = env.get_domain("std")
    cite = env.get_domain("cite")
    for bib_key, bib in cite.bibliographies.items():
        for key, node in bib.citation_nodes.items():
            if not node["ids"]:
                continue
            target = (bib_key.docname, node["ids"][0])
            if std.anonlabels.get(key, target) != target:
                logger.warning("citation key %r is also a label elsewhere", key)
                continue
            std.anonlabels[key] = target
            std.labels[key] = (*target, key)


def setup(app: Sphinx) -> dict[str, Any]:
    register_plugin("pybtex.style.labels", "author_year_labels", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "plain_author_year", PlainAuthorYear)
    app.connect("config-inited", configure_buttons)
    app.connect("doctree-read", trim_doctree)
    app.connect("env-updated", label_citations)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
