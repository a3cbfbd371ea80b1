"""``{expr}`` in a ``%%pi`` prompt, filled from the user namespace, never inside code.

The rule: prose is filled in, code is sent as written. A fenced code block (```` ``` ```` or
``~~~``, as in Markdown) and inline code (`` `...` ``) keep their braces: ``f"branch {n}"`` in a
code block reaches the agent as typed, and ``{{`` stays ``{{`` there. Everywhere else ``{expr}``
is a Python expression evaluated in the notebook's namespace (a grid's variant values first),
and ``{{`` / ``}}`` are literal braces. :func:`fill_prompt_parts` also says what it filled in,
so the cell can show it (:func:`filled_note`).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..agent.prompt_code import code_and_prose
from ..agent.redact import redact_typed


class PromptFormatError(ValueError):
    """A ``{...}`` in the prompt names something the namespace does not have."""


class FilledPrompt(NamedTuple):
    """A prompt after filling: its ``text``, each field filled as ``(field as written, text put in)``, and whether code kept braces."""

    text: str
    fields: list[tuple[str, str]]
    code_kept: bool = False


_LITERAL_HINT = "write {{ and }} for literal braces"
_CONVERSIONS: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}
_SHOWN_VALUE = 60


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


def _fill(text: str, namespace: Mapping[str, Any], fields: list[tuple[str, str]]) -> str:
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
            spec = _fill(spec, namespace, [])  # nested fields, as in "{x:{width}}"
        try:
            text_in = format(value, spec or "")
        except (ValueError, TypeError) as exc:
            raise PromptFormatError(f"{shown} in the prompt cannot be formatted ({exc}); {_LITERAL_HINT}") from None
        out.append(text_in)
        fields.append((shown, text_in))
    return "".join(out)


def fill_prompt_parts(text: str, namespace: Mapping[str, Any]) -> FilledPrompt:
    """Fill ``{expr}`` in the prose of ``text`` (see the module notes) and say what was filled in.

    As IPython's ``{expr}`` in ``!`` commands, a field is any Python expression evaluated in
    ``namespace``, with an optional ``!r``/``!s``/``!a`` conversion and ``:spec`` format as in
    ``str.format``. An unknown name, a failing expression or a bad format raises
    :class:`PromptFormatError` quoting the field, rather than sending the model a half-filled
    prompt. Code blocks and inline code are left exactly as written.
    """
    if "{" not in text and "}" not in text:
        return FilledPrompt(text, [])
    fields: list[tuple[str, str]] = []
    parts = code_and_prose(text)
    pieces = [piece if code else _fill(piece, namespace, fields) for code, piece in parts]
    return FilledPrompt("".join(pieces), fields, any(code and "{" in piece for code, piece in parts))


def fill_prompt(text: str, namespace: Mapping[str, Any]) -> str:
    """``text`` with ``{expr}`` filled in its prose from ``namespace``; code as written (see :func:`fill_prompt_parts`)."""
    return fill_prompt_parts(text, namespace).text


def filled_note(fields: list[tuple[str, str]], *, per_branch: Mapping[str, list[Any]] | None = None, code_kept: bool = False) -> str:
    """One line saying what a prompt had filled in: ``filled in {x} = 100, {df.shape} = (3, 4)`` (``""`` when nothing).

    ``per_branch`` (a grid's variant keys and their values) is said as such; values are cut to
    a few dozen characters and secrets in them are never shown. ``code_kept``: the prompt's
    code had braces, which were sent as written (said after what was filled).
    """
    seen: dict[str, str] = {}
    for shown, value in fields:
        seen.setdefault(shown, value)
    varied = {f"{{{key}}}" for key in per_branch or {}}
    fixed = [f"{shown} = {_short(value)}" for shown, value in seen.items() if shown not in varied]
    bits = []
    if per_branch:
        used = [key for key in per_branch if f"{{{key}}}" in seen]
        bits += [f"{{{key}}} per branch ({', '.join(_short(str(v)) for v in per_branch[key])})" for key in used]
    bits += fixed
    if not bits:
        return ""
    return "Filled in " + ", ".join(bits) + ("; braces in code sent as written" if code_kept else "")


def _short(value: str) -> str:
    value = " ".join(redact_typed(value).split())
    return value if len(value) <= _SHOWN_VALUE else value[: _SHOWN_VALUE - 1] + "…"


__all__ = ["FilledPrompt", "PromptFormatError", "fill_prompt", "fill_prompt_parts", "filled_note"]
