"""Markdown to sanitizer-safe HTML, with code highlighted by Pygments (inline styles, no stylesheet).

Used by every static rendering (durable notebook outputs, exports). Raw HTML in the source is
escaped, never passed through (``html=False``); links with ``javascript:`` and similar schemes
are refused by markdown-it's link validation. Colours are inline ``style`` attributes, which
JupyterLab's sanitizer keeps (GitHub drops them and still shows the code).
"""

from __future__ import annotations

import html
from functools import lru_cache

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

PRE_STYLE = "padding:.5em .7em;border-radius:4px;background:rgba(127,127,127,.12);overflow-x:auto;white-space:pre;font-size:.9em"
"""Inline style of every code block of a static rendering."""

_FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style="default")
_MAX_HIGHLIGHT = 20_000  # longer code is shown plain: highlighting it would slow a render for little


def highlight_code(code: str, language: str = "") -> str:
    """``code`` as a ``<pre><code>`` block, coloured when ``language`` is one Pygments knows."""
    lang = (language or "").strip().split()[0] if language and language.strip() else ""
    body = None
    if lang and len(code) <= _MAX_HIGHLIGHT:
        try:
            lexer = get_lexer_by_name(lang)
        except ClassNotFound:
            lexer = None
        if lexer is not None:
            body = highlight(code, lexer, _FORMATTER)
    if body is None:
        body = html.escape(code)
    attr = f' data-lang="{html.escape(lang)}"' if lang else ""
    return f'<pre style="{PRE_STYLE}"{attr}><code>{body}</code></pre>\n'


def _fence_highlight(code: str, lang: str, _attrs: str) -> str:
    return highlight_code(code, lang)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence_highlight, "breaks": False})
    md.enable(["table", "strikethrough"])
    return md


def markdown_html(text: str) -> str:
    """Markdown ``text`` (a model's answer) as HTML with raw HTML escaped and code highlighted."""
    return _parser().render(text or "")


__all__ = ["PRE_STYLE", "highlight_code", "markdown_html"]
