"""The final arguments of a streamed tool call, parsed strictly.

While a call streams, its arguments are parsed best-effort (a half-received object is shown
as far as it goes). When the call ends, that repair must stop: a server that cuts the JSON
in half (a dropped connection, a proxy, llmock's ``malformed_arguments`` fault) would
otherwise have ``echo first; echo second-part-that-should-n`` run, or a cut
``rm -rf /tmp/x/y`` become ``rm -rf /tmp/x``. So the complete text must be one JSON object;
if it is not, the call keeps no arguments, the raw text is kept beside them (in the session
too, under :data:`INVALID_KEY`), and the agent answers the call with an error instead of
running the tool.
"""

from __future__ import annotations

import json
from typing import Any

INVALID_KEY = "invalidArguments"
"""The tool-call field holding the raw argument text when it was not a JSON object (pi ignores it)."""


def strict_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, None)`` when ``text`` is exactly one JSON object, else ``(None, what is wrong)``."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        where = f", character {exc.pos} of {len(text)}" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"not valid JSON ({reason}{where})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def invalid_arguments_error(call: Any) -> str | None:
    """The error result for a tool call whose streamed arguments were not a JSON object (``None``: they were)."""
    extra = getattr(call, "__pydantic_extra__", None) or {}
    raw = extra.get(INVALID_KEY)
    if not isinstance(raw, str):
        return None
    problem = strict_arguments(raw)[1] or "not a JSON object"
    tail = raw[-80:]
    return (
        f"The arguments of this {call.name} call arrived incomplete or damaged: they are {problem}, "
        f"ending with {tail!r}. The tool did not run. Send the call again with complete arguments."
    )
