"""Values of the world: serialized for the store, described in one short phrase for people.

Plain data (numbers, text, containers of them, NumPy arrays and pandas frames of plain dtypes;
see :mod:`.plain`) is kept in a form that cannot run code when it is read, so anyone's can be
loaded. Anything else is pickled with ``cloudpickle`` at protocol 5, so functions and classes
defined in the notebook travel by value and large buffers (numpy arrays inside a model) come
out of band: they are hashed and written as they are, never copied into one big bytes object.
Loading a pickle can run code, so the store loads one only when this user's key signed it
(:mod:`.trust`).

Pickling runs the object's own code (``__reduce__``, ``__getstate__``), which may sleep, loop or
raise ``SystemExit``: it runs in a helper thread with a deadline (:data:`SAVE_DEADLINE`), and
whatever it raises, or a deadline passed, makes the value :class:`Unsaved` ("pickling it took
over 15 s"), never a hung or ended run; a real interrupt of the kernel still stops it. What cannot
be pickled (a lock, a database connection, a generator) or is larger than the size limit is
:class:`Unsaved` too, with the reason a person reads ("sqlite3.Connection: not serializable").
Modules are kept by name and imported again (see :mod:`.modules`).
"""

from __future__ import annotations

import ctypes
import hashlib
import pickle
import struct
import threading
import types
from dataclasses import dataclass, field
from typing import Any

from . import plain

DEFAULT_LIMIT = 512 * 1024 * 1024
"""Values larger than this (bytes, serialized) are not saved; the world names them instead."""
SAVE_DEADLINE = 15.0
"""Seconds one value's pickling may take (its own ``__reduce__`` code included) before it is named "not saved"."""


class Unsaved(Exception):
    """A value the world cannot keep; ``str(exc)`` says why, for a person. ``big``: it is over the size limit."""

    def __init__(self, reason: str, *, big: bool = False) -> None:
        super().__init__(reason)
        self.big = big


@dataclass
class Serialized:
    """A serialized value: its small stream (pickle or MessagePack), its out-of-band buffers and its content digest."""

    meta: bytes
    buffers: list[memoryview | bytes]
    digest: str
    kind: bytes = b"v"
    """``b"v"``: a pickle (loaded only when trusted); ``b"d"``: plain data (:mod:`.plain`), loaded by anyone."""
    full: bytes = b""
    """The whole SHA-256 of the kind and the body (:attr:`digest`, the ref, is its first 40 hex digits)."""
    texts: list[str | None] = field(default_factory=list)
    """Per buffer, the text it may hold: ``"S"`` bytes, ``"U"`` UTF-32, ``None`` numbers (what the secret scan reads)."""

    @property
    def size(self) -> int:
        """Bytes of the body (what the store writes before compression)."""
        return body_size(self.meta, self.buffers)

    def parts(self) -> list[bytes | memoryview]:
        """The body as a sequence of pieces: a header of lengths, the stream, the buffers."""
        return [_header(self.meta, self.buffers), self.meta, *self.buffers]

    def secret_text(self, limit: int) -> str:
        """What the secret scan reads: the stream (its strings are there as written) and the buffers that may hold text.

        Arrays of byte strings or of text, and small byte buffers (a key's bytes as a ``uint8``
        array), are read as text too; each piece larger than ``limit`` bytes is left out.
        """
        pieces = [self.meta.decode("latin-1")] if len(self.meta) <= limit else []
        for buf, kind in zip(self.buffers, self.texts, strict=False):
            size = memoryview(buf).nbytes
            if kind is None or not size or size > limit:
                continue
            raw = bytes(buf)
            text = raw.decode("utf-32-le", "replace") if kind == "U" else raw.decode("latin-1")
            pieces.append(text.replace("\0", " "))
        return "\n".join(pieces)


def _header(meta: bytes, buffers: list[memoryview | bytes]) -> bytes:
    lengths = [len(meta), *(memoryview(b).nbytes for b in buffers)]
    return struct.pack(f"<I{len(lengths)}Q", len(buffers), *lengths)


def body_size(meta: bytes, buffers: list[memoryview | bytes]) -> int:
    """Size of a value's body: header, stream and buffers."""
    return 4 + 8 * (len(buffers) + 1) + len(meta) + sum(memoryview(b).nbytes for b in buffers)


