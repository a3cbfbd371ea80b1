"""One branch of a grid in a world of its own: the entry point the experiment runner calls per branch.

Given the tool options of the grid's agent (a notebook gives its :class:`~.world.World` and
namespace), :func:`for_branch` returns the options for one branch's agent: a namespace of its
own that starts as the world at the branch's start, and a recorder for it. Siblings never see
each other's variables, and the notebook's own namespace is left as it was. On a Dask worker
or from the shell there is no notebook: the branch's namespace is then the recorded world at
its start, read from the store beside the session file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .world import World


def for_branch(session: Any, start: str | None, tool_extra: Mapping[str, Any] | None, cwd: str | None) -> dict[str, Any]:
    """The ``tool_extra`` of one branch's agent: its own namespace (``"namespace"``) and recorder (``"world"``)."""
    extra = dict(tool_extra or {})
    given: Any = extra.get("world")
    if given is not None and callable(getattr(given, "branch", None)):
        recorder = given.branch()
    else:
        shared = getattr(session, "shared", session)  # a BranchSession's file
        world = World(shared, {"__name__": "__main__"}, cwd=cwd)
        world.move(start)  # a fresh namespace: the recorded world at the start
        recorder = world.branch()
    extra["world"] = recorder
    extra["namespace"] = recorder.namespace
    return extra
