"""The context lens: where each message of the next request comes from, on the tree.

"Context is rebuilt, not saved": before each request the branch ending at the leaf is
rebuilt into messages (:meth:`Session.context`). The lens runs that very rebuild for a
chosen leaf and lays its result back onto the branch's entries, so every entry on the path
gets one state:

* ``in``: sent as it is (a message, a ``custom_message`` from an extension);
* ``edited``: sent as a pi 1.6 ``context_edit`` rewrote it (the file keeps the original);
* ``summary``: sent as a summary (the compaction that applies; a branch summary);
* ``replaced``: an original the compaction replaced (before its first kept entry), or an
  older compaction it supersedes; not sent;
* ``dropped``: forgotten: a ``context_edit`` with a ``null`` replacement leaves it out;
* ``out``: on the path but never sent (``custom`` entries, labels, model and thinking
  changes, session names; a failed or aborted reply, which every request leaves out, with a note).

The states are read off the projection the rebuild is made of (the same context positions and
edits, :class:`~pi_jupyter.session.projection.BranchProjection`), and the counts of the headline
come from :func:`~pi_jupyter.providers.sent_messages`, the account of a request that ``%pi
context`` and the providers use: the lens, ``%pi context`` and the request cannot disagree.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..compaction.tokens import estimate_context_tokens, estimate_tokens
from ..session.projection import BranchProjection
from . import digest
from .digest import RawEntry, plural
from .edit_marks import branch_edit_marks

if TYPE_CHECKING:
    from ..session import Session
    from .graph.digraph import GraphModel

State = Literal["in", "edited", "summary", "replaced", "dropped", "out"]
MAX_ROWS = 400
"""Entries listed one by one in the lens's HTML (the rest are counted)."""


class LensEntry(BaseModel):
    """One entry on the lens's path, with what the rebuild made of it."""

    entry_id: str
    type: str
    role: str | None = None
    state: State
    tokens: int = 0
    """Estimated tokens it adds to the request (0 when not sent)."""
    preview: str = ""
    note: str = ""
    """Why an entry that holds a message is not sent, when its state alone does not say (a failed reply)."""


