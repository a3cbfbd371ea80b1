"""The world's content-addressed store: one folder of objects beside the session files.

Each object is a value (see :mod:`.values`) or a file's bytes, named by the SHA-256 of its
content, so the same data is kept once however many branches, tool calls or sessions refer to
it. Objects are compressed with Zstandard (level 1) when a sample shows it pays; random floats
are kept as they are. Writes go to a temporary file that is renamed into place, so a full disk
or a crash never leaves half an object under a real name.

The folder is ``.pi-world`` in the folder of the session file (every session of that folder
shares it); an in-memory session keeps its objects in memory. ``pi-jupyter gc`` removes the
objects no session file of the folder refers to (:mod:`.gc`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import struct
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .values import Serialized, deserialize, format_bytes

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FOLDER_NAME = ".pi-world"
MAGIC = b"PIW1"
_HEADER = struct.Struct("<4sccQ")  # magic, kind (v value, f file), codec (r raw, z zstd), body length
_SAMPLE = 256 * 1024
_SMALL = 4096


_memory_stores: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()
_memory_lock = threading.Lock()


class StoreError(Exception):
    """The store could not write or read an object; the message says what and where, in one line."""


class Missing(StoreError):
    """An object the record refers to is not in the store (a session copied without its ``.pi-world`` folder)."""


def file_digest(data: bytes) -> str:
    """The ref of a file's bytes."""
    h = hashlib.sha256()
    h.update(b"f")
    h.update(data)
    return h.hexdigest()[:40]


def _compressor() -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency; raw objects still work
        return None
    return zstandard


