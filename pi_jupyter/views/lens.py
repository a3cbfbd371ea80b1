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
* ``dropped``: a message the rebuild left out for another reason (a ``context_edit`` dropped it);
* ``out``: on the path but never sent (``custom`` entries, labels, model and thinking
  changes, session names).

Messages are matched to entries by identity (the rebuild hands back the entry's own message
object), so the lens shows what the rebuild did, not a second guess of it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..compaction.tokens import estimate_context_tokens, estimate_tokens
from . import digest
from .digest import RawEntry, plural
from .edit_marks import branch_edit_marks

if TYPE_CHECKING:
    from ..session import Session
    from .graph import GraphModel

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
            parts.append(f"{plural(c['dropped'], 'message')} dropped by context edits")
        if c.get("out"):
            parts.append(f"{plural(c['out'], 'entry', 'entries')} never sent (labels, settings, custom entries)")
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
            if e.state in ("replaced",):
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
    from .graph import gc_paused

    with gc_paused():
        return _context_lens(session, leaf)


def _context_lens(session: Session, leaf: str | None) -> ContextLens:
    leaf_id = session.resolve(leaf) if leaf is not None else session.leaf_id
    if leaf_id is None:
        return ContextLens(leaf_id=None)
    path = [e for e in session.raw_branch(leaf_id) if not digest.is_transparent(e)]
    ctx = session.context(leaf_id)
    raw = ctx.raw_messages
    states = _provenance(path, raw)
    entries: list[LensEntry] = []
    by_entry_msg: dict[int, int] = {}
    for i, entry in enumerate(path):
        state, msg_index = states[i]
        if msg_index is not None:
            by_entry_msg[i] = msg_index
        tokens = estimate_tokens(raw[msg_index]) if msg_index is not None and isinstance(raw[msg_index], dict) else 0
        entries.append(
            LensEntry(
                entry_id=digest.as_text(entry.get("id")),
                type=digest.as_text(entry.get("type") or "entry"),
                role=digest.role(entry) if entry.get("type") == "message" else None,
                state=state,
                tokens=tokens,
                preview=digest.preview(digest.entry_text(entry), 90),
            )
        )
    compaction = next((path[i] for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None)
    applies = compaction is not None and bool(raw) and isinstance(raw[0], dict) and raw[0].get("role") == "compactionSummary"
    first_kept = compaction.get("firstKeptEntryId") if applies and compaction is not None else None
    model = ctx.model
    return ContextLens(
        leaf_id=leaf_id,
        entries=entries,
        messages=len(raw),
        tokens=sum(e.tokens for e in entries),
        sent_messages=_request_messages(ctx),
        sent_tokens=estimate_context_tokens([m for m in raw if isinstance(m, dict)]).tokens,
        compaction_id=digest.as_text(compaction.get("id")) if applies and compaction is not None else None,
        first_kept_id=first_kept if isinstance(first_kept, str) else None,
        model=str(model) if model is not None else None,
        thinking_level=ctx.thinking_level if isinstance(ctx.thinking_level, str) else None,
    )


def _request_messages(ctx: Any) -> int:
    """How many messages the request carries, counted as ``%pi context`` counts them.

    The rebuilt messages go through the vendor conversion every request goes through
    (:func:`~pi_jupyter.providers.transform_messages`: a tool call whose result was forgotten
    gets a placeholder result, failed replies are left out); system messages travel as the
    system prompt and are not counted.
    """
    from ..messages import convert_to_llm
    from ..providers import default_model, find_model, transform_messages

    try:
        model = (find_model(str(ctx.model)) if ctx.model else None) or default_model()
        llm = transform_messages(convert_to_llm(ctx.messages), model)
    except Exception:  # noqa: BLE001 - an odd file: count what the rebuild gave
        llm = [m for m in ctx.raw_messages if isinstance(m, dict)]
    return sum(1 for m in llm if (m.get("role") if isinstance(m, dict) else getattr(m, "role", None)) != "system")


_SENDABLE = {"message", "custom_message", "branch_summary"}


def _matches(entry: RawEntry, msg: Any) -> bool:
    """True when rebuilt message ``msg`` came from ``entry`` (the rebuild reuses the entry's own objects)."""
    if not isinstance(msg, dict):
        return entry.get("type") == "message" and entry.get("message") is msg
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message") is msg
    if kind == "custom_message":
        return (
            msg.get("role") == "custom" and msg.get("content") is entry.get("content") and msg.get("customType") == entry.get("customType")
        )
    if kind == "branch_summary":
        return msg.get("role") == "branchSummary" and msg.get("summary") is entry.get("summary")
    return False


def _sendable(entry: RawEntry) -> bool:
    """True for an entry the rebuild would turn into a message (a branch summary needs its text)."""
    kind = entry.get("type")
    return kind in ("message", "custom_message") or (kind == "branch_summary" and bool(entry.get("summary")))


def _same_role(entry: RawEntry, msg: Any) -> bool:
    if not isinstance(msg, dict):
        return False
    if entry.get("type") == "custom_message":
        return msg.get("role") == "custom"
    own = entry.get("message")
    return isinstance(own, dict) and own.get("role") == msg.get("role")


def _provenance(path: list[RawEntry], raw: list[Any]) -> list[tuple[State, int | None]]:
    """Per path entry: its state and the index of the rebuilt message it became (if any)."""
    out: list[tuple[State, int | None]] = [("out", None)] * len(path)
    edits = {eid: mark.state for eid, mark in branch_edit_marks(path).items()}
    ptr = 0
    applying = -1
    if raw and isinstance(raw[0], dict) and raw[0].get("role") == "compactionSummary":
        summary = raw[0].get("summary")
        for i in range(len(path) - 1, -1, -1):
            if path[i].get("type") == "compaction" and path[i].get("summary") is summary:
                applying = i
                break
        else:  # a summary whose entry cannot be told by identity: the latest compaction
            applying = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=-1)
        if applying >= 0:
            out[applying] = ("summary", 0)
        ptr = 1
    kept_from = -1
    if applying >= 0:
        first_kept = path[applying].get("firstKeptEntryId")
        kept_from = next((i for i in range(applying) if path[i].get("id") == first_kept), applying)
    for i, entry in enumerate(path):
        if i == applying:
            continue
        kind = entry.get("type")
        if kind in _SENDABLE and ptr < len(raw) and _matches(entry, raw[ptr]):
            out[i] = ("summary" if kind == "branch_summary" else "in", ptr)
            ptr += 1
        elif edits.get(digest.as_text(entry.get("id"))) in ("edited", "restored") and ptr < len(raw) and _same_role(entry, raw[ptr]):
            # the rebuild sends a rewritten copy, not the entry's own message (a restore rewrites it as it was)
            out[i] = ("edited" if edits[digest.as_text(entry.get("id"))] == "edited" else "in", ptr)
            ptr += 1
        elif applying >= 0 and i < kept_from and _sendable(entry):
            out[i] = ("replaced", None)
        elif kind == "compaction" and applying >= 0 and i < applying:
            out[i] = ("replaced", None)  # an older compaction the latest one supersedes
        elif _sendable(entry):
            out[i] = ("dropped", None)
        else:
            out[i] = ("out", None)
    return out
