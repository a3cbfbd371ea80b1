"""The conversation as Markdown or text: it lives in :mod:`pi_jupyter.views.transcript` (shared with export)."""

from __future__ import annotations

from ..views.transcript import (
    DEFAULT_MAX_OUTPUT,
    clip_end,
    clip_middle,
    escape_markdown_html,
    format_call,
    transcript_markdown,
    transcript_text,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "clip_end",
    "clip_middle",
    "escape_markdown_html",
    "format_call",
    "transcript_markdown",
    "transcript_text",
]
