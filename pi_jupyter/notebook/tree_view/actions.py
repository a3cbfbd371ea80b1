"""The TreeView's context edits: forget, edit or restore what the model is sent of a node's messages.

Each action appends a pi 1.x ``context_edit`` entry through the public API a user would call
(:meth:`Agent.edit_context <pi_jupyter.agent.Agent.edit_context>`, which also reloads the
agent's messages; :meth:`Session.edit_context` for a bare session), then the tree redraws with
the mark. The file keeps every original.

*Restore* is how pi 1.6 can undo an edit: it has no "unset" entry (the latest edit of a target
on the branch wins), so restoring appends an edit whose replacement is the entry's own content
from the file. The tree then draws no mark, and the model is sent the original again.

Refusals (an entry not on the current branch, one without model content, a running agent)
come back as one line, pi's reason first, in the status line and in the side panel.
"""

from __future__ import annotations

from typing import Any

from ...agent.result import AgentBusyError
from ...session import ContextEditError, SessionError
from ...session.context_edits import editable
from ...views import digest as _digest
from ...views.edit_marks import EditMark, branch_edit_marks, original_content

CONTEXT_ACTIONS = frozenset({"forget", "edit_context", "restore"})
"""Browser actions handled here (``{"type": "action", "action": ..., "key"|"entry": ..., "text": ...}``)."""
MAX_PANEL_TEXT = 4000
"""Characters of an original or a replacement the side panel shows."""

_HINTS = {
    "is not on the active branch": "check out a node below it first: a context edit only changes the current branch",
    "does not contribute editable model content": "only user, assistant, tool-result and extension messages can be forgotten or edited",
}


def _role(entry: dict[str, Any]) -> str:
    if entry.get("type") == "custom_message":
        return "Extension message"
    msg = _digest.message(entry) or {}
    role = msg.get("role")
    if role == "toolResult":
        return f"Tool result: {_digest.as_text(msg.get('toolName') or '?')}"
    return {"user": "You", "assistant": "Assistant"}.get(str(role), _digest.as_text(role))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_PANEL_TEXT else text[:MAX_PANEL_TEXT] + f"\n… [{len(text) - MAX_PANEL_TEXT} characters more]"


def context_rows(session: Any, entry_ids: list[str], limit: int) -> list[dict[str, Any]]:
    """Per editable entry of a node: its state on the current branch, the original and what is sent instead."""
    try:
        path = session.raw_branch()
    except SessionError:
        path = []
    on_path = {e.get("id") for e in path}
    marks: dict[str, EditMark] = branch_edit_marks(path)
    rows = []
    for eid in entry_ids:
        entry = _digest.lookup(session, eid)
        if entry is None or not editable(entry):
            continue
        mark = marks.get(eid)
        original = _digest.content_text(original_content(entry))
        state = mark.state if mark else "sent"
        row = {"id": eid, "role": _role(entry), "onPath": eid in on_path, "state": state, "original": _clip(original)}
        if mark is not None:
            row["editId"] = mark.edit_id
            row["sent"] = _clip(_digest.content_text(mark.replacement)) if mark.state != "dropped" else None
        rows.append(row)
        if len(rows) >= limit:
            break
    return rows


def refusal_line(exc: BaseException) -> str:
    """One line for a refused edit: pi's reason, then what to do about it."""
    text = str(exc.args[0]) if exc.args else str(exc)
    hint = next((h for reason, h in _HINTS.items() if reason in text), None)
    return f"{text} ({hint})" if hint else text


