""" "Forget this" in an AgentView: each written message knows its entry, and the browser can drop it from the context.

A mixin of :class:`~pi_jupyter.notebook.agent_view.view.AgentView` (the view owns the state). When
a message is written (``message_end`` carries its ``entry_id``), its live item gets ``entry``
(user and assistant items; a tool card's ``x`` for its result), and the browser shows "forget
this". A click sends ``{"type": "forget", "entry": ID}``; the callback registered with
:meth:`ViewActions.on_forget` does it (the same code as ``%pi forget``) or, while the agent
runs, keeps it for the end of the run; the view answers ``{"type": "acted", "entry", "ok",
"text"}`` and marks the item ``forgotten``, so the live view and the static rendering that
replaces it both say "not sent any more".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...messages import AssistantMessage, ToolResultMessage, UserMessage
from ...views.static_html import Actions

ForgetCallback = Callable[[str], tuple[bool, str]]
"""``callback(entry_id) -> (ok, one line)``."""


class ViewActions:
    """Entry ids of the shown messages, "forget this", and where the static rendering's buttons act."""

    _lock: threading.RLock
    _items: list[dict[str, Any]]
    _calls: dict[str, dict[str, Any]]
    _snapshot_dirty: bool

    def _init_actions(self) -> None:
        self._entry_of: dict[int, str] = {}  # id(message) -> its entry id
        self._item_of_entry: dict[str, dict[str, Any]] = {}  # entry id -> the live item (or tool card's x)
        self._forgotten: list[str] = []
        self._forget_callback: ForgetCallback | None = None
        self._actions: Actions | None = None

    def on_forget(self, callback: ForgetCallback) -> ForgetCallback:
        """Register what "forget this" does: ``callback(entry_id)`` returns ``(ok, line)``; returns it."""
        if not callable(callback):
            raise TypeError(f"AgentView.on_forget: expected a callable, got {type(callback).__name__}")
        self._forget_callback = callback
        return callback

    def set_actions(self, session_id: str, token: str) -> None:
        """Let the static rendering's buttons act through the page bridge of ``session_id`` with ``token``."""
        self._actions = Actions(session_id=session_id, token=token)

    @property
    def forgotten(self) -> list[str]:
        """Entries forgotten from this view, in order."""
        return list(self._forgotten)

    def mark_forgotten(self, entry_id: str) -> None:
        """Show ``entry_id`` as "not sent any more" (live and in the static rendering)."""
        with self._lock:
            if entry_id not in self._forgotten:
                self._forgotten.append(entry_id)
            target = self._item_of_entry.get(entry_id)
            if target is not None:
                target["forgotten"] = True
                self._actions_changed(target)
            self._snapshot_dirty = True
            self._after_event()  # type: ignore[attr-defined]

    def has_entry(self, entry_id: str) -> bool:
        """True when this view shows the message stored as ``entry_id``."""
        return entry_id in self._item_of_entry or entry_id in self._entry_of.values()

    def unmark_forgotten(self, entry_id: str) -> None:
        """Undo :meth:`mark_forgotten` (a forget kept for the end of the run was refused then)."""
        with self._lock:
            if entry_id in self._forgotten:
                self._forgotten.remove(entry_id)
            target = self._item_of_entry.get(entry_id)
            if target is not None:
                target["forgotten"] = False
                self._actions_changed(target)
            self._snapshot_dirty = True
            self._after_event()  # type: ignore[attr-defined]

    def _note_entry(self, msg: Any, entry_id: str | None) -> None:
        """Attach ``entry_id`` to the live item of ``msg`` (called at ``message_end``, after the item exists)."""
        if not entry_id:
            return
        self._entry_of[id(msg)] = entry_id
        target: dict[str, Any] | None = None
        if isinstance(msg, ToolResultMessage):
            block = self._calls.get(msg.tool_call_id)
            if block is not None:
                target = block.setdefault("x", {})
        elif isinstance(msg, (UserMessage, AssistantMessage)):
            kind = "user" if isinstance(msg, UserMessage) else "assistant"
            target = next((i for i in reversed(self._items) if i.get("kind") == kind), None)
        if target is None:
            return
        target["entry"] = entry_id
        self._item_of_entry[entry_id] = target
        self._actions_changed(target)

    def _actions_changed(self, target: dict[str, Any]) -> None:
        item = next((i for i in self._items if i is target), None)
        if item is not None:
            meta = {k: item[k] for k in ("entry", "forgotten") if k in item}  # the item as the snapshot has it
            self._op("meta", i=item["id"], m=meta)  # type: ignore[attr-defined]
            return
        call = next((cid for cid, block in self._calls.items() if block.get("x") is target), None)
        if call is not None:
            self._op("x", c=call, x=dict(target))  # type: ignore[attr-defined]

    def _static_entry_ids(self, items: list[Any]) -> list[str | None]:
        return [self._entry_of.get(id(m)) for m in items]

    def _on_forget_msg(self, content: dict[str, Any]) -> None:
        entry = content.get("entry")
        callback = self._forget_callback
        if not isinstance(entry, str) or not entry:
            ok, text = False, "forget: no entry id given"
        elif callback is None:
            ok, text = False, f"forget is not connected to this view; run %pi forget {entry}"
        else:
            try:
                ok, text = callback(entry)
            except Exception as exc:  # noqa: BLE001 - shown in the view instead of lost in the kernel log
                ok, text = False, f"forget failed: {type(exc).__name__}: {exc}"
        if ok and isinstance(entry, str):
            self.mark_forgotten(entry)
        self.send({"type": "acted", "entry": entry, "ok": ok, "text": text})  # type: ignore[attr-defined]


__all__ = ["ForgetCallback", "ViewActions"]
