"""The world's content-addressed store: one folder of objects beside the session files.

Each object is a value (see :mod:`.values`) or a file's bytes, named by the SHA-256 of its
content, so the same data is kept once however many branches, tool calls or sessions refer to
it. Objects are compressed with Zstandard (level 1) when a sample shows it pays; random floats
are kept as they are. Writes go to a temporary file that is renamed into place, so a full disk
or a crash never leaves half an object under a real name.

Every object carries its whole content hash and this user's signature of it (see
:mod:`.trust`): a value that needs pickle is loaded only when this user's key signed it or the
user trusts the folder; plain data (:mod:`.plain`) and files' bytes need neither. The folder
may have come from elsewhere, so it is walked without following links (:mod:`.folder`): only
regular files are read, a length in a header is checked against the file's size, and nothing
is written or removed through a link.

The folder is ``.pi-world`` in the folder of the session file (every session of that folder
shares it); an in-memory session keeps its objects in memory. ``pi-jupyter gc`` removes the
objects no session file of the folder refers to (:mod:`.gc`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import folder as fs
from . import trust
from .object_file import HEADER, MAGIC, StoreError, compressor, read_header, unzip
from .record import shown
from .values import Serialized, deserialize, format_bytes

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FOLDER_NAME = ".pi-world"
_SAMPLE = 256 * 1024
_SMALL = 4096


_memory_stores: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()
_memory_lock = threading.Lock()


class Missing(StoreError):
    """An object the record refers to is not in the store (a session copied without its ``.pi-world`` folder)."""


class Untrusted(StoreError):
    """An object that needs pickle, signed by another key or by none: it is not loaded (loading it could run code)."""

    def __init__(self, why: str, folder: Path | None) -> None:
        self.why = why
        self.folder = folder
        """The session folder whose trust would load it."""
        self.hint = trust.hint(folder)
        super().__init__(f"{why}; `{self.hint}` loads that folder's objects, which can run code")


def file_digest(data: bytes) -> str:
    """The ref of a file's bytes."""
    return _file_hash(data).hexdigest()[:40]


def _file_hash(data: bytes) -> Any:
    h = hashlib.sha256()
    h.update(b"f")
    h.update(data)
    return h


@dataclass
class _Object:
    kind: bytes
    body: bytearray
    signer: str
    """``"me"``, ``"another key"``, ``"unsigned"`` (also every ``PIW1`` object), ``"forged"``; ``"me"`` in memory."""


