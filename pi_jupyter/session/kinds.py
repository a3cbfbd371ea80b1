"""What an entry is, in the index's terms: kind codes, the ``custom`` types that do not move the leaf, tree nodes, times.

Plain data and small functions, shared by the index (:mod:`.index`), the context rebuild and the views.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..messages.text import ms_from_iso

RawEntry = dict[str, Any]

CHECKOUT_TYPE = "pi_jupyter.checkout"
"""``customType`` of the marker entry that persists a checkout (see ``Session.checkout``)."""

CELL_TYPE = "pi_jupyter.cell"
"""``customType`` of the record of one notebook cell's run (see ``pi_jupyter.notebook.cells``)."""

NOTEBOOK_TYPE = "pi_jupyter.notebook"
"""``customType`` of the record that a notebook continues this session (see ``pi_jupyter.notebook.binding``)."""

EXPERIMENT_TYPES = ("pi_jupyter.score", "pi_jupyter.branch_end", "pi_jupyter.experiment")
"""``custom`` records of experiments (``pi_jupyter.experiment``): scores, branch outcomes, the grid."""

TRANSPARENT_TYPES = frozenset({CHECKOUT_TYPE, CELL_TYPE, NOTEBOOK_TYPE, *EXPERIMENT_TYPES})
"""``custom`` entries that do not move the leaf: dead-end children that stand for their parent."""

PASSED_ON = ("user", "assistant", "toolResult")
"""Message roles the context and ``convert_to_llm`` pass on exactly as written (a tuple: a role read from a file may be a list)."""

# kind codes, one byte per line; the first five are the ones a context rebuild looks at
K_OTHER = 0
K_MESSAGE = 1
K_ASSISTANT = 2  # unused: whether a message is an assistant's is looked up when needed
K_CUSTOM_MESSAGE = 3
K_BRANCH_SUMMARY = 4
K_COMPACTION = 5
K_THINKING = 6
K_MODEL = 7
K_LABEL = 8
K_SESSION_INFO = 9
K_CUSTOM = 10
K_CONTEXT_EDIT = 11
K_USAGE = 12

KINDS = {
    "message": K_MESSAGE,
    "custom_message": K_CUSTOM_MESSAGE,
    "branch_summary": K_BRANCH_SUMMARY,
    "compaction": K_COMPACTION,
    "thinking_level_change": K_THINKING,
    "model_change": K_MODEL,
    "label": K_LABEL,
    "session_info": K_SESSION_INFO,
    "custom": K_CUSTOM,
    "context_edit": K_CONTEXT_EDIT,
    "usage": K_USAGE,
}


class TreeNode(msgspec.Struct):
    """One entry in :meth:`Session.tree`, with its children in pi's order (oldest first)."""

    entry: RawEntry
    children: list[TreeNode] = msgspec.field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None

    @property
    def id(self) -> str:
        """The entry id."""
        return self.entry["id"]

    @property
    def type(self) -> str:
        """The entry type (``message``, ``compaction``, ...)."""
        return self.entry.get("type", "")

    def typed(self) -> Any:
        """The entry as a pydantic model."""
        from .entries import entry_from_dict

        return entry_from_dict(self.entry)


def is_assistant(entry: RawEntry) -> bool:
    message = entry.get("message")
    return type(message) is dict and message.get("role") == "assistant"


_JS_MAX_MS = 8_640_000_000_000_000  # beyond this a JavaScript Date is invalid
_YEAR_MONTH = re.compile(r"^([+-]\d{6}|\d{4})(?:-(\d{2}))?$")


def js_date_ms(value: Any) -> int | None:
    """``new Date(value).getTime()`` as pi computes an entry's time; ``None`` where JavaScript gives ``NaN``.

    Entry timestamps are ISO strings, but a file written by another tool may hold a number
    (milliseconds, as ``docs/compaction.md`` wrongly shows) or ``null``, which JavaScript reads
    as 0. Strings are read as ISO dates, including the year and year-month forms (UTC).
    """
    if isinstance(value, str):
        ms = ms_from_iso(value)
        if ms is None:
            ms = _year_month_ms(value)
        return ms if ms is not None and abs(ms) <= _JS_MAX_MS else None
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        if value != value or abs(value) > _JS_MAX_MS:
            return None
        return int(value)  # TimeClip truncates toward zero
    return None


def _year_month_ms(text: str) -> int | None:
    """The year (``2024``, ``+012024``) and year-month (``2024-05``) forms JavaScript reads as UTC."""
    match = _YEAR_MONTH.match(text.strip())
    if match is None:
        return None
    month = int(match.group(2) or 1)
    if not 1 <= month <= 12:
        return None
    return ms_from_iso(f"{int(match.group(1)):04d}-{month:02d}-01T00:00:00Z")  # None beyond datetime's years


def time_key(node: TreeNode) -> int:
    """pi's sort key of sibling nodes: the entry's time in milliseconds (0 when JavaScript has none)."""
    ms = js_date_ms(node.entry.get("timestamp"))
    return ms if ms is not None else 0
