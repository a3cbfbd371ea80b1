"""Text a user types is redacted before it is sent or stored: prompts, edits, instructions, labels, names, variants.

:func:`scrub` applies :func:`~pi_jupyter.agent.redact.redact_typed` to a string, or to every
string inside content blocks (``[{"type": "text", "text": ...}]``) and other lists and dicts.
``None`` stays ``None`` (a forget, no instructions).
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from .redact import redact_typed

T = TypeVar("T")


@overload
def scrub(value: str) -> str: ...
@overload
def scrub(value: T) -> T: ...
def scrub(value: Any) -> Any:
    """``value`` with every secret in its strings replaced by ``[REDACTED:<what>]``."""
    if isinstance(value, str):
        return redact_typed(value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


__all__ = ["scrub"]
