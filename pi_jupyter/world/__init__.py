"""A branch carries its world (DESIGN decision 13): the variables and files the agent's tools change.

Each tool call records what it changed (a :class:`~.record.Delta` in its result's
``details.world``, pi ignores it) and keeps the data in a content-addressed store beside the
session file (:mod:`.store`). :class:`World` keeps a notebook's live namespace and project
files in step with the session tree: a checkout brings the target's world back, a branch of a
grid runs in a namespace of its own, and what cannot be restored is named in one line.
"""

from __future__ import annotations

from .record import DETAILS_KEY, Delta, delta_of, summarize
from .recorder import Recorder
from .restore import Report
from .state import UNKNOWN, plan, world_at
from .store import FOLDER_NAME, Missing, Store, StoreError
from .tracker import Tracker
from .values import DEFAULT_LIMIT, Unsaved, describe
from .world import World

__all__ = [
    "DEFAULT_LIMIT",
    "DETAILS_KEY",
    "FOLDER_NAME",
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
    "summarize",
    "world_at",
]
