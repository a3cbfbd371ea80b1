"""``{var}`` in a ``%%pi`` prompt, filled from the user namespace."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any


class PromptFormatError(ValueError):
    """A ``{...}`` in the prompt names something the namespace does not have."""


class _Formatter(string.Formatter):
    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        # like IPython's {expr} in !commands: the field is a Python expression in the namespace
        expr = field_name.strip()
        if not expr:
            raise PromptFormatError("'{}' with no name in the prompt; write {{}} for literal braces")
        try:
            return eval(expr, {"__builtins__": __builtins__}, dict(self.namespace)), expr  # noqa: S307 - the user's own notebook
        except NameError as exc:
            raise PromptFormatError(f"{{{expr}}} in the prompt: {exc}; write {{{{ and }}}} for literal braces") from None
        except SyntaxError:
            raise PromptFormatError(
                f"{{{expr}}} in the prompt is not a Python expression; write {{{{ and }}}} for literal braces"
            ) from None
        except Exception as exc:  # noqa: BLE001 - any failure of the user's expression, reported with it
            raise PromptFormatError(f"{{{expr}}} in the prompt failed: {type(exc).__name__}: {exc}") from None


def fill_prompt(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{expr}`` (``{name}``, ``{df.shape}``, ``{len(xs)}``, ``{x:.2f}``) with its value in ``namespace``.

    As IPython's ``{expr}`` in ``!`` commands, a field is any Python expression evaluated in
    ``namespace``. ``{{`` and ``}}`` stay literal braces. An unknown name or a failing
    expression raises :class:`PromptFormatError` naming it, rather than sending the model a
    half-filled prompt.
    """
    if "{" not in text and "}" not in text:
        return text
    try:
        if any(field == "" for _, field, _, _ in string.Formatter().parse(text)):
            raise PromptFormatError("'{}' with no expression in the prompt; write {{}} for literal braces")
        return _Formatter(namespace).format(text)
    except PromptFormatError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise PromptFormatError(f"cannot fill the prompt's {{...}}: {type(exc).__name__}: {exc}") from None
    except ValueError as exc:
        raise PromptFormatError(f"the prompt's braces do not pair up ({exc}); write {{{{ and }}}} for literal braces") from None
