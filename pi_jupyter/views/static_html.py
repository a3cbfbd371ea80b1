"""The static rendering of a conversation: HTML that every viewer draws, and the matching Markdown.

One piece of code for every place a conversation must read without a kernel or JavaScript:
the durable output a ``%%pi`` cell leaves in the notebook (JupyterLab and Notebook 7 after a
restart, an untrusted copy, nbconvert, GitHub, nbviewer) and the HTML/Markdown export of a
session. The HTML survives sanitizers: only ordinary tags (``div``, ``p``, ``pre``, ``details``,
``summary``, ``table``, ...) with inline ``style`` attributes, no ``<style>``, no script, no
``id``; model text goes through Markdown with raw HTML escaped.

The input is a sequence of messages (models or pi-shaped dicts) and :class:`Notice` items in
the order they happened, plus a :class:`RunStatus` for the status line.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ..messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    as_message,
    text_of,
)
from ..messages.notebook_context import folded_body, folded_line
from .highlight import PRE_STYLE, markdown_html
from .markdown_safe import md_code, md_text
from .transcript import DEFAULT_MAX_OUTPUT, blocks_text, clip_middle, format_call, transcript_markdown
from .world_lines import changed_line

PROMPT_FOLD = 600
"""Prompts longer than this many characters are folded behind "show more"."""

_ARGS_LIMIT = 4000
_THINKING_LIMIT = 6000
_ROOT_STYLE = "line-height:1.45;max-width:60em"
_USER_STYLE = "border-left:3px solid rgba(127,127,127,.55);padding:.1em .7em;margin:.5em 0;background:rgba(127,127,127,.06)"
_TOOL_STYLE = "border:1px solid rgba(127,127,127,.35);border-radius:4px;padding:.3em .6em;margin:.4em 0"
_DIM = "opacity:.72"
_TONES = {"info": "ℹ", "warn": "⚠", "error": "✖"}


class Notice(BaseModel):
    """A line of the run that is not a message: compaction, retry, extension errors, session actions."""

    text: str
    tone: Literal["info", "warn", "error"] = "info"


class RunStatus(BaseModel):
    """What the status line of a run says."""

    model: str = ""
    state: str = "done"
    """``done``, ``aborted``, ``error``, ``running``, ..."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float | None = None
    note: str = ""

    def line(self) -> str:
        """The status as one line: ``model · state · tokens · $cost · seconds · note``."""
        bits = [self.model] if self.model else []
        bits.append(self.state)
        if self.input_tokens or self.output_tokens:
            bits.append(f"{self.input_tokens:,} in / {self.output_tokens:,} out tokens")
        if self.cost:
            bits.append(f"${self.cost:.4f}")
        if self.seconds is not None:
            bits.append(f"{self.seconds:.1f} s")
        if self.note:
            bits.append(self.note)
        return " · ".join(bits)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _pre(text: str) -> str:
    return f'<pre style="{PRE_STYLE}"><code>{_esc(text)}</code></pre>'


def _items(items: Iterable[Any]) -> list[Any]:
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Notice):
            out.append(item)
            continue
        try:
            out.append(as_message(item))
        except TypeError as exc:
            raise TypeError(f"static rendering: item {i}: {exc}") from None
    return out


def _user_html(m: UserMessage) -> str:
    text = text_of(m.content, "\n")
    images = 0 if isinstance(m.content, str) else sum(1 for b in m.content if getattr(b, "type", "") == "image")
    if len(text) > PROMPT_FOLD:
        head = text[:PROMPT_FOLD].rsplit(" ", 1)[0]
        body = f"<details><summary>{_esc(head)} … <em>show more</em></summary>{_pre_wrap(text)}</details>"
    else:
        body = _pre_wrap(text)
    extra = f'<p style="{_DIM}"><em>[{images} image(s)]</em></p>' if images else ""
    return f'<div class="pi-user" style="{_USER_STYLE}"><p><strong>Prompt</strong></p>{body}{extra}</div>'


