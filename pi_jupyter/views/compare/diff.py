"""Small text helpers the comparisons share: a word diff of two answers and durations as text."""

from __future__ import annotations

import difflib
import html
import re


def seconds_text(value: float | None) -> str:
    """A duration as people read it: ``4.2 s``, ``3 min 5 s``; ``–`` when unknown."""
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    return f"{int(value // 60)} min {value % 60:.0f} s"


_WORD = re.compile(r"\s+|[^\s]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def word_diff_html(a: str, b: str) -> tuple[str, str]:
    """Two answers as HTML with the words only one of them has marked (deleted on the left, inserted on the right)."""
    wa, wb = _words(a), _words(b)
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        old, new = html.escape("".join(wa[i1:i2])), html.escape("".join(wb[j1:j2]))
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f'<del style="background:#ffebe9;color:#82071e;text-decoration:line-through">{old}</del>')
        if new:
            right.append(f'<ins style="background:#dafbe1;color:#116329;text-decoration:none">{new}</ins>')
    return "".join(left), "".join(right)
