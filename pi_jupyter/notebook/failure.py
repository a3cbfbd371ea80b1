"""A ``%%pi`` cell whose run ended in an error ends in an error itself, with what to do about it.

The answer's error is already in the cell's output; the cell then raises :class:`CellFailed`, a
short error without a traceback, so "Run All" stops there instead of sending every later cell
into the same failure. When the context did not fit the model's window, it says why in the
notebook's own terms: the entry that makes it too long (and ``%pi forget ID`` to leave it out of
what the model sees), or a branch too long to compact (and how to start afresh).
"""

from __future__ import annotations

from typing import Any

from ..agent.agent import Agent
from ..compaction.oversize import ContextTooLarge, millions
from ..messages.overflow import is_context_overflow
from .typos import session_label


class CellFailed(Exception):
    """The run of a ``%%pi`` cell ended in an error; IPython shows these lines instead of a traceback."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[1;31mCellFailed\x1b[0m: {self.lines[0]}", *self.lines[1:]]


def cell_failure(agent: Agent, result: Any, advice: str | None) -> CellFailed | None:
    """The error a finished cell ends in, or ``None`` when the run did not end in an error.

    ``advice`` is what the agent said when its automatic compaction could not help (if it did).
    """
    if getattr(result, "stop_reason", None) != "error":
        return None
    label = session_label(agent.session)
    lines = [f"the model's answer failed ({label}): {result.error_message or 'unknown error'}"]
    too_large: ContextTooLarge | None = agent.context_too_large
    last = result.messages[-1] if result.messages else None
    if too_large is not None and too_large.reason == "entry":
        size = too_large.size
        lines.append(
            f"Entry {size.entry_id} ({size.entry_kind}, about {millions(size.entry_tokens)} tokens) makes the context too long "
            f"for {too_large.model_ref} (window {too_large.window:,} tokens), and compaction keeps it."
        )
        lines.append(f"%pi forget {size.entry_id}   leaves it out of what the model sees (the file keeps it); then run the cell again.")
    elif too_large is not None:
        size = too_large.size
        never = "" if size.compacted else ", never compacted"
        lines.append(
            f"This branch is about {millions(size.tokens)} tokens in {size.entries:,} entries{never}; {too_large.model_ref}'s window is "
            f"{too_large.window:,} tokens, and compacting it means summarizing nearly all of that in one request, which cannot fit either."
        )
        lines.append("%pi new NAME   starts a new session (bring what matters in its first prompt);")
        lines.append("%pi fork ID    copies the branch up to an earlier entry into a new session; %pi tree shows the entries.")
    elif advice:
        lines.append(advice)
    elif last is not None and is_context_overflow(last, agent.model.context_window):
        window = f"{agent.model.ref}'s window ({agent.model.context_window:,} tokens)"
        lines.append(f"The context did not fit {window}: %pi compact, or %pi context to see what is sent.")
    lines.append("The cell ends in this error so that Run All stops here; the kernel is ready.")
    return CellFailed(lines)


class CompactionAdvice:
    """A subscriber keeping what the agent said when an automatic compaction failed (the last such message)."""

    def __init__(self) -> None:
        self.text: str | None = None

    def __call__(self, event: Any) -> None:
        if getattr(event, "type", None) == "auto_compaction_end" and getattr(event, "error_message", None):
            self.text = event.error_message


__all__ = ["CellFailed", "CompactionAdvice", "cell_failure"]