class ContextLens(BaseModel):
    """What the next request from ``leaf_id`` would send, entry by entry (see the module docstring)."""

    leaf_id: str | None
    entries: list[LensEntry] = Field(default_factory=list)
    """The path, root first (checkout markers and cell records left out)."""
    messages: int = 0
    """Messages the rebuild gives (the entries listed as sent or summary)."""
    tokens: int = 0
    """Estimated tokens of all messages sent (pi-jupyter's estimate, about characters / 4)."""
    sent_messages: int = 0
    """Messages the request carries, as ``%pi context`` counts them: after the vendor conversion (a
    forgotten tool result becomes a placeholder, failed replies are left out), system messages not
    counted (they travel as the system prompt)."""
    sent_tokens: int = 0
    """The request's estimated size, as ``%pi context`` gives it (the last reported usage plus estimates of the messages after it)."""
    compaction_id: str | None = None
    """The compaction that applies (the latest on the path), if any."""
    first_kept_id: str | None = None
    model: str | None = None
    thinking_level: str | None = None

    def state_of(self, entry_id: str) -> State | None:
        """The state of one entry on the path (``None``: not on it)."""
        for e in self.entries:
            if e.entry_id == entry_id:
                return e.state
        return None

    def counts(self) -> dict[str, int]:
        """How many entries are in each state."""
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.state] = out.get(e.state, 0) + 1
        return out

    def headline(self) -> str:
        """One line: messages, tokens, the compaction that applies, what is left out."""
        c = self.counts()
        parts = [
            # the numbers %pi context gives: one account of what is sent
            f"Next request from {self.leaf_id or '(before the first entry)'}: {plural(self.sent_messages, 'message')}, "
            f"≈{self.sent_tokens:,} tokens"
        ]
        if self.model:
            parts.append(f"model {self.model}" + (f", thinking {self.thinking_level}" if self.thinking_level else ""))
        if self.compaction_id:
            kept = f", then kept from {self.first_kept_id}" if self.first_kept_id else ""
            parts.append(f"compaction {self.compaction_id} applies (its summary{kept})")
        if c.get("replaced"):
            parts.append(f"{plural(c['replaced'], 'entry', 'entries')} replaced")
        if c.get("edited"):
            parts.append(f"{plural(c['edited'], 'message')} sent as edited")
        if c.get("dropped"):
            parts.append(f"{plural(c['dropped'], 'message')} forgotten (context edits)")
        failed = sum(1 for e in self.entries if e.state == "out" and e.note == FAILED_NOTE)
        if failed:
            parts.append(f"{plural(failed, 'failed reply', 'failed replies')} left out")
        if c.get("out", 0) - failed:
            parts.append(f"{plural(c['out'] - failed, 'entry', 'entries')} never sent (labels, settings, custom entries)")
        return " · ".join(parts)

    def node_states(self, model: GraphModel) -> dict[str, str]:
        """Drawn node key -> ``in`` (sent, edited or not), ``summary``, ``replaced``, ``out``, ``mixed`` (sent and replaced), or absent."""
        by_entry = {e.entry_id: e.state for e in self.entries}
        out: dict[str, str] = {}
        for key, node in model.nodes.items():
            states = {by_entry[eid] for eid in node.entry_ids if eid in by_entry}
            if not states:
                continue
            sent = states & {"in", "edited", "summary"}
            gone = states & {"replaced", "dropped"}
            if sent and gone:
                out[key] = "mixed"
            elif "summary" in states:
                out[key] = "summary"
            elif "in" in states or "edited" in states:
                out[key] = "in"
            elif gone:
                out[key] = "replaced"
            else:
                out[key] = "out"
        return out

    def to_html(self) -> str:
        """The lens as an HTML list (every text escaped): one row per entry on the path."""
        rows = [f'<div class="pitv-lens-head">{html.escape(self.headline())}</div>']
        hidden = 0
        replaced_run = 0
        for e in self.entries:
            if e.state == "replaced":
                replaced_run += 1
                if replaced_run > 3:
                    hidden += 1
                    continue
            else:
                if replaced_run > 3:
                    rows.append(f'<div class="pitv-lens-row pitv-lens-replaced">… {replaced_run - 3:,} more replaced entries</div>')
                replaced_run = 0
            if len(rows) > MAX_ROWS:
                hidden += 1
                continue
            tag = {
                "in": "sent",
                "edited": "sent edited",
                "summary": "summary",
                "replaced": "replaced",
                "dropped": "dropped",
                "out": "not sent",
            }[e.state]
            if e.note:
                tag = "not sent (failed)"
            what = e.role or e.type
            tokens = f" · ≈{e.tokens:,} tok" if e.tokens else ""
            rows.append(
                f'<div class="pitv-lens-row pitv-lens-{e.state}" data-entry="{html.escape(e.entry_id)}">'
                f'<span class="pitv-lens-tag">{tag}</span><span><b>{html.escape(what)}</b>{tokens} '
                f'{html.escape(e.preview)} <code class="pitv-id">{html.escape(e.entry_id)}</code></span></div>'
            )
        if replaced_run > 3:
            rows.append(f'<div class="pitv-lens-row pitv-lens-replaced">… {replaced_run - 3:,} more replaced entries</div>')
        if len(rows) > MAX_ROWS:
            rows.append(f'<div class="pitv-meta">… {hidden:,} more entries</div>')
        return "".join(rows)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self) -> str:
        return self.headline()


def context_lens(session: Session, leaf: str | None = None) -> ContextLens:
    """The :class:`ContextLens` of the branch ending at ``leaf`` (default: the current leaf)."""
    from .graph.digraph import gc_paused

    with gc_paused():
        return _context_lens(session, leaf)


