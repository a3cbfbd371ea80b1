"""A folder's sessions as courses: students grouped by the course notebook they ran, its cells as columns.

Each ``%%pi`` cell a student ran left a ``pi_jupyter.cell`` record naming the entries it
produced (see :mod:`pi_jupyter.notebook.cells`); a cell is keyed by its notebook cell id, so
every student's run of the same course cell lands in the same column, lined up as
:func:`~pi_jupyter.views.compare.cells.merge_orders` lines up two branches. A pi session (no
cell records) is cut at its prompts instead, keyed by their text. Sessions that share few
cells (another course notebook) form a course of their own. Distances are filled in here (see
:mod:`.class_stats`).
"""

from __future__ import annotations

from collections import Counter

from ..compare.cells import merge_orders
from .stats import Column, Course, StudentRow, common_answer, cosine, words

_SAME_COURSE = 0.5
"""Two sessions are of one course when at least this share of the smaller one's cells are the other's too."""


def _courses(rows: list[StudentRow]) -> list[list[StudentRow]]:
    """Students grouped by course notebook: linked when most of the smaller one's cells are shared."""
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [set(r.cells) for r in rows]
    owners: dict[str, list[int]] = {}
    for i, ks in enumerate(keys):
        for k in ks:
            owners.setdefault(k, []).append(i)
    for i, ks in enumerate(keys):
        shared: Counter[int] = Counter(j for k in ks for j in owners[k] if j > i)
        for j, n in shared.items():
            if n >= _SAME_COURSE * min(len(ks), len(keys[j])):
                parent[find(j)] = find(i)
    groups: dict[int, list[StudentRow]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(find(i), []).append(r)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0].student))


def build_courses(rows: list[StudentRow], ref: StudentRow | None = None) -> list[Course]:
    """The students grouped into courses, each with its columns and each answer's distance (from ``ref``'s answer, else the common one)."""
    courses = []
    for n, group in enumerate(_courses(rows), 1):
        keys = merge_orders([r.order for r in group])
        names = Counter(r.name for r in group if r.name)
        title = names.most_common(1)[0][0] if names else f"course {n}"
        columns = []
        for key in keys:
            prompts = Counter(r.cells[key].prompt for r in group if key in r.cells and r.cells[key].prompt)
            column = Column(key=key, prompt=prompts.most_common(1)[0][0] if prompts else "")
            answers = [r.cells[key].answer for r in group if key in r.cells]
            counted: dict[str, Counter[str]] = {}  # one count per distinct answer (many students answer alike)
            if ref is not None and key in ref.cells and ref.cells[key].answer.strip():
                column.measure, column.measured_from = ref.cells[key].answer, "reference"
            elif len(answers) > 1:
                column.measure, column.measured_from = common_answer(answers, counted), "common"
            if column.measure is not None:
                target = counted.get(column.measure) or words(column.measure)
                for r in group:
                    work = r.cells.get(key)
                    if work is not None:
                        mine = counted.get(work.answer)
                        if mine is None:
                            mine = counted[work.answer] = words(work.answer)
                        work.distance = round(1 - cosine(mine, target), 2)
            columns.append(column)
        courses.append(Course(title=title, columns=columns, rows=sorted(group, key=lambda r: r.student)))
    return courses


__all__ = ["build_courses"]
