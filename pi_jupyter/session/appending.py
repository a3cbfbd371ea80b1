"""Appending to a session: one locked ``O_APPEND`` write per entry, catching up with other writers, syncing.

The writing half of :class:`~pi_jupyter.session.Session` (the steps are described in
:mod:`pi_jupyter.session.store`); its state is set by ``Session.__init__``.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any

from ..messages import WireModel, as_message, now_iso
from .context_edits import context_edit_entry, system_snapshot, usage_entry
from .index import RawEntry
from .jsonl import dumps, parse_lines
from .lock import exclusive
from .reading import SessionReading
from .report import EntryNotFoundError, SessionChangedError, SessionError

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

log = logging.getLogger(__name__)


class SessionAppending(SessionReading):
    """The ``append_*`` methods, the locked write, catching up with other writers, and the file's lifetime."""

    _lock: threading.RLock
    _fd: int | None
    _listeners: list[Callable[[RawEntry], None]]
    _dirty: bool
    _closed: bool
    _leaf_saved: bool
    _end: int
    _next_line: int
    _needs_newline: bool
    _tail_start: int

    # ---------------------------------------------------------------- appending

    def append_message(self, message: WireModel | dict[str, Any]) -> str:
        """Append a message (user, assistant, toolResult, bashExecution, or custom) and return its id.

        A ``custom`` message is stored as a ``custom_message`` entry, as pi stores it.
        Compaction and branch summaries are entries of their own: use :meth:`append_compaction`
        and :meth:`branch_with_summary`.
        """
        if isinstance(message, dict):
            # a pi-shaped dict is stored as given (no validation: the hot path of a large import)
            data = message
            role = message.get("role")
            custom = (message.get("customType", ""), message.get("content", ""), message.get("display"), message.get("details"))
        else:
            model = as_message(message)
            role = getattr(model, "role", None)
            data = None
            custom = (
                getattr(model, "custom_type", ""),
                getattr(model, "content", ""),
                getattr(model, "display", None),
                getattr(model, "details", None),
            )
        if role in ("compactionSummary", "branchSummary"):
            raise SessionError(f"a {role} message is not stored as a message; use append_compaction or branch_with_summary")
        if role == "custom":
            return self.append_custom_message(custom[0], custom[1], display=custom[2], details=custom[3])
        if data is None:
            data = model.to_dict()
        return self._append(lambda eid, parent, ts: {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": data})

    def append_thinking_level_change(self, level: str) -> str:
        """Record that the thinking level is ``level`` from here on."""
        return self._append(
            lambda eid, parent, ts: {
                "type": "thinking_level_change",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "thinkingLevel": level,
            }
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record that the model is ``provider/model_id`` from here on."""
        return self._append(
            lambda eid, parent, ts: {
                "type": "model_change",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "provider": provider,
                "modelId": model_id,
            }
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Any = None,
    ) -> str:
        """Record a compaction: history before ``first_kept_entry_id`` is ``summary`` from here on.

        As pi 1.x, ``usage`` is what the summary cost, and the replayed system prompt and tools of
        the branch (if the transcript records them) are kept as ``systemMessage``.
        """
        context = self.context().raw_messages

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {
                "type": "compaction",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "summary": summary,
                "firstKeptEntryId": first_kept_entry_id,
                "tokensBefore": tokens_before,
            }
            if details is not None:
                entry["details"] = details
            if usage is not None:
                entry["usage"] = usage.to_dict() if isinstance(usage, WireModel) else usage
            if from_hook is not None:
                entry["fromHook"] = from_hook
            snapshot = system_snapshot(context, ts)
            if snapshot is not None:
                entry["systemMessage"] = snapshot
            return entry

        return self._append(build)

    def append_usage(self, kind: str, provider: str, model: str, usage: Any, note: str | None = None) -> str:
        """Record spending outside the conversation (a judge, cache warming): never in the context, in every cost total."""
        fields = usage_entry(kind, provider, model, usage, note)
        return self._append(lambda eid, parent, ts: {"type": "usage", "id": eid, "parentId": parent, "timestamp": ts, **fields})

    def edit_context(self, entry_id: str, replacement: Any) -> str:
        """Replace what an entry of the current branch shows the model, or with ``None`` drop it; the file keeps the original.

        ``replacement`` is a string, a list of content blocks or ``{"content": ...}``. Refused
        (:class:`~pi_jupyter.session.context_edits.ContextEditError`, pi 1.6's reasons) for an entry
        that is not on the current branch or carries no user, assistant, tool-result or custom content.
        Returns the id of the ``context_edit`` entry.
        """
        try:
            target_id = self.resolve(entry_id)
        except EntryNotFoundError:
            target_id = entry_id
        fields = context_edit_entry(self._index.get(target_id), target_id, self.branch_ids(), replacement)
        return self._append(lambda eid, parent, ts: {"type": "context_edit", "id": eid, "parentId": parent, "timestamp": ts, **fields})

    def carry_context_edits(self) -> list[str]:
        """Copy onto the current branch the file's latest edit of each entry it holds, where the branch says otherwise.

        A context edit follows its entry (see :mod:`~pi_jupyter.session.edit_follow`): an entry
        forgotten on one branch is forgotten on every branch, so a request built from here
        never sends it again, and pi rebuilds the same context from the file. Returns the ids of
        the ``context_edit`` entries appended (none, almost always).
        """
        from .edit_follow import edits_to_carry, latest_edits

        latest = latest_edits(self._index.order, self._index.kinds)
        if not latest or self.readonly:
            return []
        return [self._append(_entry_of(fields)) for fields in edits_to_carry(latest, self.raw_branch())]

    def append_custom(self, custom_type: str, data: Any = None) -> str:
        """Append private state (an extension's, or pi-jupyter's own). The model never sees it."""

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "custom", "customType": custom_type}
            if data is not None:
                entry["data"] = data
            entry.update(id=eid, parentId=parent, timestamp=ts)
            return entry

        return self._append(build)

    def append_custom_message(self, custom_type: str, content: Any, display: bool | None = True, details: Any = None) -> str:
        """Append a message the model sees (as a user message), from an extension or a program."""
        if isinstance(content, list):
            content = [b.to_dict() if isinstance(b, WireModel) else b for b in content]

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "custom_message", "customType": custom_type, "content": content}
            if display is not None:
                entry["display"] = display
            if details is not None:
                entry["details"] = details
            entry.update(id=eid, parentId=parent, timestamp=ts)
            return entry

        return self._append(build)

    def label(self, target: str, label: str | None) -> str:
        """Set the label of an entry (``None`` or ``""`` clears it). Like pi, this appends a ``label`` entry."""
        target_id = self.resolve(target)

        def build(eid: str, parent: str | None, ts: str) -> RawEntry:
            entry: RawEntry = {"type": "label", "id": eid, "parentId": parent, "timestamp": ts, "targetId": target_id}
            if label is not None:
                entry["label"] = label
            return entry

        return self._append(build)

    def set_name(self, name: str) -> str:
        """Name the session (a ``session_info`` entry)."""
        if not isinstance(name, str) or not name.strip():
            raise SessionError("a session name cannot be empty")
        trimmed = name.strip()
        return self._append(
            lambda eid, parent, ts: {"type": "session_info", "id": eid, "parentId": parent, "timestamp": ts, "name": trimmed}
        )

    def on_append(self, callback: Callable[[RawEntry], None]) -> Callable[[], None]:
        """Call ``callback(entry_dict)`` after every entry this object appends; returns an unsubscribe function."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _append(self, build: Callable[[str, str | None, str], RawEntry]) -> str:
        if self._readonly:
            raise SessionError(f"{self._path}: opened read-only; nothing can be appended")
        if self._closed:
            raise SessionError(f"{self._path}: the session is closed")
        with self._lock:
            if self._path is None:
                entry = build(self._new_id(), self._index.leaf, now_iso())
                self._index.add(entry, 0)
            else:
                entry = self._append_to_file(build)
        for listener in list(self._listeners):
            try:
                listener(entry)
            except Exception:  # noqa: BLE001 - a consumer's bug must not lose the entry
                log.exception("session listener failed")
        return entry["id"]

    def _append_to_file(self, build: Callable[[str, str | None, str], RawEntry]) -> RawEntry:
        assert self._path is not None
        fd = self._open_fd()
        with exclusive(fd, self._path):
            self._catch_up(fd)
            # ids are chosen under the lock, after reading what other writers added
            entry = build(self._new_id(), self._index.leaf, now_iso())
            line = dumps(entry) + b"\n"
            if self._needs_newline:
                line = b"\n" + line
                self._next_line += 1
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            self._end += len(line)
            self._needs_newline = False
            self._tail_start = -1
            if self._durability == "entry" or (self._durability == "turn" and _ends_turn(entry)):
                os.fsync(fd)
                self._dirty = False
            else:
                self._dirty = True
        self._index.add(entry, self._next_line)
        self._next_line += 1
        self._leaf_saved = True
        return entry

    def _catch_up(self, fd: int) -> None:
        """Index what other writers appended since we last looked (called under the lock).

        When our view ended in a torn line, that line is read again whole: a writer that does
        not check for a torn tail (pi) glues its line onto the fragment, and a fresh reader
        sees one malformed line there, so we must too.
        """
        stat = os.fstat(fd)
        size = stat.st_size
        try:
            current = os.stat(self._path).st_ino if self._path else stat.st_ino
        except FileNotFoundError:
            current = None
        if current != stat.st_ino:
            raise SessionChangedError(
                f"{self._path}: the file was replaced, moved or deleted since it was opened (another program "
                "rewrote it?); nothing was appended; open it again"
            )
        if size == self._end:
            return
        if size < self._end:
            raise SessionChangedError(
                f"{self._path}: the file shrank from {self._end} to {size} bytes since it was read "
                "(another program rewrote it); nothing was appended"
            )
        start = self._tail_start if self._needs_newline and self._tail_start >= 0 else self._end
        data = os.pread(fd, size - start, start)
        chunk = parse_lines(data, self._report, self._next_line)
        leaf = self._index.leaf
        entries, lines = chunk.objs, chunk.lines  # repeated headers are reported and skipped by the index
        self._index.extend(entries, lines, self._report)
        self._index.leaf = leaf  # other writers' entries do not move our leaf
        self._end = size
        self._next_line = chunk.next_line
        self._needs_newline = not chunk.ends_with_newline
        self._tail_start = start + chunk.tail_start if chunk.tail_start >= 0 else -1

    def refresh(self) -> int:
        """Read entries other writers appended since the file was opened; returns how many were new."""
        if self._path is None:
            return 0
        before = len(self._index)
        with self._lock:
            fd = self._open_fd()
            with exclusive(fd, self._path):
                self._catch_up(fd)
        return len(self._index) - before

    def _new_id(self) -> str:
        return fresh_id(self._index.by_id)

    def _open_fd(self) -> int:
        if self._fd is None:
            assert self._path is not None
            try:
                self._fd = os.open(self._path, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                raise SessionChangedError(f"{self._path}: the session file was deleted or moved; nothing was appended") from None
        return self._fd

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ---------------------------------------------------------------- lifetime

    def sync(self) -> None:
        """Force appended entries to disk (fsync), whatever the durability setting."""
        with self._lock:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                self._dirty = False

    def close(self) -> None:
        """Sync (unless durability is ``"never"``) and release the file for writing.

        Reading still works: entries not read yet are read from the file as it was opened.
        """
        with self._lock:
            if self._durability != "never":
                self.sync()
            self._close_fd()
            self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def _ends_turn(entry: RawEntry) -> bool:
    if entry.get("type") in ("compaction", "branch_summary"):
        return True
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def fresh_id(used: Container[str]) -> str:
    """pi's kind of id: 8 lowercase hex digits (``randomUUID().slice(0, 8)``), not in ``used``."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in used:
            return candidate
    return str(uuid.uuid4())


def _entry_of(fields: dict[str, Any]) -> Callable[[str, str | None, str], RawEntry]:
    """The builder :meth:`SessionAppending._append` takes, for an entry of ``fields``."""

    def build(eid: str, parent: str | None, ts: str) -> RawEntry:
        return {"type": fields["type"], "id": eid, "parentId": parent, "timestamp": ts, **fields}

    return build
