"""Session files for tests and benchmarks, written with pi-jupyter's own store.

``write_kind(kind, path, seed)`` writes one of :data:`KINDS` (linear, deeply branched,
compacted twice, labelled, extension entries, settings changes, unicode, checkouts, random)
through :class:`~pi_jupyter.session.Session`. ``pi_steps(seed)`` makes the same kind of
program for pi's ``SessionManager`` (run by ``tests/interop/pi_session_oracle.mjs``), so both
directions can be checked. ``write_bench`` writes large realistic sessions for
``bench/bench_session.py``.

Entry timestamps come from a deterministic clock (:func:`fake_clock`) that sometimes steps
back, like a skewed wall clock, so that pi's "children sorted by time" order differs from
file order and is actually exercised.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

from pi_jupyter.messages import iso_from_ms
from pi_jupyter.session import Session
from pi_jupyter.session import store as _store

TEXTS = [
    "plain text",
    "line\u2028separator\u2029paragraph",
    "emoji 🎉🧪 and a family 👩\u200d👩\u200d👧 and flags 🇯🇵",
    "CJK 中文文本 日本語のテキスト 한국어 텍스트",
    'quotes " and \\ backslashes \\n not a newline',
    "tab\tand\nreal\nnewlines\r\nand CRLF",
    "NEL\u0085 and \x1c\x1d\x1e separators and \x0b\x0c",
    "",
    "   leading and trailing spaces   ",
    "a long one " + "lorem ipsum dolor sit amet " * 40,
    "math ∑∫√ and RTL שלום and combining é",
]
MODELS = [("openai", "gpt-5", "openai-responses"), ("anthropic", "claude-sonnet-4-5", "anthropic-messages"), ("offline", "echo", "offline")]
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"]
KINDS = ["linear", "branched", "compacted_twice", "labelled", "extensions", "settings", "unicode", "checkouts", "random"]

BASE_MS = 1_760_000_000_000


@contextlib.contextmanager
def fake_clock(seed: int, start_ms: int = BASE_MS) -> Iterator[None]:
    """Entry timestamps from a seeded clock: mostly forward by 0-3 s, now and then back a little."""
    rnd = random.Random(seed ^ 0x5EED)
    state = {"ms": start_ms}

    def now_iso() -> str:
        step = rnd.choice([0, 0, 1, 7, 250, 1000, 3000, -400])
        state["ms"] += step
        return iso_from_ms(state["ms"])

    original = _store.now_iso
    _store.now_iso = now_iso
    try:
        yield
    finally:
        _store.now_iso = original


class _Gen:
    """One random program over a session, with the bookkeeping to make sensible references."""

    def __init__(self, session: Session, seed: int):
        self.s = session
        self.rnd = random.Random(seed)
        self.ms = BASE_MS
        self.model = MODELS[0]
        self.pending_calls: list[tuple[str, str]] = []

    # -- pieces --------------------------------------------------------------------------

    def text(self) -> str:
        return self.rnd.choice(TEXTS)

    def stamp(self) -> int:
        self.ms += self.rnd.randint(1, 5000)
        return self.ms

    def user(self) -> str:
        r = self.rnd.random()
        if r < 0.3:
            content: Any = self.text()
        elif r < 0.9:
            content = [{"type": "text", "text": self.text()}]
        else:
            content = [{"type": "text", "text": self.text()}, {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]
        return self.s.append_message({"role": "user", "content": content, "timestamp": self.stamp()})

    def assistant(self, *, tools: bool | None = None) -> str:
        provider, model, api = self.model
        content: list[dict[str, Any]] = []
        if self.rnd.random() < 0.3:
            block: dict[str, Any] = {"type": "thinking", "thinking": self.text()}
            if self.rnd.random() < 0.5:
                block["thinkingSignature"] = "sig-" + str(self.rnd.randint(0, 999))
            content.append(block)
        if self.rnd.random() < 0.9:
            content.append({"type": "text", "text": self.text()})
        use_tools = tools if tools is not None else self.rnd.random() < 0.4
        calls = []
        if use_tools:
            for _ in range(self.rnd.randint(1, 2)):
                cid = f"call_{self.rnd.getrandbits(32):08x}"
                name = self.rnd.choice(["bash", "read", "python"])
                content.append({"type": "toolCall", "id": cid, "name": name, "arguments": {"command": self.text(), "n": 3}})
                calls.append((cid, name))
        stop = "toolUse" if calls else self.rnd.choice(["stop", "stop", "stop", "length", "error", "aborted"])
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": {
                "input": self.rnd.randint(0, 5000),
                "output": self.rnd.randint(0, 800),
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 0,
                "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
            },
            "stopReason": stop,
            "timestamp": self.stamp(),
        }
        if stop == "error":
            message["errorMessage"] = "overloaded_error: " + self.text()
        eid = self.s.append_message(message)
        self.pending_calls = calls
        return eid

    def tool_results(self) -> str | None:
        last = None
        for cid, name in self.pending_calls:
            message: dict[str, Any] = {
                "role": "toolResult",
                "toolCallId": cid,
                "toolName": name,
                "content": [{"type": "text", "text": self.text()}],
                "isError": self.rnd.random() < 0.2,
                "timestamp": self.stamp(),
            }
            if self.rnd.random() < 0.3:
                message["details"] = {"exitCode": 0, "extra": [1, 2, {"x": None}]}
            last = self.s.append_message(message)
        self.pending_calls = []
        return last

    def turn(self) -> None:
        self.user()
        self.assistant()
        while self.pending_calls:
            self.tool_results()
            self.assistant()

    def bash(self) -> str:
        message: dict[str, Any] = {
            "role": "bashExecution",
            "command": "ls -la " + self.text()[:20],
            "output": self.text(),
            "cancelled": self.rnd.random() < 0.1,
            "truncated": self.rnd.random() < 0.2,
            "timestamp": self.stamp(),
        }
        if self.rnd.random() < 0.8:
            message["exitCode"] = self.rnd.choice([0, 0, 1, 127])
        if message["truncated"]:
            message["fullOutputPath"] = "/tmp/out-123.txt"
        if self.rnd.random() < 0.3:
            message["excludeFromContext"] = True
        return self.s.append_message(message)

    def custom_message(self) -> str:
        if self.rnd.random() < 0.5:
            content: Any = self.text()
        else:
            content = [{"type": "text", "text": self.text()}]
        display = self.rnd.choice([True, False, None])
        details = self.rnd.choice([None, {"source": "ext", "n": 1}])
        if self.rnd.random() < 0.5:
            return self.s.append_custom_message("ext.note", content, display=display, details=details)
        message: dict[str, Any] = {"role": "custom", "customType": "ext.msg", "content": content, "display": bool(display), "timestamp": 0}
        return self.s.append_message(message)

    def custom(self) -> str:
        return self.s.append_custom("ext.state", self.rnd.choice([None, {"k": self.text()}, [1, 2, 3], "s", 0]))

    def settings(self) -> str:
        if self.rnd.random() < 0.5:
            return self.s.append_thinking_level_change(self.rnd.choice(LEVELS))
        self.model = self.rnd.choice(MODELS)
        return self.s.append_model_change(self.model[0], self.model[1])

    def compaction(self) -> str | None:
        path = self.s.branch_ids()
        if not path:
            return None
        r = self.rnd.random()
        if r < 0.8:
            first = self.rnd.choice(path[len(path) // 2 :])
        elif r < 0.9:
            first = "not-an-entry"
        else:
            first = path[0]
        details = self.rnd.choice([None, {"readFiles": ["a.py"], "modifiedFiles": []}])
        return self.s.append_compaction(
            "summary: " + self.text(), first, self.rnd.randint(1000, 200000), details, self.rnd.choice([None, False])
        )

    def branch_summary(self) -> str:
        ids = self.s.branch_ids()
        target = self.rnd.choice(ids) if ids and self.rnd.random() < 0.85 else None
        summary = self.rnd.choice(["left branch: " + self.text(), ""])
        return self.s.branch_with_summary(target, summary, self.rnd.choice([None, {"files": []}]), self.rnd.choice([None, False, True]))

    def label(self) -> str | None:
        ids = list(self.s._index.by_id)
        if not ids:
            return None
        target = self.rnd.choice(ids)
        return self.s.label(target, self.rnd.choice(["baseline", "variant", f"l{self.rnd.randint(0, 99)}", None, "", "🏷️ ラベル"]))

    def checkout(self, *, persist: bool = True) -> str | None:
        ids = [e["id"] for e in self.s.raw_entries()]
        target = self.rnd.choice(ids) if ids and self.rnd.random() < 0.95 else None
        return self.s.checkout(target, persist=persist)

    def name(self) -> str:
        return self.s.set_name(self.rnd.choice(["experiment", "  padded name  ", "名前 🎈"]))

    def random_step(self) -> None:
        ops = [
            (self.turn, 30),
            (self.user, 5),
            (self.bash, 5),
            (self.custom_message, 5),
            (self.custom, 4),
            (self.settings, 6),
            (self.compaction, 4),
            (self.branch_summary, 3),
            (self.label, 5),
            (self.checkout, 6),
            (lambda: self.checkout(persist=False), 3),
            (self.name, 1),
        ]
        fns, weights = zip(*ops, strict=True)
        self.rnd.choices(fns, weights)[0]()


def write_kind(kind: str, path: str, seed: int = 0, *, cwd: str = "/work/project") -> Session:
    """Write a session of ``kind`` (one of :data:`KINDS`) at ``path`` with our store; returns it (still open)."""
    with fake_clock(seed):
        session = Session.create(path=path, cwd=cwd, durability="never")
        g = _Gen(session, seed)
        rnd = g.rnd
        if kind == "linear":
            session.append_model_change("openai", "gpt-5")
            session.append_thinking_level_change("medium")
            for _ in range(40):
                g.turn()
        elif kind == "branched":
            for _ in range(6):
                g.turn()
            for _ in range(25):
                g.checkout()
                for _ in range(rnd.randint(1, 4)):
                    g.turn()
            # a deep fork: many siblings under one entry
            anchor = session.branch_ids()[len(session.branch_ids()) // 2]
            for _ in range(5):
                session.checkout(anchor)
                g.user()
        elif kind == "compacted_twice":
            session.append_model_change("anthropic", "claude-sonnet-4-5")
            for _ in range(10):
                g.turn()
            path_ids = session.branch_ids()
            session.append_compaction("first summary " + g.text(), path_ids[len(path_ids) // 2], 12345)
            for _ in range(8):
                g.turn()
            path_ids = session.branch_ids()
            session.append_compaction(
                "second summary " + g.text(), path_ids[-6], 23456, {"readFiles": ["x"], "modifiedFiles": ["y"]}, False
            )
            for _ in range(4):
                g.turn()
            # a sibling branch from before the second compaction
            session.checkout(path_ids[-3])
            g.turn()
        elif kind == "labelled":
            for _ in range(8):
                g.turn()
            ids = session.branch_ids()
            session.label(ids[0], "start")
            session.label(ids[3], "baseline")
            session.label(ids[3], None)
            session.label(ids[3], "baseline-2")
            session.label(ids[5], "")
            session.label(ids[5], "🏷️ ラベル")
            session.set_name("labelled session")
            session.checkout("start")
            g.turn()
            session.label(session.leaf_id, "tip")
        elif kind == "extensions":
            for _ in range(4):
                g.turn()
                g.bash()
                g.custom_message()
                g.custom()
            g.branch_summary()
            g.turn()
            session.branch_with_summary(None, "from the root")
            g.turn()
            session.branch_with_summary(session.branch_ids()[1], "")  # empty: no message
            g.turn()
        elif kind == "settings":
            for _ in range(15):
                g.settings()
                g.turn()
        elif kind == "unicode":
            for text in TEXTS:
                session.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": g.stamp()})
                g.assistant(tools=False)
            session.append_message({"role": "user", "content": "lone surrogate \ud83d and \udfff", "timestamp": g.stamp()})
            g.assistant(tools=False)
            session.set_name("名前 \u2028 two lines 🎈")
        elif kind == "checkouts":
            for _ in range(5):
                g.turn()
            ids = session.branch_ids()
            session.checkout(ids[2])
            g.turn()
            session.checkout(None)
            g.turn()  # a second root
            session.checkout(ids[-1])
            session.checkout(ids[1], persist=False)
            g.user()
            session.checkout(ids[4])  # the file ends with a checkout marker
        elif kind == "random":
            for _ in range(60):
                g.random_step()
        else:
            raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")
    return session


# -- programs for pi's SessionManager (run by pi_session_oracle.mjs "write") ---------------


def pi_steps(seed: int, n: int = 40) -> list[dict[str, Any]]:
    """A random program of SessionManager calls; ids are referenced as ``$name``."""
    rnd = random.Random(seed)
    steps: list[dict[str, Any]] = []
    names: list[str] = []
    ms = BASE_MS

    def stamp() -> int:
        nonlocal ms
        ms += rnd.randint(1, 5000)
        return ms

    def call(method: str, *args: Any) -> str:
        name = f"e{len(steps)}"
        steps.append({"call": method, "args": list(args), "as": name})
        names.append(name)
        return name

    def assistant(stop: str = "stop") -> dict[str, Any]:
        provider, model, api = rnd.choice(MODELS)
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": rnd.choice(TEXTS)}],
            "api": api,
            "provider": provider,
            "model": model,
            "usage": {
                "input": 1,
                "output": 2,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 3,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": stop,
            "timestamp": stamp(),
        }

    call("appendModelChange", "openai", "gpt-5")
    call("appendThinkingLevelChange", "medium")
    call("appendMessage", {"role": "user", "content": [{"type": "text", "text": "hello 👋"}], "timestamp": stamp()})
    call("appendMessage", assistant())
    for _ in range(n):
        r = rnd.random()
        if r < 0.35:
            call("appendMessage", {"role": "user", "content": [{"type": "text", "text": rnd.choice(TEXTS)}], "timestamp": stamp()})
            call("appendMessage", assistant(rnd.choice(["stop", "stop", "error"])))
        elif r < 0.42:
            call("appendThinkingLevelChange", rnd.choice(LEVELS))
        elif r < 0.48:
            call("appendModelChange", *rnd.choice(MODELS)[:2])
        elif r < 0.54:
            call(
                "appendCompaction",
                "pi summary " + rnd.choice(TEXTS),
                "$" + rnd.choice(names[-8:]),
                rnd.randint(1, 99999),
                {"readFiles": []},
                False,
            )
        elif r < 0.6:
            call("appendCustomEntry", "ext.state", {"v": rnd.randint(0, 9)})
        elif r < 0.66:
            call("appendCustomMessageEntry", "ext.note", rnd.choice(TEXTS), rnd.choice([True, False]), rnd.choice([None, {"d": 1}]))
        elif r < 0.72:
            call("appendLabelChange", "$" + rnd.choice(names), rnd.choice(["pi-label", "ラベル", None]))
        elif r < 0.75:
            call("appendSessionInfo", rnd.choice(["pi name", " spaced "]))
        elif r < 0.85:
            steps.append({"call": "branch", "args": ["$" + rnd.choice(names)]})
        elif r < 0.88:
            steps.append({"call": "resetLeaf", "args": []})
        elif r < 0.94:
            call("branchWithSummary", "$" + rnd.choice(names), "pi branch summary " + rnd.choice(TEXTS), {"files": []}, False)
        else:
            call(
                "appendMessage",
                {
                    "role": "bashExecution",
                    "command": "echo hi",
                    "output": "hi",
                    "exitCode": 1,
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": stamp(),
                },
            )
    call("appendMessage", {"role": "user", "content": [{"type": "text", "text": "last"}], "timestamp": stamp()})
    call("appendMessage", assistant())
    return steps


# -- large sessions for the benchmark -----------------------------------------------------

_WORDS = (
    "the model loss gradient tensor epoch batch frame plot value error train test data "
    "shape matrix kernel notebook cell output figure axis mean std sample result"
).split()


def _words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(n))


def write_bench(path: str, n: int, *, branched: bool, seed: int = 1) -> None:
    """A realistic large session of ``n`` entries (about 1.5 KB each) written with our store.

    Turns are user -> assistant (text + tool call) -> tool result -> assistant (text).
    ``branched``: every 50 entries the leaf moves back a little and the work goes on from
    there (a checkout marker each time), so the file holds many sibling branches.
    """
    rnd = random.Random(seed)
    s = Session.create(path=path, cwd="/work/bench", durability="never")
    ms = BASE_MS
    usage = {
        "input": 12000,
        "output": 400,
        "cacheRead": 8000,
        "cacheWrite": 0,
        "totalTokens": 20400,
        "cost": {"input": 0.03, "output": 0.006, "cacheRead": 0.002, "cacheWrite": 0, "total": 0.038},
    }
    recent = [s.append_model_change("anthropic", "claude-sonnet-4-5"), s.append_thinking_level_change("medium")]
    count = 2
    while count < n:
        ms += 1000
        phase = count % 4
        if phase == 0:
            message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": _words(rnd, 195)}], "timestamp": ms}
        elif phase == 1:
            message = {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": _words(rnd, 97)},
                    {"type": "toolCall", "id": f"toolu_{count:08d}", "name": "python", "arguments": {"code": _words(rnd, 25)}},
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "toolUse",
                "timestamp": ms,
            }
        elif phase == 2:
            message = {
                "role": "toolResult",
                "toolCallId": f"toolu_{count - 1:08d}",
                "toolName": "python",
                "content": [{"type": "text", "text": _words(rnd, 236)}],
                "isError": False,
                "timestamp": ms,
            }
        else:
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": _words(rnd, 204)}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "timestamp": ms,
            }
        recent.append(s.append_message(message))
        del recent[:-20]
        count += 1
        if branched and count % 50 == 0 and count < n:
            back = rnd.randint(2, min(12, len(recent)))
            s.checkout(recent[-back])
            del recent[len(recent) - back + 1 :]
            count += 1
    s.close()
