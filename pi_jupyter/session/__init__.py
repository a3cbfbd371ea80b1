"""The session store: entries, the JSONL file, migrations, tree queries and the context rebuild.

``Session`` (:mod:`.store`) is assembled from reading, appending and moving the leaf; it imports no layer below.
"""

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
