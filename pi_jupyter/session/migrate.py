"""Migrations of old session files to version 3 (pi-design §1.6).

v1 files are a flat list without ids; v2 added ``id``/``parentId``; v3 renamed the message
role ``hookMessage`` to ``custom``. pi assigns fresh ids in v1 -> v2 without checking them
against each other; here they are checked, and a v1 header's ``branchedFrom`` becomes
``parentSession`` (pi keeps it but never uses it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .version import CURRENT_VERSION


def _version(header: dict[str, Any]) -> float | None:
    """The header's version as JavaScript compares it (``header.version ?? 1``); ``None`` when not a number."""
    version = header.get("version")
    if version is None:
        return 1.0
    if isinstance(version, bool):
        return float(version)
    if isinstance(version, (int, float)):
        return float(version)
    if isinstance(version, str):
        try:
            return float(version.strip() or 0)
        except ValueError:
            return None
    return None


def needs_migration(header: dict[str, Any]) -> bool:
    """True when the header's version (1 when absent) is older than the current one.

    A version that is not a number (``"abc"``) is left alone rather than guessed at: the
    v1 -> v2 step assigns new ids to every entry, which must never happen by mistake.
    """
    version = _version(header)
    return version is not None and version < CURRENT_VERSION


def migrate(header: dict[str, Any], entries: list[dict[str, Any]], new_id: Callable[[set[str]], str] | None = None) -> bool:
    """Bring ``header`` and ``entries`` (file order, header excluded) to version 3 in place.

    Returns True when anything changed. v1 entries get ids derived from the header's id and
    their position (pi draws random ones), so migrating the same file twice, for example
    each time a read-only viewer opens it, gives the same ids; ``new_id(used_ids)`` replaces
    that scheme. As in pi, a repeated header line among ``entries`` keeps its place (v1 compactions
    count it when they name their kept entry by index) and gets no id.
    """
    version = _version(header)
    if version is None or version >= CURRENT_VERSION:
        return False
    make_id = new_id or _stable_ids(str(header.get("id", "")))
    if version < 2:
        header["version"] = 2
        if "branchedFrom" in header and "parentSession" not in header and isinstance(header["branchedFrom"], str):
            header["parentSession"] = header["branchedFrom"]
        used: set[str] = set()
        prev: str | None = None
        # v1 compactions name their kept entry by its index in the file, where the header is 0
        file_list: list[dict[str, Any]] = [header, *entries]
        for i, entry in enumerate(entries):
            if entry.get("type") == "session":
                entry["version"] = 2
                continue
            eid = make_id(used)
            used.add(eid)
            entry["id"] = eid
            entry["parentId"] = prev
            prev = eid
            if entry.get("type") == "compaction":
                idx = entry.get("firstKeptEntryIndex")
                if isinstance(idx, (int, float)) and not isinstance(idx, bool):
                    del entry["firstKeptEntryIndex"]
                    # like pi, only an entry at or before the compaction has its id yet
                    if (isinstance(idx, int) or idx.is_integer()) and 0 <= idx <= i + 1:
                        target = file_list[int(idx)]
                        if target.get("type") != "session":
                            entry["firstKeptEntryId"] = target["id"]
        # pi's v1 -> v2 sets ids on the entry objects, which puts id/parentId after the other
        # keys; reorder to the v2+ layout so files look like any other pi file
        for i, entry in enumerate(entries):
            if entry.get("type") != "session":
                entries[i] = _reordered(entry)
    if version < 3:
        header["version"] = 3
        for entry in entries:
            if entry.get("type") == "session":
                entry["version"] = 3
            elif entry.get("type") == "message":
                message = entry.get("message")
                if isinstance(message, dict) and message.get("role") == "hookMessage":
                    message["role"] = "custom"
    return True


def _reordered(entry: dict[str, Any]) -> dict[str, Any]:
    head: dict[str, Any] = {k: entry[k] for k in ("type", "id", "parentId", "timestamp") if k in entry}
    head.update((k, v) for k, v in entry.items() if k not in head)
    return head


def _stable_ids(seed: str) -> Callable[[set[str]], str]:
    """Successive 8-hex-digit ids (pi's format) that depend only on ``seed`` and the position."""
    import hashlib  # here: only old files need new ids, and the command line starts faster without it

    state = {"n": 0}

    def make(used: set[str]) -> str:
        while True:
            state["n"] += 1
            candidate = hashlib.blake2b(f"{seed}\0{state['n']}".encode(), digest_size=4).hexdigest()
            if candidate not in used:
                return candidate

    return make
