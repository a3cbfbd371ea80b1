"""Reading back the lines of entries that were opened as stubs (see :mod:`.stubs`).

:meth:`Session.open` reads a large file's message lines as stubs and keeps the descriptor it
read the file through: the lines are read back by offset from that same file, even after
another program renamed a new file over its path. A line that is no longer the entry it was
(a program rewrote the file in place) raises :class:`SessionChangedError`: open the file again.
"""

from __future__ import annotations

import contextlib
import os
from typing import Protocol

import orjson

from .jsonl import loads_line
from .kinds import RawEntry
from .report import SessionChangedError, SessionFileError


class LineSource(Protocol):
    """Where the whole lines of entries read as stubs are read back from (see :mod:`.lazy`)."""

    def read(self, offset: int, length: int) -> bytes:
        """The bytes of one line."""
        ...

    def whole(self) -> bytes:
        """Every byte that was indexed, in one read."""
        ...

    def parse(self, raw: bytes | memoryview, entry_id: str) -> RawEntry:
        """The entry of a line read back; raises when it is not the entry ``entry_id`` any more (the file changed)."""
        ...

    def done(self) -> None:
        """Every stub was read back: the source is not needed any more."""
        ...


class FileLines:
    """The lines of one opened session file, read back by offset (a :class:`~.index.LineSource`)."""

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._size = size

    def read(self, offset: int, length: int) -> bytes:
        """The bytes of one line."""
        raw = os.pread(self._open(), length, offset)
        if len(raw) != length:
            raise self._changed(f"line at byte {offset} is cut short")
        return raw

    def whole(self) -> bytes:
        """Every byte that was indexed, in one read."""
        fd = self._open()
        chunks = []
        done = 0
        while done < self._size:
            chunk = os.pread(fd, self._size - done, done)
            if not chunk:
                raise self._changed("it is shorter than when it was opened")
            chunks.append(chunk)
            done += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def parse(self, raw: bytes | memoryview, entry_id: str) -> RawEntry:
        """The entry of a line read back; :class:`SessionChangedError` when it is not ``entry_id`` any more."""
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            # what orjson refuses and JSON.parse reads (1e400, a 5,000-digit number): read as when it was opened
            entry, problem = loads_line(raw)
            if entry is None and _names(raw, entry_id):  # the line is still there: say what is wrong with it
                raise SessionFileError(self.path, f"the line of entry {entry_id} cannot be read back ({problem})") from None
        if type(entry) is not dict or entry.get("id") != entry_id:
            raise self._changed(f"entry {entry_id} is not where it was")
        return entry

    def done(self) -> None:
        """Every stub was read back: close the descriptor."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _open(self) -> int:
        if self._fd is None:
            raise self._changed("it was closed")
        return self._fd

    def _changed(self, detail: str) -> SessionChangedError:
        return SessionChangedError(
            f"{self.path}: another program rewrote the file since it was opened ({detail}); open it again to read it"
        )

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order
        if getattr(self, "_fd", None) is not None:
            with contextlib.suppress(OSError):
                self.done()


def _names(raw: bytes | memoryview, entry_id: str) -> bool:
    return orjson.dumps({"id": entry_id})[1:-1] in bytes(raw)


__all__ = ["FileLines", "LineSource"]
