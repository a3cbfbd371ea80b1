"""TreeView's "Compact up to here", and how a failed action is told.

Compaction is offered on a node only where it has something to do: the branch ending at the
node is prepared the way the agent's own compaction prepares it (no model call), and a node
where nothing would be summarized gets a disabled button with the reason. When a compaction
starts and then fails (the model's summary fails, an extension cancels it), the leaf goes
back where it was: a failed action leaves the tree as the user saw it.

Failures are one line in the user's words: the error's own message, never a Python class name.
"""

from __future__ import annotations

import logging
from typing import Any

from ...agent.result import AgentBusyError
from ...compaction import CompactionError, NothingToCompact, prepare_compaction, settings_for
from ...session import SessionError

_log = logging.getLogger(__name__)

NO_MODEL = "needs a model: show the tree of an Agent (TreeView(agent)) rather than of a bare Session"

_WHY_NOT = {
    "too_small": "nothing to compact up to here yet: the branch is short enough to be kept whole",
    "already_compacted": "this node ends with a compaction already",
    "needs_migration": "the file is in pi's old version 1 format: open it with Session.open to migrate it first",
}

EXPECTED = (ValueError, KeyError, SessionError, CompactionError, AgentBusyError)
"""Refusals a user can act on: shown as their message alone."""


def compaction_refusal(agent: Any, entry_id: str) -> str:
    """Why compacting the branch ending at ``entry_id`` would do nothing ("" when it would work).

    Prepared as the agent prepares it (its settings, fitted to its model's window), without a model call.
    """
    session = agent.session
    try:
        prepare_compaction(
            session.raw_branch(entry_id),
            settings_for(agent.settings.compaction, agent.model.context_window),
            cwd=getattr(session, "cwd", None) or None,
        )
    except NothingToCompact as exc:
        return _WHY_NOT.get(exc.reason, str(exc))
    except (SessionError, CompactionError) as exc:
        return user_message(exc)
    return ""


def user_message(exc: BaseException) -> str:
    """One line for a failed action: the error's message (no class name); an unexpected error is logged too."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)  # str(KeyError) adds quotes
    if not isinstance(exc, EXPECTED):
        _log.warning("TreeView action failed", exc_info=exc)
        return f"the action failed: {text}" if text else "the action failed (the kernel's log has the details)"
    return text or "the action could not be done"


class CompactAction:
    """TreeView's compaction (a mixin: the view supplies the agent, the target and the runner)."""

    def compact(self, ref: str | None = None, *, instructions: str | None = None) -> Any:
        """Compact the branch ending at a node (default: the selected one): check it out, then summarize older history.

        Refused at once, nothing written, where a compaction has nothing to do. If the
        compaction fails after the checkout, the leaf is moved back where it was.
        """
        agent = self.agent  # type: ignore[attr-defined]
        if agent is None:
            raise ValueError(f"compaction {NO_MODEL}")
        target = self._target_id(ref)  # type: ignore[attr-defined]
        why = compaction_refusal(agent, target)
        if why:
            raise ValueError(why[0].upper() + why[1:])
        before = agent.session.leaf_id

        async def run() -> Any:
            moved = before != target
            if moved:
                await agent.checkout(target)
            try:
                return await agent.compact(instructions or None)
            except BaseException:
                if moved:
                    await agent.checkout(before)  # a failed action leaves the tree as it was
                raise

        def report(result: Any) -> str:
            tokens = getattr(result, "tokens_before", None)
            return f"compacted the branch ending at {target}" + (f" ({tokens:,} tokens before)" if isinstance(tokens, int) else "")

        return self._run(run(), report)  # type: ignore[attr-defined]
