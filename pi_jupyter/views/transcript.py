"""A conversation as Markdown or plain text, for outputs that must read well without JavaScript.

:class:`~pi_jupyter.notebook.agent_view.view.AgentView` puts both into its display bundle, so a
saved notebook shows the conversation in nbconvert, GitHub and nbviewer. Tool calls are shown
compactly (``name(arg=value, ...)``) with their result right below, long tool output is cut
in the middle, and raw HTML in model text is neutralised (``<`` becomes ``&lt;`` outside
code), so a transcript can never inject markup into a rendered page.
"""

from __future__ import annotations

import json
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
from ..messages.notebook_context import folded_line
from ..messages.system import system_message_note
from .markdown_safe import md_code, md_fence, md_markdown, md_quote, md_text
from .world_lines import changed_line

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


def escape_markdown_html(text: str) -> str:
    """Markdown ``text`` (a model's answer) made safe for Markdown readers that pass raw HTML; it stays Markdown.

    No ``<`` outside code reaches the reader, attribute braces are escaped, and links become
    text when one of them points at a ``javascript:``-like URL (see :mod:`.markdown_safe`).
    """
    return md_markdown(text)


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
    max_prompt: int = 0,
) -> str:
    """The conversation in ``messages`` (message models or pi-shaped dicts) as Markdown.

    Each tool call is one line followed by its result (cut to ``max_output`` characters);
    thinking is shown as a short quote unless ``thinking`` is false; prompts are cut to
    ``max_prompt`` characters (head and tail) when it is positive.
    """
    msgs = _messages(messages)
    results = _results_by_call(msgs)
    shown: set[str] = set()
    parts: list[str] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            text = clip_middle(text_of(m.content, "\n"), max_prompt)
            images = 0 if isinstance(m.content, str) else sum(1 for b in m.content if getattr(b, "type", "") == "image")
            parts.append("**User**\n\n" + md_quote(text) + (f"\n\n*[{images} image(s)]*" if images else ""))
        elif isinstance(m, AssistantMessage):
            head = "**Assistant**" + (f" · {md_code(m.model)}" if m.model else "")
            chunk = [head]
            for block in m.content:
                if isinstance(block, TextContent) and block.text.strip():
                    chunk.append(md_markdown(block.text))
                elif isinstance(block, ThinkingContent) and thinking and block.thinking.strip():
                    chunk.append(md_quote("*Thinking:* " + clip_middle(block.thinking, _MAX_THINKING)))
                elif isinstance(block, ToolCall):
                    chunk.append(_tool_markdown(block, results.get(block.id), max_output))
                    shown.add(block.id)
            if m.stop_reason == "aborted":
                chunk.append("*Stopped (aborted).*")
            elif m.stop_reason == "error":
                chunk.append("**Error:** " + md_text(m.error_message or "unknown error"))
            parts.append("\n\n".join(chunk))
        elif isinstance(m, ToolResultMessage):
            if m.tool_call_id not in shown:
                parts.append(_tool_markdown(ToolCall(id=m.tool_call_id, name=m.tool_name or "tool"), m, max_output))
        elif isinstance(m, CustomMessage):
            fold = folded_line(m.custom_type, m.content)
            if m.display is not False and fold is not None:
                parts.append(f"*{md_text(fold)}* (sent to the model with the prompt below)")
            elif m.display is not False:
                label = m.custom_type or "custom"
                parts.append(f"**{md_code(label)}**\n\n" + md_quote(text_of(m.content, "\n")))
        elif isinstance(m, BashExecutionMessage):
            line = f"**Shell** {md_code('$ ' + m.command)}"
            if m.exit_code not in (None, 0):
                line += f" · exit {m.exit_code}"
            parts.append(line + "\n\n" + md_fence(clip_middle(m.output, max_output), "text"))
        elif isinstance(m, CompactionSummaryMessage):
            parts.append(f"**Compaction summary** ({m.tokens_before:,} tokens before)\n\n" + md_quote(m.summary))
        elif isinstance(m, BranchSummaryMessage):
            parts.append("**Branch summary**\n\n" + md_quote(m.summary))
        elif getattr(m, "role", None) == "system":  # the recorded prompt: one line, not its text
            parts.append(f"*[{md_text(system_message_note(m))}]*")
        else:
            parts.append(f"*[{md_text(getattr(m, 'role', '') or 'unknown')} message]*")
    return "\n\n".join(parts) + ("\n" if parts else "")


def _tool_markdown(call: ToolCall, result: ToolResultMessage | None, max_output: int) -> str:
    line = f"**Tool** {md_code(format_call(call.name, call.arguments))}"
    if result is None:
        return line + " · *no result*"
    if result.is_error:
        line += " · **error**"
    output = blocks_text(result.content)
    changed = changed_line(result.details)
    tail = f"\n\n*changed: {md_text(changed)}*" if changed else ""
    if not output.strip():
        return line + tail
    return line + "\n\n" + md_fence(clip_middle(output, max_output), "text") + tail


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def transcript_text(
    messages: Iterable[Any],
    *,
    max_output: int = DEFAULT_MAX_OUTPUT,
    thinking: bool = False,
    max_prompt: int = 0,
) -> str:
    """The conversation in ``messages`` as plain text (tool calls on one line, output indented; prompts cut to ``max_prompt``)."""
    msgs = _messages(messages)
    results = _results_by_call(msgs)
    shown: set[str] = set()
    lines: list[str] = []
    for m in msgs:
        if isinstance(m, UserMessage):
            lines.append("User: " + clip_middle(text_of(m.content, "\n"), max_prompt))
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
            fold = folded_line(m.custom_type, m.content)
            if m.display is not False and fold is not None:
                lines.append(f"[{fold}]")
            elif m.display is not False:
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
    changed = changed_line(result.details)
    tail = f"\n     changed: {changed}" if changed else ""
    return head + ("\n" + _indent(clip_middle(output, max_output), "     ") if output.strip() else "") + tail


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
