"""``%pi sessions``: the sessions of the session folder, each told apart by its short id."""

from __future__ import annotations

from typing import Any

from ..session import Session
from .binding import session_label


def sessions_listing(state: Any) -> str:
    """One line per session of ``state``'s folder, most recent first: ``*`` marks the one this notebook continues."""
    infos = Session.list(state.session_dir)
    if not infos:
        return f"no sessions in {state.session_dir}"
    rows = []
    for info in infos:
        mark = "*" if info.path == state.current else " "
        first = info.first_message.replace("\n", " ")
        if len(first) > 50:
            first = first[:49] + "…"
        when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        rows.append((mark, session_label(info.name, info.id), f"{info.message_count} msgs", when, first))
    width = max(len(r[1]) for r in rows)
    return "\n".join(f"{m} {label:<{width}}  {count:>9}  {when}  {first}" for m, label, count, when, first in rows)


__all__ = ["sessions_listing"]
