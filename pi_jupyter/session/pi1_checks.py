"""Load-time checks of what pi 1.x writes: context edits, system messages, usage entries.

pi reads these without validation (a bad one can crash it or silently send the wrong
context). Here each problem goes to the load report with its line; the context is still
rebuilt as pi 1.6 rebuilds it (see :mod:`.projection`), and nothing is rewritten.
"""

from __future__ import annotations

import math
from typing import Any

from ..messages.text import json_type
from .index import EntryIndex, RawEntry
from .report import CycleError, LoadReport

_USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_COST_KEYS = ("input", "output", "cacheRead", "cacheWrite", "total")


def check_pi1_entries(index: EntryIndex, report: LoadReport) -> None:
    """Report bad ``context_edit``, ``usage`` entries, system messages and compaction extras (pi 1.x)."""
    order = index.order
    for p in index.whole_positions():  # a stub is a plain message (not a system one): nothing to check
        entry = order[p]
        etype = entry.get("type")
        if etype == "message":
            message = entry.get("message")
            if type(message) is dict and message.get("role") == "system":
                _report(index, report, entry, "bad_system_message", system_message_problem(message))
        elif etype == "context_edit":
            _report(index, report, entry, "bad_context_edit", context_edit_problem(index, entry))
        elif etype == "usage":
            _report(index, report, entry, "bad_usage", usage_problem(entry.get("usage")))
        elif etype == "compaction":
            if "usage" in entry:
                _report(index, report, entry, "bad_usage", usage_problem(entry["usage"]))
            if "systemMessage" in entry:
                problem = snapshot_problem(entry["systemMessage"])
                _report(index, report, entry, "bad_system_message", problem and f"systemMessage snapshot {problem}")


def _report(index: EntryIndex, report: LoadReport, entry: RawEntry, kind: Any, problem: str | None) -> None:
    if problem:
        eid = entry.get("id")
        report.add(index.line(eid) if type(eid) is str else 0, kind, f"{entry.get('type')} entry {eid!r}: {problem}", "warning", eid)


def context_edit_problem(index: EntryIndex, entry: RawEntry) -> str | None:
    """Why a ``context_edit`` entry does not do what it says, or ``None``."""
    replacement = entry.get("replacement", ...)
    if replacement is ...:
        return "has no 'replacement' (pi 1.6 fails on it); the target's content is left out of the context"
    if replacement is not None:
        content = replacement.get("content", ...) if type(replacement) is dict else ...
        if not isinstance(content, (str, list)):
            return "replacement is neither null nor an object with string or list 'content'; the target's content is left out"
    target = entry.get("targetId")
    if type(target) is not str:
        return f"targetId is a JSON {json_type(target)}, not an entry id; the edit does nothing"
    if target not in index.by_id:
        return f"target {target!r} is not in the file; the edit does nothing"
    if target not in _branch_ids(index, entry["id"]):
        return f"target {target!r} is not on the edit's branch; the edit does nothing"
    return None


def _branch_ids(index: EntryIndex, entry_id: str) -> set[str]:
    try:
        return {index.order[p]["id"] for p in index.path_positions(entry_id)}
    except CycleError:
        return set()  # reported as a cycle already


def snapshot_problem(snapshot: Any) -> str | None:
    """What is wrong with a compaction's ``systemMessage`` snapshot, or ``None`` (a falsy one is no snapshot, as in pi)."""
    if not snapshot:
        return None if snapshot is None else f"is an empty JSON {json_type(snapshot)}; no prompt after the compaction"
    if type(snapshot) is not dict:
        return f"is a JSON {json_type(snapshot)}, not a message; left out of the context"
    role = snapshot.get("role")
    if role != "system":
        return f"has role {role!r}, not 'system'; pi 1.6 puts it in the context as it is, and so does this reader"
    return system_message_problem(snapshot)


def system_message_problem(message: dict[str, Any]) -> str | None:
    """What is wrong with a system message's fields (pi 1.x), or ``None``."""
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"content is a JSON {json_type(content)}; read as empty"
    if "sections" in message and message["sections"] is None:
        return "sections is null (pi writes no field); read as none"
    sections = message.get("sections")
    if sections is not None:
        if type(sections) is not dict:
            return f"sections is a JSON {json_type(sections)}, not an object; ignored"
        odd = [name for name, value in sections.items() if value is not None and type(value) is not str]
        if odd:
            return f"section(s) {', '.join(map(repr, odd))} hold neither a string nor null; left out of the prompt"
    for key in ("toolsAdded", "toolsRemoved"):
        tools = message.get(key)
        if tools is None:
            continue
        if type(tools) is not list:
            return f"{key} is a JSON {json_type(tools)}, not a list; ignored (pi 1.6 cannot replay it)"
        if any(type(t) is not dict or type(t.get("name")) is not str for t in tools):
            return f"{key} holds a tool without a string name; that tool is ignored"
    return None


def _odd_number(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0


def usage_problem(usage: Any) -> str | None:
    """What is wrong with a usage object (token counts and cost), or ``None``."""
    if type(usage) is not dict:
        return f"usage is a JSON {json_type(usage)}, not an object; counted as zero"
    odd = [key for key in _USAGE_COUNTS if key in usage and _odd_number(usage[key])]
    cost = usage.get("cost")
    if cost is not None:
        if type(cost) is not dict:
            odd.append("cost")
        else:
            odd.extend(f"cost.{key}" for key in _COST_KEYS if key in cost and _odd_number(cost[key]))
    if odd:
        return f"usage field(s) {', '.join(odd)} are not non-negative numbers; counted as zero"
    return None
