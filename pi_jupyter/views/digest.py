"""Small facts read straight from raw entry dicts: text previews, usage, tool calls, stop reasons.

The graph and the comparison read thousands of entries; they work on the dicts the store
keeps (no pydantic validation) and tolerate any shape a file may hold.
"""

from __future__ import annotations

import re
from typing import Any

from ..messages.text import ms_from_iso
from ..session.index import CELL_TYPE, CHECKOUT_TYPE, TRANSPARENT_TYPES

RawEntry = dict[str, Any]

__all__ = ["CELL_TYPE", "CHECKOUT_TYPE", "TRANSPARENT_TYPES"]  # re-exported for the views and their tests

_SPACE = re.compile(r"\s+")
# control characters (other than whitespace) break Graphviz labels and terminals
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

HEAD_ROLES = frozenset({"user", "bashExecution"})
"""Message roles that start a turn (besides ``custom_message`` entries)."""

META_TYPES = frozenset({"label", "session_info", "thinking_level_change", "model_change", "custom"})
"""Entry types that carry settings or private state and no conversation."""

SOLO_TYPES = frozenset({"compaction", "branch_summary"})
"""Entry types that are always a node of their own."""


def is_transparent(entry: RawEntry) -> bool:
    """A checkout marker or a cell record: a dead-end child that stands for its parent."""
    return entry.get("type") == "custom" and entry.get("customType") in TRANSPARENT_TYPES


def message(entry: RawEntry) -> dict[str, Any] | None:
    """The message dict of a ``message`` entry, else ``None``."""
    if entry.get("type") != "message":
        return None
    msg = entry.get("message")
    return msg if isinstance(msg, dict) else None


def role(entry: RawEntry) -> str | None:
    """The message role of a ``message`` entry (``custom`` for a ``custom_message`` entry)."""
    if entry.get("type") == "custom_message":
        return "custom"
    msg = message(entry)
    value = msg.get("role") if msg is not None else None
    return value if isinstance(value, str) else None


def is_head(entry: RawEntry) -> bool:
    """True for an entry that starts a turn: a user message, a user's shell command, an extension message."""
    return entry.get("type") == "custom_message" or role(entry) in HEAD_ROLES


def is_meta(entry: RawEntry) -> bool:
    """True for settings, labels, names and private state (not transparent ones: see :func:`is_transparent`)."""
    kind = entry.get("type")
    if kind in META_TYPES:
        return True
    # unknown entry types add nothing to the context; treat them like settings
    return not isinstance(kind, str) or kind not in ("message", "custom_message", "compaction", "branch_summary")


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs become one space, control characters go."""
    return _SPACE.sub(" ", _CONTROL.sub("", text)).strip()


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def preview(text: str, limit: int) -> str:
    """A one-line preview of ``text`` of at most ``limit`` characters."""
    # cut before collapsing: a huge tool output must not be scanned whole for a 40-char preview
    return clip(one_line(text[: limit * 4 + 64]), limit)


def content_text(content: Any, sep: str = "\n") -> str:
    """The text blocks of a content list (or the string itself)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return sep.join(parts)


def has_images(content: Any) -> bool:
    """True when a content list holds an image block."""
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in content)


def entry_text(entry: RawEntry) -> str:
    """The main text of an entry: a message's text, a summary, a label, a setting."""
    kind = entry.get("type")
    msg = message(entry)
    if msg is not None:
        r = msg.get("role")
        if r == "bashExecution":
            return f"$ {msg.get('command') or ''}"
        if r in ("branchSummary", "compactionSummary"):
            return str(msg.get("summary") or "")
        return content_text(msg.get("content"))
    if kind == "custom_message":
        return content_text(entry.get("content"))
    if kind in ("compaction", "branch_summary"):
        return str(entry.get("summary") or "")
    if kind == "label":
        label = entry.get("label")
        return f"label {entry.get('targetId')}: {label}" if label else f"label cleared on {entry.get('targetId')}"
    if kind == "model_change":
        return f"model {model_ref(entry.get('provider'), entry.get('modelId'))}"
    if kind == "thinking_level_change":
        return f"thinking {entry.get('thinkingLevel')}"
    if kind == "session_info":
        return f"session name {entry.get('name')!r}"
    if kind == "custom":
        return f"custom {entry.get('customType')}"
    return str(kind or "entry")


def model_ref(provider: Any, model_id: Any) -> str:
    """``provider/model`` (either part may be missing)."""
    if provider and model_id:
        return f"{provider}/{model_id}"
    return str(model_id or provider or "?")


def usage(msg: dict[str, Any]) -> tuple[int, float, dict[str, int]]:
    """``(total tokens, cost in dollars, {input, output, cacheRead, cacheWrite})`` of an assistant message."""
    raw = msg.get("usage")
    if not isinstance(raw, dict):
        return 0, 0.0, {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    parts = {k: _int(raw.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")}
    total = _int(raw.get("totalTokens")) or sum(parts.values())
    cost = raw.get("cost")
    dollars = _float(cost.get("total")) if isinstance(cost, dict) else 0.0
    return total, dollars, parts


def tool_calls(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool-call blocks of an assistant message."""
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def entry_ms(entry: RawEntry) -> int | None:
    """The entry's time in ms since the epoch (its ISO timestamp), or ``None``."""
    return ms_from_iso(entry.get("timestamp"))


def cell_records(entries: list[RawEntry]) -> dict[str, tuple[str, int | None]]:
    """Entry id -> ``(cell id, execution count)`` for every entry a recorded cell run produced (latest wins).

    Reads the ``pi_jupyter.cell`` records (see ``pi_jupyter.notebook.cells``) without importing
    the notebook layer.
    """
    owner: dict[str, tuple[str, int | None]] = {}
    for entry in entries:
        if entry.get("type") != "custom" or entry.get("customType") != CELL_TYPE:
            continue
        data = entry.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("cellId"), str):
            continue
        count = data.get("executionCount")
        info = (data["cellId"], count if isinstance(count, int) and not isinstance(count, bool) else None)
        produced = data.get("produced")
        for eid in produced if isinstance(produced, list) else ():
            if isinstance(eid, str):
                owner[eid] = info
    return owner


def cell_ends(entries: list[RawEntry]) -> dict[str, str]:
    """Cell id -> the last entry of its latest recorded run (what ``compare`` uses for a cell id)."""
    out: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") != "custom" or entry.get("customType") != CELL_TYPE:
            continue
        data = entry.get("data")
        if isinstance(data, dict) and isinstance(data.get("cellId"), str):
            end = data.get("end")
            parent = entry.get("parentId")
            target = end if isinstance(end, str) else parent if isinstance(parent, str) else None
            if target:
                out[data["cellId"]] = target
    return out


def tokens_text(n: int | float) -> str:
    """A token count people read at a glance: ``950``, ``12.3k``, ``1.2M``."""
    n = float(n)
    if abs(n) < 1000:
        return f"{n:.0f}"
    if abs(n) < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def cost_text(dollars: float) -> str:
    """A cost in dollars with enough digits to tell small runs apart."""
    if dollars == 0:
        return "$0"
    if dollars < 0.01:
        return f"${dollars:.4f}"
    if dollars < 10:
        return f"${dollars:.3f}"
    return f"${dollars:,.2f}"


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:
        return int(value)
    return 0


def _float(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, (int, float)) and value == value:
        return float(value)
    return 0.0
