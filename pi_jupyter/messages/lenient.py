"""Reading messages of odd files: a known role whose fields hold values of other JSON types.

pi reads session files without validating them, and its ``convertToLlm`` passes a ``user``,
``assistant`` or ``toolResult`` message on as it is, whatever its fields hold: a number where
a text belongs, a list as a model id, ``null`` as the content. Such a message does not
validate here (it is kept as an :class:`~pi_jupyter.messages.OpaqueMessage`), and dropping it
would hide a turn of the conversation from the model. :func:`readable_message` reads it as
well as it can instead: an odd value that stands for text is shown as text (``5`` as
``"5"``, a list as JSON, see :func:`~pi_jupyter.messages.text.display_text`), a value that
cannot stand for anything (an image without data, ``null`` in a list of blocks) is skipped,
and a field left unusable takes its default.

:func:`wrapped_text` is pi's own ``convertToLlm`` text for a bash execution or a summary,
built from the raw values exactly as pi's string concatenation builds it (``null`` as
``"null"``, a number as JavaScript writes it).
"""

from __future__ import annotations

import math
from typing import Any, get_args

from pydantic import ValidationError

from .base import WIRE
from .text import display_text, js_string
from .types import MESSAGE_ROLES, AssistantMessage, StopReason, ToolResultMessage, UserMessage
from .wire import BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX

_STOP_REASONS = get_args(StopReason)
_USAGE_INTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_COST_FLOATS = ("input", "output", "cacheRead", "cacheWrite", "total")


