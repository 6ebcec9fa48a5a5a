"""The built book as a reader sees it: every page in headless Chromium, offline, at 1280 px.

``BOOK_REPORT=report.json`` also writes what every page measured to a file.

Run ``make book`` first, then ``make browser-test`` (or
``.venv/bin/python -m pytest tests/browser/test_book.py -q``). A thread serves
``_build/html`` on a free local port; every request to anywhere else is refused
(see ``offline_context``), so a page that needs the network fails here.

Each page is opened once; the checks below read what that visit recorded:

* maths is typeset by the MathJax shipped in the build, with no raw TeX left and
  no MathJax error (an unknown macro shows as one);
* no code cell, output, table, display equation or image is wider than the text
  column, and no equation runs under its number;
* every image loads;
* no JavaScript error is logged and no request fails or leaves the machine;
* every link inside the book resolves, anchor included;
* the widget state and the widget JavaScript are shipped only with a live widget;
* no placeholder address is left anywhere in the build;
* no chapter page shows more than 2,500 words of prose before the reader
  clicks anything (the evidence layer, "How we know", is one click away);
* the evidence layer's two kinds of button (a dropdown, a hidden code cell)
  look the same, so the reader learns one look.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest
import yaml

from .conftest import offline_context

ROOT = Path(__file__).resolve().parents[2]
# The built book; BOOK_HTML points the test at another build folder.
HTML = Path(os.environ.get("BOOK_HTML") or ROOT / "_build" / "html")
WIDTH = 1280
# A box may exceed its column by at most this many CSS pixels (sub-pixel rounding).
SLACK = 1.0
# Words of prose a chapter page may show on first load (the main path).
PROSE_BUDGET = 2500
PLACEHOLDERS = ("example.org", "example-org", "example.com", "example-com")


def toc_pages() -> list[str]:
    """The HTML page of every entry in ``_toc.yml``, in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part.get("chapters", [])]
    return [f"{f}.html" for f in files]


