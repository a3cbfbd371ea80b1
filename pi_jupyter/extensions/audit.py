"""An audit trail of tool calls, kept in the session but never shown to the model (an example extension).

At the end of every turn that ran tools it appends one ``custom`` entry of type ``audit``
with each call's tool name, arguments, outcome and duration. ``custom`` entries are never part
of the context, so the audit data reaches no model request. On reopening a session the
extension counts the calls recorded so far (:attr:`AuditExtension.total_calls`).
"""

from __future__ import annotations

import time
from typing import Any

CUSTOM_TYPE = "audit"


class AuditExtension:
    """Records tool calls per turn as ``custom`` entries (see the module docstring)."""

    name = "audit"

    def __init__(self) -> None:
        self.total_calls = 0
        self._started: dict[str, float] = {}
        self._calls: list[dict[str, Any]] = []

    def setup(self, ctx: Any) -> None:
        """Rebuild the count from the entries written earlier (the whole file, every branch)."""
        self.total_calls = sum(len(d.get("calls", [])) for d in ctx.entries(CUSTOM_TYPE, branch=False) if isinstance(d, dict))

    def on_event(self, event: Any, ctx: Any) -> None:
        kind = event.type
        if kind == "tool_execution_start":
            self._started[event.tool_call_id] = time.monotonic()
            self._calls.append({"toolCallId": event.tool_call_id, "tool": event.tool_name, "args": event.args})
        elif kind == "tool_execution_end":
            started = self._started.pop(event.tool_call_id, None)
            for call in self._calls:
                if call["toolCallId"] == event.tool_call_id:
                    call["isError"] = event.is_error
                    call["durationMs"] = round((time.monotonic() - started) * 1000, 1) if started else None
        elif kind == "turn_end" and self._calls:
            calls, self._calls = self._calls, []
            ctx.append_entry(CUSTOM_TYPE, {"calls": calls, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            self.total_calls += len(calls)


def make_extension() -> AuditExtension:
    """The extension object (what ``%pi ext load pi_jupyter.extensions.audit`` registers)."""
    return AuditExtension()
