"""Describe the notebook's data frames to the model before a turn (an example extension).

Before each prompt it looks at the notebook namespace for data frames (pandas, polars, or
anything with ``shape``, ``columns`` and ``dtypes``) and sends a short note: names, shapes and
column types, never the data itself. The note is a ``custom_message`` of type
``dataframes``: stored in the session, shown in the widget, and seen by the model on purpose.
A note identical to the last one on the current branch is not sent again (``always=True``
sends it before every prompt).
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
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        line = describe_frame(name, value)
        if line:
            lines.append(line)
        if len(lines) >= MAX_FRAMES:
            break
    if not lines:
        return None
    return "Data frames in the notebook (names, shapes, column types; use the python tool to look inside):\n" + "\n".join(lines)


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
        from ..messages import CustomMessage

        return CustomMessage(custom_type=CUSTOM_TYPE, content=note, display=True)

    @staticmethod
    def _last_note(ctx: Any) -> str | None:
        for entry in reversed(ctx.session.raw_branch()):
            if entry.get("type") == "custom_message" and entry.get("customType") == CUSTOM_TYPE:
                content = entry.get("content")
                return content if isinstance(content, str) else None
        return None


def make_extension() -> DataFramesExtension:
    """The extension object (what ``%pi ext load pi_jupyter.extensions.dataframes`` registers)."""
    return DataFramesExtension()
