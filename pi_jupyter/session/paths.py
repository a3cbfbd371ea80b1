"""Where sessions live and how their files are named, as in pi (pi-design §1.1)."""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def agent_dir() -> Path:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pi/agent``."""
    value = os.environ.get(AGENT_DIR_ENV)
    if value:
        return Path(os.path.expanduser(value))
    return Path.home() / ".pi" / "agent"


def sessions_root() -> Path:
    """``<agent dir>/sessions``: one folder per project below it."""
    return agent_dir() / "sessions"


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """pi's folder name for a working directory: ``/home/me/proj`` -> ``--home-me-proj--``.

    The mapping is pi's, lossy as pi's is (``/a-b`` and ``/a/b`` share a folder), because pi
    must find the same folder; each header records its real ``cwd``.
    """
    text = str(cwd)
    text = re.sub(r"^[/\\]", "", text)
    return "--" + re.sub(r"[/\\:]", "-", text) + "--"


def default_session_dir(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The per-project session folder pi uses for ``cwd`` (default: the current directory).

    Unlike pi, nothing is created here; the folder is made when a session is written.
    """
    return sessions_root() / encode_cwd(os.path.abspath(cwd if cwd is not None else os.getcwd()))


def session_file_name(timestamp_iso: str, session_id: str) -> str:
    """``<timestamp with : and . as ->_<session id>.jsonl``, pi's file name."""
    return f"{re.sub(r'[:.]', '-', timestamp_iso)}_{session_id}.jsonl"


def new_session_id() -> str:
    """A UUIDv7 (time-ordered), the kind of session id pi 0.7x writes."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")  # what secrets.token_bytes reads, without its import on every command
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))
