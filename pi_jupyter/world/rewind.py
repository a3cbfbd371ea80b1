"""Rewinding as a choice: the conversation and its world together, the conversation alone, or the world alone.

Users of every agent with checkpoints ask to rewind the conversation, the files, or both, and
from a script as well as from a screen. :func:`rewind` is the one place that does it, for the
notebook's ``%pi checkout`` and the tree's *Check out*, the RPC's ``checkout`` and Python:

* ``both`` (the default): the agent checks out ``target`` and the world follows it (the
  agent's ``checkout`` event, :meth:`~.world.World.follow`);
* ``conversation``: the leaf moves and the live variables and files stay; where they differ
  from the target's world they are recorded on the branch (:meth:`~.world.World.stay`), so
  the next cells continue in them and a later checkout of the target still gives its world;
* ``world``: the target's variables and files come into the current conversation, which does
  not move (:meth:`~.world.World.bring`), recorded on its branch the same way.

Each returns the line that says what it moved. The agent is anything with an async
``checkout(target, **options)`` and ``reload()`` (an :class:`~pi_jupyter.Agent`).
"""

from __future__ import annotations

from typing import Any

MODES = ("both", "conversation", "world")
"""What a checkout moves: the conversation and its world, the conversation alone, or the world alone."""


async def rewind(
    world: Any, agent: Any, target: str | None, mode: str = "both", *, force: bool = False, sep: str = "\n", **checkout: Any
) -> str:
    """Check out ``target`` moving what ``mode`` says (see the module notes); the line that says what moved.

    ``world``: the agent's :class:`~.world.World` (``None``: an agent without one; only
    ``both`` then, which moves the conversation). ``force``: over the user's own changes,
    kept on the branch they leave. ``sep``: between the checkout's line and the world's
    (a newline in a cell, ``"; "`` in a status line). ``checkout``: the agent's checkout options.
    """
    if mode not in MODES:
        raise ValueError(f"unknown rewind {mode!r}: both, conversation or world")
    where = target or "the point before the first entry"
    if mode != "both" and world is None:
        raise ValueError(f"rewinding the {mode} alone needs a world (the agent has none: it was made outside a notebook)")
    if mode == "world":
        report = world.bring(target, force=force)
        agent.reload()
        line = world.take_line() or "nothing differed"
        recorded = f"; recorded on the branch as entry {report.recorded_at}" if report.recorded_at and not report.refused else ""
        return f"brought the world of {target or 'the root'} into this conversation (the conversation did not move): {line}{recorded}"
    if world is not None:
        world.force_next = force and mode == "both"
        world.stay_next = mode == "conversation"
    try:
        leaf = await agent.checkout(target, **checkout)
    finally:
        if world is not None:
            world.force_next = world.stay_next = False  # never carried to a later move
    line = world.take_line() if world is not None else ""
    if mode == "conversation":
        kept = f": {line}" if line else " (the same as there)"
        return f"checked out {where} (the conversation only); leaf is now {leaf}; the variables and files stay as they were{kept}"
    verb = "checked out with a branch summary" if checkout.get("summarize") else "checked out"
    return f"{verb} {where}; leaf is now {leaf}" + (f"{sep}{line}" if line else "")
