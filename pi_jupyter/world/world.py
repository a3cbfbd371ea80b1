"""``World``: the live variables and files of one session's current branch, kept in step with the tree.

A :class:`World` joins a session, the namespace its tools run in (a notebook's ``user_ns``)
and the project folder. It knows which node the live world stands for; :meth:`World.move`
brings it to another node (a checkout, a re-run cell's start, the branch a grid continues
from) and says in one line what it restored and what it could not; :meth:`World.recorder`
is what the tools record their changes with; :meth:`World.branch` gives a branch of a grid a
namespace of its own that starts as this one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from .recorder import Recorder, Tracker
from .restore import Report, apply
from .state import UNKNOWN, plan
from .store import Store
from .values import DEFAULT_LIMIT


class World:
    """The world of ``session`` in ``namespace`` and under ``cwd``.

    ``tracker``: shared by the worlds of sessions that use the same namespace (a kernel's
    sessions). ``has_secret``: the redaction rules (values holding a secret are not saved).
    ``limit``: the largest value saved, in bytes. The variables start at no known position
    (a fresh kernel holds none of the recorded ones); the files at the session's leaf.
    """

    def __init__(
        self,
        session: Any,
        namespace: dict[str, Any],
        *,
        cwd: str | None = None,
        store: Store | None = None,
        tracker: Tracker | None = None,
        has_secret: Callable[[str], bool] | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.session = session
        self.namespace = namespace
        self.cwd = os.path.abspath(cwd or getattr(session, "cwd", None) or os.getcwd())
        self.store = store or Store.of(getattr(session, "shared", session))
        self.tracker = tracker or Tracker()
        self.has_secret = has_secret
        self.limit = limit
        self.vars_at: Any = UNKNOWN
        self.files_at: Any = session.leaf_id
        self.last_report: Report | None = None
        self.force_next = False
        """Set by ``%pi checkout --force``: the next move also overwrites what the user changed."""
        self._lock = threading.RLock()
        self._recorder = self.recorder()

    def __repr__(self) -> str:
        where = "unknown" if self.vars_at is UNKNOWN else self.vars_at
        return f"<World of {getattr(self.session, 'path', None) or 'a session in memory'} at {where}>"

    def recorder(self) -> Recorder:
        """What the tools of this session record with (``tool_extra["world"]``)."""
        return Recorder(self.namespace, self.store, cwd=self.cwd, tracker=self.tracker, has_secret=self.has_secret, limit=self.limit)

    # the tools' side: a World is also the recorder of its session's tools (``tool_extra["world"]``)
    def python_call(self, namespace: dict[str, Any], code: str) -> Any:
        """See :meth:`Recorder.python_call`."""
        return self._recorder.python_call(namespace, code)

    def file_call(self, real_path: str) -> Any:
        """See :meth:`Recorder.file_call`."""
        return self._recorder.file_call(real_path)

    def untracked(self, kind: str) -> Any:
        """See :meth:`Recorder.untracked`."""
        return self._recorder.untracked(kind)

    def branch(self) -> Recorder:
        """A recorder for one branch of a grid (see :meth:`Recorder.branch`)."""
        return self._recorder.branch()

    def grid_ended(self) -> None:
        """Let go of the objects a grid's branches saved once for all of them (see :meth:`Recorder.shared_slot`)."""
        self._recorder.shared_slots.clear()

    def move(self, target: str | None, *, force: bool = False) -> Report:
        """Bring the live world to node ``target``; the report (also :attr:`last_report`) says what happened."""
        force, self.force_next = force or self.force_next, False
        with self._lock:
            if self.tracker.in_use():
                report = Report(refused="variables and files not restored: a run is using them; check out again when it ends")
                self.last_report = report
                return report
            steps = plan(self.session, self.vars_at, target, files_current=self.files_at)
            report = apply(steps, self.namespace, self.tracker, self.store, self.cwd, force=force) if steps else Report()
            if not force and report.kept:
                report.force_hint = f"%pi checkout {target or 'root'} --force"
            self.vars_at = self.files_at = target
            self.last_report = report
            return report

    def settle(self) -> None:
        """The live world is the session's leaf again (after a run whose tools recorded their changes on it)."""
        with self._lock:
            self.vars_at = self.files_at = self.session.leaf_id

    def running(self) -> Any:
        """A context in which a run uses the namespace: a checkout meanwhile is refused with a clear line."""
        return _Busy(self.tracker)


class _Busy:
    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def __enter__(self) -> None:
        self.tracker.busy += 1

    def __exit__(self, *exc: object) -> None:
        self.tracker.busy -= 1
