"""What the class view counts, and how it compares answers.

Per student and cell of a course notebook (:class:`CellWork`): runs (re-runs are branches),
turns, tool calls, tool errors, tokens, cost, the prompt and the answer (the latest run on the
student's current branch), and the answer's **distance** from the reference answer (a
teacher's own session of the course, when given) or else from the class's common answer (the
one nearest to all the others): 1 minus the cosine similarity of their word counts, so 0 is
"the same words" and 1 "no word shared". A student's session as a whole (:class:`StudentRow`):
their branches, problems reading the file, and their prompts as a tree.

These are plain dataclasses, not pydantic models: a class builds hundreds of thousands of
them in a second, and workers send them back to the reading process.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

_WORD = re.compile(r"\w+")


@dataclass(slots=True)
class CellWork:
    """What one student did in one cell of the course (every run of it counted)."""

    runs: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens: int = 0
    cost: float = 0.0
    prompt: str = ""
    answer: str = ""
    error_texts: list[str] = field(default_factory=list)
    """The first few tool errors, as the tool reported them."""
    distance: float | None = None
    """From the reference (or the class's common) answer: 0 the same words, 1 none shared."""
    failed: bool = False
    """The run the cell shows failed: its last tool result is an error, or its reply stopped on an error.
    Such an answer is shown as failed whatever its distance (a quoted "File not found" reads much like a right answer)."""


@dataclass(slots=True)
class StudentRow:
    """One student: their cells, and their session as a whole."""

    student: str
    path: str
    name: str | None = None
    entries: int = 0
    branches: int = 0
    """Leaves of the session's tree: 1 for a session that never forked."""
    cells: dict[str, CellWork] = field(default_factory=dict)
    order: list[str] = field(default_factory=list, repr=False)
    """The cell keys in the order this student ran them (their current branch first)."""
    problems: list[str] = field(default_factory=list)
    still_writing: bool = False
    tree: list[TurnNode] = field(default_factory=list, repr=False)

    @property
    def cost(self) -> float:
        """Dollars over every cell."""
        return sum(c.cost for c in self.cells.values())

    @property
    def tokens(self) -> int:
        """Tokens over every cell."""
        return sum(c.tokens for c in self.cells.values())


@dataclass(slots=True)
class TurnNode:
    """One prompt of a student's tree, with the turns below it (for "click a student: their tree")."""

    prompt: str
    answer: str = ""
    current: bool = False
    tool_errors: int = 0
    children: list[TurnNode] = field(default_factory=list)


@dataclass(slots=True)
class Column:
    """One cell of the course notebook."""

    key: str
    prompt: str = ""
    measure: str | None = None
    """The answer distances are measured from."""
    measured_from: str = ""
    """``reference`` (the teacher's answer) or ``common`` (the class's most typical answer)."""


@dataclass(slots=True)
class Course:
    """The students who ran one course notebook, and its cells."""

    title: str
    columns: list[Column] = field(default_factory=list)
    rows: list[StudentRow] = field(default_factory=list)

    def never_ran(self) -> dict[str, list[str]]:
        """Column key -> the students who never ran that cell."""
        return {c.key: [r.student for r in self.rows if c.key not in r.cells] for c in self.columns}

    def cost_per_cell(self) -> dict[str, float]:
        """Column key -> dollars over every student."""
        return {c.key: sum(r.cells[c.key].cost for r in self.rows if c.key in r.cells) for c in self.columns}

    def branched_most(self, n: int = 5) -> list[StudentRow]:
        """The students whose trees have the most branches (more than one), most first."""
        return sorted((r for r in self.rows if r.branches > 1), key=lambda r: (-r.branches, r.student))[:n]

    def error_prompts(self) -> list[tuple[Column, StudentRow, CellWork]]:
        """Each student's cell whose prompt led to tool errors, most errors first."""
        found = [(c, r, r.cells[c.key]) for c in self.columns for r in self.rows if c.key in r.cells and r.cells[c.key].tool_errors]
        return sorted(found, key=lambda t: -t[2].tool_errors)


def words(text: str) -> Counter[str]:
    """The word counts of ``text`` (lower case)."""
    return Counter(_WORD.findall(text.lower()))


def cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine similarity of two word counts (0 when either is empty)."""
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    dot = sum(n * b.get(w, 0) for w, n in a.items())
    return dot / math.sqrt(sum(n * n for n in a.values()) * sum(n * n for n in b.values()))


def common_answer(answers: list[str], counted: dict[str, Counter[str]] | None = None) -> str | None:
    """The answer nearest to all the others (nearest to the sum of their normalized word counts).

    ``counted``: word counts already made, by answer text (filled in as a side effect).
    """
    counted = {} if counted is None else counted
    vectors = []
    for a in answers:
        if a.strip():
            if a not in counted:
                counted[a] = words(a)
            vectors.append((a, counted[a]))
    if not vectors:
        return None
    centre: Counter[str] = Counter()
    for _, v in vectors:
        norm = math.sqrt(sum(n * n for n in v.values())) or 1.0
        for w, n in v.items():
            centre[w] += n / norm  # type: ignore[assignment]  # float weights in a Counter
    return max(vectors, key=lambda t: cosine(t[1], centre))[0]


__all__ = ["CellWork", "Column", "Course", "StudentRow", "TurnNode", "common_answer", "cosine", "words"]
