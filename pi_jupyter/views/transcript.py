"""A conversation as Markdown or plain text, for outputs that must read well without JavaScript.

:class:`~pi_jupyter.notebook.agent_view.AgentView` puts both into its display bundle, so a
saved notebook shows the conversation in nbconvert, GitHub and nbviewer. Tool calls are shown
compactly (``name(arg=value, ...)``) with their result right below, long tool output is cut
in the middle, and raw HTML in model text is neutralised (``<`` becomes ``&lt;`` outside
code), so a transcript can never inject markup into a rendered page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

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
from ..messages.system import system_message_note

DEFAULT_MAX_OUTPUT = 2000
"""Characters of one tool output kept in a transcript (the middle is cut)."""

_MAX_ARGS = 240
_MAX_ARG_VALUE = 80
_MAX_THINKING = 1200


def clip_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping the head and the tail."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[len(text) - limit // 3 :]
    return f"{head}\n… [{len(text) - len(head) - len(tail)} characters omitted] …\n{tail}"


def clip_end(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def format_call(name: str, arguments: Any) -> str:
    """A tool call on one line: ``name(key=value, ...)``, long values and long lists cut."""
    if isinstance(arguments, dict):
        parts = []
        for key, value in arguments.items():
            try:
                shown = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                shown = repr(value)
            parts.append(f"{key}={clip_end(shown.replace(chr(10), ' '), _MAX_ARG_VALUE)}")
        inner = ", ".join(parts)
    elif arguments in (None, ""):
        inner = ""
    else:
        inner = clip_end(str(arguments).replace("\n", " "), _MAX_ARGS)
    return f"{name}({clip_end(inner, _MAX_ARGS)})"


def blocks_text(content: Any) -> str:
    """Text of tool-result style content (a string or blocks), with a placeholder per image."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
        if kind == "text":
            out.append(block.get("text", "") if isinstance(block, dict) else block.text)
        elif kind == "image":
            out.append("[image]")
    return "".join(out)


def _fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block whose fence is longer than any backtick run inside."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def _code_span(text: str) -> str:
    runs = [len(m) for m in re.findall(r"`+", text)]
    ticks = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def escape_markdown_html(text: str) -> str:
    """``text`` with ``<`` written as ``&lt;`` outside code spans and fenced code blocks.

    Markdown renderers pass raw HTML through; model output must not become live markup in a
    rendered notebook. Code is left untouched (there ``&lt;`` would show literally).
    """
    if "<" not in text:
        return text
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        m = _FENCE_LINE.match(line)
        if fence is not None:
            out.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        out.append(_escape_inline(line))
    return "".join(out)


def _escape_inline(line: str) -> str:
    # Split on backtick runs: text between a run and the next run of the same length is code.
    pieces = re.split(r"(`+)", line)
    out = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if piece.startswith("`"):
            # Look for the closing run of the same length.
            for j in range(i + 2, len(pieces), 2):
                if pieces[j] == piece:
                    out.append("".join(pieces[i : j + 1]))
                    i = j + 1
                    break
            else:
                out.append(piece)
                i += 1
            continue
        out.append(piece.replace("<", "&lt;"))
        i += 1
    return "".join(out)


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines() or [""])


def _messages(messages: Iterable[Any]) -> list[Any]:
    out = []
    for i, m in enumerate(messages):
        try:
            out.append(as_message(m))
        except TypeError as exc:
            raise TypeError(f"transcript: message {i}: {exc}") from None
    return out


def _results_by_call(msgs: list[Any]) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in msgs if isinstance(m, ToolResultMessage)}


