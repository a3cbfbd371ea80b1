"""The class view in Markdown, for the readers that do not draw its HTML (see :mod:`.reader_bundle`).

The students-by-cells table (per cell: turns, tool errors, a failure, the distance), who never
ran a cell, and the files with problems; every name, prompt and answer written as text.
"""

from __future__ import annotations

import os
from typing import Any

from . import digest
from .class_view.stats import CellWork
from .markdown_safe import md_text
from .reader_bundle import md_table


def _cell(work: CellWork | None) -> str:
    if work is None:
        return "—"
    bits = [digest.plural(work.turns, "turn")]
    if work.tool_errors:
        bits.append(digest.plural(work.tool_errors, "tool error"))
    if work.failed:
        bits.append("✖ failed")
    if work.distance is not None:
        bits.append(f"distance {work.distance:.2f}")
    return " · ".join(bits)


def class_markdown(view: Any) -> str:
    """The view's tables and lists as Markdown."""
    folder = view.folder
    parts = [f"**Class view · {md_text(os.path.basename(folder.folder) or folder.folder)}** — {md_text(view.summary())}"]
    for course in view.courses:
        parts.append(f"**{md_text(course.title)}** · {digest.plural(len(course.rows), 'student')}")
        head = ["student", "total", *[f"{k + 1}. {digest.preview(c.prompt, 40)}" for k, c in enumerate(course.columns)]]
        rows = [
            [
                row.student,
                f"{digest.cost_text(row.cost)} · {digest.tokens_text(row.tokens)} tok",
                *[_cell(row.cells.get(c.key)) for c in course.columns],
            ]
            for row in course.rows
        ]
        parts.append(md_table(head, rows))
        never = [f"- {k + 1}: {md_text(', '.join(names))}" for k, names in enumerate(course.never_ran().values()) if names]
        if never:
            parts.append("Who never ran a cell:\n\n" + "\n".join(never))
    problems = [f"- {md_text(n.name)}: {md_text(n.why)}" for n in folder.unreadable]
    problems += [f"- {md_text(s.student)}: {md_text(p)}" for s in folder.sessions for p in s.problems]
    if problems:
        parts.append("Files with problems:\n\n" + "\n".join(problems))
    return "\n\n".join(parts)