def js_truthy(value: Any) -> bool:
    """JavaScript's truthiness of a JSON value (``[]`` and ``{}`` are true, ``0``, ``""`` and ``NaN`` false)."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def time_ms(value: Any) -> int | None:
    """A message timestamp as an integer of milliseconds; ``None`` when the value is no time."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def wrapped_text(data: dict[str, Any]) -> str | None:
    """pi's ``convertToLlm`` text for a ``bashExecution``, ``branchSummary`` or ``compactionSummary`` dict.

    Built from the values as they are (pi concatenates them into the text whatever their
    type); ``None`` for another role, or a bash execution excluded from the context.
    """
    role = data.get("role")
    if role == "compactionSummary":
        return COMPACTION_SUMMARY_PREFIX + _concat(data, "summary") + COMPACTION_SUMMARY_SUFFIX
    if role == "branchSummary":
        return BRANCH_SUMMARY_PREFIX + _concat(data, "summary") + BRANCH_SUMMARY_SUFFIX
    if role != "bashExecution" or js_truthy(data.get("excludeFromContext")):
        return None
    text = f"Ran `{_concat(data, 'command')}`\n"
    output = data.get("output")
    text += f"```\n{_concat(data, 'output')}\n```" if js_truthy(output) else "(no output)"
    exit_code = data.get("exitCode")
    if js_truthy(data.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and (isinstance(exit_code, bool) or exit_code != 0):  # JavaScript's !== 0
        text += f"\n\nCommand exited with code {js_string(exit_code)}"
    if js_truthy(data.get("truncated")) and js_truthy(data.get("fullOutputPath")):
        text += f"\n\n[Output truncated. Full output: {_concat(data, 'fullOutputPath')}]"
    return text


def _concat(data: dict[str, Any], key: str) -> str:
    # a missing field is JavaScript's undefined, which concatenates as "undefined"
    return js_string(data[key]) if key in data else "undefined"


def readable_message(data: dict[str, Any]) -> Any | None:
    """The typed message for a dict of a known role that does not validate as it is.

    ``user``, ``assistant`` and ``toolResult`` messages are read field by field (see the
    module docstring); ``custom`` messages become what ``convert_to_llm`` makes of them, a
    :class:`UserMessage`. ``None`` when nothing can be read (an unknown role, or a required
    field that is missing). Never raises.
    """
    role = data.get("role")
    if not isinstance(role, str) or role not in MESSAGE_ROLES:
        return None
    try:
        if role == "user":
            return _validate(UserMessage, _user_fields(data))
        if role == "assistant":
            return _validate(AssistantMessage, _assistant_fields(data))
        if role == "toolResult":
            return _validate(ToolResultMessage, _tool_result_fields(data))
        if role == "custom":
            content = _user_content(data.get("content"))
            if content is None:
                return None
            return _validate(UserMessage, {"role": "user", "content": content, "timestamp": time_ms(data.get("timestamp"))})
    except (TypeError, ValueError, ArithmeticError, RecursionError):  # a value no rule foresaw: nothing to send
        return None
    return None


def _validate(cls: type, fields: dict[str, Any]) -> Any | None:
    """``cls`` from ``fields``; a value that still does not fit is dropped (its default applies)."""
    for _ in range(32):
        try:
            return cls.model_validate(fields, context=WIRE)  # type: ignore[attr-defined]
        except ValidationError as exc:
            if not any(_drop(fields, err["loc"]) for err in exc.errors()):
                return None
    return None


def _drop(root: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the value at ``loc`` (pydantic's error location); True when something was removed.

    Steps that do not lead into the data (the names of union members pydantic puts in the
    location) are passed over; the deepest value reached is removed.
    """
    parent: Any = None
    key: Any = None
    current: Any = root
    for step in loc:
        if isinstance(current, dict) and isinstance(step, str) and step in current:
            parent, key, current = current, step, current[step]
        elif isinstance(current, list) and isinstance(step, int) and 0 <= step < len(current):
            parent, key, current = current, step, current[step]
    if parent is None:
        return False
    del parent[key]
    return True


def _user_fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = dict(data)
    fields["content"] = _user_content(data.get("content")) or ""
    _fix_time(fields)
    return fields


def _assistant_fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = dict(data)
    fields["content"] = _blocks(data.get("content"))
    for key in ("api", "provider", "model"):
        _to_str(fields, key)
    if "usage" in fields:
        fields["usage"] = _usage(fields["usage"])
    if fields.get("stopReason") not in _STOP_REASONS:
        fields.pop("stopReason", None)
    if fields.get("errorMessage") is not None:
        _to_str(fields, "errorMessage")
    _fix_time(fields)
    return fields


def _tool_result_fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = dict(data)
    # the call's id is shown as text on both sides, so a result still answers its call
    fields["toolCallId"] = display_text(data.get("toolCallId"))
    _to_str(fields, "toolName")
    fields["content"] = _blocks(data.get("content"))
    if "isError" in fields and not isinstance(fields["isError"], bool):
        fields["isError"] = js_truthy(fields["isError"])
    _fix_time(fields)
    return fields


def _fix_time(fields: dict[str, Any]) -> None:
    if "timestamp" in fields:
        ms = time_ms(fields["timestamp"])
        if ms is None:
            del fields["timestamp"]
        else:
            fields["timestamp"] = ms


def _user_content(content: Any) -> str | list[dict[str, Any]] | None:
    """User, custom and tool-result content: a string, or a list of blocks; ``None`` for ``null``."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _blocks(content)
    return display_text(content)


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Assistant and tool-result content: a list of blocks (a string or another value is one text block)."""
    if content is None:
        return []
    if not isinstance(content, list):
        return [{"type": "text", "text": display_text(content)}]
    out: list[dict[str, Any]] = []
    for block in content:
        fixed = _block(block)
        if fixed is not None:
            out.append(fixed)
    return out


def _block(block: Any) -> dict[str, Any] | None:
    if block is None:
        return None
    if not isinstance(block, dict):
        if hasattr(block, "to_dict"):
            return _block(block.to_dict())
        return {"type": "text", "text": display_text(block)}
    kind = block.get("type")
    if not isinstance(kind, str):
        return None  # a block of no type: nothing a model or a person could be shown
    fixed = dict(block)
    if kind == "text":
        fixed["text"] = display_text(block.get("text"))
        _only_str(fixed, "textSignature")
    elif kind == "thinking":
        fixed["thinking"] = display_text(block.get("thinking"))
        _only_str(fixed, "thinkingSignature")
        if "redacted" in fixed and not isinstance(fixed["redacted"], bool):
            fixed["redacted"] = js_truthy(fixed["redacted"])
    elif kind == "image":
        if not isinstance(block.get("data"), str):
            return None  # an image without data cannot be shown
        _only_str(fixed, "mimeType")
    elif kind == "toolCall":
        fixed["id"] = display_text(block.get("id"))
        fixed["name"] = display_text(block.get("name"))
        if not isinstance(block.get("arguments"), dict):
            fixed["arguments"] = {}
        _only_str(fixed, "thoughtSignature")
    return fixed


def _only_str(fields: dict[str, Any], key: str) -> None:
    if key in fields and not isinstance(fields[key], str):
        del fields[key]


def _to_str(fields: dict[str, Any], key: str) -> None:
    if key in fields and not isinstance(fields[key], str):
        fields[key] = display_text(fields[key])


def _usage(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for key in _USAGE_INTS:
        n = _finite(value.get(key))
        if n is not None:
            out[key] = int(n)
    cost = value.get("cost")
    if isinstance(cost, dict):
        out["cost"] = {k: float(v) for k in _COST_FLOATS if (v := _finite(cost.get(k))) is not None}
    return out


def _finite(value: Any) -> float | int | None:
    """A number that is finite as a double (an integer beyond one is JavaScript's Infinity), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return value if math.isfinite(float(value)) else None
    except OverflowError:
        return None
