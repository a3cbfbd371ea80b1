"""What one ``prompt`` produced (:class:`RunResult`), and the usage sum it reports."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..messages import Usage


class RunResult(BaseModel):
    """What one ``prompt`` produced: the final answer, the new entries, usage and cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str = ""
    stop_reason: str = "stop"
    error_message: str | None = None
    messages: list[Any] = Field(default_factory=list)
    entry_ids: list[str] = Field(default_factory=list)
    started_from: str | None = None
    leaf_id: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    duration_s: float = 0.0

    @property
    def cost(self) -> float:
        """Total cost in US dollars."""
        return self.usage.cost.total

    @property
    def ok(self) -> bool:
        """True when the run ended normally (not an error, not aborted)."""
        return self.stop_reason not in ("error", "aborted")


class AgentBusyError(RuntimeError):
    """A second prompt while a run is going on (use ``steer`` / ``follow_up``, or wait)."""


def usage_total(messages: Iterable[Any]) -> Usage:
    """Sum the usage of the assistant messages in ``messages``."""
    total = Usage()
    for m in messages:
        if getattr(m, "role", None) == "assistant":
            for f in ("input", "output", "cache_read", "cache_write", "total_tokens"):
                setattr(total, f, getattr(total, f) + getattr(m.usage, f))
            for f in ("input", "output", "cache_read", "cache_write", "total"):
                setattr(total.cost, f, getattr(total.cost, f) + getattr(m.usage.cost, f))
    return total
