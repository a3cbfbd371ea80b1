"""``AgentSettings``: every default of an :class:`~pi_jupyter.agent.Agent` in one place."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class RetrySettings(BaseModel):
    """Automatic retry of transient provider errors, with exponential backoff."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60_000


class AgentSettings(BaseModel):
    """Behaviour of an :class:`Agent` (one place for every default)."""

    retry: RetrySettings = Field(default_factory=RetrySettings)
    compaction: Any = None
    """:class:`~pi_jupyter.compaction.CompactionSettings` (default: pi's, enabled)."""
    max_turns: int = Field(default=100, ge=0)
    """The most model calls one run makes (0: no limit). A model still calling tools after that many
    turns is stopped with a reply whose stop reason is ``error`` and whose message says so."""
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    steering_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"
    follow_up_mode: Literal["one-at-a-time", "all"] = "one-at-a-time"
    default_thinking_level: str = "medium"
    block_images: bool = False
    record_system_prompt: bool | None = True
    """Record the system prompt and tools in the transcript as pi 1.x does (see :mod:`.transcript_system`):
    a leading system message on each branch, then a delta when the prompt or tools change between runs, so
    pi 1.6 resumes the session with the same prompt, tools and context. ``False`` opts out (the prompt is sent,
    not saved; on a branch pi 1.x wrote, its recorded prompt is sent). ``None``: only on a branch that already records them."""
