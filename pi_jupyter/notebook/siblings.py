"""Sibling answers on a cell: a cell re-run three times shows "answer 3 of 3" and the earlier answers.

Read from the session (the cell run records of :mod:`.cells`), no model call. Each earlier
answer is folded in the cell's static output with the command that continues from it
(``%pi checkout ID``), so the choice survives in every viewer.
"""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, as_message
from ..views.static_html import Sibling, render_siblings_html, render_siblings_markdown
from .cells import cell_runs

MAX_SIBLINGS = 8
"""Earlier answers shown on a cell (the most recent ones)."""


def siblings_of(session: Any, cell_id: str, started_from: str | None, current_end: str | None) -> list[Sibling]:
    """Every run of ``cell_id`` that started where this one did, oldest first (this run included, ``current``)."""
    out: list[Sibling] = []
    for run in cell_runs(session, cell_id):
        if run.started_from != started_from or not run.produced:
            continue
        answer = None
        for eid in reversed(run.produced):
            try:
                raw = session.raw_entry(eid)
            except Exception:  # noqa: BLE001 - an entry gone from a damaged file: skip that run
                continue
            if raw.get("type") == "message" and isinstance(raw.get("message"), dict):
                try:
                    msg = as_message(raw["message"])
                except TypeError:
                    continue
                if isinstance(msg, AssistantMessage):
                    answer = msg
                    break
        out.append(Sibling(end_id=run.end, answer=answer, current=run.end == current_end))
    return out


def siblings_footer(session: Any, cell_id: str, started_from: str | None, current_end: str | None) -> tuple[str, str]:
    """``(html, markdown)`` for the cell's static output; empty when the cell ran once."""
    sibs = siblings_of(session, cell_id, started_from, current_end)
    if len(sibs) < 2:
        return "", ""
    return render_siblings_html(sibs, MAX_SIBLINGS), render_siblings_markdown(sibs)


__all__ = ["MAX_SIBLINGS", "siblings_footer", "siblings_of"]
