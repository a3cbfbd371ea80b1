"""The class view: a whole class's sessions of a course notebook in one table (``pi-jupyter class``, ``%pi class``).

::

    from pi_jupyter.views.class_view.view import class_view

    view = class_view("submissions/", reference="teacher.jsonl")
    view.table()          # a DataFrame: one row per student and cell
    view.page()           # one self-contained HTML page
    view                  # in a notebook: the table, the totals, every answer by cell, every student's tree

See :mod:`.class_read` for how a folder is read (damaged and foreign files are listed, never
stop the view) and :mod:`.class_stats` for what each cell of the table counts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...session.jsonl import paused_gc
from .courses import build_courses
from .load import read_one, read_rows
from .page import render_fragment, render_page
from .read import ClassFolder, FileNote, list_folder
from .stats import Course


@dataclass
class ClassView:
    """A folder of sessions as courses of students by cells (see :func:`class_view`)."""

    folder: ClassFolder
    courses: list[Course] = field(default_factory=list)
    reference: str | None = None
    """The teacher's session the distances are measured from (``None``: each cell's common answer)."""

    def table(self) -> Any:
        """One row per course, student and cell: runs, turns, tool calls and errors, tokens, cost, distance, prompt, answer."""
        import pandas as pd

        rows = []
        for course in self.courses:
            for row in course.rows:
                for k, col in enumerate(course.columns):
                    work = row.cells.get(col.key)
                    rows.append(
                        {
                            "course": course.title,
                            "student": row.student,
                            "cell": k + 1,
                            "ran": work is not None,
                            "runs": work.runs if work else 0,
                            "turns": work.turns if work else 0,
                            "tool_calls": work.tool_calls if work else 0,
                            "tool_errors": work.tool_errors if work else 0,
                            "tokens": work.tokens if work else 0,
                            "cost": work.cost if work else 0.0,
                            "distance": work.distance if work else None,
                            "failed": work.failed if work else None,
                            "prompt": work.prompt if work else col.prompt,
                            "answer": work.answer if work else "",
                        }
                    )
        return pd.DataFrame(rows)

    def html(self) -> str:
        """The view as an HTML fragment (what a notebook shows)."""
        return render_fragment(self.folder, self.courses, self.reference)

    def page(self) -> str:
        """The view as one self-contained HTML page."""
        return render_page(self.folder, self.courses, self.reference)

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        from ..class_markdown import class_markdown
        from ..reader_bundle import pi_bundle

        return pi_bundle(self.html(), class_markdown(self), repr(self), "class")

    def __repr__(self) -> str:
        return f"ClassView({self.folder.folder!r}: {self.summary()})"

    def summary(self) -> str:
        """One line: sessions, courses, files with problems."""
        f = self.folder
        bad = len(f.unreadable) + sum(1 for s in f.sessions if s.problems)
        return (
            f"{len(f.sessions)} sessions in {len(self.courses)} course notebook{'s' if len(self.courses) != 1 else ''}, "
            f"{bad} file{'s' if bad != 1 else ''} with problems, {len(f.ignored)} other file{'s' if len(f.ignored) != 1 else ''} not read"
        )


def class_view(folder: str | os.PathLike[str], *, reference: str | os.PathLike[str] | None = None) -> ClassView:
    """Read every session file in ``folder`` into a :class:`ClassView`.

    ``reference``: a session file of the course run by the teacher; each cell's distances are
    measured from its answer there (else from the class's most common answer). A folder that
    does not exist, or a reference that is not a session file, raises ``ValueError`` with one line.
    """
    try:
        listed, paths = list_folder(folder)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise ValueError(str(exc)) from None
    ref_row = None
    ref_path = None
    if reference is not None:
        ref_path = os.path.abspath(os.fspath(reference))
        if not os.path.exists(ref_path):
            raise ValueError(f"--reference: no session file at {ref_path}")
        found, ref_row = read_one(ref_path)
        if isinstance(found, FileNote):
            raise ValueError(f"--reference {found.name}: {found.why}")
        paths = [p for p in paths if os.path.abspath(p) != ref_path]  # the teacher is no student
    rows = []
    for found, row in read_rows(paths):
        if isinstance(found, FileNote):
            listed.unreadable.append(found)
        else:
            listed.sessions.append(found)
            if row is not None:
                rows.append(row)
    with paused_gc():
        courses = build_courses(rows, ref_row)
    return ClassView(folder=listed, courses=courses, reference=ref_path)


__all__ = ["ClassView", "class_view"]