def _context_lens(session: Session, leaf: str | None) -> ContextLens:
    leaf_id = session.resolve(leaf) if leaf is not None else session.leaf_id
    if leaf_id is None:
        return ContextLens(leaf_id=None)
    whole = session.raw_branch(leaf_id)
    ctx = session.context(leaf_id)
    proj = BranchProjection(whole)
    states = _provenance(whole, proj)
    entries: list[LensEntry] = []
    for i, entry in enumerate(whole):
        if digest.is_transparent(entry):
            continue
        state, messages, note = states[i]
        sent = state in ("in", "edited", "summary")
        entries.append(
            LensEntry(
                entry_id=digest.as_text(entry.get("id")),
                type=digest.as_text(entry.get("type") or "entry"),
                role=digest.role(entry) if entry.get("type") == "message" else None,
                state=state,
                tokens=sum(estimate_tokens(m) for m in messages if isinstance(m, dict)) if sent else 0,
                preview=digest.preview(digest.entry_text(entry), 90),
                note=note,
            )
        )
    head = proj.entry(0) if proj.compaction_head and len(proj) else None
    first_kept = head.get("firstKeptEntryId") if head is not None else None
    model = ctx.model
    raw = ctx.raw_messages
    return ContextLens(
        leaf_id=leaf_id,
        entries=entries,
        messages=len(raw),
        tokens=sum(e.tokens for e in entries),
        sent_messages=_request_messages(ctx),
        sent_tokens=estimate_context_tokens([m for m in raw if isinstance(m, dict)]).tokens,
        compaction_id=digest.as_text(head.get("id")) if head is not None else None,
        first_kept_id=first_kept if isinstance(first_kept, str) else None,
        model=str(model) if model is not None else None,
        thinking_level=ctx.thinking_level if isinstance(ctx.thinking_level, str) else None,
    )


def _request_messages(ctx: Any) -> int:
    """How many messages the request carries, counted as ``%pi context`` counts them (:func:`~pi_jupyter.providers.sent_messages`).

    System messages travel as the system prompt and are not counted; a failed reply is left
    out and a tool call whose result was forgotten gets a placeholder result, as in every request.
    """
    from ..providers import default_model, find_model, sent_messages

    try:
        model = (find_model(str(ctx.model)) if ctx.model else None) or default_model()
        return len(sent_messages(ctx.messages, model).messages)
    except Exception:  # noqa: BLE001 - an odd file: count what the rebuild gave
        return sum(1 for m in ctx.raw_messages if isinstance(m, dict) and m.get("role") != "system")


_SENDABLE = {"message", "custom_message", "branch_summary"}
FAILED_NOTE = "a failed or aborted reply: kept in the file, left out of every request"


def _sendable(entry: RawEntry) -> bool:
    """True for an entry the rebuild would turn into a message (a branch summary needs its text)."""
    kind = entry.get("type")
    return kind in ("message", "custom_message") or (kind == "branch_summary" and bool(entry.get("summary")))


def _failed(messages: list[Any]) -> bool:
    """True when every message an entry gives is a reply the request leaves out (``error`` / ``aborted``)."""
    return bool(messages) and all(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("stopReason") in ("error", "aborted") for m in messages
    )


def _provenance(path: list[RawEntry], proj: BranchProjection) -> list[tuple[State, list[Any], str]]:
    """Per path entry: its state, the messages it puts in the context, and a note.

    Read off the projection the rebuild itself is made of (:class:`~pi_jupyter.session.projection.BranchProjection`:
    the latest compaction, the entries it keeps, everything after it, each with its edits applied), so the
    lens cannot tell a different story from the request: an entry that is not a context entry was replaced by
    the compaction (or is an older compaction it supersedes); a context entry that gives nothing was
    forgotten (a ``null`` context edit) or is never sent (labels, settings, custom entries).
    """
    where = {p: j for j, p in enumerate(proj.positions)}
    marks = {eid: mark.state for eid, mark in branch_edit_marks(path).items()}
    head = proj.positions[0] if proj.compaction_head and len(proj) else -1
    out: list[tuple[State, list[Any], str]] = []
    for i, entry in enumerate(path):
        kind = entry.get("type")
        j = where.get(i)
        if j is None:
            replaced = head >= 0 and i < head and (kind == "compaction" or _sendable(entry))
            out.append(("replaced" if replaced else "out", [], ""))
            continue
        messages = proj.messages(j)
        entry_id = entry.get("id")
        edited = isinstance(entry_id, str) and entry_id in proj.edits
        if i == head or (kind == "branch_summary" and messages):
            out.append(("summary", messages, ""))
        elif edited and not messages:
            out.append(("dropped", [], ""))
        elif not messages:
            out.append(("out", [], ""))
        elif _failed(messages):
            out.append(("out", [], FAILED_NOTE))
        elif edited and marks.get(digest.as_text(entry_id)) == "edited":
            out.append(("edited", messages, ""))
        else:
            out.append(("in", messages, ""))
    return out
