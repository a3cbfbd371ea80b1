"""What each entry of a branch puts in the context, as pi 1.6 projects it.

pi 1.6's ``buildSessionProjection`` (``session-manager.js``) turns the context entries of a
branch (the latest compaction, its kept entries, everything after it) into messages:

* a ``message`` entry gives its message; ``null`` (or missing) content is read as empty
  (``""`` for a system message, ``[]`` for user, assistant and tool results);
* the latest compaction gives its ``systemMessage`` snapshot (if any), then its summary;
  an older compaction inside the kept range gives nothing;
* a ``context_edit`` entry among the context entries replaces (or, with ``null``, removes)
  what its target gives; the latest edit of a target wins, and an edit on another branch
  is not on the path, so it does not apply. A string replacement of an assistant message
  or tool result becomes one text block. An edit changes the content of user, assistant,
  tool-result and custom messages; a ``null`` edit removes whatever the target gives;
* kept entries of a compaction skip system messages (the snapshot stands for them).

Files written before pi 1.x have none of these, and project exactly as before.
"""

from __future__ import annotations

from typing import Any

from .index import K_BRANCH_SUMMARY, K_COMPACTION, K_CONTEXT_EDIT, K_CUSTOM_MESSAGE, K_MESSAGE, K_OTHER, KINDS, RawEntry, js_date_ms

_MISSING: Any = object()
_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})


def is_system_entry(entry: RawEntry) -> bool:
    """True for a ``message`` entry holding a system message (pi 1.x's record of the prompt)."""
    message = entry.get("message")
    return type(message) is dict and message.get("role") == "system"


def _message(entry: RawEntry) -> list[dict[str, Any]]:
    message = entry.get("message", _MISSING)
    if message is _MISSING:
        return []
    if type(message) is dict and message.get("content") is None:
        role = message.get("role")
        if role == "system":
            return [{**message, "content": ""}]
        if role == "user" or role == "assistant" or role == "toolResult":
            return [{**message, "content": []}]
    return [message]


def entry_messages(entry: RawEntry, kind: int, head: bool) -> list[dict[str, Any]]:
    """What one context entry gives (pi's ``sessionEntryToContextMessages``); ``head``: the leading compaction."""
    if kind == K_MESSAGE:
        return _message(entry)
    if kind == K_COMPACTION:
        if not head:
            return []
        snapshot = entry.get("systemMessage")
        summary = compaction_summary(entry)
        # a snapshot that is not an object (a hand-edited file) gives nothing: pi's replay and convertToLlm skip it too
        return [snapshot, summary] if snapshot and type(snapshot) is dict else [summary]
    if kind == K_CUSTOM_MESSAGE or kind == K_BRANCH_SUMMARY:
        out: list[dict[str, Any]] = []
        emit_entry(entry, out)
        return out
    return []


def apply_edit(messages: list[dict[str, Any]], edit: RawEntry) -> list[dict[str, Any]]:
    """``messages`` of the edit's target after the edit (pi's ``projectContextEntry``).

    A replacement that is not an object with ``content`` (a file written by hand) leaves
    the content out, as pi's projection does; the load report names the line.
    """
    replacement = edit.get("replacement", _MISSING)
    if replacement is None:
        return []
    content = replacement.get("content", _MISSING) if type(replacement) is dict else _MISSING
    out = []
    for message in messages:
        role = message.get("role") if type(message) is dict else None
        if type(role) is not str or role not in _EDITABLE_ROLES:
            out.append(message)
            continue
        edited = dict(message)  # the content keeps its place among the keys, as JavaScript's spread keeps it
        if content is _MISSING:
            edited.pop("content", None)  # pi's ``undefined`` content: not written
        else:
            as_block = role in ("assistant", "toolResult") and isinstance(content, str)
            edited["content"] = [{"type": "text", "text": content}] if as_block else content
        out.append(edited)
    return out


def project_positions(order: list[RawEntry], kinds: bytes | bytearray, positions: list[int], compaction_head: bool) -> list[dict[str, Any]]:
    """The messages of the context entries at ``positions`` (the leading compaction first when ``compaction_head``)."""
    edits: dict[str, RawEntry] = {}
    if K_CONTEXT_EDIT in kinds:  # a C-speed scan: files without edits pay nothing more
        for i in positions:
            if kinds[i] == K_CONTEXT_EDIT:
                target = order[i].get("targetId")
                if type(target) is str:
                    edits[target] = order[i]
    out: list[dict[str, Any]] = []
    if not edits:
        for n, i in enumerate(positions):
            kind = kinds[i]
            if kind == K_MESSAGE:
                message = order[i].get("message", _MISSING)
                if type(message) is dict and message.get("content") is not None:
                    out.append(message)  # the common case, without a call
                else:
                    out.extend(_message(order[i]))
            elif kind == K_CUSTOM_MESSAGE or kind == K_BRANCH_SUMMARY or kind == K_COMPACTION:
                out.extend(entry_messages(order[i], kind, compaction_head and n == 0))
        return out
    for n, i in enumerate(positions):
        entry = order[i]
        messages = entry_messages(entry, kinds[i], compaction_head and n == 0)
        entry_id = entry.get("id")
        edit = edits.get(entry_id) if type(entry_id) is str else None
        out.extend(apply_edit(messages, edit) if edit is not None else messages)
    return out


