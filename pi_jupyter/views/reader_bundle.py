"""Display bundles that read cleanly in every reader: JupyterLab, nbconvert (HTML, sanitized HTML, Markdown), GitHub.

A pi output is shown by many readers. JupyterLab and GitHub draw its ``text/html`` (GitHub after an
allowlist sanitizer that drops styles); nbconvert's ``--sanitize-html`` escapes every tag outside a
short list (``<th>``, ``<details>``, ``<p>``, any ``style``) into visible text, and ``--to markdown``
writes the HTML as it is. So every pi output carries three forms: the HTML, a ``text/markdown``
form written with :mod:`.markdown_safe` (nothing in it becomes markup), and plain text; and its
metadata marks it as pi's (``{"pi_jupyter": {"view": KIND}}``), so nbconvert's preprocessor
(:mod:`pi_jupyter.notebook.durable.readers`) gives Markdown exports the Markdown and sanitized
HTML exports the Markdown drawn with the tags a sanitizer keeps, as it does for ``%%pi`` transcripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .markdown_safe import md_text

MARK = "pi_jupyter"
"""The output metadata key that marks a pi output (nbconvert's preprocessor and the save hook look for it)."""


def pi_bundle(html: str, markdown: str, plain: str, view: str) -> tuple[dict[str, str], dict[str, Any]]:
    """``(data, metadata)`` for ``_repr_mimebundle_``: the three forms, marked as the pi output ``view``."""
    return {"text/html": html, "text/markdown": markdown, "text/plain": plain}, {MARK: {"view": view}}


def md_cell(value: Any, limit: int = 300) -> str:
    """A value as the text of one Markdown table cell: one line, clipped, every special character escaped (``|`` too)."""
    text = " ".join(str(value if value is not None else "").split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return md_text(text) or " "


def md_table(head: Sequence[Any], rows: Sequence[Sequence[Any]], *, raw: bool = False) -> str:
    """A GitHub-flavoured Markdown table; cells are escaped with :func:`md_cell` (``raw``: already Markdown)."""

    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(str(c) if raw else md_cell(c) for c in cells) + " |"

    width = len(head)
    out = [line(head), "|" + "---|" * width]
    out += [line([*row, *[""] * (width - len(row))][:width]) for row in rows]
    return "\n".join(out)


__all__ = ["MARK", "md_cell", "md_table", "pi_bundle"]
