"""Small tables of numbers for the chapters: HTML in the book, aligned text everywhere else.

A :class:`Table` shows as an HTML table in Jupyter and in the built book
(``_repr_html_``) and as aligned plain text in a terminal and in the stored
``text/plain`` output that the notebook regression tests compare
(``__repr__``), so every number of a table is both readable and checked.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Sequence

import numpy as np

from .validation import check_integer

__all__ = ["Table"]


class Table:
    """A table of labelled columns, formatted once, shown as HTML or as text.

    Parameters
    ----------
    columns : sequence of str
        Column headers.
    rows : sequence of sequences
        One sequence per row, as long as ``columns``. Real numbers are shown
        with ``precision`` decimals, integers as they are, anything else with
        ``str``.
    precision : int
        Decimals of real (non-integer) numbers, ``0 <= precision <= 16``.

    Raises
    ------
    TypeError
        If ``columns`` or a row is not a sequence, or a header is not a string.
    ValueError
        If a row does not have one entry per column.

    Examples
    --------
    >>> Table(["k", "sin k"], [[0, 0.0], [1, 0.8414709848]], precision=3)
    k  sin k
    0  0.000
    1  0.841
    """

    def __init__(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        *,
        precision: int = 4,
    ) -> None:
        self.precision = check_integer("precision", precision, minimum=0, maximum=16)
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise TypeError(f"columns must be a sequence of strings, got {type(columns).__name__}")
        if not all(isinstance(c, str) for c in columns):
            raise TypeError("columns must be a sequence of strings")
        self.columns = list(columns)
        if isinstance(rows, np.ndarray):
            rows = rows.tolist()
        if isinstance(rows, str) or not isinstance(rows, Sequence):
            raise TypeError(f"rows must be a sequence of rows, got {type(rows).__name__}")
        self.cells: list[list[str]] = []
        for number, row in enumerate(rows):
            if isinstance(row, np.ndarray):
                row = row.tolist()
            if isinstance(row, str) or not isinstance(row, Sequence):
                raise TypeError(f"row {number} must be a sequence, got {type(row).__name__}")
            if len(row) != len(self.columns):
                raise ValueError(
                    f"row {number} must have {len(self.columns)} entries (one per column), "
                    f"got {len(row)}"
                )
            self.cells.append([self._format(value) for value in row])

    def _format(self, value: object) -> str:
        if isinstance(value, (bool, np.bool_)):
            return str(bool(value))
        if isinstance(value, (numbers.Integral, np.integer)):
            return str(int(value))
        if isinstance(value, (numbers.Real, np.floating)):
            text = f"{float(value):.{self.precision}f}"
            # No "-0.0000": a value that rounds to zero is shown as zero.
            return text[1:] if text.startswith("-") and float(text) == 0 else text
        return str(value)

    def __repr__(self) -> str:
        widths = [
            max(len(header), *(len(row[j]) for row in self.cells)) if self.cells else len(header)
            for j, header in enumerate(self.columns)
        ]
        lines = ["  ".join(h.rjust(w) for h, w in zip(self.columns, widths, strict=True))]
        lines += [
            "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in self.cells
        ]
        return "\n".join(line.rstrip() for line in lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self.cells
        )
        return f'<table class="table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
