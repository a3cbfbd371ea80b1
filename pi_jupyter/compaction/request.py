"""What compaction asks a summarizer for, and how it reads the answer.

Compaction never talks to a provider itself: it is handed a :data:`Summarize` function
(the agent wires it to the session's model) and calls it with a :class:`SummaryRequest`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel

from ..messages import AssistantMessage, TextContent, UserMessage
from .entries import as_dict
from .errors import SummaryAborted, SummaryError

SummaryKind = Literal["history", "update", "turn_prefix", "branch"]
"""``history``: first summary of a session's history; ``update``: merge new history into the
previous summary; ``turn_prefix``: the early part of a split turn; ``branch``: a branch that
is being left."""


class SummaryRequest(BaseModel):
    """One summarization call: a system prompt and one user message, as pi sends them.

    ``reasoning`` says whether pi would ask for reasoning: for compaction summaries pi
    passes the session's thinking level when the model supports reasoning and the level is
    not ``off``; for branch summaries it never does. The agent decides the level.
    """

    kind: SummaryKind
    system_prompt: str
    prompt_text: str
    max_tokens: int
    reasoning: bool = False

    def user_message(self, timestamp: int | None = None) -> UserMessage:
        """The request's only message: a user message with ``prompt_text`` as one text block."""
        msg = UserMessage(content=[TextContent(text=self.prompt_text)])
        if timestamp is not None:
            msg.timestamp = timestamp
        return msg

    def __repr__(self) -> str:
        size = len(self.prompt_text)
        return f"SummaryRequest(kind={self.kind!r}, max_tokens={self.max_tokens}, reasoning={self.reasoning}, prompt_text=<{size} chars>)"


Summarize = Callable[[SummaryRequest], Awaitable[Any]]
"""``async (request) -> AssistantMessage``: ask the model for one summary.

The result may be an :class:`~pi_jupyter.messages.AssistantMessage` or its dict form. A
failure is reported the provider way, as a message with ``stopReason`` ``"error"`` (or
``"aborted"``) and an ``errorMessage``; raising works too and propagates unchanged.
"""


def response_text(response: Any, *, what: str = "Summarization", strict: bool = True, max_tokens: int | None = None) -> str:
    """The summary text of a summarizer's reply: its text blocks joined with newlines.

    An ``error`` reply raises :class:`SummaryError` (``"<what> failed: <errorMessage>"``, as
    pi). With ``strict`` (our default; pi-design §10 item 13) an ``aborted`` reply raises
    :class:`SummaryAborted`, and a reply cut off at the token limit (``length``) or with no
    text raises :class:`SummaryError`; pi accepts all three as a summary (``strict=False``).
    """
    if isinstance(response, AssistantMessage):
        m = response.to_dict()
    else:
        m = as_dict(response, "assistant message")
    stop = m.get("stopReason")
    if stop == "error":
        raise SummaryError(f"{what} failed: {m.get('errorMessage') or 'Unknown error'}")
    content = m.get("content")
    blocks = content if isinstance(content, list) else []
    text = "\n".join(b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    if not strict:
        return text
    if stop == "aborted":
        raise SummaryAborted(f"{what} was aborted")
    if stop == "length":
        limit = f" of {max_tokens} tokens" if max_tokens else ""
        raise SummaryError(f"{what} failed: the summary was cut off at the output limit{limit} (stopReason 'length'); nothing was written")
    if not text.strip():
        raise SummaryError(f"{what} failed: the model returned no summary text; nothing was written")
    return text
