"""The pydantic base class shared by every wire type (messages, content, entries).

pi writes camelCase JSON and drops keys whose value is ``undefined``; Python code reads
better in snake_case. ``WireModel`` gives snake_case attributes with camelCase aliases, keeps
unknown keys (so a round trip loses nothing), and leaves out declared fields that are
``None`` when dumping (so an unset optional field never becomes ``null`` on disk).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

WIRE: dict[str, bool] = {"wire": True}
"""Validation context for data read from a file or the wire (see :meth:`WireModel.from_wire`)."""


class WireModel(BaseModel):
    """Base of every type that is written to a session file or sent on the wire."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )

    # Declared fields whose ``None`` is meaningful and must be written as ``null``.
    _keep_none: ClassVar[frozenset[str]] = frozenset()
    # True when the object was read from a file or the wire (validated with ``WIRE``): then
    # a field absent from the input is also absent from the output, so a round trip is exact.
    _wire: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _mark_wire(self, info: ValidationInfo) -> Any:
        if info.context is WIRE:
            self._wire = True
        return self

    @model_serializer(mode="wrap")
    def _omit_none_fields(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            fields = type(self).model_fields
            present = self.model_fields_set if self._wire else None
            for name, field in fields.items():
                key = field.alias or name
                if present is not None and name not in present:
                    data.pop(key, None)
                elif name not in self._keep_none and getattr(self, name, None) is None:
                    data.pop(key, None)
        return data

    @classmethod
    def from_wire(cls, data: Any) -> Any:
        """Validate ``data`` read from a file or the wire; dumping it gives back the same keys."""
        return cls.model_validate(data, context=WIRE)

    def to_dict(self) -> dict[str, Any]:
        """The object exactly as pi writes it: camelCase keys, unset fields left out."""
        return self.model_dump(mode="json")

    def __repr_args__(self):  # pragma: no cover - cosmetic
        for k, v in super().__repr_args__():
            if v is not None:
                yield k, v
