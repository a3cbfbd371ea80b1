"""Where a notebook went while its kernel ran: Jupyter Server's renames, kept for the kernels it started.

Jupyter Server tells a kernel its notebook's path once, at start (``JPY_SESSION_NAME``); a
rename or a move in JupyterLab's file browser (or *File > Rename*, or *Save As* of an untitled
notebook) reaches the kernel only at its next restart. So the server extension
(:mod:`.save_hook`) listens to the server's own ``contents_service`` events and appends each
rename to ``pi-jupyter-moves.jsonl`` in the Jupyter runtime folder (private to the user, where
the kernels' connection files are); the kernel follows its start path through the renames made
since it started (:func:`follow`), so a notebook renamed before its first ``%%pi`` names its
session after its new name, and one renamed while its kernel runs takes its session's name
along. Without the server extension (VS Code, a bare kernel) the path is the one the front end
gave. No IPython or Jupyter Server import at module level (both sides use it).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

LOG_NAME = "pi-jupyter-moves.jsonl"
CONTENTS_EVENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
KEEP = 500
"""How many renames the log keeps (it is cut to this many once it holds twice as many)."""
MAX_LOG_BYTES = 4 * 1024 * 1024


def runtime_folders() -> list[Path]:
    """Where the server that started this kernel keeps its runtime files: beside the connection file, then Jupyter's runtime folder."""
    out: list[Path] = []
    try:
        from ipykernel.connect import get_connection_file

        out.append(Path(get_connection_file()).parent)
    except Exception:  # noqa: BLE001 - not in a kernel, or an ipykernel without it
        pass
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        out.append(Path(jupyter_runtime_dir()))
    except ImportError:
        pass
    return list(dict.fromkeys(out))


def process_started() -> float:
    """When this process started (seconds since the epoch): renames before it are not this kernel's."""
    try:
        ticks = int(Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


_IMPORTED = time.time()


def record_rename(folder: Path, source: str, target: str, at: float | None = None) -> None:
    """Append ``source -> target`` (absolute paths) to the log in ``folder`` (cut to :data:`KEEP` lines when it grows)."""
    line = json.dumps({"from": source, "to": target, "at": time.time() if at is None else at}) + "\n"
    log = folder / LOG_NAME
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, line.encode())
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > 2 * KEEP * len(line):
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        if len(lines) > 2 * KEEP:
            tmp = log.with_name(f".{LOG_NAME}.{os.getpid()}")
            tmp.write_text("".join(lines[-KEEP:]))
            os.replace(tmp, log)


def _read(folder: Path, since: float) -> list[tuple[float, str, str]]:
    """The renames logged in ``folder`` at or after ``since`` as ``(when, from, to)``, oldest first (malformed lines skipped)."""
    log = folder / LOG_NAME
    try:
        if not log.is_file() or log.stat().st_size > MAX_LOG_BYTES:
            return []
        text = log.read_text(errors="replace")
    except OSError:
        return []
    out: list[tuple[float, str, str]] = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        source, target, at = item.get("from"), item.get("to"), item.get("at")
        if isinstance(source, str) and isinstance(target, str) and isinstance(at, (int, float)) and at >= since:
            out.append((float(at), source, target))
    out.sort(key=lambda item: item[0])
    return out


def renames(folder: Path, since: float) -> list[tuple[str, str]]:
    """The renames logged in ``folder`` at or after ``since``, oldest first."""
    return [(source, target) for _, source, target in _read(folder, since)]


def follow(path: str, since: float, folders: list[Path] | None = None) -> str:
    """``path`` after every rename since ``since``: of the file itself, or of a folder above it (a folder renamed or moved whole)."""
    for folder in runtime_folders() if folders is None else folders:
        for source, target in renames(folder, since):
            if path == source:
                path = target
            elif path.startswith(source.rstrip(os.sep) + os.sep):
                path = target.rstrip(os.sep) + path[len(source.rstrip(os.sep)) :]
    return path


def history(path: str, folders: list[Path] | None = None) -> list[tuple[str, float]]:
    """Where the file at ``path`` was before the renames logged (the latest first): ``(old path, when it left it)``."""
    out: list[tuple[str, float]] = []
    for folder in runtime_folders() if folders is None else folders:
        moves = _timed(folder)
        for at, source, target in reversed(moves):
            target = target.rstrip(os.sep)
            if path == target:
                path = source
            elif path.startswith(target + os.sep):
                path = source.rstrip(os.sep) + path[len(target) :]
            else:
                continue
            out.append((path, at))
    return out


def _timed(folder: Path) -> list[tuple[float, str, str]]:
    return [(at, source, target) for at, source, target in _read(folder, since=float("-inf"))]


# ------------------------------------------------------------ the server side


def listen(serverapp: Any) -> None:
    """Log the renames of ``serverapp``'s contents manager (called by the server extension at load)."""
    root = os.path.abspath(os.path.expanduser(getattr(serverapp.contents_manager, "root_dir", "") or os.getcwd()))
    folder = Path(serverapp.runtime_dir)

    async def on_event(logger: Any, schema_id: str, data: Any) -> None:
        if not isinstance(data, dict) or data.get("action") != "rename":
            return
        source, target = data.get("source_path"), data.get("path")
        if isinstance(source, str) and isinstance(target, str):
            try:
                record_rename(folder, _absolute(root, source), _absolute(root, target))
            except OSError as exc:  # a full disk must not break a rename
                serverapp.log.warning("pi-jupyter: could not log the rename of %s: %s", source, exc)

    serverapp.event_logger.add_listener(schema_id=CONTENTS_EVENTS, listener=on_event)


def _absolute(root: str, api_path: str) -> str:
    return os.path.normpath(os.path.join(root, api_path.strip("/")))


__all__ = ["LOG_NAME", "follow", "history", "listen", "process_started", "record_rename", "renames", "runtime_folders"]
