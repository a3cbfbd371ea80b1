"""Applying a move to the live world, and the one line that says what it did.

For each variable and file of a :class:`~.state.Plan`, the live value is first checked: it
must be what the world says it holds now (the object the world saved or restored there, or a
file with the recorded content). Otherwise the user changed it outside the agent, and it is
left as it is and named, unless ``force`` is given. A name that is absent, or a file that does
not exist, is simply restored: nothing is lost. What cannot be restored (never saved, saved
elsewhere, missing from the store) is named with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import keyword
import os
import stat
import uuid
from dataclasses import dataclass, field
from typing import Any

from .modules import Refused, import_recorded
from .names import world_name
from .record import SHOWN_NAMES, is_ref, listing, same_slot, shown, unsaved_reason
from .recorder import NOT_HELD, Tracker
from .state import UNKNOWN, Plan
from .store import Missing, Store, StoreError, Untrusted, file_digest
from .values import Unsaved, serialize


@dataclass
class Report:
    """What a move restored, removed, could not restore, and left to the user."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Variables and files the user changed since: left as they are."""
    untracked: dict[str, int] = field(default_factory=dict)
    refused: str | None = None
    untrusted: dict[str, list[str]] = field(default_factory=dict)
    """Variables whose saved objects need pickle and were not signed by this user's key, by why (not loaded: see :mod:`.trust`)."""
    trust_hint: str = ""
    force_hint: str = "--force"
    """How to restore them anyway (the command, once the move knows its target)."""

    def __bool__(self) -> bool:
        return bool(
            self.restored or self.removed or self.failed or self.missing or self.kept or self.untracked or self.refused or self.untrusted
        )

    def line(self) -> str:
        """One line for people: ``restored plan, df2 and notes.txt; could not restore conn (...); ...``."""
        if self.refused:
            return self.refused
        parts = []
        if self.restored:
            parts.append("restored " + _join(self.restored))
        if self.removed:
            parts.append("removed " + _join(self.removed) + " (set only on the branch left)")
        for name, why in self.failed[:SHOWN_NAMES]:
            parts.append(f"could not restore {shown(name)} ({why})")
        if len(self.failed) > SHOWN_NAMES:
            parts.append(f"could not restore {len(self.failed) - SHOWN_NAMES:,} more")
        for why, names in self.untrusted.items():
            parts.append(f"could not restore {_join(names)} ({why}; `{self.trust_hint}` loads that folder's objects, which can run code)")
        if self.missing:
            parts.append(f"the saved state of {_join(self.missing)} is missing (the session's .pi-world folder was not copied with it)")
        if self.kept:
            it, was, is_ = ("it", "it was", "it is") if len(self.kept) == 1 else ("them", "they were", "they are")
            parts.append(f"left {_join(self.kept)} as {is_}: {was} changed outside the agent since ({self.force_hint} restores {it})")
        for kind, n in self.untracked.items():
            parts.append(f"{n} {kind} {'command' if n == 1 else 'commands'} had effects outside the tracked files")
        return "; ".join(parts)


def _join(names: list[str]) -> str:
    return listing(names, last=" and ")


OUTSIDE = "outside the project folder: a checkout writes only inside it"


def inside(cwd: str, key: str) -> str | None:
    """Where file ``key`` of a record is, followed through links, when that is inside the project folder ``cwd``; else ``None``.

    A record is data someone may have made by hand: ``../x``, an absolute path, or a link that
    leads out of the project never make a checkout write outside it.
    """
    if "\0" in key:
        return None
    root = os.path.realpath(cwd)
    real = os.path.realpath(key if os.path.isabs(key) else os.path.join(root, key))
    return real if real.startswith(root + os.sep) else None


_ABSENT: Any = object()


def apply(plan: Plan, namespace: dict[str, Any], tracker: Tracker, store: Store, cwd: str, *, force: bool = False) -> Report:
    """Bring ``namespace`` and the files under ``cwd`` to the plan's target; the report says what happened."""
    report = Report(untracked=dict(plan.untracked))
    for t in plan.vars:
        if t.now is not UNKNOWN and same_slot(t.now, t.then):
            continue
        if not _variable(t.key):  # a record's name is data, not a command: never __builtins__, a keyword, IPython's own
            report.failed.append((t.key, "not a variable name the world keeps"))
            continue
        live = namespace.get(t.key, _ABSENT)
        if live is not _ABSENT:
            seen = tracker.slot_of(t.key, live)
            if seen is not None:  # the object the world saved or restored there
                if same_slot(seen, t.then):
                    continue  # already there
                ours = t.now is UNKNOWN or seen == t.now or same_slot(seen, t.now)
            else:  # an object the world never saw: ours only if its content is what the world holds now
                content = _content(live) if is_ref(t.now) or is_ref(t.then) else None
                if content is not None and same_slot(content, t.then):
                    tracker.note(t.key, live, content)
                    continue
                ours = content is not None and t.now is not UNKNOWN and same_slot(content, t.now)
            if not ours and not force:
                report.kept.append(t.key)
                continue
        _restore_var(t.key, t.then, namespace, tracker, store, report, live, cwd)
    for t in plan.files:
        if t.now is not UNKNOWN and same_slot(t.now, t.then):
            continue
        if "[REDACTED" in t.key:  # the record keeps the name with the secret taken out: that is another file's name
            report.failed.append((t.key, "its name held a secret, which the record does not keep"))
            continue
        path = inside(cwd, t.key)
        if path is None:
            report.failed.append((t.key, OUTSIDE))
            continue
        live_ref = _file_ref(path)
        if same_slot(live_ref, t.then):
            continue
        ours = live_ref is None or (t.now is not UNKNOWN and same_slot(live_ref, t.now))
        if not ours and not force:
            report.kept.append(t.key)
            continue
        _restore_file(t.key, path, t.then, store, report, tracker)
    return report