def context_positions(order: list[RawEntry], positions: list[int], compaction_at: int) -> list[int]:
    """pi's ``buildContextEntries``: the latest compaction, its kept entries (no system messages), the rest.

    ``compaction_at`` indexes ``positions`` (-1: no compaction on the path).
    """
    if compaction_at < 0:
        return positions
    compaction = order[positions[compaction_at]]
    first_kept = compaction.get("firstKeptEntryId", _MISSING)
    out = [positions[compaction_at]]
    keeping = False
    for i in positions[:compaction_at]:
        entry = order[i]
        if not keeping and entry.get("id") == first_kept:
            keeping = True
        if keeping and not is_system_entry(entry):
            out.append(i)
    out.extend(positions[compaction_at + 1 :])
    return out


def compaction_summary(compaction: RawEntry) -> dict[str, Any]:
    summary: dict[str, Any] = {"role": "compactionSummary"}
    if "summary" in compaction:
        summary["summary"] = compaction["summary"]
    if "tokensBefore" in compaction:
        summary["tokensBefore"] = compaction["tokensBefore"]
    summary["timestamp"] = js_date_ms(compaction.get("timestamp"))
    return summary


def emit_entry(entry: RawEntry, out: list[dict[str, Any]]) -> None:
    kind = entry.get("type")
    if kind == "message":
        if "message" in entry:
            out.append(entry["message"])
    elif kind == "custom_message":
        msg: dict[str, Any] = {"role": "custom"}
        for key in ("customType", "content", "display", "details"):
            if key in entry:
                msg[key] = entry[key]
        msg["timestamp"] = js_date_ms(entry.get("timestamp"))
        out.append(msg)
    elif kind == "branch_summary" and entry.get("summary"):
        msg = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            msg["fromId"] = entry["fromId"]
        msg["timestamp"] = js_date_ms(entry.get("timestamp"))
        out.append(msg)


class BranchProjection:
    """pi 1.6's ``buildSessionProjection(...).entries`` for a root-first path, computed lazily.

    Entry ``j`` is the ``j``-th context entry: the latest compaction first (its snapshot and
    summary), then its kept entries (no system messages), then everything after it;
    :meth:`messages` gives what it puts in the context after its latest edit (a ``null`` edit:
    nothing). Compaction cut points are chosen on it; only the entries a cut looks at pay for
    their messages, so a long branch costs one light scan.
    """

    def __init__(self, path: list[RawEntry]) -> None:
        self.path = path
        compaction_at = -1
        edit_at: list[int] = []
        for i, entry in enumerate(path):  # one light pass: only compactions and edits change the projection
            kind = entry.get("type")
            if kind == "compaction":
                compaction_at = i
            elif kind == "context_edit":
                edit_at.append(i)
        self.compaction_head = compaction_at >= 0
        self.positions = context_positions(path, list(range(len(path))), compaction_at)
        self.edits: dict[str, RawEntry] = {}
        if edit_at:
            in_context = set(self.positions)
            for i in edit_at:
                if i in in_context and type(target := path[i].get("targetId")) is str:
                    self.edits[target] = path[i]
        self._cache: dict[int, list[dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self.positions)

    def entry(self, j: int) -> RawEntry:
        """The source entry of context entry ``j``."""
        return self.path[self.positions[j]]

    def kind(self, j: int) -> int:
        """The kind code of context entry ``j``."""
        kind = self.path[self.positions[j]].get("type")
        return KINDS.get(kind, K_OTHER) if type(kind) is str else K_OTHER

    def messages(self, j: int) -> list[dict[str, Any]]:
        """What context entry ``j`` gives the model (edits applied)."""
        cached = self._cache.get(j)
        if cached is not None:
            return cached
        entry = self.path[self.positions[j]]
        kind = self.kind(j)
        entry_id = entry.get("id")
        edit = self.edits.get(entry_id) if self.edits and isinstance(entry_id, str) else None
        if kind == K_MESSAGE and edit is None:
            message = entry.get("message", _MISSING)
            out = [message] if type(message) is dict and message.get("content") is not None else _message(entry)
        else:
            out = entry_messages(entry, kind, self.compaction_head and j == 0)
            if edit is not None:
                out = apply_edit(out, edit)
        self._cache[j] = out
        return out


def projected_entries(path: list[RawEntry]) -> list[tuple[RawEntry, list[dict[str, Any]]]]:
    """Every context entry of :class:`BranchProjection` with its messages (pi 1.6's ``buildSessionProjection(...).entries``)."""
    proj = BranchProjection(path)
    return [(proj.entry(j), proj.messages(j)) for j in range(len(proj))]
