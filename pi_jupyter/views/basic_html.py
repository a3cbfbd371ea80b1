"""A transcript's Markdown as HTML made of the few tags every sanitizer keeps.

nbconvert's ``--sanitize-html`` (bleach, as nbviewer-like services use it) escapes every tag
outside a short list into visible text: ``<p>``, ``<details>``, ``<h4>``, ``<br>``, ``<th>``,
any ``style`` and every script would be printed. :func:`basic_html` draws the same Markdown
the ``text/markdown`` output holds with :data:`BASIC_TAGS` only (paragraphs and headings become
``div``, header cells ``td`` with ``b``), no attribute but ``class`` and a safe ``href``, so such
a reader shows a clean transcript. The Markdown is read with raw HTML off, like every
rendering here.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

BASIC_TAGS = frozenset(
    {"a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul", "div", "pre", "span", "table", "tr", "td"}
)
"""What nbconvert's sanitizer keeps (bleach's defaults plus ``div``, ``pre``, ``span``, ``table``, ``tr``, ``td``)."""

_SAFE_HREF = re.compile(r"^(https?:|mailto:|#)", re.I)


def _tag(open_: str, close: str) -> Any:
    def rule(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        return open_ if tokens[idx].nesting == 1 else close

    return rule


def _block_close(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    # no margin survives a sanitizer (no <p>, no style): an empty line keeps top-level blocks apart
    return "</div>\n" + ("<div>&#160;</div>\n" if tokens[idx].level == 0 else "")


def _code(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    return f"<pre><code>{html.escape(tokens[idx].content)}</code></pre>\n"


def _link_open(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    href = str(tokens[idx].attrGet("href") or "")
    return f'<a href="{html.escape(href)}">' if _SAFE_HREF.match(href) else "<span>"


def _link_close(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    opened = next((t for t in reversed(tokens[:idx]) if t.type == "link_open"), None)
    return "</a>" if opened is not None and _SAFE_HREF.match(str(opened.attrGet("href") or "")) else "</span>"


def _image(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    alt = html.escape(tokens[idx].content or "image")
    return f"<i>[{alt}]</i>"


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.add_render_rule("paragraph_open", _tag("<div>", ""))
    md.add_render_rule("paragraph_close", _block_close)
    for name in ("heading_open", "heading_close"):
        md.add_render_rule(name, _tag("<div><b>", "</b></div>\n"))
    for name in ("thead_open", "thead_close", "tbody_open", "tbody_close"):
        md.add_render_rule(name, _tag("", ""))
    for name in ("th_open", "th_close"):
        md.add_render_rule(name, _tag("<td><b>", "</b></td>"))
    for name in ("td_open", "td_close"):
        md.add_render_rule(name, _tag("<td>", "</td>"))
    for name in ("s_open", "s_close"):
        md.add_render_rule(name, _tag("~~", "~~"))
    md.add_render_rule("hr", lambda self, tokens, idx, options, env: "<div>———</div>\n")
    md.add_render_rule("hardbreak", lambda self, tokens, idx, options, env: "\n")
    for name in ("fence", "code_block"):
        md.add_render_rule(name, _code)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("link_close", _link_close)
    md.add_render_rule("image", _image)
    return md


def basic_html(markdown: str) -> str:
    """``markdown`` as HTML of :data:`BASIC_TAGS` only, inside one ``div`` (readable after any sanitizer)."""
    return f'<div class="pi-basic">{_parser().render(markdown or "")}</div>'


__all__ = ["BASIC_TAGS", "basic_html"]
