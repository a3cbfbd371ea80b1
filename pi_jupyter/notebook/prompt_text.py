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

    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(key, int):
            raise PromptFormatError("'{}' with no name in the prompt; write {{}} for literal braces")
        if key not in self.namespace:
            raise PromptFormatError(f"{{{key}}} in the prompt: name {key!r} is not defined; write {{{{ and }}}} for literal braces")
        return self.namespace[key]


def fill_prompt(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{name}`` (also ``{df.shape}``, ``{xs[0]}``, ``{x:.2f}``) with values from ``namespace``.

    ``{{`` and ``}}`` stay literal braces. An unknown name raises :class:`PromptFormatError`
    naming it, rather than sending the model a half-filled prompt.
    """
    if "{" not in text and "}" not in text:
        return text
    try:
        return _Formatter(namespace).format(text)
    except PromptFormatError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise PromptFormatError(f"cannot fill the prompt's {{...}}: {type(exc).__name__}: {exc}") from None
    except ValueError as exc:
        raise PromptFormatError(f"the prompt's braces do not pair up ({exc}); write {{{{ and }}}} for literal braces") from None
