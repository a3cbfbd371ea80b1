"""The session file's header and its eleven entry types, as pydantic models (pi-design §1.3-1.4).

The store keeps entries as the dicts read from the file (fast, and byte-faithful about
unknown keys); these models are the typed view handed to users. An entry of a type this
version does not know becomes :class:`OpaqueEntry`: a tree node that adds nothing to the
context, as in pi.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union

from pydantic import Field, ValidationError

from ..messages import WireModel, message_from_dict
from ..messages.base import WIRE
from ..messages.types import AgentMessage
from .version import CURRENT_VERSION


class SessionHeader(WireModel):
    """The first line of every session file."""

    type: Literal["session"] = "session"
    version: int | None = CURRENT_VERSION
    id: str
    timestamp: str = ""
    cwd: str = ""
    parent_session: str | None = None


class EntryBase(WireModel):
    """Fields every entry has: its id, its parent's id (``None`` for a root) and an ISO time."""

    _keep_none: ClassVar[frozenset[str]] = frozenset({"parent_id"})

    type: str
    id: str
    parent_id: str | None = None
    timestamp: str = ""


class MessageEntry(EntryBase):
    """A message of any role (user, assistant, toolResult, bashExecution, ...)."""

    type: Literal["message"] = "message"
    message: AgentMessage


class ThinkingLevelChangeEntry(EntryBase):
    """The thinking level changed from here on."""

    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str = "off"


class ModelChangeEntry(EntryBase):
    """The model changed from here on."""

    type: Literal["model_change"] = "model_change"
    provider: str = ""
    model_id: str = ""


class CompactionEntry(EntryBase):
    """History before ``first_kept_entry_id`` is represented by ``summary`` from here on."""

    type: Literal["compaction"] = "compaction"
    summary: str = ""
    first_kept_entry_id: str = ""
    tokens_before: int = 0
    details: Any = None
    from_hook: bool | None = None
    usage: Any = None
    """What the summary request cost (pi 1.x), a :class:`~pi_jupyter.messages.Usage`-shaped object."""
    system_message: dict[str, Any] | None = None
    """pi 1.x: the system prompt and tools replayed at compaction time; it leads the context after it."""


class BranchSummaryEntry(EntryBase):
    """A summary of a branch that was left, attached where the conversation went on."""

    type: Literal["branch_summary"] = "branch_summary"
    from_id: str = ""
    summary: str = ""
    details: Any = None
    from_hook: bool | None = None


class CustomEntry(EntryBase):
    """Private state of an extension (or of pi-jupyter itself); never seen by the model."""

    type: Literal["custom"] = "custom"
    custom_type: str = ""
    data: Any = None


class CustomMessageEntry(EntryBase):
    """A message from an extension that the model sees, as a user message."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str = ""
    content: Any = ""
    display: bool | None = None
    details: Any = None


class LabelEntry(EntryBase):
    """Sets (or, with no label, clears) the label of ``target_id``."""

    type: Literal["label"] = "label"
    target_id: str = ""
    label: str | None = None


class SessionInfoEntry(EntryBase):
    """Names the session."""

    type: Literal["session_info"] = "session_info"
    name: str | None = None


class ContextEditEntry(EntryBase):
    """pi 1.x: replaces (or, with ``replacement=None``, removes) what ``target_id`` shows the model.

    The original entry stays in the file; the latest edit of a target on the branch wins.
    """

    _keep_none: ClassVar[frozenset[str]] = frozenset({"parent_id", "replacement"})

    type: Literal["context_edit"] = "context_edit"
    target_id: str = ""
    replacement: dict[str, Any] | None = None


class UsageEntry(EntryBase):
    """pi 1.x: spending outside the conversation (summaries, cache warming); never in the context."""

    type: Literal["usage"] = "usage"
    kind: str = ""
    provider: str = ""
    model: str = ""
    usage: Any = None
    note: str | None = None


class OpaqueEntry(EntryBase):
    """An entry of an unknown type, or one whose fields do not validate; kept as read."""

    problem: str | None = Field(default=None, exclude=True)


Entry = Union[
    MessageEntry,
    ThinkingLevelChangeEntry,
    ModelChangeEntry,
    CompactionEntry,
    BranchSummaryEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    SessionInfoEntry,
    ContextEditEntry,
    UsageEntry,
    OpaqueEntry,
]
"""Any session entry."""

ENTRY_TYPES: dict[str, type[EntryBase]] = {
    "message": MessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
    "context_edit": ContextEditEntry,
    "usage": UsageEntry,
}


def entry_from_dict(data: dict[str, Any]) -> Entry:
    """The typed view of one entry dict; never raises (falls back to :class:`OpaqueEntry`)."""
    cls = ENTRY_TYPES.get(data.get("type"))  # type: ignore[arg-type]
    if cls is not None:
        try:
            entry = cls.model_validate(data, context=WIRE)
            if isinstance(entry, MessageEntry):
                # keep a message that does not validate as an opaque message rather than failing
                entry.message = message_from_dict(data.get("message") or {})
            return entry  # type: ignore[return-value]
        except ValidationError as exc:
            problem = f"{exc.error_count()} invalid field(s): {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
            return _opaque(data, problem)
        except (TypeError, ValueError) as exc:  # a value no model accepts (a list as a message's role)
            return _opaque(data, f"invalid: {exc}")
    return _opaque(data, None)


def _opaque(data: dict[str, Any], problem: str | None) -> OpaqueEntry:
    payload = dict(data)
    payload.setdefault("id", "")
    payload.setdefault("type", "")
    try:
        entry = OpaqueEntry.model_validate(payload, context=WIRE)
    except ValidationError:
        entry = OpaqueEntry.model_construct(**payload)
    entry.problem = problem
    return entry
