"""Markdown that no reader turns into markup, for ``text/markdown`` outputs and Markdown exports.

Many Markdown readers pass raw HTML through (nbconvert's HTML export, pandoc, Python-Markdown
and mkdocs, markdown-it with ``html``, most editors' previews), and some honour attribute
syntax (``{onclick=...}``: pandoc, kramdown, Python-Markdown's ``attr_list``) or
``javascript:`` links. So every piece of text a transcript holds is written as one of:

* :func:`md_text`: plain text (a session name, a label, a notice, the status line): one line,
  with every character that could start Markdown or HTML escaped;
* :func:`md_code` / :func:`md_fence`: code shown as written, in a span or a fence longer than
  any backtick run inside;
* :func:`md_markdown` / :func:`md_quote`: Markdown written by a model or a user, which stays
  Markdown (emphasis, lists, tables, code, ``https`` links) while no ``<`` outside code reaches
  the reader, ``{`` cannot open attributes, and links are plain text when the text holds a
  ``javascript:``-like destination.

Where the text is code is decided as CommonMark does (markdown-it-py parses it): a backslash
before a backtick, a fence whose info string holds a backtick, or a code span that a reader
would close on another line are not code. Code is kept as written only where every reader
agrees: a fence at the top level, in column 0, closed by the same fence; elsewhere ``<`` is
escaped even in code (which then shows ``&lt;``: safe, and rare). The result is parsed again
and, if anything still reads as HTML or as an unsafe link, the whole text is escaped.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_TEXT_SPECIAL = frozenset("\\`*_[]{}#~|")
_SAFE_URL = re.compile(r"^(https?:|mailto:|#|[^:]*$)", re.I)
_BAD_LINK = re.compile(r"\](\(|:)<?(javascript|vbscript|livescript|data):")
_FENCE_LIKE = re.compile(r"^(`{3,}|~{3,})")
# a line that may open a fence in some reader: after any indent, quote marks and list markers
_OPENS_FENCE = re.compile(r"^((?:[ \t>]|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))*)(?:`{3,}|~{3,})")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True  # type: ignore[method-assign]  # see every link a lenient reader would make
    return md


def _lines(text: str) -> str:
    # CommonMark ends lines at \n, \r and \r\n; one kind keeps the line arithmetic below exact
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")


def md_text(text: Any) -> str:
    """``text`` as plain Markdown text on one line: nothing in it becomes markup, emphasis or a link."""
    out = []
    for ch in " ".join(str(text).split()):
        if ch == "<":
            out.append("&lt;")
        elif ch == "&":
            out.append("&amp;")
        elif ch in _TEXT_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_code(text: Any) -> str:
    """``text`` as an inline code span on one line (backticks inside are kept)."""
    body = " ".join(_lines(str(text)).split("\n"))
    runs = [len(m) for m in re.findall(r"`+", body)]
    ticks = "`" * (max(runs, default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def md_fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block whose fence is longer than any backtick run inside."""
    body = _lines(text)
    runs = [len(m) for m in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    if body and not body.endswith("\n"):
        body += "\n"
    return f"{fence}{re.sub(r'[^A-Za-z0-9_+.-]', '', info)}\n{body}{fence}"


# ------------------------------------------------------------------------------ Markdown from a model


def _scan(s: str, *, code: bool, links: bool) -> str:
    """Escape ``<`` and ``{`` (and ``[``/``]`` unless ``links``) outside code spans (only with ``code``)."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n and s[i + 1] in _PUNCT:
            nxt = s[i + 1]
            out.append("&lt;" if nxt == "<" else s[i : i + 2])  # Python-Markdown has no \< escape
            i += 2
            continue
        if ch == "`" and code:
            j = i
            while j < n and s[j] == "`":
                j += 1
            close = _closing_run(s, j, j - i)
            if close >= 0:
                out.append(s[i : close + j - i])
                i = close + j - i
            else:
                out.append(s[i:j])
                i = j
            continue
        if ch == "<":
            out.append("&lt;")
        elif ch == "{" or (not links and ch in "[]"):
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _closing_run(s: str, start: int, length: int) -> int:
    """Where the next run of exactly ``length`` backticks at or after ``start`` begins (-1: none)."""
    i = s.find("`" * length, start)
    while i >= 0:
        end = i + length
        if (i == 0 or s[i - 1] != "`") and (end >= len(s) or s[end] != "`"):
            return i
        while end < len(s) and s[end] == "`":
            end += 1
        i = s.find("`" * length, end)
    return -1


def _portable_fences(tokens: list[Any], lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges of fences every reader reads as code: top level, column 0, closed by the same fence, plain info."""
    found = []
    for tok in tokens:
        if tok.type != "fence" or tok.level != 0 or not tok.map:
            continue
        a, b = tok.map
        opener, markup = lines[a], tok.markup
        closer = lines[b - 1].rstrip() if b - 1 > a else None
        plain_info = not any(c in tok.info for c in "`{<")
        if opener.startswith(markup) and opener[len(markup) : len(markup) + 1] != markup[0] and closer == markup and plain_info:
            found.append((a, b))
    # Python-Markdown looks for fences line by line in the whole text: any other fence-like line
    # in column 0 could pair with one of these, and then what is code differs between readers
    inside = {i for a, b in found for i in range(a, b)}
    if any(_FENCE_LIKE.match(line) for i, line in enumerate(lines) if i not in inside):
        return []
    return found


def _pass(text: str, links: bool) -> tuple[str, list[tuple[int, int]], list[Any]]:
    lines = text.split("\n")
    tokens = _parser().parse(text)
    fences = _portable_fences(tokens, lines)
    verbatim = {i for a, b in fences for i in range(a, b)}
    done: set[int] = set(verbatim)
    out = list(lines)
    for tok in tokens:
        if tok.type in ("paragraph_open", "heading_open") and tok.map:
            a, b = tok.map
            if any(i in done for i in range(a, b)):
                continue
            out[a:b] = _scan("\n".join(lines[a:b]), code=True, links=links).split("\n")
            done.update(range(a, b))
    for i, line in enumerate(lines):
        if i not in done:
            out[i] = _scan(line, code=False, links=links)
    return "\n".join(out), fences, tokens


def _unsafe(tokens: list[Any]) -> bool:
    """True when ``tokens`` (a CommonMark reader's, HTML on) hold HTML or an unsafe link."""
    todo = list(tokens)
    while todo:
        tok = todo.pop()
        if tok.type in ("html_block", "html_inline"):
            return True
        url = tok.attrGet("href") if tok.type == "link_open" else tok.attrGet("src") if tok.type == "image" else None
        if url is not None and not _SAFE_URL.match(str(url).strip()):
            return True
        todo.extend(tok.children or [])
    return False


def _links_allowed(text: str) -> bool:
    # a destination is read after entities and backslash escapes are resolved; browsers drop spaces in a scheme
    flat = re.sub(r"[\s\\\x00-\x1f]+", "", html.unescape(text)).lower()
    return _BAD_LINK.search(flat) is None


def _closed(text: str, fences: list[tuple[int, int]]) -> str:
    """``text`` with every fence-like line outside ``fences`` (the closed, portable ones) made text.

    A fence the text leaves open (a model's answer that ends inside a code block) would stay open
    into the blocks written after it, in the same document, until some later line closes it: a
    tool's output, whose raw HTML would then be read as HTML. So each piece of Markdown balances
    its own fences: those every reader reads alike are kept; any other line that starts a fence,
    in a quote or a list item too, gets its first backtick or tilde escaped.
    """
    if "```" not in text and "~~~" not in text:
        return text
    lines = text.split("\n")
    inside = {i for a, b in fences for i in range(a, b)}
    for i, line in enumerate(lines):
        if i not in inside:
            m = _OPENS_FENCE.match(line)
            if m:
                lines[i] = line[: m.end(1)] + "\\" + line[m.end(1) :]
    return "\n".join(lines)


def _safe(text: str) -> tuple[str, list[tuple[int, int]]]:
    text = _lines(text)
    links = _links_allowed(text)
    if links and "<" not in text and "{" not in text:
        fences = _portable_fences(_parser().parse(text), text.split("\n")) if "```" in text or "~~~" in text else []
        return _closed(text, fences), fences
    out = text
    for _ in range(4):  # escaping can change what a line is (an HTML block becomes a paragraph): again until stable
        new, fences, tokens = _pass(out, links)
        if new == out:  # the tokens read are the result's: check them
            if not _unsafe(tokens):
                return _closed(out, fences), fences
            break
        out = new
    return _closed("\n".join(_scan(line, code=False, links=False) for line in text.split("\n")), []), []


def md_markdown(text: str) -> str:
    """Markdown written by a model (or a user) made safe for readers that pass raw HTML; it stays Markdown."""
    return _safe(text)[0]


def md_quote(text: str) -> str:
    """:func:`md_markdown` as a block quote; fenced code stays outside the quote (readers that miss fences in quotes)."""
    out, fences = _safe(text)
    lines = out.split("\n")
    starts = {a: b for a, b in fences}
    parts: list[str] = []
    quoted: list[str] = []
    i = 0
    while i < len(lines):
        if i in starts:
            if quoted:
                parts.append(_quote_lines(quoted))
                quoted = []
            parts.append("\n".join(lines[i : starts[i]]))
            i = starts[i]
        else:
            quoted.append(lines[i])
            i += 1
    if quoted or not parts:
        parts.append(_quote_lines(quoted))
    return "\n\n".join(p for p in parts if p)


def _quote_lines(lines: list[str]) -> str:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "\n".join("> " + line if line.strip() else ">" for line in lines) or ">"


__all__ = ["md_code", "md_fence", "md_markdown", "md_quote", "md_text"]
