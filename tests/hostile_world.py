"""A session folder made by the package and then edited the way an attacker would: crafted world objects, records, links.

The payload is harmless and observable: unpickling it, or importing the planted module, writes
a marker file, so a test asserts that nothing ran by asserting the marker is absent. Objects
are named by their correct content hash (the store's hash check passes) and carry no
signature, a zeroed one, a forged one (the victim's own key id, copied from one of the
victim's objects, with a made-up signature) or a real signature from another key.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import secrets
import struct
from pathlib import Path
from typing import Any

from pi_jupyter.world import trust
from pi_jupyter.world.store import FOLDER_NAME

SIGNATURES = ("piw1", "unsigned", "forged", "other-key")


class Payload:
    """Unpickled, it writes ``marker`` (the one thing a test looks for)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def pickle_body(marker: str | os.PathLike[str]) -> bytes:
    """A value body as the store lays it out (no buffers), whose pickle runs the payload."""
    meta = pickle.dumps(Payload(os.fspath(marker)), protocol=5)
    return struct.pack("<IQ", 0, len(meta)) + meta


def plant(sessions: Path, body: bytes, signature: str, *, kind: bytes = b"v", victim_key: bytes | None = None) -> str:
    """Put ``body`` into the store of the session folder ``sessions`` under its correct ref; returns the ref."""
    full = hashlib.sha256(kind + body).digest()
    ref = full.hex()[:40]
    if signature == "piw1":
        head = struct.pack("<4sccQ", b"PIW1", kind, b"r", len(body))
    else:
        if signature == "unsigned":
            kid, mac = bytes(8), bytes(32)
        elif signature == "forged":
            assert victim_key is not None
            kid, mac = trust.key_id(victim_key), secrets.token_bytes(32)
        else:
            other = secrets.token_hex(32).encode()
            kid, mac = trust.key_id(other), trust.mac(other, kind, full)
        head = struct.pack("<4sccQ32s8s32s", b"PIW2", kind, b"r", len(body), full, kid, mac)
    path = sessions / FOLDER_NAME / "objects" / ref[:2] / ref[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body)
    return ref


def repoint(session_path: str | os.PathLike[str], old: str, new: str) -> None:
    """Make the record name ``new`` wherever it named ``old`` (a hand edit of the JSONL)."""
    text = Path(session_path).read_text()
    assert old in text
    Path(session_path).write_text(text.replace(old, new))


def add_slots(session_path: str | os.PathLike[str], slots: dict[str, Any]) -> None:
    """Add variables to the last world record of the session (``name -> slot``), as a hand edit would."""
    lines = Path(session_path).read_text().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        entry = json.loads(lines[i])
        world = ((entry.get("message") or {}).get("details") or {}).get("world")
        if isinstance(world, dict):
            world.setdefault("vars", []).extend({"name": k, "before": None, "after": v, "what": "module"} for k, v in slots.items())
            lines[i] = json.dumps(entry)
            Path(session_path).write_text("\n".join(lines) + "\n")
            return
    raise AssertionError("no world record to add to")


def key_file(folder: Path, name: str) -> str:
    """A key file path of one user (created on first use by the package, as the real one is)."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)
