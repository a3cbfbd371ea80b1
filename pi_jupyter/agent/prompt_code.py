"""Where a prompt holds code: fenced code blocks and inline code spans, which ``{name}`` filling never touches.

A prompt is Markdown. Its code (a block fenced with ```` ``` ```` or ``~~~``, a span in
backticks) is sent to the model exactly as written: ``f"branch {n}"`` in a code block keeps its
braces. The notebook's ``{expr}`` (:mod:`pi_jupyter.notebook.prompt_text`) and a grid's
``{name}`` (:mod:`pi_jupyter.experiment.variants`) fill the prose around it only.
"""

from __future__ import annotations

import re

__all__ = ["code_and_prose"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")  # any indentation: a fence in a nested list is code too


def code_and_prose(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into ``(is_code, piece)``: fenced code blocks and inline code spans are code, the rest prose."""
    out: list[tuple[bool, str]] = []
    prose: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            prose.append(lines[i])
            i += 1
            continue
        fence = opening.group(1)
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*\r?\n?$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), len(lines) - 1)  # unclosed: to the end
        out.extend(_inline("".join(prose)))
        prose = []
        out.append((True, "".join(lines[i : end + 1])))
        i = end + 1
    out.extend(_inline("".join(prose)))
    return [(code, piece) for code, piece in out if piece]


def _inline(prose: str) -> list[tuple[bool, str]]:
    """Inline code spans (a run of backticks up to the next run of the same length) apart from the prose around them."""
    out: list[tuple[bool, str]] = []
    done = 0
    pos = 0
    while (start := prose.find("`", pos)) != -1:
        run = len(prose[start:]) - len(prose[start:].lstrip("`"))
        closing = re.compile(r"(?<!`)" + "`" * run + r"(?!`)")
        found = closing.search(prose, start + run)
        if found is None:  # no closing run: the backticks are literal
            pos = start + run
            continue
        out.append((False, prose[done:start]))
        out.append((True, prose[start : found.end()]))
        done = pos = found.end()
    out.append((False, prose[done:]))
    return out
