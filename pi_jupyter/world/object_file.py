"""The file of one world object: its header, who signed it, and its body read without believing a length it cannot back.

``PIW2`` (this version): magic, kind (``v`` a pickled value, ``d`` plain data, ``f`` a file's
bytes), codec (``r`` raw, ``z`` Zstandard), the body's length, the body's whole SHA-256 (the ref
is its first 40 hex digits), the signer's key id and the signature (see :mod:`.trust`), then the
body. ``PIW1`` (before objects were signed): magic, kind, codec, length, body.
"""

from __future__ import annotations

import struct
from typing import Any


class StoreError(Exception):
    """The store could not write or read an object; the message says what and where, in one line."""


MAGIC = b"PIW2"
OLD_MAGIC = b"PIW1"
"""Objects written before they were signed: readable, but a pickle among them is not loaded without trust."""
HEADER = struct.Struct("<4sccQ32s8s32s")  # magic, kind (v value, d plain data, f file), codec (r raw, z zstd), body length,
# the body's whole SHA-256 (the ref is its first 40 hex digits), the signer's key id, the signature
OLD_HEADER = struct.Struct("<4sccQ")
KINDS = (b"v", b"d", b"f")
GROWTH = 64
"""A compressed body is given room for this many times the file's size at first, and more only as its data comes."""


def compressor() -> Any:
    """The ``zstandard`` module (``None`` without it: raw objects still work)."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency; raw objects still work
        return None
    return zstandard


def read_header(fh: Any, name: str) -> tuple[bytes, bytes, int, bytes, bytes, bytes, int]:
    """``(kind, codec, body length, whole hash, key id, signature, header size)`` of an object's header."""
    magic = fh.read(4)
    if magic == MAGIC:
        rest = fh.read(HEADER.size - 4)
        if len(rest) < HEADER.size - 4:
            raise StoreError(f"{name} is cut short")
        _m, kind, codec, size, full, kid, signature = HEADER.unpack(magic + rest)
        header = HEADER.size
    elif magic == OLD_MAGIC:
        rest = fh.read(OLD_HEADER.size - 4)
        if len(rest) < OLD_HEADER.size - 4:
            raise StoreError(f"{name} is cut short")
        _m, kind, codec, size = OLD_HEADER.unpack(magic + rest)
        full = kid = signature = b""
        header = OLD_HEADER.size
    elif len(magic) < 4:
        raise StoreError(f"{name} is cut short")
    else:
        raise StoreError(f"{name} is not one of the world's")
    if kind not in KINDS or codec not in (b"r", b"z"):
        raise StoreError(f"{name} is not one of the world's")
    return kind, codec, size, full, kid, signature, header


def unzip(fh: Any, size: int, stored: int, name: str) -> tuple[bytearray, int]:
    """Decompress the rest of ``fh`` (``stored`` bytes) into a body of ``size`` bytes; ``(body, bytes filled)``.

    The length in the header is only believed as far as the data goes: the frame must declare
    the same size, and room is made as the data comes (at first :data:`GROWTH` times what is
    stored), so a few bytes claiming gigabytes never make the kernel allocate them.
    """
    zstd = compressor()
    if zstd is None:  # pragma: no cover
        raise StoreError(f"{name} is compressed with Zstandard; pip install zstandard")
    start = fh.tell()
    frame = fh.read(18)
    fh.seek(start)
    try:
        declared = zstd.frame_content_size(frame)
    except zstd.ZstdError:
        raise StoreError(f"{name} is damaged (it does not decompress)") from None
    if declared != size:
        raise StoreError(f"{name} is not one of the world's")
    body = bytearray(min(size, max(GROWTH * stored, 1 << 20)))
    got = 0
    try:
        with zstd.ZstdDecompressor().stream_reader(fh, read_across_frames=False) as reader:
            while got < size:
                if got == len(body):
                    body.extend(bytes(min(len(body), size - len(body))))
                with memoryview(body) as view:
                    n = reader.readinto(view[got:])
                if not n:
                    break
                got += n
            extra = reader.read(1) if got == size else b""
    except zstd.ZstdError:
        raise StoreError(f"{name} is damaged (it does not decompress)") from None
    if extra:
        raise StoreError(f"{name} is not one of the world's")
    if got < len(body):
        del body[got:]
    return body, got
