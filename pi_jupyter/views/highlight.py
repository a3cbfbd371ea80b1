"""Markdown to sanitizer-safe HTML, with code highlighted by Pygments (inline styles, no stylesheet).

Used by every static rendering (durable notebook outputs, exports). Raw HTML in the source is
escaped, never passed through (``html=False``); links with ``javascript:`` and similar schemes
are refused by markdown-it's link validation. Colours are inline ``style`` attributes, which
JupyterLab's sanitizer keeps (GitHub drops them and still shows the code).
"""

from __future__ import annotations

import contextvars
import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def highlight_code(code: str, language: str = "", *, insertable: bool = False) -> str:
    """``code`` as a ``<pre><code>`` block, coloured when ``language`` is one Pygments knows.

    ``insertable`` marks the block (``data-pi-insert``) as code a reader may put in a new cell.
    """
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
    if insertable:
        attr += ' data-pi-insert="1"'
    return f'<pre style="{PRE_STYLE}"{attr}><code>{body}</code></pre>\n'


_INSERTABLE: contextvars.ContextVar[Callable[[str, str], bool] | None] = contextvars.ContextVar("pi_insertable", default=None)


def _fence_highlight(code: str, lang: str, _attrs: str) -> str:
    rule = _INSERTABLE.get()
    return highlight_code(code, lang, insertable=bool(rule is not None and rule(code, lang)))


@contextmanager
def _marking(rule: Callable[[str, str], bool] | None) -> Iterator[None]:
    token = _INSERTABLE.set(rule)
    try:
        yield
    finally:
        _INSERTABLE.reset(token)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence_highlight, "breaks": False})
    md.enable(["table", "strikethrough"])
    return md


def markdown_html(text: str, *, insertable: Callable[[str, str], bool] | None = None) -> str:
    """Markdown ``text`` (a model's answer) as HTML with raw HTML escaped and code highlighted.

    ``insertable(code, language)`` says which fenced code blocks to mark ``data-pi-insert``
    ("Insert as cell" is offered on those where the output's buttons run).
    """
    with _marking(insertable):
        return _parser().render(text or "")


__all__ = ["PRE_STYLE", "highlight_code", "markdown_html"]