class ContextEditActions:
    """TreeView's forget / edit / restore actions (a mixin: the view supplies the session, the agent and the redraw)."""

    def _edit(self, entry_id: str, replacement: Any) -> str:
        agent = self.agent  # type: ignore[attr-defined]
        if agent is not None:
            return str(agent.edit_context(entry_id, replacement))  # reloads the agent's messages too
        return self.session.edit_context(entry_id, replacement)  # type: ignore[attr-defined]

    def _entry(self, ref: str | None) -> str:
        """The entry an action on one message acts on: an entry id or label, else the selected node's only message."""
        if ref:
            return self.session.resolve(ref)  # type: ignore[attr-defined]
        node = self._selected_node()
        ids = [eid for eid in node.entry_ids if (e := _digest.lookup(self.session, eid)) is not None and editable(e)]  # type: ignore[attr-defined]
        if len(ids) != 1:
            raise ValueError(f"{node.title}: name one of its {len(ids)} messages (an entry id) to edit or restore")
        return ids[0]

    def _selected_node(self, key: str | None = None) -> Any:
        key = key or self.selected  # type: ignore[attr-defined]
        if not key:
            raise ValueError("select a node first")
        node = self._graph.model.nodes.get(key)  # type: ignore[attr-defined]
        if node is None:
            raise KeyError(f"TreeView: no node {key!r} in the current graph")
        if node.folded:
            raise ValueError(f"{node.title}: a folded node stands for many turns; expand it and pick one")
        return node

    def forget(self, entry: str | None = None, *, node: str | None = None) -> list[str]:
        """Drop messages from what the model is sent (the file keeps them); returns the edit ids.

        ``entry``: that message (an id or a label). Without it, every message of ``node`` (a
        node key; default: the selected node) not already forgotten: "forget this turn".
        """
        if entry:
            targets = [self.session.resolve(entry)]  # type: ignore[attr-defined]
        else:
            shown = self._selected_node(node)
            rows = context_rows(self.session, shown.entry_ids, len(shown.entry_ids))  # type: ignore[attr-defined]
            targets = [r["id"] for r in rows if r["state"] != "dropped"]
            if not targets and rows:
                raise ValueError(f"{shown.title}: every message of it is forgotten already")
            if not targets:
                targets = [shown.target_id]  # no message inside: pi's own refusal says why
        edits = [self._edit(t, None) for t in targets]
        what = targets[0] if len(targets) == 1 else f"{len(targets)} messages ({', '.join(targets)})"
        them = "it" if len(targets) == 1 else "them"
        self._context_done(f"forgot {what}: the model is no longer sent {them}; the session file keeps the original")
        return edits

    def edit_context(self, entry: str | None, text: str) -> str:
        """Send the model ``text`` instead of a message's content (the file keeps the original); returns the edit id.

        ``entry``: an entry id or label (``None``: the selected node's only message).
        """
        target = self._entry(entry)
        edit_id = self._edit(target, text)
        self._context_done(f"edited {target}: the model is now sent {len(text):,} characters instead; the file keeps the original")
        return edit_id

    def restore(self, entry: str | None = None) -> str:
        """Send a forgotten or edited message as the file holds it again (an edit back to its own content)."""
        target = self._entry(entry)
        found = _digest.lookup(self.session, target)  # type: ignore[attr-defined]
        if found is None:
            raise ContextEditError(f"Entry {target} not found")
        state = next((r["state"] for r in context_rows(self.session, [target], 1)), "sent")  # type: ignore[attr-defined]
        if state in ("sent", "restored"):
            raise ValueError(f"{target} is sent as the file holds it already: nothing to restore")
        content = original_content(found)
        edit_id = self._edit(target, content if isinstance(content, (str, list)) else [])
        self._context_done(f"restored {target}: the model is sent it as the file holds it again")
        return edit_id

    def context_action(self, content: dict[str, Any]) -> None:
        """Run a browser's forget / edit / restore; a refusal is shown (status line and panel), never raised."""
        action = content.get("action")
        entry = str(content.get("entry") or "") or None
        try:
            if action == "forget":
                self.forget(entry, node=str(content.get("key") or "") or None)
            elif action == "edit_context":
                self.edit_context(entry, str(content.get("text") or ""))
            else:
                self.restore(entry)
        except (ContextEditError, AgentBusyError, SessionError, ValueError, KeyError) as exc:
            line = refusal_line(exc)
            self._set_status(line, "error")  # type: ignore[attr-defined]
            self._panel_note(line, "error")

    def _context_done(self, text: str) -> None:
        self._done(text)  # type: ignore[attr-defined]  # redraws: the marks and the panel follow
        self._panel_note(text, "ok")

    def _panel_note(self, text: str, kind: str) -> None:
        with self._lock:  # type: ignore[attr-defined]
            details = self.details  # type: ignore[has-type]
            if details.get("kind") == "node":
                self.details = {**details, "contextNote": {"text": _digest.utf8_safe(text), "kind": kind}}
