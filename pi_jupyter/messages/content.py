"""Content blocks: the pieces a message is made of (pi's ``ai/types.ts``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag

from .base import WireModel
from .text import display_text


class TextContent(WireModel):
    """Plain text. ``text_signature`` is an opaque vendor token replayed on later turns."""

    type: Literal["text"] = "text"
    text: str = ""
    text_signature: str | None = None


class ThinkingContent(WireModel):
    """The model's reasoning. Signed thinking must be replayed unchanged to the same model."""

    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(WireModel):
    """A base64-encoded image."""

    type: Literal["image"] = "image"
    data: str = ""
    mime_type: str = "image/png"


class ToolCall(WireModel):
    """A request by the model to run a tool with ``arguments``."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None


class OpaqueContent(WireModel):
    """A content block of a type this version does not know; kept as it was read."""

    type: str


def _block_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if isinstance(kind, str) and kind in ("text", "thinking", "image", "toolCall") else "opaque"


ContentBlock = Annotated[
    Union[
        Annotated[TextContent, Tag("text")],
        Annotated[ThinkingContent, Tag("thinking")],
        Annotated[ImageContent, Tag("image")],
        Annotated[ToolCall, Tag("toolCall")],
        Annotated[OpaqueContent, Tag("opaque")],
    ],
    Discriminator(_block_kind),
]
"""Any content block; unknown block types are kept as :class:`OpaqueContent`."""

UserContent = Annotated[
    Union[
        Annotated[TextContent, Tag("text")],
        Annotated[ImageContent, Tag("image")],
        Annotated[ThinkingContent, Tag("thinking")],
        Annotated[ToolCall, Tag("toolCall")],
        Annotated[OpaqueContent, Tag("opaque")],
    ],
    Discriminator(_block_kind),
]
"""Blocks of user, tool-result and custom messages (text and images in practice)."""


def text_of(content: Any, sep: str = "") -> str:
    """The text blocks of ``content`` joined with ``sep`` (a string is returned as is).

    Content read from an odd file is shown, never raised on: a text that is not a string is
    written as text (``5`` as ``"5"``, ``null`` as nothing, see
    :func:`~pi_jupyter.messages.text.display_text`), items that are not blocks are skipped,
    and content that is neither a string nor a list is written as text.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        return display_text(content)
    parts = []
    for block in content:
        if isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(display_text(block.get("text")))
        elif getattr(block, "type", None) == "text":
            parts.append(display_text(getattr(block, "text", None)))
    return sep.join(parts)
