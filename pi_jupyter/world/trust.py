"""Whose objects may be unpickled: this user's key, and the folders this user chose to trust.

Loading a pickle can run any code, so a world object that needs pickle (a function, a class,
a model) is loaded only when this user's own kernels wrote it, or when the user said that the
folder it came from is trusted. Plain data (numbers, text, arrays, frames) is stored in forms
that cannot run code and needs neither (see :mod:`.plain`).

*The key.* Each object the store writes carries an HMAC-SHA256 of its content hash under a
per-user secret, as Jupyter signs the notebooks a user's kernels wrote. The secret is created
on first use (32 random bytes, mode 0600) beside Jupyter's own ``notebook_secret``
(``jupyter --data-dir``, e.g. ``~/.local/share/jupyter/pi_jupyter_world_secret``), never in a
session folder. ``$PI_JUPYTER_WORLD_KEY`` names another key file: copy the file to another
machine (or point the variable at it) and the objects saved with it load there too.

*Trusted folders.* ``%pi world trust FOLDER`` (``pi-jupyter trust FOLDER``) records, in
``pi_jupyter_world_trust.json`` beside the key, the folder and the objects its store holds at
that moment: those load although another key (or no key) signed them. Objects that arrive in
the folder later are not covered (trust the folder again to take them); ``--revoke`` removes
the folder, and the list is shown by ``%pi world trust``. Nothing is ever written into the
trusted folder itself.

Objects written before objects were signed (``PIW1``, pi-jupyter before this version) carry no
signature: they cannot be told from a stranger's, so they are treated as a stranger's (plain
data still loads). Trusting the folder once brings them back; the next save of the same value
signs it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import hmac
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

ENV_KEY = "PI_JUPYTER_WORLD_KEY"
"""Environment variable naming the key file (instead of the one beside Jupyter's notebook secret)."""
KEY_NAME = "pi_jupyter_world_secret"
TRUST_NAME = "pi_jupyter_world_trust.json"
KEY_BYTES = 32
MAC_SIZE = 32
KEY_ID_SIZE = 8

HINT = "%pi world trust {folder}"
"""How the user trusts a folder, as a line in a notebook says it."""
SHELL_HINT = "pi-jupyter trust {folder}"
"""The same, from a shell (``pi-jupyter experiment``, the RPC server)."""

_MIN_KEY = 16
_lock = threading.Lock()
_key_cache: dict[str, tuple[tuple[int, int, int], bytes]] = {}
_memory_key: bytes | None = None
_checked: dict[str, float] = {}
_RECHECK_S = 1.0
"""A key file replaced by the user (carried from another machine) is read again after this long."""
_trust_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


class TrustError(Exception):
    """The key or the trust list could not be read or written; the message says where and why."""


def data_dir() -> Path:
    """Jupyter's data folder (``jupyter --data-dir``), where its notebook secret lives; a config folder without Jupyter."""
    env = tuple(os.environ.get(k) for k in _DATA_ENV)  # what the answer depends on: asked once per setting, not per object
    found = _data_dirs.get(env)
    if found is None:
        try:
            from jupyter_core.paths import jupyter_data_dir
        except ImportError:  # pragma: no cover - a kernel always has jupyter_core; a bare script may not
            base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
            found = Path(base) / "pi-jupyter"
        else:
            found = Path(jupyter_data_dir())
        _data_dirs[env] = found
    return found


_DATA_ENV = ("JUPYTER_DATA_DIR", "JUPYTER_PREFER_ENV_PATH", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "HOME", "APPDATA")
_data_dirs: dict[tuple[str | None, ...], Path] = {}


def key_path() -> Path:
    """The key file: ``$PI_JUPYTER_WORLD_KEY``, else ``pi_jupyter_world_secret`` in Jupyter's data folder."""
    given = os.environ.get(ENV_KEY, "").strip()
    if given:
        return Path(os.path.expanduser(given))
    return data_dir() / KEY_NAME


def trust_path() -> Path:
    """The list of trusted folders: beside the key file (so a test's or a machine's key has its own list)."""
    return key_path().parent / TRUST_NAME


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def user_key(*, create: bool = True) -> bytes | None:
    """This user's secret (created on first use when ``create``); ``None`` when there is none and ``create`` is false.

    A key file that cannot be created (a read-only home) leaves a key in memory: this kernel
    can still load what it saved itself, and nothing else can.
    """
    global _memory_key
    path = key_path()
    with _lock:
        recent = _key_cache.get(str(path))
        if recent is not None and time.monotonic() - _checked.get(str(path), -1e9) < _RECHECK_S:
            return recent[1]  # a store writing thousands of objects asks for the key each time
        _checked[str(path)] = time.monotonic()
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise TrustError(f"the world key {path} cannot be read: {exc.strerror or exc}") from None
        if st is not None:
            cached = _key_cache.get(str(path))
            if cached is not None and cached[0] == _stamp(st):
                return cached[1]
            key = _read_key(path)
            _key_cache[str(path)] = (_stamp(st), key)
            return key
        if not create:
            return _memory_key
        try:
            key = _create_key(path)
        except OSError:
            if _memory_key is None:
                _memory_key = secrets.token_hex(KEY_BYTES).encode()
            return _memory_key
        _key_cache[str(path)] = (_stamp(os.stat(path)), key)
        return key


def _read_key(path: Path) -> bytes:
    from ..session.files import read_regular  # a pipe or a device named as the key must not hang or fill memory

    try:
        key = read_regular(str(path)).strip()
    except Exception as exc:  # noqa: BLE001 - SessionFileError (not a regular file) or OSError
        raise TrustError(f"the world key {path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(key) < _MIN_KEY:
        raise TrustError(f"the world key {path} is too short ({len(key)} bytes; at least {_MIN_KEY}): remove it to make a new one")
    return key


def _create_key(path: Path) -> bytes:
    """Make the key file whole or not at all; when another process made it meanwhile, its key wins."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(KEY_BYTES).encode()
    fd, tmp = tempfile.mkstemp(prefix=".pi-key-", dir=path.parent)  # 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # fails when the file exists: two kernels starting at once agree on one key
        except FileExistsError:
            return _read_key(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key


def key_id(key: bytes) -> bytes:
    """A short name of ``key`` (not the key): tells "signed with another key" from "signature damaged"."""
    return hmac.new(key, b"pi-jupyter world key id", hashlib.sha256).digest()[:KEY_ID_SIZE]


def mac(key: bytes, kind: bytes, digest: bytes) -> bytes:
    """The signature of an object of ``kind`` whose full content hash is ``digest``."""
    return hmac.new(key, b"pi-jupyter world object\0" + kind + digest, hashlib.sha256).digest()


def sign(kind: bytes, digest: bytes) -> tuple[bytes, bytes]:
    """``(key id, signature)`` for an object this user's kernel writes."""
    key = user_key(create=True)
    assert key is not None
    return key_id(key), mac(key, kind, digest)


def signer(kind: bytes, digest: bytes, kid: bytes, signature: bytes) -> str:
    """Who signed an object: ``"me"``, ``"another key"``, ``"unsigned"``, or ``"forged"`` (my key's id, a wrong signature)."""
    if not signature.strip(b"\0"):
        return "unsigned"
    key = user_key(create=False)
    if key is None:
        return "another key"
    if hmac.compare_digest(mac(key, kind, digest), signature):
        return "me"
    return "forged" if hmac.compare_digest(key_id(key), kid) else "another key"


# ------------------------------------------------------------------ trusted folders


@dataclass
class Trusted:
    """A folder the user trusts, when, and how many objects its store held then."""

    folder: str
    at: str
    objects: int


def folder_key(folder: str | os.PathLike[str]) -> str:
    """How a session folder is named in the trust list: its real path."""
    return os.path.realpath(os.fspath(folder))


def _load() -> dict[str, Any]:
    path = trust_path()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TrustError(f"the trust list {path} cannot be read: {exc.strerror or exc}") from None
    cached = _trust_cache.get(str(path))
    if cached is not None and cached[0] == _stamp(st):
        return cached[1]
    from ..session.files import read_regular

    try:
        data = orjson.loads(read_regular(str(path)))
    except Exception as exc:  # noqa: BLE001 - damaged, or not a file: nothing is trusted, and the user is told how to fix it
        raise TrustError(f"the trust list {path} cannot be read ({exc}); remove it and trust the folders again") from None
    folders = data.get("folders") if isinstance(data, dict) else None
    table = folders if isinstance(folders, dict) else {}
    _trust_cache[str(path)] = (_stamp(st), table)
    _sets.clear()
    return table


def _save(table: dict[str, Any]) -> None:
    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".pi-trust-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"v": 1, "folders": table}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _trust_cache.pop(str(path), None)


def is_trusted(folder: str | os.PathLike[str], ref: str) -> bool:
    """True when the user trusted ``folder`` while its store held object ``ref``."""
    try:
        table = _load()
    except TrustError:
        return False
    entry = table.get(folder_key(folder))
    if not isinstance(entry, dict):
        return False
    listed = entry.get("objects")
    return isinstance(listed, list) and ref in _as_set(listed)


_sets: dict[int, tuple[list[Any], frozenset[str]]] = {}


def _as_set(listed: list[Any]) -> frozenset[str]:
    held = _sets.get(id(listed))
    if held is None or held[0] is not listed:
        held = _sets[id(listed)] = (listed, frozenset(r for r in listed if isinstance(r, str)))
    return held[1]


def trust(folder: str | os.PathLike[str], refs: Iterable[str]) -> Trusted:
    """Trust the objects ``refs`` of ``folder``'s store (replacing an earlier trust of the folder)."""
    with _lock:
        table = {k: v for k, v in _load().items() if isinstance(v, dict)}
        at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        listed = sorted(set(refs))
        table[folder_key(folder)] = {"at": at, "objects": listed}
        _save(table)
    return Trusted(folder_key(folder), at, len(listed))


def revoke(folder: str | os.PathLike[str]) -> bool:
    """Stop trusting ``folder``; False when it was not trusted."""
    with _lock:
        table = {k: v for k, v in _load().items() if isinstance(v, dict)}
        if table.pop(folder_key(folder), None) is None:
            return False
        _save(table)
    return True


def trusted() -> Iterator[Trusted]:
    """The trusted folders, by name."""
    for folder, entry in sorted(_load().items()):
        if isinstance(entry, dict):
            objects = entry.get("objects")
            yield Trusted(folder, str(entry.get("at", "")), len(objects) if isinstance(objects, list) else 0)


def hint(folder: str | os.PathLike[str] | None) -> str:
    """``%pi world trust pi-sessions``: what to type to trust ``folder`` (relative to the working folder when inside it)."""
    form = command_form()
    if folder is None:
        return form.format(folder="FOLDER")
    from .record import shown

    real = os.path.abspath(os.fspath(folder))
    here = os.getcwd()
    rel = os.path.relpath(real, here) if real.startswith(here + os.sep) else real
    text = shown(rel)
    if any(c.isspace() for c in text) or "'" in text:
        text = "'" + text.replace("'", "'\\''") + "'"
    return form.format(folder=text)


def command_form() -> str:
    """How trusting is typed here: the magic inside IPython (a kernel), the shell command elsewhere."""
    return HINT if _in_ipython() else SHELL_HINT


def _in_ipython() -> bool:
    """True inside IPython: IPython is looked up, never imported."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    try:
        return callable(get) and get() is not None
    except Exception:  # noqa: BLE001 - a half-initialized IPython: the shell's words
        return False
