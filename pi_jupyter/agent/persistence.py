"""Persistence, the agent's first subscriber: each finished message becomes an entry of the session file."""

from __future__ import annotations

from collections.abc import Callable

from ..session import Session
from .events import Event, MessageEndEvent


def persistence(session: Session, on_entry: Callable[[str], None]) -> Callable[[Event], None]:
    """The subscriber that appends each finished message to ``session`` (``on_entry(id)`` after each)."""

    def persist(event: Event) -> None:
        if not isinstance(event, MessageEndEvent) or session.readonly:
            return
        message = event.message
        role = getattr(message, "role", None)
        if role in ("user", "assistant", "toolResult", "system"):
            entry_id = session.append_message(message)
        elif role == "custom":
            entry_id = session.append_custom_message(message.custom_type, message.content, display=message.display, details=message.details)
        else:
            return
        event.entry_id = entry_id
        on_entry(entry_id)

    return persist