_KNOWN = frozenset({"numpy", "pandas", "polars", "torch", "jax", "jaxlib", "xarray", "scipy", "cupy", "dask", "tensorflow", "pyarrow"})
"""Libraries whose objects may be asked their shape, dtype and size: their attributes are data, not someone's code."""


def type_name(value: Any) -> str:
    """``sqlite3.Connection``, ``DataFrame``, ``int``: the module is named unless it is a well-known one."""
    cls = type(value)
    module = cls.__module__ or ""
    if not isinstance(module, str):
        module = "?"
    qualname = cls.__qualname__ if isinstance(cls.__qualname__, str) else cls.__name__
    if module in ("builtins", "__main__") or module.split(".")[0] in ("pandas", "numpy", "polars"):
        return qualname
    return f"{module}.{qualname}"


def _known(value: Any) -> bool:
    module = type(value).__module__
    return isinstance(module, str) and module.split(".")[0] in _KNOWN


def estimated_size(value: Any) -> int | None:
    """A cheap size for the big kinds (arrays, frames), before paying for pickling; ``None`` when unknown.

    Only the well-known libraries' objects are asked (an arbitrary object's attributes are its own code).
    """
    if not _known(value):
        return None
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
    """Serialize ``value`` and hash it (plain data without pickle, the rest pickled); raises :class:`Unsaved` with the reason."""
    filename = getattr(value, "filename", None) if type(value).__name__ == "memmap" and _known(value) else None
    if isinstance(filename, str):  # its data is a file's: a copy would no longer be the file, nor write to it
        raise Unsaved(f"numpy memmap of {filename}: a view of a file, not saved; open it again")
    guess = estimated_size(value)
    if guess is not None and guess > limit:
        raise Unsaved(f"{describe(value)}: {format_bytes(guess)}, over the {format_bytes(limit)} limit", big=True)
    try:
        encoded = plain.encode(value)
    except plain.NotPlain:
        meta, buffers, texts = _pickled(value)
        return _finish(b"v", meta, buffers, texts, value, limit)
    header = 4 + 8 * (2 * len(encoded.buffers) + 1)
    laid = plain.layout(encoded, header)
    texts = [t for kind in encoded.texts for t in (None, kind)]
    return _finish(b"d", encoded.meta, laid, texts, value, limit)


def _finish(kind: bytes, meta: bytes, buffers: list[Any], texts: list[str | None], value: Any, limit: int) -> Serialized:
    size = body_size(meta, buffers)
    if size > limit:
        raise Unsaved(f"{describe(value)}: {format_bytes(size)}, over the {format_bytes(limit)} limit", big=True)
    digest = hashlib.sha256()
    digest.update(kind)
    for part in (_header(meta, buffers), meta, *buffers):
        digest.update(part)
    full = digest.digest()
    return Serialized(meta, buffers, full.hex()[:40], kind, full, texts)


