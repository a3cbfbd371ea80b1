"""Plain-text renderings of entries and messages for a terminal (raw dicts in, strings out)."""

from __future__ import annotations

import json
from typing import Any

from ..messages import BashExecutionMessage, bash_execution_to_text, iso_from_ms, message_from_dict
from ..messages.system import system_message_summary, system_message_text
from ..session import CHECKOUT_TYPE, TreeNode
from ..session.listing import content_text
from .common import NAME_SHOWN, cut_name  # noqa: F401 - kept where the views import them from

TOOL_OUTPUT_CHARS = 1200
"""Tool results and shell output longer than this are cut in the text rendering."""


def one_line(text: Any, width: int = 72) -> str:
    """``text`` on one line (whitespace runs, including U+2028, become one space), cut to ``width``."""
    text = str(text)
    if len(text) > width * 8:
        # a long text (a tool result): flattening its head is enough when that alone is too wide,
        # since the head's flattening is a prefix of the whole one's; a tree of 100k entries is 3x faster
        head = " ".join(text[: width * 8].split())
        if len(head) > width:
            return head[: width - 1] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cut(text: str, limit: int = TOOL_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit} more characters]"


def blocks_text(content: Any, *, tool_output: bool = False) -> str:
    if isinstance(content, str):
        return cut(content) if tool_output else content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)[:TOOL_OUTPUT_CHARS]
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            parts.append(cut(text) if tool_output else text)
        elif kind == "image":
            size = len(str(block.get("data", ""))) * 3 // 4
            parts.append(f"[image {block.get('mimeType', '?')}, {size // 1024} KB]")
        elif kind == "thinking":
            thinking = str(block.get("thinking", ""))
            parts.append("[thinking, redacted]" if block.get("redacted") else f"[thinking] {thinking}")
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
            parts.append(f"→ {block.get('name', '?')}({cut(args, 400)})  [{block.get('id', '')}]")
        else:
            parts.append(f"[{kind} block]")
    return "\n".join(parts)


def _when(message: dict[str, Any]) -> str:
    ts = message.get("timestamp")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        try:
            return iso_from_ms(int(ts))
        except (OverflowError, OSError, ValueError):
            return ""
    return ""


def message_heading(message: dict[str, Any]) -> str:
    """``user``, ``assistant openai/gpt-5 (toolUse)``, ``toolResult bash [call_1] error``, ..."""
    if not isinstance(message, dict):
        return f"(not a message: a JSON {type(message).__name__})"
    role = message.get("role", "?")
    if role == "assistant":
        head = f"assistant {message.get('provider', '?')}/{message.get('model', '?')} ({message.get('stopReason', '?')})"
    elif role == "toolResult":
        head = f"toolResult {message.get('toolName', '?')} [{message.get('toolCallId', '')}]"
        if message.get("isError"):
            head += " error"
    elif role == "custom":
        head = f"custom {message.get('customType', '?')}"
    elif role == "bashExecution":
        head = "bashExecution" + (" (not sent to the model)" if message.get("excludeFromContext") else "")
    else:
        head = str(role)
    when = _when(message)
    return f"{head}  {when}" if when else head


def message_body(message: dict[str, Any]) -> str:
    """The readable content of one message (long tool output cut)."""
    if not isinstance(message, dict):
        return json.dumps(message, ensure_ascii=False)[:TOOL_OUTPUT_CHARS]
    role = message.get("role")
    if role in ("user", "custom"):
        return blocks_text(message.get("content"))
    if role == "assistant":
        body = blocks_text(message.get("content"))
        if message.get("errorMessage"):
            body += ("\n" if body else "") + f"[error] {message['errorMessage']}"
        return body
    if role == "toolResult":
        return blocks_text(message.get("content"), tool_output=True)
    if role == "bashExecution":
        typed = message_from_dict(message)
        if isinstance(typed, BashExecutionMessage):
            return cut(bash_execution_to_text(typed))
    if role in ("compactionSummary", "branchSummary"):
        return str(message.get("summary", ""))
    if role == "system":  # pi 1.x: the prompt as replayed, then the tool changes
        return cut(system_message_text(message) + "\n" + system_message_summary(message))
    return json.dumps(message, ensure_ascii=False)[:TOOL_OUTPUT_CHARS]


