"""Branches compared by their worlds: the variables and files that differ at their ends.

For each variable or file whose recorded content differs between the branches, one row: per
branch a short cell (a small value's repr, a frame's shape and columns, an array's shape and
dtype, "absent", or why it was not saved), and for two branches a diff (the values side by
side, the columns one has and the other not, a text diff of a file). Values are read from the
store beside the session file; what is not there says so. ``clean`` is applied to every text
shown (the notebook passes its redaction, so a secret held in a variable or a file is shown
as ``[REDACTED]``).
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ...world import Store, delta_of
from ...world.record import is_ref, listing, same_slot, shown, unsaved_reason
from ...world.store import Untrusted
from ...world.values import describe, preview
from ..digest import plural
from ..reader_bundle import pi_bundle

LOAD_LIMIT = 64 * 1024 * 1024
"""Objects larger than this (on disk) are described from the record, not loaded."""
DIFF_LINES = 80


class WorldRow(BaseModel):
    """One variable or file that differs."""

    kind: str
    """``variable`` or ``file``."""
    key: str
    cells: list[str] = Field(default_factory=list)
    diff: str = ""


class WorldComparison(BaseModel):
    """The variables and files that differ between branches (``rows``), named as the comparison names them."""

    names: list[str] = Field(default_factory=list)
    rows: list[WorldRow] = Field(default_factory=list)
    note: str = ""
    """What was not loaded and why, in one line (objects someone else saved need trust: described from the record instead)."""

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __str__(self) -> str:
        if not self.rows:
            return "the branches hold the same recorded variables and files"
        lines = ["world: " + " | ".join(self.names)]
        for r in self.rows:
            lines.append(f"{r.kind} {r.key}: " + " | ".join(r.cells))
            if r.diff:
                lines.extend("    " + line for line in r.diff.splitlines())
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def to_markdown(self) -> str:
        """The same as Markdown (what Markdown exports and sanitizing readers show)."""
        from ..compare_markdown import world_markdown

        return world_markdown(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        return pi_bundle(self._repr_html_(), self.to_markdown(), str(self), "world-compare")

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<div class='pi-world-compare'>{html.escape(str(self))}</div>"
        th = "text-align:left;padding:2px 8px;border-bottom:1px solid #d0d7de"
        td = "text-align:left;padding:2px 8px;vertical-align:top"
        head = "".join(f'<th style="{th}">{html.escape(n)}</th>' for n in ["", *self.names])
        body = []
        for r in self.rows:
            cells = "".join(f'<td style="{td}"><code>{html.escape(c)}</code></td>' for c in r.cells)
            body.append(f'<tr><th style="{td}">{html.escape(r.kind)} <code>{html.escape(r.key)}</code></th>{cells}</tr>')
            if r.diff:
                span = len(self.names) + 1
                body.append(
                    f'<tr><td colspan="{span}" style="{td}"><details open><summary>diff</summary>'
                    f'<pre style="margin:0;white-space:pre-wrap">{html.escape(r.diff)}</pre></details></td></tr>'
                )
        title = '<div style="margin:8px 0 4px;font-weight:bold">Variables and files that differ</div>'
        note = f"<div style='margin:4px 0;opacity:.8'>{html.escape(self.note)}</div>" if self.note else ""
        table = f"<table style='border-collapse:collapse'><tr>{head}</tr>{''.join(body)}</table>"
        return f"<div class='pi-world-compare'>{title}{table}{note}</div>"


def _fold(session: Any, leaf: str, before: dict[str, Any], described: dict[str, str]) -> tuple[dict[str, tuple[Any, str]], dict[str, Any]]:
    """The variables and files at ``leaf``; ``before`` learns what each was before its first change,
    ``described`` what the records say of each stored value (``what`` after a change, ``was`` before it)."""
    vars_: dict[str, tuple[Any, str]] = {}
    files: dict[str, Any] = {}
    for eid in session.branch_ids(leaf):
        d = delta_of(session.raw_entry(eid))
        if not d:
            continue
        for c in d.vars:
            before.setdefault(c.name, c.before)
            vars_[c.name] = (c.after, c.what)
            for slot, text in ((c.before, c.was), (c.after, c.what)):
                if text and is_ref(slot):
                    described.setdefault(slot, text)
        for f in d.files:
            before.setdefault("file:" + f.path, f.before)
            files[f.path] = f.after
    return vars_, files


def compare_worlds(session: Any, branches: Sequence[tuple[str, str]], *, clean: Callable[[str], str] = lambda s: s) -> WorldComparison:
    """Compare the worlds at the ends of ``branches`` (``(name, leaf id)`` pairs).

    Nothing is unpickled that this user's key did not sign (or a trusted folder holds): such a
    value is described from the record, and :attr:`WorldComparison.note` names it.
    """
    store = Store.of(session)
    first: dict[str, Any] = {}  # a branch that never touched a name holds what it was before anyone did
    described: dict[str, str] = {}
    folds = [_fold(session, leaf, first, described) for _name, leaf in branches]
    out = WorldComparison(names=[clean(n) for n, _ in branches])
    untrusted: dict[str, list[str]] = {}
    hint = ""
    for name in sorted({k for v, _f in folds for k in v}):
        slots = [v.get(name, (first.get(name), ""))[0] for v, _f in folds]
        if all(same_slot(slots[0], s) for s in slots[1:]):
            continue
        values = []
        for s in slots:
            value = _load(store, s)
            if isinstance(value, Untrusted):
                if name not in untrusted.setdefault(value.why, []):
                    untrusted[value.why].append(name)
                hint = value.hint
                value = _NOT_LOADED
            values.append(value)
        own = [fold[0].get(name, (None, ""))[1] for fold in folds]
        whats = [w or (described.get(s, "") if is_ref(s) else "") for s, w in zip(slots, own, strict=True)]
        cells = [clean(_cell(s, v, what)) for s, v, what in zip(slots, values, whats, strict=True)]
        diff = clean(_value_diff(values, out.names)) if len(values) == 2 else ""
        out.rows.append(WorldRow(kind="variable", key=shown(name), cells=cells, diff=diff))
    if untrusted:
        out.note = clean(
            "; ".join(f"not loaded: {listing(names, last=' and ')} ({why}; `{hint}` loads that folder's objects, which can run code)"
                      for why, names in untrusted.items())
        )  # fmt: skip
    for path in sorted({k for _v, f in folds for k in f}):
        slots = [f.get(path, first.get("file:" + path)) for _v, f in folds]
        if all(same_slot(slots[0], s) for s in slots[1:]):
            continue
        texts = [_file_text(store, s) for s in slots]
        cells = [clean(_file_cell(s, t)) for s, t in zip(slots, texts, strict=True)]
        diff = ""
        if len(texts) == 2 and all(isinstance(t, str) for t in texts):
            lines = difflib.unified_diff(
                str(texts[0]).splitlines(), str(texts[1]).splitlines(), out.names[0], out.names[1], lineterm="", n=2
            )
            diff = clean("\n".join(list(lines)[:DIFF_LINES]))
        out.rows.append(WorldRow(kind="file", key=shown(path), cells=cells, diff=diff))
    return out


_NOT_LOADED: Any = object()


def _load(store: Store, slot: Any) -> Any:
    if not is_ref(slot):
        return _NOT_LOADED
    size = store.size(slot)
    if size is None or size > LOAD_LIMIT:
        return _NOT_LOADED
    try:
        return store.get_value(slot)
    except Untrusted as exc:  # someone else's pickle: never loaded here, described from the record
        return exc
    except Exception:  # noqa: BLE001 - missing or unreadable: described from the record
        return _NOT_LOADED


def _cell(slot: Any, value: Any, what: str) -> str:
    if slot is None:
        return "absent"
    if isinstance(slot, dict) and "module" in slot:
        return f"module {_told(str(slot['module']))}"
    reason = unsaved_reason(slot)
    if reason:
        return f"not saved: {_told(reason)}"
    if value is _NOT_LOADED:
        # described from the record, never loaded; a record from before descriptions were kept says what it can
        return _told(what) or "a saved value (its record does not describe it)"
    shown = preview(value)
    if shown is not None:
        return shown
    return _summary(value)


def _told(text: str, width: int = 120) -> str:
    """Text a record holds (a description, a reason, a module's name): anyone may have written it, so it is escaped and cut."""
    text = shown(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _summary(value: Any) -> str:
    text = describe(value)
    columns = getattr(value, "columns", None)
    dtypes = getattr(value, "dtypes", None)
    if columns is not None and dtypes is not None:
        try:
            cols = [f"{c} {t}" for c, t in zip(list(columns)[:12], list(dtypes)[:12], strict=False)]
            text += ": " + ", ".join(cols) + (" …" if len(columns) > 12 else "")
        except Exception:  # noqa: BLE001 - an odd frame: the shape alone
            pass
    return text


def _value_diff(values: list[Any], names: list[str]) -> str:
    a, b = values
    if a is _NOT_LOADED or b is _NOT_LOADED:
        return ""
    cols_a, cols_b = getattr(a, "columns", None), getattr(b, "columns", None)
    if cols_a is not None and cols_b is not None:
        only_a = [str(c) for c in cols_a if c not in set(cols_b)]
        only_b = [str(c) for c in cols_b if c not in set(cols_a)]
        parts = []
        if only_a:
            parts.append(f"columns only in {names[0]}: {', '.join(only_a)}")
        if only_b:
            parts.append(f"columns only in {names[1]}: {', '.join(only_b)}")
        return "\n".join(parts)
    pa, pb = preview(a, 2000), preview(b, 2000)
    if pa is None or pb is None or "\n" not in pa + pb:
        return ""
    return "\n".join(difflib.unified_diff(pa.splitlines(), pb.splitlines(), names[0], names[1], lineterm=""))


def _file_text(store: Store, slot: Any) -> str | None:
    if not is_ref(slot):
        return None
    try:
        data = store.get_file(slot)
    except Exception:  # noqa: BLE001 - missing from the store
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _file_cell(slot: Any, text: str | None) -> str:
    if slot is None:
        return "absent"
    reason = unsaved_reason(slot)
    if reason:
        return f"not saved: {_told(reason)}"
    if text is None:
        return "binary or missing from the store"
    first = text.splitlines()[0] if text else ""
    return f"{plural(len(text.splitlines()), 'line')}: {first[:60]}"
