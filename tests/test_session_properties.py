"""Property: whatever sequence of appends, checkouts, forks, labels, reopenings and crashes
(the file cut at a random byte) happens, no complete entry is ever lost and the file always
reopens, with the leaf where the last complete line puts it."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_jupyter.session import CHECKOUT_TYPE, Session

TEXT = st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)), max_size=40)

OPS = st.one_of(
    st.tuples(st.just("user"), TEXT),
    st.tuples(st.just("assistant"), TEXT),
    st.tuples(st.just("custom"), TEXT),
    st.tuples(st.just("label"), st.integers(0, 10**6), st.sampled_from(["a", "b", "ラベル", None])),
    st.tuples(st.just("checkout"), st.integers(-1, 10**6), st.booleans()),
    st.tuples(st.just("compaction"), st.integers(0, 10**6)),
    st.tuples(st.just("fork"), st.integers(0, 10**6)),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("crash"), st.floats(0, 1)),
)


class Model:
    """What the file must hold: every entry written, with the byte range of its line."""

    def __init__(self, path: str):
        self.path = path
        self.session = Session.create(path=path, cwd="/w", durability="never")
        self.header_end = os.path.getsize(path)
        self.entries: dict[str, tuple[dict[str, Any], int]] = {}  # id -> (entry, end offset)
        self.order: list[str] = []
        self.leaf_unsaved = False  # after checkout(persist=False), until the next append

    def appended(self, eid: str) -> None:
        self.leaf_unsaved = False
        end = os.path.getsize(self.path)
        self.entries[eid] = (dict(self.session.raw_entry(eid)), end)
        self.order.append(eid)

    def pick(self, n: int) -> str | None:
        ids = [e for e in self.order if e in self.session]
        return ids[n % len(ids)] if ids else None

    def cut(self, fraction: float) -> None:
        size = os.path.getsize(self.path)
        at = self.header_end + int((size - self.header_end) * fraction)
        self.session.close()
        with open(self.path, "r+b") as fh:
            fh.truncate(at)
        # entries whose whole JSON text survived the crash stay (the newline may be cut off);
        # the rest were never complete
        self.order = [e for e in self.order if self.entries[e][1] - 1 <= at]
        self.entries = {e: self.entries[e] for e in self.order}

    def reopen_and_check(self) -> None:
        self.session.close()
        s = Session.open(self.path, durability="never")
        assert not [p for p in s.load_report.problems if p.kind not in ("torn_tail", "malformed")], s.load_report
        for eid in self.order:
            assert eid in s, f"complete entry {eid} was lost"
            assert s.raw_entry(eid) == self.entries[eid][0]
        assert len(s) == len(self.order)
        if self.order:
            last = self.entries[self.order[-1]][0]
            expected = last["parentId"] if last.get("customType") == CHECKOUT_TYPE else last["id"]
            assert s.leaf_id == expected
        else:
            assert s.leaf_id is None
        self.session = s


def run(ops: list[tuple[Any, ...]], folder: str) -> None:
    m = Model(os.path.join(folder, "s.jsonl"))
    ts = 0
    for op in ops:
        s = m.session
        kind = op[0]
        ts += 1
        if kind == "user":
            m.appended(s.append_message({"role": "user", "content": [{"type": "text", "text": op[1]}], "timestamp": ts}))
        elif kind == "assistant":
            message = {"role": "assistant", "content": [{"type": "text", "text": op[1]}], "api": "a", "provider": "p", "model": "m"}
            m.appended(s.append_message({**message, "usage": {}, "stopReason": "stop", "timestamp": ts}))
        elif kind == "custom":
            m.appended(s.append_custom("ext", {"t": op[1]}))
        elif kind == "label":
            target = m.pick(op[1])
            if target is not None:
                m.appended(s.label(target, op[2]))
        elif kind == "compaction":
            target = m.pick(op[1])
            if target is not None:
                m.appended(s.append_compaction("summary", target, 5))
        elif kind == "checkout":
            target = None if op[1] < 0 else m.pick(op[1])
            count = len(s.raw_entries())
            context = s.context(target).raw_messages
            s.checkout(target, persist=op[2])
            assert s.leaf_id == target
            assert s.context().raw_messages == context
            if len(s.raw_entries()) > count:
                assert op[2]
                m.appended(s.raw_entries()[-1]["id"])
            elif not op[2]:
                m.leaf_unsaved = True
        elif kind == "fork":
            target = m.pick(op[1])
            if target is not None:
                fork = s.fork(target, dir=folder)
                assert fork.header.parent_session == s.path
                assert fork.context().raw_messages == s.context(target).raw_messages
                # as in pi, labels of label entries are not carried over (label entries are not)
                on_path = {e["id"] for e in s.raw_branch(target) if e["type"] != "label"}
                assert fork.labels == {k: v for k, v in s.labels.items() if k in on_path}
                fork.close()
                os.unlink(fork.path)
        elif kind == "reopen":
            leaf = s.leaf_id
            unsaved = m.leaf_unsaved
            m.reopen_and_check()
            if not unsaved:
                assert m.session.leaf_id == leaf  # the checkout was persisted
        elif kind == "crash":
            m.cut(op[1])
            m.reopen_and_check()
    m.reopen_and_check()
    m.session.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, max_size=30))
def test_no_complete_entry_is_ever_lost(ops):
    with tempfile.TemporaryDirectory() as folder:
        run(ops, folder)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([("user", "x"), ("assistant", "y"), ("crash", 0.5), ("crash", 0.97), ("reopen",)]), max_size=25))
def test_crash_after_crash_still_reopens(ops):
    with tempfile.TemporaryDirectory() as folder:
        run(ops, folder)
