"""Search a whole session, folded turns included: which drawn nodes hold a match.

The TreeView's browser search looks in what each drawn node shows. A fold stands for many
turns and shows a few words of them; this looks in every entry's text (prompts, answers,
tool output, summaries, error messages, model names, labels, cell ids) and maps each hit to
the node that draws it, so a match inside a fold lights up the fold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import digest
from .digest import RawEntry

if TYPE_CHECKING:
    from ..session import Session
    from .graph.digraph import GraphModel

MAX_TEXT = 200_000
"""Characters of one entry looked at (a huge tool output is searched in its first part)."""


def entry_search_text(entry: RawEntry, labels: dict[str, str]) -> str:
    """Everything searchable about one entry, lower-cased."""
    parts = [digest.entry_text(entry)[:MAX_TEXT]]
    msg = digest.message(entry)
    if msg is not None:
        if msg.get("errorMessage"):
            error = digest.as_text(msg.get("errorMessage"))
            parts.append(error)
            parts.append(digest.error_summary(error))
        if msg.get("role") == "assistant":
            parts.append(digest.model_ref(msg.get("provider"), msg.get("model")))
            for call in digest.tool_calls(msg):
                parts.append(digest.as_text(call.get("name")))
        if msg.get("role") == "toolResult":
            parts.append(digest.as_text(msg.get("toolName")))
    label = labels.get(digest.as_text(entry.get("id")))
    if label:
        parts.append(digest.as_text(label))
    parts.append(digest.as_text(entry.get("id")))
    return " ".join(parts).lower()


def search_session(session: Session, model: GraphModel, query: str, *, limit: int = 5000) -> list[str]:
    """Keys of the drawn nodes holding an entry that matches every word of ``query``, in drawing order."""
    words = query.lower().split()
    if not words:
        return []
    labels = session.labels
    hit: set[str] = set()
    for entry in session.raw_entries():
        if entry.get("type") == "label":
            continue  # a label is found on the entry it labels (its current text, above), not where it was written
        key = model.by_entry.get(digest.as_text(entry.get("id")))
        if key is None or key in hit:
            continue
        text = entry_search_text(entry, labels)
        if all(w in text for w in words):
            hit.add(key)
            if len(hit) >= limit:
                break
    return [k for k in model.nodes if k in hit]
