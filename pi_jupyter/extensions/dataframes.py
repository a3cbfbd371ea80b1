"""Describe the notebook's data frames to the model before a turn (an example extension).

Before each prompt it looks at the notebook namespace for data frames (pandas, polars, or
anything with ``shape``, ``columns`` and ``dtypes``) and sends a short note: names, shapes and
column types, never the data itself. The note is a ``custom_message`` of type
``dataframes``: stored in the session, shown in the widget, and seen by the model on purpose.
It goes into the conversation just *before* the user's prompt (``ctx.send_message``), so the
prompt stays the last thing the model reads (a note after it reads like a new request: the
offline model answered the note instead of the prompt).
A note identical to the last one still in the context is not sent again (after a compaction
that summarized it away, or a checkout to a node before it, it is; ``always=True`` sends it
before every prompt).
"""

from __future__ import annotations

from typing import Any

CUSTOM_TYPE = "dataframes"
MAX_FRAMES = 20
MAX_COLUMNS = 30


def describe_frame(name: str, frame: Any) -> str | None:
    """One line about a data frame, or ``None`` when ``frame`` is not one."""
    shape = getattr(frame, "shape", None)
    columns = getattr(frame, "columns", None)
    dtypes = getattr(frame, "dtypes", None)
    if not (isinstance(shape, tuple) and len(shape) == 2 and columns is not None and dtypes is not None):
        return None
    try:
        names = [str(c) for c in list(columns)]
        types = [str(t) for t in list(dtypes)] if not isinstance(dtypes, dict) else [str(v) for v in dtypes.values()]
    except Exception:  # noqa: BLE001 - an exotic frame type: describe what we can
        return f"- `{name}`: {shape[0]:,} rows × {shape[1]:,} columns"
    cols = ", ".join(f"{c}: {t}" for c, t in list(zip(names, types, strict=False))[:MAX_COLUMNS])
    more = f", … {len(names) - MAX_COLUMNS} more" if len(names) > MAX_COLUMNS else ""
    return f"- `{name}`: {shape[0]:,} rows × {shape[1]:,} columns ({cols}{more})"


def describe_namespace(namespace: dict[str, Any]) -> str | None:
    """The note for every public data frame in ``namespace``, or ``None`` when there is none."""
    lines = []
    for name, value in list(namespace.items()):  # a background run may see the namespace change
        if name.startswith("_"):
            continue
        line = describe_frame(name, value)
        if line:
            lines.append(line)
        if len(lines) >= MAX_FRAMES:
            break
    if not lines:
        return None
    return "Data frames in the notebook (names, shapes, column types; the python tool can look inside):\n" + "\n".join(lines)


class DataFramesExtension:
    """Sends :func:`describe_namespace` of the notebook before prompts (see the module docstring)."""

    name = "dataframes"

    def __init__(self, always: bool = False) -> None:
        self.always = always

    def before_prompt(self, text: str, ctx: Any) -> Any:
        namespace = ctx.namespace
        if not namespace:
            return None
        note = describe_namespace(namespace)
        if note is None:
            return None
        if not self.always and note == self._last_note(ctx):
            return None
        ctx.send_message(CUSTOM_TYPE, note, display=True)  # now: before the prompt, which is not yet in the context
        return None

    @staticmethod
    def _last_note(ctx: Any) -> str | None:
        # the last note the model still sees: in the agent's context, not merely on the branch
        # (a note that a compaction summarized away must be sent again)
        for message in reversed(ctx.agent.messages):
            if getattr(message, "role", None) == "custom" and getattr(message, "custom_type", None) == CUSTOM_TYPE:
                content = message.content
                return content if isinstance(content, str) else None
        return None


def make_extension() -> DataFramesExtension:
    """The extension object (what ``%pi ext load pi_jupyter.extensions.dataframes`` registers)."""
    return DataFramesExtension()