def render_messages(messages: list[dict[str, Any]]) -> str:
    """A transcript: a rule with the role, then the content, for every message."""
    return "\n".join(render_message(i, message) for i, message in enumerate(messages, start=1))


def render_message(number: int, message: dict[str, Any]) -> str:
    """One message of a transcript: a rule with its number and role, then its content."""
    heading = f"── {number}. {message_heading(message)} "
    rule = heading + "─" * max(3, 78 - len(heading))
    body = message_body(message)
    return f"{rule}\n{body}" if body else rule


def entry_summary(entry: dict[str, Any], width: int = 72) -> str:
    """What one entry is, on one line (for the tree)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return "message (empty)"
        role = message.get("role", "?")
        if role == "assistant":
            text = content_text(message.get("content"))
            content = message.get("content")
            blocks = content if isinstance(content, list) else ()
            calls = [str(b.get("name", "?")) for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"]
            extra = f" → {', '.join(calls)}" if calls else ""
            if message.get("stopReason") in ("error", "aborted"):
                extra += f" [{message.get('stopReason')}]"
            return f"assistant: {one_line(text, width)}{extra}" if text else f"assistant:{extra or ' (no text)'}"
        if role == "toolResult":
            flag = " [error]" if message.get("isError") else ""
            return f"{message.get('toolName', 'tool')} result{flag}: {one_line(content_text(message.get('content')), width)}"
        if role == "bashExecution":
            code = message.get("exitCode")
            return f"$ {one_line(message.get('command', ''), width)}" + (f" (exit {code})" if code not in (None, 0) else "")
        if role == "system":
            return system_message_summary(message)
        return f"{role}: {one_line(content_text(message.get('content')), width)}"
    if kind == "thinking_level_change":
        return f"thinking level: {entry.get('thinkingLevel')}"
    if kind == "model_change":
        return f"model: {entry.get('provider')}/{entry.get('modelId')}"
    if kind == "compaction":
        return f"compaction ({entry.get('tokensBefore', '?')} tokens before): {one_line(entry.get('summary', ''), width)}"
    if kind == "branch_summary":
        return f"branch summary: {one_line(entry.get('summary', ''), width)}"
    if kind == "custom_message":
        return f"custom message {entry.get('customType')}: {one_line(content_text(entry.get('content')), width)}"
    if kind == "custom":
        return f"custom {entry.get('customType')}"
    if kind == "label":
        label = entry.get("label")
        shown = repr(cut_name(label)) if isinstance(label, str) else repr(label)
        return f"label {entry.get('targetId')} = {shown}" if label else f"label {entry.get('targetId')} cleared"
    if kind == "session_info":
        name = entry.get("name")
        return f"session name: {cut_name(name, rest='`pi-jupyter info --json` has it all') if isinstance(name, str) else name!r}"
    if kind == "context_edit":
        replacement = entry.get("replacement")
        if replacement is None:
            return f"context edit: forget {entry.get('targetId')}"
        text = content_text(replacement.get("content")) if isinstance(replacement, dict) else ""
        return f"context edit: {entry.get('targetId')} reads {one_line(text, width // 2)!r}"
    if kind == "usage":
        usage = raw if isinstance(raw := entry.get("usage"), dict) else {}
        cost = usage.get("cost", {}).get("total") if isinstance(usage.get("cost"), dict) else None
        dollars = f", ${cost:.4f}" if isinstance(cost, (int, float)) else ""
        return f"usage {entry.get('kind')} {entry.get('provider')}/{entry.get('model')}: {usage.get('totalTokens', '?')} tokens{dollars}"
    return f"{kind} (unknown entry type)"


def is_checkout_marker(node: TreeNode) -> bool:
    """A checkout marker (pi_jupyter.checkout), which the tree views show as the node it points to."""
    return node.entry.get("type") == "custom" and node.entry.get("customType") == CHECKOUT_TYPE


def visible_children(node: TreeNode) -> tuple[list[TreeNode], int]:
    """Children with checkout markers replaced by whatever hangs below them (pi may continue after one),
    and how many markers were skipped."""
    out: list[TreeNode] = []
    hidden = 0
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if is_checkout_marker(child):
            hidden += 1
            stack.extend(reversed(child.children))
        else:
            out.append(child)
    return out, hidden
