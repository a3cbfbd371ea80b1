"""What a pi output becomes for exports read without scripts: Markdown files and sanitized HTML.

Called by :class:`~pi_jupyter.notebook.durable.nbconvert.PiDurableOutputs` with the exporter:

* A Markdown export (``--to markdown``) writes the first type it knows, ``text/html`` before
  ``text/markdown``: pi outputs lose their HTML, so the file holds the Markdown transcript (as
  ``pi-jupyter export --format markdown`` writes it), not HTML blocks and scripts. The source of
  a ``%%pi`` cell goes in a fence longer than any backtick run in it (nbconvert's own fence of
  three backticks ends at the first one a prompt holds).
* An HTML export with ``sanitize_html`` (bleach escapes every tag outside a short list into
  visible text): pi outputs show their transcript drawn from the Markdown with those tags only
  (:func:`pi_jupyter.views.basic_html.basic_html`), so no tag and no script code is printed.

Everything else is left as it is, and so is whatever is not shaped as nbformat says.
"""

from __future__ import annotations

import html
from typing import Any

from ...views.basic_html import basic_html
from ...views.markdown_safe import md_fence
from .outputs import is_pi_output


def _pi_outputs(nb: Any) -> list[dict[str, Any]]:
    found = []
    for cell in nb.get("cells") or []:
        if isinstance(cell, dict):
            found += [o for o in cell.get("outputs") or [] if isinstance(o, dict) and is_pi_output(o)]
    return found


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""


def for_markdown(nb: Any) -> None:
    """Pi outputs keep their Markdown (or plain text), not their HTML; ``%%pi`` sources get a fence that holds them."""
    for output in _pi_outputs(nb):
        data = output["data"]
        if "text/markdown" in data or "text/plain" in data:
            data.pop("text/html", None)
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return
    language = str(((nb.get("metadata") or {}).get("language_info") or {}).get("name") or "")
    import nbformat

    for index in range(len(cells) - 1, -1, -1):
        cell = cells[index]
        source = _text(cell.get("source")) if isinstance(cell, dict) and cell.get("cell_type") == "code" else ""
        if not source.startswith("%%pi") or "```" not in source:
            continue
        metadata = cell.setdefault("metadata", {})
        transient = metadata.setdefault("transient", {}) if isinstance(metadata, dict) else None
        if not isinstance(transient, dict) or transient.get("remove_source"):
            continue  # not ours to change, or done already (the preprocessor may be listed twice)
        transient["remove_source"] = True
        cells.insert(index, nbformat.v4.new_markdown_cell(md_fence(source, str(metadata.get("magics_language") or language))))


def for_sanitizer(nb: Any) -> None:
    """Pi outputs' HTML is their transcript in the tags a sanitizer keeps (no script, no style, no ``details``)."""
    for output in _pi_outputs(nb):
        data = output["data"]
        markdown = _text(data.get("text/markdown"))
        if "text/html" not in data:
            if markdown:  # nbconvert would draw the Markdown with <h3> and <p>, which the sanitizer prints as text
                data["text/html"] = basic_html(markdown)
            continue
        plain = _text(data.get("text/plain"))
        data["text/html"] = basic_html(markdown) if markdown else f"<pre>{html.escape(plain)}</pre>"


def for_reader(nb: Any, exporter: Any) -> None:
    """Adapt pi outputs of ``nb`` to what ``exporter`` writes (Markdown, sanitized HTML); others are untouched."""
    if getattr(exporter, "output_mimetype", "") == "text/markdown":
        for_markdown(nb)
    elif getattr(exporter, "sanitize_html", False) is True:
        for_sanitizer(nb)


__all__ = ["for_markdown", "for_reader", "for_sanitizer"]