def transcript_markdown(
    messages: Iterable[Any],
    *,
    max_output: int = DEFAULT_MAX_OUTPUT,
    thinking: bool = True,
) -> str:
    """The conversation in ``messages`` (message models or pi-shaped dicts) as Markdown.

    Each tool call is one line followed by its result (cut to ``max_output`` characters);
    thinking is shown as a short quote unless ``thinking`` is false.
    """
    msgs = _messages(messages)
    results = _results_by_call(msgs)
    shown: set[str] = set()
    parts: list[str] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            text = text_of(m.content, "\n")
            images = 0 if isinstance(m.content, str) else sum(1 for b in m.content if getattr(b, "type", "") == "image")
            body = escape_markdown_html(text) + (f"\n\n*[{images} image(s)]*" if images else "")
            parts.append("**User**\n\n" + _quote(body))
        elif isinstance(m, AssistantMessage):
            head = "**Assistant**" + (f" · {_code_span(m.model)}" if m.model else "")
            chunk = [head]
            for block in m.content:
                if isinstance(block, TextContent) and block.text.strip():
                    chunk.append(escape_markdown_html(block.text))
                elif isinstance(block, ThinkingContent) and thinking and block.thinking.strip():
                    chunk.append(_quote("*Thinking:* " + escape_markdown_html(clip_middle(block.thinking, _MAX_THINKING))))
                elif isinstance(block, ToolCall):
                    chunk.append(_tool_markdown(block, results.get(block.id), max_output))
                    shown.add(block.id)
            if m.stop_reason == "aborted":
                chunk.append("*Stopped (aborted).*")
            elif m.stop_reason == "error":
                chunk.append("**Error:** " + escape_markdown_html(m.error_message or "unknown error"))
            parts.append("\n\n".join(chunk))
        elif isinstance(m, ToolResultMessage):
            if m.tool_call_id not in shown:
                parts.append(_tool_markdown(ToolCall(id=m.tool_call_id, name=m.tool_name or "tool"), m, max_output))
        elif isinstance(m, CustomMessage):
            if m.display is not False:
                label = m.custom_type or "custom"
                parts.append(f"**{_code_span(label)}**\n\n" + _quote(escape_markdown_html(text_of(m.content, "\n"))))
        elif isinstance(m, BashExecutionMessage):
            line = f"**Shell** {_code_span('$ ' + m.command)}"
            if m.exit_code not in (None, 0):
                line += f" · exit {m.exit_code}"
            parts.append(line + "\n\n" + _fence(clip_middle(m.output, max_output), "text"))
        elif isinstance(m, CompactionSummaryMessage):
            parts.append(f"**Compaction summary** ({m.tokens_before:,} tokens before)\n\n" + _quote(escape_markdown_html(m.summary)))
        elif isinstance(m, BranchSummaryMessage):
            parts.append("**Branch summary**\n\n" + _quote(escape_markdown_html(m.summary)))
        elif getattr(m, "role", None) == "system":  # the recorded prompt: one line, not its text
            parts.append(f"*[{escape_markdown_html(system_message_note(m))}]*")
        else:
            parts.append(f"*[{escape_markdown_html(getattr(m, 'role', '') or 'unknown')} message]*")
    return "\n\n".join(parts) + ("\n" if parts else "")


def _tool_markdown(call: ToolCall, result: ToolResultMessage | None, max_output: int) -> str:
    line = f"**Tool** {_code_span(format_call(call.name, call.arguments))}"
    if result is None:
        return line + " · *no result*"
    if result.is_error:
        line += " · **error**"
    output = blocks_text(result.content)
    if not output.strip():
        return line
    return line + "\n\n" + _fence(clip_middle(output, max_output), "text")


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def transcript_text(
    messages: Iterable[Any],
    *,
    max_output: int = DEFAULT_MAX_OUTPUT,
    thinking: bool = False,
) -> str:
    """The conversation in ``messages`` as plain text (tool calls on one line, output indented)."""
    msgs = _messages(messages)
    results = _results_by_call(msgs)
    shown: set[str] = set()
    lines: list[str] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            lines.append("User: " + text_of(m.content, "\n"))
        elif isinstance(m, AssistantMessage):
            lines.append("Assistant" + (f" ({m.model})" if m.model else "") + ":")
            for block in m.content:
                if isinstance(block, TextContent) and block.text.strip():
                    lines.append(_indent(block.text, "  "))
                elif isinstance(block, ThinkingContent) and thinking and block.thinking.strip():
                    lines.append(_indent("[thinking] " + clip_middle(block.thinking, _MAX_THINKING), "  "))
                elif isinstance(block, ToolCall):
                    lines.append(_tool_text(block, results.get(block.id), max_output))
                    shown.add(block.id)
            if m.stop_reason == "aborted":
                lines.append("  [stopped: aborted]")
            elif m.stop_reason == "error":
                lines.append(f"  [error: {m.error_message or 'unknown error'}]")
        elif isinstance(m, ToolResultMessage):
            if m.tool_call_id not in shown:
                lines.append(_tool_text(ToolCall(id=m.tool_call_id, name=m.tool_name or "tool"), m, max_output))
        elif isinstance(m, CustomMessage):
            if m.display is not False:
                lines.append(f"[{m.custom_type or 'custom'}] " + text_of(m.content, "\n"))
        elif isinstance(m, BashExecutionMessage):
            lines.append(f"$ {m.command}" + (f"  (exit {m.exit_code})" if m.exit_code not in (None, 0) else ""))
            if m.output.strip():
                lines.append(_indent(clip_middle(m.output, max_output)))
        elif isinstance(m, CompactionSummaryMessage):
            lines.append(f"[compaction summary, {m.tokens_before} tokens before]\n" + _indent(m.summary, "  "))
        elif isinstance(m, BranchSummaryMessage):
            lines.append("[branch summary]\n" + _indent(m.summary, "  "))
        elif getattr(m, "role", None) == "system":
            lines.append(f"[{system_message_note(m)}]")
        else:
            lines.append(f"[{getattr(m, 'role', '') or 'unknown'} message]")
    return "\n".join(lines)


def _tool_text(call: ToolCall, result: ToolResultMessage | None, max_output: int) -> str:
    head = "  -> " + format_call(call.name, call.arguments)
    if result is None:
        return head + "  [no result]"
    if result.is_error:
        head += "  [error]"
    output = blocks_text(result.content)
    return head + ("\n" + _indent(clip_middle(output, max_output), "     ") if output.strip() else "")


__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "blocks_text",
    "clip_end",
    "clip_middle",
    "escape_markdown_html",
    "format_call",
    "transcript_markdown",
    "transcript_text",
]
