"""What a tool call changed in the world, as one line under its card (``changed: set df2 (DataFrame 1,000×4); wrote notes.txt``)."""

from __future__ import annotations

from typing import Any

from ..world import Delta


def changed_line(details: Any) -> str:
    """The line for a tool result's ``details`` (empty when it records no change)."""
    if not isinstance(details, dict):
        return ""
    delta = Delta.from_data(details.get("world"))
    return delta.summary() if delta else ""
