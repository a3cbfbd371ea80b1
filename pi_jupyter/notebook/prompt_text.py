"""``{var}`` in a ``%%pi`` prompt, filled from the user namespace."""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any


class PromptFormatError(ValueError):
    """A ``{...}`` in the prompt names something the namespace does not have."""


_LITERAL_HINT = "write {{ and }} for literal braces"
_CONVERSIONS: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}


def _evaluate(expr: str, namespace: Mapping[str, Any], shown: str) -> Any:
    # like IPython's {expr} in !commands: the field is a Python expression in the namespace
    try:
        return eval(expr, {"__builtins__": __builtins__}, dict(namespace))  # noqa: S307 - the user's own notebook
    except NameError as exc:
        raise PromptFormatError(f"{shown} in the prompt: {exc}; {_LITERAL_HINT}") from None
    except SyntaxError:
        raise PromptFormatError(f"{shown} in the prompt is not a Python expression; {_LITERAL_HINT}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the user's expression, reported with it
        raise PromptFormatError(f"{shown} in the prompt failed: {type(exc).__name__}: {exc}") from None


def fill_prompt(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{expr}`` (``{name}``, ``{df.shape}``, ``{len(xs)}``, ``{x:.2f}``, ``{x!r}``) with its value in ``namespace``.

    As IPython's ``{expr}`` in ``!`` commands, a field is any Python expression evaluated in
    ``namespace``, with an optional ``!r``/``!s``/``!a`` conversion and ``:spec`` format as in
    ``str.format``. ``{{`` and ``}}`` stay literal braces. An unknown name, a failing
    expression or a bad format raises :class:`PromptFormatError` quoting the field, rather
    than sending the model a half-filled prompt.
    """
    if "{" not in text and "}" not in text:
        return text
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptFormatError(f"the prompt's braces do not pair up ({exc}); {_LITERAL_HINT}") from None
    out: list[str] = []
    for literal, field, spec, conversion in parts:
        out.append(literal)
        if field is None:
            continue
        shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if not field.strip():
            raise PromptFormatError(f"'{shown}' with no expression in the prompt; {_LITERAL_HINT}")
        value = _evaluate(field.strip(), namespace, shown)
        if conversion:
            if conversion not in _CONVERSIONS:
                raise PromptFormatError(f"{shown} in the prompt: unknown conversion !{conversion} (use !r, !s or !a); {_LITERAL_HINT}")
            value = _CONVERSIONS[conversion](value)
        if spec and "{" in spec:
            spec = fill_prompt(spec, namespace)  # nested fields, as in "{x:{width}}"
        try:
            out.append(format(value, spec or ""))
        except (ValueError, TypeError) as exc:
            raise PromptFormatError(f"{shown} in the prompt cannot be formatted ({exc}); {_LITERAL_HINT}") from None
    return "".join(out)
