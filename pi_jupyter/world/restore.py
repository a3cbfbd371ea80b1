"""Applying a move to the live world, and the one line that says what it did.

A move is judged first (:func:`assess`), key by key: the live value or file is compared with
what the world says it holds now and what the target holds. It is *there* already; or it is
the world's (the object the world saved or restored there, or content equal to what it holds
now) and is *restored*; or the user changed it outside the agent (rebound, deleted, changed in
place by a cell, a file edited): it is the *user's*, left as it is and named, unless ``force``
is given (the caller first keeps the user's version on the branch). A name that is absent, or
a file that does not exist, where the two nodes differ is simply restored: nothing is lost.
Where the world cannot compare (a connection a cell may have changed), it says it cannot be
sure. Then :func:`perform` restores: names saved together come back from one load, so they
share objects again; an open file is the very handle in this kernel, or a new one on the same
path and position; what cannot be restored (never saved, saved elsewhere, missing from the
store) is named with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import keyword
import os
import stat
import types
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import handles
from .aliases import unpack_views
from .modules import Refused, import_recorded
from .names import world_name
from .record import SHOWN_NAMES, group_of, is_ref, listing, same_slot, shown, unsaved_reason
from .state import UNKNOWN, Plan, Target
from .store import Missing, Store, StoreError, Untrusted, file_digest
from .tracker import NOT_HELD, Tracker
from .values import Unsaved, serialize

THERE, RESTORE, USER, UNSURE, FAIL = "there", "restore", "user", "unsure", "fail"


@dataclass
class Decision:
    """What a move does with one key: ``state`` is :data:`THERE`, :data:`RESTORE`, :data:`USER`, :data:`UNSURE` or :data:`FAIL`."""

    kind: str
    """``vars`` or ``files``."""
    target: Target
    state: str
    why: str = ""
    """For :data:`UNSURE` and :data:`FAIL`: the reason."""
    live: Any = None
    """The live value (variables) or the real path (files)."""
    again: bool = False
    """Restored only to keep a group whole (its content is the target's already): not named in the line."""


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
    reopened: list[tuple[str, str]] = field(default_factory=list)
    """Open files brought back as new handles on the same path and position: ``(name, what it is)``."""
    unsure: list[tuple[str, str]] = field(default_factory=list)
    """Names whose live value the world cannot compare (``(name, why)``): left as they are."""
    offers: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Name -> ``(call id, code)`` of the tool call that made a value that cannot be restored (``%pi rerun``)."""
    kept_in: str | None = None
    """The entry where the user's own versions were recorded (before ``--force`` replaced them, or before a run)."""
    replaced: list[str] = field(default_factory=list)
    """The user's versions ``--force`` replaced (kept in :attr:`kept_in`)."""
    recorded: list[str] = field(default_factory=list)
    """The user's versions kept as they are and recorded on the branch (:attr:`recorded_at`), so a run starts from them."""
    recorded_at: str | None = None
    """The record on the branch of a world the tree did not hold yet: the user's own versions before a run, the world a
    checkout of the conversation alone kept, the world a checkout of the world alone brought."""
    recorded_live: bool = False
    """What :attr:`recorded` names is the live world a checkout of the conversation alone kept (not only the user's)."""

    def __bool__(self) -> bool:
        return bool(
            self.restored or self.removed or self.failed or self.missing or self.kept or self.untracked or self.refused
            or self.untrusted or self.reopened or self.unsure or self.recorded or self.replaced
        )  # fmt: skip

    def named(self) -> set[str]:
        """Every key the line names as not being the target's (kept, failed, missing, unsure, untrusted, recorded as the user's)."""
        untrusted = {n for names in self.untrusted.values() for n in names}
        return {*self.kept, *(n for n, _ in self.failed), *self.missing, *(n for n, _ in self.unsure), *self.recorded, *untrusted}

    def line(self) -> str:
        """One line for people: ``restored plan, df2 and notes.txt; could not restore conn (...); ...``."""
        if self.refused:
            return self.refused
        parts = []
        if self.restored:
            parts.append("restored " + _join(self.restored))
        for name, what in self.reopened[:SHOWN_NAMES]:
            parts.append(f"reopened {shown(name)} ({what}): a new handle on the same file")
        if self.removed:
            parts.append("removed " + _join(self.removed) + " (set only on the branch left)")
        for name, why in self.failed[:SHOWN_NAMES]:
            offer = self.offers.get(name)
            if offer:
                why += f"; %pi rerun {offer[0]} runs `{_short(offer[1])}` again"
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
        for name, why in self.unsure[:SHOWN_NAMES]:
            parts.append(f"could not tell whether {shown(name)} changed ({why}): left as it is")
        if self.recorded and self.recorded_live:
            are = "differs" if len(self.recorded) == 1 else "differ"
            parts.append(f"{_join(self.recorded)} {are} from that node's world, recorded on the branch as entry {self.recorded_at}")
        elif self.recorded:
            parts.append(f"kept your own {_join(self.recorded)} (recorded on the branch as entry {self.recorded_at})")
        if self.replaced and self.kept_in:
            them = "it" if len(self.replaced) == 1 else "them"
            back = f"%pi checkout {self.kept_in} brings {them} back"
            parts.append(f"your version of {_join(self.replaced)} is kept in entry {self.kept_in} ({back})")
        for kind, n in self.untracked.items():
            parts.append(f"{n} {kind} {'command' if n == 1 else 'commands'} had effects outside the tracked files")
        return "; ".join(parts)


def _short(code: str, width: int = 60) -> str:
    first = " ".join(code.strip().split())
    return first if len(first) <= width else first[: width - 1] + "…"


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


ABSENT: Any = object()
"""The value of a name the namespace does not hold."""


class _Contents:
    """Content digests, computed once per move: of live values, and of the names inside saved groups."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.groups: dict[str, Any] = {}
        self.members: dict[tuple[str, str], Any] = {}

    def group(self, ref: str) -> Any:
        if ref not in self.groups:
            try:
                self.groups[ref] = unpack_views(self.store.get_value(ref))
            except Exception as exc:  # noqa: BLE001 - kept and raised where it is restored
                self.groups[ref] = exc
        return self.groups[ref]

    def digest(self, slot: Any) -> Any:
        """What ``slot`` holds as one comparable thing: a ref, ``None``, a module's slot (``False``: unknown)."""
        found = group_of(slot)
        if found is None:
            return slot if is_ref(slot) or slot is None or (isinstance(slot, dict) and "module" in slot) else False
        if found not in self.members:
            values = self.group(found[0])
            self.members[found] = content(values[found[1]]) if isinstance(values, dict) and found[1] in values else False
        return self.members[found]

    def matches(self, live_digest: Any, slot: Any) -> bool:
        want = self.digest(slot)
        return want is not False and live_digest is not False and same_slot(live_digest, want)


def content(value: Any) -> Any:
    """What ``value`` would be saved as, to compare (a ref, a module's slot; ``False`` when it cannot be saved)."""
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if handles.is_handle(value):
        return False
    try:
        return serialize(value).digest
    except Unsaved:
        return False


def assess(plan: Plan, namespace: dict[str, Any], tracker: Tracker, store: Store, cwd: str) -> list[Decision]:
    """Judge every key of ``plan`` against the live namespace and files (see the module notes); nothing is changed."""
    contents = _Contents(store)
    out = [_judge_var(t, namespace, tracker, contents) for t in plan.vars]
    out += [_judge_file(t, tracker, cwd) for t in plan.files]
    _whole_groups(out)
    return out


def _judge_var(t: Target, ns: dict[str, Any], tracker: Tracker, contents: _Contents) -> Decision:
    if not _variable(t.key):  # a record's name is data, not a command: never __builtins__, a keyword, IPython's own
        return Decision("vars", t, FAIL, why="not a variable name the world keeps")
    live = ns.get(t.key, ABSENT)
    if live is ABSENT:
        if t.then is None:
            return Decision("vars", t, THERE, live=live)
        if t.moved or t.now is UNKNOWN or t.key not in tracker.known:
            return Decision("vars", t, RESTORE, live=live)  # nothing is lost
        return Decision("vars", t, USER, live=live)  # deleted by a cell of the user's
    seen = tracker.slot_of(t.key, live)
    if seen is None and handles.is_handle(live) and tracker.is_seen(t.key, live):
        seen = tracker.known[t.key][1]  # a handle read from is still the world's: its position is no value a user set
    if seen is not None:  # the object the world saved or restored there
        if same_slot(seen, t.then):
            return Decision("vars", t, THERE, live=live)
        ours = t.now is UNKNOWN or same_slot(seen, t.now) or seen == t.now
        return Decision("vars", t, RESTORE if ours else USER, live=live)
    if t.key in tracker.dirty and tracker.is_seen(t.key, live):
        slot = tracker.known[t.key][1]
        if not (is_ref(slot) or group_of(slot)):  # never saved: a cell may have changed it, and nothing tells
            why = (unsaved_reason(slot) or "not saved").split(":")[0]
            if same_slot(slot, t.then):
                return Decision("vars", t, UNSURE, why=f"{why}: a cell may have changed it in place", live=live)
    digest = content(live)
    if contents.matches(digest, t.then):
        return Decision("vars", t, THERE, live=live)
    if t.now is not UNKNOWN and t.moved and contents.matches(digest, t.now):
        return Decision("vars", t, RESTORE, live=live)
    return Decision("vars", t, USER, live=live)


def _judge_file(t: Target, tracker: Tracker, cwd: str) -> Decision:
    if "[REDACTED" in t.key:  # the record keeps the name with the secret taken out: that is another file's name
        return Decision("files", t, FAIL, why="its name held a secret, which the record does not keep")
    path = inside(cwd, t.key)
    if path is None:
        return Decision("files", t, FAIL, why=OUTSIDE)
    live_ref = tracker.file_slot(path)
    if live_ref is NOT_HELD:
        live_ref = _file_ref(path)
    if same_slot(live_ref, t.then):
        return Decision("files", t, THERE, live=path)
    if live_ref is None:
        seen = tracker.files.get(path)
        removed_by_user = not t.moved and t.now is not UNKNOWN and seen is not None and seen[1] is not None
        return Decision("files", t, USER if removed_by_user else RESTORE, live=path)
    ours = t.now is not UNKNOWN and t.moved and same_slot(live_ref, t.now)
    return Decision("files", t, RESTORE if ours else USER, live=path)


def _whole_groups(decisions: list[Decision]) -> None:
    """A name saved with others comes back with them, from one load, so they share objects again."""
    restoring = {g[0] for d in decisions if d.kind == "vars" and d.state == RESTORE and (g := group_of(d.target.then))}
    if not restoring:
        return
    for d in decisions:
        g = group_of(d.target.then) if d.kind == "vars" else None
        if g and g[0] in restoring and d.state == THERE and d.live is not ABSENT:
            d.state, d.again = RESTORE, True


def perform(decisions: list[Decision], plan: Plan, namespace: dict[str, Any], tracker: Tracker, store: Store, cwd: str) -> Report:
    """Restore what ``decisions`` say (:func:`assess`, maybe changed by a ``--force``); the report says what happened."""
    report = Report(untracked=dict(plan.untracked))
    contents = _Contents(store)
    for d in decisions:
        if d.state == THERE:
            if d.kind == "vars" and d.live is not ABSENT and not tracker.is_seen(d.target.key, d.live):
                tracker.note(d.target.key, d.live, d.target.then)  # equal content, another object: the world's now
            continue
        if d.state == USER:
            report.kept.append(d.target.key)
        elif d.state == UNSURE:
            report.unsure.append((d.target.key, d.why))
        elif d.state == FAIL:
            report.failed.append((d.target.key, d.why))
        elif d.kind == "vars":
            _restore_var(d.target.key, d.target.then, namespace, tracker, report, d.live, contents, cwd)
            if d.again and report.restored and report.restored[-1] == d.target.key:
                report.restored.pop()
        else:
            _restore_file(d.target.key, d.live, d.target.then, store, report, tracker)
    return report


def apply(plan: Plan, namespace: dict[str, Any], tracker: Tracker, store: Store, cwd: str, *, force: bool = False) -> Report:
    """Bring ``namespace`` and the files under ``cwd`` to the plan's target (:func:`assess`, then :func:`perform`)."""
    decisions = assess(plan, namespace, tracker, store, cwd)
    if force:
        for d in decisions:
            if d.state in (USER, UNSURE):
                d.state = RESTORE
    return perform(decisions, plan, namespace, tracker, store, cwd)


def _restore_var(
    name: str, slot: Any, ns: dict[str, Any], tracker: Tracker, report: Report, live: Any, contents: _Contents, cwd: str
) -> None:
    if slot is None:
        if live is not ABSENT:
            ns.pop(name, None)
            report.removed.append(name)
        tracker.forget(name)
        return
    if isinstance(slot, dict) and isinstance(slot.get("module"), str):
        try:  # a name from a record: imported only when this environment's own (see modules)
            value = import_recorded(slot["module"], [contents.store.session_folder, cwd])
        except Refused as exc:
            report.failed.append((name, str(exc)))
            return
        ns[name] = value
        tracker.note(name, value, slot)
        report.restored.append(name)
        return
    found = group_of(slot)
    if found is not None:
        values = contents.group(found[0])
        if isinstance(values, BaseException):
            _failed(name, values, report)
            return
        if not isinstance(values, dict) or found[1] not in values:
            report.failed.append((name, f"the saved object {found[0][:12]} does not hold it"))
            return
        value = values[found[1]]
    elif not is_ref(slot):
        held = tracker.held_for(slot)
        if held is NOT_HELD:
            value, how = handles.reopen(slot, cwd)
            if value is None:
                report.failed.append((name, how if slot.get("handle") else (unsaved_reason(slot) or "not saved")))
                return
            ns[name] = value
            tracker.note(name, value, slot)
            tracker.hold_as(slot, value)
            report.reopened.append((name, how))
            return
        value = held  # not saved, but this kernel still holds it
    else:
        try:
            value = contents.store.get_value(slot)
        except Exception as exc:  # noqa: BLE001 - a class that no longer imports, a damaged object
            _failed(name, exc, report)
            return
    ns[name] = value
    tracker.note(name, value, slot)
    report.restored.append(name)


def _variable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and world_name(name)


def _failed(name: str, exc: BaseException, report: Report) -> None:
    if isinstance(exc, Missing):
        report.missing.append(name)
    elif isinstance(exc, Untrusted):  # a pickle signed by another key, or none: loading it could run code
        report.untrusted.setdefault(exc.why, []).append(name)
        report.trust_hint = exc.hint
    else:
        report.failed.append((name, _load_failure(exc)))


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
    _put_file(key, path, slot, store, report, tracker)
    try:
        info: os.stat_result | None = os.stat(path)
    except OSError:
        info = None
    if key in report.restored or key in report.removed:
        tracker.stamp_file(path, info, slot)


def _put_file(key: str, path: str, slot: Any, store: Store, report: Report, tracker: Tracker) -> None:
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
