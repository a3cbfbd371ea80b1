"""Trusting a session folder: what ``%pi world trust`` and ``pi-jupyter trust`` do (see :mod:`.trust` for what trust means).

FOLDER is a session folder, its ``.pi-world``, or one of its session files. Trusting records
the objects its store holds now that need it (pickles this user's key did not sign); nothing
is written into the folder itself. Each function returns the line a person reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from .record import shown
from .store import FOLDER_NAME, Store
from .trust import TrustError, command_form, folder_key, key_path, revoke, trust, trust_path, trusted


def session_folder(given: str | os.PathLike[str]) -> Path:
    """The session folder a user names: the folder itself, its ``.pi-world``, or one of its session files."""
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(given))))
    if path.name == ".pi-world" or (path.is_file() and path.suffix == ".jsonl"):
        path = path.parent
    if not path.is_dir():
        raise TrustError(f"{given}: no such folder (give the folder of the session files)")
    return path


def trust_folder(given: str | os.PathLike[str]) -> str:
    """Trust the objects a session folder's store holds now; the line that says what that means."""
    folder = session_folder(given)
    store = Store(folder / FOLDER_NAME)
    strangers = store.strangers()
    name = shown(os.fspath(given))
    if not strangers:
        return f"{name}: nothing to trust (its objects are plain data, or saved with your key); nothing recorded"
    trust(folder, strangers)
    undo = command_form().format(folder="--revoke " + name)
    n = len(strangers)
    return (
        f"trusted {name}: {n:,} {'object' if n == 1 else 'objects'} saved by someone else will load (a pickle can run code);"
        f" objects added to the folder later are not covered; `{undo}` undoes it"
    )


def revoke_folder(given: str | os.PathLike[str]) -> str:
    """Stop trusting a session folder; the line that says so."""
    name = shown(os.fspath(given))
    folder = folder_key(os.path.abspath(os.path.expanduser(os.fspath(given))))
    for candidate in (folder, os.path.dirname(folder)):
        if revoke(candidate):
            return f"{name} is no longer trusted: its objects saved by someone else are not loaded"
    return f"{name} was not trusted"


def listing_lines() -> list[str]:
    """The trusted folders, one line each (what ``%pi world trust`` with no folder prints)."""
    rows = list(trusted())
    if not rows:
        return ["no trusted folders: objects that need pickle load only when your key signed them", f"(key: {key_path()})"]
    lines = [f"trusted folders (their objects saved by someone else load; list: {trust_path()}):"]
    lines += [f"  {shown(t.folder)}: {t.objects:,} {'object' if t.objects == 1 else 'objects'}, since {t.at}" for t in rows]
    return lines
