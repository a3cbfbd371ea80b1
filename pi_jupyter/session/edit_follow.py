"""A context edit follows its entry: once forgotten, an entry is sent on no branch again.

pi 1.6 applies a ``context_edit`` only on the branch that holds it, so an entry forgotten on one
branch would be sent again on every other branch that holds it: a later cell re-run from before
the edit, a checkout to a node from before it, a fork, a grid, a compaction or a branch summary.
The user's intent is the other one: *forget this*, whatever comes next. The rule here:

* the **latest edit of an entry anywhere in the file** (file order: the user's last word on it,
  a forget, an edit or a restore) decides what every branch holding that entry sends;
* before a request is built from a branch (a prompt, a compaction, a branch summary, a branch of
  a grid) and when a branch is forked into a new file, a branch whose own latest edit of such an
  entry differs gets a **copy** of the file's latest one (a ``context_edit`` entry at its leaf).

So the file stays pi's: pi, which reads only the edits on a path, rebuilds the same context.
Files without edits pay one byte scan.
"""

from __future__ import annotations

from typing import Any

from .index import K_CONTEXT_EDIT, RawEntry
from .projection import BranchProjection


def latest_edits(order: list[RawEntry], kinds: bytes | bytearray) -> dict[str, RawEntry]:
    """Entry id -> the latest ``context_edit`` of it in the whole file (file order)."""
    if K_CONTEXT_EDIT not in kinds:
        return {}
    latest: dict[str, RawEntry] = {}
    for entry, kind in zip(order, kinds, strict=False):
        if kind == K_CONTEXT_EDIT and type(target := entry.get("targetId")) is str:
            latest[target] = entry
    return latest


def edits_to_carry(latest: dict[str, RawEntry], path: list[RawEntry]) -> list[dict[str, Any]]:
    """The ``context_edit`` fields a branch (root-first ``path``) needs so that it sends what the file's latest edits say."""
    if not latest or not path:
        return []
    projection = BranchProjection(path)
    out: list[dict[str, Any]] = []
    for j in range(len(projection)):
        entry_id = projection.entry(j).get("id")
        wanted = latest.get(entry_id) if type(entry_id) is str else None
        if wanted is None:
            continue
        have = projection.edits.get(entry_id)  # type: ignore[arg-type]
        if have is not None and (have is wanted or have.get("replacement") == wanted.get("replacement")):
            continue
        out.append({"type": "context_edit", "targetId": entry_id, "replacement": wanted.get("replacement")})
    return out


__all__ = ["edits_to_carry", "latest_edits"]
