"""Migrations of old session files to version 3 (pi-design §1.6).

v1 files are a flat list without ids; v2 added ``id``/``parentId``; v3 renamed the message
role ``hookMessage`` to ``custom``. pi assigns fresh ids in v1 -> v2 without checking them
against each other; here they are checked, and a v1 header's ``branchedFrom`` becomes
``parentSession`` (pi keeps it but never uses it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from .entries import CURRENT_VERSION


def needs_migration(header: dict[str, Any]) -> bool:
    """True when the header's version (1 when absent) is older than the current one."""
    version = header.get("version")
    return not isinstance(version, (int, float)) or version < CURRENT_VERSION


def migrate(header: dict[str, Any], entries: list[dict[str, Any]], new_id: Callable[[set[str]], str] | None = None) -> bool:
    """Bring ``header`` and ``entries`` (file order, header excluded) to version 3 in place.

    Returns True when anything changed. ``new_id`` makes v1 ids deterministic in tests.
    """
    version = header.get("version")
    if not isinstance(version, (int, float)):
        version = 1
    if version >= CURRENT_VERSION:
        return False
    make_id = new_id or _short_id
    if version < 2:
        header["version"] = 2
        if "branchedFrom" in header and "parentSession" not in header and isinstance(header["branchedFrom"], str):
            header["parentSession"] = header["branchedFrom"]
        used: set[str] = set()
        prev: str | None = None
        # v1 compactions name their kept entry by its index in the file, where the header is 0
        file_list: list[dict[str, Any]] = [header, *entries]
        for entry in entries:
            eid = make_id(used)
            used.add(eid)
            entry["id"] = eid
            entry["parentId"] = prev
            prev = eid
        for entry in entries:
            if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
                idx = entry.pop("firstKeptEntryIndex")
                if isinstance(idx, int) and not isinstance(idx, bool) and 0 <= idx < len(file_list):
                    target = file_list[idx]
                    if target is not header and target.get("type") != "session":
                        entry["firstKeptEntryId"] = target["id"]
        # pi's v1 -> v2 sets ids on the entry objects, which puts id/parentId after the other
        # keys; reorder to the v2+ layout so files look like any other pi file
        for i, entry in enumerate(entries):
            entries[i] = _reordered(entry)
    if version < 3:
        header["version"] = 3
        for entry in entries:
            if entry.get("type") == "message":
                message = entry.get("message")
                if isinstance(message, dict) and message.get("role") == "hookMessage":
                    message["role"] = "custom"
    return True


def _reordered(entry: dict[str, Any]) -> dict[str, Any]:
    head = {k: entry[k] for k in ("type", "id", "parentId", "timestamp") if k in entry}
    head.update((k, v) for k, v in entry.items() if k not in head)
    return head


def _short_id(used: set[str]) -> str:
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in used:
            return candidate
    return str(uuid.uuid4())
