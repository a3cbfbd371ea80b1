"""The conversation as plain text for a summarizer, with pi's exact labels (pi-design §4.7).

A summarizer gets the conversation as text, not as chat messages, so that it does not try to
continue it. :func:`to_llm_dicts` is pi's ``convertToLlm`` on message dicts, and
:func:`serialize_conversation` is pi's ``serializeConversation``; together they produce the
bytes pi puts inside ``<conversation>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..messages import bash_execution_to_text
from ..messages.text import js_len, js_slice
from ..messages.types import BashExecutionMessage
from ..messages.wire import BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX
from ._js import is_array_index, js_stringify
from .entries import as_dict, text_blocks
from .prompts import TOOL_RESULT_MAX_CHARS


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text_message(text: str, timestamp: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def to_llm_dicts(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """pi's ``convertToLlm`` on message dicts (or models): what a model would be sent, in order.

    Bash executions (unless excluded), custom messages and summaries become user messages
    with pi's wrapper texts; user, assistant and tool-result messages pass through; any other
    role is dropped.
    """
    out: list[dict[str, Any]] = []
    for raw in messages:
        m = as_dict(raw)
        role = m.get("role")
        if role in ("user", "assistant", "toolResult"):
            out.append(m)
        elif role == "bashExecution":
            if m.get("excludeFromContext"):
                continue
            bash = BashExecutionMessage.model_construct(
                command=_str(m.get("command")),
                output=_str(m.get("output")),
                exit_code=m.get("exitCode"),
                cancelled=m.get("cancelled"),
                truncated=m.get("truncated"),
                full_output_path=m.get("fullOutputPath"),
            )
            out.append(_text_message(bash_execution_to_text(bash), m.get("timestamp")))
        elif role == "custom":
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out.append({"role": "user", "content": blocks, "timestamp": m.get("timestamp")})
        elif role == "branchSummary":
            out.append(_text_message(BRANCH_SUMMARY_PREFIX + _str(m.get("summary")) + BRANCH_SUMMARY_SUFFIX, m.get("timestamp")))
        elif role == "compactionSummary":
            out.append(_text_message(COMPACTION_SUMMARY_PREFIX + _str(m.get("summary")) + COMPACTION_SUMMARY_SUFFIX, m.get("timestamp")))
    return out


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Keep the first ``max_chars`` UTF-16 units and say how many were cut (pi's ``truncateForSummary``)."""
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice(text, 0, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def serialize_conversation(llm_messages: Iterable[Any]) -> str:
    """pi's ``serializeConversation``: ``[User]:``, ``[Assistant thinking]:``, ``[Assistant]:``,
    ``[Assistant tool calls]:`` and ``[Tool result]:`` parts joined by blank lines.

    Takes messages after :func:`to_llm_dicts`. Tool results are cut to 2000 characters; tool
    calls are written ``name(key=JSON, ...)``; images are left out.
    """
    parts: list[str] = []
    for raw in llm_messages:
        m = as_dict(raw)
        role = m.get("role")
        if role == "user":
            text = text_blocks(m.get("content"))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[str] = []
            for block in m.get("content") or ():
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    texts.append(block.get("text") or "")
                elif kind == "thinking":
                    thinking.append(block.get("thinking") or "")
                elif kind == "toolCall":
                    args = block.get("arguments")
                    items = args.items() if isinstance(args, dict) else ()
                    rendered = ", ".join(f"{k}={js_stringify(v)}" for k, v in _js_entries(items))
                    calls.append(f"{block.get('name')}({rendered})")
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif role == "toolResult":
            text = text_blocks(m.get("content"))
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)


def _js_entries(items: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``Object.entries`` order: array-index keys first (ascending), then the rest in insertion order."""
    pairs = list(items)
    index = [(k, v) for k, v in pairs if is_array_index(k)]
    if not index:
        return pairs
    index.sort(key=lambda kv: int(kv[0]))
    return index + [(k, v) for k, v in pairs if not is_array_index(k)]


def conversation_text(messages: Iterable[Any]) -> str:
    """The text inside ``<conversation>``: pi's ``serializeConversation(convertToLlm(messages))``."""
    return serialize_conversation(to_llm_dicts(messages))
