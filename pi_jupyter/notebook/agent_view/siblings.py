"""Sibling answers on a cell: a cell re-run three times shows "answer 3 of 3" and the earlier answers.

Read from the session (the cell run records of :mod:`.cells`), no model call. Each earlier run
is rebuilt whole from its entries, as its cell showed it: the prompt, the answers with their
thinking, every tool card with its result and what it changed in the world, and the status line
(model, how it ended, tokens, cost, seconds). It is folded in the cell's static output with the
command that continues from it (``%pi checkout ID``), and ‹ › swaps it in whole for this run's
turn, so the choice survives in every viewer and never mixes two runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...messages import AssistantMessage, as_message
from ...messages.system import system_message_note
from ...views.static_html import Notice, RunStatus, Sibling, render_siblings_html, render_siblings_markdown
from ..cells import CellRun, cell_runs

MAX_SIBLINGS = 8
"""Earlier answers shown on a cell (the most recent ones)."""


def siblings_of(session: Any, cell_id: str, started_from: str | None, current_end: str | None) -> list[Sibling]:
    """Every run of ``cell_id`` that started where this one did, oldest first (this run included, ``current``)."""
    out: list[Sibling] = []
    for run in cell_runs(session, cell_id):
        if run.started_from != started_from or not run.produced:
            continue
        current = run.end == current_end
        items, raws = ([], []) if current else turn_of(session, run)
        answer = next((m for m in reversed(items) if isinstance(m, AssistantMessage)), None)
        if current:
            answer = _last_answer(session, run)
        status = _status(items, raws) if items else None
        out.append(Sibling(end_id=run.end, answer=answer, current=current, items=items, status=status))
    return out


def turn_of(session: Any, run: CellRun) -> tuple[list[Any], list[dict[str, Any]]]:
    """A run's turn as its cell showed it: messages and notices in order (and the raw entries they came from).

    The recorded system prompt reads as the cell's notice does; a compaction as its notice. An
    entry gone from a damaged file is left out.
    """
    items: list[Any] = [Notice(text=run.filled)] if run.filled else []  # what its prompt had filled in, as the cell said
    raws: list[dict[str, Any]] = []
    for eid in run.produced:
        try:
            raw = session.raw_entry(eid)
        except Exception:  # noqa: BLE001 - an entry gone from a damaged file: the rest of the turn still reads
            continue
        kind = raw.get("type")
        if kind == "message" and isinstance(raw.get("message"), dict):
            data = raw["message"]
            if data.get("role") == "system":
                items.append(Notice(text=system_message_note(data)))
            else:
                try:
                    items.append(as_message(data))
                except TypeError:
                    continue
            raws.append(raw)
        elif kind == "custom_message":
            try:
                fields = {k: raw[k] for k in ("customType", "content", "display", "details", "timestamp") if k in raw}
                items.append(as_message({**fields, "role": "custom"}))
            except TypeError:
                continue
            raws.append(raw)
        elif kind == "compaction":
            before = raw.get("tokensBefore")
            items.append(Notice(text="Context compacted" + (f" ({before:,} tokens before)." if isinstance(before, int) else ".")))
            raws.append(raw)
    return items, raws


def _last_answer(session: Any, run: CellRun) -> AssistantMessage | None:
    for eid in reversed(run.produced):
        try:
            raw = session.raw_entry(eid)
        except Exception:  # noqa: BLE001 - an entry gone from a damaged file: skip it
            continue
        if raw.get("type") == "message" and isinstance(raw.get("message"), dict) and raw["message"].get("role") == "assistant":
            try:
                msg = as_message(raw["message"])
            except TypeError:
                continue
            if isinstance(msg, AssistantMessage):
                return msg
    return None


def _status(items: list[Any], raws: list[dict[str, Any]]) -> RunStatus:
    """The status line a run ended with, rebuilt from its entries: model, outcome, tokens, cost, seconds."""
    answers = [m for m in items if isinstance(m, AssistantMessage)]
    last = answers[-1] if answers else None
    model = ""
    if last is not None and last.model:
        model = f"{last.provider}/{last.model}" if last.provider else last.model
    reason = last.stop_reason if last is not None else None
    state = "aborted" if reason == "aborted" else "error" if reason == "error" else "done"
    times = [t for t in (_time(r.get("timestamp")) for r in raws) if t is not None]
    return RunStatus(
        model=model,
        state=state,
        input_tokens=sum(m.usage.input for m in answers),
        output_tokens=sum(m.usage.output for m in answers),
        cost=sum(m.usage.cost.total for m in answers),
        seconds=round(max(times) - min(times), 1) if len(times) > 1 else None,
    )


def _time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def siblings_footer(session: Any, cell_id: str, started_from: str | None, current_end: str | None) -> tuple[str, str]:
    """``(html, markdown)`` for the cell's static output; empty when the cell ran once."""
    sibs = siblings_of(session, cell_id, started_from, current_end)
    if len(sibs) < 2:
        return "", ""
    return render_siblings_html(sibs, MAX_SIBLINGS), render_siblings_markdown(sibs)


__all__ = ["MAX_SIBLINGS", "siblings_footer", "siblings_of", "turn_of"]
