"""The session store: entries, the JSONL file, migrations, tree queries and the context rebuild.

``Session`` (:mod:`.store`) is assembled from reading, appending and moving the leaf; it imports no layer below.
Names are imported from their modules on first use, so importing a part of the store (the errors,
the viewers) does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers; at run time names load on first use
    from .context import ModelRef, SessionContext
    from .context_edits import ContextEditError
    from .entries import (
        BranchSummaryEntry,
        CompactionEntry,
        ContextEditEntry,
        CustomEntry,
        CustomMessageEntry,
        Entry,
        LabelEntry,
        MessageEntry,
        ModelChangeEntry,
        OpaqueEntry,
        SessionHeader,
        SessionInfoEntry,
        ThinkingLevelChangeEntry,
        UsageEntry,
        entry_from_dict,
    )
    from .index import CHECKOUT_TYPE, TreeNode
    from .listing import SessionInfo
    from .paths import agent_dir, default_session_dir, encode_cwd, sessions_root
    from .rebuild import context_from_path
    from .report import (
        CycleError,
        EntryNotFoundError,
        LoadProblem,
        LoadReport,
        SessionChangedError,
        SessionError,
        SessionFileError,
        SessionLockedError,
    )
    from .store import Durability, Session

_WHERE: dict[str, str] = {
    "ModelRef": "context",
    "SessionContext": "context",
    "ContextEditError": "context_edits",
    "BranchSummaryEntry": "entries",
    "CompactionEntry": "entries",
    "ContextEditEntry": "entries",
    "CustomEntry": "entries",
    "CustomMessageEntry": "entries",
    "Entry": "entries",
    "LabelEntry": "entries",
    "MessageEntry": "entries",
    "ModelChangeEntry": "entries",
    "OpaqueEntry": "entries",
    "SessionHeader": "entries",
    "SessionInfoEntry": "entries",
    "ThinkingLevelChangeEntry": "entries",
    "UsageEntry": "entries",
    "entry_from_dict": "entries",
    "CHECKOUT_TYPE": "index",
    "TreeNode": "index",
    "SessionInfo": "listing",
    "agent_dir": "paths",
    "default_session_dir": "paths",
    "encode_cwd": "paths",
    "sessions_root": "paths",
    "context_from_path": "rebuild",
    "CycleError": "errors",
    "EntryNotFoundError": "errors",
    "LoadProblem": "report",
    "LoadReport": "report",
    "SessionChangedError": "errors",
    "SessionError": "errors",
    "SessionFileError": "errors",
    "SessionLockedError": "errors",
    "Durability": "store",
    "Session": "store",
}
"""Public name -> the module of this package that defines it."""


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "CHECKOUT_TYPE",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "CycleError",
    "Durability",
    "Entry",
    "EntryNotFoundError",
    "LabelEntry",
    "LoadProblem",
    "LoadReport",
    "MessageEntry",
    "ModelChangeEntry",
    "ModelRef",
    "OpaqueEntry",
    "Session",
    "SessionChangedError",
    "SessionContext",
    "SessionError",
    "SessionFileError",
    "SessionHeader",
    "SessionInfo",
    "SessionInfoEntry",
    "ContextEditEntry",
    "ContextEditError",
    "UsageEntry",
    "SessionLockedError",
    "ThinkingLevelChangeEntry",
    "TreeNode",
    "agent_dir",
    "context_from_path",
    "default_session_dir",
    "encode_cwd",
    "entry_from_dict",
    "sessions_root",
]