def _restore_var(
    name: str, slot: Any, ns: dict[str, Any], tracker: Tracker, store: Store, report: Report, live: Any, cwd: str | None = None
) -> None:
    if slot is None:
        if live is not _ABSENT:
            ns.pop(name, None)
            report.removed.append(name)
        tracker.forget(name)
        return
    if isinstance(slot, dict) and isinstance(slot.get("module"), str):
        try:  # a name from a record: imported only when this environment's own (see modules)
            value = import_recorded(slot["module"], [store.session_folder, cwd])
        except Refused as exc:
            report.failed.append((name, str(exc)))
            return
        ns[name] = value
        tracker.note(name, value, slot)
        report.restored.append(name)
        return
    if not is_ref(slot):
        held = tracker.held_for(slot)
        if held is NOT_HELD:
            report.failed.append((name, unsaved_reason(slot) or "not saved"))
            return
        value = held  # not saved, but this kernel still holds it
    else:
        try:
            value = store.get_value(slot)
        except Missing:
            report.missing.append(name)
            return
        except Untrusted as exc:  # a pickle signed by another key, or none: loading it could run code
            report.untrusted.setdefault(exc.why, []).append(name)
            report.trust_hint = exc.hint
            return
        except Exception as exc:  # noqa: BLE001 - a class that no longer imports, a damaged object
            report.failed.append((name, _load_failure(exc)))
            return
    ns[name] = value
    tracker.note(name, value, slot)
    report.restored.append(name)


def _variable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and world_name(name)


def _content(value: Any) -> Any:
    """The ref ``value`` would have in the store (``None`` when it cannot be saved)."""
    try:
        return serialize(value).digest
    except Unsaved:
        return None


def _load_failure(exc: BaseException) -> str:
    if isinstance(exc, StoreError):
        return str(exc)
    if isinstance(exc, (AttributeError, ModuleNotFoundError, ImportError)):
        return f"its type cannot be found now: {exc}"
    return f"it could not be loaded: {exc}" if str(exc) else "it could not be loaded"


def _file_ref(path: str) -> Any:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return {"unsaved": "not a regular file"}  # never opened: a pipe would wait for a writer forever
        with open(path, "rb") as fh:
            return file_digest(fh.read())
    except FileNotFoundError:
        return None
    except OSError:
        return {"unsaved": "unreadable"}


def _restore_file(key: str, path: str, slot: Any, store: Store, report: Report, tracker: Tracker) -> None:
    if os.path.isdir(path):
        report.failed.append((key, "a folder is there now"))
        return
    if os.path.exists(path) and not os.path.isfile(path):
        report.failed.append((key, "something other than a file is there now"))
        return
    if slot is None:
        try:
            os.unlink(path)
            report.removed.append(key)
        except FileNotFoundError:
            pass
        except OSError as exc:
            report.failed.append((key, exc.strerror or str(exc)))
        return
    held = tracker.held_for(slot) if not is_ref(slot) else NOT_HELD
    if not is_ref(slot) and not isinstance(held, bytes):
        report.failed.append((key, unsaved_reason(slot) or "not saved"))
        return
    try:
        data = held if isinstance(held, bytes) else store.get_file(slot)
    except Missing:
        report.missing.append(key)
        return
    except StoreError as exc:
        report.failed.append((key, str(exc)))
        return
    try:
        _write_file(path, data)
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        report.failed.append((key, "the disk is full" if full else exc.strerror or str(exc)))
        return
    report.restored.append(key)


def _write_file(path: str, data: bytes) -> None:
    """Write ``path`` whole or not at all: a new temporary file beside it, renamed into place, removed on any failure.

    The temporary name is new and made with ``O_CREAT|O_EXCL|O_NOFOLLOW``, so a link or a file
    shipped in the folder under that name is never written through; the rename replaces a
    link at ``path`` itself rather than following it.
    """
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)[:100]}.{uuid.uuid4().hex[:12]}.pi-restore")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
