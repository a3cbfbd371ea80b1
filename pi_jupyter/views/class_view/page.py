"""The class view as HTML: the table of students by cells, the totals, every answer by cell, every student's tree.

One renderer for the page ``pi-jupyter class`` writes and the output of ``%pi class``. It
works without JavaScript: the answers of a cell and the tree of a student are ``<details>``
that a click on their summary opens, and the table's links jump to them. Where scripts run (the
page, a trusted notebook) a small script opens the one clicked in the table and marks the
student's answer. Everything from the files (names, prompts, answers, errors) is escaped, and
nothing from them becomes an id or an attribute other than escaped text.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from .. import digest
from ..export.page_file import GENERATOR
from .read import ClassFolder
from .stats import CellWork, Course, StudentRow, TurnNode

ANSWER_CHARS = 1200
_ASSETS = Path(__file__).parent.parent / "assets"


def _e(text: object) -> str:
    return html.escape(digest.utf8_safe(str(text)), quote=True)


def _heat(distance: float | None, failed: bool = False) -> str:
    if failed:
        return " pic-failed"  # a failure is never coloured as close to the right answer
    if distance is None:
        return ""
    return f" pic-d{min(4, int(distance * 5))}"


def _cell_td(g: int, k: int, i: int, work: CellWork | None) -> str:
    if work is None:
        return '<td class="pic-never" title="never ran this cell">—</td>'
    bits = [f"{digest.plural(work.turns, 'turn')} · {digest.plural(work.tool_calls, 'tool')}"]
    if work.tool_errors:
        bits.append(f'<span class="pic-err">{digest.plural(work.tool_errors, "tool error")}</span>')
    bits.append(f"{digest.tokens_text(work.tokens)} tok · {digest.cost_text(work.cost)}")
    if work.runs > 1:
        bits.append(digest.plural(work.runs, "run"))
    if work.failed:
        bits.append('<span class="pic-err">✖ failed</span>')
    if work.distance is not None:
        bits.append(f'<span class="pic-dist">distance {work.distance:.2f}</span>')
    link = f'<a href="#pic-c{g}-{k}" data-card="pic-a{g}-{k}-{i}">{"<br>".join(bits)}</a>'
    return f'<td class="pic-cell{_heat(work.distance, work.failed)}">{link}</td>'


def _table(g: int, course: Course) -> str:
    cols = course.columns
    head = "".join(
        f'<th class="pic-col"><a href="#pic-c{g}-{k}">{k + 1}. {_e(digest.preview(c.prompt, 48) or "(no prompt)")}</a></th>'
        for k, c in enumerate(cols)
    )
    parts = [f'<div class="pic-scroll"><table class="pic-table"><thead><tr><th>student</th><th>total</th>{head}</tr></thead><tbody>']
    for i, row in enumerate(course.rows):
        sub = digest.plural(row.branches, "branch", "branches") + (" · still being written" if row.still_writing else "")
        if row.problems:
            sub += f' · <span class="pic-err">{digest.plural(len(row.problems), "problem")}</span>'
        parts.append(
            f'<tr><th class="pic-student"><a href="#pic-s{g}-{i}">{_e(row.student)}</a><div class="pic-sub">{sub}</div></th>'
            f'<td class="pic-total">{digest.cost_text(row.cost)}<br>{digest.tokens_text(row.tokens)} tok</td>'
        )
        parts.extend(_cell_td(g, k, i, row.cells.get(c.key)) for k, c in enumerate(cols))
        parts.append("</tr>")
    per_cell = course.cost_per_cell()
    never = course.never_ran()
    total = sum(per_cell.values())
    foot = "".join(f"<td>{digest.cost_text(per_cell[c.key])}" + _never_line(len(never[c.key])) for c in cols)
    parts.append(f'</tbody><tfoot><tr><th>cost per cell</th><td class="pic-total">{digest.cost_text(total)}</td>{foot}</tr></tfoot>')
    parts.append("</table></div>")
    return "".join(parts)


def _never_line(n: int) -> str:
    return f'<div class="pic-sub">{n} never ran it</div>' if n else ""


def _summary(g: int, course: Course) -> str:
    never = course.never_ran()
    rows = {r.student: i for i, r in enumerate(course.rows)}
    missed = [
        f'<li><a href="#pic-c{g}-{k}">{k + 1}. {_e(digest.preview(c.prompt, 40))}</a>: {", ".join(_e(s) for s in never[c.key])}</li>'
        for k, c in enumerate(course.columns)
        if never[c.key]
    ]
    branched = [
        f'<li><a href="#pic-s{g}-{rows[r.student]}">{_e(r.student)}</a>: {digest.plural(r.branches, "branch", "branches")}</li>'
        for r in course.branched_most()
    ]
    index = {c.key: k for k, c in enumerate(course.columns)}
    errors = [
        f'<li><a href="#pic-c{g}-{index[c.key]}">{index[c.key] + 1}.</a> {_e(r.student)}: <q>{_e(digest.preview(w.prompt, 80))}</q> → '
        f'<span class="pic-err">{digest.plural(w.tool_errors, "tool error")}</span>'
        + (f" <code>{_e(digest.preview(w.error_texts[0], 100))}</code>" if w.error_texts else "")
        + "</li>"
        for c, r, w in course.error_prompts()[:40]
    ]
    blocks = [
        ("Who never ran a cell", missed, "everyone ran every cell"),
        ("Who branched most", branched, "no one's session branched"),
        ("Prompts that led to tool errors", errors, "no tool errors"),
    ]
    shown = [f"<div><h3>{t}</h3>" + (f"<ul>{''.join(li)}</ul>" if li else f"<p><em>{none}</em></p>") + "</div>" for t, li, none in blocks]
    return '<div class="pic-summary">' + "".join(shown) + "</div>"


_AGAINST = {"reference": "distance from the reference answer", "common": "distance from the class's common answer"}


def _answers(g: int, course: Course) -> str:
    parts = ["<h3>Answers, cell by cell</h3>"]
    for k, col in enumerate(course.columns):
        against = _AGAINST.get(col.measured_from, "")
        cards = []
        if col.measure is not None:
            label = "reference answer" if col.measured_from == "reference" else "the class's common answer"
            cards.append(f'<div class="pic-card pic-measure"><b>{label}</b><pre>{_e(digest.clip(col.measure, ANSWER_CHARS))}</pre></div>')
        ranked = sorted(
            ((i, r, r.cells[col.key]) for i, r in enumerate(course.rows) if col.key in r.cells),
            key=lambda t: (t[2].failed, t[2].distance if t[2].distance is not None else 2.0, t[1].student),
        )
        for i, row, work in ranked:
            dist = (" · ✖ failed" if work.failed else "") + (f" · distance {work.distance:.2f}" if work.distance is not None else "")
            runs = f" · {work.runs} runs" if work.runs > 1 else ""
            answer = _e(digest.clip(work.answer, ANSWER_CHARS)) or "<em>(no answer)</em>"
            cards.append(
                f'<div class="pic-card{_heat(work.distance, work.failed)}" id="pic-a{g}-{k}-{i}"><b>{_e(row.student)}</b>'
                f'<span class="pic-sub">{dist}{runs}</span><pre>{answer}</pre></div>'
            )
        missing = len(course.rows) - len(ranked)
        note = f" · {missing} never ran it" if missing else ""
        prompt = _e(digest.preview(col.prompt, 120) or "(no prompt)")
        parts.append(
            f'<details class="pic-answers" id="pic-c{g}-{k}"><summary><b>{k + 1}.</b> {prompt}'
            f'<span class="pic-sub"> · {digest.plural(len(ranked), "answer")}{note}{" · " + against if against else ""}</span></summary>'
            f'<div class="pic-grid">{"".join(cards)}</div></details>'
        )
    return "".join(parts)


def _tree_html(nodes: list[TurnNode]) -> str:
    items = []
    for n in nodes:
        mark = ' class="pic-cur"' if n.current else ""
        err = f' <span class="pic-err">{digest.plural(n.tool_errors, "tool error")}</span>' if n.tool_errors else ""
        answer = f' <span class="pic-sub">→ {_e(n.answer)}</span>' if n.answer else ""
        items.append(f"<li{mark}>{_e(n.prompt)}{answer}{err}{_tree_html(n.children) if n.children else ''}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _students(g: int, course: Course) -> str:
    parts = ["<h3>Students' trees</h3>"]
    for i, row in enumerate(course.rows):
        parts.append(
            f'<details class="pic-tree" id="pic-s{g}-{i}"><summary><b>{_e(row.student)}</b>'
            f'<span class="pic-sub"> · {_student_line(row)}</span></summary>'
            + "".join(f'<p class="pic-err">{_e(p)}</p>' for p in row.problems)
            + (_tree_html(row.tree) if row.tree else "<p><em>no prompts</em></p>")
            + "</details>"
        )
    return "".join(parts)


def _student_line(row: StudentRow) -> str:
    name = f"session {_e(row.name)} · " if row.name else ""
    return (
        f"{name}{digest.plural(row.entries, 'entry', 'entries')} · {digest.plural(row.branches, 'branch', 'branches')} · "
        f"{digest.cost_text(row.cost)} · {_e(os.path.basename(row.path))}"
    )


def _files(folder: ClassFolder) -> str:
    bad = [f"<li><b>{_e(n.name)}</b>: {_e(n.why)}</li>" for n in folder.unreadable]
    odd = [f"<li><b>{_e(s.student)}</b>: {_e(p)}</li>" for s in folder.sessions for p in s.problems]
    other = [f"<li>{_e(n.name)}: {_e(n.why)}</li>" for n in folder.ignored]
    parts = []
    if bad or odd:
        parts.append('<div class="pic-problems"><h3>Files with problems</h3><ul>' + "".join(bad + odd) + "</ul></div>")
    if other:
        head = f"{digest.plural(len(other), 'other file')} in the folder, not read"
        parts.append(f'<details class="pic-ignored"><summary>{head}</summary><ul>{"".join(other)}</ul></details>')
    return "".join(parts)


def render_fragment(folder: ClassFolder, courses: list[Course], reference: str | None = None) -> str:
    """The class view as one HTML fragment (its own style and script inside), for a notebook output or a page.

    ``reference``: the teacher's session file the distances were measured from, if any.
    """
    meta = (
        f"{digest.plural(len(folder.sessions), 'session')} · {digest.plural(len(courses), 'course notebook')} · "
        f"{digest.plural(len(folder.unreadable), 'file')} with problems"
        + (f" · distances from {_e(os.path.basename(reference))}" if reference else " · distances from each cell's common answer")
    )
    parts = [
        f'<div class="pi-class"><style>{_asset("class_view.css")}</style>',
        f'<h1>Class view · {_e(os.path.basename(folder.folder) or folder.folder)}</h1><p class="pic-meta">{meta}</p>',
        _files(folder),
    ]
    if not courses:
        parts.append("<p><em>No session files to show.</em></p>")
    for g, course in enumerate(courses):
        title = f"{_e(course.title)} · {digest.plural(len(course.rows), 'student')} · {digest.plural(len(course.columns), 'cell')}"
        parts.append(f'<section class="pic-course"><h2>{title}</h2>')
        parts.extend((_table(g, course), _summary(g, course), _answers(g, course), _students(g, course)))
        parts.append("</section>")
    parts.append(f"<script>{_asset('class_view.js')}</script></div>")
    return "".join(parts)


def render_page(folder: ClassFolder, courses: list[Course], reference: str | None = None) -> str:
    """The class view as one self-contained page: no network, everything inline."""
    title = f"Class view · {os.path.basename(folder.folder)}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR}<title>{_e(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        f"<body>{render_fragment(folder, courses, reference)}</body></html>\n"
    )


def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


__all__ = ["render_fragment", "render_page"]
