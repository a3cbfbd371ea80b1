"""A branch carries its world (DESIGN decision 13): the variables and files the agent's tools change.

Each tool call records what it changed (a :class:`~.record.Delta` in its result's
``details.world``, pi ignores it) and keeps the data in a content-addressed store beside the
session file (:mod:`.store`). :class:`World` keeps a notebook's live namespace and project
files in step with the session tree: a checkout brings the target's world back, a branch of a
grid runs in a namespace of its own, and what cannot be restored is named in one line.

From Python::

    world = World(session, ns, cwd=".")          # the namespace the python tool runs in, the project folder
    agent = Agent(session, tools=["python", "write"], tool_extra={"namespace": ns, "world": world})
    world.attach(agent)                          # checkouts move the world; a run's end settles it
    await rewind(world, agent, entry_id)                   # the conversation and its world
    await rewind(world, agent, entry_id, "conversation")   # the conversation; the live world stays
    await rewind(world, agent, entry_id, "world")          # the world; the conversation stays
    world.move(entry_id, force=True).line()      # the world alone, over the user's own changes
"""

from __future__ import annotations

from .record import DETAILS_KEY, Delta, delta_of, summarize
from .recorder import Recorder
from .restore import Report
from .rewind import MODES, rewind
from .state import UNKNOWN, plan, world_at
from .store import FOLDER_NAME, Missing, Store, StoreError
from .tracker import Tracker
from .values import DEFAULT_LIMIT, Unsaved, describe
from .world import World

__all__ = [
    "DEFAULT_LIMIT",
    "DETAILS_KEY",
    "FOLDER_NAME",
    "MODES",
    "UNKNOWN",
    "Delta",
    "Missing",
    "Recorder",
    "Report",
    "Store",
    "StoreError",
    "Tracker",
    "Unsaved",
    "World",
    "delta_of",
    "describe",
    "plan",
    "rewind",
    "summarize",
    "world_at",
]
