"""What a replay serves for a request: the recorded replies of a session file and how one is chosen.

Every assistant entry of the recorded tree, on every branch, is a candidate; its
*conversation* is the rebuilt context of its parent entry (user texts and tool results, in
order; assistant messages are what replay serves, so they are not compared). A candidate
also carries what its variant was: the thinking level in force, the model that answered, and
the values of the experiment variant it sits under (a ``pi_jupyter.variant`` entry, whose
``tools`` value says which tools the branch had).

:func:`choose` takes the candidates answering the request's conversation (tool results are
compared by text first; if nothing matches, by tool name only, since tool output such as
dates or temp paths may differ between runs), then prefers the ones whose variant agrees with
the request's (thinking level, model unless the request's model is a replay model, tools),
then a complete reply over a failed one, then **the latest**. When no candidate agrees with the
request's variant, the nearest is served with a note saying what the recording lacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..messages import ToolResultMessage, UserMessage, message_from_dict, text_of
from ..messages.notebook_context import is_notebook_context_text
from ..messages.text import ms_from_iso

Key = tuple[tuple[Any, ...], ...]

VARIANT_TYPE = "pi_jupyter.variant"
"""The ``customType`` an experiment branch starts with (see :mod:`pi_jupyter.experiment.records`)."""

_NO_TOOLS = frozenset({"", "none", "-"})


def conversation_key(messages: list[Any], *, with_tool_text: bool = True) -> Key:
    """What replay compares: user texts and tool results, in order (assistant messages left out).

    The notebook context of a turn (the cells run since the last one) is left out: a class
    replaying a lecture runs its own cells, and its turns are told of those, not of the teacher's.
    """
    key: list[tuple[Any, ...]] = []
    for m in messages:
        if isinstance(m, dict):
            m = message_from_dict(m)
        if isinstance(m, UserMessage):
            text = text_of(m.content).strip()
            if not is_notebook_context_text(text):
                key.append(("user", text))
        elif isinstance(m, ToolResultMessage):
            key.append(("toolResult", m.tool_name, m.text.strip() if with_tool_text else None))
    return tuple(key)


@dataclass(frozen=True)
class Variant:
    """What a request asks for, or what a recorded reply was made with (``None``: not known)."""

    thinking: str | None = None
    model: str | None = None
    tools: frozenset[str] | None = None

    def differences(self, other: Variant) -> list[tuple[str, str, str]]:
        """``(setting, ours, theirs)`` for each setting both know and disagree on."""
        out = []
        for name in ("thinking", "model", "tools"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and theirs is not None and mine != theirs:
                out.append((name, _shown(mine), _shown(theirs)))
        return out


def _shown(value: Any) -> str:
    if isinstance(value, frozenset):
        return "+".join(sorted(value)) or "none"
    return str(value)


@dataclass
class Recorded:
    """One recorded assistant reply: the conversation it answered, its variant, its message and its times."""

    entry_id: str
    order: int
    key: Key
    loose: Key
    message: dict[str, Any]
    variant: Variant = field(default_factory=Variant)
    started_ms: int | None = None
    """When the reply was asked for (the message's own ``timestamp``, which pi sets as the stream starts)."""
    ended_ms: int | None = None
    """When it was written (the entry's ``timestamp``)."""

    @property
    def complete(self) -> bool:
        """False for a reply that failed or was aborted."""
        return self.message.get("stopReason") not in ("error", "aborted")

    @property
    def duration_ms(self) -> int | None:
        """How long the reply took as recorded (``None`` when the file has no usable times for it)."""
        if self.started_ms is None or self.ended_ms is None or self.ended_ms < self.started_ms:
            return None
        return self.ended_ms - self.started_ms

    def same_reply(self, other: Recorded) -> bool:
        """True when both hold the same content (a replayed copy of a recorded reply, for example)."""
        return self.message.get("content") == other.message.get("content") and self.key == other.key


@dataclass
class Summary:
    """A recorded compaction or branch summary, with the user texts of the branch it summarized."""

    entry_id: str
    order: int
    summary: str
    user_texts: list[str]


@dataclass
class Choice:
    """The reply chosen for a request, what the recording lacks (``note``), and how many other replies it has there."""

    record: Recorded
    timing: Recorded
    """The earliest recording of the same reply: its times are the original performance's."""
    note: str | None = None
    alternatives: int = 0
    """Other, different replies recorded for this request (a branch point of the recording)."""


def load_recording(path: str) -> tuple[list[Recorded], list[Summary]]:
    """The candidate replies and summaries of the session file at ``path`` (opened read-only)."""
    from ..session import Session

    session = Session.open(path, readonly=True)
    try:
        records: list[Recorded] = []
        summaries: list[Summary] = []
        variants: dict[str, dict[str, Any]] = {}  # entry id -> values of the variant entry above it
        for order, entry in enumerate(session.raw_entries()):
            kind = entry.get("type")
            eid = entry.get("id")
            parent = entry.get("parentId")
            values = variants.get(parent) if isinstance(parent, str) else None
            if kind == "custom" and entry.get("customType") == VARIANT_TYPE and isinstance(entry.get("data"), dict):
                found = entry["data"].get("values")
                values = found if isinstance(found, dict) else {}
            if isinstance(eid, str) and values is not None:
                variants[eid] = values
            message = entry.get("message") if kind == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant" and isinstance(eid, str):
                ctx = session.context(parent)
                llm = ctx.llm()
                records.append(
                    Recorded(
                        entry_id=eid,
                        order=order,
                        key=conversation_key(llm),
                        loose=conversation_key(llm, with_tool_text=False),
                        message=message,
                        variant=_recorded_variant(message, ctx.thinking_level, values),
                        started_ms=_ms(message.get("timestamp")),
                        ended_ms=ms_from_iso(entry.get("timestamp")),
                    )
                )
            elif kind in ("compaction", "branch_summary") and entry.get("summary") and isinstance(eid, str):
                llm = session.context(parent).llm()
                users = [text_of(m.content).strip() for m in llm if isinstance(m, UserMessage)]
                summaries.append(Summary(eid, order, str(entry["summary"]), [u for u in users if u]))
    finally:
        session.close()
    return records, summaries


def _ms(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value)


def _recorded_variant(message: dict[str, Any], thinking: str | None, values: dict[str, Any] | None) -> Variant:
    provider, model = message.get("provider"), message.get("model")
    ref = f"{provider}/{model}" if isinstance(provider, str) and isinstance(model, str) and provider and model else None
    tools = values.get("tools") if values else None
    return Variant(
        thinking=thinking or "off",
        model=None if provider == "replay" else ref,
        tools=tool_set(tools) if isinstance(tools, str) else None,
    )


def tool_set(value: str) -> frozenset[str]:
    """A variant's ``tools`` value (``read+python``, ``none``) as a set of names."""
    if value.strip().lower() in _NO_TOOLS:
        return frozenset()
    return frozenset(t for t in value.replace("+", " ").split() if t)


class Recording:
    """The recorded replies indexed by the conversation they answered (exact, and with tool outputs left out)."""

    def __init__(self, records: list[Recorded]) -> None:
        self.records = records
        self.exact: dict[Key, list[Recorded]] = {}
        self.loose: dict[Key, list[Recorded]] = {}
        for r in records:
            self.exact.setdefault(r.key, []).append(r)
            self.loose.setdefault(r.loose, []).append(r)

    def matches(self, request_messages: list[Any]) -> list[Recorded]:
        """The replies to this conversation: by tool output text first, else by tool name only."""
        found = self.exact.get(conversation_key(request_messages))
        if not found:
            found = self.loose.get(conversation_key(request_messages, with_tool_text=False))
        return list(found or ())


def choose(recording: Recording, request_messages: list[Any], wanted: Variant, name: str) -> Choice | None:
    """The reply to serve for a request (``None`` when no recorded conversation matches; see the module doc)."""
    matches = recording.matches(request_messages)
    if not matches:
        return None
    best = max(matches, key=lambda r: (-len(wanted.differences(r.variant)), r.complete, r.order))
    timing = min((r for r in matches if r.same_reply(best)), key=lambda r: r.order)
    distinct: list[Recorded] = []
    for r in matches:
        if r.complete and not any(r.same_reply(d) for d in distinct):
            distinct.append(r)
    note = None
    missing = wanted.differences(best.variant)
    if missing:
        asked = ", ".join(f"{_SETTING[s]} {ours!r}" for s, ours, _ in missing)
        got = ", ".join(f"{_SETTING[s]} {theirs!r}" for s, _, theirs in missing)
        note = f"replay: {name} has no reply to this request at {asked}; serving the one recorded at {got}"
    return Choice(record=best, timing=timing, note=note, alternatives=max(0, len(distinct) - 1))


_SETTING = {"thinking": "thinking level", "model": "model", "tools": "tools"}


def describe(item: tuple[Any, ...] | None) -> str:
    """One item of a conversation key, for a divergence message."""
    if item is None:
        return "nothing more"
    text = item[-1] if item[-1] is not None else ""
    text = " ".join(str(text).split())
    if len(text) > 80:
        text = text[:80] + "…"
    if item[0] == "user":
        return f"user message {text!r}"
    return f"tool result of {item[1]!r}: {text!r}"


def divergence(path: str, key: Key, records: list[Recorded]) -> str:
    """Where a request's conversation left every recorded path, naming both sides."""
    name = os.path.basename(path)
    if not records:
        return f"replay: the recording {name} has no assistant messages to replay"
    best_n, best = -1, records[0]
    for r in records:
        n = 0
        for a, b in zip(key, r.key, strict=False):
            if a != b:
                break
            n += 1
        if n > best_n or (n == best_n and len(r.key) > len(best.key)):
            best_n, best = n, r
    ours = key[best_n] if best_n < len(key) else None
    theirs = best.key[best_n] if best_n < len(best.key) else None
    if theirs is None:
        return (
            f"replay: the conversation diverged from the recording {name} after message {best_n}: "
            f"the request goes on with {describe(ours)}, but the recording has no reply for it"
        )
    return (
        f"replay: the conversation diverged from the recording {name} at message {best_n + 1}: "
        f"the request has {describe(ours)} where the recording has {describe(theirs)}"
    )


__all__ = [
    "Choice",
    "Key",
    "Recorded",
    "Recording",
    "Summary",
    "Variant",
    "choose",
    "conversation_key",
    "divergence",
    "load_recording",
    "tool_set",
]
