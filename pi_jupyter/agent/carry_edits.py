"""Before a request is built from a branch, the branch takes the file's latest context edits (see ``session.edit_follow``).

So an entry forgotten anywhere is sent nowhere: not by a prompt, an automatic or manual
compaction, a branch summary, nor a branch of a grid (each runs through here on its own view).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def carry_edits(session: Any, announce: Callable[[str], None]) -> bool:
    """Carry the file's latest context edits onto ``session``'s current branch; True when any was appended.

    ``announce`` gets the id of each appended ``context_edit`` entry (pi 1.6's ``entry_appended``).
    A read-only session, or a view without the method, is left as it is.
    """
    carry = getattr(session, "carry_context_edits", None)
    if carry is None or getattr(session, "readonly", False):
        return False
    carried = carry()
    for entry_id in carried:
        announce(entry_id)
    return bool(carried)


__all__ = ["carry_edits"]
