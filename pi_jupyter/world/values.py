"""Values of the world: serialized for the store, described in one short phrase for people.

A value is pickled with ``cloudpickle`` at protocol 5, so functions and classes defined in the
notebook travel by value and large buffers (numpy arrays, the columns of a pandas frame) come
out of band: they are hashed and written as they are, never copied into one big bytes object.
What cannot be pickled (a lock, a database connection, a generator) or is larger than the size
limit is :class:`Unsaved`, with the reason a person reads ("sqlite3.Connection: not
serializable"). Modules are kept by name and imported again.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
import types
from dataclasses import dataclass
from typing import Any

DEFAULT_LIMIT = 512 * 1024 * 1024
"""Values larger than this (bytes, serialized) are not saved; the world names them instead."""


class Unsaved(Exception):
    """A value the world cannot keep; ``str(exc)`` says why, for a person. ``big``: it is over the size limit."""

    def __init__(self, reason: str, *, big: bool = False) -> None:
        super().__init__(reason)
        self.big = big


@dataclass
class Serialized:
    """A pickled value: its small pickle stream, its out-of-band buffers and its content digest."""

    meta: bytes
    buffers: list[memoryview]
    digest: str

    @property
    def size(self) -> int:
        """Bytes of the body (what the store writes before compression)."""
        return body_size(self.meta, self.buffers)

    def parts(self) -> list[bytes | memoryview]:
        """The body as a sequence of pieces: a header of lengths, the pickle stream, the buffers."""
        return [_header(self.meta, self.buffers), self.meta, *self.buffers]


def _header(meta: bytes, buffers: list[memoryview]) -> bytes:
    lengths = [len(meta), *(b.nbytes for b in buffers)]
    return struct.pack(f"<I{len(lengths)}Q", len(buffers), *lengths)


def body_size(meta: bytes, buffers: list[memoryview]) -> int:
    """Size of a value's body: header, pickle stream and buffers."""
    return 4 + 8 * (len(buffers) + 1) + len(meta) + sum(b.nbytes for b in buffers)