PAGES = toc_pages()
CHAPTERS = [page for page in PAGES if page.startswith("chapters/")]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """``_build/html`` served by a thread on a free local port."""
    if not (HTML / "index.html").is_file():
        pytest.fail("no built book in _build/html: run `make book` first")
    handler = functools.partial(_Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# Everything the page-side checks need, measured in the page after MathJax is done.
MEASURE = r"""
async (SLACK) => {
  const out = {};
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  // Images: force lazy ones to load and wait for every one to settle.
  const imgs = [...document.querySelectorAll('img')];
  imgs.forEach(img => { img.loading = 'eager'; });
  await Promise.all(imgs.map(img => img.complete ? null : new Promise(res => {
    img.addEventListener('load', res); img.addEventListener('error', res);
    setTimeout(res, 5000);
  })));
  out.images = imgs.map(img => ({src: img.currentSrc || img.src,
                                 ok: img.complete && img.naturalWidth > 0}));

  // Maths.
  const maths = [...document.querySelectorAll('.math')];
  out.math_elements = maths.length;
  out.typeset = document.querySelectorAll('mjx-container').length;
  out.untypeset = maths.filter(m => !m.querySelector('mjx-container'))
                       .map(m => m.textContent.trim().slice(0, 80));
  out.math_errors = [...document.querySelectorAll('mjx-merror, [data-mjx-error]')]
                      .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80));
  // Raw TeX anywhere in the text a reader sees (code and typeset maths excepted).
  const article = document.querySelector('article') || document.body;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const raw = [];
  // (an inline $...$ pair too: a glued string is not typeset, so its TeX shows as typed)
  const tex = new RegExp([/\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\frac|\\mathrm|\\sum/.source,
                          /\\PE|\\dmodel|\$[A-Za-z\\][^$]{0,40}\$/.source].join('|'));
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (p.closest('pre, code, script, style, mjx-container, .highlight, textarea')) continue;
    if (tex.test(n.textContent)) raw.push(n.textContent.trim().slice(0, 80));
  }
  out.raw_tex = raw;

  // Widths. The column is the article's content box.
  const col = article.getBoundingClientRect();
  const cs = getComputedStyle(article);
  const right = col.right - parseFloat(cs.paddingRight);
  const name = el => {
    const cell = el.closest('.cell, .math, table, figure, section');
    const id = cell && (cell.id || (cell.closest('[id]') || {}).id);
    return `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} in #${id || '?'}`;
  };
  const wide = [];
  const kinds = [
    ['code', 'div.cell_input pre, div.highlight pre'],
    ['output', 'div.cell_output pre, div.output pre, div.cell_output .output'],
    ['table', 'article table'],
    ['equation', 'div.math, mjx-container[display="true"]'],
    ['image', 'article img'],
  ];
  const seen = new Set();
  for (const [kind, sel] of kinds) {
    for (const el of article.querySelectorAll(sel)) {
      if (seen.has(el) || el.closest('.toggle-hidden, details:not([open])')) continue;
      seen.add(el);
      const what = el.closest('.cell_output, div.output') ? 'output' : kind;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;  // not displayed
      // Content wider than the box (clipped or behind a scroll bar), or a box past the column.
      const hidden = el.scrollWidth - el.clientWidth;
      const past = r.right - right;
      let inner = 0;
      if (kind === 'equation') {
        // The typeset formula itself, whatever its box does.
        for (const m of el.querySelectorAll('mjx-math')) {
          inner = Math.max(inner, m.getBoundingClientRect().right - Math.min(right, r.right));
        }
      }
      const worst = Math.max(hidden, past, inner);
      if (worst > SLACK) wide.push({kind: what, where: name(el), by: Math.round(worst),
                                    text: el.textContent.trim().slice(0, 60)});
    }
  }
  // An equation number must not sit on its formula.
  for (const eq of article.querySelectorAll('div.math')) {
    const no = eq.querySelector('.eqno');
    const m = eq.querySelector('mjx-math');
    if (!no || !m) continue;
    const a = no.getBoundingClientRect(), b = m.getBoundingClientRect();
    if (a.left < b.right - SLACK && a.right > b.left && a.top < b.bottom && a.bottom > b.top) {
      wide.push({kind: 'equation number', where: name(eq), by: Math.round(b.right - a.left),
                 text: no.textContent.trim()});
    }
  }
  out.wide = wide;

  // Prose a reader sees on first load, before clicking anything: words of text
  // in the article that is displayed, outside code, outputs (figure captions
  // count), typeset maths, buttons and the page navigation.
  // (The "How we know: show the source" button of a hidden cell is a control, not prose.)
  const notProse = 'pre, code, script, style, textarea, button, mjx-container, .highlight, ' +
    '.cell_input, .headerlink, .prev-next-area, nav, .toggle-button, details.hide > summary';
  let prose = 0;
  const words = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = words.nextNode(); n; n = words.nextNode()) {
    const p = n.parentElement;
    if (p.closest(notProse)) continue;
    if (p.closest('.cell_output') && !p.closest('figcaption')) continue;
    if (!p.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    prose += n.textContent.split(/\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length;
  }
  out.prose_words = prose;

  // The evidence layer's two kinds of button, a "How we know" dropdown and a
  // hidden code cell, as they look closed: title background, weight, marker
  // and any hint text beside the title.
  const looks = [];
  for (const t of article.querySelectorAll('div.admonition.how-we-know > .admonition-title')) {
    const btn = t.querySelector('button.toggle-button');
    const hint = btn && getComputedStyle(btn).opacity !== '0'
      ? getComputedStyle(btn, '::before').content : 'none';
    looks.push({kind: 'dropdown', text: t.textContent.trim().slice(0, 50),
                bg: getComputedStyle(t).backgroundColor, weight: getComputedStyle(t).fontWeight,
                marker: getComputedStyle(t, '::after').content, hint});
  }
  const closedCells = 'div.cell details.hide:not([open]) > summary > p.collapsed';
  for (const t of article.querySelectorAll(closedCells)) {
    looks.push({kind: 'hidden cell', text: t.textContent.trim().slice(0, 50),
                bg: getComputedStyle(t.parentElement).backgroundColor,
                weight: getComputedStyle(t).fontWeight,
                marker: getComputedStyle(t, '::before').content, hint: 'none'});
  }
  out.button_looks = looks;

  // Links, as the browser resolves them (also those added by scripts).
  out.links = [...document.querySelectorAll('a[href]')].map(a => a.href);

  // Widgets: state shipped, widget JavaScript loaded, widget views a reader sees.
  out.widget_state = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-state+json"]').length;
  out.widget_views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]').length;
  out.widget_js = [...document.querySelectorAll('script[src]')].map(s => s.src)
    .filter(s => /jupyter-widgets|embed-amd|require\.js|html-manager/.test(s));
  return out;
}
"""


@pytest.fixture(scope="module")
def reports(browser, origin: str) -> dict[str, dict]:
    """Open every page once and record what the checks need."""
    context, refused = offline_context(browser, origin, width=WIDTH)
    results: dict[str, dict] = {}
    try:
        for page_path in PAGES:
            page = context.new_page()
            errors: list[str] = []
            failed: list[str] = []
            page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc, e=errors: e.append(f"uncaught: {exc}"))
            page.on(
                "response",
                lambda r, f=failed: f.append(f"{r.status} {r.url}") if r.status >= 400 else None,
            )
            page.on(
                "requestfailed",
                lambda r, f=failed: f.append(f"{r.failure} {r.url}"),
            )
            before = len(refused)
            page.goto(origin + page_path, wait_until="load")
            report = page.evaluate(MEASURE, SLACK)
            report["errors"] = errors
            report["failed"] = failed
            report["refused"] = refused[before:]
            results[page_path] = report
            page.close()
    finally:
        context.close()
    if os.environ.get("BOOK_REPORT"):  # the figures for a closing note
        Path(os.environ["BOOK_REPORT"]).write_text(json.dumps(results, indent=1))
    return results


