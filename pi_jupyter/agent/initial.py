"""What a new :class:`~pi_jupyter.agent.agent.Agent` starts with: its model and thinking level.

An explicit choice wins and is recorded; otherwise the session's recorded choice is kept when
it can still be used (a vendor model needs its key), and a new session records the default.
A read-only session is never written to.
"""

from __future__ import annotations

from typing import Any

from ..messages import THINKING_LEVELS
from ..providers.base import Model
from ..session import Session
from .thinking import clamp_thinking


def initial_model(session: Session, model: str | Model | None, recorded: Any, base_url: str | None) -> Model:
    """The model an agent on ``session`` starts with (``model`` given, else the recorded one, else the default)."""
    from .. import providers

    chosen: Model | None = None
    if isinstance(model, Model):
        chosen = model
    elif model:
        chosen = providers.resolve_model(model, base_url=base_url)
    elif recorded is not None and recorded.provider and recorded.model_id:
        candidate = providers.find_model(f"{recorded.provider}/{recorded.model_id}")
        if candidate is not None and (candidate.provider in ("offline", "replay") or providers.api_key_for(candidate, None)):
            chosen = candidate
    if chosen is None:
        chosen = providers.default_model()
    current = session.context()
    if current.model is None or (current.model.provider, current.model.model_id) != (chosen.provider, chosen.id):
        # a session with no model yet records the one it starts with (a notebook's session may already
        # hold pi-jupyter's own records); one whose recorded model cannot be used keeps its record
        if (current.model is None or model is not None) and not session.readonly:
            session.append_model_change(chosen.provider, chosen.id)
    return chosen


def initial_thinking(session: Session, thinking: str | None, recorded: str | None, default: str, model: Model) -> str:
    """The thinking level an agent on ``session`` starts with, clamped to what ``model`` supports."""
    if thinking and thinking not in THINKING_LEVELS:
        raise ValueError(f"unknown thinking level {thinking!r}; choose one of {', '.join(THINKING_LEVELS)}")
    has_entry = any(e.get("type") == "thinking_level_change" for e in session.raw_branch())
    wanted = thinking or (recorded if has_entry and recorded else None) or default
    level = clamp_thinking(wanted, model)
    if (thinking is not None or not has_entry) and (not has_entry or level != recorded) and not session.readonly:
        session.append_thinking_level_change(level)
    return level
