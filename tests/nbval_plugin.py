"""nbval settings for the chapter notebooks, loaded by the root conftest.py.

nbval re-executes every notebook and compares each cell's new outputs with
the stored ones. Plain text (printed numbers, reprs, tables) is compared;
the output types below are left out because they cannot be compared
honestly:

* ``text/html`` and ``text/latex``: rich reprs (pandas tables, widgets) that
  carry generated ids and styling; their plain-text twin is still compared;
* ``image/png`` and ``image/svg+xml``: rendered figures, whose bytes depend on
  the font cache and library build (the data behind each figure is tested in
  ``tests/test_plots_*.py`` instead);
* ``application/javascript`` and widget views: interactive state;
* ``stderr``: progress bars and library warnings.

A cell whose printed numbers depend on the machine (a timing, anything
trained, a gradient-check error) is not compared at all: it carries the
``nbval-ignore-output`` tag and asserts its claim with a tolerance from the
number's own uncertainty. ``tests/README.md`` states the rule, and
``make test-cpus`` re-runs every chapter on other CPU settings to enforce it.
"""

SKIPPED_OUTPUTS = (
    "text/html",
    "text/latex",
    "image/png",
    "image/svg+xml",
    "application/javascript",
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
    "stderr",
)


def pytest_collectstart(collector):
    if getattr(collector, "skip_compare", None) is not None:
        collector.skip_compare = tuple(collector.skip_compare) + SKIPPED_OUTPUTS