@functools.cache
def _ids(path: Path) -> frozenset[str]:
    """Every id (and legacy ``name``) a built HTML file defines."""

    class Ids(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ids: set[str] = set()

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for key, value in attrs:
                if key == "id" or (tag == "a" and key == "name"):
                    self.ids.add(value or "")

    parser = Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return frozenset(parser.ids)


def _broken_links(links: list[str], origin: str) -> list[str]:
    broken = []
    for link in links:
        if not link.startswith(origin):
            continue  # outside the book (checked for placeholders elsewhere)
        url, fragment = urldefrag(link)
        rel = unquote(urlparse(url).path).lstrip("/")
        target = HTML / rel
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(link)
        elif fragment and target.suffix == ".html" and unquote(fragment) not in _ids(target):
            broken.append(link)
    return broken


def test_sidebar_lists_every_page(browser, origin: str) -> None:
    """The pages checked below are the pages the book's navigation offers."""
    context, _ = offline_context(browser, origin, width=WIDTH)
    try:
        page = context.new_page()
        page.goto(origin + PAGES[0], wait_until="load")
        hrefs = page.eval_on_selector_all(
            "nav.bd-docs-nav a.reference.internal", "els => els.map(a => a.href)"
        )
    finally:
        context.close()
    listed = {urldefrag(h)[0][len(origin) :] for h in hrefs}
    assert listed, "the sidebar lists no page"
    assert listed <= set(PAGES), f"sidebar pages not in _toc.yml: {listed - set(PAGES)}"
    assert set(PAGES[1:]) <= listed, f"pages the sidebar does not offer: {set(PAGES[1:]) - listed}"


@pytest.mark.parametrize("page", PAGES)
def test_maths_typeset(reports: dict, page: str) -> None:
    r = reports[page]
    assert not r["untypeset"], f"maths left as raw TeX: {r['untypeset'][:5]}"
    assert not r["raw_tex"], f"raw TeX in the text: {r['raw_tex'][:5]}"
    assert not r["math_errors"], f"MathJax errors: {r['math_errors'][:5]}"
    assert r["typeset"] >= r["math_elements"]


def test_book_has_maths(reports: dict) -> None:
    """MathJax really ran: the chapters hold hundreds of formulas, all typeset."""
    total = sum(r["typeset"] for r in reports.values())
    assert total >= 500, f"only {total} typeset formulas in the whole book"


@pytest.mark.parametrize("page", PAGES)
def test_nothing_wider_than_column(reports: dict, page: str) -> None:
    wide = reports[page]["wide"]
    lines = [f"{w['kind']} {w['where']} by {w['by']} px: {w['text']!r}" for w in wide]
    assert not wide, f"{len(wide)} blocks wider than the column:\n" + "\n".join(lines)


@pytest.mark.parametrize("page", PAGES)
def test_images_load(reports: dict, page: str) -> None:
    broken = [i["src"][:120] for i in reports[page]["images"] if not i["ok"]]
    assert not broken, f"images that do not load: {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_no_javascript_error(reports: dict, page: str) -> None:
    r = reports[page]
    assert not r["errors"], f"console errors: {r['errors'][:5]}"
    assert not r["refused"], f"requests that need the network: {r['refused'][:5]}"
    assert not r["failed"], f"failed requests: {r['failed'][:5]}"


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(reports: dict, origin: str, page: str) -> None:
    broken = _broken_links(reports[page]["links"], origin)
    assert not broken, f"links that lead nowhere: {broken[:10]}"


@pytest.mark.parametrize("page", PAGES)
def test_widget_code_only_with_live_widgets(reports: dict, page: str) -> None:
    r = reports[page]
    if r["widget_views"] == 0:
        assert r["widget_state"] == 0, "widget state shipped for no visible widget"
        assert not r["widget_js"], f"widget JavaScript loaded for no widget: {r['widget_js']}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_prose_budget(reports: dict, page: str) -> None:
    words = reports[page]["prose_words"]
    assert words <= PROSE_BUDGET, (
        f"{page} shows {words} words of prose on first load, over the budget of "
        f"{PROSE_BUDGET}: move evidence into a 'How we know' dropdown"
    )


@pytest.mark.parametrize("page", CHAPTERS)
def test_evidence_buttons_look_alike(reports: dict, page: str) -> None:
    """A dropdown and a hidden code cell of the evidence layer look the same closed:
    one background, one weight, the same right-pointing marker, no hint text."""
    looks = reports[page]["button_looks"]
    assert looks, f"{page} has no evidence button"
    styles = {(b["bg"], b["weight"], b["marker"]) for b in looks}
    assert len(styles) == 1, f"{page}: the evidence buttons look different: {styles}"
    assert styles.pop()[2] == '"\u25b8"', f"{page}: the closed marker is not a right triangle"
    hinted = [b["text"] for b in looks if b["hint"] not in ("none", "normal")]
    assert not hinted, f"{page}: a hint shows beside these titles: {hinted}"


def test_both_kinds_of_evidence_button_are_measured(reports: dict) -> None:
    # The look test compares something: the book has both kinds of button.
    kinds = {b["kind"] for page in CHAPTERS for b in reports[page]["button_looks"]}
    assert kinds == {"dropdown", "hidden cell"}, kinds


def test_prose_is_counted(reports: dict) -> None:
    # The count sees the text: every chapter page has a main path to read.
    assert all(reports[page]["prose_words"] > 300 for page in CHAPTERS), {
        page: reports[page]["prose_words"] for page in CHAPTERS
    }


def test_no_placeholder_address() -> None:
    """No link or text in the built book points at a made-up address."""
    if not HTML.is_dir():
        pytest.fail("no built book in _build/html: run `make book` first")
    pattern = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))
    found = []
    for path in HTML.rglob("*"):
        if path.suffix not in {".html", ".js", ".json", ".txt", ".ipynb", ".md"}:
            continue
        if "_static" in path.parts:
            continue  # third-party assets (documentation strings of libraries)
        for m in pattern.finditer(path.read_text(encoding="utf-8", errors="replace")):
            found.append(f"{path.relative_to(HTML)}: {m.group()}")
    assert not found, f"placeholder addresses in the build: {found[:10]}"
