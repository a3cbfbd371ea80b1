"""Which entries of the current branch a pi 1.x ``context_edit`` changed, and how the tree draws it.

pi 1.6 applies the latest ``context_edit`` of a target among the entries on the path to the
leaf; an edit on another branch does not apply. So the tree marks only what the current
branch does: an entry is

* ``dropped`` (shown as *forgotten*): its latest edit on the path has a ``null`` replacement,
  so the model is not sent it (the file keeps it);
* ``edited``: the latest edit replaces its content with something else;
* ``restored``: the latest edit replaces its content with the entry's own content (how a
  forget or an edit is undone: pi has no "unset" edit, so restoring is an edit back to the
  original). The model is sent the original; the tree draws no mark.

The graph (SVG and text), the TreeView's side panel and ``pi-jupyter tree`` read these marks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Literal

from ..session.context_edits import editable
from . import digest
from .digest import RawEntry

EditState = Literal["dropped", "edited", "restored"]

MARK_WORDS = {"dropped": "forgotten", "edited": "edited"}
"""What the user reads for each drawn state."""
MARK_SIGNS = {"dropped": "✂", "edited": "✎"}
_LEGEND = {"dropped": "✂ forgotten: kept in the file, not sent to the model", "edited": "✎ edited: the model is sent other text"}


def legend(states: set[str]) -> str:
    """The legend line of a tree whose nodes carry marks of ``states`` (empty without marks)."""
    return " · ".join(text for state, text in _LEGEND.items() if state in states)


@dataclass(frozen=True, slots=True)
class EditMark:
    """The latest ``context_edit`` of one entry on the current branch."""

    target_id: str
    edit_id: str
    state: EditState
    replacement: Any
    """The replacement's ``content`` (``None`` when dropped)."""


def original_content(entry: RawEntry) -> Any:
    """The model-visible content an entry holds in the file (what a restore sends again)."""
    if entry.get("type") == "custom_message":
        return entry.get("content")
    msg = entry.get("message")
    if not isinstance(msg, dict):
        return None
    content = msg.get("content")
    if content is None and msg.get("role") in ("user", "assistant", "toolResult"):
        return []  # pi reads null content as empty
    return content


def _same(replacement: Any, original: Any) -> bool:
    if replacement == original:
        return True
    # a string replacement of an assistant message or tool result is stored as one text block
    as_blocks = lambda v: [{"type": "text", "text": v}] if isinstance(v, str) else v  # noqa: E731
    return as_blocks(replacement) == as_blocks(original)


def branch_edit_marks(path: list[RawEntry]) -> dict[str, EditMark]:
    """Target id -> its latest edit among ``path`` (the entries from the root to the leaf)."""
    latest = {e["targetId"]: e for e in path if e.get("type") == "context_edit" and isinstance(e.get("targetId"), str)}
    if not latest:
        return {}  # most branches: no edit, so no index of the path either
    by_id = {eid: e for e in path if isinstance(eid := e.get("id"), str)}
    marks: dict[str, EditMark] = {}
    for target_id, edit in latest.items():
        target = by_id.get(target_id)
        if target is None:
            continue  # a target off the path: pi applies nothing (the load report names it)
        replacement = edit.get("replacement")
        if replacement is None:
            marks[target_id] = EditMark(target_id, digest.as_text(edit.get("id")), "dropped", None)
            continue
        content = replacement.get("content") if isinstance(replacement, dict) else None
        state: EditState = "restored" if _same(content, original_content(target)) else "edited"
        marks[target_id] = EditMark(target_id, digest.as_text(edit.get("id")), state, content)
    return marks


def drawn_marks(marks: dict[str, EditMark], entry_ids: list[str]) -> dict[str, str]:
    """The marks a node holding ``entry_ids`` draws: id -> ``dropped`` or ``edited`` (restored entries draw none)."""
    return {eid: marks[eid].state for eid in entry_ids if eid in marks and marks[eid].state != "restored"}


def mark_summary(edits: dict[str, str], sendable: int) -> str:
    """A node's badge text: ``✂ forgotten``, ``✎ edited``, or counts when only some of its messages changed."""
    dropped = sum(1 for s in edits.values() if s == "dropped")
    edited = len(edits) - dropped
    whole = sendable <= 1
    parts = []
    if dropped:
        parts.append("✂ forgotten" if whole or dropped >= sendable else f"✂ {dropped} of {sendable} forgotten")
    if edited:
        parts.append("✎ edited" if whole or edited >= sendable else f"✎ {edited} of {sendable} edited")
    return " · ".join(parts)


def fully_dropped(edits: dict[str, str], sendable: int) -> bool:
    """True when every message of a node is forgotten: the node is drawn struck and dimmed."""
    return sendable > 0 and sum(1 for s in edits.values() if s == "dropped") >= sendable


def label_row(edits: dict[str, str], sendable: int) -> str:
    """The Graphviz HTML-label row of a marked node (empty without marks)."""
    if not edits:
        return ""
    color = "#6e7781" if all(s == "dropped" for s in edits.values()) else "#9a6700"
    return f'<FONT POINT-SIZE="8" COLOR="{color}"><B>{html.escape(mark_summary(edits, sendable))}</B></FONT>'


def node_style(edits: dict[str, str], sendable: int) -> tuple[str, str] | None:
    """``(fillcolor, color)`` of a marked node (dimmed when forgotten, amber when edited), or ``None``."""
    if not edits:
        return None
    if fully_dropped(edits, sendable):
        return "#eaeef2", "#8c959f"
    return "#fff8e1", "#9a6700"


def mark_classes(edits: dict[str, str], sendable: int) -> list[str]:
    """CSS classes of a marked node in the SVG (the TreeView and tests find marks by them)."""
    out = []
    if any(s == "dropped" for s in edits.values()):
        out.append("pi-ctx-dropped")
    if any(s == "edited" for s in edits.values()):
        out.append("pi-ctx-edited")
    if fully_dropped(edits, sendable):
        out.append("pi-ctx-forgotten")
    return out


def mark_node(node: Any, entries: list[RawEntry], marks: dict[str, EditMark]) -> None:
    """Set a drawn node's ``context_edits`` and ``editable`` from the branch's marks, and say so in its tooltip."""
    sendable = [e for e in entries if editable(e)]
    node.editable = len(sendable)
    node.context_edits = drawn_marks(marks, node.entry_ids)
    node.struck = not node.folded and bool(sendable) and node.context_edits.get(digest.as_text(sendable[0].get("id"))) == "dropped"
    if node.context_edits:
        node.tooltip += "\ncontext: " + mark_summary(node.context_edits, node.editable) + " (the session file keeps the original)"
