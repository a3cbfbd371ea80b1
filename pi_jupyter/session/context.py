"""The rebuilt context of a branch: what the agent's message list is made from."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..messages import Message, OpaqueMessage, convert_to_llm, message_from_dict
from .jsonl import paused_gc, settle_gc

_SETTLE_MESSAGES = 2000
"""Contexts of at least this many messages are built with the collector paused (see :func:`~.jsonl.settle_gc`)."""


class ModelRef(BaseModel):
    """A ``(provider, model id)`` pair as recorded on the branch."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    provider: str | None = None
    model_id: str | None = Field(default=None, alias="modelId")

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_id}"

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> ModelRef:
        """The pair as built from the file; a value that is not a string (the file is odd) becomes ``None``."""
        try:
            return cls.model_validate(raw)
        except ValidationError:
            return cls(**{key: value for key, value in raw.items() if isinstance(value, str)})


class SessionContext(BaseModel):
    """Messages, thinking level and model of one branch, as pi's ``buildSessionContext`` gives them.

    ``raw_messages`` are pi's JSON objects exactly (cheap to build for any branch length);
    ``messages`` are the same as pydantic models, validated on first access; :meth:`llm`
    is what a model would be sent (after ``convert_to_llm``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, ignored_types=(cached_property,))

    raw_messages: list[dict[str, Any]] = Field(default_factory=list)
    thinking_level: str | None = "off"
    model: ModelRef | None = None
    leaf_id: str | None = None
    _raw_model: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def from_raw(cls, raw: dict[str, Any], leaf_id: str | None) -> SessionContext:
        """Wrap the dict :func:`~pi_jupyter.session.rebuild.build_context` returns (no validation)."""
        model = raw.get("model")
        ctx = cls.model_construct(
            raw_messages=raw["messages"],
            thinking_level=raw.get("thinkingLevel"),
            model=ModelRef.from_raw(model) if model is not None else None,
            leaf_id=leaf_id,
        )
        ctx._raw_model = model
        return ctx

    @cached_property
    def messages(self) -> list[Any]:
        """The messages as pydantic models (see :mod:`pi_jupyter.messages`).

        An item that is not a message at all (a ``message`` entry holding ``null``, a number,
        or an object without a string ``role``) becomes an empty :class:`OpaqueMessage`, which
        is never sent to a model (pi's ``convertToLlm`` drops such items too).
        """
        raw = self.raw_messages
        if len(raw) < _SETTLE_MESSAGES:
            return [message_from_dict(m) if type(m) is dict and type(m.get("role")) is str else OpaqueMessage() for m in raw]
        # a long branch makes hundreds of thousands of objects: with the collector running, its
        # repeated walks of them (and of everything else the kernel holds) cost more than building them
        with paused_gc():
            out = [message_from_dict(m) if type(m) is dict and type(m.get("role")) is str else OpaqueMessage() for m in raw]
            settle_gc()
        return out

    def llm(self) -> list[Message]:
        """The messages after ``convert_to_llm``: what a model request carries."""
        return convert_to_llm(self.messages)

    def to_pi_json(self) -> dict[str, Any]:
        """``{"messages", "thinkingLevel", "model"}`` exactly as pi's ``buildSessionContext`` returns it."""
        out: dict[str, Any] = {"messages": self.raw_messages}
        if self.thinking_level is not None:
            out["thinkingLevel"] = self.thinking_level
        if self._raw_model is not None:
            out["model"] = self._raw_model  # as pi builds it, values of any type included
        else:
            out["model"] = self.model.model_dump(exclude_none=True) if self.model is not None else None
        return out

    def __len__(self) -> int:
        return len(self.raw_messages)