class Store:
    """Objects by ref in ``folder`` (``None``: in memory)."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._root = os.fspath(self.folder) if self.folder is not None else ""
        self._objects_id: tuple[int, int] | None = None
        """Device and inode of ``objects``, as a walk that followed no link found it (see :meth:`_dir`)."""
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

    @property
    def session_folder(self) -> Path | None:
        """The folder of the session files this store serves (what ``%pi world trust`` names)."""
        return self.folder.parent if self.folder is not None else None

    # -------------------------------------------------------------- paths
    def path(self, ref: str) -> Path:
        """Where object ``ref`` lives on disk (for people and tests: the store itself never opens it by this path)."""
        assert self.folder is not None
        return self.folder / "objects" / ref[:2] / ref[2:]

    @contextlib.contextmanager
    def _dir(self, ref: str | None, *, create: bool = False) -> Iterator[Any]:
        """The folder of object ``ref`` (``None``: ``objects`` itself), opened without following links.

        After one walk has shown where ``objects`` is, an object's folder is opened by its path
        (``O_NOFOLLOW`` on its last part) and used only when its parent (``..``, asked of the
        opened folder itself) is that same ``objects``: a link anywhere on the way leads
        elsewhere and falls back to the walk, which refuses it. Saving many values then costs
        one open per object instead of three.
        """
        quick = self._quick(ref) if ref is not None else None
        if quick is not None:
            try:
                yield quick
            finally:
                fs.close(quick)
            return
        with self._dirs(ref, create=create) as (objects, folder):
            if ref is not None and isinstance(objects, int):
                st = os.fstat(objects)
                self._objects_id = (st.st_dev, st.st_ino)
            yield folder

    def _quick(self, ref: str) -> Any:
        if self._objects_id is None or not fs.SUPPORTED:
            return None
        try:
            handle = fs.open_dir(f"{self._root}{os.sep}objects{os.sep}{ref[:2]}")
        except OSError:
            return None
        try:
            st = os.stat("..", dir_fd=handle, follow_symlinks=False)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._objects_id:
            fs.close(handle)
            return None
        return handle

    @contextlib.contextmanager
    def _dirs(self, ref: str | None, *, create: bool = False) -> Iterator[tuple[Any, Any]]:
        """``objects`` and the folder of object ``ref`` (``objects`` again for ``None``), opened in one walk."""
        assert self.folder is not None
        parts = ["objects"] if ref is None else ["objects", ref[:2]]
        with fs.walk(self._root, parts, create=create) as handles:
            yield handles[0], handles[-1]

    def _stat(self, ref: str) -> os.stat_result | None:
        if not _is_ref(ref):
            return None
        try:
            with self._dir(ref) as d:
                st = fs.lstat(ref[2:], d)
        except OSError:
            return None
        return st if _regular(st) else None

    def has(self, ref: str) -> bool:
        """True when object ``ref`` is stored."""
        if self.folder is None:
            return ref in self._memory
        return self._stat(ref) is not None

    def size(self, ref: str) -> int | None:
        """Bytes object ``ref`` takes in the store (``None``: not there)."""
        if self.folder is None:
            item = self._memory.get(ref)
            return len(item[1]) if item is not None else None
        st = self._stat(ref)
        return st.st_size if st is not None else None

    def mtime(self, ref: str) -> float | None:
        """When object ``ref`` was last saved or used again (``None``: not there)."""
        st = self._stat(ref) if self.folder is not None else None
        return st.st_mtime if st is not None else None

    def take(self, other: Store, refs: Iterable[Any]) -> int:
        """Copy the objects ``refs`` (slots; only refs count) from ``other`` when this store lacks them; returns how many.

        An object keeps the signature it has: a copy never makes a stranger's object this user's.
        """
        if other.folder == self.folder and other.folder is not None:
            return 0
        copied = 0
        for ref in refs:
            if not isinstance(ref, str) or self.has(ref) or not other.has(ref):
                continue
            try:
                if self.folder is not None and other.folder is not None:
                    self._write_raw(ref, other._read_raw(ref))
                else:
                    obj = other._read(ref)
                    if self.folder is None and obj.kind == b"v" and not other._may_unpickle(ref, obj):
                        continue  # in memory everything loads: a stranger's pickle stays where it is
                    self._write(ref, obj.kind, [bytes(obj.body)], len(obj.body), _full(obj.kind, obj.body))
            except StoreError:
                continue
            copied += 1
        return copied

    # -------------------------------------------------------------- writing
    def put_value(self, value: Serialized) -> str:
        """Store a serialized value (once); returns its ref."""
        if not self._refresh(value.digest, value.kind):
            self._write(value.digest, value.kind, value.parts(), value.size, value.full)
        return value.digest

    def put_file(self, data: bytes) -> str:
        """Store a file's bytes (once); returns their ref."""
        full = _file_hash(data).digest()
        ref = full.hex()[:40]
        if not self._refresh(ref, b"f"):
            self._write(ref, b"f", [data], len(data), full)
        return ref

    def _refresh(self, ref: str, kind: bytes) -> bool:
        """True when object ``ref`` is stored (and, for a pickle, signed by this user); it is then made young again.

        A gc keeps it until the entry that uses it is written. A pickle someone else signed
        (or nobody: an earlier version's) is written again with this user's signature, since
        this kernel has just made the same value itself.
        """
        if self.folder is None:
            return ref in self._memory
        try:  # by path, which may go through a link: only to skip a write; what is read or touched is walked without links
            os.lstat(f"{self._root}{os.sep}objects{os.sep}{ref[:2]}{os.sep}{ref[2:]}")
        except OSError:
            return False  # written anew: a new object is young, and gc leaves young objects alone
        if self._stat(ref) is None:
            return False
        if kind == b"v" and self._signer(ref) != "me":
            return False
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
                if not _is_ref(ref):
                    continue
                try:
                    with self._dir(ref) as d:
                        fs.touch(ref[2:], d)
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
        try:
            with fs.walk(self._root, [], create=True) as (root,):
                fd, _st = fs.open_file("gc.lock", root, os.O_RDWR | os.O_CREAT)
        except OSError:
            yield  # a read-only store (nobody removes from it either), or a lock that is not a plain file
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)  # its own open file: threads do not share it
            yield
        finally:
            os.close(fd)

    def _write(self, ref: str, kind: bytes, parts: Sequence[bytes | memoryview], size: int, full: bytes) -> None:
        if self.folder is None:
            with self._lock:
                self._memory[ref] = (kind, b"".join(bytes(p) for p in parts))
            return
        codec, body = self._encode(parts, size)
        kid, signature = trust.sign(kind, full)
        self._put(ref, size, [HEADER.pack(MAGIC, kind, codec, size, full, kid, signature)], body)

    def _write_raw(self, ref: str, data: bytes) -> None:
        self._put(ref, len(data), [data], iter(()))

    def _put(self, ref: str, size: int, head: list[bytes], body: Iterator[bytes | memoryview]) -> None:
        """Write an object whole under its name, or leave nothing (a full disk, a crash): a temporary file renamed into place."""
        tmp = f".tmp-{uuid.uuid4().hex}"
        try:
            with self._dir(ref, create=True) as target:
                fd, _st = fs.open_file(tmp, target, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                try:
                    with os.fdopen(fd, "wb", closefd=False) as fh:
                        for first in head:
                            fh.write(first)
                        for piece in body:
                            fh.write(piece)
                    fs.rename(tmp, target, ref[2:], target)
                except BaseException:
                    with contextlib.suppress(OSError):
                        fs.unlink(tmp, target)
                    raise
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreError(f"the disk is full: {format_bytes(size)} could not be saved in {self.folder}") from None
            raise StoreError(f"could not save in {self.folder}: {exc.strerror or exc}") from None

    def _encode(self, parts: Sequence[bytes | memoryview], size: int) -> tuple[bytes, Iterator[bytes | memoryview]]:
        zstd = compressor()
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
    def _open(self, ref: str) -> tuple[int, os.stat_result]:
        if not _is_ref(ref):  # a slot of a record: any text at all, shown escaped, never used as a path
            raise StoreError(f"the saved object {shown(ref[:12])} is not named as the world names objects")
        name = f"the saved object {ref[:12]}"
        try:
            with self._dir(ref) as d:
                return fs.open_file(ref[2:], d)
        except FileNotFoundError:
            raise Missing(f"object {ref[:12]} is not in {self.folder}") from None
        except fs.NotFollowed as exc:  # a link, a pipe, a device: never opened, never followed
            raise StoreError(f"{name} is not one of the world's (it is {exc.strerror})") from None
        except OSError:
            raise StoreError(f"{name} cannot be read") from None

    def _read_raw(self, ref: str) -> bytes:
        fd, st = self._open(ref)
        try:
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(st.st_size)
        finally:
            os.close(fd)
        if len(data) != st.st_size:
            raise StoreError(f"the saved object {ref[:12]} is cut short")
        return data

    def _read(self, ref: str) -> _Object:
        """The kind and body of object ``ref``, checked against its hash, and who signed it; :class:`StoreError` names what is wrong."""
        if self.folder is None:
            try:
                kind, data = self._memory[ref]
            except KeyError:
                raise Missing(f"object {ref[:12]} is not in memory") from None
            return _Object(kind, bytearray(data), "me")
        name = f"the saved object {ref[:12]}"
        fd, st = self._open(ref)
        try:
            with os.fdopen(fd, "rb", closefd=False) as fh:
                kind, codec, size, full, kid, signature, header = read_header(fh, name)
                if not full.hex().startswith(ref) and full:
                    raise StoreError(f"{name} is damaged (its content does not match its hash)")
                if codec == b"z":
                    body, got = unzip(fh, size, st.st_size - header, name)
                else:
                    if size != st.st_size - header:
                        raise StoreError(f"{name} is cut short" if size > st.st_size - header else f"{name} is not one of the world's")
                    body = bytearray(size)
                    got = fh.readinto(body)
        except (MemoryError, OverflowError):  # a length no object has
            raise StoreError(f"{name} is not one of the world's") from None
        except OSError:
            raise StoreError(f"{name} cannot be read") from None
        finally:
            os.close(fd)
        if got != size:
            raise StoreError(f"{name} is cut short")
        digest = hashlib.sha256(kind)  # the ref is the hash of the kind and the body: a changed byte shows
        digest.update(body)
        whole = digest.digest()
        if whole.hex()[:40] != ref or (full and whole != full):
            raise StoreError(f"{name} is damaged (its content does not match its hash)")
        return _Object(kind, body, trust.signer(kind, whole, kid, signature) if full else "unsigned")

    def _signer(self, ref: str) -> str:
        """Who signed object ``ref``, from its header alone (``"unsigned"`` when it cannot be read)."""
        return self._header_of(ref)[1]

    def _header_of(self, ref: str) -> tuple[bytes, str]:
        """``(kind, signer)`` of object ``ref`` from its header alone (``(b"", "unsigned")`` when it cannot be read)."""
        try:
            fd, _st = self._open(ref)
        except StoreError:
            return b"", "unsigned"
        try:
            with os.fdopen(fd, "rb", closefd=False) as fh:
                kind, _codec, _size, full, kid, signature, _h = read_header(fh, "")
        except (StoreError, OSError):
            return b"", "unsigned"
        finally:
            os.close(fd)
        return kind, trust.signer(kind, full, kid, signature) if full and full.hex().startswith(ref) else "unsigned"

    def strangers(self) -> list[str]:
        """The objects that need pickle and that this user's key did not sign (what trusting the folder would load)."""
        return [ref for ref, _size in self.refs() if self._header_of(ref) in ((b"v", "another key"), (b"v", "unsigned"), (b"v", "forged"))]

    def _may_unpickle(self, ref: str, obj: _Object) -> bool:
        if obj.signer == "me":
            return True
        folder = self.session_folder
        return folder is not None and trust.is_trusted(folder, ref)

    def get_value(self, ref: str) -> Any:
        """The value stored as ``ref`` (a fresh copy each time).

        A value that needs pickle is loaded only when this user's key signed it or the user
        trusts the folder; otherwise :class:`Untrusted` says whose it is and how to trust it.
        """
        obj = self._read(ref)
        if obj.kind == b"v" and not self._may_unpickle(ref, obj):
            raise Untrusted(_whose(obj.signer), self.session_folder)
        if obj.kind not in (b"v", b"d"):
            raise StoreError(f"the saved object {ref[:12]} is a file's content, not a value")
        return deserialize(obj.body, obj.kind)

    def get_file(self, ref: str) -> bytes:
        """The file bytes stored as ``ref``."""
        return bytes(self._read(ref).body)

    def loads_without_trust(self, ref: str) -> bool | None:
        """Whether :meth:`get_value` would load ``ref`` (``None``: it cannot be read at all); reads the object, loads nothing."""
        try:
            obj = self._read(ref)
        except StoreError:
            return None
        return obj.kind != b"v" or self._may_unpickle(ref, obj)

    # -------------------------------------------------------------- space
    def leftovers(self) -> Iterator[tuple[str, int, float]]:
        """Temporary files of writes that never finished (a crash, a killed kernel): ``(name, bytes, mtime)``, names as ``ab/.tmp-…``."""
        if self.folder is None:
            return
        found: list[tuple[str, int, float]] = []
        try:
            with self._dir(None) as objects:
                found += [(n, st.st_size, st.st_mtime) for n, st in fs.entries(objects) if n.startswith(".tmp-") and _regular(st)]
                for sub in self._subfolders(objects):
                    with contextlib.suppress(OSError):
                        handle = fs.open_dir(sub, objects)
                        try:
                            found += [
                                (f"{sub}/{n}", st.st_size, st.st_mtime)
                                for n, st in fs.entries(handle)
                                if n.startswith(".tmp-") and _regular(st)
                            ]
                        finally:
                            fs.close(handle)
        except OSError:
            return
        yield from found

    def remove_leftover(self, name: str) -> None:
        """Delete a leftover temporary file (never through a link)."""
        sub, _, base = name.rpartition("/")
        if self.folder is None or not base.startswith(".tmp-") or os.sep in base or (sub and not (len(sub) == 2 and _hex(sub))):
            return
        with contextlib.suppress(OSError), self._dir(None) as objects:
            folder = fs.open_dir(sub, objects) if sub else objects
            try:
                if _regular(fs.lstat(base, folder)):
                    fs.unlink(base, folder)
            finally:
                if sub:
                    fs.close(folder)

    @staticmethod
    def _subfolders(objects: Any) -> list[str]:
        return sorted(n for n, st in fs.entries(objects) if _is_dir(st) and len(n) == 2 and _hex(n))

    def refs(self) -> Iterator[tuple[str, int]]:
        """Every stored object: ``(ref, bytes on disk)``; links and anything but regular files are not objects, and not followed."""
        if self.folder is None:
            for ref, (_k, data) in list(self._memory.items()):
                yield ref, len(data)
            return
        try:
            with self._dir(None) as objects:
                for sub in self._subfolders(objects):
                    try:
                        handle = fs.open_dir(sub, objects)
                    except OSError:
                        continue  # a link or gone: never listed, never followed
                    try:
                        found = [(sub + n, st.st_size) for n, st in fs.entries(handle) if _regular(st) and _is_ref(sub + n)]
                    finally:
                        fs.close(handle)
                    yield from found
        except OSError:
            return

    def remove(self, ref: str) -> None:
        """Delete object ``ref`` (``pi-jupyter gc``); a link where it should be is removed itself, never followed."""
        if self.folder is None:
            self._memory.pop(ref, None)
            return
        if not _is_ref(ref):
            return
        with contextlib.suppress(FileNotFoundError, fs.NotFollowed), self._dir(ref) as d:
            fs.unlink(ref[2:], d)


def _whose(signer: str) -> str:
    if signer == "forged":
        return "its signature does not match: it was changed after it was saved"
    if signer == "unsigned":
        return "saved by someone else, or by pi-jupyter before objects were signed"
    return "saved by someone else"


def _full(kind: bytes, body: bytes | bytearray) -> bytes:
    h = hashlib.sha256(kind)
    h.update(body)
    return h.digest()


def _is_ref(ref: str) -> bool:
    return len(ref) == 40 and _hex(ref)


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _regular(st: os.stat_result) -> bool:
    import stat as _stat

    return _stat.S_ISREG(st.st_mode)


def _is_dir(st: os.stat_result) -> bool:
    import stat as _stat

    return _stat.S_ISDIR(st.st_mode)


def _prefix(parts: Sequence[bytes | memoryview]) -> Iterator[tuple[int, bytes | memoryview]]:
    """``(bytes before this part, part)`` until the sample size is reached."""
    seen = 0
    for p in parts:
        if seen >= _SAMPLE:
            return
        yield seen, p
        seen += memoryview(p).nbytes
