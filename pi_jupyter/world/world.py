"""``World``: the live variables and files of one session's current branch, kept in step with the tree.

A :class:`World` joins a session, the namespace its tools run in (a notebook's ``user_ns``)
and the project folder. It knows which node its session's world stands at (its position);
:meth:`World.move` brings the live world to another node (a checkout, a re-run cell's start,
the branch a grid continues from) and says in one line what it restored and what it could
not; :meth:`World.recorder` is what the tools record their changes with; :meth:`World.branch`
gives a branch of a grid a namespace of its own that starts as this one.

Rewinding is a choice (:meth:`World.move` after a checkout moves both; :meth:`World.stay` keeps
the live world for a conversation that moved; :meth:`World.bring` brings another node's world
into the current conversation). A world that differs from its node's record is never left
unrecorded: the user's own versions, a world kept or brought, are appended as a
``pi_jupyter.world`` record on the branch (:mod:`.keeping`), so every node's world is exact.

The sessions of a kernel share one namespace and one folder (one :class:`~.tracker.Tracker`),
and each session's world keeps its own position: the tracker knows whose position the live
world stands for, so moving to another session moves from there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from . import keeping
from .recorder import Recorder
from .restore import FAIL, RESTORE, THERE, UNSURE, USER, Report, assess, perform
from .state import UNKNOWN, plan
from .store import Store
from .tracker import Tracker
from .values import DEFAULT_LIMIT


class World:
    """The world of ``session`` in ``namespace`` and under ``cwd``.

    ``tracker``: shared by the worlds of sessions that use the same namespace (a kernel's
    sessions). ``has_secret``: the redaction rules (values holding a secret are not saved).
    ``limit``: the largest value saved, in bytes. The variables start at no known position
    (a fresh kernel holds none of the recorded ones); the files at the session's leaf. A new,
    empty session adopts the live world as it is.
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
        self.fresh = session.leaf_id is None and not len(session)
        """A new session: its first move adopts the live world as it is (nothing of another session's is undone)."""
        self.last_report: Report | None = None
        self.force_next = False
        """Set by ``%pi checkout --force``: the next move (and only that one) also restores what the user changed."""
        self.stay_next = False
        """Set by ``%pi checkout --conversation-only``: the next checkout keeps the live world (see :meth:`stay`)."""
        self._lock = threading.RLock()
        self._recorder = self.recorder()
        if self.tracker.standing() is None:  # the first world of a kernel: the files on disk are where its session left them
            self.tracker.stands_for(self)

    def __repr__(self) -> str:
        where = "unknown" if self.vars_at is UNKNOWN else self.vars_at
        return f"<World of {getattr(self.session, 'path', None) or 'a session in memory'} at {where}>"

    @property
    def position(self) -> Any:
        """The node this session's world stands at (:data:`~.state.UNKNOWN` before the first move of a fresh kernel)."""
        return self.vars_at

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

    # ------------------------------------------------------------ moves
    def _source(self) -> tuple[Any, Any, Any]:
        """``(session, vars node, files node)`` the live world stands for: this session's position, or another session's."""
        owner = self.tracker.standing()
        if owner is None or owner is self:
            return self.session, self.vars_at, self.files_at
        if self.fresh:
            return self.session, None, None  # a new session takes the live world as it finds it
        return owner.session, owner.vars_at, owner.files_at

    def _refused(self) -> Report | None:
        if self.tracker.in_use():
            report = Report(refused="variables and files not restored: a run is using them; check out again when it ends")
            self.last_report = report
            return report
        return None

    def _stand(self, node: Any) -> None:
        self.vars_at = self.files_at = node
        self.fresh = False
        self.tracker.stands_for(self)

    def move(self, target: str | None, *, force: bool = False) -> Report:
        """Bring the live world to node ``target``; the report (also :attr:`last_report`) says what happened.

        What the user changed outside the agent is left and named, unless ``force`` (or
        :attr:`force_next`, which this move resets): then every name and tracked file of
        the target's world whose live content is not the target's is restored, the current
        node included, and the user's versions are first kept on the branch they leave
        (:attr:`Report.kept_in`).
        """
        force, self.force_next = force or self.force_next, False
        with self._lock:
            refused = self._refused()
            if refused is not None:
                return refused
            session, vars_at, files_at = self._source()
            steps = plan(self.session, vars_at, target, files_current=files_at, source=session)
            decisions = assess(steps, self.namespace, self.tracker, self.store, self.cwd)
            kept_in, replaced = None, []
            if force:
                users = [d for d in decisions if d.state in (USER, UNSURE)]
                keepable = [d for d in users if d.kind == "vars" or keeping.is_file(d.live)]  # a folder or a pipe is never replaced
                at = vars_at if vars_at is not UNKNOWN else files_at
                kept_in = (
                    keeping.keep(self._recorder, session, at, keepable, why="user", keep_leaf=True, at_target=False) if keepable else None
                )
                if kept_in is not None or not keepable:  # never replaced unless kept: a session that cannot be written keeps them live
                    for d in users:
                        d.state = RESTORE
                    replaced = [d.target.key for d in keepable]
            report = perform(decisions, steps, self.namespace, self.tracker, self.store, self.cwd)
            report.kept_in, report.replaced = kept_in, replaced
            if report.kept:
                report.force_hint = f"%pi checkout {target or 'root'} --force"
            keeping.offer(self.session, steps, report)
            self._stand(target)
            self.last_report = report
            return report

    def keep_users(self) -> Report:
        """Before a run: what the user changed outside the agent since the world stood here is recorded at its position.

        The run then starts from that record (the new :attr:`position`, also the session's
        leaf): its tools' "before" is the user's version, and a checkout to the run's start
        gives the user's version back. Returns a report naming what was recorded (empty: nothing).
        """
        with self._lock:
            if self.tracker.in_use() or self.vars_at is UNKNOWN or self.tracker.standing() not in (None, self):
                return Report()
            at = self.vars_at
            steps = plan(self.session, at, at, files_current=self.files_at)
            users = [d for d in assess(steps, self.namespace, self.tracker, self.store, self.cwd) if d.state == USER]
            if not users:
                return Report()
            rid = keeping.keep(self._recorder, self.session, at, users, why="user", keep_leaf=False, note=True)
            if rid is None:
                return Report()
            self._stand(rid)
            return Report(recorded=[d.target.key for d in users], recorded_at=rid)

    def stay(self, at: str | None = None) -> Report:
        """``--conversation-only``: the conversation moved to ``at`` (default: the leaf) and the live world stays as it is.

        The live world is recorded at ``at`` where it differs from that node's (a record
        that becomes the leaf and the world's position), so the next cells continue in it.
        """
        self.stay_next = False
        at = self.session.leaf_id if at is None else at
        with self._lock:
            refused = self._refused()
            if refused is not None:
                return refused
            session, vars_at, files_at = self._source()
            steps = plan(self.session, vars_at, at, files_current=files_at, source=session)
            differ = [d for d in assess(steps, self.namespace, self.tracker, self.store, self.cwd) if d.state not in (THERE, FAIL)]
            report = Report()
            if differ:
                rid = keeping.keep(self._recorder, self.session, at, differ, why="stay", keep_leaf=False, note=True)
                if rid is None:
                    report.refused = "the world could not be kept: the session file cannot be written"
                    return report
                report.recorded, report.recorded_at, report.recorded_live = [d.target.key for d in differ], rid, True
                at = rid
            self._stand(at)
            self.last_report = report
            return report

    def bring(self, target: str | None, *, force: bool = False) -> Report:
        """``--world-only``: bring the world of ``target`` into the current conversation, without moving it.

        The live world is moved to ``target`` (as :meth:`move`), then recorded at the
        session's leaf where it differs from the leaf's world (a record that becomes the
        leaf: the conversation is the same, its world now the target's).
        """
        with self._lock:
            leaf = self.session.leaf_id
            report = self.move(target, force=force)
            if report.refused:
                return report
            steps = plan(self.session, target, leaf)
            differ = [d for d in assess(steps, self.namespace, self.tracker, self.store, self.cwd) if d.state not in (THERE, FAIL)]
            if differ:
                rid = keeping.keep(self._recorder, self.session, leaf, differ, why="bring", keep_leaf=False, note=True)
                if rid is not None:
                    report.recorded_at = rid
                    self._stand(rid)
                    return report
            if leaf != target:
                self._stand(leaf)  # nothing differs: the leaf's world is the target's
            return report

    def attach(self, agent: Any) -> Callable[[], None]:
        """Keep this world in step with ``agent`` (an :class:`~pi_jupyter.Agent` of :attr:`session`); returns the unsubscribe.

        Its checkouts move the world (or keep it, :attr:`stay_next`), and a run that ends
        leaves the world at the leaf its tools recorded on (:meth:`settle`). The notebook, the
        RPC server and a script that rewinds with :func:`~.rewind.rewind` do this once per agent.
        """

        def on_event(event: Any) -> None:
            kind = getattr(event, "type", None)
            if kind == "agent_end":
                self.settle()
            elif kind == "session_event" and getattr(event, "action", None) == "checkout":
                staying = self.stay_next
                self.follow(self.session.leaf_id)
                if staying:  # the conversation alone: the world it keeps is a record on the branch, now the leaf
                    agent.reload()

        unsubscribe: Callable[[], None] = agent.subscribe(on_event)
        return unsubscribe

    def follow(self, leaf: str | None) -> Report:
        """What an agent's checkout does to its world: moves it to ``leaf``, or keeps it there (:attr:`stay_next`, see :meth:`stay`)."""
        try:
            return self.stay(leaf) if self.stay_next else self.move(leaf)
        except Exception as exc:  # noqa: BLE001 - the conversation moved; say that its world could not
            self.last_report = Report(refused=f"variables and files not restored: {exc}")
            return self.last_report

    def take_line(self) -> str:
        """The line of the last move, once (empty when it changed nothing)."""
        report, self.last_report = self.last_report, None
        return report.line() if report is not None else ""

    def settle(self) -> None:
        """This session's world is at its leaf (after a run whose tools recorded their changes on it).

        The live namespace stands for it if it stood for it before the run (a cell starts by
        moving there); a run of a session the namespace did not stand for (an agent driven
        directly, beside the notebook's current session) leaves it to the one it stands for.
        """
        with self._lock:
            self.vars_at = self.files_at = self.session.leaf_id
            self.fresh = False
            owner = self.tracker.standing()
            if owner is None or owner is self or owner.vars_at is UNKNOWN:  # (a world that never moved stands only for the files)
                self.tracker.stands_for(self)

    def rerun(self, call_id: str) -> str:
        """``%pi rerun CALL``: run a python call's code again, for the values that could not be restored; the line says what came back."""
        with self._lock:
            return keeping.rerun(self, call_id)

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
