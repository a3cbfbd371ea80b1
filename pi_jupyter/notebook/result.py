"""The value of a ``%%pi`` cell: the run's result, with the session it belongs to."""

from __future__ import annotations

from typing import Any

from ..agent.agent import RunResult


class CellResult(RunResult):
    """A finished ``%%pi`` run: ``text``, ``entry_ids``, ``usage``, ``cost``, ``session``, ``forked``.

    Shown as one summary line (the conversation itself is in the widget and the transcript).
    """

    session: Any = None
    cell_id: str | None = None
    forked: bool = False
    prompt: str = ""

    @classmethod
    def from_run(cls, run: RunResult, **extra: Any) -> CellResult:
        """Wrap a :class:`RunResult`."""
        return cls(**{k: getattr(run, k) for k in RunResult.model_fields}, **extra)

    def summary(self) -> str:
        """One line: stop reason, entries, tokens, cost, time."""
        state = self.stop_reason if self.ok else f"{self.stop_reason}: {self.error_message or ''}".strip()
        fork = ", forked" if self.forked else ""
        tokens = self.usage.input + self.usage.output + self.usage.cache_read + self.usage.cache_write
        return (
            f"pi: {state} · {len(self.entry_ids)} new entries{fork} · {tokens:,} tokens · "
            f"${self.cost:.4f} · {self.duration_s:.1f}s · {self.model}"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": self.summary()}

    def __str__(self) -> str:
        return self.text
