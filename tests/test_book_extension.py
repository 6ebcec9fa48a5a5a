"""The book's Sphinx extension (_ext/course_book.py): addresses, buttons and labels."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from pybtex.database import Entry, Person

PATH = Path(__file__).resolve().parents[1] / "_ext" / "course_book.py"
spec = importlib.util.spec_from_file_location("course_book", PATH)
course_book = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course_book)


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("git@github.com:someone/course.git", "https://github.com/someone/course"),
        ("https://github.com/someone/course.git\n", "https://github.com/someone/course"),
        ("https://user:secret@gitlab.com/a/b", "https://gitlab.com/a/b"),
        ("ssh://git@example.net:2222/a/b.git", "https://example.net/a/b"),
        ("/srv/git/course", None),
        ("file:///srv/git/course", None),
        ("", None),
    ],
)
def test_public_url(remote: str, url: str | None) -> None:
    assert course_book.public_url(remote) == url


def configured(theme: dict, monkeypatch, env: str = "", remote: str | None = None) -> dict:
    monkeypatch.setenv("BOOK_REPOSITORY_URL", env)
    monkeypatch.setattr(course_book, "git_remote_url", lambda root: remote)
    config = SimpleNamespace(html_theme_options=theme, html_context={})
    course_book.configure_buttons(SimpleNamespace(srcdir="."), config)
    assert config.html_context["default_mode"] == "auto"
    return config.html_theme_options


def test_no_address_hides_every_button(monkeypatch) -> None:
    theme = {
        "repository_url": "",
        "use_repository_button": True,
        "launch_buttons": {"binderhub_url": "https://mybinder.org", "colab_url": "x"},
    }
    options = configured(theme, monkeypatch)
    assert not options["use_repository_button"] and not options["use_issues_button"]
    assert not any(options["launch_buttons"].values())
    assert options["navbar_persistent"] == []


@pytest.mark.parametrize("source", ["setting", "env", "remote"])
def test_address_from_setting_env_or_remote(monkeypatch, source: str) -> None:
    url = "https://github.com/someone/course"
    theme = {
        "repository_url": url if source == "setting" else "",
        "launch_buttons": {"binderhub_url": "https://mybinder.org"},
    }
    options = configured(
        theme,
        monkeypatch,
        env=url if source == "env" else "",
        remote=url if source == "remote" else None,
    )
    assert options["repository_url"] == url
    assert options["use_repository_button"] and options["use_issues_button"]
    assert options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"


def test_author_year_labels() -> None:
    def entry(authors: list[str], year: str) -> Entry:
        people = [Person(a) for a in authors]
        return Entry("article", fields={"year": year}, persons={"author": people})

    entries = [
        entry(["Elman, Jeffrey L."], "1990"),
        entry(["Hochreiter, Sepp", 'Schmidhuber, J{\\"u}rgen'], "1997"),
        entry(['Sch{\\"u}tze, Hinrich', "Dufter, Philipp", "Schmitt, Martin"], "2022"),
        entry(["Elman, Jeffrey L."], "1990"),
    ]
    labels = list(course_book.AuthorYearLabels().format_labels(entries))
    assert labels == [
        "Elman, 1990a",
        "Hochreiter and Schmidhuber, 1997",
        "Schütze et al., 2022",
        "Elman, 1990b",
    ]