def _pre_wrap(text: str) -> str:
    # the prompt as written: line breaks kept, long lines wrapped at word boundaries
    return f'<div style="white-space:pre-wrap;overflow-wrap:break-word">{_esc(text)}</div>'


def _tool_html(call: ToolCall, result: ToolResultMessage | None, max_output: int, entry: str | None = None, gone: bool = False) -> str:
    if result is None:
        state = "no result"
    else:
        state = "error" if result.is_error else "done"
    icon = {"done": "✓", "error": "✖"}.get(state, "…")
    summary = f"{icon} <code>{_esc(format_call(call.name, call.arguments))}</code> · <em>{state}</em>"
    mark = f' data-pi-entry="{_esc(entry)}"' if entry and not gone else ""
    parts = [f'<details class="pi-tool pi-tool-{state.replace(" ", "-")}"{mark} open style="{_TOOL_STYLE}"><summary>{summary}</summary>']
    if call.arguments not in (None, {}, ""):
        try:
            args = json.dumps(call.arguments, indent=2, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            args = repr(call.arguments)
        parts.append(f'<div style="{_DIM}">arguments</div>' + _pre(clip_middle(args, _ARGS_LIMIT)))
    if result is not None:
        output = blocks_text(result.content)
        label = "error" if result.is_error else "result"
        shown_output = _pre(clip_middle(output, max_output)) if output.strip() else "<p><em>(empty)</em></p>"
        parts.append(f'<div style="{_DIM}">{label}</div>' + shown_output)
        changed = changed_line(result.details)
        if changed:
            parts.append(f'<div class="pi-world" style="{_DIM}">changed: {_esc(changed)}</div>')
    if gone:
        parts.append(_forgotten_html(entry or ""))
    parts.append("</details>")
    return "".join(parts)


def _assistant_html(
    m: AssistantMessage,
    results: dict[str, ToolResultMessage],
    shown: set[str],
    max_output: int,
    entries: dict[str, str] | None = None,
    gone: frozenset[str] = frozenset(),
) -> str:
    parts = ['<div class="pi-assistant">']
    outputs = [blocks_text(r.content) for r in results.values()]  # what an answer may quote: not code for a new cell
    for block in m.content:
        if isinstance(block, TextContent) and block.text.strip():
            text_html = markdown_html(block.text, insertable=lambda code, lang: insertable_code(code, lang, outputs))
            parts.append(f'<div class="pi-text">{text_html}</div>')
        elif isinstance(block, ThinkingContent) and block.thinking.strip():
            thought = clip_middle(block.thinking, _THINKING_LIMIT)
            body = "<p><em>(redacted by the provider)</em></p>" if block.redacted else markdown_html(thought)
            parts.append(f'<details class="pi-thinking" style="{_DIM}"><summary>Thought</summary>{body}</details>')
        elif isinstance(block, ToolCall):
            entry = (entries or {}).get(block.id)
            parts.append(_tool_html(block, results.get(block.id), max_output, entry, entry in gone))
            shown.add(block.id)
    if m.stop_reason == "aborted":
        parts.append("<p><strong>Stopped</strong> <em>(aborted; the partial answer is kept)</em></p>")
    elif m.stop_reason == "error":
        parts.append(f"<p><strong>Error:</strong> {_esc(m.error_message or 'unknown error')}</p>")
    parts.append("</div>")
    return "".join(parts)


_INSERT_LANGS = frozenset({"", "python", "py", "python3", "py3", "ipython", "ipython3"})


def insertable_code(code: str, language: str, outputs: Iterable[str]) -> bool:
    """Whether a code block of an answer is offered as a new cell: code the agent wrote for the user.

    A block fenced as Python (or not labelled) that does not quote a tool's output (``outputs``:
    the tool results of the same conversation). The live widget follows the same rule
    (``insertableCode`` in ``agent_view_markdown.js``).
    """
    lang = (language or "").strip().split()[0].lower() if (language or "").strip() else ""
    body = code.strip()
    return lang in _INSERT_LANGS and bool(body) and not any(body in out for out in outputs)


def _quote_html(label: str, text: str) -> str:
    return f'<div style="{_USER_STYLE}"><p><strong>{_esc(label)}</strong></p>{markdown_html(text)}</div>'


def render_item(
    m: Any,
    results: dict[str, ToolResultMessage],
    shown: set[str],
    max_output: int = DEFAULT_MAX_OUTPUT,
    result_entries: dict[str, str] | None = None,
    forgotten: frozenset[str] = frozenset(),
) -> str:
    """One message or :class:`Notice` as HTML; ``results`` pairs tool calls with their results, ``shown`` collects those drawn.

    ``result_entries`` (tool call id -> entry id of its result) marks each tool card with
    the entry its result was stored as (``data-pi-entry``, for "forget this"); a result whose
    entry is in ``forgotten`` is marked "not sent any more" on its card.
    """
    if isinstance(m, Notice):
        return f'<p class="pi-notice pi-notice-{m.tone}">{_TONES[m.tone]} {_esc(m.text)}</p>'
    if isinstance(m, UserMessage):
        return _user_html(m)
    if isinstance(m, AssistantMessage):
        return _assistant_html(m, results, shown, max_output, result_entries, forgotten)
    if isinstance(m, ToolResultMessage):
        if m.tool_call_id in shown:
            return ""
        call = ToolCall(id=m.tool_call_id, name=m.tool_name or "tool")
        entry = (result_entries or {}).get(m.tool_call_id)
        return _tool_html(call, m, max_output, entry, entry in forgotten)
    if isinstance(m, CustomMessage):
        if m.display is False:
            return ""
        fold = folded_line(m.custom_type, m.content)
        if fold is not None:  # one line; what the model was sent is a click away
            body = markdown_html(folded_body(text_of(m.content)))
            return f'<details style="{_USER_STYLE}"><summary>{_esc(fold)}</summary>{body}</details>'
        return _quote_html(m.custom_type or "custom", text_of(m.content, "\n"))
    if isinstance(m, BashExecutionMessage):
        code = f" · exit {m.exit_code}" if m.exit_code not in (None, 0) else ""
        return f"<p><strong>Shell</strong> <code>$ {_esc(m.command)}</code>{code}</p>" + _pre(clip_middle(m.output, max_output))
    if isinstance(m, CompactionSummaryMessage):
        return _quote_html(f"Compaction summary ({m.tokens_before:,} tokens before)", m.summary)
    if isinstance(m, BranchSummaryMessage):
        return _quote_html("Branch summary", m.summary)
    return f"<p><em>[{_esc(str(getattr(m, 'role', '') or 'unknown'))} message]</em></p>"


def render_html(
    items: Iterable[Any],
    *,
    status: RunStatus | None = None,
    title: str = "",
    footer: str = "",
    max_output: int = DEFAULT_MAX_OUTPUT,
    scale: float = 1.0,
    entry_ids: Sequence[str | None] | None = None,
    forgotten: Iterable[str] = (),
    actions: Actions | None = None,
    turn: bool = False,
) -> str:
    """The conversation (messages and :class:`Notice` items, in order) as one sanitizer-safe HTML fragment.

    Answers are rendered Markdown with highlighted code, thinking is folded, each tool call
    shows its arguments and its result or error (cut in the middle past ``max_output``
    characters), and ``status`` ends it. ``footer`` is trusted HTML added at the end;
    ``scale`` enlarges the type (a projector).

    ``entry_ids`` (one per item, ``None`` for notices) names the session entry of each
    message; entries in ``forgotten`` are marked "not sent any more". With ``actions`` a
    small script (removed by sanitizers, nothing else lost) adds "forget this" to each message
    and "continue from this one" to sibling answers, acting through the page bridge of
    :mod:`pi_jupyter.notebook.durable.page_bridge` while the kernel lives, else copying the command.
    ``turn``: the messages and the status line are one cell run's turn, in a ``pi-turn``
    block that paging through sibling answers swaps whole (see :func:`render_siblings_html`).
    """
    size = f";font-size:{scale:g}em" if scale != 1.0 else ""
    data = f' data-pi-session="{_esc(actions.session_id)}" data-pi-bridge="{_esc(actions.token)}"' if actions else ""
    parts = [f'<div class="pi-static" style="{_ROOT_STYLE}{size}"{data}>']
    if title:
        parts.append(f'<p style="{_DIM}"><strong>{_esc(title)}</strong></p>')
    body = render_turn_html(items, status=status, max_output=max_output, entry_ids=entry_ids, forgotten=forgotten)
    parts.append(f'<div class="pi-turn">{body}</div>' if turn else body)
    parts.append(footer)
    if actions:
        parts.append(f"<script>{_ACTIONS_JS}</script>")
    parts.append("</div>")
    return "".join(parts)


def render_turn_html(
    items: Iterable[Any],
    *,
    status: RunStatus | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    entry_ids: Sequence[str | None] | None = None,
    forgotten: Iterable[str] = (),
) -> str:
    """The messages and notices of a conversation, then its status line, as HTML (the inside of :func:`render_html`)."""
    seq = _items(items)
    ids = list(entry_ids or [])
    ids += [None] * (len(seq) - len(ids))
    gone = frozenset(forgotten)
    results = {m.tool_call_id: m for m in seq if isinstance(m, ToolResultMessage)}
    result_entries = {m.tool_call_id: e for m, e in zip(seq, ids, strict=False) if isinstance(m, ToolResultMessage) and e}
    shown: set[str] = set()
    parts = []
    for m, entry in zip(seq, ids, strict=False):
        html_ = render_item(m, results, shown, max_output, result_entries, gone)
        if entry and isinstance(m, (UserMessage, AssistantMessage)) and html_:
            if entry in gone:  # no "forget this" on it any more: the mark says what happened
                html_ = f'<div class="pi-entry-forgotten" style="opacity:.55">{html_}{_forgotten_html(entry)}</div>'
            else:
                html_ = f'<div class="pi-entry" data-pi-entry="{_esc(entry)}">{html_}</div>'
        parts.append(html_)
    if status is not None:
        parts.append(f'<p class="pi-status" style="{_DIM};font-size:.9em"><em>{_esc(status.line())}</em></p>')
    return "".join(parts)


FORGOTTEN_NOTE = "↑ not sent any more: forgotten from the context (the session file keeps it)"


def _forgotten_html(entry: str) -> str:
    return f'<p class="pi-forgotten" style="{_DIM};text-align:right"><em>{FORGOTTEN_NOTE} ({_esc(entry)})</em></p>'


class Actions(BaseModel):
    """Where a static output's buttons act: its session and the kernel's page-bridge token."""

    session_id: str
    token: str


def render_markdown(
    items: Sequence[Any], *, status: RunStatus | None = None, title: str = "", max_output: int = DEFAULT_MAX_OUTPUT, max_prompt: int = 0
) -> str:
    """The same conversation as Markdown (notices as italic lines), for ``text/markdown`` and exports (prompts cut to ``max_prompt``)."""
    chunks: list[str] = [f"#### {md_text(title)}"] if title.strip() else []
    run: list[Any] = []
    for item in _items(items):
        if isinstance(item, Notice):
            if run:
                chunks.append(transcript_markdown(run, max_output=max_output, max_prompt=max_prompt).rstrip())
                run = []
            chunks.append(f"*{_TONES[item.tone]} {md_text(item.text)}*")
        else:
            run.append(item)
    if run:
        chunks.append(transcript_markdown(run, max_output=max_output, max_prompt=max_prompt).rstrip())
    if not any(not isinstance(i, Notice) for i in items):
        chunks.append("*No messages yet.*")
    if status is not None:
        chunks.append(f"*{md_text(status.line())}*")
    return "\n\n".join(chunks) + "\n"


class Sibling(BaseModel):
    """One run of a re-run cell: where it ended, its final answer, and its whole turn."""

    end_id: str | None = None
    answer: Any = None
    """The run's last assistant message (``None`` when it produced none)."""
    current: bool = False
    items: list[Any] = []
    """The run's turn as the cell showed it: its messages (prompt, answers, tool results) and notices, in order."""
    status: RunStatus | None = None
    """The run's status line (model, how it ended, tokens, cost, seconds)."""


def _sibling_title(n: int, total: int, sib: Sibling) -> str:
    text = " ".join((sib.answer.text if sib.answer is not None else "").split())
    preview = (text[:90] + "…") if len(text) > 90 else text or "(no answer)"
    return f"answer {n} of {total} · {preview}"


def _continue_html(end_id: str) -> str:
    cmd = f'<code class="pi-sib-cmd">%pi checkout {_esc(end_id)}</code>'
    return f'<span class="pi-sib-label">continue from this one: </span>{cmd}'


def render_siblings_html(siblings: Sequence[Sibling], limit: int = 8) -> str:
    """The line "answer k of N" and the other runs of a re-run cell, folded, each with the command that continues from it.

    Every viewer shows the other runs folded, each whole (prompt, thinking, tool cards with
    what they changed, answer, status line). Where scripts run (a trusted notebook, an nbconvert
    page) a small script adds ‹ › that swap the whole turn shown above for another run's
    (sanitizers remove it, nothing else).
    """
    total = len(siblings)
    current = next((i for i, s in enumerate(siblings, 1) if s.current), total)
    head = f'<p class="pi-sib-head"><strong>answer {current} of {total}</strong> · the other answers to this cell:</p>'
    parts = [f'<div class="pi-siblings" data-current="{current}" data-total="{total}" style="{_TOOL_STYLE}">{head}']
    this = siblings[current - 1] if 0 < current <= total else None
    if this is not None and this.end_id:  # to come back to this answer after continuing from another
        parts.append(f'<p class="pi-sib-cur">{_continue_html(this.end_id)}</p>')
    shown = [(i, s) for i, s in enumerate(siblings, 1) if not s.current][-limit:]
    for i, sib in shown:
        if sib.items:
            body = f'<div class="pi-turn">{render_turn_html(sib.items, status=sib.status)}</div>'
        else:  # a run whose entries are gone from a damaged file: its answer alone, if that is left
            body = _assistant_html(sib.answer, {}, set(), DEFAULT_MAX_OUTPUT) if sib.answer is not None else ""
        cont = f'<p class="pi-sib-cont">{_continue_html(sib.end_id)}</p>' if sib.end_id else ""
        parts.append(f'<details class="pi-sib" data-n="{i}"><summary>{_esc(_sibling_title(i, total, sib))}</summary>{body}{cont}</details>')
    parts.append(f"<script>{_PAGER_JS}</script></div>")
    return "".join(parts)


def _script(name: str) -> str:
    # every output carries its own copy: drop the comment lines and the indentation (a safe, small saving)
    lines = (line.strip() for line in (Path(__file__).parent / "assets" / name).read_text(encoding="utf-8").splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


_PAGER_JS = _script("siblings_pager.js")
_ACTIONS_JS = _script("static_actions.js")


def render_siblings_markdown(siblings: Sequence[Sibling]) -> str:
    """One line: "answer k of N", and how to continue from each other answer."""
    total = len(siblings)
    current = next((i for i, s in enumerate(siblings, 1) if s.current), total)
    others = [f"{i}: {md_code(f'%pi checkout {s.end_id}')}" for i, s in enumerate(siblings, 1) if not s.current and s.end_id]
    return f"*answer {current} of {total}*" + (f" · continue from another answer with {', '.join(others)}" if others else "")


__all__ = [
    "FORGOTTEN_NOTE",
    "PROMPT_FOLD",
    "Actions",
    "Notice",
    "RunStatus",
    "Sibling",
    "render_html",
    "render_item",
    "render_markdown",
    "render_siblings_html",
    "render_siblings_markdown",
    "render_turn_html",
    "insertable_code",
]
