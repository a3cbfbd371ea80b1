"""Small facts read straight from raw entry dicts: text previews, usage, tool calls, stop reasons.

The graph and the comparison read thousands of entries; they work on the dicts the store
keeps (no pydantic validation) and tolerate any shape a file may hold.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from ..messages.notebook_context import NOTEBOOK_CONTEXT_TYPE
from ..messages.text import display_text, ms_from_iso
from ..session.index import CELL_TYPE, CHECKOUT_TYPE, TRANSPARENT_TYPES

RawEntry = dict[str, Any]

__all__ = ["CELL_TYPE", "CHECKOUT_TYPE", "TRANSPARENT_TYPES"]  # re-exported for the views and their tests

_SPACE = re.compile(r"\s+")
# control characters (other than whitespace) break Graphviz labels and terminals
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# a lone surrogate (a JSON escape such as "\ud83d" without its pair) cannot be written as UTF-8
_SURROGATE = re.compile("[\ud800-\udfff]")

HEAD_ROLES = frozenset({"user", "bashExecution"})
"""Message roles that start a turn (besides ``custom_message`` entries)."""

META_TYPES = frozenset({"label", "session_info", "thinking_level_change", "model_change", "custom"})
"""Entry types that carry settings or private state and no conversation."""

LEAD_IN_TYPES = frozenset({NOTEBOOK_CONTEXT_TYPE})
"""``custom_message`` types that join the turn they lead into (the notebook context before a prompt)."""

SOLO_TYPES = frozenset({"compaction", "branch_summary"})
"""Entry types that are always a node of their own."""


def is_transparent(entry: RawEntry) -> bool:
    """A checkout marker or a cell record: a dead-end child that stands for its parent."""
    kind = entry.get("customType")
    return entry.get("type") == "custom" and isinstance(kind, str) and kind in TRANSPARENT_TYPES


as_text = display_text
"""A value from the file as text: a string as it is, anything else as the file writes it
(``5``, ``true``, ``["x"]``; ``null`` as nothing), see :func:`~pi_jupyter.messages.text.display_text`.

For fields that should hold a string (a label, a model id, a custom type) and hold
another JSON type in an odd file.
"""


def utf8_safe(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it can be written as UTF-8 (to Graphviz, to the browser)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def lookup(session: Any, entry_id: str) -> RawEntry | None:
    """The entry dict of ``entry_id``, or ``None``; unlike ``Session.raw_entry`` this also finds
    an entry whose id is the empty string (an odd file: ``""`` is no ref to the session)."""
    if not isinstance(entry_id, str) or entry_id not in session:
        return None
    if entry_id:
        return session.raw_entry(entry_id)
    return next((e for e in reversed(session.raw_entries()) if e.get("id") == ""), None)


def branch_of(session: Any, entry_id: str) -> list[RawEntry]:
    """``Session.raw_branch(entry_id)``, also for an entry whose id is ``""``: the entries from the
    root to it, as pi walks them to build its context (no entry names ``""`` as its parent: a
    ``parentId`` of ``""`` names none, for pi as here)."""
    if entry_id:
        return session.raw_branch(entry_id)
    entry = lookup(session, entry_id)
    if entry is None:
        return []
    parent = entry.get("parentId")
    above = session.raw_branch(parent) if isinstance(parent, str) and parent and parent in session else []
    return [*above, entry]


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


def is_lead_in(entry: RawEntry) -> bool:
    """True for a message that leads into the turn after it: the notebook context recorded before a prompt."""
    return entry.get("type") == "custom_message" and entry.get("customType") in LEAD_IN_TYPES


def is_head(entry: RawEntry) -> bool:
    """True for an entry that starts a turn: a user message, a user's shell command, an extension message (not a lead-in)."""
    if entry.get("type") == "custom_message":
        return not is_lead_in(entry)
    return role(entry) in HEAD_ROLES


