"""``%pi forget ID`` and ``%pi edit ID TEXT``: change what the model sees, keep what the file holds.

Both append a pi 1.x ``context_edit`` entry (:meth:`~pi_jupyter.agent.Agent.edit_context`)
on the current branch and reload the agent's messages, so the next cell sends the edited
context; an ``entry_appended`` event announces it. Refusals (an entry not on the branch, one without model content) are pi's reasons.
"""

from __future__ import annotations

from typing import Any

from ..agent.agent import AgentBusyError


def _ready(agent: Any, command: str) -> None:
    if agent.is_running:
        raise AgentBusyError(f"{command}: the agent is running; wait for it or %pi abort first")


def forget(agent: Any, target_id: str) -> str:
    """Drop ``target_id`` from the context of the current branch; returns the line to print."""
    _ready(agent, "%pi forget")
    edit_id = agent.edit_context(target_id, None)
    return f"forgot {target_id} (edit {edit_id}): the model no longer sees it; the session file keeps the original"


def edit(agent: Any, target_id: str, text: str) -> str:
    """Replace what the model sees of ``target_id`` with ``text``; returns the line to print."""
    _ready(agent, "%pi edit")
    edit_id = agent.edit_context(target_id, text)
    return f"edited {target_id} (edit {edit_id}): the model now sees {len(text)} characters instead; the file keeps the original"