def _pickled(value: Any) -> tuple[bytes, list[Any], list[str | None]]:
    """Pickle ``value`` in a helper thread with a deadline; whatever its code does becomes :class:`Unsaved`."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["out"] = _pickle(value)
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt from __reduce__: the object's, not the kernel's
            try:
                box["why"] = _reason(value, exc)
            except BaseException:  # noqa: BLE001 - an exception whose str() misbehaves too
                box["why"] = f"{type_name(value)}: not serializable"
        finally:
            done.set()  # (set early by stop_saves: then neither "out" nor "why" is there yet)

    thread = threading.Thread(target=work, name="pi-world save", daemon=True)
    with _waiting_lock:
        _waiting.add(done)
    thread.start()
    try:
        finished = done.wait(SAVE_DEADLINE)
    except BaseException:  # a real interrupt of the kernel: the pickling stops too, and the interrupt goes on
        _stop(thread)
        raise
    finally:
        with _waiting_lock:
            _waiting.discard(done)
    if not finished:
        _stop(thread)
        raise Unsaved(f"{type_name(value)}: pickling it took over {SAVE_DEADLINE:g} s")
    if "out" not in box and "why" not in box:  # stop_saves(): an abort
        _stop(thread)
        raise Unsaved(f"{type_name(value)}: pickling it was stopped by an abort")
    if "why" in box:
        raise Unsaved(box["why"])
    out: tuple[bytes, list[Any], list[str | None]] = box["out"]
    return out


_waiting: set[threading.Event] = set()
_waiting_lock = threading.Lock()


def stop_saves() -> int:
    """Stop every pickling under way in this process (an abort of a run): each value is named "not saved"; returns how many."""
    with _waiting_lock:
        waits = list(_waiting)
    for done in waits:
        done.set()
    return len(waits)


class _Abandoned(BaseException):
    """Raised in a pickling thread whose deadline passed: it stops at its next line of Python."""


def _stop(thread: threading.Thread) -> None:
    if thread.ident is not None and thread.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Abandoned))


def _pickle(value: Any) -> tuple[bytes, list[Any], list[str | None]]:
    import cloudpickle

    buffers: list[memoryview] = []
    texts: list[str | None] = []

    def keep(buffer: pickle.PickleBuffer) -> bool:
        try:
            raw = buffer.raw()
        except BufferError:  # not contiguous: pickle copies it in band
            return True
        fmt = memoryview(buffer).format
        buffers.append(raw)
        texts.append("U" if fmt.endswith("w") else "S" if fmt[-1:] in ("s", "c", "B", "b") else None)
        return False  # out of band: hashed and written as it is

    meta = cloudpickle.dumps(value, protocol=5, buffer_callback=keep)
    return meta, buffers, texts


def _reason(value: Any, exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"{type_name(value)}: too deeply nested to save"
    if isinstance(exc, _Abandoned):
        return f"{type_name(value)}: pickling it took over {SAVE_DEADLINE:g} s"
    if not isinstance(exc, Exception):
        return f"{type_name(value)}: pickling it raised {type(exc).__name__}"
    return _why_not(value, exc)


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


class Malformed(ValueError):
    """A body no writer of the world made: its lengths do not add up."""


def split(body: bytes | bytearray | memoryview) -> tuple[memoryview, list[memoryview]]:
    """The stream and the buffers of a body, every length checked against the body's own size."""
    view = memoryview(body)
    if len(view) < 12:
        raise Malformed("a body too short for its header")
    (count,) = struct.unpack_from("<I", view, 0)
    if count > (len(view) - 12) // 8:
        raise Malformed("a body that claims more buffers than it holds")
    lengths = struct.unpack_from(f"<{count + 1}Q", view, 4)
    offset = 4 + 8 * (count + 1)
    if offset + sum(lengths) != len(view):
        raise Malformed("a body whose lengths do not add up")
    meta = view[offset : offset + lengths[0]]
    offset += lengths[0]
    buffers = []
    for n in lengths[1:]:
        buffers.append(view[offset : offset + n])
        offset += n
    return meta, buffers


def deserialize(body: bytes | bytearray | memoryview, kind: bytes = b"v") -> Any:
    """The value of a body written by :func:`serialize` (buffers stay writable when ``body`` is a bytearray).

    ``kind`` ``b"d"`` reads plain data and can run no code; ``b"v"`` unpickles, which can: the
    store calls it only for objects this user's key signed or a folder the user trusts.
    """
    meta, buffers = split(body)
    if kind == b"d":
        return plain.decode(meta, buffers)
    return pickle.loads(meta, buffers=buffers)  # noqa: S301 - only signed (or trusted) objects reach here: see Store.get_value


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
    # an arbitrary object's attributes (``shape``, ``__len__``, even ``__class__``) are its own code, which may sleep or
    # raise anything: only the type is asked, and the well-known libraries' objects their shape
    t = type(value)
    if issubclass(t, types.ModuleType):
        return f"module {types.ModuleType.__getattribute__(value, '__name__')}"
    if _known(value):
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            dims = "×".join(f"{n:,}" for n in shape)
            dtype = getattr(value, "dtype", None)
            short = t.__qualname__
            if short == "DataFrame" or dtype is None or not isinstance(getattr(dtype, "name", None), str):
                return f"{short} {dims}".rstrip()
            return f"{short} {dims} {dtype.name}".rstrip()
    if issubclass(t, str):
        return f"str, {str.__len__(value):,} chars"
    for raw in (bytes, bytearray):
        if issubclass(t, raw):
            return f"{t.__name__}, {raw.__len__(value):,} bytes"
    for box in (list, tuple, set, frozenset, dict):
        if issubclass(t, box):
            return f"{t.__name__} of {box.__len__(value):,}"
    if t is types.FunctionType:
        return "function"
    if issubclass(t, type):
        return "class"
    return type_name(value)


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