def is_meta(entry: RawEntry) -> bool:
    """True for settings, labels, names and private state (not transparent ones: see :func:`is_transparent`), and
    lead-ins (:func:`is_lead_in`): sent to the model, but drawn with the turn they lead into, as settings are."""
    kind = entry.get("type")
    if kind in META_TYPES or is_lead_in(entry):
        return True
    if kind == "message" and role(entry) == "system":  # pi 1.x's record of the prompt and tools: a setting
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
    """The text blocks of a content list (or the string itself).

    An odd file's values are shown as it writes them: a text block whose text is not a string
    (``5``), or content that is neither a string nor a list (``true``, an object); ``null``
    and items that are not blocks are left out.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return as_text(content)
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
            elif text is not None:
                parts.append(as_text(text))
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
            return f"$ {as_text(msg.get('command') or '')}"
        if r in ("branchSummary", "compactionSummary"):
            return as_text(msg.get("summary") or "")
        return content_text(msg.get("content"))
    if kind == "custom_message":
        return content_text(entry.get("content"))
    if kind in ("compaction", "branch_summary"):
        return as_text(entry.get("summary") or "")
    if kind == "label":
        label, target = entry.get("label"), as_text(entry.get("targetId"))
        return f"label {target}: {as_text(label)}" if label else f"label cleared on {target}"
    if kind == "model_change":
        return f"model {model_ref(entry.get('provider'), entry.get('modelId'))}"
    if kind == "thinking_level_change":
        return f"thinking {as_text(entry.get('thinkingLevel'))}"
    if kind == "session_info":
        name = entry.get("name")
        return f"session name {name!r}" if isinstance(name, str) else f"session name {as_text(name)}"
    if kind == "custom":
        return f"custom {as_text(entry.get('customType'))}"
    return as_text(kind or "entry")


def error_summary(text: str) -> str:
    """An error message with a vendor's JSON body boiled down to its type and message.

    ``400 {"type":"error","error":{"type":"invalid_request_error","message":"MSG"}}`` becomes
    ``400 MSG (invalid_request_error)``, so a short preview shows what went wrong rather than
    the start of the JSON. Anything else is returned unchanged.
    """
    start = text.find("{")
    if start < 0 or len(text) > 100_000:
        return text
    try:
        body = json.loads(text[start:])
    except ValueError:
        return text
    if not isinstance(body, dict):
        return text
    error = body.get("error")
    inner = error if isinstance(error, dict) else body
    msg = inner.get("message")
    if not isinstance(msg, str) or not msg.strip():
        return text
    kind = inner.get("type") or inner.get("code")
    head = text[:start].strip()
    tail = f" ({kind})" if isinstance(kind, str) and kind and kind != "error" else ""
    return f"{head} {msg.strip()}{tail}".strip()


def model_ref(provider: Any, model_id: Any) -> str:
    """``provider/model`` (either part may be missing; odd values are shown as the file writes them)."""
    if provider and model_id:
        return f"{as_text(provider)}/{as_text(model_id)}"
    return as_text(model_id or provider or "?")


def usage(msg: dict[str, Any]) -> tuple[int, float, dict[str, int]]:
    """``(total tokens, cost in dollars, {input, output, cacheRead, cacheWrite})`` of an assistant message."""
    raw = msg.get("usage")
    if not isinstance(raw, dict):
        return 0, 0.0, {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    parts = {k: count(raw.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")}
    total = count(raw.get("totalTokens")) or sum(parts.values())
    cost = raw.get("cost")
    dollars = _float(cost.get("total")) if isinstance(cost, dict) else 0.0
    return total, dollars, parts


def usage_brief(msg: dict[str, Any]) -> tuple[int, float]:
    """``(total tokens, cost in dollars)`` of an assistant message (as :func:`usage`, without the split)."""
    raw = msg.get("usage")
    if not isinstance(raw, dict):
        return 0, 0.0
    total = count(raw.get("totalTokens"))
    if not total:
        total = sum(count(raw.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite"))
    cost = raw.get("cost")
    return total, (_float(cost.get("total")) if isinstance(cost, dict) else 0.0)


def tool_calls(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool-call blocks of an assistant message."""
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def entry_ms(entry: RawEntry) -> int | None:
    """The entry's time in ms since the epoch (its ISO timestamp), or ``None``."""
    return ms_from_iso(entry.get("timestamp"))


def cell_runs(entries: list[RawEntry]) -> Iterator[tuple[RawEntry, dict[str, Any]]]:
    """``(entry, data)`` for every well-formed ``pi_jupyter.cell`` record in ``entries`` (a string ``cellId``), in file order.

    Reads the records (see ``pi_jupyter.notebook.cells``) without importing the notebook layer.
    """
    for entry in entries:
        if entry.get("type") != "custom" or entry.get("customType") != CELL_TYPE:
            continue
        data = entry.get("data")
        if isinstance(data, dict) and isinstance(data.get("cellId"), str):
            yield entry, data


def run_count(data: dict[str, Any]) -> int | None:
    """A cell record's execution count (``None`` when it has none, or not an integer)."""
    count = data.get("executionCount")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def run_end(entry: RawEntry, data: dict[str, Any]) -> str | None:
    """The last entry a cell record's run produced: its ``end``, else the entry it hangs from."""
    end = data.get("end")
    parent = entry.get("parentId")
    return end if isinstance(end, str) else parent if isinstance(parent, str) else None


def cell_records(entries: list[RawEntry]) -> dict[str, tuple[str, int | None]]:
    """Entry id -> ``(cell id, execution count)`` for every entry a recorded cell run produced (latest wins)."""
    owner: dict[str, tuple[str, int | None]] = {}
    for _, data in cell_runs(entries):
        info = (data["cellId"], run_count(data))
        produced = data.get("produced")
        for eid in produced if isinstance(produced, list) else ():
            if isinstance(eid, str):
                owner[eid] = info
    return owner


def cell_ends(entries: list[RawEntry]) -> dict[str, str]:
    """Cell id -> the last entry of its latest recorded run (what ``compare`` uses for a cell id)."""
    out: dict[str, str] = {}
    for entry, data in cell_runs(entries):
        target = run_end(entry, data)
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


def count(value: Any) -> int:
    """A token count from the file: a finite number as an integer; anything else (a string,
    ``NaN``, ``1e400``, which reads as infinity) is 0."""
    if type(value) is int:  # the common case first (a bool is not an int here)
        return value if -(2**1000) < value < 2**1000 else 0  # beyond a double: JavaScript's Infinity
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, int):
        return value if abs(value) < 2**1000 else 0  # beyond a double: JavaScript's Infinity
    return int(value) if math.isfinite(value) else 0


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 turn``, ``2 turns``, ``1,234 entries`` (``many`` where adding an s is wrong)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _float(value: Any) -> float:
    """A cost: a finite number, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    try:
        number = float(value)
    except OverflowError:
        return 0.0
    return number if math.isfinite(number) else 0.0
