"""A key pasted into a ``%%pi`` prompt: replaced before it is sent or stored, and the user told.

The choice: the prompt goes to the model and into the session file with every secret the
redaction knows (key-like environment values, key formats, URL passwords) replaced by
``[REDACTED:<what>]``, as tool output is; a warning on the cell's stderr names what was
found (never the value) and says where the key still is: in the cell's own text, which the
notebook saves, when it was typed rather than filled in from ``{expr}``. A model never needs
the key itself: code it runs can read ``os.environ``.
"""

from __future__ import annotations

import re

from ..agent.redact import find_secrets, redact_typed

__all__ = ["guard_prompt"]

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def guard_prompt(prompt: str, cell_text: str) -> tuple[str, str | None]:
    """``(prompt to send, warning or None)``: ``prompt`` with its secrets redacted, and one line for the user."""
    clean = redact_typed(prompt)
    found = find_secrets(clean)  # the labels left where secrets were
    if not found:
        return prompt, None
    what = ", ".join(found)
    warning = f"pi: the prompt contains a secret ({what}); it was sent and stored as [REDACTED:...], never as typed."
    if find_secrets(redact_typed(cell_text)):
        warning += " It is still in this cell's text, which the notebook saves: remove it there."
    env = [name for name in found if _ENV_NAME.match(name)]
    if env:
        warning += f" Code the agent runs can read it as os.environ[{env[0]!r}]."
    return clean, warning