def type_name(value: Any) -> str:
    """``sqlite3.Connection``, ``DataFrame``, ``int``: the module is named unless it is a well-known one."""
    cls = type(value)
    module = cls.__module__ or ""
    if module in ("builtins", "__main__") or module.split(".")[0] in ("pandas", "numpy", "polars"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def estimated_size(value: Any) -> int | None:
    """A cheap size for the big kinds (arrays, frames), before paying for pickling; ``None`` when unknown."""
    try:
        return _estimated_size(value)
    except Exception:  # noqa: BLE001 - an object whose attributes raise: no estimate
        return None


def _estimated_size(value: Any) -> int | None:
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and getattr(value, "shape", None) is not None:
        return nbytes
    usage = getattr(value, "memory_usage", None)
    if callable(usage) and hasattr(value, "columns") and type(value).__module__.startswith("pandas"):
        try:
            return int(usage(index=True, deep=False).sum())
        except Exception:  # noqa: BLE001 - only an estimate
            return None
    return None


def serialize(value: Any, limit: int = DEFAULT_LIMIT) -> Serialized:
    """Pickle ``value`` (protocol 5, buffers out of band) and hash it; raises :class:`Unsaved` with the reason."""
    import cloudpickle

    filename = getattr(value, "filename", None) if type(value).__name__ == "memmap" else None
    if isinstance(filename, str):  # its data is a file's: a copy would no longer be the file, nor write to it
        raise Unsaved(f"numpy memmap of {filename}: a view of a file, not saved; open it again")
    guess = estimated_size(value)
    if guess is not None and guess > limit:
        raise Unsaved(f"{describe(value)}: {format_bytes(guess)}, over the {format_bytes(limit)} limit", big=True)
    buffers: list[memoryview] = []

    def keep(buffer: pickle.PickleBuffer) -> bool:
        try:
            buffers.append(buffer.raw())
        except BufferError:  # not contiguous: pickle copies it in band
            return True
        return False  # out of band: hashed and written as it is

    try:
        meta = cloudpickle.dumps(value, protocol=5, buffer_callback=keep)
    except RecursionError:
        raise Unsaved(f"{type_name(value)}: too deeply nested to save") from None
    except Exception as exc:  # noqa: BLE001 - any failure of pickling means "cannot be kept"
        raise Unsaved(_why_not(value, exc)) from None
    size = body_size(meta, buffers)
    if size > limit:
        raise Unsaved(f"{describe(value)}: {format_bytes(size)}, over the {format_bytes(limit)} limit", big=True)
    digest = hashlib.sha256()
    digest.update(b"v")
    for part in (_header(meta, buffers), meta, *buffers):
        digest.update(part)
    return Serialized(meta, buffers, digest.hexdigest()[:40])


def _why_not(value: Any, exc: BaseException) -> str:
    if isinstance(value, types.GeneratorType):
        return "generator: not serializable"
    text = str(exc)
    # pickle names the object it choked on ("cannot pickle '_thread.lock' object"): use it when it is inside a container
    if text.startswith("cannot pickle '") and "' object" in text:
        inner = text[len("cannot pickle '") : text.index("' object")]
        mine = type_name(value)
        if inner not in (mine, type(value).__qualname__, type(value).__name__):
            return f"{mine}: holds a {inner}, not serializable"
    return f"{type_name(value)}: not serializable"


def deserialize(body: bytes | bytearray | memoryview) -> Any:
    """The value of a body written by :func:`serialize` (buffers stay writable when ``body`` is a bytearray)."""
    view = memoryview(body)
    (count,) = struct.unpack_from("<I", view, 0)
    lengths = struct.unpack_from(f"<{count + 1}Q", view, 4)
    offset = 4 + 8 * (count + 1)
    meta = view[offset : offset + lengths[0]]
    offset += lengths[0]
    buffers = []
    for n in lengths[1:]:
        buffers.append(view[offset : offset + n])
        offset += n
    return pickle.loads(meta, buffers=buffers)  # noqa: S301 - the world's own store, written by this kernel


def format_bytes(n: float) -> str:
    """``1.5 MB``, ``812 KB``, ``96 B``."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def describe(value: Any) -> str:
    """A short phrase for a value: ``DataFrame 1,000×4``, ``ndarray 100×3 float64``, ``list of 3``, ``str, 12 chars``."""
    try:
        return _describe(value)
    except Exception:  # noqa: BLE001 - an object whose attributes raise: its type alone
        return type_name(value)


def _describe(value: Any) -> str:
    name = type_name(value)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        dims = "×".join(f"{n:,}" for n in shape)
        dtype = getattr(value, "dtype", None)
        short = type(value).__qualname__
        if short == "DataFrame" or dtype is None or not isinstance(getattr(dtype, "name", None), str):
            return f"{short} {dims}".rstrip()
        return f"{short} {dims} {dtype.name}".rstrip()
    if isinstance(value, str):
        return f"str, {len(value):,} chars"
    if isinstance(value, (bytes, bytearray)):
        return f"{type(value).__name__}, {len(value):,} bytes"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"{type(value).__name__} of {len(value):,}"
    if isinstance(value, (types.FunctionType, type)):
        return "function" if isinstance(value, types.FunctionType) else "class"
    return name


def preview(value: Any, width: int = 120) -> str | None:
    """The repr of a small plain value (numbers, short strings, small containers of them); ``None`` for anything else."""
    if isinstance(value, (bool, int, float, complex, type(None))):
        return repr(value)
    if isinstance(value, str) and len(value) <= width:
        return repr(value)
    if isinstance(value, (list, tuple, set, dict)) and len(value) <= 20:
        try:
            text = repr(value)
        except Exception:  # noqa: BLE001 - a broken repr is no preview
            return None
        return text if len(text) <= width else None
    return None
