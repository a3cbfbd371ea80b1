"""The notebook context: what the agent is told of the cells the user ran (DESIGN decision 16).

Before a ``%%pi`` prompt, the cells run in the kernel since the agent's last turn are recorded
as one ``custom_message`` entry of type :data:`NOTEBOOK_CONTEXT_TYPE`: pi sends it to the model
as a user message, so a session file rebuilds the same context here and in pi. Its text
starts with one line (:data:`NOTEBOOK_CONTEXT_HEAD` ``3 cells, 1 error``); views show that
line folded (:func:`folded_line`), and replays recognize the message by it
(:func:`is_notebook_context_text`), since the request a model is sent no longer names the
custom type.

The bottom layer: names only, no other pi_jupyter import.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FOLDED_CUSTOM_TYPES",
    "NOTEBOOK_CONTEXT_HEAD",
    "NOTEBOOK_CONTEXT_TYPE",
    "folded_body",
    "folded_line",
    "is_notebook_context_text",
]

NOTEBOOK_CONTEXT_TYPE = "pi_jupyter.notebook_context"
"""The ``customType`` of the notebook context entry."""

NOTEBOOK_CONTEXT_HEAD = "notebook since your last turn:"
"""How the text of a notebook context begins (its first line is the folded line)."""

FOLDED_CUSTOM_TYPES = frozenset({NOTEBOOK_CONTEXT_TYPE})
"""Custom message types shown folded behind their first line (the full text is a click away)."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
            if kind == "text":
                text = block.get("text") if isinstance(block, dict) else getattr(block, "text", None)
                return text if isinstance(text, str) else ""
    return ""


def folded_line(custom_type: Any, content: Any) -> str | None:
    """The one line a custom message of a folded type is shown as (its first text line); ``None`` for other types."""
    if custom_type not in FOLDED_CUSTOM_TYPES:
        return None
    first = _text(content).split("\n", 1)[0].strip()
    return first or str(custom_type)


def folded_body(text: str) -> str:
    """What a folded custom message shows when opened: its text after the folded line."""
    return text.split("\n", 1)[1].lstrip("\n") if "\n" in text else ""


def is_notebook_context_text(text: str) -> bool:
    """True for the text of a notebook context (as a model's request holds it: a user message)."""
    return text.startswith(NOTEBOOK_CONTEXT_HEAD)