class Store:
    """Objects by ref in ``folder`` (``None``: in memory)."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._objects = os.path.join(os.fspath(self.folder), "objects") if self.folder is not None else None
        self._made: set[str] = set()
        """Object folders (``ab``) known to exist."""
        self._memory: dict[str, tuple[bytes, bytes]] = {}
        self._lock = threading.Lock()

    @classmethod
    def beside(cls, session_path: str | None) -> Store:
        """The store of a session file (``None``: a store in memory)."""
        if session_path is None:
            return cls(None)
        return cls(Path(os.path.abspath(session_path)).parent / FOLDER_NAME)

    @classmethod
    def of(cls, session: Any) -> Store:
        """The store of ``session``: beside its file, or, for a session in memory, one in memory shared by all its users."""
        path = getattr(session, "path", None)
        if path is not None:
            return cls.beside(path)
        key = str(getattr(session, "id", ""))
        with _memory_lock:
            store = _memory_stores.get(key)
            if store is None:
                store = _memory_stores[key] = cls(None)
            return store

    def __repr__(self) -> str:
        return f"<Store {self.folder or 'in memory'}>"

    # -------------------------------------------------------------- paths
    def path(self, ref: str) -> Path:
        """Where object ``ref`` lives on disk."""
        return Path(self._where(ref))

    def _where(self, ref: str) -> str:
        # plain strings: a call that sets thousands of names looks objects up thousands of times
        assert self._objects is not None
        return f"{self._objects}{os.sep}{ref[:2]}{os.sep}{ref[2:]}"

    def has(self, ref: str) -> bool:
        """True when object ``ref`` is stored."""
        if self.folder is None:
            return ref in self._memory
        return os.path.exists(self._where(ref))

    def size(self, ref: str) -> int | None:
        """Bytes object ``ref`` takes in the store (``None``: not there)."""
        if self.folder is None:
            item = self._memory.get(ref)
            return len(item[1]) if item is not None else None
        try:
            return self.path(ref).stat().st_size
        except OSError:
            return None

    def take(self, other: Store, refs: Iterable[Any]) -> int:
        """Copy the objects ``refs`` (slots; only refs count) from ``other`` when this store lacks them; returns how many."""
        if other.folder == self.folder and other.folder is not None:
            return 0
        copied = 0
        for ref in refs:
            if not isinstance(ref, str) or self.has(ref) or not other.has(ref):
                continue
            if self.folder is None or other.folder is None:
                kind, body = other._read(ref)
                self._write(ref, kind, [bytes(body)], len(body))
            else:
                self.path(ref).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(other.path(ref), self.path(ref))
            copied += 1
        return copied

    # -------------------------------------------------------------- writing
    def put_value(self, value: Serialized) -> str:
        """Store a serialized value (once); returns its ref."""
        if not self._refresh(value.digest):
            self._write(value.digest, b"v", value.parts(), value.size)
        return value.digest

    def put_file(self, data: bytes) -> str:
        """Store a file's bytes (once); returns their ref."""
        ref = file_digest(data)
        if not self._refresh(ref):
            self._write(ref, b"f", [data], len(data))
        return ref

    def _refresh(self, ref: str) -> bool:
        """True when object ``ref`` is stored; it is then made young again, so a gc keeps it until the entry that uses it is written."""
        if self.folder is None:
            return ref in self._memory
        if not os.path.exists(self._where(ref)):
            return False  # written anew: a new object is young, and gc leaves young objects alone
        return bool(self.keep([ref]))

    def keep(self, refs: Iterable[Any]) -> int:
        """Make the stored objects among ``refs`` (slots; only refs count) young again; returns how many are stored.

        Taken under the store's shared lock: a gc (which holds it exclusively while it
        removes) either removes an object before this, and the caller writes it again, or
        sees it young after this and keeps it.
        """
        wanted = [r for r in refs if isinstance(r, str)]
        if self.folder is None or not wanted:
            return sum(1 for r in wanted if r in self._memory)
        found = 0
        with self.locked(exclusive=False):
            for ref in wanted:
                try:
                    os.utime(self._where(ref))
                    found += 1
                except OSError:
                    continue
        return found

    @contextlib.contextmanager
    def locked(self, *, exclusive: bool) -> Iterator[None]:
        """The store's lock (``.pi-world/gc.lock``): shared by writers that use an object again, exclusive for a gc."""
        if fcntl is None or self.folder is None:  # pragma: no cover - Windows: no advisory locks
            yield
            return
        lock = os.path.join(self.folder, "gc.lock")
        try:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                os.makedirs(self.folder, exist_ok=True)
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            yield  # a read-only store: nobody removes from it either
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)  # its own open file: threads do not share it
            yield
        finally:
            os.close(fd)

    def _write(self, ref: str, kind: bytes, parts: Sequence[bytes | memoryview], size: int) -> None:
        codec, body = self._encode(parts, size)
        if self.folder is None:
            with self._lock:
                self._memory[ref] = (kind, b"".join(bytes(p) for p in parts))
            return
        assert self._objects is not None
        target = self._where(ref)
        tmp = os.path.join(self._objects, f".tmp-{uuid.uuid4().hex}")
        try:
            if ref[:2] not in self._made:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                self._made.add(ref[:2])
            try:
                fh = open(tmp, "wb")
            except FileNotFoundError:  # the store was deleted meanwhile: make it again
                self._made.clear()
                os.makedirs(self._objects, exist_ok=True)
                fh = open(tmp, "wb")
            with fh:
                fh.write(_HEADER.pack(MAGIC, kind, codec, size))
                for piece in body:
                    fh.write(piece)
            try:
                os.replace(tmp, target)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.replace(tmp, target)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreError(f"the disk is full: {format_bytes(size)} could not be saved in {self.folder}") from None
            raise StoreError(f"could not save in {self.folder}: {exc.strerror or exc}") from None

    def _encode(self, parts: Sequence[bytes | memoryview], size: int) -> tuple[bytes, Iterator[bytes | memoryview]]:
        zstd = _compressor()
        if zstd is None or self.folder is None or size < _SMALL:
            return b"r", iter(parts)  # a few bytes: a compressor would cost more than it saves
        if size > _SAMPLE:
            sample = b"".join(bytes(memoryview(p)[: _SAMPLE - i]) for i, p in _prefix(parts))[:_SAMPLE]
            if len(zstd.ZstdCompressor(level=1).compress(sample)) > 0.9 * len(sample):
                return b"r", iter(parts)  # random numbers: compression would cost time and save nothing

        def compressed() -> Iterator[bytes]:
            cobj = zstd.ZstdCompressor(level=1).compressobj(size=size)
            for p in parts:
                out = cobj.compress(p)
                if out:
                    yield out
            yield cobj.flush()

        return b"z", compressed()

    # -------------------------------------------------------------- reading
    def _read(self, ref: str) -> tuple[bytes, bytearray]:
        """The kind and body of object ``ref``, checked against its hash; :class:`StoreError` names what is wrong in a few words."""
        if self.folder is None:
            try:
                kind, data = self._memory[ref]
            except KeyError:
                raise Missing(f"object {ref[:12]} is not in memory") from None
            return kind, bytearray(data)
        path = self.path(ref)
        name = f"the saved object {ref[:12]}"
        try:
            with open(path, "rb") as fh:
                head = fh.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    raise StoreError(f"{name} is cut short")
                magic, kind, codec, size = _HEADER.unpack(head)
                if magic != MAGIC or kind not in (b"v", b"f") or codec not in (b"r", b"z"):
                    raise StoreError(f"{name} is not one of the world's")
                body = bytearray(size)
                if codec == b"z":
                    zstd = _compressor()
                    if zstd is None:  # pragma: no cover
                        raise StoreError(f"{name} is compressed with Zstandard; pip install zstandard")
                    got = _unzip(zstd, fh, body, name)
                else:
                    got = fh.readinto(body)
        except FileNotFoundError:
            raise Missing(f"object {ref[:12]} is not in {self.folder}") from None
        except (MemoryError, OverflowError):  # a length no object has
            raise StoreError(f"{name} is not one of the world's") from None
        except OSError:
            raise StoreError(f"{name} cannot be read") from None
        if got != size:
            raise StoreError(f"{name} is cut short")
        digest = hashlib.sha256(kind)  # the ref is the hash of the kind and the body: a changed byte shows
        digest.update(body)
        if digest.hexdigest()[:40] != ref:
            raise StoreError(f"{name} is damaged (its content does not match its hash)")
        return kind, body

    def get_value(self, ref: str) -> Any:
        """The value stored as ``ref`` (a fresh copy each time)."""
        _kind, body = self._read(ref)
        return deserialize(body)

    def get_file(self, ref: str) -> bytes:
        """The file bytes stored as ``ref``."""
        _kind, body = self._read(ref)
        return bytes(body)

    # -------------------------------------------------------------- space
    def leftovers(self) -> Iterator[Path]:
        """Temporary files of writes that never finished (a crash, a killed kernel)."""
        if self.folder is None:
            return
        root = self.folder / "objects"
        if root.is_dir():
            yield from (p for p in root.iterdir() if p.name.startswith(".tmp-") and p.is_file())

    def refs(self) -> Iterator[tuple[str, int]]:
        """Every stored object: ``(ref, bytes on disk)``."""
        if self.folder is None:
            for ref, (_k, data) in list(self._memory.items()):
                yield ref, len(data)
            return
        root = self.folder / "objects"
        if not root.is_dir():
            return
        for sub in sorted(root.iterdir()):
            if not sub.is_dir():
                continue
            for obj in sub.iterdir():
                try:
                    yield sub.name + obj.name, obj.stat().st_size
                except OSError:
                    continue

    def remove(self, ref: str) -> None:
        """Delete object ``ref`` (``pi-jupyter gc``)."""
        if self.folder is None:
            self._memory.pop(ref, None)
            return
        try:
            self.path(ref).unlink()
        except FileNotFoundError:
            pass


def _unzip(zstd: Any, fh: Any, body: bytearray, name: str) -> int:
    """Decompress ``fh`` into ``body``; the bytes it filled."""
    view, got = memoryview(body), 0
    try:
        with zstd.ZstdDecompressor().stream_reader(fh) as reader:
            while got < len(body):
                n = reader.readinto(view[got:])
                if not n:
                    break
                got += n
    except zstd.ZstdError:
        raise StoreError(f"{name} is damaged (it does not decompress)") from None
    return got


def _prefix(parts: Sequence[bytes | memoryview]) -> Iterator[tuple[int, bytes | memoryview]]:
    """``(bytes before this part, part)`` until the sample size is reached."""
    seen = 0
    for p in parts:
        if seen >= _SAMPLE:
            return
        yield seen, p
        seen += memoryview(p).nbytes
