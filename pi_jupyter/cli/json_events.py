"""Agent events as pi 1.6 prints them in ``--mode json`` and ``--mode rpc`` (its ``toJsonEvent``).

pi 1.6 writes the same event stream in both modes:

- ``message_update`` is ``{type, usage, assistantMessageEvent}``: the usage so far and the
  provider event without its ``partial`` message (``toolcall_start`` gains the call's ``id``
  and ``toolName``), so a long answer costs O(n) output, not O(n²);
- compaction is ``compaction_start{reason}`` / ``compaction_end{reason, result, aborted,
  willRetry, errorMessage?}``, with ``reason`` one of ``manual``, ``threshold``, ``overflow``;
- ``agent_end`` carries ``willRetry``;
- ``entry_appended{entry}`` announces an entry written outside the message flow;
- ``session_info_changed{name}``, ``thinking_level_changed{level}`` and
  ``bash_execution_update{id, delta}`` come from commands (the RPC server writes them).

Our agent's own stream differs in names (``auto_compaction_*``) and has ``session_event``
lines pi does not know; :class:`PiEventStream` maps one to the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from ..agent.events import AgentEndEvent, AutoCompactionEndEvent, AutoCompactionStartEvent, MessageUpdateEvent, SessionEvent
from ..agent.redact import redact_json
from .rpc_protocol import encode_line


class PiEventStream:
    """Turns our agent events into pi 1.6's JSON events (``None``: pi has no such line).

    ``full_updates`` keeps the whole partial message in ``message_update`` (pi 0.73's shape,
    for clients written against it). One instance per output stream: it remembers the reason
    of the compaction going on, which pi repeats in ``compaction_end``.
    """

    def __init__(self, *, full_updates: bool = False) -> None:
        self.full_updates = full_updates
        self._reason = "threshold"

    def __call__(self, event: Any) -> dict[str, Any] | None:
        """pi's JSON object for ``event``, or ``None`` when pi writes nothing for it."""
        if isinstance(event, MessageUpdateEvent):
            return event.to_dict(delta_only=not self.full_updates)
        if isinstance(event, AutoCompactionStartEvent):
            self._reason = event.reason
            return compaction_start(event.reason)
        if isinstance(event, AutoCompactionEndEvent):
            return compaction_end(self._reason, event.result, aborted=event.aborted, will_retry=event.will_retry, error=event.error_message)
        if isinstance(event, AgentEndEvent):
            out = event.to_dict()
            out.setdefault("messages", [])
            out["willRetry"] = False  # our retries happen inside one run: its agent_end is the last
            return out
        if isinstance(event, SessionEvent):
            return None  # pi-jupyter's own notes (model set, checkout, compaction written); pi has no such line
        return event.to_dict()


def compaction_start(reason: str) -> dict[str, Any]:
    """pi's ``compaction_start``."""
    return {"type": "compaction_start", "reason": reason}


def compaction_end(
    reason: str, result: Any, *, aborted: bool = False, will_retry: bool = False, error: str | None = None
) -> dict[str, Any]:
    """pi's ``compaction_end`` (``result`` left out when there is none, as pi's ``undefined``)."""
    out: dict[str, Any] = {"type": "compaction_end", "reason": reason}
    if result is not None:
        out["result"] = compaction_result(result)
    out.update(aborted=aborted, willRetry=will_retry)
    if error:
        out["errorMessage"] = error
    return out


def compaction_result(result: Any) -> Any:
    """A compaction result as pi's JSON (``to_pi`` or ``to_dict`` of our result object)."""
    for name in ("to_pi", "to_dict"):
        method = getattr(result, name, None)
        if method is not None:
            return method()
    return result


def write_pi_events(agent: Any, stream: IO[str]) -> Callable[[], None]:
    """Subscribe a writer of pi 1.6's JSON events (one line each, secrets redacted) to ``stream``; returns the unsubscriber."""
    events = PiEventStream()
    key = agent.api_key()
    secrets = [key.get_secret_value()] if key is not None and key.get_secret_value() else []

    def write(event: Any) -> None:
        obj = events(event)
        if obj is None:
            return
        line = encode_line(obj)  # the RPC server's encoder: the same lines in both modes
        try:
            stream.write(redact_json(line, extra_secrets=secrets) + "\n")
            stream.flush()
        except (OSError, ValueError):
            unsubscribe()  # the reader went away: stop writing, keep running

    unsubscribe = agent.subscribe(write)
    return unsubscribe
