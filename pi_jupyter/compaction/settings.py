"""Compaction and branch-summary settings (pi's ``compaction`` and ``branchSummary`` settings)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .prompts import BRANCH_SUMMARY_MAX_TOKENS


class CompactionSettings(BaseModel):
    """When to compact and how much recent history to keep (pi's defaults).

    Compaction runs when the context exceeds ``context_window - reserve_tokens``; the summary
    may use up to 80% of ``reserve_tokens`` (a split turn's prefix summary 50%). The most
    recent ``keep_recent_tokens`` (estimated) stay as they are. Reads pi's camelCase keys too.
    """

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, frozen=True)

    enabled: bool = True
    reserve_tokens: int = Field(default=16384, ge=0)
    keep_recent_tokens: int = Field(default=20000, ge=0)

    def fit_to(self, context_window: int) -> CompactionSettings:
        """These settings, shrunk so that compaction can work in a small window (pi has no such step).

        pi's defaults assume a large window: with a 16k window, keeping 20000 recent tokens
        means nothing is ever summarized. Here the reserve is at most a quarter of the window
        and the kept part at most a third of what the reserve leaves; larger windows are
        unchanged.
        """
        reserve = min(self.reserve_tokens, context_window // 4)
        keep = min(self.keep_recent_tokens, max(0, context_window - reserve) // 3)
        if (reserve, keep) == (self.reserve_tokens, self.keep_recent_tokens):
            return self
        return self.model_copy(update={"reserve_tokens": reserve, "keep_recent_tokens": keep})


class BranchSummarySettings(BaseModel):
    """How much of the window a branch summary request may not use (pi's ``branchSummary``)."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, frozen=True)

    reserve_tokens: int = Field(default=16384, ge=0)

    def fit_to(self, context_window: int) -> BranchSummarySettings:
        """These settings, shrunk so that a branch summary fits a small window (pi has no such step).

        pi's branch budget is ``window - 16384``; for a window of 16k or less that is zero or
        less, which pi reads as "no limit", so the whole branch is sent and a small model
        refuses it. Here the reserve is at most a quarter of the window, but never less than
        the summary's own output (2048 tokens) plus room for the instructions; larger windows
        are unchanged.
        """
        floor = BRANCH_SUMMARY_MAX_TOKENS + 1024
        reserve = min(self.reserve_tokens, max(context_window // 4, floor))
        if reserve >= context_window:
            reserve = context_window // 2
        return self if reserve == self.reserve_tokens else self.model_copy(update={"reserve_tokens": reserve})


def settings_for(configured: Any, context_window: int | None) -> CompactionSettings:
    """The compaction settings an agent works with: ``configured`` (pi's defaults unless it is a
    :class:`CompactionSettings`) fitted to the model's window (:meth:`CompactionSettings.fit_to`)."""
    s = configured if isinstance(configured, CompactionSettings) else CompactionSettings()
    return s.fit_to(context_window) if context_window and context_window > 0 else s


DEFAULT_CONTEXT_WINDOW = 128_000
"""pi's fallback when a model states no context window (``contextWindow || 128000``)."""


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings | None = None) -> bool:
    """pi's ``shouldCompact``: enabled and ``context_tokens > context_window - reserve_tokens`` (strictly)."""
    s = settings or CompactionSettings()
    if not s.enabled:
        return False
    return context_tokens > context_window - s.reserve_tokens
