"""The live namespace described as a variable inspector does: names, types, shapes, dtypes, sizes; never whole values.

Only small plain values (numbers, booleans, ``None``, short strings) are shown as they are; a
string whose name looks secret (``*KEY*``, ``*TOKEN*``, ...) is never shown, and whatever is
shown is redacted like every tool result. Modules are listed on one line; IPython's own names
(``In``, ``Out``, ``_``, ...) and names starting with ``_`` are left out.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

from ..redact import SECRET_NAME_RE
from .truncate import format_size

__all__ = ["describe_namespace", "describe_value"]

_HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
MAX_NAMES = 300


def _size(value: Any) -> str:
    """Memory of a data object when it says (``nbytes``, pandas' ``memory_usage``), else ``""``."""
    try:
        usage = getattr(value, "memory_usage", None)
        if callable(usage) and type(value).__name__ == "DataFrame":
            return format_size(int(usage(deep=False).sum()))
        nbytes = getattr(value, "nbytes", None)
        if isinstance(nbytes, int):
            return format_size(nbytes)
    except Exception:  # noqa: BLE001 - an odd object: no size
        return ""
    return ""


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return "×".join(f"{n:,}" for n in shape) if shape else "scalar"
    return ""


def _columns(value: Any, limit: int) -> str:
    dtypes = getattr(value, "dtypes", None)
    items = getattr(dtypes, "items", None)
    if not callable(items):
        return ""
    cols = [f"{name} {dtype}" for name, dtype in list(items())[:limit]]
    more = len(getattr(value, "columns", [])) - len(cols)
    return ", ".join(cols) + (f", … {more} more" if more > 0 else "")


def describe_value(name: str, value: Any, *, deep: bool = False) -> str:
    """One line for ``name`` (several with ``deep``: columns, keys, element types)."""
    kind = type(value).__qualname__
    module = type(value).__module__
    if module not in ("builtins", "__main__"):
        kind = f"{module.split('.')[0]}.{kind}"
    try:
        return _describe(name, value, kind, deep)
    except Exception:  # noqa: BLE001 - a value whose attributes raise: its type alone
        return f"{name}: {kind}"


def _describe(name: str, value: Any, kind: str, deep: bool) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, complex)):
        text = repr(value)
        return f"{name}: {kind} = {text if len(text) <= 60 else text[:60] + '…'}"
    if isinstance(value, str):
        if SECRET_NAME_RE.search(name):
            return f"{name}: str, {len(value):,} chars (the name says secret: not shown)"
        shown = repr(value) if len(value) <= 60 else repr(value[:60]) + "…"
        return f"{name}: str, {len(value):,} chars = {shown}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        try:
            signature = str(inspect.signature(value))
        except (TypeError, ValueError):
            signature = "(…)"
        return f"{name}: function{signature if len(signature) <= 120 else signature[:120] + '…)'}"
    if isinstance(value, type):
        return f"{name}: class {value.__module__}.{value.__qualname__}" if value.__module__ != "__main__" else f"{name}: class"
    shape = _shape(value)
    dtype = getattr(value, "dtype", None)
    parts = [f"{name}: {kind}"]
    if shape:
        parts.append(shape)
    if dtype is not None and isinstance(getattr(dtype, "name", None), str):
        parts.append(dtype.name)
    cols = _columns(value, 40 if deep else 8)
    if cols:
        parts.append(f"columns: {cols}")
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        parts.append(f"{len(value):,} item{'s' if len(value) != 1 else ''}")
        if deep and isinstance(value, dict):
            keys = [repr(k) for k in list(value)[:30]]
            parts.append("keys: " + ", ".join(keys) + (" …" if len(value) > 30 else ""))
        elif value and not isinstance(value, dict):
            sample = list(value)[:50] if not isinstance(value, (set, frozenset)) else list(value)[:50]
            kinds = sorted({type(v).__name__ for v in sample})
            parts.append("of " + ", ".join(kinds[:5]))
    elif isinstance(value, (bytes, bytearray)):
        parts.append(format_size(len(value)))
    size = _size(value)
    if size:
        parts.append(size)
    if deep and hasattr(value, "isna") and cols:
        try:
            nulls = {str(k): int(v) for k, v in value.isna().sum().items() if int(v)}
            parts.append("missing values: " + (", ".join(f"{k} {v:,}" for k, v in nulls.items()) or "none"))
        except Exception:  # noqa: BLE001 - not a frame after all
            pass
    return ", ".join(parts[:1]) + (" " + ", ".join(parts[1:]) if len(parts) > 1 else "")


def describe_namespace(namespace: dict[str, Any], hidden: set[str] | frozenset[str] = frozenset(), only: str | None = None) -> str:
    """The namespace as lines (see the module docstring); ``only``: one name, described in more depth."""
    if only is not None:
        if only not in namespace:
            close = sorted(n for n in namespace if n.lower().startswith(only.lower()[:2]) and not n.startswith("_"))[:8]
            return f"No variable {only!r} in the kernel." + (f" Close: {', '.join(close)}." if close else "")
        return describe_value(only, namespace[only], deep=True)
    names = sorted(n for n in namespace if not n.startswith("_") and n not in _HIDDEN and n not in hidden)
    modules: list[str] = []
    lines: list[str] = []
    for name in names:
        value = namespace.get(name)
        if isinstance(value, types.ModuleType):
            real = value.__name__
            modules.append(name if real == name else f"{name} ({real})")
            continue
        if len(lines) >= MAX_NAMES:
            continue
        lines.append(describe_value(name, value))
    out = []
    if lines:
        out.append(
            f"{len(lines)} variable{'s' if len(lines) != 1 else ''}"
            + (f" (of {len(names) - len(modules)})" if len(names) - len(modules) > len(lines) else "")
            + ":"
        )
        out.extend(f"- {line}" for line in lines)
    else:
        out.append("No variables in the kernel yet.")
    if modules:
        out.append("Modules: " + ", ".join(modules))
    out.append(f"(Python {sys.version.split()[0]}; values are not shown, only what they are.)")
    return "\n".join(out)
